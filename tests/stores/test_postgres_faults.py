"""The PostgreSQL stores and the inbox under faults of a real server (tests/support/postgres_server.py, one of this
module's own): restarted while a handler holds its transaction (a clean shutdown, and a crash, whose recovery empties
the unlogged replay table), paused with SIGSTOP past the statement timeout, a connection ended by
pg_terminate_backend, a serialization failure, and the handler's process killed with SIGKILL between its write and
its commit.

Every verdict is right (a first use accepted once, a replay refused, an order held by whoever was told so, an event
handed over) or an error (StoreUnavailableError, answered 503), never wrong; nothing is lost (each event is handled
once its deliveries stop failing) and nothing done twice (the merchant's own rows are counted)."""

# ruff: noqa: S105, S608 (test tokens; the tests' own schema names in SQL)

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, TypeVar

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from pasarela.errors import PendingTransferError, StoreUnavailableError
from pasarela.terminal.replay_postgres import PostgresReplayStore
from pasarela.transfers import TransferEvent, TransferWebhookReceiver, body_signature
from pasarela.transfers.inbox_postgres import PostgresInbox
from pasarela.transfers.pending_postgres import PostgresPendingTransfers
from pasarela.transfers.webhook_dedup import Claim, EventKey
from pasarela.transfers.webhook_dedup_postgres import PostgresEventLedger
from support.postgres_server import PostgresServer, fresh_schema
from support.signed_webhooks import answer, delivered_until_received

T = TypeVar("T")
SECRET = "whsec-postgres-faults"
STATEMENT_TIMEOUT = 0.5
LATE = 4e9


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """A server of this module's own: the faults would disturb the other tests' shared one."""
    with PostgresServer() as started:
        yield started


@pytest.fixture
def schema(server: PostgresServer) -> str:
    if not _running(server):  # (a test that failed half-way may have left it stopped)
        server.start()
    name = fresh_schema(server)
    with server.connect() as admin:
        admin.execute(f"CREATE TABLE {name}.merchant_effects (event text NOT NULL, pid integer)")
    return name


def _running(server: PostgresServer) -> bool:
    try:
        return server.pid > 0
    except RuntimeError:
        return False


@pytest.fixture
def pool(server: PostgresServer) -> Iterator[ConnectionPool]:
    """A pool as docs/postgres.md configures one: autocommit, a statement timeout, a short connect timeout."""
    with ConnectionPool(server.conninfo, min_size=2, max_size=6, timeout=5, open=False,
                        kwargs={"autocommit": True,
                                "options": f"-c statement_timeout={int(STATEMENT_TIMEOUT * 1000)}"}) as opened:
        opened.wait()
        yield opened


def delivery(reference: str, status: str = "PAID") -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id)}, body




def until_answered(call: Callable[[], T]) -> tuple[int, T]:
    """``call()`` again while it fails closed (the pool's connections lost with the server are dropped one by one):
    how many times it failed, and its answer."""
    failures, deadline = 0, time.monotonic() + 30
    while True:
        try:
            return failures, call()
        except StoreUnavailableError:
            failures += 1
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def effects(server: PostgresServer, schema: str) -> list[str]:
    with server.connect() as admin:
        return [row[0] for row in admin.execute(f"SELECT event FROM {schema}.merchant_effects ORDER BY event")]


class Handler:
    """The merchant's handler: writes its row through the inbox's transaction, then does ``fault`` on its first
    call (while its transaction is open, its row written)."""

    def __init__(self, schema: str, fault: Callable[[Any], None]) -> None:
        self.calls: list[str] = []
        self._schema = schema
        self._fault = fault

    def __call__(self, event: TransferEvent, tx: psycopg.Connection[Any]) -> None:
        self.calls.append(event.dedup_key)
        tx.execute(f"INSERT INTO {self._schema}.merchant_effects (event) VALUES (%s)", (event.dedup_key,))
        if len(self.calls) == 1:
            self._fault(tx)


# --- restarted ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_the_server_restarted_while_a_handler_holds_its_transaction(mode: str, server: PostgresServer, schema: str,
                                                                    pool: ConnectionPool) -> None:
    guard = PostgresPendingTransfers(pool, schema=schema)
    guard.reserve("order-1", "tok-ref-restart")
    handler = Handler(schema, lambda tx: server.restart(mode))
    receiver = TransferWebhookReceiver(handler, secret=SECRET, pending=guard,
                                       inbox=PostgresInbox(pool, schema=schema))
    headers, body = delivery("ref-restart")
    assert answer(receiver, headers, body) == "unavailable"  # its commit never came: 503, delivered again
    outcomes = delivered_until_received(receiver, headers, body)
    assert outcomes[-1] == "received" and set(outcomes[:-1]) <= {"unavailable"}
    assert handler.calls == ["ref-restart:PAID"] * 2
    assert effects(server, schema) == ["ref-restart:PAID"]  # the first write rolled back with the server's restart
    assert guard.pending("order-1") is None  # the final event released the order, once committed
    assert answer(receiver, headers, body) == "duplicate"


