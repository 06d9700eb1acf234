"""The Redis backends of the replay store, the pending-transfer guard and webhook dedup, against a real
redis-server (tests/support/redis_server.py), each sync and asyncio: same guarantees as their in-memory twins,
atomic under concurrency, prefixed keys that expire by themselves, fail closed when Redis is unreachable."""

# ruff: noqa: S106 (test tokens are fixtures)

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Iterator
from typing import Any, Callable, TypeVar, Union

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
import redis.backoff
import redis.cluster
import redis.retry

import pasarela
from pasarela import AuthError
from pasarela._redis_store import _has_hash_tag, bucket_tag
from pasarela.errors import PendingTransferError, StoreUnavailableError
from pasarela.terminal.replay import Verifier, verify_once
from pasarela.terminal.replay_redis import AsyncRedisReplayStore, RedisReplayStore
from pasarela.transfers.pending_redis import AsyncRedisPendingTransfers, RedisPendingTransfers
from pasarela.transfers.webhook_dedup import Claim, EventKey
from pasarela.transfers.webhook_dedup_redis import AsyncRedisEventLedger, RedisEventLedger
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL
from support.redis_server import RedisServer, free_port

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
SIGNATURE = "ab" * 64
T = TypeVar("T")


async def settle(value: Union[T, Awaitable[T]]) -> T:
    return await value if inspect.isawaitable(value) else value


def declared(store: T) -> T:
    """A sync store on a Redis declared to have lost nothing (a new Redis, as the operator declares it)."""
    store.declare_memory_complete()  # type: ignore[attr-defined]
    return store


async def declared_async(store: T) -> T:
    """:func:`declared` for a sync or an asyncio store."""
    await settle(store.declare_memory_complete())  # type: ignore[attr-defined]
    return store


def replay_key(prefix: str, signature: str) -> str:
    return prefix + bucket_tag(signature) + "s:" + signature


def data_keys(client: redis.Redis) -> list[bytes]:
    """The keys of claims, without the stores' memory markers."""
    return sorted(key for key in client.scan_iter() if not key.endswith(b"memory"))


@pytest.fixture
def db(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A sync client on an emptied database."""
    with redis_server.client() as client:
        client.flushall()
        yield client


def run_with(kind: str, server: RedisServer, body: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``body(client)`` in an event loop with a sync or an asyncio client (the store under test wraps it)."""

    async def main() -> T:
        if kind == "sync":
            with server.client() as client:
                return await body(client)
        client = redis.asyncio.Redis(port=server.port, socket_timeout=2.0)
        try:
            return await body(client)
        finally:
            await client.aclose()

    return asyncio.run(main())


def unreachable_client(kind: str) -> Any:
    """A client of a port nothing listens on, retrying once without backoff (redis-py's default retries
    with backoff for seconds before it gives up: still refused, only slower)."""
    options: dict[str, Any] = {"port": free_port(), "socket_connect_timeout": 1}
    if kind == "sync":
        return redis.Redis(retry=redis.retry.Retry(redis.backoff.NoBackoff(), 1), **options)
    return redis.asyncio.Redis(retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 1), **options)


KINDS = ["sync", "async"]
REPLAY = {"sync": RedisReplayStore, "async": AsyncRedisReplayStore}
GUARD = {"sync": RedisPendingTransfers, "async": AsyncRedisPendingTransfers}
LEDGER = {"sync": RedisEventLedger, "async": AsyncRedisEventLedger}


# --- replay store ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_replay_store_first_use_once_with_a_prefixed_key_expiring_after_the_window(
    kind: str, redis_server: RedisServer, db: redis.Redis
) -> None:
    async def body(client: Any) -> None:
        store = await declared_async(REPLAY[kind](client, prefix="gw1:", clock_skew=5, clock=lambda: NOON))
        assert await settle(store.first_use(SIGNATURE, NOON + 300)) is True
        assert await settle(store.first_use(SIGNATURE, NOON + 300)) is False
        assert await settle(store.first_use("cd" * 64, NOON + 300)) is True

    run_with(kind, redis_server, body)
    assert data_keys(db) == sorted(replay_key("gw1:", signature).encode() for signature in (SIGNATURE, "cd" * 64))
    assert 304_000 < db.pttl(replay_key("gw1:", SIGNATURE)) <= 305_000  # the window left (300 s) plus the skew (5 s)


