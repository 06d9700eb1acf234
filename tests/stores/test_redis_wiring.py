"""The Redis stores plugged into what uses them: the transfer clients (sync and asyncio guard) and the
webhook receiver (sync ``handle`` with sync stores, ``handle_async`` with asyncio ones); a sync entry point
given an asyncio store refuses it plainly."""

# ruff: noqa: S106 (test tokens are fixtures)

from __future__ import annotations

import asyncio
import base64
import json
import time
import warnings
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio

from pasarela.errors import PendingTransferError
from pasarela.http import RetryPolicy, ServiceConfig
from pasarela.transfers import (
    AsyncTransferClient,
    TransferClient,
    TransferEvent,
    TransferInitRequest,
    TransferState,
    TransferWebhookReceiver,
    body_signature,
)
from pasarela.transfers.amounts import Amount
from pasarela.transfers.pending_redis import AsyncRedisPendingTransfers, RedisPendingTransfers
from pasarela.transfers.webhook_dedup_redis import AsyncRedisEventLedger, RedisEventLedger
from support.local_server import ScriptedService, scripted_service_fixtures
from support.redis_server import RedisServer

SECRET = "whsec-wiring"  # noqa: S105 (a test fixture)
REFERENCE = "1f0c6a1e-3b1a-4c55-8a22-2f4e0f6d9b10"
COP = Amount.untaxed(10000, currency="COP")
COLOMBIA_INIT = {"qr": "data:image/png;base64," + base64.b64encode(b"png").decode(), "transactionReference": REFERENCE}
scripted_server, service = scripted_service_fixtures()


@pytest.fixture
def db(redis_server: RedisServer) -> Iterator[redis.Redis]:
    with redis_server.client() as client:
        client.flushall()
        yield client


@pytest.fixture
def config(service: ScriptedService) -> ServiceConfig:
    return ServiceConfig(base_url=service.base_url, public_merchant_id="pub-1", private_merchant_id="priv-1",
                         retry=RetryPolicy(jitter=lambda: 0.0))


def delivery(status: str = "PAID") -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))  # the service's id: its clock at send time, in milliseconds
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id)}, body


def test_async_client_with_the_asyncio_redis_guard(
    service: ScriptedService, config: ServiceConfig, redis_server: RedisServer, db: redis.Redis
) -> None:
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "PAID"})
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    service.reply("PATCH", "/transfer/v1/cancel/tok-2", 204)

    async def main() -> None:
        client = redis.asyncio.Redis(port=redis_server.port)
        guard = AsyncRedisPendingTransfers(client)
        try:
            await guard.declare_memory_complete()  # a new Redis, as the operator declares it
            async with AsyncTransferClient(config, pending=guard) as transfers:
                await transfers.init(TransferInitRequest(token="tok-1", amount=COP), order_id="order-1")
                pending = await guard.pending("order-1")
                assert pending is not None and pending.confirmed and pending.transaction_reference == REFERENCE
                with pytest.raises(PendingTransferError):
                    await transfers.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-1")
                assert (await transfers.status("tok-1")).state is TransferState.APPROVED
                assert await guard.pending("order-1") is None
                await transfers.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-1")
                await transfers.cancel("tok-2")
                assert await guard.pending("order-1") is None
        finally:
            await client.aclose()

    asyncio.run(main())
    assert [r.path for r in service.requests].count("/transfer/v1/init") == 2  # the refused one was never sent
    assert db.keys() == [b"pasarela:{pending}:memory"]


def test_sync_client_with_the_sync_redis_guard(
    service: ScriptedService, config: ServiceConfig, db: redis.Redis
) -> None:
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "rejected"})
    guard = RedisPendingTransfers(db)
    guard.declare_memory_complete()
    with TransferClient(config, pending=guard) as transfers:
        transfers.init(TransferInitRequest(token="tok-1", amount=COP), order_id="order-1")
        with pytest.raises(PendingTransferError):
            transfers.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-1")
        transfers.status("tok-1")
    assert guard.pending("order-1") is None and db.keys() == [b"pasarela:{pending}:memory"]


def test_sync_client_refuses_an_asyncio_guard(service: ScriptedService, config: ServiceConfig,
                                              redis_server: RedisServer) -> None:
    guard = AsyncRedisPendingTransfers(redis.asyncio.Redis(port=redis_server.port))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        with TransferClient(config, pending=guard) as transfers, pytest.raises(TypeError, match="asynchronous"):
            transfers.init(TransferInitRequest(token="tok-1", amount=COP), order_id="order-1")  # type: ignore[arg-type]
    assert service.requests == []


def test_receiver_handle_with_sync_redis_stores(db: redis.Redis) -> None:
    guard, ledger = RedisPendingTransfers(db), RedisEventLedger(db)
    guard.declare_memory_complete()
    ledger.declare_memory_complete()
    guard.reserve("order-1", "tok-1")
    guard.confirm("order-1", REFERENCE, token="tok-1")
    seen: list[TransferEvent] = []
    failures = [RuntimeError("the handler failed once")]

    def on_event(event: TransferEvent) -> None:
        if failures:
            raise failures.pop()
        seen.append(event)

    receiver = TransferWebhookReceiver(on_event, secret=SECRET, ledger=ledger, pending=guard)
    headers, body = delivery()
    with pytest.raises(RuntimeError):
        receiver.handle(headers, body)
    assert guard.pending("order-1") is not None  # not handled: not released, and the claim was forgotten
    assert json.loads(receiver.handle(headers, body).body) == {"status": "received"}
    assert json.loads(receiver.handle(headers, body).body) == {"status": "duplicate"}
    assert len(seen) == 1 and guard.pending("order-1") is None


def test_receiver_handle_async_with_asyncio_redis_stores(redis_server: RedisServer, db: redis.Redis) -> None:
    seen: list[str] = []

    async def on_event(event: TransferEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(event.dedup_key)

    async def main() -> list[int]:
        client = redis.asyncio.Redis(port=redis_server.port)
        try:
            guard, ledger = AsyncRedisPendingTransfers(client), AsyncRedisEventLedger(client)
            await guard.declare_memory_complete()
            await ledger.declare_memory_complete()
            await guard.reserve("order-1", "tok-1")
            receiver = TransferWebhookReceiver(on_event, secret=SECRET, ledger=ledger, pending=guard)
            headers, body = delivery("rejected")
            replies = await asyncio.gather(*(receiver.handle_async(headers, body) for _ in range(8)))
            assert await guard.pending("order-1") is None
            retried = await receiver.handle_async(headers, body)  # the service delivers the 503s again
            return [json.loads(reply.body)["status"] for reply in [*replies, retried]]
        finally:
            await client.aclose()

    outcomes = asyncio.run(main())
    # One delivery handled; the others, while it ran, told to come again (503), or duplicates once it was done.
    assert outcomes.count("received") == 1 and set(outcomes) <= {"received", "in progress", "duplicate"}
    assert outcomes[-1] == "duplicate"
    assert seen == [f"{REFERENCE}:rejected"]


def test_receiver_handle_refuses_an_asyncio_ledger(redis_server: RedisServer) -> None:
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET,
                                       ledger=AsyncRedisEventLedger(redis.asyncio.Redis(port=redis_server.port)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match="asynchronous"):
            receiver.handle(*delivery())
