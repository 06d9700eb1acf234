"""Every backend of the shared stores behind one interface, for the contract tests
(tests/stores/test_store_contracts.py): in memory (one process), on the real redis-server and on the real PostgreSQL
server the tests start, each of the latter two with its sync and its asyncio stores.

``Backend.run(body)`` runs ``await body(stores)`` in a new event loop, with a client (Redis) or a pool
(PostgreSQL, in autocommit) opened in that loop; ``stores`` makes the replay store, the webhook ledger, the
pending-transfer guard (and, on PostgreSQL, the inbox) on it, each as the backend's docs configure it. A sync
store's calls return their result and an asyncio store's an awaitable: the tests ``await settle(...)`` both.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar, Union

T = TypeVar("T")
BACKENDS = ["memory", "redis-sync", "redis-async", "postgres-sync", "postgres-async"]
NETWORKED = BACKENDS[1:]
"""The backends reached over a network (their twin in memory cannot be unreachable)."""


async def settle(value: Union[T, Awaitable[T]]) -> T:
    return await value if inspect.isawaitable(value) else value


@dataclass
class Backend:
    name: str
    server: Any = None  # RedisServer or PostgresServer
    schema: str = ""

    @property
    def family(self) -> str:
        return self.name.split("-")[0]

    @property
    def is_async(self) -> bool:
        return self.name.endswith("-async")

    def run(self, body: Callable[[Stores], Awaitable[T]]) -> T:
        async def main() -> T:
            async with self._source() as source:
                return await body(Stores(self, source))

        return asyncio.run(main())

    @asynccontextmanager
    async def _source(self, *, port: Optional[int] = None) -> AsyncIterator[Any]:
        """What the stores are given: a Redis client or a PostgreSQL pool, sync or asyncio (None in memory)."""
        if self.family == "redis":
            import redis
            import redis.asyncio

            if self.is_async:
                client = redis.asyncio.Redis(port=port or self.server.port, socket_timeout=2.0,
                                             socket_connect_timeout=1.0)
                try:
                    yield client
                finally:
                    await client.aclose()
            else:
                with redis.Redis(port=port or self.server.port, socket_timeout=2.0, socket_connect_timeout=1.0,
                                 retry=None) as client:
                    yield client
        elif self.family == "postgres":
            from psycopg_pool import AsyncConnectionPool, ConnectionPool

            conninfo = self.server.conninfo if port is None else f"host=127.0.0.1 port={port} connect_timeout=1"
            options: dict[str, Any] = {"kwargs": {"autocommit": True}, "min_size": 1, "max_size": 8,
                                       "timeout": 1.0 if port else 10.0, "open": False}
            if self.is_async:
                async with AsyncConnectionPool(conninfo, **options) as pool:
                    yield pool
            else:
                with ConnectionPool(conninfo, **options) as pool:
                    yield pool
        else:
            yield None

    def run_unreachable(self, body: Callable[[Stores], Awaitable[T]], port: int) -> T:
        """``body`` with stores on a port nothing listens on (the clients give up within about a second)."""

        async def main() -> T:
            if self.family == "postgres":
                from psycopg_pool import AsyncConnectionPool, ConnectionPool

                options: dict[str, Any] = {"min_size": 1, "timeout": 1.0, "open": False, "reconnect_timeout": 1.0}
                conninfo = f"host=127.0.0.1 port={port} connect_timeout=1"
                pool: Any = (AsyncConnectionPool(conninfo, **options) if self.is_async
                             else ConnectionPool(conninfo, **options))
                try:
                    await settle(pool.open(wait=False))
                    return await body(Stores(self, pool))
                finally:
                    await settle(pool.close(timeout=0))
            async with self._source(port=port) as source:
                return await body(Stores(self, source))

        return asyncio.run(main())


@dataclass
class Stores:
    """Each call makes a store as one more node would (in memory, where nothing is shared between nodes, the one
    process's store of that kind, made once)."""

    backend: Backend
    source: Any
    _in_memory: dict[str, Any] = field(default_factory=dict)

    def _options(self, options: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
        kept = {name: value for name, value in options.items() if name not in drop}
        if self.backend.family == "postgres":
            kept["schema"] = self.backend.schema or "pasarela"
        return kept

    def _memory(self, kind: str, make: Callable[[], Any]) -> Any:
        if kind not in self._in_memory:
            self._in_memory[kind] = make()
        return self._in_memory[kind]

    def replay(self, **options: Any) -> Any:
        family, is_async = self.backend.family, self.backend.is_async
        if family == "memory":
            from pasarela.terminal.replay import InMemoryReplayStore

            return self._memory("replay", lambda: InMemoryReplayStore(**self._options(options, drop=("clock_skew",
                                                                                                   "tolerance"))))
        if family == "redis":
            from pasarela.terminal.replay_redis import AsyncRedisReplayStore, RedisReplayStore

            return (AsyncRedisReplayStore if is_async else RedisReplayStore)(self.source, **self._options(options))
        from pasarela.terminal.replay_postgres import AsyncPostgresReplayStore, PostgresReplayStore

        return (AsyncPostgresReplayStore if is_async else PostgresReplayStore)(self.source, **self._options(options))

    def ledger(self, **options: Any) -> Any:
        family, is_async = self.backend.family, self.backend.is_async
        if family == "memory":
            from pasarela.transfers.webhook_dedup import SeenEvents

            return self._memory("ledger", lambda: SeenEvents(**self._options(options)))
        if family == "redis":
            from pasarela.transfers.webhook_dedup_redis import AsyncRedisEventLedger, RedisEventLedger

            return (AsyncRedisEventLedger if is_async else RedisEventLedger)(self.source, **self._options(options))
        from pasarela.transfers.webhook_dedup_postgres import AsyncPostgresEventLedger, PostgresEventLedger

        return (AsyncPostgresEventLedger if is_async else PostgresEventLedger)(self.source, **self._options(options))

    def inbox(self, **options: Any) -> Any:
        from pasarela.transfers.inbox_postgres import AsyncPostgresInbox, PostgresInbox

        assert self.backend.family == "postgres"
        return (AsyncPostgresInbox if self.backend.is_async else PostgresInbox)(self.source, **self._options(options))

    def guard(self, **options: Any) -> Any:
        family, is_async = self.backend.family, self.backend.is_async
        if family == "memory":
            from pasarela.transfers.pending import PendingTransfers

            return self._memory("guard", lambda: PendingTransfers(**self._options(options, drop=("ttl",))))
        if family == "redis":
            from pasarela.transfers.pending_redis import AsyncRedisPendingTransfers, RedisPendingTransfers

            return (AsyncRedisPendingTransfers if is_async else RedisPendingTransfers)(self.source,
                                                                                       **self._options(options))
        from pasarela.transfers.pending_postgres import AsyncPostgresPendingTransfers, PostgresPendingTransfers

        return (AsyncPostgresPendingTransfers if is_async else PostgresPendingTransfers)(self.source,
                                                                                         **self._options(options))
