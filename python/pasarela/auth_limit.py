"""Limiting failed terminal authentications (beyond the spec), for the ASGI middleware.

The envelope is AES-CBC without a MAC (the service's design), so every refused request is a query an
attacker can time; a padding oracle needs thousands of them against one terminal's key within the
300-second window of one captured request. :class:`AuthFailureLimiter` counts AUTH-001 failures per
key (by default the terminal serial, whose secret is what such an attack targets: counting per client
address would let the attacker spread the queries over many addresses) and, once ``max_failures``
were counted within ``window`` seconds, makes the middleware refuse every request under that key
without decrypting anything, until the window ends.

The price is a lock-out: while the limit holds, the terminal's genuine requests are refused too (an
attacker who floods forged requests can keep a terminal out; that is failing closed). Successes do not
reset the count, or an attacker could keep probing between genuine requests.

Memory is bounded: at most ``max_keys`` keys are tracked; beyond that the key seen least recently is
forgotten.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from typing import Callable

from .errors import ConfigurationError

__all__ = ["AuthFailureLimiter"]


class AuthFailureLimiter:
    """``AuthFailureLimiter(max_failures=50, window=300.0)``: at most ``max_failures`` failures per key in a
    fixed window of ``window`` seconds (from the key's first failure); ``clock`` is monotonic seconds."""

    def __init__(self, max_failures: int = 50, window: float = 300.0, *, max_keys: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        for name, count in (("max_failures", max_failures), ("max_keys", max_keys)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ConfigurationError(f"{name} must be an int of at least 1")
        if isinstance(window, bool) or not isinstance(window, (int, float)) or not 0 < window < math.inf:
            raise ConfigurationError("window must be a finite number of seconds > 0")
        self.max_failures = max_failures
        self.window = float(window)
        self._max_keys = max_keys
        self._clock = clock
        self._failures: OrderedDict[str, tuple[float, int]] = OrderedDict()  # key -> (window start, count)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AuthFailureLimiter(max_failures={self.max_failures}, window={self.window:g})"

    def _current(self, key: str, now: float) -> tuple[float, int]:
        entry = self._failures.get(key)
        if entry is None or now - entry[0] >= self.window:
            return now, 0
        return entry

    def blocked(self, key: str) -> bool:
        """True when ``key`` has used up its failures in the current window."""
        with self._lock:
            return self._current(key, self._clock())[1] >= self.max_failures

    def failed(self, key: str) -> None:
        """Count one failure for ``key``."""
        with self._lock:
            start, count = self._current(key, self._clock())
            self._failures[key] = (start, count + 1)
            self._failures.move_to_end(key)
            while len(self._failures) > self._max_keys:
                self._failures.popitem(last=False)

    def __len__(self) -> int:
        """How many keys are tracked."""
        with self._lock:
            return len(self._failures)
