"""The replay store on PostgreSQL, shared by every gateway node and worker (extra ``pasarela[postgres]``).

    from psycopg_pool import ConnectionPool, AsyncConnectionPool
    from pasarela.postgres import create_schema
    from pasarela.terminal.replay_postgres import AsyncPostgresReplayStore, PostgresReplayStore

    pool = ConnectionPool("host=db.internal dbname=shop", kwargs={"autocommit": True})
    create_schema(pool)                                   # once per database (or run its SQL file)
    verifier = Verifier(terminal, replay_store=PostgresReplayStore(pool))
    app = TerminalAuthMiddleware(app, terminal, replay_store=AsyncPostgresReplayStore(AsyncConnectionPool(...)))

One statement per verified request (the asyncio store sends those of requests arriving together as one, one
round trip and one commit for them all; the sync store, one each): ``pasarela.replay_first_use``, a function
of the schema that inserts each signature unless a live row holds it, so that of any number of nodes
presenting one signature exactly one inserts it (the primary key decides; the others wait for its commit,
then find it) and every other is refused. A row lives until its request's window has ended plus
``clock_skew`` seconds, judged by the gateway node's clock (the request's timestamp plus the tolerance, as
the verifier passes it), so a node whose clock runs behind still finds it; expired rows are deleted in
batches, by the store at most every ``prune_interval`` seconds and by :func:`pasarela.postgres.prune`.

The table is UNLOGGED (no WAL, no wait for the disk: the check costs what a Redis without persistence
does), so a crash of the server or a failover empties it, as a Redis restart empties Redis. Its memory
marker, ``pasarela.replay_memory`` (emptied with it), tells the next check when the memory began: a request
signed before then plus ``tolerance + clock_skew`` may have been accepted already, and is refused with
:class:`~pasarela.errors.StoreUnavailableError` ("memory lost"; 503 from the middleware: the terminal signs
again later); later requests are judged as usual. A table created by :func:`~pasarela.postgres.create_schema`
starts with a complete memory; :meth:`declare_memory_complete` says so again (a server known to have lost
nothing). ``tolerance`` must be at least the verifier's (:class:`~pasarela.terminal.replay.Verifier` checks).

Transactions the server rolls back by itself (a deadlock) are tried again. Anything else that goes wrong,
a server that cannot be reached, a connection lost or terminated, a statement cancelled by the server's
``statement_timeout``, raises :class:`~pasarela.errors.StoreUnavailableError`: the request is refused
(HTTP 503), never accepted unchecked, and never sent again by the store (a check whose answer was lost may
have been recorded; sending it again would refuse the request as its own replay).
"""

from __future__ import annotations

import hashlib
import time
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from .. import _postgres_store as pg
from .._loop_batches import LoopBatches
from .._telemetry import store_error
from ..errors import StoreUnavailableError
from .inbound import DEFAULT_TOLERANCE

__all__ = ["AsyncPostgresReplayStore", "PostgresReplayStore"]

_STORE = "replay store (PostgreSQL)"
_FIRST_USE = "SELECT answers, began FROM pasarela.replay_first_use(%s, %s, %s, %s, %s)"
_DECLARE = ("INSERT INTO pasarela.replay_memory (began_ms) VALUES (0)"
            " ON CONFLICT (only_row) DO UPDATE SET began_ms = 0")
_PRUNE = pg.batch_delete("replay_signatures", "expires_at < %(now)s")
_SIGNATURE_HEX = frozenset("0123456789abcdef")


def stored_signature(signature: str) -> bytes:
    """What the table holds for a signature: its 64 bytes when it is 128 lower-case hex digits (what the verifier
    passes: ``open`` accepts no other), else the SHA-256 of its text (32 bytes: never equal to the former)."""
    if len(signature) == 128 and _SIGNATURE_HEX.issuperset(signature):
        return bytes.fromhex(signature)
    return hashlib.sha256(signature.encode("utf-8", "surrogatepass")).digest()


