"""A Redis that loses its memory (killed and restarted without persistence, or FLUSHALL) never makes a store
give a wrong verdict: what was claimed before the loss and cannot be judged any more is refused with
StoreUnavailableError ("memory lost", HTTP 503), and normal verdicts resume once the time a lost claim could
matter has passed (the stores' injectable clock moves it; nothing sleeps).

Each store meets a Redis whose memory is declared complete (as an operator does for a new Redis), claims,
loses the memory, then sees the replay, the second reservation of a pending order or the redelivery of a
handled event: an error each time, never the verdict the empty Redis would give."""

# ruff: noqa: S105, S106 (test tokens are fixtures)

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator
from typing import Any, Callable, TypeVar

import httpx
import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
import redis.backoff
import redis.cluster
import redis.retry

from pasarela._maybe_async import settled as settle
from pasarela.errors import ConfigurationError, PendingTransferError, StoreUnavailableError
from pasarela.terminal.replay import InMemoryReplayStore, Verifier
from pasarela.terminal.replay_redis import AsyncRedisReplayStore, RedisReplayStore
from pasarela.transfers import TransferWebhookReceiver, body_signature
from pasarela.transfers.pending import PendingTransfers
from pasarela.transfers.pending_redis import AsyncRedisPendingTransfers, RedisPendingTransfers
from pasarela.transfers.webhook_dedup import EventKey
from pasarela.transfers.webhook_dedup_redis import AsyncRedisEventLedger, RedisEventLedger
from support.clocks import ManualClock
from support.faulty_clients import NOON
from support.redis_server import RedisServer

T = TypeVar("T")
KINDS = ["sync", "async"]
LOSSES = ["restart", "flushall"]
REPLAY = {"sync": RedisReplayStore, "async": AsyncRedisReplayStore}
GUARD = {"sync": RedisPendingTransfers, "async": AsyncRedisPendingTransfers}
LEDGER = {"sync": RedisEventLedger, "async": AsyncRedisEventLedger}
SECRET = "whsec-memory-loss"
SIGNATURE = "ab" * 64


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    """A Redis of this module's own: its tests kill it."""
    with RedisServer() as started:
        yield started


def lose_memory(server: RedisServer, how: str) -> None:
    if how == "restart":
        server.kill()
        server.start()  # empty: no persistence
    else:
        with server.client() as client:
            client.flushall()


def run_with(kind: str, server: RedisServer, body: Callable[[Any], Awaitable[T]]) -> T:
    """``body(client)`` in an event loop on a flushed Redis, with a client that reconnects after a restart."""

    async def main() -> T:
        with server.client() as admin:
            admin.flushall()
        if kind == "sync":
            with redis.Redis(port=server.port, socket_timeout=2.0,
                             retry=redis.retry.Retry(redis.backoff.NoBackoff(), 2)) as client:
                return await body(client)
        client = redis.asyncio.Redis(port=server.port, socket_timeout=2.0,
                                     retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 2))
        try:
            return await body(client)
        finally:
            await client.aclose()

    return asyncio.run(main())


# --- replay store ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", LOSSES)
@pytest.mark.parametrize("kind", KINDS)
def test_replay_store_after_memory_loss_refuses_what_it_may_have_seen_then_judges_again(
    kind: str, how: str, server: RedisServer
) -> None:
    async def body(client: Any) -> None:
        clock = ManualClock(NOON)
        store = REPLAY[kind](client, clock=clock)  # tolerance 300, clock_skew 5
        await settle(store.declare_memory_complete())
        assert await settle(store.first_use(SIGNATURE, NOON + 300)) is True
        lose_memory(server, how)
        clock.now = NOON + 1
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            await settle(store.first_use(SIGNATURE, NOON + 300))  # the replay: the empty Redis would accept it
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            await settle(store.first_use(SIGNATURE, NOON + 300))  # and again: still an error, never accepted
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            await settle(store.first_use("cd" * 64, NOON + 301))  # new, but signed when a lost one may have been
        # Signed more than tolerance + clock_skew after the memory began (NOON + 1): never seen before it.
        clock.now = NOON + 307
        assert await settle(store.first_use("ef" * 64, NOON + 607)) is True
        assert await settle(store.first_use("ef" * 64, NOON + 607)) is False

    run_with(kind, server, body)


def test_replay_store_on_a_redis_never_declared_refuses_until_the_window_has_passed(server: RedisServer) -> None:
    with server.client() as client:
        client.flushall()
        clock = ManualClock(NOON)
        store = RedisReplayStore(client, tolerance=60, clock_skew=0, clock=clock)
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            store.first_use(SIGNATURE, NOON + 60)  # Redis may have lost what it held before now
        clock.now = NOON + 61
        assert store.first_use(SIGNATURE, NOON + 121) is True  # its window began after the memory did


