"""The guarantees of the Redis stores across processes while Redis is slow, answers BUSY, is paused, and is
slow past the clients' retries (tests/support/redis_faults.py: faults_meanwhile), with short timeouts and redis-py's
retries on: uvicorn with 4 workers (tests/support/redis_app.py) receiving webhooks and terminal requests, and 4
processes racing for each order on the pending-transfer guard.

Each genuine webhook is handled exactly once (the service delivering it again after each 503, as it does),
never answered 200 without being handled; each signature is accepted at most once and a first request is
never refused as a replay; each order is won by at most one racer, and whoever is told it lost does not hold
it. A 503, or StoreUnavailableError, is the only other answer allowed."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import pasarela
from pasarela.transfers import body_signature
from pasarela.transfers.pending_redis import RedisPendingTransfers
from support.faulty_clients import BUSINESS_CODE, SERIAL
from support.redis_faults import RETRIES, SOCKET_TIMEOUT, faults_meanwhile
from support.redis_memory import declare_new
from support.redis_racers import reserve_each_order_under_faults
from support.redis_server import RedisServer
from support.uvicorn_workers import UvicornWorkers, redis_app_workers

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
WEBHOOK_SECRET = "whsec-faults-multiprocess"  # noqa: S105 (a test fixture)
EVENTS = 40
STAGGER = 0.1  # seconds between two new events or requests: together they span a whole cycle of faults
COPIES = 3  # deliveries of each event at once, as a service retrying early and a duplicate would send them


@pytest.fixture(scope="module")
def workers(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UvicornWorkers]:
    events = tmp_path_factory.mktemp("events") / "events.log"
    with redis_app_workers(redis_server.url, events, WEBHOOK_SECRET, PASARELA_TEST_REDIS_TIMEOUT=str(SOCKET_TIMEOUT),
                           PASARELA_TEST_REDIS_RETRIES=str(RETRIES), PASARELA_TEST_LEASE="10") as server:
        server.events = events  # type: ignore[attr-defined]
        yield server


@pytest.fixture(autouse=True)
def new_redis(redis_server: RedisServer) -> None:
    """Another module's test may have flushed the shared Redis: declared new again before each test."""
    declare_new(redis_server)


def post(url: str, headers: dict[str, str], body: bytes) -> tuple[int, str]:
    """One POST on a connection of its own (so the workers share the load); status and x-worker-pid."""
    answer = httpx.post(url, headers=headers, content=body, timeout=30.0)
    return answer.status_code, answer.text


