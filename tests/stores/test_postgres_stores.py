"""What the PostgreSQL stores do beyond the contract they share with their twins (tests/stores/test_store_contracts.py),
on the real server the tests start: the schema created only when asked (by create_schema, or its shipped SQL
file run by psql), the stores refusing what they cannot use, one statement per check (the asyncio replay store:
one for the claims arriving together), expired rows deleted in batches so the tables stay as large as what is
live, the replay table's memory marker, and the inbox's transaction as the handler sees it."""

# ruff: noqa: S105, S608 (test tokens; the tests' own schema names in SQL)

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from pasarela.errors import ConfigurationError, StoreUnavailableError, ValidationError
from pasarela.postgres import SCHEMA_FILE, create_schema, prune, schema_sql
from pasarela.terminal.replay_postgres import AsyncPostgresReplayStore, PostgresReplayStore
from pasarela.transfers import TransferEvent, TransferWebhookReceiver, body_signature
from pasarela.transfers.inbox_postgres import AsyncPostgresInbox, PostgresInbox
from pasarela.transfers.pending_postgres import PostgresPendingTransfers
from pasarela.transfers.webhook_dedup import Claim, EventKey
from pasarela.transfers.webhook_dedup_postgres import PostgresEventLedger
from support.postgres_server import PostgresServer, binaries

SECRET = "whsec-postgres"
LATE = 4e9


@pytest.fixture
def pool(postgres_server: PostgresServer) -> Iterator[ConnectionPool]:
    with ConnectionPool(postgres_server.conninfo, kwargs={"autocommit": True}, min_size=1, max_size=4,
                        open=False) as opened:
        yield opened


def rows_of(server: PostgresServer, schema: str, table: str) -> int:
    with server.connect() as admin:
        return int(admin.execute(f"SELECT count(*) FROM {schema}.{table}").fetchone()[0])  # type: ignore[index]


def delivery(reference: str, status: str = "PAID") -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id)}, body


# --- the schema --------------------------------------------------------------------------------------------------


def test_create_schema_creates_the_tables_once_and_again_changes_nothing(postgres_server: PostgresServer,
                                                                         pool: ConnectionPool) -> None:
    create_schema(pool, schema="twice")
    store = PostgresReplayStore(pool, schema="twice")
    assert store.first_use("ab" * 64, LATE)
    create_schema(pool, schema="twice")  # an upgrade runs it again: the rows stay, the functions are replaced
    assert not store.first_use("ab" * 64, LATE)
    with postgres_server.connect() as admin:
        tables = {row[0]: row[1] for row in admin.execute(
            "SELECT relname, relpersistence FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE nspname = 'twice' AND relkind = 'r'")}
    # the replay table and its memory marker unlogged (u), the ledger's and the guard's logged (p)
    assert tables == {"replay_signatures": "u", "replay_memory": "u", "webhook_transactions": "p",
                      "pending_transfers": "p"}


