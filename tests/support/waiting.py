"""Waiting for what another thread or process does (a webhook delivered, a server's state reached): polled every
20 ms, and an AssertionError naming what did not happen when ``timeout`` passes."""

from __future__ import annotations

import time
from typing import Any, Callable

DEADLINE = 10.0


def wait_for(condition: Callable[[], Any], what: str, *, timeout: float = DEADLINE) -> Any:
    """``condition()``'s first true value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"not within {timeout} s: {what}")