def test_verifier_refuses_a_replay_store_reaching_back_less_than_its_tolerance(server: RedisServer) -> None:
    with server.client() as client:
        with pytest.raises(ConfigurationError, match="tolerance"):
            Verifier(object(), replay_store=RedisReplayStore(client, tolerance=60), tolerance=300)  # type: ignore[arg-type]
        Verifier(object(), replay_store=RedisReplayStore(client, tolerance=300), tolerance=300)  # type: ignore[arg-type]
        Verifier(object(), replay_store=InMemoryReplayStore(), tolerance=300)  # type: ignore[arg-type]


# --- pending-transfer guard -----------------------------------------------------------------------


@pytest.mark.parametrize("how", LOSSES)
@pytest.mark.parametrize("kind", KINDS)
def test_guard_after_memory_loss_refuses_to_start_a_transfer_until_its_ttl_has_passed(
    kind: str, how: str, server: RedisServer
) -> None:
    async def body(client: Any) -> None:
        clock = ManualClock(NOON)
        guard = GUARD[kind](client, ttl=600, clock=clock)  # clock_skew 5
        await settle(guard.declare_memory_complete())
        await settle(guard.reserve("order-1", "tok-1"))
        await settle(guard.confirm("order-1", "ref-1", token="tok-1"))  # Initialized: no second transfer
        lose_memory(server, how)
        clock.now = NOON + 1
        for order_id, token in [("order-1", "tok-2"), ("order-1", "tok-2"), ("order-2", "tok-3")]:
            with pytest.raises(StoreUnavailableError, match="memory lost"):
                await settle(guard.reserve(order_id, token))  # the empty Redis would let it start
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            await settle(guard.pending("order-1"))
        clock.now = NOON + 1 + 600 + 4
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            await settle(guard.reserve("order-1", "tok-2"))
        clock.now = NOON + 1 + 600 + 5  # every lost reservation has expired by now
        assert await settle(guard.pending("order-1")) is None
        await settle(guard.reserve("order-1", "tok-2"))
        with pytest.raises(PendingTransferError):
            await settle(guard.reserve("order-1", "tok-4"))

    run_with(kind, server, body)


@pytest.mark.parametrize("kind", KINDS)
def test_guard_after_memory_loss_judges_at_once_when_the_operator_declares_nothing_was_lost(
    kind: str, server: RedisServer
) -> None:
    async def body(client: Any) -> None:
        guard = GUARD[kind](client, clock=ManualClock(NOON))
        await settle(guard.declare_memory_complete())
        await settle(guard.reserve("order-1", "tok-1"))
        lose_memory(server, "flushall")
        with pytest.raises(StoreUnavailableError, match="memory lost"):
            await settle(guard.reserve("order-2", "tok-2"))
        await settle(guard.declare_memory_complete())  # e.g. every Initialized transfer checked and reserved again
        await settle(guard.reserve("order-2", "tok-2"))
        with pytest.raises(PendingTransferError):
            await settle(guard.reserve("order-2", "tok-3"))

    run_with(kind, server, body)


@pytest.mark.parametrize("guard_kind", ["sqlite", "sync", "async"])
def test_guard_confirm_sent_late_leaves_a_newer_reservation_unconfirmed(guard_kind: str, server: RedisServer) -> None:
    async def body(client: Any) -> None:
        guard: Any = PendingTransfers() if guard_kind == "sqlite" else GUARD[guard_kind](client)
        if guard_kind != "sqlite":
            await settle(guard.declare_memory_complete())
        await settle(guard.reserve("order-1", "tok-old"))
        await settle(guard.release("order-1"))  # e.g. the old transfer's final status came first
        await settle(guard.reserve("order-1", "tok-new"))
        await settle(guard.confirm("order-1", "ref-old", token="tok-old"))  # the old init's answer, late
        pending = await settle(guard.pending("order-1"))
        assert (pending.token, pending.confirmed, pending.transaction_reference) == ("tok-new", False, None)
        await settle(guard.confirm("order-1", "ref-new", token="tok-new"))
        pending = await settle(guard.pending("order-1"))
        assert (pending.confirmed, pending.transaction_reference) == (True, "ref-new")
        if guard_kind == "sqlite":
            guard.close()

    run_with("async" if guard_kind == "async" else "sync", server, body)


# --- webhook ledger -------------------------------------------------------------------------------


def delivery(reference: str, sent_at: float) -> tuple[dict[str, str], bytes]:
    """A genuine delivery of the service, dated (X-Kushki-Id, Unix ms) and signed at ``sent_at``."""
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": "PAID"}).encode()
    webhook_id = str(int(sent_at * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id),
            "Content-Type": "application/json"}, body