def test_the_shipped_sql_file_creates_the_schema_with_psql(postgres_server: PostgresServer) -> None:
    with postgres_server.connect() as admin:
        admin.execute("DROP DATABASE IF EXISTS by_hand")
        admin.execute("CREATE DATABASE by_hand")
    conninfo = postgres_server.conninfo.replace("dbname=postgres", "dbname=by_hand")
    with SCHEMA_FILE.open("rb") as sql:
        ran = subprocess.run([str(binaries() / "psql"), conninfo, "-v", "ON_ERROR_STOP=1", "-q", "-f", "-"],
                             stdin=sql, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    with psycopg.connect(conninfo, autocommit=True) as connection:
        store, guard = PostgresReplayStore(connection), PostgresPendingTransfers(connection)
        assert store.first_use("ab" * 64, LATE) and not store.first_use("ab" * 64, LATE)
        guard.reserve("order-1", "tok-1")
    printed = subprocess.run([sys.executable, "-m", "pasarela.postgres", "--schema", "shop"], check=True,
                             capture_output=True, text=True).stdout
    assert printed == schema_sql("shop") and "CREATE SCHEMA IF NOT EXISTS shop;" in printed
    assert "pasarela." not in printed.split("\n-- --- the terminal")[1]  # every object in the schema asked for


def test_a_store_whose_schema_was_never_created_fails_closed_and_says_how(pool: ConnectionPool) -> None:
    for call in (lambda: PostgresReplayStore(pool, schema="missing").first_use("ab" * 64, LATE),
                 lambda: PostgresEventLedger(pool, schema="missing").claim(EventKey("r", "PAID", final=True), "a"),
                 lambda: PostgresPendingTransfers(pool, schema="missing").reserve("order-1", "tok-1")):
        with pytest.raises(StoreUnavailableError, match="create_schema"):
            call()




def test_settings_and_connections_are_checked(postgres_server: PostgresServer, pool: ConnectionPool) -> None:
    for bad in ("Pasarela", "1x", "a-b", "x" * 64, "", None):
        with pytest.raises(ConfigurationError, match="schema"):
            PostgresReplayStore(pool, schema=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="lease"):
        PostgresEventLedger(pool, ttl=10, lease=20)
    for bad_seconds in (0, -1, float("nan"), True):
        with pytest.raises(ConfigurationError, match="ttl"):
            PostgresPendingTransfers(pool, ttl=bad_seconds)
    with pytest.raises(ConfigurationError, match="prune_interval"):
        PostgresReplayStore(pool, prune_interval=0)
    with pytest.raises(ConfigurationError, match="isolation"):
        PostgresInbox(pool, isolation="chaos")
    with pytest.raises(ConfigurationError, match="asyncio"):
        AsyncPostgresReplayStore(pool)
    with pytest.raises(ConfigurationError, match=r"psycopg\.Connection"):
        PostgresReplayStore(object())
    assert repr(PostgresReplayStore(pool, schema="shop")) == "PostgresReplayStore(schema='shop')"

    async def sync_store_on_an_async_pool() -> None:
        async with AsyncConnectionPool(postgres_server.conninfo, min_size=1, open=False) as async_pool:
            with pytest.raises(ConfigurationError, match="synchronous"):
                PostgresEventLedger(async_pool)

    asyncio.run(sync_store_on_an_async_pool())


def test_a_connection_inside_its_callers_transaction_is_refused(postgres_server: PostgresServer,
                                                                postgres_schema: str) -> None:
    """The store's write would join the caller's transaction (and be rolled back with it)."""
    with postgres_server.connect(autocommit=False) as connection:
        store = PostgresReplayStore(connection, schema=postgres_schema)
        assert store.first_use("ab" * 64, LATE)  # idle: the store's own transaction, committed
        connection.execute("SELECT 1")  # the caller opens a transaction and keeps it open
        with pytest.raises(ConfigurationError, match="inside a transaction"):
            store.first_use("cd" * 64, LATE)
        connection.rollback()
        assert not store.first_use("ab" * 64, LATE)  # the first was committed by the store itself


# --- one statement per check --------------------------------------------------------------------------------------


def test_one_statement_per_check_and_one_for_the_claims_arriving_together(postgres_server: PostgresServer,
                                                                          postgres_schema: str,
                                                                          pool: ConnectionPool) -> None:
    store = PostgresReplayStore(pool, schema=postgres_schema)
    before = postgres_server.statements_sent(f"{postgres_schema}.replay_first_use")
    assert [store.first_use(f"{index % 20:0128x}", LATE) for index in range(40)] == [True] * 20 + [False] * 20
    assert postgres_server.statements_sent(f"{postgres_schema}.replay_first_use") - before == 40

    async def together() -> list[bool]:
        async with AsyncConnectionPool(postgres_server.conninfo, kwargs={"autocommit": True}, min_size=1,
                                       open=False) as async_pool:
            store = AsyncPostgresReplayStore(async_pool, schema=postgres_schema)
            return list(await asyncio.gather(*(store.first_use(f"{index % 150 + 100:0128x}", LATE)
                                               for index in range(300))))

    before = postgres_server.statements_sent(f"{postgres_schema}.replay_first_use")
    verdicts = asyncio.run(together())
    sent = postgres_server.statements_sent(f"{postgres_schema}.replay_first_use") - before
    assert verdicts == [True] * 150 + [False] * 150  # (a signature twice in one batch: the second is the replay)
    assert 1 <= sent <= 3, sent


# --- pruning --------------------------------------------------------------------------------------------------------


def test_expired_signatures_are_deleted_in_batches_and_the_table_stays_bounded(postgres_server: PostgresServer,
                                                                              postgres_schema: str) -> None:
    """30,000 requests at 1,000 a second of a clock the test moves, each remembered 10 s (a 5 s window and 5 s of
    skew), pruned every 2,000 requests, 500 rows a statement: never more than the 10,000 live rows plus the
    2,000 since the last prune, whereas nothing pruned would keep all 30,000."""
    now = [1_800_000_000.0]

    async def run() -> list[int]:
        async with AsyncConnectionPool(postgres_server.conninfo, kwargs={"autocommit": True}, min_size=1,
                                       open=False) as async_pool:
            store = AsyncPostgresReplayStore(async_pool, schema=postgres_schema, clock=lambda: now[0],
                                             prune_interval=None, prune_batch=500)
            deleted, sizes = [], []
            for block in range(15):
                claims = []
                for index in range(2000):
                    now[0] += 0.001
                    claims.append(store.first_use(f"{block * 2000 + index:0128x}", now[0] + 5))
                assert all(await asyncio.gather(*claims))
                deleted.append(await store.prune())
                sizes.append(rows_of(postgres_server, postgres_schema, "replay_signatures"))
            return [sum(deleted), max(sizes), sizes[-1]]

    before = postgres_server.statements_sent(f"DELETE FROM {postgres_schema}.replay_signatures")
    deleted, largest, last = asyncio.run(run())
    batches = postgres_server.statements_sent(f"DELETE FROM {postgres_schema}.replay_signatures") - before
    assert deleted == 30_000 - last and last <= 10_005 and largest <= 12_005  # (+5: the last millisecond kept)
    assert batches >= deleted // 500  # at most 500 rows a statement


def test_a_store_prunes_by_itself_once_its_interval_has_passed(postgres_server: PostgresServer,
                                                               postgres_schema: str, pool: ConnectionPool) -> None:
    store = PostgresReplayStore(pool, schema=postgres_schema, clock_skew=0, prune_interval=0.2)
    for index in range(50):
        assert store.first_use(f"{index:0128x}", time.time())  # windows ending now: expired at once
    assert rows_of(postgres_server, postgres_schema, "replay_signatures") >= 1
    time.sleep(0.3)
    assert store.first_use("ee" * 64, LATE)  # this call prunes, once the answer is known
    assert rows_of(postgres_server, postgres_schema, "replay_signatures") == 1


def test_prune_deletes_what_every_store_has_forgotten(postgres_server: PostgresServer, postgres_schema: str,
                                                      pool: ConnectionPool) -> None:
    ledger = PostgresEventLedger(pool, schema=postgres_schema, ttl=0.05, lease=0.05, prune_interval=None)
    guard = PostgresPendingTransfers(pool, schema=postgres_schema, ttl=0.05, prune_interval=None)
    replay = PostgresReplayStore(pool, schema=postgres_schema, clock_skew=0, prune_interval=None)
    kept = PostgresPendingTransfers(pool, schema=postgres_schema)
    for index in range(30):
        ledger.claim(EventKey(f"ref-{index}", "PAID", final=True), "a")
        guard.reserve(f"order-{index}", f"tok-{index}")
        replay.first_use(f"{index:0128x}", time.time())
    kept.reserve("order-kept", "tok-kept")
    time.sleep(0.1)
    assert prune(pool, schema=postgres_schema, batch=7) == {"replay_signatures": 30, "webhook_transactions": 30,
                                                            "pending_transfers": 30}
    assert kept.pending("order-kept") is not None


# --- the replay table's memory ----------------------------------------------------------------------------------------


def test_an_emptied_replay_table_refuses_what_it_can_no_longer_judge(postgres_server: PostgresServer,
                                                                   postgres_schema: str, pool: ConnectionPool) -> None:
    """Crash recovery empties the unlogged tables (tests/stores/test_postgres_faults.py crashes a server); here they are
    emptied as it empties them, both at once."""
    now = 1_800_000_000.0
    store = PostgresReplayStore(pool, schema=postgres_schema, clock=lambda: now)
    assert store.first_use("ab" * 64, now + 300)
    with postgres_server.connect() as admin:
        admin.execute(f"TRUNCATE {postgres_schema}.replay_signatures, {postgres_schema}.replay_memory")
    with pytest.raises(StoreUnavailableError, match="memory lost") as refused:
        store.first_use("ab" * 64, now + 300)  # accepted before: must not pass again
    assert "ab" * 64 not in str(refused.value)
    with pytest.raises(StoreUnavailableError, match="memory lost"):
        store.first_use("cd" * 64, now + 300)  # signed before the loss: maybe accepted before it
    later = PostgresReplayStore(pool, schema=postgres_schema, clock=lambda: now + 606)
    assert later.first_use("cd" * 64, now + 606 + 300)  # signed after the loss plus tolerance and skew
    store.declare_memory_complete()  # an operator who knows nothing was lost
    assert store.first_use("ef" * 64, now + 300)


# --- the inbox's transaction --------------------------------------------------------------------------------------


def test_the_handler_writes_inside_the_inbox_transaction_and_its_errors_roll_back(
    postgres_server: PostgresServer, postgres_schema: str, pool: ConnectionPool
) -> None:
    with postgres_server.connect() as admin:
        admin.execute(f"CREATE TABLE {postgres_schema}.orders (reference text PRIMARY KEY, paid boolean)")
        admin.execute(f"INSERT INTO {postgres_schema}.orders VALUES ('ref-1', false), ('ref-2', false)")
    seen: list[Any] = []

    def on_event(event: TransferEvent, tx: psycopg.Connection[Any]) -> None:
        seen.append(tx.info.transaction_status)
        tx.execute(f"UPDATE {postgres_schema}.orders SET paid = true WHERE reference = %s",
                   (event.transaction_reference,))
        if event.transaction_reference == "ref-2" and len(seen) == 2:
            raise ValueError("the merchant's bug")

    receiver = TransferWebhookReceiver(on_event, secret=SECRET, inbox=PostgresInbox(pool, schema=postgres_schema))
    assert receiver.handle(*delivery("ref-1")).status == 200
    with pytest.raises(ValueError, match="the merchant's bug") as failed:  # unchanged, not a StoreUnavailableError
        receiver.handle(*delivery("ref-2"))
    assert failed.value.__context__ is None
    with postgres_server.connect() as admin:
        paid = dict(admin.execute(f"SELECT reference, paid FROM {postgres_schema}.orders").fetchall())
    assert paid == {"ref-1": True, "ref-2": False}  # the failed handler's update rolled back with its claim
    assert json.loads(receiver.handle(*delivery("ref-2")).body) == {"status": "received"}
    assert seen == [psycopg.pq.TransactionStatus.INTRANS] * 3

    async def coroutine_handler(event: TransferEvent, tx: Any) -> None:
        pass

    with pytest.raises(TypeError, match="async"):
        TransferWebhookReceiver(coroutine_handler, secret=SECRET,
                                inbox=PostgresInbox(pool, schema=postgres_schema)).handle(*delivery("ref-3"))
    with pytest.raises(ConfigurationError, match="not both"):
        TransferWebhookReceiver(on_event, inbox=PostgresInbox(pool), ledger=PostgresEventLedger(pool))


def test_a_handler_breaking_a_constraint_is_its_own_error_and_nothing_is_recorded(
    postgres_server: PostgresServer, postgres_schema: str
) -> None:
    with postgres_server.connect() as admin:
        admin.execute(f"CREATE TABLE {postgres_schema}.payments (reference text PRIMARY KEY)")
        admin.execute(f"INSERT INTO {postgres_schema}.payments VALUES ('ref-dup')")

    async def on_event(event: TransferEvent, tx: psycopg.AsyncConnection[Any]) -> None:
        await tx.execute(f"INSERT INTO {postgres_schema}.payments VALUES (%s)", (event.transaction_reference,))

    async def run() -> Claim:
        async with AsyncConnectionPool(postgres_server.conninfo, kwargs={"autocommit": True}, min_size=1,
                                       open=False) as async_pool:
            inbox = AsyncPostgresInbox(async_pool, schema=postgres_schema)
            receiver = TransferWebhookReceiver(on_event, secret=SECRET, inbox=inbox)
            with pytest.raises(psycopg.errors.UniqueViolation):
                await receiver.handle_async(*delivery("ref-dup"))
            return await inbox.handle_once(EventKey("ref-dup", "PAID", final=True), lambda tx: None)

    assert asyncio.run(run()) is Claim.CLAIMED  # nothing recorded: the next delivery is handled


# --- what a webhook body may hold ----------------------------------------------------------------------------------
HOSTILE = ["'; DROP TABLE {schema}.webhook_transactions; --", "a\\b'\"c", "%s %(x)s $1 ?", "\ud800", "x\x00y",
           "é" * 300, "\udfff" * 300, ""]
"""SQL's own characters, psycopg's placeholders, a lone surrogate (a JSON escape of the body may carry one), NUL
(which PostgreSQL's text cannot hold), long ones, nothing."""


@pytest.mark.parametrize("text", HOSTILE)
def test_whatever_a_body_holds_is_a_parameter_and_each_event_is_handled_once(postgres_server: PostgresServer,
                                                                           postgres_schema: str, pool: ConnectionPool,
                                                                           text: str) -> None:
    """As the transaction and as the status, through the ledger, the inbox and the receiver on each: each event
    handed over once, then "duplicate"; never a crash, never SQL (the schema's tables all still there)."""
    text = text.replace("{schema}", postgres_schema)
    ledger = PostgresEventLedger(pool, schema=postgres_schema)
    for event in (EventKey(text, "PAID", final=True), EventKey(f"ref-{text}", text, final=False)):
        assert ledger.claim(event, "token-1") is Claim.CLAIMED
        ledger.confirm(event, "token-1")
        assert ledger.claim(event, "token-2") is Claim.HANDLED
    inbox = PostgresInbox(pool, schema=postgres_schema)
    written: list[str] = []
    for event in (EventKey(f"inbox-{text}", "PAID", final=True), EventKey(f"inbox-ref-{text}", text, final=False)):
        def write(tx: Any, status: str = event.status) -> None:
            written.append(status)

        assert inbox.handle_once(event, write) is Claim.CLAIMED
        assert inbox.handle_once(event, write) is Claim.HANDLED
    assert written == ["PAID", text]
    guard = PostgresPendingTransfers(pool, schema=postgres_schema)
    handled: list[TransferEvent] = []
    receivers = [TransferWebhookReceiver(handled.append, secret=SECRET, ledger=ledger, pending=guard),
                 TransferWebhookReceiver(lambda event, tx: handled.append(event), secret=SECRET, inbox=inbox,
                                         pending=guard)]  # a final event releases its order by token and reference
    for number, receiver in enumerate(receivers):
        headers, body = delivery(f"{number}-{text}", text)
        assert [json.loads(receiver.handle(headers, body).body)["status"] for _ in range(2)] == ["received",
                                                                                              "duplicate"]
    assert [(event.transaction_reference, event.status) for event in handled] == [("0-" + text, text or None),
                                                                                   ("1-" + text, text or None)]
    assert rows_of(postgres_server, postgres_schema, "webhook_transactions") == 6


@pytest.mark.parametrize("text", HOSTILE)
def test_the_guard_takes_what_text_holds_and_refuses_the_rest_by_name(postgres_server: PostgresServer,
                                                                     postgres_schema: str, pool: ConnectionPool,
                                                                     text: str) -> None:
    """The application's order ids, tokens and references as parameters; one that PostgreSQL's text cannot hold (a
    NUL, a lone surrogate) refused with a ValidationError naming it, never a crash nor a 503; from a webhook body,
    such a token or reference releases nothing (no reservation can hold it)."""
    text = text.replace("{schema}", postgres_schema)
    guard = PostgresPendingTransfers(pool, schema=postgres_schema)
    storable = "\x00" not in text and not any(0xD800 <= ord(character) <= 0xDFFF for character in text)
    if storable:
        guard.reserve(f"order-{text}", text)
        guard.confirm(f"order-{text}", f"ref-{text}", token=text)
        pending = guard.pending(f"order-{text}")
        assert pending is not None and (pending.token, pending.transaction_reference) == (text, f"ref-{text}")
        assert guard.release_transfer(token=f"other-{text}", transaction_reference=f"ref-{text}") == f"order-{text}"
    else:
        for field, call in (("order_id", lambda: guard.reserve(text, "tok")),
                            ("token", lambda: guard.reserve("o", text)),
                            ("transaction_reference", lambda: guard.confirm("o", text, token="tok")),  # noqa: S106
                            ("order_id", lambda: guard.pending(text)), ("order_id", lambda: guard.release(text))):
            with pytest.raises(ValidationError) as refused:
                call()
            assert refused.value.field == field
        guard.reserve("order-1", "tok-1")
        assert guard.release_transfer(token=text, transaction_reference=text) is None
        assert guard.pending("order-1") is not None
    assert rows_of(postgres_server, postgres_schema, "pending_transfers") == (0 if storable else 1)
