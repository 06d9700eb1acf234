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

When Redis cannot be reached, :class:`~pasarela.errors.StoreUnavailableError` is raised: ``init`` is not
sent (no transfer can start unguarded); a release that fails leaves the order reserved until it expires
or is released again.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Union

from .._redis_store import attempt_token, check_prefix, failing_closed, milliseconds, seconds
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

# KEYS: order, token index. ARGV: order id, token, reserved_at, lifetime in ms, this reservation's claim.
# An order already held is refused, unless this very reservation holds it (its first try, re-sent by redis-py).
_RESERVE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'claim') == ARGV[5] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'token', ARGV[2], 'confirmed', '0', 'reserved_at', ARGV[3], 'claim', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[4])
return 1
"""

# KEYS: order, reference index. ARGV: order id, reference ('' when the answer had none).
# The reference index lives exactly as long as the order.
_CONFIRM = """
local lifetime = redis.call('PTTL', KEYS[1])
if lifetime < 0 then return 0 end
redis.call('HSET', KEYS[1], 'confirmed', '1')
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'transaction_reference', ARGV[2])
  redis.call('SET', KEYS[2], ARGV[1], 'PX', lifetime)
end
return 1
"""

# KEYS: order. ARGV: prefix, order id.
_RELEASE = _DROP_ORDER + "return drop_order(ARGV[2])"

# KEYS: token index, reference index. ARGV: prefix, token, reference ('' for one not given).
# Returns the order released, or nil. An index is trusted only when the order still holds that transfer.
_RELEASE_TRANSFER = _DROP_ORDER + """
local function owner(index, value, field)
  if value == '' then return false end
  local order = redis.call('GET', KEYS[index])
  if order and redis.call('HGET', ARGV[1] .. 'order:' .. order, field) == value then return order end
  return false
end
local order = owner(1, ARGV[2], 'token') or owner(2, ARGV[3], 'transaction_reference')
if not order then return false end
drop_order(order)
return order
"""

Call = tuple[Any, list[str], list[Union[str, float, int]]]


class _GuardScripts:
    def __init__(self, client: Any, *, prefix: str = "pasarela:{pending}:", ttl: float = 86400.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._prefix = check_prefix(client, prefix, one_slot=True)
        self._ttl_ms = milliseconds(seconds(ttl, "ttl"))
        self._clock = clock
        self._reserve = client.register_script(_RESERVE)
        self._confirm = client.register_script(_CONFIRM)
        self._release = client.register_script(_RELEASE)
        self._release_transfer = client.register_script(_RELEASE_TRANSFER)

    def _order_key(self, order_id: str) -> str:
        return self._prefix + "order:" + order_id

    def _reserve_call(self, order_id: str, token: str) -> Call:
        keys = [self._order_key(order_id), self._prefix + "token:" + token]
        return self._reserve, keys, [order_id, token, repr(self._clock()), self._ttl_ms, attempt_token()]

    def _confirm_call(self, order_id: str, transaction_reference: Optional[str]) -> Call:
        reference = transaction_reference or ""
        return self._confirm, [self._order_key(order_id), self._prefix + "ref:" + reference], [order_id, reference]

    def _release_call(self, order_id: str) -> Call:
        return self._release, [self._order_key(order_id)], [self._prefix, order_id]

    def _release_transfer_call(self, token: Optional[str], transaction_reference: Optional[str]) -> Call:
        token, reference = token or "", transaction_reference or ""
        keys = [self._prefix + "token:" + token, self._prefix + "ref:" + reference]
        return self._release_transfer, keys, [self._prefix, token, reference]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


def _text(value: Union[bytes, str]) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _reserved(order_id: str, reserved: object) -> None:
    if not reserved:
        raise PendingTransferError(order_id)


def _released(order: Optional[Union[bytes, str]]) -> Optional[str]:
    return None if order is None else _text(order)


def _pending(order_id: str, fields: dict[Any, Any]) -> Optional[PendingTransfer]:
    if not fields:
        return None
    row = {_text(name): _text(value) for name, value in fields.items()}
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

    def confirm(self, order_id: str, transaction_reference: Optional[str]) -> None:
        _run(self._confirm_call(order_id, transaction_reference))

    def release(self, order_id: str) -> None:
        _run(self._release_call(order_id))

    def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        return _released(_run(self._release_transfer_call(token, transaction_reference)))

    def pending(self, order_id: str) -> Optional[PendingTransfer]:
        """The order's transfer that is not final yet, if any."""
        with failing_closed(_STORE):
            return _pending(order_id, self._client.hgetall(self._order_key(order_id)))


class AsyncRedisPendingTransfers(_GuardScripts):
    """:class:`~pasarela.transfers.pending.AsyncTransferGuard` on a ``redis.asyncio.Redis`` (or RedisCluster)."""

    async def reserve(self, order_id: str, token: str) -> None:
        _reserved(order_id, await _run_async(self._reserve_call(order_id, token)))

    async def confirm(self, order_id: str, transaction_reference: Optional[str]) -> None:
        await _run_async(self._confirm_call(order_id, transaction_reference))

    async def release(self, order_id: str) -> None:
        await _run_async(self._release_call(order_id))

    async def release_transfer(
        self, *, token: Optional[str] = None, transaction_reference: Optional[str] = None
    ) -> Optional[str]:
        return _released(await _run_async(self._release_transfer_call(token, transaction_reference)))

    async def pending(self, order_id: str) -> Optional[PendingTransfer]:
        """The order's transfer that is not final yet, if any."""
        with failing_closed(_STORE):
            return _pending(order_id, await self._client.hgetall(self._order_key(order_id)))

