"""Webhook deduplication on Redis, shared by every web node and worker (extra ``pasarela[redis]``).

    receiver = TransferWebhookReceiver(on_event, secret=..., ledger=RedisEventLedger(redis.Redis.from_url(url)))

A claim is one ``SET <prefix><key> 1 NX PX <ttl>``: atomic, so of two nodes receiving the same delivery
at once exactly one hands it to its handler. A forget (the handler failed) is a ``DEL``, so the next
redelivery is handled. Claims expire after ``ttl`` seconds (default 7 days, longer than the service
keeps redelivering): the set of keys stays bounded.

When Redis cannot be reached, :class:`~pasarela.errors.StoreUnavailableError` is raised: the event is not
handed over, the receiver answers 503 and the service delivers it again later.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .._redis_store import check_prefix, failing_closed, milliseconds, seconds

__all__ = ["AsyncRedisEventLedger", "RedisEventLedger"]

_STORE = "webhook ledger (Redis)"
_LONGEST_READABLE_KEY = 200


class _LedgerKeys:
    def __init__(self, client: Any, *, prefix: str = "pasarela:webhook:", ttl: float = 7 * 86400.0) -> None:
        self._client = client
        self._prefix = check_prefix(client, prefix, one_slot=False)
        self._ttl_ms = milliseconds(seconds(ttl, "ttl"))

    def _key(self, key: str) -> str:
        # Event keys come from the webhook body: a long one is hashed so key names stay small.
        if len(key) > _LONGEST_READABLE_KEY:
            key = "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return self._prefix + key

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


class RedisEventLedger(_LedgerKeys):
    """:class:`~pasarela.transfers.webhook_dedup.EventLedger` on a ``redis.Redis`` (or RedisCluster)."""

    def claim(self, key: str) -> bool:
        with failing_closed(_STORE):
            return bool(self._client.set(self._key(key), b"1", nx=True, px=self._ttl_ms))

    def forget(self, key: str) -> None:
        with failing_closed(_STORE):
            self._client.delete(self._key(key))


class AsyncRedisEventLedger(_LedgerKeys):
    """:class:`~pasarela.transfers.webhook_dedup.AsyncEventLedger` on a ``redis.asyncio.Redis`` (or RedisCluster)."""

    async def claim(self, key: str) -> bool:
        with failing_closed(_STORE):
            return bool(await self._client.set(self._key(key), b"1", nx=True, px=self._ttl_ms))

    async def forget(self, key: str) -> None:
        with failing_closed(_STORE):
            await self._client.delete(self._key(key))
