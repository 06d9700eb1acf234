"""The sandbox's notion of now: a base clock plus an offset the simulator can advance.

Tests inject the base clock (or advance the offset through ``POST /sandbox/v1/clock``) so that
the 10-minute life of a Colombia QR passes without waiting.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

__all__ = ["SandboxClock"]


class SandboxClock:
    def __init__(self, base: Callable[[], float] = time.time) -> None:
        self._base = base
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """Unix seconds."""
        with self._lock:
            return self._base() + self._offset

    def now_ms(self) -> int:
        """Epoch milliseconds (what ``created`` fields carry)."""
        return int(self.now() * 1000)

    @property
    def offset(self) -> float:
        """Seconds the clock was moved forward in all."""
        with self._lock:
            return self._offset

    def reset(self) -> None:
        """Undo every advance (a sandbox whose state was cleared starts again at its base clock)."""
        with self._lock:
            self._offset = 0.0

    def advance(self, seconds: float) -> float:
        """Move the clock forward; returns the new now."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        with self._lock:
            self._offset += seconds
            return self._base() + self._offset
