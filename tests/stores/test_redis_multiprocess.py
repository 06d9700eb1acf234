"""Guarantees of the Redis stores across processes: uvicorn with 4 workers running the ASGI middleware and
the webhook receiver (tests/support/redis_app.py), and 4 processes racing on one order id for the pending guard."""

from __future__ import annotations

import http.client
import json
import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

import pasarela
from pasarela.transfers import body_signature
from pasarela.transfers.pending_redis import RedisPendingTransfers
from support.faulty_clients import BUSINESS_CODE, SERIAL
from support.redis_memory import declare_new
from support.redis_racers import reserve_each_order
from support.redis_server import RedisServer
from support.uvicorn_workers import UvicornWorkers, redis_app_workers

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
WEBHOOK_SECRET = "whsec-multiprocess-test"  # noqa: S105 (a test fixture)


@pytest.fixture(scope="module")
def workers(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UvicornWorkers]:
    events = tmp_path_factory.mktemp("events") / "events.log"
    with redis_app_workers(redis_server.url, events, WEBHOOK_SECRET) as server:
        server.events = events  # type: ignore[attr-defined]
        yield server


@pytest.fixture(autouse=True)
def new_redis(redis_server: RedisServer) -> None:
    """Another module's test may have flushed the shared Redis: declared new again before each test."""
    declare_new(redis_server)


@dataclass(frozen=True)
class Answer:
    status: int
    pid: str
    body: bytes


def fire(url: str, requests: list[tuple[dict[str, str], bytes]]) -> list[Answer]:
    """POST every request at once, each on its own connection, from as many threads."""
    target = urlsplit(url)
    answers: list[Answer] = []
    start = threading.Barrier(len(requests))

    def send(headers: dict[str, str], body: bytes) -> None:
        connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
        try:
            connection.connect()
            start.wait(timeout=30)
            connection.request("POST", target.path, body=body, headers=headers)
            reply = connection.getresponse()
            answers.append(Answer(reply.status, reply.getheader("x-worker-pid") or "", reply.read()))
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=request) for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_a_signed_request_is_accepted_once_across_four_workers(workers: UvicornWorkers) -> None:
    pids: set[str] = set()
    for round_ in range(12):
        sealed = TERMINAL.seal({"amount": 100, "round": round_})
        answers = fire(workers.base_url + "/charge", [(dict(sealed.headers), sealed.body)] * 16)
        statuses = Counter(answer.status for answer in answers)
        assert statuses == {200: 1, 401: 15}, statuses
        accepted = next(answer for answer in answers if answer.status == 200)
        assert json.loads(accepted.body) == {"amount": 100, "round": round_}
        pids.update(answer.pid for answer in answers)
    assert len(pids) >= 2  # the refusals came from other processes than the acceptances


def test_one_redis_command_per_verified_request(workers: UvicornWorkers, redis_server: RedisServer) -> None:
    with redis_server.client() as stats, httpx.Client(base_url=workers.base_url, timeout=30.0) as client:
        def data_commands() -> Counter[str]:
            counts = {name: int(row["calls"]) for name, row in stats.info("commandstats").items()}
            return Counter({name: calls for name, calls in counts.items()
                            if name not in ("cmdstat_info", "cmdstat_hello") and not name.startswith("cmdstat_client")})

        before = data_commands()
        for index in range(40):
            sealed = TERMINAL.seal({"index": index})
            assert client.post("/charge", headers=dict(sealed.headers), content=sealed.body).status_code == 200
        replay = TERMINAL.seal({"index": "replayed"})
        assert client.post("/charge", headers=dict(replay.headers), content=replay.body).status_code == 200
        assert client.post("/charge", headers=dict(replay.headers), content=replay.body).status_code == 401
        forged = client.post("/charge", headers=dict(replay.headers), content=b'{"data":"00:00"}')
        assert forged.status_code == 401
        delta = data_commands() - before
    # One round trip (EVALSHA) each for 40 + the replay's two; the forgery never reached Redis. Inside the script
    # (Redis counts those too): MGET of the memory markers, SET NX of the signature's key (the replay's refused), and
    # GET of the key only where the SET found it (the replay, which must be told from this very claim re-sent).
    assert delta == Counter({"cmdstat_evalsha": 42, "cmdstat_mget": 42, "cmdstat_set": 42, "cmdstat_get": 1})


def test_the_same_order_reserved_by_four_processes_has_one_winner(redis_server: RedisServer) -> None:
    context = multiprocessing.get_context("spawn")
    order_ids = [f"order-race-{index}" for index in range(25)]
    start = context.Barrier(4)
    wins = context.Queue()
    racers = [context.Process(target=reserve_each_order, args=(redis_server.url, order_ids, start, wins, racer))
              for racer in range(4)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=120)
    assert [racer.exitcode for racer in racers] == [0, 0, 0, 0]
    winners: dict[str, list[int]] = {}
    while not wins.empty():
        order_id, racer = wins.get()
        winners.setdefault(order_id, []).append(racer)
    assert sorted(winners) == sorted(order_ids)
    assert all(len(won) == 1 for won in winners.values()), winners
    with redis_server.client() as client:
        guard = RedisPendingTransfers(client)
        for order_id, (racer,) in winners.items():
            pending = guard.pending(order_id)
            assert pending is not None and pending.token == f"tok-{racer}-{order_id}"
    assert len(set().union(*winners.values())) >= 2  # more than one process won some race


def test_a_redelivered_webhook_reaches_the_handler_once_across_workers(
    workers: UvicornWorkers, redis_server: RedisServer
) -> None:
    events: Path = workers.events  # type: ignore[attr-defined]
    with redis_server.client() as client:
        guard = RedisPendingTransfers(client)
        guard.reserve("order-hook", "tok-hook")
        guard.confirm("order-hook", "ref-hook", token="tok-hook")  # noqa: S106 (a test token)
        body = json.dumps({"token": "tok-hook", "transactionReference": "ref-hook", "status": "PAID"}).encode()
        webhook_id = str(int(time.time() * 1000))  # the service's id: its clock at send time, in milliseconds
        headers = {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(WEBHOOK_SECRET, body, webhook_id),
                   "Content-Type": "application/json"}
        answers = fire(workers.base_url + "/webhook", [(headers, body)] * 16)
        outcomes = Counter((answer.status, json.loads(answer.body)["status"]) for answer in answers)
        # One handled; the others 503 while it was being handled (the service delivers them again), or duplicates.
        assert outcomes[(200, "received")] == 1, outcomes
        assert set(outcomes) <= {(200, "received"), (503, "in progress"), (200, "duplicate")}, outcomes
        handled = [line for line in events.read_text().splitlines() if line.endswith(" ref-hook:PAID")]
        assert len(handled) == 1
        assert guard.pending("order-hook") is None  # the final event released the order
        again = httpx.post(workers.base_url + "/webhook", headers=headers, content=body, timeout=30.0)
        assert again.json() == {"status": "duplicate"}
        assert len([line for line in events.read_text().splitlines() if line.endswith(" ref-hook:PAID")]) == 1
