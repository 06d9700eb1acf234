"""The pending-transfer guard of certification rule 6 on PostgreSQL, shared by every web node (extra
``pasarela[postgres]``).

    guard = PostgresPendingTransfers(pool)
    client = TransferClient(config, pending=guard)
    receiver = TransferWebhookReceiver(on_event, secret=..., pending=guard)

Same rules as :class:`~pasarela.transfers.pending.PendingTransfers` and its Redis twin: one transfer not yet
final per order across all nodes; released by a final status, a webhook, a cancel or :meth:`release`. Each
operation is one statement on ``pasarela.pending_transfers``, whose primary key is the order id: of two
nodes reserving one order at once, the server lets exactly one insert it. A release by token or reference
frees only the order that still holds that transfer (the latest reserved, should two orders name one token).

A reservation expires ``ttl`` seconds after it was made, on the server's clock (default one day; make it
longer than a transfer can stay Initialized): an order whose final result never arrives frees itself then.
Expired rows are deleted in batches, by the guard at most every ``prune_interval`` seconds and by
:func:`pasarela.postgres.prune`. The table is logged: a crash forgets no reservation, so unlike the Redis guard
this one has no memory to lose.

When the server cannot be reached, a connection is lost or a statement times out,
:class:`~pasarela.errors.StoreUnavailableError` is raised: ``init`` is not sent (no transfer can start
unguarded); a release that fails leaves the order reserved until it expires or is released again.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from .. import _postgres_store as pg
from ..errors import PendingTransferError, ValidationError
from .pending import PendingTransfer

__all__ = ["AsyncPostgresPendingTransfers", "PostgresPendingTransfers"]

_STORE = "pending-transfer guard (PostgreSQL)"
# An order is taken unless a live reservation holds it (an expired one not yet pruned is replaced).
_RESERVE = """
INSERT INTO pasarela.pending_transfers AS p (order_id, token, confirmed, reserved_at, expires_at)
VALUES (%(order)s, %(token)s, false, %(at)s, pasarela.clock_ms() + %(ttl)s)
ON CONFLICT (order_id) DO UPDATE SET token = EXCLUDED.token, transaction_reference = NULL, confirmed = false,
    reserved_at = EXCLUDED.reserved_at, expires_at = EXCLUDED.expires_at
WHERE p.expires_at <= pasarela.clock_ms()
RETURNING 1
"""
# Only the reservation of that token is confirmed; a reference given is kept.
_CONFIRM = """
UPDATE pasarela.pending_transfers SET confirmed = true,
    transaction_reference = coalesce(%(reference)s, transaction_reference)
WHERE order_id = %(order)s AND token = %(token)s AND expires_at > pasarela.clock_ms()
RETURNING 1
"""
_RELEASE = "DELETE FROM pasarela.pending_transfers WHERE order_id = %s RETURNING 1"
# The order holding that transfer now: by its token first, then its reference; the latest reserved of several.
_RELEASE_TRANSFER = """
DELETE FROM pasarela.pending_transfers WHERE order_id = (
    SELECT order_id FROM pasarela.pending_transfers
    WHERE expires_at > pasarela.clock_ms() AND (token = %(token)s OR transaction_reference = %(reference)s)
    ORDER BY coalesce(token = %(token)s, false) DESC, reserved_at DESC
    LIMIT 1 FOR UPDATE)
RETURNING order_id
"""
_PENDING = """
SELECT token, transaction_reference, confirmed, reserved_at FROM pasarela.pending_transfers
WHERE order_id = %s AND expires_at > pasarela.clock_ms()
"""
_PRUNE = pg.batch_delete("pending_transfers", "expires_at <= pasarela.clock_ms()")


class _GuardStatements:
    def __init__(self, *, schema: str = pg.DEFAULT_SCHEMA, ttl: float = 86400.0, prune_interval: Optional[float] = 60.0,
                 prune_batch: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        self._schema = schema
        self._ttl_ms = max(1, pg.unix_ms(pg.seconds(ttl, "ttl")))
        self._clock = clock
        self._reserve = pg.qualified(_RESERVE, schema)
        self._confirm = pg.qualified(_CONFIRM, schema)
        self._release = pg.qualified(_RELEASE, schema)
        self._release_transfer = pg.qualified(_RELEASE_TRANSFER, schema)
        self._pending = pg.qualified(_PENDING, schema)
        self._prune = pg.qualified(_PRUNE, schema)
        self._pruning = pg.Pruning(prune_interval, prune_batch)

    def _reserve_params(self, order_id: str, token: str) -> dict[str, Any]:
        return {"order": _held("order_id", order_id), "token": _held("token", token), "at": self._clock(),
                "ttl": self._ttl_ms}

    @staticmethod
    def _confirm_params(order_id: str, transaction_reference: Optional[str], token: str) -> dict[str, Any]:
        return {"order": _held("order_id", order_id), "token": _held("token", token),
                "reference": _held("transaction_reference", transaction_reference) or None}

    @staticmethod
    def _release_transfer_params(token: Optional[str], transaction_reference: Optional[str]) -> dict[str, Any]:
        # (from a webhook body: a value text cannot hold is held by no reservation, and releases nothing)
        return {"token": token if token and pg.text_holds(token) else None,
                "reference": transaction_reference if transaction_reference and pg.text_holds(transaction_reference)
                else None}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(schema={self._schema!r})"


def _held(field: str, value: Optional[str]) -> Any:
    """A value the application gives the guard, checked: one that PostgreSQL's text cannot hold is refused by name."""
    if value is not None and not pg.text_holds(value):
        raise ValidationError(field, "holds a NUL or a lone surrogate, which PostgreSQL's text cannot store")
    return value


