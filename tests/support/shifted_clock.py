"""The sandbox tests' clock: the wall clock plus an offset the test moves (no test patches time)."""

from __future__ import annotations

import time


class ShiftedClock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset
