"""Delivery chaos: the sandbox delivering webhooks the hostile ways the service really does, on purpose, so that a
merchant's receiver meets them in a test before it meets them in production (``--webhook-chaos``, or
:meth:`pasarela.testing.LiveSandbox.set_webhook_chaos` per test).

With each kind switched on, the first delivery of an event gets one of them with probability ``rate``:

- ``duplicate``: once the receiver answered 200, the event is delivered again at once (a fresh ``X-Kushki-Id``), as
  the at-least-once service does after a lost acknowledgement;
- ``concurrent``: two deliveries of the event at the same instant;
- ``reorder``: once the final event was answered 200, an older ``initializedTransaction`` of the same transfer
  arrives after it;
- ``late``: the first delivery is held back :data:`LATE_SECONDS` of the sandbox clock (past a receiver's 10-minute
  freshness window for the body's ``created``; its ``X-Kushki-Id`` is fresh, as a retry's after an outage is).

Every attempt made on purpose is recorded with its kind (``chaos`` in the listings, the dashboard's Webhooks page,
``pasarela sandbox tail``), so what was done by design is told from what went wrong.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from typing import Optional

from ..errors import ConfigurationError

__all__ = ["CHAOS_KINDS", "DEFAULT_RATE", "LATE_SECONDS", "REORDER", "WebhookChaos", "check_chaos"]

CHAOS_KINDS = ("duplicate", "concurrent", "reorder", "late")
DEFAULT_RATE = 0.5
LATE_SECONDS = 660.0
"""How long ``late`` holds an event's first delivery (11 minutes of the sandbox clock: the dashboard's Advance clock
or ``LiveSandbox.advance`` brings it on)."""
REORDER = "reorder"


def check_chaos(kinds: Iterable[str], rate: float) -> tuple[str, ...]:
    """The kinds, each one of :data:`CHAOS_KINDS`, and a rate in (0, 1]; a ConfigurationError naming what is wrong."""
    chosen = tuple(dict.fromkeys(kinds))
    unknown = [kind for kind in chosen if kind not in CHAOS_KINDS]
    if isinstance(kinds, str):
        raise ConfigurationError("webhook_chaos must be a tuple of kinds, not a string")
    if unknown:
        raise ConfigurationError(f"webhook_chaos: {', '.join(unknown)} is not a kind of delivery chaos: give some of "
                                 f"{', '.join(CHAOS_KINDS)}")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        raise ConfigurationError("webhook_chaos_rate must be a number above 0, at most 1")
    return chosen


class WebhookChaos:
    """The chaos in force (thread-safe): which kinds, how often; :meth:`pick` decides for one event."""

    def __init__(self, kinds: Iterable[str] = (), rate: float = DEFAULT_RATE) -> None:
        self._configured = (check_chaos(kinds, rate), float(rate))
        self._kinds, self._rate = self._configured
        self._random = random.Random()  # noqa: S311 (what to do with a test's webhook, not a secret)
        self._lock = threading.Lock()

    @property
    def kinds(self) -> tuple[str, ...]:
        with self._lock:
            return self._kinds

    @property
    def rate(self) -> float:
        with self._lock:
            return self._rate

    def set(self, kinds: Iterable[str], rate: float = 1.0, seed: Optional[int] = None) -> None:
        """Switch to these kinds at this rate (``seed``: the same choices on every run)."""
        chosen = check_chaos(kinds, rate)
        with self._lock:
            self._kinds, self._rate = chosen, float(rate)
            if seed is not None:
                self._random.seed(seed)

    def reset(self) -> None:
        """Back to the configured chaos."""
        with self._lock:
            self._kinds, self._rate = self._configured

    def pick(self) -> Optional[str]:
        """The kind to apply to an event's first delivery, or ``None``."""
        with self._lock:
            if not self._kinds or self._random.random() >= self._rate:
                return None
            return self._random.choice(self._kinds)