def test_replay_store_key_lifetime_follows_the_node_clock_not_redis(db: redis.Redis) -> None:
    store = declared(RedisReplayStore(db, clock_skew=0, clock=lambda: NOON))  # Redis's clock: years later
    assert store.first_use(SIGNATURE, NOON + 2)
    assert 1000 < db.pttl(replay_key("pasarela:replay:", SIGNATURE)) <= 2000
    store = RedisReplayStore(db, clock_skew=0, clock=lambda: NOON + 10)  # already outside the window
    assert store.first_use("cd" * 64, NOON)
    assert db.pttl(replay_key("pasarela:replay:", "cd" * 64)) in (-2, 0, 1)  # gone within a millisecond


def test_replay_store_keys_expire_by_themselves(db: redis.Redis) -> None:
    store = declared(RedisReplayStore(db, clock_skew=0.05, clock=lambda: NOON))
    assert store.first_use(SIGNATURE, NOON)
    assert not store.first_use(SIGNATURE, NOON)
    waited = 0
    while db.exists(replay_key("pasarela:replay:", SIGNATURE)) and waited < 500:  # Redis expires it (50 ms)
        threading.Event().wait(0.01)
        waited += 1
    assert store.first_use(SIGNATURE, NOON)


def test_replay_store_one_winner_among_concurrent_nodes(redis_server: RedisServer, db: redis.Redis) -> None:
    nodes = [RedisReplayStore(redis_server.client()) for _ in range(8)]  # a client (connection pool) per node
    declared(nodes[0])
    barrier = threading.Barrier(len(nodes))
    outcomes: list[bool] = []

    def attempt(store: RedisReplayStore) -> None:
        barrier.wait()
        for index in range(50):
            outcomes.append(store.first_use(f"{index:0128x}", 4e9))

    threads = [threading.Thread(target=attempt, args=(node,)) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 8 * 50 and outcomes.count(True) == 50  # each signature won exactly once


def test_verify_once_with_redis_refuses_the_request_on_another_node(redis_server: RedisServer, db: redis.Redis) -> None:
    node_a, node_b = declared(RedisReplayStore(redis_server.client())), RedisReplayStore(redis_server.client())
    sealed = TERMINAL.seal({"amount": 100}, timestamp=NOON)
    assert verify_once(TERMINAL, node_a, "POST", sealed.headers, sealed.body, now=NOON) == {"amount": 100}
    with pytest.raises(AuthError) as refused:
        verify_once(TERMINAL, node_b, "POST", sealed.headers, sealed.body, now=NOON + 1)
    assert "replay" in refused.value.reason
    forged = TERMINAL.seal({"amount": 1}, timestamp=NOON)
    with pytest.raises(AuthError):  # a forged body under a real signature is refused before the store is asked
        verify_once(TERMINAL, node_a, "POST", forged.headers, sealed.body.replace(b"0", b"1", 1), now=NOON)
    assert len(data_keys(db)) == 1


def test_async_verifier_with_the_asyncio_redis_store(redis_server: RedisServer, db: redis.Redis) -> None:
    sealed = TERMINAL.seal({"a": 1}, timestamp=NOON)

    async def body(client: Any) -> None:
        verifier = Verifier(TERMINAL, replay_store=await declared_async(AsyncRedisReplayStore(client)),
                            clock=lambda: NOON)
        results = await asyncio.gather(*(verifier.open_async("POST", sealed.headers, sealed.body)
                                         for _ in range(10)), return_exceptions=True)
        assert sum(result == {"a": 1} for result in results) == 1
        assert all(isinstance(result, AuthError) for result in results if result != {"a": 1})

    run_with("async", redis_server, body)


@pytest.mark.parametrize("kind", KINDS)
def test_replay_store_unreachable_is_store_unavailable_error(kind: str) -> None:
    async def body() -> None:
        client = unreachable_client(kind)
        store = REPLAY[kind](client)
        with pytest.raises(StoreUnavailableError) as caught:
            await settle(store.first_use(SIGNATURE, 4e9))
        assert caught.value.store == "replay store (Redis)" and caught.value.status == 503
        assert SIGNATURE not in str(caught.value) and caught.value.__cause__ is None
        assert isinstance(caught.value, pasarela.PasarelaError)

    asyncio.run(body())


def test_store_settings_are_checked(db: redis.Redis) -> None:
    for bad in (0, -1, float("nan"), float("inf"), True, "60"):
        with pytest.raises(pasarela.errors.ConfigurationError, match="ttl"):
            RedisEventLedger(db, ttl=bad)  # type: ignore[arg-type]
    with pytest.raises(pasarela.errors.ConfigurationError, match="clock_skew"):
        RedisReplayStore(db, clock_skew=-1)
    with pytest.raises(pasarela.errors.ConfigurationError, match="prefix"):
        RedisPendingTransfers(db, prefix=None)  # type: ignore[arg-type]
    assert repr(RedisReplayStore(db, prefix="p:")) == "RedisReplayStore(prefix='p:')"


def test_cluster_hash_tags_are_recognized_as_redis_cluster_does() -> None:
    assert _has_hash_tag("pasarela:{pending}:") and _has_hash_tag("{a}") and _has_hash_tag("x{{y}")
    assert not _has_hash_tag("pasarela:pending:") and not _has_hash_tag("{}x") and not _has_hash_tag("}{")
    assert not _has_hash_tag("x{y")


# --- pending-transfer guard -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_guard_leaves_no_key_behind_a_released_transfer(kind: str, redis_server: RedisServer, db: redis.Redis) -> None:
    """What the guard does is the contract's (tests/stores/test_store_contracts.py); here, the keys it leaves: the
    order, token and reference keys go with the transfer, whichever way it is released."""
    async def body(client: Any) -> None:
        guard = await declared_async(GUARD[kind](client, clock=lambda: NOON))
        await settle(guard.reserve("order-1", "tok-1"))
        await settle(guard.release("order-1"))
        await settle(guard.reserve("order-1", "tok-4"))
        assert db.get("pasarela:{pending}:token:tok-1") is None
        assert db.get("pasarela:{pending}:token:tok-4") == b"order-1"
        await settle(guard.confirm("order-1", "ref-1", token="tok-4"))
        assert await settle(guard.release_transfer(transaction_reference="ref-1")) == "order-1"
        assert data_keys(db) == []
        await settle(guard.reserve("order-2", "tok-2"))
        await settle(guard.confirm("order-2", None, token="tok-2"))
        assert await settle(guard.release_transfer(token="tok-2")) == "order-2"
        await settle(guard.confirm("order-2", "ref-late", token="tok-2"))  # released meanwhile: nothing recreated
        assert data_keys(db) == []

    run_with(kind, redis_server, body)


def test_guard_keys_expire_together_after_the_ttl(db: redis.Redis) -> None:
    guard = declared(RedisPendingTransfers(db, prefix="shop:{guard}:", ttl=60))
    guard.reserve("order-1", "tok-1")
    guard.confirm("order-1", "ref-1", token="tok-1")
    lifetimes = [db.pttl(f"shop:{{guard}}:{kind}") for kind in ("order:order-1", "token:tok-1", "ref:ref-1")]
    assert all(59_000 < lifetime <= 60_000 for lifetime in lifetimes), lifetimes
    short = RedisPendingTransfers(db, prefix="shop:{guard}:", ttl=0.05)
    short.reserve("order-2", "tok-2")
    waited = 0
    while db.exists("shop:{guard}:order:order-2") and waited < 500:
        threading.Event().wait(0.01)
        waited += 1
    short.reserve("order-2", "tok-3")  # an order whose result never came frees itself


def test_guard_index_of_another_order_is_not_trusted(db: redis.Redis) -> None:
    guard = declared(RedisPendingTransfers(db))
    guard.reserve("order-1", "tok-shared")
    guard.reserve("order-2", "tok-shared")  # the token now points at order-2
    assert guard.release_transfer(token="tok-shared") == "order-2"
    assert guard.pending("order-1") is not None  # order-1 waits for its own release
    guard.release("order-1")
    assert data_keys(db) == []


def test_guard_one_winner_among_concurrent_nodes(redis_server: RedisServer, db: redis.Redis) -> None:
    nodes = [RedisPendingTransfers(redis_server.client()) for _ in range(8)]
    declared(nodes[0])
    barrier = threading.Barrier(len(nodes))
    winners: list[str] = []

    def attempt(index: int) -> None:
        barrier.wait()
        try:
            nodes[index].reserve("order-1", f"tok-{index}")
            winners.append(f"tok-{index}")
        except PendingTransferError:
            pass

    threads = [threading.Thread(target=attempt, args=(index,)) for index in range(len(nodes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pending = nodes[0].pending("order-1")
    assert len(winners) == 1 and pending is not None and pending.token == winners[0]


@pytest.mark.parametrize("kind", KINDS)
def test_guard_unreachable_refuses_to_reserve(kind: str) -> None:
    async def body() -> None:
        client = unreachable_client(kind)
        guard = GUARD[kind](client)
        for call in (lambda: guard.reserve("order-1", "tok-1"), lambda: guard.release_transfer(token="tok-1"),
                     lambda: guard.pending("order-1")):
            with pytest.raises(StoreUnavailableError, match="pending-transfer guard"):
                await settle(call())

    asyncio.run(body())


# --- webhook ledger -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_ledger_claims_once_releases_confirms_and_expires(kind: str, redis_server: RedisServer,
                                                          db: redis.Redis) -> None:
    paid, initialized = EventKey("ref-1", "PAID", final=True), EventKey("ref-1", "initialized", final=False)
    long_key = EventKey("x" * 1000, "PAID", final=True)

    async def body(client: Any) -> None:
        ledger = await declared_async(LEDGER[kind](client, prefix="hooks:", ttl=3600, lease=60))
        assert await settle(ledger.claim(initialized, "a")) is Claim.CLAIMED
        assert await settle(ledger.claim(initialized, "a")) is Claim.CLAIMED  # its own claim, sent again
        assert await settle(ledger.claim(paid, "b")) is Claim.IN_PROGRESS  # one delivery per transaction at once
        await settle(ledger.release(initialized, "b"))  # not b's lease: nothing happens
        assert await settle(ledger.claim(initialized, "c")) is Claim.IN_PROGRESS
        await settle(ledger.release(initialized, "a"))  # the handler failed
        assert await settle(ledger.claim(initialized, "c")) is Claim.CLAIMED
        await settle(ledger.confirm(initialized, "c"))
        await settle(ledger.confirm(initialized, "c"))  # sent again: the same record
        assert await settle(ledger.claim(initialized, "d")) is Claim.HANDLED
        assert await settle(ledger.claim(paid, "e")) is Claim.CLAIMED
        await settle(ledger.confirm(paid, "e"))
        assert await settle(ledger.claim(paid, "f")) is Claim.HANDLED
        assert await settle(ledger.claim(EventKey("ref-1", "declined", final=True), "g")) is Claim.SUPERSEDED
        assert await settle(ledger.claim(long_key, "h")) is Claim.CLAIMED
        assert await settle(ledger.claim(long_key, "i")) is Claim.IN_PROGRESS

    run_with(kind, redis_server, body)
    keys, ref_1 = data_keys(db), "hooks:" + bucket_tag("ref-1") + "t:ref-1"
    assert ref_1.encode() in keys
    hashed = [key for key in keys if key != ref_1.encode()]
    assert len(hashed) == 1 and b"t:sha256:" in hashed[0] and len(hashed[0]) < 100  # long keys hashed
    assert db.hget(ref_1, "final") == b"PAID" and db.hget(ref_1, "lease") is None
    assert all(3_599_000 < db.pttl(key) <= 3_600_000 for key in keys)


def test_ledger_lease_ends_by_itself(db: redis.Redis) -> None:
    """A process that died while handling frees the transaction when its lease ends."""
    ledger, event = declared(RedisEventLedger(db, lease=0.05)), EventKey("ref-1", "PAID", final=True)
    assert ledger.claim(event, "crashed") is Claim.CLAIMED
    assert ledger.claim(event, "redelivery") is Claim.IN_PROGRESS
    deadline = time.monotonic() + 10
    while ledger.claim(event, "redelivery") is Claim.IN_PROGRESS and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ledger.claim(event, "redelivery") is Claim.CLAIMED
    ledger.confirm(event, "crashed")  # the late process's confirmation records the event, keeps the new lease
    assert db.hget("pasarela:webhook:" + bucket_tag("ref-1") + "t:ref-1", "lease") == b"redelivery"
    with pytest.raises(pasarela.errors.ConfigurationError, match="lease"):
        RedisEventLedger(db, ttl=10, lease=20)


@pytest.mark.parametrize("kind", KINDS)
def test_ledger_unreachable_is_store_unavailable_error(kind: str) -> None:
    async def body() -> None:
        client = unreachable_client(kind)
        with pytest.raises(StoreUnavailableError, match="webhook ledger"):
            await settle(LEDGER[kind](client).claim(EventKey("ref-1", "PAID", final=True), "a"))

    asyncio.run(body())


# --- packaging ------------------------------------------------------------------------------------




# --- Redis Cluster --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisServer]:
    with RedisServer(cluster=True) as server:
        yield server


def test_the_stores_on_a_redis_cluster(redis_cluster: RedisServer) -> None:
    client = redis.cluster.RedisCluster(host="127.0.0.1", port=redis_cluster.port)
    try:
        guard = declared(RedisPendingTransfers(client))  # the default prefix carries a hash tag
        guard.reserve("order-1", "tok-1")
        guard.confirm("order-1", "ref-1", token="tok-1")
        with pytest.raises(PendingTransferError):
            guard.reserve("order-1", "tok-2")
        assert guard.release_transfer(transaction_reference="ref-1") == "order-1"
        with pytest.raises(pasarela.errors.ConfigurationError, match="hash tag"):
            RedisPendingTransfers(client, prefix="pasarela:pending:")
        store, ledger = declared(RedisReplayStore(client)), declared(RedisEventLedger(client))  # tags of their own
        assert store.first_use(SIGNATURE, 4e9) and not store.first_use(SIGNATURE, 4e9)
        event = EventKey("ref-1", "PAID", final=True)
        assert ledger.claim(event, "a") is Claim.CLAIMED and ledger.claim(event, "b") is Claim.IN_PROGRESS
    finally:
        client.close()

    async def on_asyncio_cluster() -> None:
        client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=redis_cluster.port)
        try:
            guard = await declared_async(AsyncRedisPendingTransfers(client))
            await guard.reserve("order-2", "tok-2")
            assert await guard.release_transfer(token="tok-2") == "order-2"
            with pytest.raises(pasarela.errors.ConfigurationError, match="hash tag"):
                AsyncRedisPendingTransfers(client, prefix="{}pending:")
        finally:
            await client.aclose()

    asyncio.run(on_asyncio_cluster())