def all_at_once(url: str, requests: list[tuple[dict[str, str], bytes]]) -> list[tuple[int, str]]:
    answers: list[tuple[int, str]] = []
    threads = [threading.Thread(target=lambda request=request: answers.append(post(url, *request)))
               for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def staggered(work: list[threading.Thread]) -> None:
    for thread in work:
        thread.start()
        time.sleep(STAGGER)
    for thread in work:
        thread.join()


def test_each_genuine_webhook_is_handled_exactly_once_while_redis_misbehaves(
    workers: UvicornWorkers, redis_server: RedisServer
) -> None:
    outcomes: dict[str, list[tuple[int, str]]] = {}

    def service_delivering(reference: str) -> None:
        """Deliver the event (COPIES at once) until one delivery is answered 200; a new id on each attempt."""
        body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": "PAID"}).encode()
        answers = outcomes.setdefault(reference, [])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(status == 200 for status, _ in answers):
            webhook_id = str(int(time.time() * 1000))
            signature = body_signature(WEBHOOK_SECRET, body, webhook_id)
            headers = {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": signature}
            answers.extend((status, json.loads(text)["status"])
                           for status, text in all_at_once(workers.base_url + "/webhook", [(headers, body)] * COPIES))
            time.sleep(0.1)

    with faults_meanwhile(redis_server) as applied:
        staggered([threading.Thread(target=service_delivering, args=(f"ref-storm-{index}",))
                   for index in range(EVENTS)])
    assert {"busy", "refusing", "paused"} <= set(applied)

    events: Path = workers.events  # type: ignore[attr-defined]
    handled = Counter(line.split()[1] for line in events.read_text().splitlines() if " ref-storm-" in line)
    assert handled == Counter({f"ref-storm-{index}:PAID": 1 for index in range(EVENTS)})  # none lost, none twice
    answered = Counter(answer for answers in outcomes.values() for answer in answers)
    assert set(answered) <= {(200, "received"), (200, "duplicate"), (503, "in progress"), (503, "try again later")}
    assert all(any(status == 200 for status, _ in answers) for answers in outcomes.values())  # the service is done
    assert len({line.split()[0] for line in events.read_text().splitlines() if " ref-storm-" in line}) >= 2


def test_each_signature_is_accepted_at_most_once_and_never_refused_on_first_use_while_redis_misbehaves(
    workers: UvicornWorkers, redis_server: RedisServer
) -> None:
    first_answers: list[int] = []
    accepted: Counter[int] = Counter()
    refusals_of_the_first_use: list[int] = []

    def terminal_sending(index: int) -> None:
        """A request, then two replays of it at once (an attacker's), once the request was answered."""
        sealed = TERMINAL.seal({"amount": 100, "request": index})
        request = (dict(sealed.headers), sealed.body)
        status, _ = post(workers.base_url + "/charge", *request)
        first_answers.append(status)
        if status == 401:
            refusals_of_the_first_use.append(index)
        replays = all_at_once(workers.base_url + "/charge", [request] * 2)
        accepted[index] = [status, *(replay for replay, _ in replays)].count(200)
        assert {status, *(replay for replay, _ in replays)} <= {200, 401, 503}

    with faults_meanwhile(redis_server) as applied:
        staggered([threading.Thread(target=terminal_sending, args=(index,)) for index in range(EVENTS)])
    assert {"busy", "refusing", "paused"} <= set(applied)
    assert refusals_of_the_first_use == []  # a first use never taken for a replay of itself
    assert len(accepted) == EVENTS and max(accepted.values()) == 1  # never accepted twice
    assert set(first_answers) <= {200, 503} and first_answers.count(200) >= EVENTS // 2


def test_each_order_has_at_most_one_owner_and_every_verdict_is_right_while_redis_misbehaves(
    redis_server: RedisServer,
) -> None:
    context = multiprocessing.get_context("spawn")
    order_ids = [f"order-faults-{index}" for index in range(16)]
    ready, start = context.Barrier(5), context.Barrier(4)
    verdicts = context.Queue()
    racers = [context.Process(target=reserve_each_order_under_faults,
                              args=(redis_server.url, order_ids, ready, start, verdicts, racer)) for racer in range(4)]
    for racer in racers:
        racer.start()
    ready.wait(timeout=60)
    with faults_meanwhile(redis_server) as applied:
        for racer in racers:
            racer.join(timeout=120)
    assert [racer.exitcode for racer in racers] == [0, 0, 0, 0]
    assert {"busy", "refusing", "paused"} <= set(applied)
    told: dict[str, dict[int, str]] = {}
    while not verdicts.empty():
        order_id, racer, verdict = verdicts.get()
        told.setdefault(order_id, {})[racer] = verdict
    assert sorted(told) == sorted(order_ids) and all(len(verdict) == 4 for verdict in told.values())
    with redis_server.client() as client:
        guard = RedisPendingTransfers(client)
        for order_id, verdict in told.items():
            winners = [racer for racer, said in verdict.items() if said == "won"]
            pending = guard.pending(order_id)
            holder = None if pending is None else int(pending.token.split("-")[1])
            assert len(winners) <= 1, (order_id, verdict)
            if winners:
                assert holder == winners[0], (order_id, verdict, holder)
            if holder is not None:  # held by whoever won, or by one told of an error: never by one told it lost
                assert verdict[holder] in ("won", "error"), (order_id, verdict, holder)
