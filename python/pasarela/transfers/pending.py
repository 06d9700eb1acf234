"""Certification rule 6: after an Initialized result, no new transfer for the order until it is
approved or rejected.

:class:`PendingTransfers` remembers, per order, the transfer that is not final yet, in SQLite
(``":memory:"`` by default; give a file path to share the guard between processes: the order id is
the primary key, so two processes racing for one order cannot both win); for many machines use
:mod:`.pending_redis` (sync and asyncio, on Redis). The transfer client
reserves the order before ``init`` and confirms it after; a status query, a webhook or a cancel
that shows a final result releases it.

An ``init`` that fails *definitely* (an error answer with a code or a 4xx, or a request refused
before sending) releases the reservation at once. One whose outcome is unknown (no answer, a
5xx without a code, an answer that could not be read) keeps it: the transfer may exist, and only
a status query on its token can tell. A QR left unpaid stays Initialized as far as the spec says;
release such an order explicitly with :meth:`PendingTransfers.release`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Awaitable
from dataclasses import dataclass
from types import TracebackType
from typing import Callable, Optional, Protocol, Union

from .._closing import ClosesOnExit
from .._maybe_async import settled, synchronously
from ..errors import ApiError, ConfigurationError, PendingTransferError, ValidationError
from .responses import ColombiaQr, MexicoClabe, TransferInit

__all__ = ["AsyncTransferGuard", "GuardedInit", "PendingTransfer", "PendingTransfers", "TransferGuard"]


@dataclass(frozen=True)
class PendingTransfer:
    order_id: str
    token: str
    transaction_reference: Optional[str]
    confirmed: bool
    """True once init succeeded; False while it runs or when its outcome is unknown."""
    reserved_at: float


class TransferGuard(Protocol):
    """What the transfer client and the webhook receiver need from a guard (bring your own store)."""

    def reserve(self, order_id: str, token: str) -> None:
        """Claim the order for the transfer of ``token``; PendingTransferError if it has one already."""

    def confirm(self, order_id: str, transaction_reference: Optional[str], *, token: str) -> None:
        """Init of the transfer of ``token`` succeeded: it is Initialized (nothing changes when the order is
        held by another transfer by then: a confirmation re-sent late never marks a newer reservation)."""

    def release(self, order_id: str) -> None:
        """Free the order, whatever its transfer's state (and whichever transfer holds it by then: the
        client itself releases with :meth:`release_transfer`, which frees only the transfer it names)."""

    def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        """Free the order of the transfer with this token or reference; return the order id, if any."""


class AsyncTransferGuard(Protocol):
    """:class:`TransferGuard` for asyncio code (a guard reached over the network, e.g. on Redis)."""

    def reserve(self, order_id: str, token: str) -> Awaitable[None]: ...

    def confirm(self, order_id: str, transaction_reference: Optional[str], *, token: str) -> Awaitable[None]: ...

    def release(self, order_id: str) -> Awaitable[None]: ...

    def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Awaitable[Optional[str]]: ...


AnyGuard = Union[TransferGuard, AsyncTransferGuard]
_ASYNC_GUARD = "this pending-transfer guard"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending_transfers (
    order_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    transaction_reference TEXT,
    confirmed INTEGER NOT NULL DEFAULT 0,
    reserved_at REAL NOT NULL
)
"""


