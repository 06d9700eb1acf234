"""The pending-transfer guard of certification rule 6 on Redis, shared by every web node (extra ``pasarela[redis]``).

    guard = RedisPendingTransfers(redis.Redis.from_url("redis://guard.internal:6379/0", socket_timeout=0.5))
    client = TransferClient(config, pending=guard)
    receiver = TransferWebhookReceiver(on_event, secret=..., pending=guard)

Same rules as :class:`~pasarela.transfers.pending.PendingTransfers`: one transfer not yet final per order
across all nodes; released by a final status, a webhook, a cancel or :meth:`release`. Each operation is
one Lua script, so Redis runs it atomically (no read-then-write race between nodes), and each gives
the same verdict when redis-py re-sends it after a timeout although Redis had run it: a reservation
writes a token of its own (``claim``) and a retry that finds it owns the order; confirm and the
releases by transfer change nothing the second time.

- ``<prefix>order:<order id>``: a hash (token, transaction_reference, confirmed, reserved_at, claim);
- ``<prefix>token:<token>`` and ``<prefix>ref:<reference>``: the order id, so a webhook or a status
  query that knows only the token or the reference finds the order.

All three expire together ``ttl`` seconds after the reservation (default one day; make it longer than a
transfer can stay Initialized: a Colombia QR is void after 10 minutes, a Mexico CLABE reference may stay
payable longer): an order whose final result never arrives frees itself then.

The scripts derive the order key from an index inside Redis, so every key must live on one node: on a
Redis Cluster the prefix must carry a hash tag; the default ``pasarela:{pending}:`` does.

Each script also reads the memory marker ``<prefix>memory`` (see :mod:`pasarela._redis_store`). When Redis
lost its memory (a restart without persistence, FLUSHALL, an eviction) the reservations it held are gone
and any order may have a transfer still Initialized: until ``ttl + clock_skew`` seconds have passed since
the memory began (every lost reservation would have expired by then), :meth:`reserve` of an order Redis
holds nothing for raises :class:`~pasarela.errors.StoreUnavailableError` ("memory lost"; ``init`` is not
sent), never lets a second transfer start. An operator who knows that nothing pending was lost (a new
Redis, or every order whose transfer may still be Initialized checked and reserved again) ends this with
:meth:`declare_memory_complete`. :meth:`pending` answers the same way.

When Redis cannot be reached, :class:`~pasarela.errors.StoreUnavailableError` is raised: ``init`` is not
sent (no transfer can start unguarded); a release that fails leaves the order reserved until it expires
or is released again.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Union

from .._redis_store import (
    MEMORY_BEGAN,
    attempt_token,
    check_prefix,
    encoded,
    failing_closed,
    milliseconds,
    refuse_if_memory_lost,
    seconds,
    unix_ms,
)
from ..errors import PendingTransferError
from .pending import PendingTransfer

__all__ = ["AsyncRedisPendingTransfers", "RedisPendingTransfers"]

_STORE = "pending-transfer guard (Redis)"

# Shared by the two release scripts. ARGV[1] is the prefix. An index is dropped only while it still
# names this order (a token reused for another order keeps that order's index).
_DROP_ORDER = """
local function drop_index(key, order)
  if redis.call('GET', key) == order then redis.call('DEL', key) end
end
local function drop_order(order)
  local order_key = ARGV[1] .. 'order:' .. order
  local fields = redis.call('HMGET', order_key, 'token', 'transaction_reference')
  if fields[1] then drop_index(ARGV[1] .. 'token:' .. fields[1], order) end
  if fields[2] then drop_index(ARGV[1] .. 'ref:' .. fields[2], order) end
  return redis.call('DEL', order_key)