async def deliver(kind: str, receiver: TransferWebhookReceiver, headers: dict[str, str], body: bytes) -> int:
    """The HTTP status the service gets: the receiver as a plain callable (sync) or as an ASGI app (asyncio)."""
    if kind == "sync":
        try:
            return receiver.handle(headers, body).status
        except StoreUnavailableError:
            return 503  # what a framework around handle() answers (the docs say so)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver), base_url="http://hooks") as http:
        return (await http.post("/webhook", headers=headers, content=body)).status_code


@pytest.mark.parametrize("how", LOSSES)
@pytest.mark.parametrize("kind", KINDS)
def test_webhook_ledger_after_memory_loss_answers_503_to_what_may_have_been_handled_then_handles_again(
    kind: str, how: str, server: RedisServer
) -> None:
    async def body(client: Any) -> None:
        clock, handled = ManualClock(NOON), []
        ledger = LEDGER[kind](client, clock=clock)  # clock_skew 5
        await settle(ledger.declare_memory_complete())
        receiver = TransferWebhookReceiver(lambda event: handled.append(event.dedup_key), secret=SECRET,
                                           ledger=ledger, clock=clock)  # max_age 600, max_ahead 300
        first = delivery("ref-1", NOON)
        assert await deliver(kind, receiver, *first) == 200
        lose_memory(server, how)
        clock.now = NOON + 1
        assert await deliver(kind, receiver, *first) == 503  # a replay: the empty Redis would hand it over
        assert await deliver(kind, receiver, *first) == 503
        assert await deliver(kind, receiver, *delivery("ref-2", NOON + 1)) == 503  # sent when ref-1's may have been
        with pytest.raises(StoreUnavailableError, match="memory lost"):  # not dated: nothing bounds when it came
            await settle(ledger.claim(EventKey("ref-3", "PAID", final=True), "undated"))
        # Sent more than max_ahead + clock_skew after the memory began (NOON + 1): never received before it.
        clock.now = NOON + 400
        later = delivery("ref-2", NOON + 306)
        assert await deliver(kind, receiver, *later) == 200
        assert await deliver(kind, receiver, *later) == 200  # "duplicate"
        assert handled == ["ref-1:PAID", "ref-2:PAID"]
        clock.now = NOON + 1 + 7 * 86400 + 5  # the ledger's ttl has passed: no record lost can matter
        assert (await settle(ledger.claim(EventKey("ref-3", "PAID", final=True), "undated"))).value == "claimed"

    run_with(kind, server, body)


# --- Redis Cluster ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_store_notes_a_memory_loss_on_a_redis_cluster(kind: str) -> None:
    """Each script touches the marker and its keys in one slot (RedisCluster refuses a script across slots)."""

    async def body(client: Any) -> None:
        clock = ManualClock(NOON)
        store, guard, ledger = REPLAY[kind](client, clock=clock), GUARD[kind](client, clock=clock), \
            LEDGER[kind](client, clock=clock)
        for each in (store, guard, ledger):
            await settle(each.declare_memory_complete())
        assert await settle(store.first_use(SIGNATURE, NOON + 300)) is True
        await settle(guard.reserve("order-1", "tok-1"))
        event = EventKey("ref-1", "PAID", final=True)
        assert (await settle(ledger.claim(event, "first", earliest_receipt=NOON - 300))).value == "claimed"
        await settle(client.flushall())
        for claim in (lambda: store.first_use(SIGNATURE, NOON + 300), lambda: guard.reserve("order-1", "tok-2"),
                      lambda: ledger.claim(event, "again", earliest_receipt=NOON - 300)):
            with pytest.raises(StoreUnavailableError, match="memory lost"):
                await settle(claim())

    with RedisServer(cluster=True) as server:
        async def main() -> None:
            if kind == "sync":
                with redis.cluster.RedisCluster(host="127.0.0.1", port=server.port) as client:
                    await body(client)
                return
            client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=server.port)
            try:
                await body(client)
            finally:
                await client.aclose()

        asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_a_redis_never_declared_refuses_naming_the_call_that_ends_it(kind: str, server: RedisServer) -> None:
    """Every store on a new Redis refuses its first claims as after a loss: the message names
    declare_memory_complete(), which ends it (issue 58: it said "memory lost" alone)."""
    async def body(client: Any) -> None:
        clock = ManualClock(NOON)
        claims = [lambda: REPLAY[kind](client, clock=clock).first_use(SIGNATURE, NOON + 300),
                  lambda: GUARD[kind](client, clock=clock).reserve("order-1", "tok-1"),
                  lambda: LEDGER[kind](client, clock=clock).claim(EventKey("ref-1", "PAID", final=True), "undated")]
        for claim in claims:
            with pytest.raises(StoreUnavailableError) as refused:
                await settle(claim())
            assert "memory lost" in str(refused.value)
            assert refused.value.reason.endswith(
                "A new Redis, or one you know lost nothing: call the store's declare_memory_complete() once, before "
                "its first request (never at every start-up: that would hide a loss)"), refused.value.reason

    run_with(kind, server, body)
