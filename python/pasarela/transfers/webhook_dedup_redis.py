"""Webhook deduplication on Redis, shared by every web node and worker (extra ``pasarela[redis]``).

    receiver = TransferWebhookReceiver(on_event, secret=..., ledger=RedisEventLedger(redis.Redis.from_url(url)))

The rules are those of :mod:`.webhook_dedup`. One hash per transaction, ``<prefix>{xx}t:<transaction>``, holds
the lease (``lease``: the token of the delivery holding it, ``lease_until``: Redis's clock in ms), one
``handled:<status>`` field per event handled (the token of the delivery that handled it) and ``final``,
the first final status handled. Claim, confirm and release are each one Lua script on that one key:
Redis runs each atomically (two nodes receiving the same delivery at once get different answers), and
each gives the same answer when redis-py re-sends it after a timeout although Redis had run it (the claim
finds its own token; confirm and release compare tokens).

The claim also reads the memory marker ``<prefix>{xx}memory`` (see :mod:`pasarela._redis_store`). When Redis
lost its memory (a restart without persistence, FLUSHALL, an eviction) the records of handled events are
gone: a delivery that any node can have received before the memory began (its ``earliest_receipt``, the
signed ``X-Kushki-Id`` less the receiver's ``max_ahead``, earlier than that beginning plus ``clock_skew``)
may have been handled, and its claim raises :class:`~pasarela.errors.StoreUnavailableError` ("memory
lost": the receiver answers 503, never 200 "duplicate" nor the handler a second time); a delivery that is
not dated is refused so until ``ttl`` has passed. Later deliveries are handled as usual. ``{xx}`` is one of
256 buckets of the transaction, a Redis Cluster hash tag: each bucket's keys and its marker share a slot.
:meth:`declare_memory_complete` tells the ledger that Redis lost nothing (a new Redis).

The hash expires ``ttl`` seconds after the transaction's last claim or confirmation (default 7 days,
longer than the service keeps redelivering); a lease ends ``lease`` seconds after its claim (default
60), so a process that died while handling frees the transaction by then.

When Redis cannot be reached, :class:`~pasarela.errors.StoreUnavailableError` is raised: the event is not
handed over, the receiver answers 503 and the service delivers it again later.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Callable, Optional

from .._redis_store import (
    MEMORY_BEGAN,
    bucket_markers,
    bucket_tag,
    check_prefix,
    encoded,
    failing_closed,
    milliseconds,
    noticed_loss,
    refuse_if_memory_lost,
    seconds,
    setting_markers,
    unix_ms,
)
from ..errors import ConfigurationError
from .webhook_dedup import DEFAULT_LEASE, DEFAULT_TTL, Claim, EventKey

__all__ = ["AsyncRedisEventLedger", "RedisEventLedger"]

_STORE = "webhook ledger (Redis)"
_LONGEST_READABLE_KEY = 200

# KEYS: the bucket's marker, the transaction. ARGV: status, token, lease in ms, ttl in ms, now (ms, the
# caller's clock), the delivery's earliest receipt (ms; '' when not dated), clock_skew in ms. The checks in
# SeenEvents's order; before a lease is given, whether the event may have been handled before the memory began.
_CLAIM = MEMORY_BEGAN + """
local began = memory_began(KEYS[1], ARGV[5])
local held = redis.call('HMGET', KEYS[2], 'lease', 'lease_until', 'handled:' .. ARGV[1], 'final')
if held[1] == ARGV[2] then return 'claimed' end
if held[3] then return 'handled' end
if held[4] then return 'superseded' end
local clock = redis.call('TIME')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
if held[1] and tonumber(held[2]) > now then return 'in progress' end
local forgotten_until = began + tonumber(ARGV[7])
if ARGV[6] == '' then
  if tonumber(ARGV[5]) < forgotten_until + tonumber(ARGV[4]) then return {'memory lost', began} end
elseif tonumber(ARGV[6]) < forgotten_until then return {'memory lost', began} end
redis.call('HSET', KEYS[2], 'lease', ARGV[2], 'lease_until', now + tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[2], ARGV[4])
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
_FORGOTTEN = "a delivery received before then (or, not dated, within the ttl) may have been handled: refused"


