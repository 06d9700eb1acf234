"""The inbox on PostgreSQL: each webhook event's effects on the merchant's own database committed exactly once
(extra ``pasarela[postgres]``).

    from pasarela.transfers.inbox_postgres import PostgresInbox

    def on_event(event: TransferEvent, tx: psycopg.Connection) -> None:   # tx: inside the inbox's transaction
        tx.execute("UPDATE orders SET paid_at = now() WHERE transfer_reference = %s AND paid_at IS NULL",
                   (event.transaction_reference,))

    receiver = TransferWebhookReceiver(on_event, secret=..., inbox=PostgresInbox(pool))

For each delivery, one transaction on a connection of ``pool``: the claim of :mod:`.webhook_dedup_postgres`
(the same table and rules: each event once, none after its transaction's final event), the handler's writes
through the connection it is given, then the event recorded as handled, and one COMMIT for all of it. The
claim locks the transaction's row until that commit: a second delivery of the same transaction, on any node,
waits for it (up to ``lock_wait`` seconds, then 503 "in progress": the service delivers it again) and then
finds the event handled (200 "duplicate"). Never both.

What the handler writes through ``tx`` happens exactly once: an exception in the handler, a crash of the
process, a lost connection or a failed commit rolls back the claim with the writes, and the next delivery is
handled as if the first had never come. What the handler does *outside* that transaction is not covered: an
e-mail sent, an HTTP call, a job queued may happen again (a handler that ran while the commit failed, a
serialization failure tried again). Write such work as a row in the same transaction (an outbox) and send it
from there: docs/postgres.md shows how.

A transaction the server rolls back by itself (serialization failure 40001, deadlock 40P01, e.g. under
``isolation="serializable"``) is tried again, handler included, up to 3 times. The connection must not be
committed, rolled back or closed by the handler (a nested ``with tx.transaction():`` is a savepoint, and fine).
Anything unknown (the server gone, the connection terminated, a statement past ``statement_timeout``, the
commit's answer lost) raises :class:`~pasarela.errors.StoreUnavailableError`: the receiver answers 503, and
the redelivery finds either the committed event (duplicate) or nothing (handled then).
"""

from __future__ import annotations

import inspect
import secrets
from typing import Any, Callable, Optional, TypeVar

from .._postgres_store import (
    AsyncConnections,
    AsyncSource,
    Connections,
    SyncSource,
    failing_closed,
    psycopg,
    retrying,
    retrying_async,
)
from ..errors import ConfigurationError
from .webhook_dedup import Claim, EventKey
from .webhook_dedup_postgres import LedgerBase, claimed

__all__ = ["AsyncPostgresInbox", "PostgresInbox"]

_STORE = "webhook inbox (PostgreSQL)"
_ISOLATION = {"read committed": b"SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
              "repeatable read": b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
              "serializable": b"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"}
T = TypeVar("T")


class _HandlerFailed(Exception):
    """Carries the handler's own exception through the inbox's failing_closed (it is re-raised as it was)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(type(error).__name__)
        self.error = error


def _handler_error(error: Exception, connection: Any) -> Exception:
    """What an exception of the handler becomes. The transaction's own failures stay the inbox's: the server's
    rollback (a serialization failure: tried again), a statement cancelled (``statement_timeout``), a lock not
    had, the connection lost (unknown: fail closed, 503). Anything else (a bug, a constraint of the merchant's
    tables) is the handler's, re-raised unchanged."""
    if isinstance(error, psycopg.OperationalError) or connection.broken:
        return error
    return _HandlerFailed(error)


class _Inbox(LedgerBase):
    """The ledger's statements (its table, ttl and repr), and the isolation the handler's transaction runs at."""

    def __init__(self, *, isolation: Optional[str] = None, **options: Any) -> None:
        if isolation is not None and isolation not in _ISOLATION:
            raise ConfigurationError(f"isolation must be one of {', '.join(sorted(_ISOLATION))}, or None")
        self._isolation = None if isolation is None else _ISOLATION[isolation]
        super().__init__(**options)


