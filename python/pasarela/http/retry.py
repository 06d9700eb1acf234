"""When and how long to wait before trying a call again.

Only idempotent calls (GET) are retried, on a connection failure or a 5xx answer: a POST that
timed out may have charged the payer, so it is never repeated behind the caller's back (it carries an
``Idempotency-Key`` so that the caller, or a service that honours the key, can tell repeats apart).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable

from ..errors import ConfigurationError

__all__ = ["NO_RETRY", "RetryPolicy", "is_seconds"]

_jitter_source = random.SystemRandom()


def is_seconds(value: object) -> bool:
    """A finite, non-negative int or float (bools excluded): a duration in seconds."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with "equal jitter": retry *n* waits between half and all of
    ``min(max_delay, base_delay * 2**(n-1))`` seconds, the spread drawn from ``jitter`` (a function
    returning a float in [0, 1); inject a constant one in tests).
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: Callable[[], float] = _jitter_source.random

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ConfigurationError("max_attempts must be an int of at least 1")
        for name in ("base_delay", "max_delay"):
            if not is_seconds(getattr(self, name)):
                raise ConfigurationError(f"{name} must be a finite number of seconds >= 0")

    def allows_another(self, attempts_made: int) -> bool:
        """Whether an idempotent call that failed ``attempts_made`` times may be tried again."""
        return attempts_made < self.max_attempts

    def delay(self, retry_number: int) -> float:
        """Seconds to wait before retry ``retry_number`` (1 for the first retry)."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (retry_number - 1))
        return ceiling / 2 + self.jitter() * ceiling / 2


NO_RETRY = RetryPolicy(max_attempts=1)
"""Try every call exactly once."""
