"""The asyncio Redis replay store sends the claims of one event-loop turn together, in one pipeline, on a real
redis-server: each claim still gets its own answer, a failed pipeline fails every claim closed, and a claim
cancelled meanwhile leaves the others answered."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from typing import Any, Callable, TypeVar

import pytest
import redis.asyncio
import redis.asyncio.retry
import redis.backoff

from pasarela.errors import StoreUnavailableError
from pasarela.terminal.replay_redis import AsyncRedisReplayStore
from redis_server import RedisServer

T = TypeVar("T")
NOW = 1_790_000_000.0
EXPIRES_AT = NOW + 300


class CountingRedis(redis.asyncio.Redis):
    """A real asyncio client that counts the pipelines it makes (each pipeline is one round trip)."""

    pipelines = 0

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        self.pipelines += 1
        return super().pipeline(*args, **kwargs)


def signature() -> str:
    return os.urandom(64).hex()


def on_store(server: RedisServer, body: Callable[[AsyncRedisReplayStore, CountingRedis], Awaitable[T]]) -> T:
    """body(store, client) in an event loop that fails the test on any error nobody retrieved (a claim's answer
    set but never read, a task that died unseen)."""
    unseen: list[dict[str, Any]] = []

    async def main() -> T:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unseen.append(context))
        client = CountingRedis(port=server.port, socket_timeout=2.0, socket_connect_timeout=1,
                               retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), 1))
        try:
            store = AsyncRedisReplayStore(client, prefix=f"batching:{signature()[:8]}:", clock=lambda: NOW)
            await store.declare_memory_complete()
            assert await store.first_use(signature(), EXPIRES_AT)  # the script loaded: later batches need no reload
            client.pipelines = 0
            return await body(store, client)
        finally:
            await client.aclose()

    result = asyncio.run(main())
    assert unseen == []
    return result


def test_the_claims_of_one_turn_share_one_round_trip_each_with_its_own_answer(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: CountingRedis) -> None:
        distinct = [signature() for _ in range(40)]
        twice = signature()
        answers = await asyncio.gather(*(store.first_use(each, EXPIRES_AT) for each in distinct),
                                       *(store.first_use(twice, EXPIRES_AT) for _ in range(5)))
        assert client.pipelines == 1
        assert answers[:40] == [True] * 40
        assert answers[40:] == [True, False, False, False, False]  # in one pipeline too, the first claim wins
        client.pipelines = 0
        assert await asyncio.gather(*(store.first_use(each, EXPIRES_AT) for each in distinct[:3])) == [False] * 3
        assert client.pipelines == 1

    on_store(redis_server, body)


def test_claims_of_separate_turns_go_separately(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: CountingRedis) -> None:
        for _ in range(3):
            assert await store.first_use(signature(), EXPIRES_AT)
        assert client.pipelines == 3

    on_store(redis_server, body)


def test_a_script_redis_forgot_is_loaded_again_and_the_batch_answered(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: CountingRedis) -> None:
        await client.script_flush()
        once = signature()
        answers = await asyncio.gather(*(store.first_use(signature(), EXPIRES_AT) for _ in range(10)),
                                       store.first_use(once, EXPIRES_AT), store.first_use(once, EXPIRES_AT))
        assert answers == [True] * 11 + [False]
        assert client.pipelines == 2  # NOSCRIPT for all, then all again once loaded

    on_store(redis_server, body)


def test_a_failed_round_trip_fails_every_claim_of_the_batch_closed() -> None:
    with RedisServer() as server:
        async def body(store: AsyncRedisReplayStore, client: CountingRedis) -> None:
            server.kill()
            secrets = [signature() for _ in range(8)]
            answers = await asyncio.gather(*(store.first_use(each, EXPIRES_AT) for each in secrets),
                                           return_exceptions=True)
            assert all(isinstance(answer, StoreUnavailableError) for answer in answers), answers
            assert len({id(answer) for answer in answers}) == 8  # each request its own error, raised once
            for answer in answers:
                assert isinstance(answer, StoreUnavailableError) and answer.status == 503
                assert answer.__cause__ is None and answer.__suppress_context__
                assert not any(each in str(answer) for each in secrets)

        on_store(server, body)


def test_a_claim_cancelled_while_waiting_leaves_the_others_answered(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: CountingRedis) -> None:
        claims = [asyncio.ensure_future(store.first_use(signature(), EXPIRES_AT)) for _ in range(6)]
        await asyncio.sleep(0)  # every claim waits for the batch's answer now
        claims[2].cancel()
        done = await asyncio.gather(*claims, return_exceptions=True)
        assert isinstance(done[2], asyncio.CancelledError)
        assert done[:2] + done[3:] == [True] * 5
        assert client.pipelines == 1

    on_store(redis_server, body)


@pytest.mark.parametrize("batch", [1, 16, 200])
def test_every_claim_is_recorded_once_in_redis(redis_server: RedisServer, batch: int) -> None:
    async def body(store: AsyncRedisReplayStore, client: CountingRedis) -> None:
        signatures = [signature() for _ in range(batch)]
        assert await asyncio.gather(*(store.first_use(each, EXPIRES_AT) for each in signatures)) == [True] * batch
        assert await asyncio.gather(*(store.first_use(each, EXPIRES_AT) for each in signatures)) == [False] * batch
        keys = [key async for key in client.scan_iter(match=f"{store._prefix}*s:*")]
        assert len(keys) == batch + 1  # and the one claimed before

    on_store(redis_server, body)


def test_claims_made_while_a_batch_is_on_its_way_go_together_in_the_next(redis_server: RedisServer) -> None:
    async def body(store: AsyncRedisReplayStore, client: CountingRedis) -> None:
        with redis_server.client() as operator:
            operator.execute_command("CLIENT", "PAUSE", 300)  # Redis answers nobody for 0.3 s
        first = asyncio.ensure_future(store.first_use(signature(), EXPIRES_AT))
        await asyncio.sleep(0.05)  # that batch is on its way, waiting for Redis
        later = []
        for _ in range(5):  # five turns, two claims each
            later += [asyncio.ensure_future(store.first_use(signature(), EXPIRES_AT)) for _ in range(2)]
            await asyncio.sleep(0.01)
        assert await first and await asyncio.gather(*later) == [True] * 10
        assert client.pipelines == 2

    on_store(redis_server, body)


def test_a_burst_of_claims_needs_one_connection(redis_server: RedisServer) -> None:
    """A burst larger than the client's connection pool is answered, not refused for want of connections."""
    async def main() -> list[bool]:
        client = redis.asyncio.Redis(port=redis_server.port, socket_timeout=2.0, max_connections=2)
        try:
            store = AsyncRedisReplayStore(client, prefix=f"burst:{signature()[:8]}:", clock=lambda: NOW)
            await store.declare_memory_complete()
            return await asyncio.gather(*(store.first_use(signature(), EXPIRES_AT) for _ in range(300)))
        finally:
            await client.aclose()

    assert asyncio.run(main()) == [True] * 300
