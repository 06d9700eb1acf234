"""Declaring a Redis new, as an operator does before its first request: the stores' memory markers say it has
lost nothing, so the stores judge by what it holds at once (without it, they fail closed for a while: see
pasarela._redis_store). Tests that flush the shared redis-server, or start one, declare it again before use."""

from __future__ import annotations

from pasarela.terminal.replay_redis import RedisReplayStore
from pasarela.transfers.pending_redis import RedisPendingTransfers
from pasarela.transfers.webhook_dedup_redis import RedisEventLedger
from support.redis_server import RedisServer


def declare_new(server: RedisServer) -> None:
    """The memory of the three stores with their default prefixes declared complete on ``server``."""
    with server.client() as client:
        for store in (RedisReplayStore(client), RedisPendingTransfers(client), RedisEventLedger(client)):
            store.declare_memory_complete()
