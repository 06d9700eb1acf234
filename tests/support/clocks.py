"""The clocks the tests hand to what takes a ``clock`` (no test patches time): one that stands where the test puts
it, and the wall clock plus an offset the test moves (the sandbox tests: a 10-minute QR life passes at once)."""

from __future__ import annotations

import time


class ManualClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class ShiftedClock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset
