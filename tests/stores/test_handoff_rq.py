"""docs/postgres.md's hand-off recipe, as written there, on the tests' real redis-server, and a real RQ worker
(``rq worker --burst``, a process of its own) running the jobs: tests/support/handoff_jobs.py's, which count their runs
(the recipe's job name replaced by theirs, and its Redis address and queue name by the test's), and the guide's
own ``shop/jobs.py``, which writes through an inbox on the tests' real PostgreSQL.

Duplicate deliveries enqueue one job per event: redeliveries, twins delivered at once to several nodes, and nodes
whose ledger never recorded the event (a node that died between its enqueue and its ledger's record: the
redelivery runs the handler again), before and after the worker ran the job. The worker runs each event's job
once, with the event; a failed job stays failed, not enqueued again; a job run twice for one event (retried,
requeued) commits its effects once. Redis unreachable: 503, and the next delivery is handled."""

# ruff: noqa: S105 (test secrets)

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rq import Queue
from rq.job import validate_job_id
from rq.registry import FailedJobRegistry

from pasarela.errors import StoreUnavailableError
from pasarela.postgres import create_schema
from pasarela.transfers import SeenEvents, TransferEvent, TransferWebhookReceiver, body_signature
from support import postgres_guide as guide
from support.postgres_server import PostgresServer
from support.redis_memory import declare_new
from support.redis_server import RedisServer, free_port

TESTS = Path(__file__).resolve().parents[1]
SECRET = "whsec-handoff"
DOCUMENTED_QUEUE = '"transfer-events"'
DOCUMENTED_JOB = '"shop.jobs.fulfil"'
_queues = itertools.count()


def recipe(redis_url: str, queue_name: str = "transfer-events", job: str = "shop.jobs.fulfil") -> dict[str, Any]:
    """The guide's hand-off block run as a web node's module: its names (``queue``, ``job_id``, ``hand_off``,
    ``receiver``), on ``redis_url``."""
    code = guide.replaced(guide.block("python", guide.HAND_OFF), (guide.QUEUE_REDIS, redis_url),
                          (DOCUMENTED_QUEUE, json.dumps(queue_name)), (DOCUMENTED_JOB, json.dumps(job)))
    namespace: dict[str, Any] = {"__name__": "shop_handoff"}
    with mock.patch.dict("os.environ", {"KUSHKI_WEBHOOK_SECRET": SECRET}):
        exec(compile(code, "docs/postgres.md: the hand-off", "exec"), namespace)  # noqa: S102 (the project's guide)
    return namespace


@pytest.fixture
def references() -> list[str]:
    """Transactions of the test's own: the job ids (the events' keys) are global in Redis, as the ledger's keys."""
    run = uuid.uuid4().hex[:12]
    return [f"ref-{run}-{index:02d}" for index in range(20)]


def delivery(reference: str, status: str = "PAID") -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id)}, body


def node(hand_off: Any) -> TransferWebhookReceiver:
    """A merchant's web node of its own: the recipe's hand-off as its handler, a ledger in memory (it knows only what
    it handled itself, as a node that lost its ledger's record would)."""
    return TransferWebhookReceiver(hand_off, secret=SECRET, ledger=SeenEvents())


@pytest.fixture
def queue_name(redis_server: RedisServer) -> str:
    declare_new(redis_server)  # the recipe's own receiver keeps a Redis ledger (default prefix) on this server
    return f"handoff-{next(_queues)}"


def queue_of(web_node: dict[str, Any]) -> Queue:
    queue: Queue = web_node["queue"]
    return queue


