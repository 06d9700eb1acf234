"""What every handler of the sandbox works with: its configuration, storage, clock, and the
dispatcher's doorbell (rung after a webhook is queued so that it goes out at once)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from ..http.redaction import passes_luhn
from .clock import SandboxClock
from .config import SandboxConfig
from .store import Store

__all__ = ["Context", "digits", "new_token", "ticket_number"]


@dataclass(frozen=True)
class Context:
    config: SandboxConfig
    store: Store
    clock: SandboxClock
    webhook_queued: Callable[[], None]

    def public_url(self, scope: Mapping[str, Any]) -> str:
        """Where payers and browsers reach the sandbox: ``public_url`` when configured, else the address the
        server socket is bound to (``scope["server"]``), never the Host header, which the caller chooses."""
        if self.config.public_url is not None:
            return self.config.public_url.rstrip("/")
        host, port = scope.get("server") or ("127.0.0.1", 80)
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}"


def new_token() -> str:
    """A token: 32 lowercase hex digits."""
    return secrets.token_hex(16)


def digits(count: int) -> str:
    """``count`` random decimal digits (ticket numbers, reference numbers, codes)."""
    return "".join(str(secrets.randbelow(10)) for _ in range(count))


def ticket_number() -> str:
    """18 random digits that fail the Luhn check: the access log masks digit runs that pass it as card numbers
    (:func:`pasarela.http.redaction.mask_card_numbers`), and never hides a ticket number this way."""
    first = digits(17)
    last = next(digit for digit in "0123456789" if not passes_luhn(first + digit))
    return first + last