end
"""

# Every script's KEYS[1] is the memory marker and ARGV[2] now (ms): a lost memory is noted at once.
# KEYS: marker, order, token index. ARGV: order id, now (ms), token, reserved_at, lifetime in ms, this
# reservation's claim, how long after a loss an order may still be held unknown to Redis (ms).
# An order already held is refused, unless this very reservation holds it (its first try, re-sent by redis-py).
_RESERVE = MEMORY_BEGAN + """
local began = memory_began(KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then
  if redis.call('HGET', KEYS[2], 'claim') == ARGV[6] then return 1 end
  return 0
end
if tonumber(ARGV[2]) < began + tonumber(ARGV[7]) then return {'memory lost', began} end
redis.call('HSET', KEYS[2], 'token', ARGV[3], 'confirmed', '0', 'reserved_at', ARGV[4], 'claim', ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[5])
return 1
"""

# KEYS: marker, order, reference index. ARGV: order id, now (ms), token, reference ('' when the answer had
# none). Only the reservation of that token is confirmed. The reference index lives exactly as long as the order.
_CONFIRM = MEMORY_BEGAN + """
memory_began(KEYS[1], ARGV[2])
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[3] then return 0 end
local lifetime = redis.call('PTTL', KEYS[2])
if lifetime < 0 then return 0 end
redis.call('HSET', KEYS[2], 'confirmed', '1')
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[2], 'transaction_reference', ARGV[4])
  redis.call('SET', KEYS[3], ARGV[1], 'PX', lifetime)
end
return 1
"""

# KEYS: marker, order. ARGV: prefix, now (ms), order id.
_RELEASE = MEMORY_BEGAN + _DROP_ORDER + """
memory_began(KEYS[1], ARGV[2])
return drop_order(ARGV[3])
"""

# KEYS: marker, token index, reference index. ARGV: prefix, now (ms), token, reference ('' for one not given).
# Returns the order released, or nil. An index is trusted only when the order still holds that transfer.
_RELEASE_TRANSFER = MEMORY_BEGAN + _DROP_ORDER + """
memory_began(KEYS[1], ARGV[2])
local function owner(index, value, field)
  if value == '' then return false end
  local order = redis.call('GET', KEYS[index])
  if order and redis.call('HGET', ARGV[1] .. 'order:' .. order, field) == value then return order end
  return false
