"""Which deliveries of transfer webhooks reach the handler: each event once, one at a time per transaction,
and nothing of a transaction after its final event.

The receiver holds a *lease* on the event's transaction while the handler runs: it **claims** the
event (with a token new for each delivery), hands it over, then **confirms** it (recorded as handled)
or, when the handler failed, **releases** the lease so that the next delivery is handled. A claim
answers, atomically (two deliveries racing on two nodes get different answers):

- :attr:`Claim.CLAIMED`: hand the event over (also when the claim finds its own token: its first try,
  re-sent by a client after a timeout, had run);
- :attr:`Claim.HANDLED`: this event (transaction and status) was handled before: a redelivery;
- :attr:`Claim.SUPERSEDED`: the transaction's final event was handled before and this is another one
  of it (an older state arriving late, or a contradiction): the final state wins;
- :attr:`Claim.IN_PROGRESS`: another delivery of this transaction holds the lease: try again later.

A lease ends by itself ``lease`` seconds after the claim (a process that died while handling frees the
transaction then); records of handled events are kept ``ttl`` seconds after the transaction's last
claim. :class:`SeenEvents` keeps them in memory (one process); :mod:`.webhook_dedup_redis` on Redis
(sync or asyncio), for many processes and machines; :mod:`.webhook_dedup_postgres` on PostgreSQL.

An :class:`Inbox` goes further: it claims, runs the handler and confirms in one database transaction, the
handler's own writes included, so that they commit together or not at all (exactly-once effects:
:mod:`.inbox_postgres`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Optional, Protocol, Union

from ..errors import StoreUnavailableError

__all__ = ["AnyInbox", "AnyLedger", "AsyncEventLedger", "AsyncInbox", "Claim", "EventKey", "EventLedger", "Inbox",
           "SeenEvents"]

DEFAULT_TTL = 7 * 86400.0
"""Seconds an event is remembered as handled: longer than the service keeps redelivering."""
DEFAULT_LEASE = 60.0
"""Seconds a claim holds its transaction unless confirmed or released first: longer than a handler runs."""


class Claim(Enum):
    """What a ledger answers a delivery's claim (see the module's text)."""

    CLAIMED = "claimed"
    HANDLED = "handled"
    SUPERSEDED = "superseded"
    IN_PROGRESS = "in progress"


@dataclass(frozen=True)
class EventKey:
    """What identifies an event: its transaction (``transactionReference`` or token, or the SHA-256 of a
    body naming neither), its status as sent ("" when unknown), and whether that status is final."""

    transaction: str
    status: str
    final: bool

    @property
    def dedup_key(self) -> str:
        return f"{self.transaction}:{self.status}" if self.status else self.transaction


class EventLedger(Protocol):
    @property
    def ttl(self) -> float:
        """Seconds a handled event is remembered (the receiver refuses one shorter than its freshness window)."""

    def claim(self, event: EventKey, token: str, *, earliest_receipt: Optional[float] = None) -> Claim:
        """Take the lease on the event's transaction for the delivery holding ``token``, or say why not.

        ``earliest_receipt``: the earliest time (Unix seconds) any node can have received this delivery (its
        signed ``X-Kushki-Id`` less the receiver's ``max_ahead``), None when it is not dated. A ledger that
        lost its memory since then cannot know whether the event was handled: it raises
        :class:`~pasarela.errors.StoreUnavailableError` rather than answer."""

    def confirm(self, event: EventKey, token: str) -> None:
        """The handler took the event: record it as handled and end the lease, if still held by ``token``."""

    def release(self, event: EventKey, token: str) -> None:
        """The handler failed: end the lease if still held by ``token``, recording nothing."""


class AsyncEventLedger(Protocol):
    """:class:`EventLedger` for asyncio code (a ledger reached over the network, e.g. on Redis)."""

    @property
    def ttl(self) -> float: ...

    def claim(self, event: EventKey, token: str, *, earliest_receipt: Optional[float] = None) -> Awaitable[Claim]: ...

    def confirm(self, event: EventKey, token: str) -> Awaitable[None]: ...

    def release(self, event: EventKey, token: str) -> Awaitable[None]: ...


AnyLedger = Union[EventLedger, AsyncEventLedger]


class Inbox(Protocol):
    """A ledger whose claim, handler and confirmation share one transaction of the merchant's database."""

    @property
    def ttl(self) -> float:
        """Seconds a handled event is remembered (as :attr:`EventLedger.ttl`)."""

    def handle_once(self, event: EventKey, handler: Callable[[Any], object]) -> Claim:
        """In one transaction: claim the event; when :attr:`Claim.CLAIMED`, call ``handler(transaction)`` (the
        open transaction's connection, for the merchant's writes) and record the event as handled; commit.
        Answers the claim: CLAIMED once the whole has committed, else why the handler was not called. A
        handler that raises rolls everything back and its exception propagates; anything unknown (the commit's
        answer lost, the server gone) raises :class:`~pasarela.errors.StoreUnavailableError`."""


class AsyncInbox(Protocol):
    """:class:`Inbox` for asyncio code: ``handler(transaction)`` may return an awaitable, which is awaited."""

    @property
    def ttl(self) -> float: ...

    def handle_once(self, event: EventKey, handler: Callable[[Any], object]) -> Awaitable[Claim]: ...


AnyInbox = Union[Inbox, AsyncInbox]


@dataclass
class _Transaction:
    expires_at: float
    lease_token: Optional[str] = None
    lease_until: float = 0.0
    handled: set[str] = field(default_factory=set)
    final: Optional[str] = None


class SeenEvents:
    """In-memory :class:`EventLedger`: what it was told, for ``ttl`` seconds after each transaction's last
    claim, of at most ``max_entries`` transactions at once.

    When that many are remembered and none has expired, a claim for a new transaction raises
    :class:`~pasarela.errors.StoreUnavailableError` (the receiver answers 503, the service delivers the
    event again later) rather than forget one whose redelivery or replay would then be handled again:
    size it for the transactions of ``ttl`` seconds. ``clock`` gives Unix seconds.
    """

    def __init__(self, max_entries: int = 100_000, *, ttl: float = 86400.0, lease: float = DEFAULT_LEASE,
                 clock: Callable[[], float] = time.time) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError("max_entries must be a positive int")
        if not 0 < lease <= ttl < float("inf"):
            raise ValueError("lease and ttl must be seconds, 0 < lease <= ttl")
        self._max_entries = max_entries
        self._ttl = float(ttl)
        self._lease = float(lease)
        self._clock = clock
        self._transactions: OrderedDict[str, _Transaction] = OrderedDict()  # least recently claimed first
        self._lock = threading.Lock()

    @property
    def ttl(self) -> float:
        return self._ttl

    def claim(self, event: EventKey, token: str, *, earliest_receipt: Optional[float] = None) -> Claim:
        """As :meth:`EventLedger.claim`; ``earliest_receipt`` is ignored: this memory ends with its process, and
        a process started since cannot know what the last one handled (share a ledger on Redis for that)."""
        with self._lock:
            now = self._clock()
            self._purge(now)
            record = self._transactions.get(event.transaction)
            if record is None:
                if len(self._transactions) >= self._max_entries:
                    raise StoreUnavailableError(
                        "webhook ledger (memory)",
                        f"full: {self._max_entries} transactions seen in the last {self._ttl:g} s")
                record = self._transactions[event.transaction] = _Transaction(now + self._ttl)
            outcome = _claim(record, event, token, now)
            if outcome is Claim.CLAIMED:
                record.lease_token, record.lease_until, record.expires_at = token, now + self._lease, now + self._ttl
                self._transactions.move_to_end(event.transaction)
            return outcome

    def confirm(self, event: EventKey, token: str) -> None:
        with self._lock:
            record = self._transactions.get(event.transaction)
            if record is not None:
                record.handled.add(event.status)
                if event.final and record.final is None:
                    record.final = event.status
                if record.lease_token == token:
                    record.lease_token = None

    def release(self, event: EventKey, token: str) -> None:
        with self._lock:
            record = self._transactions.get(event.transaction)
            if record is not None and record.lease_token == token:
                record.lease_token = None

    def _purge(self, now: float) -> None:
        while self._transactions:
            transaction, record = next(iter(self._transactions.items()))
            if record.expires_at > now:
                return
            del self._transactions[transaction]

    def __len__(self) -> int:
        """The transactions remembered now."""
        with self._lock:
            self._purge(self._clock())
            return len(self._transactions)


def _claim(record: _Transaction, event: EventKey, token: str, now: float) -> Claim:
    """The order of the checks is the Redis script's (:mod:`.webhook_dedup_redis`)."""
    if record.lease_token == token:
        return Claim.CLAIMED
    if event.status in record.handled:
        return Claim.HANDLED
    if record.final is not None:
        return Claim.SUPERSEDED
    if record.lease_token is not None and record.lease_until > now:
        return Claim.IN_PROGRESS
    return Claim.CLAIMED
