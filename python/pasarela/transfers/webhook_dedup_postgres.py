"""Webhook deduplication on PostgreSQL, shared by every web node and worker (extra ``pasarela[postgres]``).

    receiver = TransferWebhookReceiver(on_event, secret=..., ledger=PostgresEventLedger(pool))

The rules are those of :mod:`.webhook_dedup` (claim, confirm, release; leases; superseded finals; in
progress). One row per transaction in ``pasarela.webhook_transactions`` holds the statuses handled, the first
final status handled and the lease (the token of the delivery holding it, until when on the server's clock);
claim and confirm are each one call of a function of the schema, release one statement: the server runs each
atomically, the transaction's row locked (two nodes receiving the same delivery at once get different
answers). psycopg never sends a statement again by itself, so no claim can meet its own earlier try.

For effects that must happen exactly once, use the inbox (:mod:`.inbox_postgres`): the same table, written
in the merchant's own transaction. This ledger, like the Redis one, records an event after the handler
returned: a crash between the two has the next delivery handled again.

The row is kept ``ttl`` seconds after the transaction's last claim or confirmation (default 7 days, longer
than the service keeps redelivering); a lease ends ``lease`` seconds after its claim (default 60), so a
process that died while handling frees the transaction by then. Expired rows are deleted in batches, by the
ledger at most every ``prune_interval`` seconds and by :func:`pasarela.postgres.prune`.

The table is logged (a crash forgets nothing committed), so unlike the Redis ledger this one has no memory to
lose: ``earliest_receipt`` is not needed and not used. When the server cannot be reached, a connection is lost
or a statement times out, :class:`~pasarela.errors.StoreUnavailableError` is raised: the event is not handed
over, the receiver answers 503 and the service delivers it again later.
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional

from .. import _postgres_store as pg
from ..errors import ConfigurationError
from .webhook_dedup import DEFAULT_LEASE, DEFAULT_TTL, Claim, EventKey

__all__ = ["AsyncPostgresEventLedger", "PostgresEventLedger"]

_STORE = "webhook ledger (PostgreSQL)"
_LONGEST_READABLE_KEY = 200
DEFAULT_LOCK_WAIT = 2.0
"""Seconds a claim waits for another delivery of its transaction to finish (the inbox holds the transaction's
row while the merchant's handler runs) before it answers "in progress"."""

_CLAIM = "SELECT pasarela.webhook_claim(%s, %s, %s, %s, %s, %s)"
_CONFIRM = "SELECT pasarela.webhook_confirm(%s, %s, %s, %s, %s)"
_RELEASE = ("UPDATE pasarela.webhook_transactions SET lease_token = NULL, lease_until = NULL"
            " WHERE transaction = %s AND lease_token = %s RETURNING 1")
_PRUNE = pg.batch_delete("webhook_transactions", "expires_at <= pasarela.clock_ms()")


def stored(text: str) -> str:
    """A transaction or a status as the table holds it: as the webhook body gave it, or ``sha256:`` and the SHA-256
    of its UTF-8 when it is long (the primary key stays small) or when PostgreSQL's text cannot hold it (a NUL, or
    a lone surrogate, which a JSON escape of the body may carry: kept as its ``surrogatepass`` bytes)."""
    if len(text) <= _LONGEST_READABLE_KEY and pg.text_holds(text):
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class LedgerStatements:
    """The ledger's statements and their parameters for one schema and its settings (the inbox's too)."""

    def __init__(self, *, schema: str = pg.DEFAULT_SCHEMA, ttl: float = DEFAULT_TTL, lease: float = DEFAULT_LEASE,
                 lock_wait: float = DEFAULT_LOCK_WAIT, prune_interval: Optional[float] = 60.0,
                 prune_batch: int = 10_000) -> None:
        self.schema = schema
        self.ttl = pg.seconds(ttl, "ttl")
        if pg.seconds(lease, "lease") > self.ttl:
            raise ConfigurationError("lease must not be longer than ttl")
        self._ttl_ms, self._lease_ms = pg.unix_ms(self.ttl), max(1, pg.unix_ms(lease))
        self._lock_wait_ms = max(1, pg.unix_ms(pg.seconds(lock_wait, "lock_wait")))
        self.claim_sql = pg.qualified(_CLAIM, schema)
        self.confirm_sql = pg.qualified(_CONFIRM, schema)
        self.release_sql = pg.qualified(_RELEASE, schema)
        self.prune_sql = pg.qualified(_PRUNE, schema)
        self.pruning = pg.Pruning(prune_interval, prune_batch)

    def claim_params(self, event: EventKey, token: str) -> tuple[Any, ...]:
        return (stored(event.transaction), stored(event.status), token, self._lease_ms, self._ttl_ms,
                self._lock_wait_ms)

    def confirm_params(self, event: EventKey, token: str) -> tuple[Any, ...]:
        return stored(event.transaction), stored(event.status), token, event.final, self._ttl_ms

    def release_params(self, event: EventKey, token: str) -> tuple[Any, ...]:
        return stored(event.transaction), token


def claimed(rows: list[tuple[Any, ...]]) -> Claim:
    return Claim(rows[0][0])


class LedgerBase:
    """What the ledgers and the inbox share: their statements over one table, its ttl, their repr."""

    def __init__(self, **options: Any) -> None:
        self._statements = LedgerStatements(**options)

    @property
    def ttl(self) -> float:
        return self._statements.ttl

    def __repr__(self) -> str:
        return f"{type(self).__name__}(schema={self._statements.schema!r})"


class PostgresEventLedger(LedgerBase):
    """:class:`~pasarela.transfers.webhook_dedup.EventLedger` on a ``psycopg.Connection`` or a
    ``psycopg_pool.ConnectionPool``. Options: ``schema``, ``ttl``, ``lease``, ``lock_wait`` (seconds a claim
    waits for the transaction's row, held by an inbox's handler, before "in progress"), ``prune_interval``
    (None: never by itself), ``prune_batch``."""

    def __init__(self, connections: pg.SyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = pg.Connections(connections)

    def claim(self, event: EventKey, token: str, *, earliest_receipt: Optional[float] = None) -> Claim:
        """As :meth:`EventLedger.claim`; ``earliest_receipt`` is not used: a logged table forgets nothing."""
        statements = self._statements
        outcome = claimed(self._connections.run(statements.claim_sql, statements.claim_params(event, token), _STORE))
        if statements.pruning.due():
            self.prune()
        return outcome

    def confirm(self, event: EventKey, token: str) -> None:
        statements = self._statements
        self._connections.run(statements.confirm_sql, statements.confirm_params(event, token), _STORE)

    def release(self, event: EventKey, token: str) -> None:
        statements = self._statements
        self._connections.run(statements.release_sql, statements.release_params(event, token), _STORE)

    def prune(self) -> int:
        """Delete the transactions forgotten (ttl passed), ``prune_batch`` at a time; how many were deleted."""
        return self._connections.prune(self._statements.prune_sql, {}, self._statements.pruning.batch, _STORE)


class AsyncPostgresEventLedger(LedgerBase):
    """:class:`~pasarela.transfers.webhook_dedup.AsyncEventLedger` on a ``psycopg.AsyncConnection`` or an
    ``AsyncConnectionPool`` (the options of :class:`PostgresEventLedger`). Its prunes run beside the claims."""

    def __init__(self, connections: pg.AsyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = pg.AsyncConnections(connections)

    async def claim(self, event: EventKey, token: str, *, earliest_receipt: Optional[float] = None) -> Claim:
        statements = self._statements
        outcome = claimed(await self._connections.run(statements.claim_sql, statements.claim_params(event, token),
                                                      _STORE))
        statements.pruning.start_if_due(self.prune)
        return outcome

    async def confirm(self, event: EventKey, token: str) -> None:
        statements = self._statements
        await self._connections.run(statements.confirm_sql, statements.confirm_params(event, token), _STORE)

    async def release(self, event: EventKey, token: str) -> None:
        statements = self._statements
        await self._connections.run(statements.release_sql, statements.release_params(event, token), _STORE)

    async def prune(self) -> int:
        """As :meth:`PostgresEventLedger.prune`."""
        return await self._connections.prune(self._statements.prune_sql, {}, self._statements.pruning.batch, _STORE)