end
local order = owner(2, ARGV[3], 'token') or owner(3, ARGV[4], 'transaction_reference')
if not order then return false end
drop_order(order)
return order
"""

# KEYS: marker, order. ARGV: unused, now (ms), margin (ms) as for _RESERVE. The order's fields, flat.
_PENDING = MEMORY_BEGAN + """
local began = memory_began(KEYS[1], ARGV[2])
local fields = redis.call('HGETALL', KEYS[2])
if #fields == 0 and tonumber(ARGV[2]) < began + tonumber(ARGV[3]) then return {'memory lost', began} end
return fields
"""

Call = tuple[Any, list[bytes], list[Union[bytes, float, int]]]
_FORGOTTEN = "a transfer reserved before then may still be Initialized: refused until the guard's ttl has passed"


class _GuardScripts:
    def __init__(self, client: Any, *, prefix: str = "pasarela:{pending}:", ttl: float = 86400.0,
                 clock_skew: float = 5.0, clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._prefix = check_prefix(client, prefix, one_slot=True)
        self._ttl_ms = milliseconds(seconds(ttl, "ttl"))
        self._forgotten_ms = self._ttl_ms + milliseconds(seconds(clock_skew, "clock_skew", zero_ok=True))
        self._clock = clock
        self._reserve = client.register_script(_RESERVE)
        self._confirm = client.register_script(_CONFIRM)
        self._release = client.register_script(_RELEASE)
        self._release_transfer = client.register_script(_RELEASE_TRANSFER)
        self._pending = client.register_script(_PENDING)

    def _order_key(self, order_id: str) -> str:
        return self._prefix + "order:" + order_id

    def _marker(self) -> str:
        return self._prefix + "memory"

    def _call(self, script: Any, keys: list[str], first: Union[str, float, int], *rest: Union[str, float, int],
              now: Optional[float] = None) -> Call:
        """The script with the marker before ``keys`` and now (ms) after ``first``; names and values as Redis gets
        them (UTF-8, a lone surrogate from a webhook body or an answer as it comes: Redis is binary-safe)."""
        args = [first, unix_ms(self._clock() if now is None else now), *rest]
        return (script, [encoded(key) for key in (self._marker(), *keys)],
                [encoded(arg) if isinstance(arg, str) else arg for arg in args])

    def _reserve_call(self, order_id: str, token: str) -> Call:
        now = self._clock()
        return self._call(self._reserve, [self._order_key(order_id), self._prefix + "token:" + token], order_id,
                          token, repr(now), self._ttl_ms, attempt_token(), self._forgotten_ms, now=now)

    def _confirm_call(self, order_id: str, transaction_reference: Optional[str], token: str) -> Call:
        reference = transaction_reference or ""
        return self._call(self._confirm, [self._order_key(order_id), self._prefix + "ref:" + reference], order_id,
                          token, reference)

    def _release_call(self, order_id: str) -> Call:
        return self._call(self._release, [self._order_key(order_id)], self._prefix, order_id)

    def _release_transfer_call(self, token: Optional[str], transaction_reference: Optional[str]) -> Call:
        token, reference = token or "", transaction_reference or ""
        keys = [self._prefix + "token:" + token, self._prefix + "ref:" + reference]
        return self._call(self._release_transfer, keys, self._prefix, token, reference)

    def _pending_call(self, order_id: str) -> Call:
        return self._call(self._pending, [self._order_key(order_id)], "", self._forgotten_ms)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


def _text(value: Union[bytes, str]) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _known(answer: Any) -> Any:
    refuse_if_memory_lost(_STORE, answer, _FORGOTTEN)
    return answer


def _reserved(order_id: str, reserved: object) -> None:
    if not _known(reserved):
        raise PendingTransferError(order_id)


def _released(order: Optional[Union[bytes, str]]) -> Optional[str]:
    return None if order is None else _text(order)


def _pending(order_id: str, answer: Any) -> Optional[PendingTransfer]:
    fields = _known(answer)
    if not fields:
        return None
    row = {_text(fields[at]): _text(fields[at + 1]) for at in range(0, len(fields), 2)}
    return PendingTransfer(order_id, row["token"], row.get("transaction_reference"), row["confirmed"] == "1",
                           float(row["reserved_at"]))


def _run(call: Call) -> Any:
    script, keys, args = call
    with failing_closed(_STORE):
        return script(keys=keys, args=args)


async def _run_async(call: Call) -> Any:
    script, keys, args = call
    with failing_closed(_STORE):
        return await script(keys=keys, args=args)


class RedisPendingTransfers(_GuardScripts):
    """:class:`~pasarela.transfers.pending.TransferGuard` on a ``redis.Redis`` (or RedisCluster)."""

    def reserve(self, order_id: str, token: str) -> None:
        _reserved(order_id, _run(self._reserve_call(order_id, token)))

    def confirm(self, order_id: str, transaction_reference: Optional[str], *, token: str) -> None:
        _run(self._confirm_call(order_id, transaction_reference, token))

    def release(self, order_id: str) -> None:
        _run(self._release_call(order_id))

    def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        return _released(_run(self._release_transfer_call(token, transaction_reference)))

    def pending(self, order_id: str) -> Optional[PendingTransfer]:
        """The order's transfer that is not final yet, if any."""
        return _pending(order_id, _run(self._pending_call(order_id)))

    def declare_memory_complete(self) -> None:
        """No reservation was lost (a new Redis, or every order whose transfer may still be Initialized was
        checked by a status query and reserved again): :meth:`reserve` judges by what Redis holds from now on."""
        with failing_closed(_STORE):
            self._client.set(self._marker(), 0)


class AsyncRedisPendingTransfers(_GuardScripts):
    """:class:`~pasarela.transfers.pending.AsyncTransferGuard` on a ``redis.asyncio.Redis`` (or RedisCluster)."""

    async def reserve(self, order_id: str, token: str) -> None:
        _reserved(order_id, await _run_async(self._reserve_call(order_id, token)))

    async def confirm(self, order_id: str, transaction_reference: Optional[str], *, token: str) -> None:
        await _run_async(self._confirm_call(order_id, transaction_reference, token))

    async def release(self, order_id: str) -> None:
        await _run_async(self._release_call(order_id))

    async def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        return _released(await _run_async(self._release_transfer_call(token, transaction_reference)))

    async def pending(self, order_id: str) -> Optional[PendingTransfer]:
        """The order's transfer that is not final yet, if any."""
        return _pending(order_id, await _run_async(self._pending_call(order_id)))

    async def declare_memory_complete(self) -> None:
        """As :meth:`RedisPendingTransfers.declare_memory_complete`."""
        with failing_closed(_STORE):
            await self._client.set(self._marker(), 0)