def test_the_replay_store_remembers_a_clean_restart_and_refuses_what_a_crash_forgot(
    server: PostgresServer, schema: str, pool: ConnectionPool
) -> None:
    now = time.time()
    store = PostgresReplayStore(pool, schema=schema)
    guard, ledger = PostgresPendingTransfers(pool, schema=schema), PostgresEventLedger(pool, schema=schema)
    assert store.first_use("ab" * 64, now + 300)
    guard.reserve("order-1", "tok-1")
    event = EventKey("ref-1", "PAID", final=True)
    assert ledger.claim(event, "a") is Claim.CLAIMED
    ledger.confirm(event, "a")

    server.restart("fast")  # a clean shutdown keeps the unlogged table
    assert until_answered(lambda: store.first_use("ab" * 64, now + 300))[1] is False

    server.restart("immediate")  # a crash: recovery empties the unlogged tables, the logged ones keep everything
    with pytest.raises(StoreUnavailableError, match="memory lost"):
        until_answered_unless_lost(lambda: store.first_use("ab" * 64, now + 300))
    with pytest.raises(StoreUnavailableError, match="memory lost"):
        store.first_use("cd" * 64, time.time() + 300)  # signed now: maybe a replay of one accepted before
    with pytest.raises(PendingTransferError):
        until_answered(lambda: guard.reserve("order-1", "tok-2"))  # the reservation survived the crash
    assert until_answered(lambda: ledger.claim(event, "b"))[1] is Claim.HANDLED
    store.declare_memory_complete()  # the operator: nothing was accepted in the last window
    assert store.first_use("cd" * 64, time.time() + 300)


