"""Replay protection (beyond the spec): refuse a second request with the same signature inside the window.

A sealed request stays acceptable while its timestamp is within the tolerance of the server clock, so a
captured request can be sent again for up to ``tolerance`` seconds. A :class:`Verifier` with a
:class:`ReplayStore` remembers each accepted signature until its timestamp leaves the window
(``timestamp + tolerance``) and refuses it the second time, with the same AUTH-001 as any other failure.

The signature is the key, not the ``data`` field: the signature covers the payload and the timestamp,
while the IV can be altered without changing what verifies. Consequence: two identical payloads sealed by
the same terminal within the same second have the same signature, and the second one is refused.

Only verified requests are recorded, so a forged request cannot burn a legitimate signature. For many
gateway nodes, share one store: :mod:`pasarela.terminal.replay_redis` ships one on Redis (sync and
asyncio, ``pip install "pasarela[redis]"``); any other store whose ``first_use`` is atomic will do.
"""

from __future__ import annotations

import heapq
import inspect
import threading
import time
from collections.abc import Mapping
from typing import Any, Callable, Optional, Protocol, Union

from ..errors import AuthError, ConfigurationError
from .inbound import DEFAULT_TOLERANCE, Body, Params, header

__all__ = ["AsyncReplayStore", "InMemoryReplayStore", "Opener", "ReplayStore", "Verifier", "verify_once"]


class ReplayStore(Protocol):
    def first_use(self, signature: str, expires_at: float) -> bool:
        """Atomically record signature until expires_at (Unix seconds); True only the first time."""
        ...


class AsyncReplayStore(Protocol):
    async def first_use(self, signature: str, expires_at: float) -> bool:
        """As :meth:`ReplayStore.first_use`, for stores reached over the network from asyncio code."""
        ...


class Opener(Protocol):
    """What verifies a request: ``pasarela.Terminal`` and ``pasarela.reference.Terminal``."""

    def open(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
             now: Optional[float] = None, tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]: ...

    def open_bytes(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
                   now: Optional[float] = None, tolerance: float = DEFAULT_TOLERANCE) -> bytes: ...


class InMemoryReplayStore:
    """A bounded, expiring, thread-safe :class:`ReplayStore` for one process.

    Entries expire at their ``expires_at`` (checked against ``clock``). When ``max_entries`` live entries
    are held, the one that expires soonest is evicted to make room (its replay window is then lost: size
    the store for the request rate times the window, twice the tolerance).
    """

    def __init__(self, max_entries: int = 100_000, *, clock: Callable[[], float] = time.time) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max_entries = max_entries
        self._clock = clock
        self._expiry: dict[str, float] = {}  # signature -> expires_at, every live entry
        # The entries grouped by when they expire (a request's timestamp + tolerance: many requests share one
        # second), and those times in a heap: recording an entry is a dict and a list append, the heap moves only
        # for a new expiry time. Every entry is in exactly one bucket, its own expiry's.
        self._buckets: dict[float, list[str]] = {}
        self._expiries: list[float] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._purge(self._clock())
            return len(self._expiry)

    def first_use(self, signature: str, expires_at: float) -> bool:
        now = self._clock()
        with self._lock:
            if self._expiries and self._expiries[0] < now:
                self._purge(now)
            expiry = self._expiry
            if signature in expiry:
                return False
            if expires_at < now:
                return True  # already outside the window: nothing to remember
            if len(expiry) >= self._max_entries:
                self._evict(len(expiry) - self._max_entries + 1)
            expiry[signature] = expires_at
            bucket = self._buckets.get(expires_at)
            if bucket is None:
                self._buckets[expires_at] = [signature]
                heapq.heappush(self._expiries, expires_at)
            else:
                bucket.append(signature)
            return True

    def _purge(self, now: float) -> None:
        """Drops entries whose window has passed (an entry expiring exactly now still counts)."""
        while self._expiries and self._expiries[0] < now:
            for signature in self._buckets.pop(heapq.heappop(self._expiries)):
                del self._expiry[signature]

    def _evict(self, count: int) -> None:
        """Drops count entries among those that expire soonest (their replay window is lost)."""
        for _ in range(count):
            soonest = self._expiries[0]
            bucket = self._buckets[soonest]
            del self._expiry[bucket.pop()]
            if not bucket:
                del self._buckets[heapq.heappop(self._expiries)]


