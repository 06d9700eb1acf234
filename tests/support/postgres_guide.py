"""docs/postgres.md's code as its tests run it: each block found by what it holds, with the addresses the guide
writes (a database and a Redis on made-up hosts) replaced by the tests' real servers, and nothing else changed
unless a test says what and why."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from support.doc_blocks import blocks
from support.postgres_server import PostgresServer

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "postgres.md"
SHOP_DATABASE = "postgresql://shop@db.internal/shop"
GATEWAY_DATABASE = "postgresql://gateway@db.internal/shop"
QUEUE_REDIS = "redis://queue.internal:6379/0"
# what marks each Python block: the code that only it holds
STORES = "PostgresPendingTransfers(pool)"
ENDPOINT = "inbox=AsyncPostgresInbox(pool)"
OUTBOX = "async def send_outbox("
HAND_OFF = "except DuplicateJobError:"
JOB = "def fulfil(event: TransferEvent)"
MARKERS = (STORES, ENDPOINT, OUTBOX, HAND_OFF, JOB)
_databases = itertools.count()


def block(language: str, marker: str) -> str:
    """The one block in ``language`` that holds ``marker``."""
    [found] = [text for kind, text in blocks(GUIDE) if kind == language and marker in text]
    return found


def replaced(text: str, *replacements: tuple[str, str]) -> str:
    """``text`` with each ``(old, new)`` replaced, each ``old`` there at least once (a guide that no longer writes
    it would otherwise run against the made-up host)."""
    for old, new in replacements:
        assert old in text, f"docs/postgres.md's block no longer holds {old!r}"
        text = text.replace(old, new)
    return text


def fresh_database(server: PostgresServer) -> str:
    """A database of its own on ``server`` (the guide's code creates its tables in the default schema and in
    public, as a shop's would): its conninfo."""
    name = f"guide_{os.getpid()}_{next(_databases)}"
    with server.connect() as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return server.conninfo.replace("dbname=postgres", f"dbname={name}")
