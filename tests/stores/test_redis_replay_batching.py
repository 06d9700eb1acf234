"""The asyncio Redis replay store sends the claims of one event-loop turn as one script call over all their keys, on
a real redis-server (Redis's own count of the EVALSHA it ran, from INFO commandstats): each claim still gets its own
answer, duplicates inside one call are refused after the first, the call redis-py re-sends after a timeout finds
its own claims, a call that fails (Redis gone, an error in the middle of the script) fails every claim of it closed,
and on a Redis Cluster a batch makes one call per hash slot."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Iterator
from typing import Any, Callable, TypeVar

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
import redis.backoff
from redis.crc import key_slot

from pasarela._redis_store import bucket_tag
from pasarela.errors import StoreUnavailableError
from pasarela.terminal.replay_redis import MOST_CLAIMS_PER_CALL, AsyncRedisReplayStore
from support.redis_faults import busy, retrying_client
from support.redis_server import RedisServer

T = TypeVar("T")
NOW = 1_790_000_000.0
EXPIRES_AT = NOW + 300


def signature() -> str:
    return os.urandom(64).hex()


def script_calls(server: RedisServer) -> int:
    """How many EVALSHA Redis has run (each is one command and one round trip of the store)."""
    with server.client() as stats:
        return int(stats.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def on_store(server: RedisServer, body: Callable[[AsyncRedisReplayStore, redis.asyncio.Redis], Awaitable[T]],
             client: Any = None) -> T:
    """body(store, client) in an event loop that fails the test on any error nobody retrieved (a claim's answer
    set but never read, a task that died unseen); the script already loaded, so later calls need no reload."""
    unseen: list[dict[str, Any]] = []

    async def main() -> T:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unseen.append(context))
        used = client or redis.asyncio.Redis(port=server.port, socket_timeout=2.0, socket_connect_timeout=1,
                                             retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 1))
        try:
            store = AsyncRedisReplayStore(used, prefix=f"batching:{signature()[:8]}:", clock=lambda: NOW)
            await store.declare_memory_complete()
            assert await store.first_use(signature(), EXPIRES_AT)
            return await body(store, used)
        finally:
            await used.aclose()

    result = asyncio.run(main())
    assert unseen == []
    return result


def claims(store: AsyncRedisReplayStore, signatures: list[str]) -> Awaitable[list[Any]]:
    """The claims of signatures, made in one turn; each answer or the exception it raised."""
    return asyncio.gather(*(store.first_use(each, EXPIRES_AT) for each in signatures), return_exceptions=True)


def test_the_claims_of_one_turn_are_one_script_call_each_with_its_own_answer(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        distinct = [signature() for _ in range(32)]
        before = script_calls(redis_server)
        assert await claims(store, distinct) == [True] * 32
        assert script_calls(redis_server) - before == 1
        assert await claims(store, [*distinct[:3], signature()]) == [False, False, False, True]
        assert script_calls(redis_server) - before == 2

    on_store(redis_server, body)


def test_a_signature_claimed_twice_in_one_call_is_accepted_once(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        first, second = signature(), signature()
        batch = [first, signature(), first, second, first, signature(), second]
        before = script_calls(redis_server)
        assert await claims(store, batch) == [True, True, False, True, False, True, False]  # the first claim wins
        assert script_calls(redis_server) - before == 1

    on_store(redis_server, body)


def test_claims_of_separate_turns_go_separately(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        before = script_calls(redis_server)
        for _ in range(3):
            assert await store.first_use(signature(), EXPIRES_AT)
        assert script_calls(redis_server) - before == 3

    on_store(redis_server, body)


@pytest.mark.parametrize("batch", [1, MOST_CLAIMS_PER_CALL, MOST_CLAIMS_PER_CALL + 1, 200])
def test_a_turn_of_many_claims_takes_bounded_calls_and_records_each_once(redis_server: RedisServer,
                                                                         batch: int) -> None:
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        signatures = [signature() for _ in range(batch)]
        before = script_calls(redis_server)
        assert await claims(store, signatures) == [True] * batch
        assert script_calls(redis_server) - before == -(-batch // MOST_CLAIMS_PER_CALL)
        assert await claims(store, signatures) == [False] * batch
        keys = [key async for key in client.scan_iter(match=f"{store._prefix}*s:*")]
        assert len(keys) == batch + 1  # and the one claimed before

    on_store(redis_server, body)


def test_a_script_redis_forgot_is_loaded_again_and_the_batch_answered(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        await client.script_flush()
        once = signature()
        answers = await claims(store, [signature() for _ in range(10)] + [once, once])
        assert answers == [True] * 11 + [False]

    on_store(redis_server, body)


def test_the_call_re_sent_after_a_timeout_finds_its_own_claims(redis_server: RedisServer) -> None:
    """Redis busy past two timeouts: redis-py sends the call again after Redis ran it; each claim is still the
    first use of its signature (its own token and place), a duplicate in the call is still refused."""
    twice = signature()
    batch = [signature() for _ in range(8)] + [twice, twice]

    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        before = script_calls(redis_server)
        with busy(redis_server):
            answers = await claims(store, batch)
        assert script_calls(redis_server) - before >= 2  # the fault made the client send the call again
        assert answers == [True] * 9 + [False]
        assert await claims(store, batch) == [False] * 10

    on_store(redis_server, body, client=retrying_client(redis_server, "async"))


def test_a_failed_round_trip_fails_every_claim_of_the_batch_closed() -> None:
    with RedisServer() as server:
        async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
            server.kill()
            secrets = [signature() for _ in range(8)]
            answers = await claims(store, secrets)
            assert all(isinstance(answer, StoreUnavailableError) for answer in answers), answers
            assert len({id(answer) for answer in answers}) == 8  # each request its own error, raised once
            for answer in answers:
                assert isinstance(answer, StoreUnavailableError) and answer.status == 503
                assert answer.__cause__ is None and answer.__suppress_context__
                assert not any(each in str(answer) for each in secrets)

        on_store(server, body)


def test_an_error_in_the_middle_of_the_script_fails_every_claim_of_the_call_closed(redis_server: RedisServer) -> None:
    """A claim whose key Redis cannot read as a string (WRONGTYPE) stops the script half way: the claims checked
    before it were recorded, but none of the call's claims is accepted, those after it neither."""
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        batch = [signature() for _ in range(9)]
        broken = batch[4]
        await client.hset(f"{store._prefix}{bucket_tag(broken)}s:{broken}", "not", "a string")
        answers = await claims(store, batch)
        assert all(isinstance(answer, StoreUnavailableError) for answer in answers), answers
        assert "WRONGTYPE" in str(answers[0]) and not any(each in str(answers[0]) for each in batch)
        assert await claims(store, batch[:4]) == [False] * 4  # recorded before the error: refused, not accepted
        assert await claims(store, batch[5:]) == [True] * 4  # never reached: their first use is still to come

    on_store(redis_server, body)