class Verifier:
    """Opens terminal requests with ``terminal`` and, given a replay store, refuses a signature seen before.

    ``clock`` gives the server time (default ``time.time``); ``open`` and ``open_bytes`` take a sync store,
    ``open_async`` and ``open_bytes_async`` either kind (``open_bytes``: the verified plaintext as the terminal's
    ``open_bytes`` returns it, instead of the payload). Every refusal is an :class:`~pasarela.errors.AuthError`
    with the one AUTH-001 body.
    A store that says how far back it judges after losing its memory (a ``tolerance``, as the Redis store
    does) must reach at least as far back as ``tolerance``.
    """

    def __init__(self, terminal: Opener, *, replay_store: Union[ReplayStore, AsyncReplayStore, None] = None,
                 tolerance: float = DEFAULT_TOLERANCE, clock: Callable[[], float] = time.time) -> None:
        reach = getattr(replay_store, "tolerance", None)
        if isinstance(reach, (int, float)) and not isinstance(reach, bool) and reach < tolerance:
            raise ConfigurationError(f"the replay store's tolerance ({reach:g} s) is shorter than the verifier's "
                                     f"({tolerance:g} s): after Redis lost its memory it would accept replays")
        self._terminal = terminal
        self._store = replay_store
        self.claims_in_call = replay_store is None or isinstance(replay_store, InMemoryReplayStore)
        """Whether ``open`` and ``open_bytes`` serve for asyncio code too: no store, or one whose claim is made in
        the call (the in-memory one), so that nothing is awaited (no coroutine of ``open_async``'s to make)."""
        self.tolerance = tolerance
        self._clock = clock

    def open(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
             now: Optional[float] = None) -> dict[str, Any]:
        payload = self._terminal.open(method, headers, body, params, now=self._now(now), tolerance=self.tolerance)
        if self._store is not None:
            self._first_use(self._store, headers)
        return payload

    def open_bytes(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
                   now: Optional[float] = None) -> bytes:
        text = self._terminal.open_bytes(method, headers, body, params, now=self._now(now), tolerance=self.tolerance)
        if self._store is not None:
            self._first_use(self._store, headers)
        return text

    async def open_async(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None,
                         *, now: Optional[float] = None) -> dict[str, Any]:
        payload = self._terminal.open(method, headers, body, params, now=self._now(now), tolerance=self.tolerance)
        if self._store is not None:
            first = self._store.first_use(*self._entry(headers))
            if type(first) is not bool and inspect.isawaitable(first):  # (inline, not a coroutine of its own)
                first = await first
            if not first:
                _refuse_replay()
        return payload

    async def open_bytes_async(self, method: str, headers: Mapping[str, str], body: Body = None,
                               params: Params = None, *, now: Optional[float] = None) -> bytes:
        text = self._terminal.open_bytes(method, headers, body, params, now=self._now(now), tolerance=self.tolerance)
        if self._store is not None:
            first = self._store.first_use(*self._entry(headers))
            if type(first) is not bool and inspect.isawaitable(first):
                first = await first
            if not first:
                _refuse_replay()
        return text

    def _now(self, now: Optional[float]) -> float:
        return self._clock() if now is None else now

    def _first_use(self, store: Union[ReplayStore, AsyncReplayStore], headers: Mapping[str, str]) -> None:
        """Refuses (AuthError) a request open accepted whose signature the sync store has seen."""
        first = store.first_use(*self._entry(headers))
        if type(first) is not bool and inspect.isawaitable(first):
            getattr(first, "close", lambda: None)()  # a coroutine never awaited would warn
            raise TypeError("this replay store is asynchronous: use Verifier.open_async or open_bytes_async")
        if not first:
            _refuse_replay()

    def _entry(self, headers: Mapping[str, str]) -> tuple[str, float]:
        """(signature, expires_at) of a request open() accepted: 'Basic ' + 128 hex digits, and 10 digits."""
        authorization = headers.get("Authorization")  # (how the middleware and most callers name them: one lookup)
        timestamp = headers.get("timestamp")
        if type(authorization) is not str or type(timestamp) is not str:
            authorization, timestamp = header(headers, "Authorization"), header(headers, "timestamp")
        return (authorization or "")[6:], int(timestamp or 0) + self.tolerance


def _refuse_replay() -> None:
    raise AuthError("replayed request: this signature was already accepted inside the tolerance window")


def verify_once(terminal: Opener, store: ReplayStore, method: str, headers: Mapping[str, str], body: Body = None,
                params: Params = None, *, now: Optional[float] = None,
                tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    """``terminal.open(...)``, then refuse (AuthError) a signature that ``store`` has already seen."""
    return Verifier(terminal, replay_store=store, tolerance=tolerance).open(method, headers, body, params, now=now)
