"""The three Redis stores under faults short of Redis's death, with the clients docs/multi-node.md recommends
(short ``socket_timeout``, redis-py's retries on): a slow Redis (a long Lua script ahead of ours), a paused
one (``CLIENT PAUSE``), one refusing commands in the middle of a script (BUSY), one restarted empty.

redis-py re-sends a command that timed out although Redis may have run it: every verdict must still be
right (a first use accepted, a replay refused, the order reserved by whoever was told so, a genuine webhook
handed to its handler) or an error (StoreUnavailableError, answered 503), never wrong."""

# ruff: noqa: S105, S106 (test tokens are fixtures)

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Iterator
from contextlib import ExitStack
from typing import Any, Callable, TypeVar

import pytest
import redis

from pasarela._maybe_async import settled as settle
from pasarela.errors import PendingTransferError, StoreUnavailableError, ValidationError
from pasarela.terminal.replay_redis import AsyncRedisReplayStore, RedisReplayStore
from pasarela.transfers import TransferEvent, TransferWebhookReceiver, body_signature
from pasarela.transfers.pending import GuardedInit
from pasarela.transfers.pending_redis import AsyncRedisPendingTransfers, RedisPendingTransfers
from pasarela.transfers.webhook_dedup_redis import AsyncRedisEventLedger, RedisEventLedger
from support.redis_faults import busy, calls, pause, refusing_scripts, retrying_client
from support.redis_memory import declare_new
from support.redis_server import RedisServer
from support.signed_webhooks import answer, delivered_until_received

T = TypeVar("T")
KINDS = ["sync", "async"]
REPLAY = {"sync": RedisReplayStore, "async": AsyncRedisReplayStore}
GUARD = {"sync": RedisPendingTransfers, "async": AsyncRedisPendingTransfers}
LEDGER = {"sync": RedisEventLedger, "async": AsyncRedisEventLedger}
SECRET = "whsec-faults"
LATE = 4e9  # an expiry far ahead: the replay window is still open


@pytest.fixture(autouse=True)
def db(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """The shared Redis emptied, and declared new (see tests/support/redis_memory.py)."""
    with redis_server.client() as client:
        client.flushall()
        declare_new(redis_server)
        yield client


def run_with(kind: str, server: RedisServer, body: Callable[[Any], Awaitable[T]]) -> T:
    """``body(client)`` in an event loop, with a retrying sync or asyncio client already connected (as in a
    running application: the fault meets a command, not the connection's handshake)."""

    async def main() -> T:
        client = retrying_client(server, kind)
        try:
            await settle(client.ping())
            return await body(client)
        finally:
            await settle(client.aclose() if kind == "async" else client.close())

    return asyncio.run(main())


def delivery(reference: str, status: str = "PAID") -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id)}, body


# --- a slow or paused Redis: the retried command had run ------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_replay_store_first_use_stays_first_when_the_set_is_retried(
    kind: str, redis_server: RedisServer, db: redis.Redis
) -> None:
    async def body(client: Any) -> list[bool]:
        store = REPLAY[kind](client)
        with busy(redis_server):
            first = await settle(store.first_use("ab" * 64, LATE))
        return [first, await settle(store.first_use("ab" * 64, LATE))]

    before = calls(redis_server, "evalsha")
    assert run_with(kind, redis_server, body) == [True, False]  # the first use accepted, the replay refused
    assert calls(redis_server, "evalsha") - before >= 3  # the fault made the client send the first check again


