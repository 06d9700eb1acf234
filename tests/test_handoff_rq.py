"""The hand-off recipe on a real queue: a webhook handler that only enqueues (pasarela.transfers.handoff_rq) on the
tests' real redis-server, and a real RQ worker (``rq worker --burst``, a process of its own) running the jobs.

Duplicate deliveries enqueue one job per event: redeliveries, twins delivered at once to several nodes, and nodes
whose ledger never recorded the event (a node that died between its enqueue and its ledger's record: the
redelivery runs the handler again), before and after the worker ran the job. The worker runs each event's job
once, with the event; a failed job stays failed, not enqueued again. Redis unreachable: 503, and the next
delivery is handled."""

# ruff: noqa: S105 (test secrets)

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from rq import Queue
from rq.job import validate_job_id
from rq.registry import FailedJobRegistry

from pasarela.errors import ConfigurationError, StoreUnavailableError
from pasarela.transfers import SeenEvents, TransferWebhookReceiver, body_signature
from pasarela.transfers.handoff_rq import RQHandOff, job_id
from pasarela.transfers.webhook_dedup import EventKey
from redis_server import RedisServer, free_port

TESTS = Path(__file__).resolve().parent
SECRET = "whsec-handoff"
_queues = itertools.count()


def delivery(reference: str, status: str = "PAID") -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id)}, body


def node(hand_off: RQHandOff) -> TransferWebhookReceiver:
    """A merchant's web node: the hand-off as its handler, a ledger of its own (in memory: it knows only what it
    handled itself, as a node that lost its ledger's record would)."""
    return TransferWebhookReceiver(hand_off, secret=SECRET, ledger=SeenEvents())


@pytest.fixture
def queue(redis_server: RedisServer) -> Queue:
    """A queue of the test's own on the tests' Redis."""
    return Queue(f"handoff-{next(_queues)}", connection=redis.Redis.from_url(redis_server.url, socket_timeout=2))


def run_worker(queue: Queue, redis_server: RedisServer) -> None:
    """A real RQ worker in a process of its own, until the queue is empty (``--burst``), importing the jobs from
    tests/handoff_jobs.py."""
    done = subprocess.run([sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", redis_server.url,
                           "--path", str(TESTS), queue.name], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def effects(queue: Queue) -> list[str]:
    return [line.decode() for line in queue.connection.lrange(f"{queue.name}:effects", 0, -1)]


def test_duplicate_deliveries_enqueue_one_job_and_the_worker_runs_it_once(queue: Queue,
                                                                         redis_server: RedisServer) -> None:
    hand_off = RQHandOff(queue, "handoff_jobs.record")
    nodes = [node(hand_off) for _ in range(3)]
    references = [f"ref-{index:02d}" for index in range(20)]
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
    assert set(queue.job_ids) == {job_id(EventKey(reference, "PAID", final=True)) for reference in references}

    run_worker(queue, redis_server)
    done = effects(queue)
    assert len(done) == 20 and queue.count == 0
    assert sorted(line.rsplit(" ", 1)[0] for line in done) == [f"TransferEvent {reference}:PAID APPROVED"
                                                              for reference in references]
    assert len({line.rsplit(" ", 1)[1] for line in done}) >= 1  # run by the worker's processes, not this one

    # after the jobs ran: a node that never recorded the events (its ledger new), on the async path too
    late = node(hand_off)
    for reference in references[:10]:
        assert late.handle(*delivery(reference)).status == 200
    later = node(hand_off)
    for reference in references[10:]:
        assert asyncio.run(later.handle_async(*delivery(reference))).status == 200
    assert queue.count == 0  # the finished jobs are kept: nothing enqueued again
    run_worker(queue, redis_server)
    assert len(effects(queue)) == 20


def test_a_new_event_of_a_handed_off_transaction_is_a_job_of_its_own(queue: Queue,
                                                                     redis_server: RedisServer) -> None:
    receiver = node(RQHandOff(queue, "handoff_jobs.record"))
    for status in ("initialized", "PAID", "PAID"):
        assert receiver.handle(*delivery("ref-7", status)).status == 200
    assert queue.count == 2
    run_worker(queue, redis_server)
    assert sorted(line.split(" ")[1] for line in effects(queue)) == ["ref-7:PAID", "ref-7:initialized"]


def test_a_failed_job_stays_failed_and_a_redelivery_enqueues_nothing(queue: Queue, redis_server: RedisServer) -> None:
    hand_off = RQHandOff(queue, "handoff_jobs.fail")
    assert node(hand_off).handle(*delivery("ref-9")).status == 200
    run_worker(queue, redis_server)
    failed = FailedJobRegistry(queue=queue)
    assert failed.get_job_ids() == [job_id(EventKey("ref-9", "PAID", final=True))]
    assert node(hand_off).handle(*delivery("ref-9")).status == 200  # a node that never saw it
    assert queue.count == 0  # requeued from the failed registry by the operator, never by a redelivery


def test_redis_unreachable_answers_503_and_the_next_delivery_is_handled(queue: Queue) -> None:
    gone = Queue(queue.name, connection=redis.Redis(port=free_port(), socket_connect_timeout=0.5, socket_timeout=0.5))
    ledger = SeenEvents()
    with pytest.raises(StoreUnavailableError) as refused:  # the ASGI app answers its status, 503
        TransferWebhookReceiver(RQHandOff(gone, "handoff_jobs.record"), secret=SECRET, ledger=ledger).handle(
            *delivery("ref-3"))
    assert refused.value.status == 503 and refused.value.store == "job queue (RQ)"
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    back = TransferWebhookReceiver(RQHandOff(queue, "handoff_jobs.record"), secret=SECRET, ledger=ledger)
    assert json.loads(back.handle(*delivery("ref-3")).body)["status"] == "received"  # the claim was released
    assert queue.count == 1


@given(st.text(), st.text(), st.text())
def test_every_event_key_gives_a_job_id_rq_accepts_and_its_own(transaction: str, status: str, other: str) -> None:
    key = EventKey(transaction, status, final=False)
    validate_job_id(job_id(key))
    assert job_id(key) == job_id(EventKey(transaction, status, final=True))  # the key, not the flag
    if other != transaction:
        assert job_id(EventKey(other, status, final=False)) != job_id(key)


def test_the_hand_off_refuses_what_it_cannot_use(queue: Queue) -> None:
    with pytest.raises(ConfigurationError, match="rq.Queue"):
        RQHandOff(queue.connection, "handoff_jobs.record")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="job must be"):
        RQHandOff(queue, "")
    with pytest.raises(ConfigurationError, match="job_id, unique"):
        RQHandOff(queue, "handoff_jobs.record", job_id="mine", unique=False)
    with pytest.raises(ConfigurationError, match="keep"):
        RQHandOff(queue, "handoff_jobs.record", keep=0)
    assert repr(RQHandOff(queue, "handoff_jobs.record")) == f"RQHandOff(queue={queue.name!r})"