class _LedgerScripts:
    def __init__(self, client: Any, *, prefix: str = "pasarela:webhook:", ttl: float = DEFAULT_TTL,
                 lease: float = DEFAULT_LEASE, clock_skew: float = 5.0, clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._skew_ms = milliseconds(seconds(clock_skew, "clock_skew", zero_ok=True))
        self._clock = clock
        self._prefix = check_prefix(client, prefix, one_slot=False)
        self._ttl = seconds(ttl, "ttl")
        if seconds(lease, "lease") > self._ttl:
            raise ConfigurationError("lease must not be longer than ttl")
        self._ttl_ms, self._lease_ms = milliseconds(self._ttl), milliseconds(lease)
        self._claim = client.register_script(_CLAIM)
        self._confirm = client.register_script(_CONFIRM)
        self._release = client.register_script(_RELEASE)
        self._markers = bucket_markers(self._prefix)

    @property
    def ttl(self) -> float:
        return self._ttl

    def _bucket(self, event: EventKey) -> tuple[str, str]:
        """The transaction's bucket (the prefix and its hash tag) and its name in keys."""
        transaction = event.transaction
        if len(transaction) > _LONGEST_READABLE_KEY:  # from the webhook body: a long one is hashed, keys stay small
            transaction = "sha256:" + hashlib.sha256(transaction.encode("utf-8", "surrogatepass")).hexdigest()
        return self._prefix + bucket_tag(transaction), transaction

    def _key(self, event: EventKey) -> list[bytes]:
        bucket, transaction = self._bucket(event)
        return [encoded(bucket + "t:" + transaction)]

    def _claim_keys(self, event: EventKey) -> list[bytes]:
        bucket, transaction = self._bucket(event)
        return [encoded(bucket + "memory"), encoded(bucket + "t:" + transaction)]

    def _claim_args(self, event: EventKey, token: str, earliest_receipt: Optional[float]) -> list[Any]:
        earliest = "" if earliest_receipt is None else unix_ms(earliest_receipt)
        return [encoded(event.status), token, self._lease_ms, self._ttl_ms, unix_ms(self._clock()), earliest,
                self._skew_ms]

    def _setting_markers(self, answer: Any, args: list[Any]) -> Any:
        """After the claim that noticed a loss, the pipeline telling the other buckets; else None."""
        if not noticed_loss(answer, args[4]):
            return None
        return setting_markers(self._client, self._markers, unix_ms(self._clock()), missing_only=True)

    def _confirm_args(self, event: EventKey, token: str) -> list[Any]:
        return [encoded(event.status), token, "1" if event.final else "0", self._ttl_ms]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


def _claimed(answer: Any) -> Claim:
    refuse_if_memory_lost(_STORE, answer, _FORGOTTEN)
    return Claim(answer.decode("ascii") if isinstance(answer, bytes) else answer)


class RedisEventLedger(_LedgerScripts):
    """:class:`~pasarela.transfers.webhook_dedup.EventLedger` on a ``redis.Redis`` (or RedisCluster)."""

    def claim(self, event: EventKey, token: str, *, earliest_receipt: Optional[float] = None) -> Claim:
        keys, args = self._claim_keys(event), self._claim_args(event, token, earliest_receipt)
        with failing_closed(_STORE):
            answer = self._claim(keys=keys, args=args)
            spreading = self._setting_markers(answer, args)
            if spreading is not None:
                spreading.execute()
        return _claimed(answer)

    def confirm(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            self._confirm(keys=self._key(event), args=self._confirm_args(event, token))

    def release(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            self._release(keys=self._key(event), args=[token])

    def declare_memory_complete(self) -> None:
        """Redis holds every handled event this ledger recorded (a new Redis, or one that lost nothing): judge by
        it from now on. Wrong after a loss: an event handled before it would be handled again."""
        with failing_closed(_STORE):
            setting_markers(self._client, self._markers, 0, missing_only=False).execute()


class AsyncRedisEventLedger(_LedgerScripts):
    """:class:`~pasarela.transfers.webhook_dedup.AsyncEventLedger` on a ``redis.asyncio.Redis`` (or RedisCluster)."""

    async def claim(self, event: EventKey, token: str, *, earliest_receipt: Optional[float] = None) -> Claim:
        keys, args = self._claim_keys(event), self._claim_args(event, token, earliest_receipt)
        with failing_closed(_STORE):
            answer = await self._claim(keys=keys, args=args)
            spreading = self._setting_markers(answer, args)
            if spreading is not None:
                await spreading.execute()
        return _claimed(answer)

    async def confirm(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            await self._confirm(keys=self._key(event), args=self._confirm_args(event, token))

    async def release(self, event: EventKey, token: str) -> None:
        with failing_closed(_STORE):
            await self._release(keys=self._key(event), args=[token])

    async def declare_memory_complete(self) -> None:
        """As :meth:`RedisEventLedger.declare_memory_complete`."""
        with failing_closed(_STORE):
            await setting_markers(self._client, self._markers, 0, missing_only=False).execute()
