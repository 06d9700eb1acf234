"""What every handler of the sandbox works with: its configuration, storage, clock, and the
dispatcher's doorbell (rung after a webhook is queued so that it goes out at once)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Callable

from .clock import SandboxClock
from .config import SandboxConfig
from .store import Store

__all__ = ["Context", "digits", "new_token"]


@dataclass(frozen=True)
class Context:
    config: SandboxConfig
    store: Store
    clock: SandboxClock
    webhook_queued: Callable[[], None]


def new_token() -> str:
    """A token: 32 lowercase hex digits."""
    return secrets.token_hex(16)


def digits(count: int) -> str:
    """``count`` random decimal digits (ticket numbers, reference numbers, codes)."""
    return "".join(str(secrets.randbelow(10)) for _ in range(count))
