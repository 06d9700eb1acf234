"""The PostgreSQL schema of pasarela's shared stores, created by an explicit call, and their pruning (extra
``pasarela[postgres]``; the stores: :mod:`pasarela.terminal.replay_postgres`,
:mod:`pasarela.transfers.webhook_dedup_postgres`, :mod:`pasarela.transfers.inbox_postgres`,
:mod:`pasarela.transfers.pending_postgres`; the guide: docs/postgres.md).

    from psycopg_pool import ConnectionPool
    from pasarela.postgres import create_schema

    with ConnectionPool("host=db.internal dbname=shop") as pool:
        create_schema(pool)        # once per database, at deployment: nothing creates it at import

The SQL is the package's ``postgres_schema.sql`` (:data:`SCHEMA_FILE`; ``python -m pasarela.postgres`` prints it,
with ``--schema NAME`` for another schema), which a migration tool or ``psql -f`` may run instead. Running it
again is harmless: it creates what is missing and replaces the functions.

:func:`prune` deletes every expired row of the three stores in batches; each store also prunes its own table
by itself, at most once a minute, so an application need not call it (a cron job may, with the stores'
``prune_interval=None``).
"""

from __future__ import annotations

import argparse
import time
from importlib import resources
from typing import Any, Callable

from ._postgres_store import (
    DEFAULT_SCHEMA,
    AsyncConnections,
    AsyncSource,
    Connections,
    SyncSource,
    batch_delete,
    check_schema,
    failing_closed,
    qualified,
    schema_sql,
    unix_ms,
)

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_FILE", "create_schema", "create_schema_async", "prune", "prune_async",
           "schema_sql"]

SCHEMA_FILE = resources.files("pasarela").joinpath("postgres_schema.sql")
"""The schema's SQL as shipped in the package (the schema named ``pasarela``)."""

_STORE = "pasarela schema (PostgreSQL)"
# Two nodes creating the schema at once would race on the catalog: one at a time, in one transaction.
_ONE_AT_A_TIME = b"SELECT pg_advisory_xact_lock(hashtext('pasarela.create_schema'))"
_PRUNES = {
    "replay_signatures": batch_delete("replay_signatures", "expires_at < %(now)s"),
    "webhook_transactions": batch_delete("webhook_transactions", "expires_at <= pasarela.clock_ms()"),
    "pending_transfers": batch_delete("pending_transfers", "expires_at <= pasarela.clock_ms()"),
}


def create_schema(connections: SyncSource, *, schema: str = DEFAULT_SCHEMA) -> None:
    """Create (or bring up to date) the tables and functions of the stores in ``schema``, in one transaction, on
    a ``psycopg.Connection`` or a ``psycopg_pool.ConnectionPool``. Needs the right to create a schema (or to
    create in it, when it exists). Raises :class:`~pasarela.errors.StoreUnavailableError` when the server cannot
    be reached or refuses."""
    text = schema_sql(schema).encode()
    with failing_closed(_STORE), Connections(connections).connection() as connection, connection.transaction():
        connection.execute(_ONE_AT_A_TIME)
        connection.execute(text)


async def create_schema_async(connections: AsyncSource, *, schema: str = DEFAULT_SCHEMA) -> None:
    """As :func:`create_schema`, on a ``psycopg.AsyncConnection`` or an ``AsyncConnectionPool``."""
    text = schema_sql(schema).encode()
    with failing_closed(_STORE):
        async with AsyncConnections(connections).connection() as connection, connection.transaction():
            await connection.execute(_ONE_AT_A_TIME)
            await connection.execute(text)


def _statements(schema: str, clock: Callable[[], float]) -> list[tuple[bytes, dict[str, Any]]]:
    check_schema(schema)
    return [(qualified(statement, schema), {"now": unix_ms(clock())}) for statement in _PRUNES.values()]


def prune(connections: SyncSource, *, schema: str = DEFAULT_SCHEMA, batch: int = 10_000,
          clock: Callable[[], float] = time.time) -> dict[str, int]:
    """Delete the expired rows of the three stores' tables, at most ``batch`` rows a statement (each its own
    transaction, so no lock is held long); how many rows each table lost. ``clock``: the gateway nodes' clock,
    by which the replay store's rows expire."""
    source = Connections(connections)
    return {table: source.prune(statement, params, batch, _STORE)
            for table, (statement, params) in zip(_PRUNES, _statements(schema, clock))}


async def prune_async(connections: AsyncSource, *, schema: str = DEFAULT_SCHEMA, batch: int = 10_000,
                      clock: Callable[[], float] = time.time) -> dict[str, int]:
    """As :func:`prune`, on asyncio connections."""
    source = AsyncConnections(connections)
    return {table: await source.prune(statement, params, batch, _STORE)
            for table, (statement, params) in zip(_PRUNES, _statements(schema, clock))}


def main(argv: list[str] | None = None) -> None:
    """``python -m pasarela.postgres [--schema NAME]``: print the schema's SQL (to pipe into psql or a migration)."""
    parser = argparse.ArgumentParser(prog="python -m pasarela.postgres", description=main.__doc__)
    parser.add_argument("--schema", default=DEFAULT_SCHEMA, help="the schema's name (default: pasarela)")
    options = parser.parse_args(argv)
    print(schema_sql(options.schema), end="")


if __name__ == "__main__":
    main()
