"""What the PostgreSQL stores share: importing psycopg 3 with a clear message, the schema's SQL (for a schema
name of the caller's), the connections the caller gives (a psycopg connection or a psycopg_pool pool, sync or
asyncio; never one of our own, never a global one), failing closed on psycopg's errors, retrying what the
server rolled back by itself (serialization failures, deadlocks), and pruning expired rows in batches.

Imported only by the ``*_postgres`` modules and :mod:`pasarela.postgres`, so ``import pasarela`` never
imports psycopg.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from importlib import resources
from typing import Any, Callable, Optional, TypeVar, Union

from . import _telemetry
from .errors import ConfigurationError, StoreUnavailableError

try:
    import psycopg
    import psycopg.errors
    from psycopg import pq
except ImportError as exc:  # pragma: no cover - the tests install psycopg
    raise ImportError('pasarela\'s PostgreSQL stores need psycopg 3: pip install "pasarela[postgres]" (and '
                      '"psycopg[binary]", or the system\'s libpq: see docs/postgres.md)') from exc

__all__ = ["DEFAULT_SCHEMA", "AsyncConnections", "AsyncSource", "Connections", "Pruning", "SyncSource",
           "batch_delete", "check_schema", "failing_closed", "psycopg", "qualified",
           "retrying", "retrying_async", "rolled_back", "schema_sql", "seconds", "text_holds", "unix_ms"]

DEFAULT_SCHEMA = "pasarela"
RETRIES = 3
"""Tries of a statement the server rolled back by itself (40001 serialization failure, 40P01 deadlock)."""
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_ROLLED_BACK = (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected)

SyncSource = Union["psycopg.Connection[Any]", Any]
"""A ``psycopg.Connection`` or a pool with a ``connection()`` context manager (``psycopg_pool.ConnectionPool``)."""
AsyncSource = Union["psycopg.AsyncConnection[Any]", Any]
"""A ``psycopg.AsyncConnection`` or an asyncio pool (``psycopg_pool.AsyncConnectionPool``)."""
T = TypeVar("T")


def check_schema(schema: str) -> str:
    """The schema's name, checked: a plain lower-case SQL identifier (so it never needs quoting)."""
    if not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema):
        raise ConfigurationError("schema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 "
                                 "characters)")
    return schema


def qualified(template: str, schema: str) -> bytes:
    """A statement of the stores, with their schema's name where the template writes ``pasarela.``."""
    return re.sub(r"\bpasarela\.", check_schema(schema) + ".", template).encode()


def schema_sql(schema: str = DEFAULT_SCHEMA) -> str:
    """The text of ``postgres_schema.sql`` for ``schema``."""
    text = resources.files("pasarela").joinpath("postgres_schema.sql").read_text(encoding="utf-8")
    name = check_schema(schema)
    return re.sub(r"\bpasarela\.", name + ".", text).replace("SCHEMA IF NOT EXISTS pasarela;",
                                                             f"SCHEMA IF NOT EXISTS {name};")


def text_holds(value: str) -> bool:
    """Whether PostgreSQL's text can hold ``value``: no NUL, and no lone surrogate (UTF-8 cannot encode one; a JSON
    escape of a webhook body may carry one)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def unix_ms(moment: float) -> int:
    """A time or a duration for the statements: whole milliseconds (rounded down)."""
    return math.floor(moment * 1000)


def seconds(value: float, what: str, *, zero_ok: bool = False) -> float:
    """A configured duration, checked: finite, positive (or zero when ``zero_ok``). (The Redis stores check theirs
    the same way in pasarela._redis_store, which imports redis: not importable here.)"""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not zero_ok):
        raise ConfigurationError(f"{what} must be a {'non-negative' if zero_ok else 'positive'} number of seconds")
    return float(value)


@contextmanager
def failing_closed(store: str) -> Iterator[None]:
    """Turn any failure to reach or use PostgreSQL into StoreUnavailableError: the caller refuses, never lets
    through. The schema missing says how to create it. ``from None``: nothing of the connection (its
    parameters, the statement) is chained into logs beyond the class and the server's message."""
    try:
        yield
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedFunction, psycopg.errors.InvalidSchemaName):
        _telemetry.store_error(store)
        raise StoreUnavailableError(store, "its tables are missing: create them once with "
                                           "pasarela.postgres.create_schema() (or its SQL file)") from None
    except (psycopg.Error, OSError, asyncio.TimeoutError) as exc:
        _telemetry.store_error(store)
        raise StoreUnavailableError(store, _described(exc)) from None