def until_answered_unless_lost(call: Callable[[], T]) -> T:
    """As :func:`until_answered`, but a "memory lost" refusal is the answer itself (raised)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return call()
        except StoreUnavailableError as exc:
            if "memory lost" in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# --- paused ---------------------------------------------------------------------------------------------------------


def test_the_server_paused_past_the_statement_timeout(server: PostgresServer, schema: str,
                                                     pool: ConnectionPool) -> None:
    """SIGSTOP while the handler's statement runs, for more than twice the statement timeout: once the server
    goes on, the timeout cancels that statement (503, all of it rolled back); the calls that waited meanwhile get
    their right answers; the redelivery is handled once."""
    paused = threading.Event()

    def slow_statement_meanwhile(tx: Any) -> None:
        threading.Timer(0.1, paused.set).start()
        tx.execute("SELECT pg_sleep(0.3)")  # under the timeout, but the server stops in the middle

    handler = Handler(schema, slow_statement_meanwhile)
    receiver = TransferWebhookReceiver(handler, secret=SECRET, inbox=PostgresInbox(pool, schema=schema))
    store = PostgresReplayStore(pool, schema=schema)
    guard = PostgresPendingTransfers(pool, schema=schema)
    assert store.first_use("ab" * 64, LATE)
    verdicts: dict[str, Any] = {}

    def during_the_pause(name: str, call: Callable[[], Any]) -> threading.Thread:
        def run() -> None:
            paused.wait(timeout=10)
            try:
                verdicts[name] = call()
            except (StoreUnavailableError, PendingTransferError) as exc:
                verdicts[name] = type(exc).__name__
        thread = threading.Thread(target=run)
        thread.start()
        return thread

    def pause_the_server() -> None:
        paused.wait(timeout=10)
        server.pause()
        time.sleep(2.5 * STATEMENT_TIMEOUT)
        server.resume()

    pausing = threading.Thread(target=pause_the_server)
    pausing.start()
    waiting = [during_the_pause("replay", lambda: store.first_use("ab" * 64, LATE)),
               during_the_pause("first use", lambda: store.first_use("cd" * 64, LATE)),
               during_the_pause("reserve", lambda: guard.reserve("order-1", "tok-1"))]
    headers, body = delivery("ref-paused")
    first = answer(receiver, headers, body)
    pausing.join()
    for thread in waiting:
        thread.join()
    assert first == "unavailable"  # cancelled by the statement timeout once the server went on: rolled back
    assert verdicts["replay"] in (False, "StoreUnavailableError")
    assert verdicts["first use"] in (True, "StoreUnavailableError")
    assert verdicts["reserve"] in (None, "StoreUnavailableError")
    assert delivered_until_received(receiver, headers, body)[-1] == "received"
    assert effects(server, schema) == ["ref-paused:PAID"] and handler.calls == ["ref-paused:PAID"] * 2
    assert not store.first_use("ab" * 64, LATE)
    if verdicts["first use"] is True:
        assert not store.first_use("cd" * 64, LATE)


# --- terminated ------------------------------------------------------------------------------------------------------


def test_a_connection_ended_by_pg_terminate_backend(server: PostgresServer, schema: str, pool: ConnectionPool) -> None:
    def terminate_my_own_backend(tx: Any) -> None:
        with server.connect() as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (tx.info.backend_pid,))
        tx.execute("SELECT 1")  # the connection is gone

    handler = Handler(schema, terminate_my_own_backend)
    receiver = TransferWebhookReceiver(handler, secret=SECRET, inbox=PostgresInbox(pool, schema=schema))
    headers, body = delivery("ref-terminated")
    assert answer(receiver, headers, body) == "unavailable"
    assert delivered_until_received(receiver, headers, body)[-1] == "received"
    assert effects(server, schema) == ["ref-terminated:PAID"]

    store = PostgresReplayStore(pool, schema=schema)
    ledger = PostgresEventLedger(pool, schema=schema)
    pool.wait()  # every connection of the pool idle in it, then all of them ended
    with server.connect() as admin:
        ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                              " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()").fetchone()
    assert ended is not None and ended[0] >= 2
    failures, first = until_answered(lambda: store.first_use("ef" * 64, LATE))
    assert first is True and failures >= 1  # refused while on a dead connection, never called a replay
    assert not store.first_use("ef" * 64, LATE)
    assert until_answered(lambda: ledger.claim(EventKey("ref-x", "PAID", final=True), "a"))[1] is Claim.CLAIMED


# --- a serialization failure -----------------------------------------------------------------------------------------


def test_a_serialization_failure_is_tried_again_with_the_handler(server: PostgresServer, schema: str,
                                                                 pool: ConnectionPool) -> None:
    """Two events whose handlers both read the merchant's ledger lines and then add one (write skew): under
    serializable isolation the server refuses one commit (40001); the inbox runs that delivery again, handler
    included, and both lines are written once, numbered as if one ran after the other."""
    with server.connect() as admin:
        admin.execute(f"CREATE TABLE {schema}.lines (event text NOT NULL, number integer NOT NULL)")
    both_read = threading.Barrier(2, timeout=10)
    calls: list[str] = []

    def on_event(event: TransferEvent, tx: psycopg.Connection[Any]) -> None:
        calls.append(event.dedup_key)
        count = tx.execute(f"SELECT count(*) FROM {schema}.lines").fetchone()[0]  # type: ignore[index]
        if len(calls) <= 2:
            both_read.wait()
        tx.execute(f"INSERT INTO {schema}.lines VALUES (%s, %s)", (event.dedup_key, count + 1))

    receiver = TransferWebhookReceiver(on_event, secret=SECRET,
                                       inbox=PostgresInbox(pool, schema=schema, isolation="serializable"))
    answers: list[str] = []
    threads = [threading.Thread(target=lambda reference=reference: answers.append(
        answer(receiver, *delivery(reference)))) for reference in ("ref-a", "ref-b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == ["received", "received"]
    assert len(calls) == 3  # one of them ran again
    with server.connect() as admin:
        numbers = sorted(row[0] for row in admin.execute(f"SELECT number FROM {schema}.lines"))
    assert numbers == [1, 2]


# --- killed ----------------------------------------------------------------------------------------------------------


def test_the_handler_process_killed_between_its_write_and_its_commit(server: PostgresServer, schema: str,
                                                                     pool: ConnectionPool) -> None:
    headers, body = delivery("ref-killed")
    order = {"conninfo": server.conninfo, "schema": schema, "secret": SECRET, "headers": headers,
             "body": body.decode()}
    tests = Path(__file__).resolve().parents[1]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    with subprocess.Popen([sys.executable, str(tests / "support" / "postgres_handler_process.py")],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment, text=True) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(order) + "\n")
        process.stdin.flush()
        assert process.stdout.readline().strip() == "written"
        with server.connect() as admin:  # written inside its transaction, which holds the event's row
            assert admin.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'"
                                 ).fetchone() == (1,)
        process.send_signal(signal.SIGKILL)  # between its write and its commit
        process.wait(timeout=10)
    calls: list[str] = []

    def on_event(event: TransferEvent, tx: psycopg.Connection[Any]) -> None:
        calls.append(event.dedup_key)
        tx.execute(f"INSERT INTO {schema}.merchant_effects (event) VALUES (%s)", (event.dedup_key,))

    receiver = TransferWebhookReceiver(on_event, secret=SECRET, inbox=PostgresInbox(pool, schema=schema))
    outcomes = delivered_until_received(receiver, headers, body)
    assert outcomes[-1] == "received" and set(outcomes[:-1]) <= {"in progress"}
    assert calls == ["ref-killed:PAID"] and effects(server, schema) == ["ref-killed:PAID"]
    assert answer(receiver, headers, body) == "duplicate"