def run_worker(queue: Queue, redis_server: RedisServer, *paths: Path) -> None:
    """A real RQ worker in a process of its own, until the queue is empty (``--burst``), importing the jobs from
    tests/ (tests/support/handoff_jobs.py, and its worker class) and ``paths``."""
    imports = [option for path in (TESTS, *paths) for option in ("--path", str(path))]
    done = subprocess.run([sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", redis_server.url,
                           "--worker-class", "support.handoff_jobs.BurstWorker", *imports, queue.name],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def effects(queue: Queue) -> list[str]:
    return [line.decode() for line in queue.connection.lrange(f"{queue.name}:effects", 0, -1)]


def test_duplicate_deliveries_enqueue_one_job_and_the_worker_runs_it_once(queue_name: str, references: list[str],
                                                                         redis_server: RedisServer) -> None:
    web = recipe(redis_server.url, queue_name, "support.handoff_jobs.record")
    queue = queue_of(web)
    nodes = [web["receiver"], node(web["hand_off"]), node(web["hand_off"])]  # the recipe's, on its Redis ledger
    answers: Counter[str] = Counter()
    lock = threading.Lock()

    def deliver(receiver: TransferWebhookReceiver, reference: str) -> None:
        for _ in range(2):  # delivered, then delivered again (the 200 lost, say)
            reply = receiver.handle(*delivery(reference))
            assert reply.status == 200
            with lock:
                answers[json.loads(reply.body)["status"]] += 1

    # every event to every node at once (twins racing on three nodes), twice each
    threads = [threading.Thread(target=deliver, args=(receiver, reference))
               for reference in references for receiver in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {"received": 60, "duplicate": 60}  # each node's handler ran once per event: 60 enqueues
    assert queue.count == 20  # one job per event
    events = [TransferEvent.from_body(delivery(reference)[1]) for reference in references]
    assert set(queue.job_ids) == {web["job_id"](event) for event in events}

    run_worker(queue, redis_server)
    done = effects(queue)
    assert len(done) == 20 and queue.count == 0
    assert sorted(line.rsplit(" ", 1)[0] for line in done) == [f"TransferEvent {reference}:PAID APPROVED"
                                                              for reference in references]

    # after the jobs ran: nodes that never recorded the events (their ledgers new), on the async path too
    late = node(web["hand_off"])
    for reference in references[:10]:
        assert late.handle(*delivery(reference)).status == 200
    later = node(web["hand_off"])
    for reference in references[10:]:
        assert asyncio.run(later.handle_async(*delivery(reference))).status == 200
    assert queue.count == 0  # the finished jobs are kept: nothing enqueued again
    run_worker(queue, redis_server)
    assert len(effects(queue)) == 20


def test_a_new_event_of_a_handed_off_transaction_is_a_job_of_its_own(queue_name: str, references: list[str],
                                                                     redis_server: RedisServer) -> None:
    web = recipe(redis_server.url, queue_name, "support.handoff_jobs.record")
    receiver = node(web["hand_off"])
    for status in ("initialized", "PAID", "PAID"):
        assert receiver.handle(*delivery(references[0], status)).status == 200
    assert queue_of(web).count == 2
    run_worker(queue_of(web), redis_server)
    assert sorted(line.split(" ")[1] for line in effects(queue_of(web))) == [f"{references[0]}:PAID",
                                                                            f"{references[0]}:initialized"]


def test_a_failed_job_stays_failed_and_a_redelivery_enqueues_nothing(queue_name: str, references: list[str],
                                                                     redis_server: RedisServer) -> None:
    web = recipe(redis_server.url, queue_name, "support.handoff_jobs.fail")
    assert node(web["hand_off"]).handle(*delivery(references[0])).status == 200
    run_worker(queue_of(web), redis_server)
    failed = FailedJobRegistry(queue=queue_of(web))
    assert failed.get_job_ids() == [web["job_id"](TransferEvent.from_body(delivery(references[0])[1]))]
    assert node(web["hand_off"]).handle(*delivery(references[0])).status == 200  # a node that never saw it
    assert queue_of(web).count == 0  # requeued from the failed registry by the operator, never by a redelivery


def test_redis_unreachable_answers_503_and_the_next_delivery_is_handled(queue_name: str, references: list[str],
                                                                        redis_server: RedisServer) -> None:
    gone = recipe(f"redis://127.0.0.1:{free_port()}/0", queue_name, "support.handoff_jobs.record")
    ledger = SeenEvents()
    with pytest.raises(StoreUnavailableError) as refused:  # the ASGI app answers its status, 503
        TransferWebhookReceiver(gone["hand_off"], secret=SECRET, ledger=ledger).handle(*delivery(references[0]))
    assert refused.value.status == 503 and refused.value.store == "job queue (RQ)"
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    web = recipe(redis_server.url, queue_name, "support.handoff_jobs.record")
    back = TransferWebhookReceiver(web["hand_off"], secret=SECRET, ledger=ledger)
    assert json.loads(back.handle(*delivery(references[0])).body)["status"] == "received"  # the claim was released
    assert queue_of(web).count == 1


_ids = recipe("redis://127.0.0.1:9/0")["job_id"]  # (the recipe's job_id, which needs no Redis)


@given(st.text(), st.text(), st.text())
def test_every_event_key_gives_a_job_id_rq_accepts_and_its_own(reference: str, status: str, other: str) -> None:
    """From any body's transactionReference and status, lone surrogates included (a JSON escape may carry one)."""
    def event(transaction: str) -> TransferEvent:
        return TransferEvent.from_body(json.dumps({"transactionReference": transaction, "status": status}).encode())

    validate_job_id(_ids(event(reference)))
    if other != reference and event(other).dedup_key != event(reference).dedup_key:
        assert _ids(event(other)) != _ids(event(reference))


def test_the_guides_job_commits_its_effects_once_however_often_it_runs(postgres_server: PostgresServer,
                                                                       queue_name: str, references: list[str],
                                                                       redis_server: RedisServer,
                                                                       tmp_path: Path) -> None:
    """The guide's ``shop/jobs.py`` (its database replaced) on the guide's tables: each order paid once, with one
    receipt, though each event's job ran twice (enqueued again under another id, as a retry or a requeue runs it
    again) and was delivered twice. (Eight orders: each job's process connects anew, about 0.3 s a job.)"""
    references = references[:8]
    database = guide.fresh_database(postgres_server)
    with psycopg.connect(database, autocommit=True) as shop:
        create_schema(shop)  # at deployment, as the guide says (the job creates nothing)
        shop.execute(guide.block("sql", "CREATE TABLE orders").encode())
        for index, reference in enumerate(references):
            shop.execute("INSERT INTO orders (id, transfer_token, amount) VALUES (%s, %s, 100)",
                         (f"order-{index}", f"tok-{reference}"))
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "jobs.py").write_text(guide.replaced(guide.block("python", guide.JOB),
                                                              (guide.SHOP_DATABASE, database)))
    web = recipe(redis_server.url, queue_name)  # its job as the guide names it: shop.jobs.fulfil
    first, second = node(web["hand_off"]), node(web["hand_off"])
    for reference in references:
        assert first.handle(*delivery(reference)).status == 200
        assert second.handle(*delivery(reference)).status == 200  # a node of its own ledger: the job id holds
    assert queue_of(web).count == len(references)
    for reference in references:  # each event's job once more, under another id
        queue_of(web).enqueue("shop.jobs.fulfil", TransferEvent.from_body(delivery(reference)[1]),
                              job_id=f"again-{reference}")
    run_worker(queue_of(web), redis_server, tmp_path)
    assert FailedJobRegistry(queue=queue_of(web)).get_job_ids() == []
    with psycopg.connect(database) as shop:
        paid = shop.execute("SELECT count(*) FROM orders WHERE status = 'paid' AND paid_at IS NOT NULL").fetchone()
        receipts = shop.execute("SELECT payload ->> 'order' FROM outbox ORDER BY 1").fetchall()
    assert paid == (len(references),)
    assert receipts == sorted((f"order-{index}",) for index in range(len(references)))