def _described(exc: BaseException) -> str:
    """The class, the SQLSTATE and the first line of the message (the server's primary message when it sent one)."""
    primary = getattr(getattr(exc, "diag", None), "message_primary", None)
    sqlstate = getattr(exc, "sqlstate", None)
    lines = str(exc).splitlines()
    message = primary or (lines[0] if lines else "")
    return f"{type(exc).__name__}{f' ({sqlstate})' if sqlstate else ''}: {message}"


def rolled_back(exc: BaseException) -> bool:
    """The server rolled the transaction back by itself: trying it again is safe."""
    return isinstance(exc, _ROLLED_BACK)


def retrying(step: Callable[[], T], attempts: int = RETRIES) -> T:
    """``step()``, again while the server rolls it back as a serialization failure or a deadlock."""
    for attempt in range(attempts):
        try:
            return step()
        except _ROLLED_BACK:
            if attempt == attempts - 1:
                raise
            time.sleep(0.005 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


async def retrying_async(step: Callable[[], Awaitable[T]], attempts: int = RETRIES) -> T:
    for attempt in range(attempts):
        try:
            return await step()
        except _ROLLED_BACK:
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.005 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _idle(connection: Any) -> None:
    """A connection given to a store must not be inside a transaction of its caller's: the store's writes would
    join it (and be rolled back with it)."""
    if connection.info.transaction_status != pq.TransactionStatus.IDLE and not connection.broken:
        raise ConfigurationError("the PostgreSQL store's connection is inside a transaction: give the store a "
                                 "connection or a pool of its own (autocommit=True is fastest)")


class _Lender:
    """What both kinds of connections share: their repr, the source's class alone (never its parameters)."""

    _source: Any

    def __repr__(self) -> str:
        return f"<{type(self._source).__name__}>"


class Connections(_Lender):
    """The sync connections a store was given: a ``psycopg.Connection`` (used one statement or transaction at a
    time, behind a lock) or a pool whose ``connection()`` lends one (``psycopg_pool.ConnectionPool``)."""

    def __init__(self, source: SyncSource) -> None:
        if isinstance(source, psycopg.AsyncConnection) or _is_async_pool(source):
            raise ConfigurationError("this store is synchronous: give it a psycopg.Connection or a ConnectionPool "
                                     "(its Async* twin takes asyncio connections and pools)")
        if not isinstance(source, psycopg.Connection) and not callable(getattr(source, "connection", None)):
            raise ConfigurationError("a PostgreSQL store takes a psycopg.Connection or a psycopg_pool.ConnectionPool")
        self._source: Any = source
        self._lock = threading.Lock() if isinstance(source, psycopg.Connection) else None

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one unit of work, idle (outside any transaction) when lent."""
        if self._lock is None:
            with self._source.connection() as connection:
                _idle(connection)
                yield connection
            return
        with self._lock:
            _idle(self._source)
            yield self._source

    def execute(self, query: bytes, params: Any) -> list[tuple[Any, ...]]:
        """One statement, committed: its rows (autocommit connections send it alone: one round trip)."""
        with self.connection() as connection:
            if connection.autocommit:
                return connection.execute(query, params).fetchall()
            with connection.transaction():
                return connection.execute(query, params).fetchall()

    def run(self, query: bytes, params: Any, store: str) -> list[tuple[Any, ...]]:
        """A store's statement: :meth:`execute`, again while the server rolls it back by itself, failing closed."""
        with failing_closed(store):
            return retrying(lambda: self.execute(query, params))

    def prune(self, statement: bytes, params: dict[str, Any], batch: int, store: str) -> int:
        """Run a batch-deleting ``statement`` until a batch comes back short; the rows deleted."""
        deleted = 0
        with failing_closed(store):
            while True:
                rows = self.execute(statement, {**params, "batch": batch})
                count = int(rows[0][0]) if rows else 0
                deleted += count
                if count < batch:
                    return deleted


class AsyncConnections(_Lender):
    """:class:`Connections` for asyncio: a ``psycopg.AsyncConnection`` or an ``AsyncConnectionPool``."""

    def __init__(self, source: AsyncSource) -> None:
        if isinstance(source, psycopg.Connection) or (not isinstance(source, psycopg.AsyncConnection)
                                                      and not _is_async_pool(source)):
            raise ConfigurationError("this store is for asyncio: give it a psycopg.AsyncConnection or a "
                                     "psycopg_pool.AsyncConnectionPool (its sync twin takes the others)")
        self._source: Any = source
        self._lock = asyncio.Lock() if isinstance(source, psycopg.AsyncConnection) else None

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if self._lock is None:
            async with self._source.connection() as connection:
                _idle(connection)
                yield connection
            return
        async with self._lock:
            _idle(self._source)
            yield self._source

    async def execute(self, query: bytes, params: Any) -> list[tuple[Any, ...]]:
        async with self.connection() as connection:
            if connection.autocommit:
                return await (await connection.execute(query, params)).fetchall()
            async with connection.transaction():
                return await (await connection.execute(query, params)).fetchall()

    async def run(self, query: bytes, params: Any, store: str) -> list[tuple[Any, ...]]:
        with failing_closed(store):
            return await retrying_async(lambda: self.execute(query, params))

    async def prune(self, statement: bytes, params: dict[str, Any], batch: int, store: str) -> int:
        deleted = 0
        with failing_closed(store):
            while True:
                rows = await self.execute(statement, {**params, "batch": batch})
                count = int(rows[0][0]) if rows else 0
                deleted += count
                if count < batch:
                    return deleted


def _is_async_pool(source: Any) -> bool:
    """An asyncio pool: its ``connection()`` is an async context manager (psycopg_pool.AsyncConnectionPool)."""
    try:
        from psycopg_pool import AsyncConnectionPool
    except ImportError:  # pragma: no cover - psycopg-pool comes with the extra
        return False
    return isinstance(source, AsyncConnectionPool)


class Pruning:
    """When a store deletes its expired rows by itself: at most once per ``interval`` seconds (None: never, the
    operator runs :func:`pasarela.postgres.prune`), at most ``batch`` rows a statement."""

    def __init__(self, interval: Union[float, None], batch: int, clock: Callable[[], float] = time.monotonic) -> None:
        if interval is not None and (isinstance(interval, bool) or not isinstance(interval, (int, float))
                                     or not 0 < interval < float("inf")):
            raise ConfigurationError("prune_interval must be a positive number of seconds, or None")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ConfigurationError("prune_batch must be a positive int")
        self.batch = batch
        self._interval = interval
        self._clock = clock
        self._next = clock() + (interval or 0.0)
        self._lock = threading.Lock()
        self._task: Optional[asyncio.Task[int]] = None  # an asyncio store's prune under way (the loop holds it weakly)

    def due(self) -> bool:
        """True once per interval (to the first caller asking after it has passed)."""
        if self._interval is None:
            return False
        now = self._clock()
        with self._lock:
            if now < self._next:
                return False
            self._next = now + self._interval
            return True

    def start_if_due(self, prune: Callable[[], Coroutine[Any, Any, int]]) -> None:
        """For an asyncio store: when due and none is under way, ``prune()`` beside the caller's work, never inside
        it (a failure, counted by failing_closed, is dropped: the next interval's prune tries again)."""
        if self._task is None and self.due():
            self._task = asyncio.ensure_future(prune())
            self._task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[int]) -> None:
        self._task = None
        if not task.cancelled():
            task.exception()


def batch_delete(table: str, condition: str) -> str:
    """A statement deleting at most %(batch)s rows of ``table`` matching ``condition``, skipping rows another
    pruner holds; it answers how many it deleted."""
    return (f"WITH gone AS (DELETE FROM pasarela.{table} WHERE ctid = ANY (ARRAY("  # noqa: S608 (our own table)
            f"SELECT ctid FROM pasarela.{table} WHERE {condition} LIMIT %(batch)s FOR UPDATE SKIP LOCKED))"
            f" RETURNING 1) SELECT count(*) FROM gone")
