"""Webhook deduplication on Redis, shared by every web node and worker (extra ``pasarela[redis]``).

    receiver = TransferWebhookReceiver(on_event, secret=..., ledger=RedisEventLedger(redis.Redis.from_url(url)))

The rules are those of :mod:`.webhook_dedup`. One hash per transaction, ``<prefix><transaction>``, holds
the lease (``lease``: the token of the delivery holding it, ``lease_until``: Redis's clock in ms), one
``handled:<status>`` field per event handled (the token of the delivery that handled it) and ``final``,
the first final status handled. Claim, confirm and release are each one Lua script on that one key:
Redis runs each atomically (two nodes receiving the same delivery at once get different answers), a
Redis Cluster needs no hash tag, and each gives the same answer when redis-py re-sends it after a
timeout although Redis had run it (the claim finds its own token; confirm and release compare tokens).

The hash expires ``ttl`` seconds after the transaction's last claim or confirmation (default 7 days,
longer than the service keeps redelivering); a lease ends ``lease`` seconds after its claim (default
60), so a process that died while handling frees the transaction by then.

When Redis cannot be reached, :class:`~pasarela.errors.StoreUnavailableError` is raised: the event is not
handed over, the receiver answers 503 and the service delivers it again later.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .._redis_store import check_prefix, failing_closed, milliseconds, seconds
from ..errors import ConfigurationError
from .webhook_dedup import DEFAULT_LEASE, DEFAULT_TTL, Claim, EventKey

__all__ = ["AsyncRedisEventLedger", "RedisEventLedger"]

_STORE = "webhook ledger (Redis)"
_LONGEST_READABLE_KEY = 200

# KEYS: the transaction. ARGV: status, token, lease in ms, ttl in ms. The checks in SeenEvents's order.
_CLAIM = """
local held = redis.call('HMGET', KEYS[1], 'lease', 'lease_until', 'handled:' .. ARGV[1], 'final')
if held[1] == ARGV[2] then return 'claimed' end
if held[3] then return 'handled' end
if held[4] then return 'superseded' end
local clock = redis.call('TIME')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
if held[1] and tonumber(held[2]) > now then return 'in progress' end
redis.call('HSET', KEYS[1], 'lease', ARGV[2], 'lease_until', now + tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 'claimed'
"""

# KEYS: the transaction. ARGV: status, token, '1' when the status is final, ttl in ms.
_CONFIRM = """
redis.call('HSETNX', KEYS[1], 'handled:' .. ARGV[1], ARGV[2])
if ARGV[3] == '1' then redis.call('HSETNX', KEYS[1], 'final', ARGV[1]) end
if redis.call('HGET', KEYS[1], 'lease') == ARGV[2] then redis.call('HDEL', KEYS[1], 'lease', 'lease_until') end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
"""

# KEYS: the transaction. ARGV: token.
_RELEASE = """
if redis.call('HGET', KEYS[1], 'lease') == ARGV[1] then redis.call('HDEL', KEYS[1], 'lease', 'lease_until') end
return 1
"""


class _LedgerScripts:
    def __init__(self, client: Any, *, prefix: str = "pasarela:webhook:", ttl: float = DEFAULT_TTL,
                 lease: float = DEFAULT_LEASE) -> None:
        self._client = client
        self._prefix = check_prefix(client, prefix, one_slot=False)
        self._ttl = seconds(ttl, "ttl")
        if seconds(lease, "lease") > self._ttl:
            raise ConfigurationError("lease must not be longer than ttl")
        self._ttl_ms, self._lease_ms = milliseconds(self._ttl), milliseconds(lease)
        self._claim = client.register_script(_CLAIM)
        self._confirm = client.register_script(_CONFIRM)
        self._release = client.register_script(_RELEASE)

    @property
    def ttl(self) -> float:
        return self._ttl

    def _key(self, event: EventKey) -> list[str]:
        # Transactions come from the webhook body: a long one is hashed so key names stay small.
        transaction = event.transaction
        if len(transaction) > _LONGEST_READABLE_KEY:
            transaction = "sha256:" + hashlib.sha256(transaction.encode("utf-8", "surrogatepass")).hexdigest()
        return [self._prefix + transaction]

    def _claim_args(self, event: EventKey, token: str) -> list[Any]:
        return [event.status, token, self._lease_ms, self._ttl_ms]

    def _confirm_args(self, event: EventKey, token: str) -> list[Any]:
        return [event.status, token, "1" if event.final else "0", self._ttl_ms]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


def _claimed(answer: Any) -> Claim:
    return Claim(answer.decode("ascii") if isinstance(answer, bytes) else answer)


class RedisEventLedger(_LedgerScripts):
    """:class:`~pasarela.transfers.webhook_dedup.EventLedger` on a ``redis.Redis`` (or RedisCluster)."""

    def claim(self, event: EventKey, token: str) -> Claim:
        with failing_closed(_STORE):
            return _claimed(self._claim(keys=self._key(event), args=self._claim_args(event, token)))

    def confirm(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            self._confirm(keys=self._key(event), args=self._confirm_args(event, token))

    def release(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            self._release(keys=self._key(event), args=[token])


class AsyncRedisEventLedger(_LedgerScripts):
    """:class:`~pasarela.transfers.webhook_dedup.AsyncEventLedger` on a ``redis.asyncio.Redis`` (or RedisCluster)."""

    async def claim(self, event: EventKey, token: str) -> Claim:
        with failing_closed(_STORE):
            return _claimed(await self._claim(keys=self._key(event), args=self._claim_args(event, token)))

    async def confirm(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            await self._confirm(keys=self._key(event), args=self._confirm_args(event, token))

    async def release(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            await self._release(keys=self._key(event), args=[token])