class _ReplayTable:
    def __init__(self, *, schema: str = pg.DEFAULT_SCHEMA, clock_skew: float = 5.0,
                 tolerance: float = DEFAULT_TOLERANCE, prune_interval: Optional[float] = 60.0,
                 prune_batch: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        self._schema = schema
        self._first_use_sql = pg.qualified(_FIRST_USE, schema)
        self._declare_sql = pg.qualified(_DECLARE, schema)
        self._prune_sql = pg.qualified(_PRUNE, schema)
        self._skew_ms = pg.unix_ms(pg.seconds(clock_skew, "clock_skew", zero_ok=True))
        self._tolerance = pg.seconds(tolerance, "tolerance")
        # A request accepted before the loss had its window begin before it (on a clock up to clock_skew off):
        # it ends before the memory's beginning + 2 * tolerance + clock_skew.
        self._margin_ms = pg.unix_ms(2 * self._tolerance) + self._skew_ms
        self._clock = clock
        self._pruning = pg.Pruning(prune_interval, prune_batch)

    @property
    def tolerance(self) -> float:
        """The longest a request's timestamp may be from the clock: how far back a lost memory reaches."""
        return self._tolerance

    def _params(self, claims: list[tuple[str, float]]) -> tuple[list[int], tuple[Any, ...]]:
        """The batch's order (sorted by what is stored: two batches lock rows in one order) and its parameters."""
        stored = [stored_signature(signature) for signature, _ in claims]
        order = sorted(range(len(claims)), key=stored.__getitem__)
        return order, ([stored[i] for i in order], [pg.unix_ms(claims[i][1]) for i in order],
                       pg.unix_ms(self._clock()), self._skew_ms, self._margin_ms)

    def _prune_params(self) -> dict[str, Any]:
        return {"now": pg.unix_ms(self._clock())}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(schema={self._schema!r})"


def _answers(order: list[int], row: tuple[Any, ...]) -> list[Any]:
    """Each claim's verdict, in the caller's order: True, False, or the StoreUnavailableError of a lost memory."""
    answers, began = row
    verdicts: list[Any] = [None] * len(order)
    for position, answer in zip(order, answers):
        verdicts[position] = True if answer == 1 else False if answer == 0 else _memory_lost(began)
    return verdicts


def _memory_lost(began: int) -> StoreUnavailableError:
    moment = datetime.fromtimestamp(began / 1000, timezone.utc).isoformat(timespec="seconds")
    store_error(_STORE)
    return StoreUnavailableError(_STORE, f"memory lost: the table remembers only since {moment} (emptied by a crash "
                                         "or a failover: it is UNLOGGED); a request signed before then plus the "
                                         "tolerance and clock skew may have been accepted already: refused, sign it "
                                         "again later")


def _verdict(answer: Any) -> bool:
    if isinstance(answer, StoreUnavailableError):
        raise answer
    return bool(answer)


class PostgresReplayStore(_ReplayTable):
    """:class:`~pasarela.terminal.replay.ReplayStore` on a ``psycopg.Connection`` or ``psycopg_pool.ConnectionPool``.

    Options: ``schema`` (where :func:`~pasarela.postgres.create_schema` put the tables), ``clock_skew`` (seconds
    the nodes' clocks may differ), ``tolerance`` (the verifier's), ``prune_interval`` (seconds between two prunes
    by this store, None: never) and ``prune_batch`` (rows a statement), ``clock``."""

    def __init__(self, connections: pg.SyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = pg.Connections(connections)

    def first_use(self, signature: str, expires_at: float) -> bool:
        order, params = self._params([(signature, expires_at)])
        rows = self._connections.run(self._first_use_sql, params, _STORE)
        verdict = _verdict(_answers(order, rows[0])[0])
        if self._pruning.due():
            self.prune()
        return verdict

    def prune(self) -> int:
        """Delete the expired signatures, ``prune_batch`` at a time; how many were deleted."""
        return self._connections.prune(self._prune_sql, self._prune_params(), self._pruning.batch, _STORE)

    def declare_memory_complete(self) -> None:
        """The table holds every signature this store recorded (the server lost nothing since): judge by it from
        now on, refusing nothing for a lost memory. Wrong after a crash: replays of the last window pass."""
        with pg.failing_closed(_STORE):
            self._connections.execute(self._declare_sql + b" RETURNING 1", None)


MOST_CLAIMS_PER_STATEMENT = 1000
"""The asyncio store's claims in one statement at most (the rest go in the next, at once): a statement's time, and
the rows it locks while it runs, stay bounded however many requests arrive in one turn."""


class AsyncPostgresReplayStore(_ReplayTable):
    """:class:`~pasarela.terminal.replay.AsyncReplayStore` on a ``psycopg.AsyncConnection`` or an
    ``AsyncConnectionPool``.

    The claims made in one turn of the event loop go to the server together, in one statement (one round trip,
    one commit), and while one batch is on its way the next gathers: a server's concurrent requests share round
    trips. Every claim gets its own answer; if the statement fails, each of them fails closed
    (:class:`~pasarela.errors.StoreUnavailableError`). Its prunes run beside the requests, never inside one.
    """

    def __init__(self, connections: pg.AsyncSource, **options: Any) -> None:
        super().__init__(**options)
        self._connections = pg.AsyncConnections(connections)
        self._batches: LoopBatches[tuple[str, float], Any] = LoopBatches(self._send, most=MOST_CLAIMS_PER_STATEMENT)

    async def first_use(self, signature: str, expires_at: float) -> bool:
        return _verdict(await self._batches.submit((signature, expires_at)))

    async def _send(self, claims: list[tuple[str, float]]) -> list[Any]:
        """One statement for the claims of a turn: each claim's verdict, in order (a failure raised to each)."""
        order, params = self._params(claims)
        try:
            rows = await self._connections.run(self._first_use_sql, params, _STORE)
        finally:
            self._pruning.start_if_due(self.prune)
        return _answers(order, rows[0])

    async def prune(self) -> int:
        """As :meth:`PostgresReplayStore.prune`."""
        return await self._connections.prune(self._prune_sql, self._prune_params(), self._pruning.batch, _STORE)

    async def declare_memory_complete(self) -> None:
        """As :meth:`PostgresReplayStore.declare_memory_complete`."""
        with pg.failing_closed(_STORE):
            await self._connections.execute(self._declare_sql + b" RETURNING 1", None)