def test_a_claim_cancelled_while_waiting_leaves_the_others_answered(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        before = script_calls(redis_server)
        waiting = [asyncio.ensure_future(store.first_use(signature(), EXPIRES_AT)) for _ in range(6)]
        await asyncio.sleep(0)  # every claim waits for the call's answer now
        waiting[2].cancel()
        done = await asyncio.gather(*waiting, return_exceptions=True)
        assert isinstance(done[2], asyncio.CancelledError)
        assert done[:2] + done[3:] == [True] * 5
        assert script_calls(redis_server) - before == 1

    on_store(redis_server, body)


def test_claims_made_while_a_call_is_on_its_way_go_together_in_the_next(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: redis.asyncio.Redis) -> None:
        before = script_calls(redis_server)
        with redis_server.client() as operator:
            operator.execute_command("CLIENT", "PAUSE", 300)  # Redis answers nobody for 0.3 s
        first = asyncio.ensure_future(store.first_use(signature(), EXPIRES_AT))
        await asyncio.sleep(0.05)  # that call is on its way, waiting for Redis
        later = []
        for _ in range(5):  # five turns, two claims each
            later += [asyncio.ensure_future(store.first_use(signature(), EXPIRES_AT)) for _ in range(2)]
            await asyncio.sleep(0.01)
        assert await first and await asyncio.gather(*later) == [True] * 10
        assert script_calls(redis_server) - before == 2

    on_store(redis_server, body)


def test_a_burst_of_claims_needs_one_connection(redis_server: RedisServer) -> None:
    """A burst larger than the client's connection pool is answered, not refused for want of connections."""
    async def main() -> list[bool]:
        client = redis.asyncio.Redis(port=redis_server.port, socket_timeout=2.0, max_connections=1)
        try:
            store = AsyncRedisReplayStore(client, prefix=f"burst:{signature()[:8]}:", clock=lambda: NOW)
            await store.declare_memory_complete()
            return await asyncio.gather(*(store.first_use(signature(), EXPIRES_AT) for _ in range(300)))
        finally:
            await client.aclose()

    assert asyncio.run(main()) == [True] * 300


# --- Redis Cluster --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisServer]:
    with RedisServer(cluster=True) as server:
        yield server


def test_on_a_cluster_a_batch_makes_one_call_per_hash_slot(redis_cluster: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: Any) -> None:
        batch = [signature() for _ in range(40)]
        twice = batch[7]
        batch.append(twice)
        slots = {key_slot(f"{store._prefix}{bucket_tag(each)}".encode()) for each in batch}
        assert len(slots) < len(batch)  # some slots hold two claims: the test sees grouping, not one call each
        before = script_calls(redis_cluster)
        assert await claims(store, batch) == [True] * 40 + [False]
        assert script_calls(redis_cluster) - before == len(slots)
        assert await claims(store, batch[:5]) == [False] * 5

    client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=redis_cluster.port)
    on_store(redis_cluster, body, client=client)


def test_on_a_cluster_a_prefix_with_a_hash_tag_makes_one_call(redis_cluster: RedisServer) -> None:
    """A prefix that carries a hash tag puts every key in its slot: a batch is then one call there too."""
    async def main() -> list[bool]:
        client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=redis_cluster.port)
        try:
            store = AsyncRedisReplayStore(client, prefix=f"{{replay-{signature()[:8]}}}:", clock=lambda: NOW)
            await store.declare_memory_complete()
            before = script_calls(redis_cluster)
            answers = await asyncio.gather(*(store.first_use(signature(), EXPIRES_AT) for _ in range(20)))
            assert script_calls(redis_cluster) - before == 1
            return answers
        finally:
            await client.aclose()

    assert asyncio.run(main()) == [True] * 20