@pytest.mark.parametrize("kind", KINDS)
def test_guard_reserve_is_not_refused_by_its_own_first_try(
    kind: str, redis_server: RedisServer, db: redis.Redis
) -> None:
    async def body(client: Any) -> None:
        guard = GUARD[kind](client)
        await settle(guard.reserve("order-0", "tok-0"))  # as in a running application, Redis has the scripts
        with busy(redis_server):
            await settle(guard.reserve("order-1", "tok-1"))
        pending = await settle(guard.pending("order-1"))
        assert pending is not None and pending.token == "tok-1"
        with pytest.raises(PendingTransferError):
            await settle(guard.reserve("order-1", "tok-2"))  # another transfer for the order is still refused

    before = calls(redis_server, "evalsha")
    run_with(kind, redis_server, body)
    assert calls(redis_server, "evalsha") - before >= 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_genuine_webhook_reaches_its_handler_when_the_claim_is_retried(
    kind: str, redis_server: RedisServer, db: redis.Redis
) -> None:
    handled: list[TransferEvent] = []
    headers, body = delivery("ref-slow")

    async def run(client: Any) -> list[int]:
        receiver = TransferWebhookReceiver(handled.append, secret=SECRET, ledger=LEDGER[kind](client))
        with busy(redis_server):
            first = await receiver.handle_async(headers, body)
        again = await receiver.handle_async(headers, body)
        return [first.status, json.loads(first.body)["status"], json.loads(again.body)["status"]]

    assert run_with(kind, redis_server, run) == [200, "received", "duplicate"]
    assert [event.transaction_reference for event in handled] == ["ref-slow"]


def test_a_release_sent_again_never_frees_the_reservation_made_since(redis_server: RedisServer,
                                                                      db: redis.Redis) -> None:
    """An init refused definitely releases its order; redis-py re-sends that release after a timeout, and by
    the time the copy runs another transfer has reserved the order: the copy must leave it reserved."""
    reserved, slow_redis, outcome = threading.Event(), threading.Event(), []
    refused_init = threading.Thread(target=init_refused_by_the_service,
                                    args=(redis_server, reserved, slow_redis, outcome))
    refused_init.start()
    assert reserved.wait(timeout=10)
    other_node = RedisPendingTransfers(db)  # patient: no timeout while Redis is busy
    with busy(redis_server):
        slow_redis.set()  # the init is refused now: its release waits behind the busy script and is sent again
        time.sleep(0.1)
        other_node.reserve("order-1", "tok-2")  # queued after the first release, before its copy
    refused_init.join()
    assert outcome == ["released"]
    pending = RedisPendingTransfers(db).pending("order-1")
    assert pending is not None and pending.token == "tok-2"


def init_refused_by_the_service(server: RedisServer, reserved: threading.Event, slow_redis: threading.Event,
                                outcome: list[str]) -> None:
    with retrying_client(server) as client:
        guard = RedisPendingTransfers(client)
        guard.release("order-0")  # as in a running application, Redis has the scripts
        guard.release_transfer(token="tok-0")
        try:
            with GuardedInit(guard, "order-1", "tok-1"):
                reserved.set()
                slow_redis.wait(timeout=10)
                raise ValidationError("amount", "refused before sending")
        except ValidationError:
            outcome.append("released")


# --- the processing lease: nothing left claimed when Redis fails after the claim ---------------------

LEASE = 0.5  # short, so that the tests see a lease end; the default is a minute
AWAY_FOR = 2.0  # well past the client's tries (4 x 0.3 s), even on a loaded machine: the command fails




@pytest.mark.parametrize("fault", ["paused", "refusing scripts"])
def test_a_handler_failing_while_redis_is_away_leaves_no_claim_behind(
    fault: str, redis_server: RedisServer, db: redis.Redis
) -> None:
    handled: list[str] = []
    headers, body = delivery("ref-fails")
    with retrying_client(redis_server) as client, ExitStack() as faults:

        def on_event(event: TransferEvent) -> None:
            handled.append(event.dedup_key)
            if len(handled) == 1:  # Redis goes away while the handler runs, and the handler fails
                if fault == "paused":
                    pause(redis_server, AWAY_FOR)
                else:
                    faults.enter_context(refusing_scripts(redis_server))
                raise RuntimeError("the handler failed")

        receiver = TransferWebhookReceiver(on_event, secret=SECRET, ledger=RedisEventLedger(client, lease=LEASE))
        with pytest.raises(RuntimeError, match="the handler failed"):  # not a 200: the service delivers it again
            receiver.handle(headers, body)
        faults.close()
        outcomes = delivered_until_received(receiver, headers, body)
    assert outcomes[-1] == "received" and set(outcomes[:-1]) <= {"in progress", "unavailable"}
    assert handled == ["ref-fails:PAID"] * 2