class PendingTransfers(ClosesOnExit):
    """The SQLite-backed :class:`TransferGuard`. Safe to share between threads.

    It holds one SQLite connection: :meth:`close` it (or use it as ``with PendingTransfers(path) as guard:``)
    when the application stops. One never closed is closed when it is collected or at exit, without a
    ``ResourceWarning``: every write is committed when it is made, so closing late loses nothing."""

    def __init__(
        self, path: Union[str, os.PathLike[str]] = ":memory:", *, clock: Callable[[], float] = time.time
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(os.fspath(path), timeout=10.0, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute(_SCHEMA)
        except BaseException:  # e.g. not a database: no guard to close() later, so no connection left open
            self._db.close()
            raise
        self._close_connection = weakref.finalize(self, self._db.close)

    def reserve(self, order_id: str, token: str) -> None:
        try:
            with self._lock:
                self._db.execute(
                    "INSERT INTO pending_transfers (order_id, token, reserved_at) VALUES (?, ?, ?)",
                    (_held("order_id", order_id), _held("token", token), self._clock()),
                )
        except sqlite3.IntegrityError:
            raise PendingTransferError(order_id) from None

    def confirm(self, order_id: str, transaction_reference: Optional[str], *, token: str) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE pending_transfers SET confirmed = 1, transaction_reference = ?"
                " WHERE order_id = ? AND token = ?",
                (_held("transaction_reference", transaction_reference), _held("order_id", order_id),
                 _held("token", token)),
            )

    def release(self, order_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM pending_transfers WHERE order_id = ?", (order_id,))

    def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        # a NULL matches nothing; from a webhook body, a value SQLite cannot hold is held by no reservation either
        keys = (_or_none(token), _or_none(transaction_reference))
        with self._lock:
            rows = self._db.execute(
                "SELECT order_id FROM pending_transfers WHERE token = ? OR transaction_reference = ?", keys
            ).fetchall()
            self._db.execute("DELETE FROM pending_transfers WHERE token = ? OR transaction_reference = ?", keys)
        return str(rows[0][0]) if rows else None

    def pending(self, order_id: str) -> Optional[PendingTransfer]:
        """The order's transfer that is not final yet, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT order_id, token, transaction_reference, confirmed, reserved_at"
                " FROM pending_transfers WHERE order_id = ?",
                (order_id,),
            ).fetchone()
        return None if row is None else PendingTransfer(row[0], row[1], row[2], bool(row[3]), row[4])

    def close(self) -> None:
        """Close the connection (again: nothing)."""
        with self._lock:
            self._close_connection()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _definitely_not_created(exc: BaseException) -> bool:
    if isinstance(exc, (ValidationError, ConfigurationError)):
        return True
    return isinstance(exc, ApiError) and (exc.status < 500 or exc.code is not None)


class GuardedInit:
    """One ``init`` under a guard: reserve on entry, confirm with :meth:`done`, on failure release
    only what certainly created nothing, and only this transfer's reservation (by its token: a release
    re-sent after a timeout never frees a reservation made since). With no guard it does nothing.
    ``with`` takes a sync guard; ``async with`` and :meth:`done_async` either kind."""

    def __init__(self, guard: Optional[AnyGuard], order_id: Optional[str], token: str) -> None:
        if guard is not None and (not isinstance(order_id, str) or not order_id):
            raise ValidationError("order_id", "is required when the client has a pending-transfer guard")
        self._guard = guard
        self._order_id = order_id or ""
        self._token = token

    def __enter__(self) -> GuardedInit:
        if self._guard is not None:
            synchronously(self._guard.reserve(self._order_id, self._token), _ASYNC_GUARD)
        return self

    async def __aenter__(self) -> GuardedInit:
        if self._guard is not None:
            await settled(self._guard.reserve(self._order_id, self._token))
        return self

    def done(self, result: TransferInit) -> TransferInit:
        if self._guard is not None:
            synchronously(self._guard.confirm(self._order_id, _reference(result), token=self._token), _ASYNC_GUARD)
        return result

    async def done_async(self, result: TransferInit) -> TransferInit:
        if self._guard is not None:
            await settled(self._guard.confirm(self._order_id, _reference(result), token=self._token))
        return result

    def __exit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if self._guard is not None and exc is not None and _definitely_not_created(exc):
            synchronously(self._guard.release_transfer(token=self._token), _ASYNC_GUARD)

    async def __aexit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if self._guard is not None and exc is not None and _definitely_not_created(exc):
            await settled(self._guard.release_transfer(token=self._token))


def _reference(result: TransferInit) -> Optional[str]:
    return result.transaction_reference if isinstance(result, (MexicoClabe, ColombiaQr)) else None


def _encodable(value: str) -> bool:
    """Whether SQLite can bind ``value``: UTF-8 encodes it (a lone surrogate, which a JSON escape may carry, not)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _held(field: str, value: Optional[str]) -> Optional[str]:
    """A value the application gives the guard, checked: one SQLite cannot hold is refused by name."""
    if value is not None and not _encodable(value):
        raise ValidationError(field, "holds a lone surrogate, which UTF-8 (and so SQLite) cannot encode")
    return value


def _or_none(value: Optional[str]) -> Optional[str]:
    return value if value is not None and _encodable(value) else None