def _unwrapped(step: Callable[[], T]) -> T:
    """``step()`` failing closed, the handler's own exception re-raised as it was (without the inbox's frames)."""
    try:
        with failing_closed(_STORE):
            return step()
    except _HandlerFailed as failed:
        error = failed.error
    raise error


class PostgresInbox(_Inbox):
    """:class:`~pasarela.transfers.webhook_dedup.Inbox` on a ``psycopg_pool.ConnectionPool`` (or a
    ``psycopg.Connection``, one delivery at a time). Options: ``isolation`` ("serializable", "repeatable read",
    "read committed"; None: the connection's), and the ledger's ``schema``, ``ttl``, ``lease``, ``lock_wait``,
    ``prune_interval``, ``prune_batch`` (:class:`~.webhook_dedup_postgres.PostgresEventLedger`)."""

    def __init__(self, connections: SyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = Connections(connections)

    def handle_once(self, event: EventKey, handler: Callable[[Any], object]) -> Claim:
        token = secrets.token_hex(16)  # this delivery's claim
        return _unwrapped(lambda: retrying(lambda: self._attempt(event, token, handler)))

    def _attempt(self, event: EventKey, token: str, handler: Callable[[Any], object]) -> Claim:
        statements = self._statements
        with self._connections.connection() as connection, connection.transaction():
            if self._isolation is not None:
                connection.execute(self._isolation)
            outcome = claimed(connection.execute(statements.claim_sql, statements.claim_params(event, token))
                              .fetchall())
            if outcome is not Claim.CLAIMED:
                return outcome
            try:
                done = handler(connection)
            except Exception as exc:
                raise _handler_error(exc, connection) from None
            if inspect.isawaitable(done):
                getattr(done, "close", lambda: None)()
                raise _HandlerFailed(TypeError("the handler is async: use AsyncPostgresInbox (or a sync handler)"))
            connection.execute(statements.confirm_sql, statements.confirm_params(event, token))
        if statements.pruning.due():
            self.prune()
        return Claim.CLAIMED

    def prune(self) -> int:
        """Delete the transactions forgotten (ttl passed), ``prune_batch`` at a time (the ledger's table: one
        prune serves both); how many were deleted."""
        return self._connections.prune(self._statements.prune_sql, {}, self._statements.pruning.batch, _STORE)


class AsyncPostgresInbox(_Inbox):
    """:class:`~pasarela.transfers.webhook_dedup.AsyncInbox` on a ``psycopg_pool.AsyncConnectionPool`` (or a
    ``psycopg.AsyncConnection``): the handler gets the ``AsyncConnection`` and may be a coroutine function.
    The options of :class:`PostgresInbox`."""

    def __init__(self, connections: AsyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = AsyncConnections(connections)

    async def handle_once(self, event: EventKey, handler: Callable[[Any], object]) -> Claim:
        token = secrets.token_hex(16)
        try:
            with failing_closed(_STORE):
                return await retrying_async(lambda: self._attempt(event, token, handler))
        except _HandlerFailed as failed:  # (as _unwrapped, awaiting)
            error = failed.error
        raise error

    async def _attempt(self, event: EventKey, token: str, handler: Callable[[Any], object]) -> Claim:
        statements = self._statements
        async with self._connections.connection() as connection, connection.transaction():
            if self._isolation is not None:
                await connection.execute(self._isolation)
            outcome = claimed(await (await connection.execute(statements.claim_sql,
                                                              statements.claim_params(event, token))).fetchall())
            if outcome is not Claim.CLAIMED:
                return outcome
            try:
                done = handler(connection)
                if inspect.isawaitable(done):
                    await done
            except Exception as exc:
                raise _handler_error(exc, connection) from None
            await connection.execute(statements.confirm_sql, statements.confirm_params(event, token))
        statements.pruning.start_if_due(self.prune)
        return Claim.CLAIMED

    async def prune(self) -> int:
        """As :meth:`PostgresInbox.prune`."""
        return await self._connections.prune(self._statements.prune_sql, {}, self._statements.pruning.batch, _STORE)