def test_a_claim_whose_answer_was_lost_does_not_hold_the_event(redis_server: RedisServer, db: redis.Redis) -> None:
    handled: list[str] = []
    headers, body = delivery("ref-lost")
    with retrying_client(redis_server) as client:
        receiver = TransferWebhookReceiver(lambda event: handled.append(event.dedup_key), secret=SECRET,
                                           ledger=RedisEventLedger(client, lease=60))  # only the release frees it
        assert answer(receiver, *delivery("ref-earlier")) == "received"  # connected, and Redis has the scripts
        with busy(redis_server, AWAY_FOR):  # every try times out; Redis runs them all once free
            assert answer(receiver, headers, body) == "unavailable"
        assert delivered_until_received(receiver, headers, body) == ["received"]
    assert handled == ["ref-earlier:PAID", "ref-lost:PAID"]


def test_a_final_event_recorded_but_its_order_not_released_is_released_by_the_redelivery(
    redis_server: RedisServer, db: redis.Redis
) -> None:
    headers, body = delivery("ref-order")
    with retrying_client(redis_server) as client:
        guard = RedisPendingTransfers(client)
        guard.reserve("order-1", "tok-ref-order")
        guard.confirm("order-1", "ref-order", token="tok-ref-order")
        handled: list[str] = []

        def on_event(event: TransferEvent) -> None:
            handled.append(event.dedup_key)
            pause(redis_server, AWAY_FOR)  # the guard is away when the order is to be released

        receiver = TransferWebhookReceiver(on_event, secret=SECRET, pending=guard)  # the ledger in memory
        assert delivered_until_received(receiver, headers, body) == ["unavailable", "duplicate"]
        assert guard.pending("order-1") is None
    assert handled == ["ref-order:PAID"]


def test_redis_lost_while_the_handler_runs_then_restarted_empty(caplog: pytest.LogCaptureFixture) -> None:
    """The handler took the event: answered 200 (a 503 would have it handled again once Redis is back), the
    failure to record it logged. Restarted without persistence, the stores refuse what they forgot and can no
    longer judge (tests/stores/test_redis_memory_loss.py: until when)."""
    with RedisServer() as server, retrying_client(server) as client:
        declare_new(server)
        guard, ledger, store = RedisPendingTransfers(client), RedisEventLedger(client), RedisReplayStore(client)
        guard.reserve("order-1", "tok-ref-lost")
        guard.confirm("order-1", "ref-lost", token="tok-ref-lost")
        assert store.first_use("ab" * 64, LATE)
        handled: list[str] = []

        def on_event(event: TransferEvent) -> None:
            handled.append(event.dedup_key)
            if len(handled) == 1:
                server.kill()

        receiver = TransferWebhookReceiver(on_event, secret=SECRET, ledger=ledger, pending=guard)
        headers, body = delivery("ref-lost")
        with caplog.at_level(logging.ERROR, logger="pasarela.webhooks"):
            assert answer(receiver, headers, body) == "received"
        assert "handled but not recorded" in caplog.text and "order stays reserved" in caplog.text
        other_headers, other_body = delivery("ref-other")
        assert answer(receiver, other_headers, other_body) == "unavailable"  # while Redis is away: 503
        with pytest.raises(StoreUnavailableError):
            store.first_use("cd" * 64, LATE)
        with pytest.raises(StoreUnavailableError):
            guard.reserve("order-2", "tok-2")

        server.start()

        assert answer(receiver, other_headers, other_body) == "unavailable"  # sent before: may have been handled
        assert answer(receiver, headers, body) == "unavailable"  # handled, and the record of it lost
        assert handled == ["ref-lost:PAID"]
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            store.first_use("cd" * 64, time.time() + 300)  # a request in its window, maybe accepted before
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            guard.reserve("order-1", "tok-2")  # its transfer may still be Initialized
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            guard.pending("order-1")