def _reserved(order_id: str, rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        raise PendingTransferError(order_id)


def _released(rows: list[tuple[Any, ...]]) -> Optional[str]:
    return str(rows[0][0]) if rows else None


def _pending(order_id: str, rows: list[tuple[Any, ...]]) -> Optional[PendingTransfer]:
    if not rows:
        return None
    token, reference, confirmed, reserved_at = rows[0]
    return PendingTransfer(order_id, token, reference, bool(confirmed), float(reserved_at))


class PostgresPendingTransfers(_GuardStatements):
    """:class:`~pasarela.transfers.pending.TransferGuard` on a ``psycopg.Connection`` or a
    ``psycopg_pool.ConnectionPool``. Options: ``schema``, ``ttl``, ``prune_interval`` (None: never by itself),
    ``prune_batch``, ``clock`` (the ``reserved_at`` it records)."""

    def __init__(self, connections: pg.SyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = pg.Connections(connections)

    def _run(self, statement: bytes, params: Any) -> list[tuple[Any, ...]]:
        return self._connections.run(statement, params, _STORE)

    def reserve(self, order_id: str, token: str) -> None:
        _reserved(order_id, self._run(self._reserve, self._reserve_params(order_id, token)))
        if self._pruning.due():
            self.prune()

    def confirm(self, order_id: str, transaction_reference: Optional[str], *, token: str) -> None:
        self._run(self._confirm, self._confirm_params(order_id, transaction_reference, token))

    def release(self, order_id: str) -> None:
        self._run(self._release, (_held("order_id", order_id),))

    def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        return _released(self._run(self._release_transfer, self._release_transfer_params(token, transaction_reference)))

    def pending(self, order_id: str) -> Optional[PendingTransfer]:
        """The order's transfer that is not final yet, if any."""
        return _pending(order_id, self._run(self._pending, (_held("order_id", order_id),)))

    def prune(self) -> int:
        """Delete the expired reservations, ``prune_batch`` at a time; how many were deleted."""
        return self._connections.prune(self._prune, {}, self._pruning.batch, _STORE)


class AsyncPostgresPendingTransfers(_GuardStatements):
    """:class:`~pasarela.transfers.pending.AsyncTransferGuard` on a ``psycopg.AsyncConnection`` or an
    ``AsyncConnectionPool`` (the options of :class:`PostgresPendingTransfers`)."""

    def __init__(self, connections: pg.AsyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = pg.AsyncConnections(connections)

    async def _run(self, statement: bytes, params: Any) -> list[tuple[Any, ...]]:
        return await self._connections.run(statement, params, _STORE)

    async def reserve(self, order_id: str, token: str) -> None:
        _reserved(order_id, await self._run(self._reserve, self._reserve_params(order_id, token)))
        self._pruning.start_if_due(self.prune)

    async def confirm(self, order_id: str, transaction_reference: Optional[str], *, token: str) -> None:
        await self._run(self._confirm, self._confirm_params(order_id, transaction_reference, token))

    async def release(self, order_id: str) -> None:
        await self._run(self._release, (_held("order_id", order_id),))

    async def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        return _released(await self._run(self._release_transfer,
                                         self._release_transfer_params(token, transaction_reference)))

    async def pending(self, order_id: str) -> Optional[PendingTransfer]:
        """The order's transfer that is not final yet, if any."""
        return _pending(order_id, await self._run(self._pending, (_held("order_id", order_id),)))

    async def prune(self) -> int:
        """As :meth:`PostgresPendingTransfers.prune`."""
        return await self._connections.prune(self._prune, {}, self._pruning.batch, _STORE)
