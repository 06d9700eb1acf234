"""Recognizing redelivered webhooks, so the application hears of each event once.

A receiver *claims* an event key before handing the event over and *forgets* it if the handler
fails (so the redelivery is handled); the claim is atomic, so two concurrent deliveries of one
event cannot both get through. :class:`SeenEvents` keeps the most recent keys in memory; to share
them between processes and machines give the receiver a Redis ledger (:mod:`.webhook_dedup_redis`,
sync or asyncio) or your own store (a database table).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable
from typing import Protocol, Union

__all__ = ["AnyLedger", "AsyncEventLedger", "EventLedger", "SeenEvents"]


class EventLedger(Protocol):
    def claim(self, key: str) -> bool:
        """Record ``key``; False when it was already recorded (a redelivery)."""

    def forget(self, key: str) -> None:
        """Drop ``key`` (its handling failed and should be retried)."""


class AsyncEventLedger(Protocol):
    """:class:`EventLedger` for asyncio code (a ledger reached over the network, e.g. on Redis)."""

    def claim(self, key: str) -> Awaitable[bool]: ...

    def forget(self, key: str) -> Awaitable[None]: ...


AnyLedger = Union[EventLedger, AsyncEventLedger]


class SeenEvents:
    """In-memory :class:`EventLedger` of the last ``capacity`` keys (oldest dropped first)."""

    def __init__(self, capacity: int = 10_000) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError("capacity must be a positive int")
        self._capacity = capacity
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def claim(self, key: str) -> bool:
        with self._lock:
            if key in self._keys:
                return False
            self._keys[key] = None
            while len(self._keys) > self._capacity:
                self._keys.popitem(last=False)
            return True

    def forget(self, key: str) -> None:
        with self._lock:
            self._keys.pop(key, None)

    def __len__(self) -> int:
        return len(self._keys)
