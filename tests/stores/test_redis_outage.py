"""Redis taken away mid-run (SIGKILL): the replay store, the pending-transfer guard and the webhook ledger
fail closed (refuse, never let through) while it is away and, back empty on the same address (no persistence),
for what it forgot: until the operator declares that nothing was lost, or the time a lost claim could matter
has passed (tests/stores/test_redis_memory_loss.py moves that clock)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio
import redis.asyncio.retry
import redis.backoff
import redis.retry

import pasarela
from pasarela.asgi import STORE_UNAVAILABLE_RESPONSE
from pasarela.errors import PendingTransferError, StoreUnavailableError
from pasarela.transfers import body_signature
from pasarela.transfers.pending import GuardedInit
from pasarela.transfers.pending_redis import AsyncRedisPendingTransfers, RedisPendingTransfers
from support.faulty_clients import BUSINESS_CODE, SERIAL
from support.redis_memory import declare_new
from support.redis_server import RedisServer
from support.uvicorn_workers import UvicornWorkers, redis_app_workers

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
WEBHOOK_SECRET = "whsec-outage-test"  # noqa: S105 (a test fixture)


@pytest.fixture
def outage(tmp_path: Path) -> Iterator[tuple[RedisServer, UvicornWorkers, Path]]:
    """A Redis of its own (this test kills it) and the 4-worker app on it."""
    events = tmp_path / "events.log"
    with RedisServer() as server:
        declare_new(server)
        with redis_app_workers(server.url, events, WEBHOOK_SECRET) as workers:
            yield server, workers, events


def webhook(reference: str) -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": "PAID"}).encode()
    webhook_id = str(int(time.time() * 1000))  # the service's id: its clock at send time, in milliseconds
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(WEBHOOK_SECRET, body, webhook_id),
            "Content-Type": "application/json"}, body


def handled(events: Path, reference: str) -> int:
    return sum(line.endswith(f" {reference}:PAID") for line in events.read_text().splitlines())


QUICK: dict[str, Any] = {"socket_timeout": 1.0, "socket_connect_timeout": 1.0}
"""With one immediate retry: redis-py's default backs off for seconds before it gives up (refusing all the same)."""


def reserve_async(port: int, order_id: str, token: str) -> None:
    """GuardedInit's reservation through the asyncio guard, in an event loop of its own."""

    async def reserve() -> None:
        client = redis.asyncio.Redis(port=port, retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 1),
                                     **QUICK)
        try:
            async with GuardedInit(AsyncRedisPendingTransfers(client), order_id, token):
                pass
        finally:
            await client.aclose()

    asyncio.run(reserve())


def test_redis_down_refuses_requests_webhooks_and_transfers_then_recovers(
    outage: tuple[RedisServer, UvicornWorkers, Path]
) -> None:
    server, workers, events = outage
    sync_client = redis.Redis(port=server.port, retry=redis.retry.Retry(redis.backoff.NoBackoff(), 1), **QUICK)
    guard = RedisPendingTransfers(sync_client)
    with sync_client, httpx.Client(base_url=workers.base_url, timeout=30.0) as http:
        before = TERMINAL.seal({"step": "before"})
        assert http.post("/charge", headers=dict(before.headers), content=before.body).status_code == 200
        headers, body = webhook("ref-before")
        assert http.post("/webhook", headers=headers, content=body).json() == {"status": "received"}
        guard.reserve("order-1", "tok-1")

        server.kill()

        during = TERMINAL.seal({"step": "during"})
        for _ in range(8):  # fresh connections reach every worker
            answer = httpx.post(workers.base_url + "/charge", headers=dict(during.headers), content=during.body,
                                timeout=30.0)
            assert (answer.status_code, answer.content) == (503, STORE_UNAVAILABLE_RESPONSE)
        assert http.post("/charge", headers=dict(before.headers), content=before.body).status_code == 503
        headers, body = webhook("ref-during")
        answer = http.post("/webhook", headers=headers, content=body)
        assert (answer.status_code, answer.json()) == (503, {"status": "try again later"})
        assert handled(events, "ref-during") == 0
        with pytest.raises(StoreUnavailableError), GuardedInit(guard, "order-2", "tok-2"):
            pytest.fail("init would have been sent without the guard")
        with pytest.raises(StoreUnavailableError):
            reserve_async(server.port, "order-2", "tok-2")
        with pytest.raises(StoreUnavailableError):
            guard.release_transfer(token="tok-1")  # noqa: S106 (a test token)

        server.start()  # an empty Redis (no persistence in the tests) on the same port

        # What it held is lost: a request signed, a webhook sent, an order reserved before may have been seen.
        assert http.post("/charge", headers=dict(during.headers), content=during.body).status_code == 503
        fresh = TERMINAL.seal({"step": "after"})  # signed inside the tolerance of the memory's beginning
        assert http.post("/charge", headers=dict(fresh.headers), content=fresh.body).status_code == 503
        answer = http.post("/webhook", headers=headers, content=body)
        assert (answer.status_code, answer.json()) == (503, {"status": "try again later"})
        with pytest.raises(StoreUnavailableError, match="memory lost"), GuardedInit(guard, "order-2", "tok-2"):
            pytest.fail("init would have been sent without knowing whether order-2 has a transfer pending")
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            reserve_async(server.port, "order-2", "tok-2")
        assert handled(events, "ref-during") == 0

        declare_new(server)  # the operator: nothing was lost that matters (here: nothing had been accepted)

        assert http.post("/charge", headers=dict(during.headers), content=during.body).status_code == 200
        assert http.post("/charge", headers=dict(during.headers), content=during.body).status_code == 401
        assert http.post("/webhook", headers=headers, content=body).json() == {"status": "received"}
        assert http.post("/webhook", headers=headers, content=body).json() == {"status": "duplicate"}
        assert handled(events, "ref-during") == 1
        guard.reserve("order-2", "tok-2")
        with pytest.raises(PendingTransferError):
            guard.reserve("order-2", "tok-3")
        reserve_async(server.port, "order-3", "tok-3")
        with pytest.raises(PendingTransferError):
            reserve_async(server.port, "order-3", "tok-4")
