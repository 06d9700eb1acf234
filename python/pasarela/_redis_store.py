"""What the Redis stores share: importing redis-py with a clear message, failing closed on its errors,
the token that makes a claim survive redis-py's own retries, the memory marker that tells a claim when
Redis lost what it held, and the checks on key prefixes and lifetimes.

The memory marker: a Redis that restarts without persistence, or is flushed, forgets every claim; a store
that went on judging by what is left would accept a replay, a second transfer or a handled event again.
Each store keeps a key with no expiry, ``<...>memory``, holding the time (the caller's clock, Unix
milliseconds) from which Redis remembers what the store wrote. Each claim's script reads it in the same
round trip: when it is missing, Redis lost its memory at about that moment; the script writes the current
time and the store refuses (:class:`~pasarela.errors.StoreUnavailableError`) exactly what it can no
longer judge. ``0`` means "since always": what an operator's ``declare_memory_complete()`` writes.

Imported only by the ``*_redis`` modules, so ``import pasarela`` never imports redis.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from . import _telemetry
from .errors import ConfigurationError, StoreUnavailableError

try:
    import redis
    import redis.asyncio.cluster
    import redis.cluster
    from redis.crc import key_slot
except ImportError as exc:  # pragma: no cover - the tests install redis
    raise ImportError('pasarela\'s Redis stores need the redis package: pip install "pasarela[redis]"') from exc

__all__ = ["BUCKETS", "FAILURES", "MEMORY_BEGAN", "MEMORY_LOST", "attempt_token", "bucket_markers", "bucket_of",
           "bucket_prefixes", "bucket_tag", "check_prefix", "encoded", "failing_closed", "is_cluster", "is_memory_lost",
           "key_slot", "milliseconds", "noticed_loss", "redis", "refuse_if_memory_lost", "seconds", "setting_markers",
           "unavailable", "unix_ms"]

_CLUSTER_CLIENTS = (redis.cluster.RedisCluster, redis.asyncio.cluster.RedisCluster)


FAILURES = (redis.RedisError, OSError, asyncio.TimeoutError)
"""What reaching or using Redis raises when it fails: each is turned into StoreUnavailableError (unavailable)."""


def unavailable(store: str, exc: BaseException) -> StoreUnavailableError:
    """The refusal for a failure to reach or use Redis (one of FAILURES); the caller raises it ``from None``, so
    that nothing of the connection leaks into logs beyond the failure's class and message."""
    _telemetry.store_error(store)
    return StoreUnavailableError(store, f"{type(exc).__name__}: {exc}")


@contextmanager
def failing_closed(store: str) -> Iterator[None]:
    """Turn any failure to reach or use Redis into StoreUnavailableError: the caller refuses, never lets through."""
    try:
        yield
    except FAILURES as exc:
        raise unavailable(store, exc) from None


def attempt_token() -> str:
    """A value unique to one claim, written with it (as redis-py's ``Lock`` writes its token).

    redis-py re-sends a command that timed out (``retry``, on timeouts too), although Redis may have run
    it: the retry then finds the key taken. Finding its own token there, the claim knows the key is its own
    and not someone else's.
    """
    return secrets.token_hex(16)


MEMORY_BEGAN = """
local function memory_began(marker, now)
  local began = redis.call('GET', marker)
  if began then return tonumber(began) end
  redis.call('SET', marker, now)
  return tonumber(now)
end
"""
"""Lua: when Redis's memory began (ms), from the marker; a missing marker is written with ``now`` (ms)."""

MEMORY_LOST = "memory lost"
"""What a script answers when it refuses for want of memory; the next value is the marker's time (ms)."""

BUCKETS = 256
"""Stores whose keys spread over a Redis Cluster's slots keep one marker per bucket, in the bucket's slot."""


def _tag(bucket: int) -> str:
    return f"{{{bucket:02x}}}"


def encoded(name: str) -> bytes:
    """``name`` as Redis gets it (UTF-8; lone surrogates as they come)."""
    return name.encode("utf-8", "surrogatepass")


def bucket_of(name: bytes) -> int:
    """The bucket (0 to BUCKETS - 1) of a name as encoded: bucket_prefixes(prefix)[bucket_of(...)] starts its keys."""
    return zlib.crc32(name) % BUCKETS


def bucket_tag(name: str) -> str:
    """``{xx}``: the hash tag of the bucket of ``name`` (its keys and their marker share one slot)."""
    return _tag(bucket_of(encoded(name)))


def bucket_prefixes(prefix: str) -> list[str]:
    """``prefix`` and each bucket's hash tag, by bucket: what the keys of a bucket begin with."""
    return [prefix + _tag(bucket) for bucket in range(BUCKETS)]


def bucket_markers(prefix: str) -> list[str]:
    """The marker of every bucket under ``prefix``."""
    return [start + "memory" for start in bucket_prefixes(prefix)]


def setting_markers(client: Any, markers: list[str], began_ms: int, *, missing_only: bool) -> Any:
    """A pipeline (not a transaction: on a Cluster the markers are on every node) writing the markers; the
    caller runs ``execute()``, or awaits it on an asyncio client. ``missing_only`` after a loss one claim
    noticed: the buckets that lost their marker too learn of it now rather than at their own next claim
    (which would refuse for the margin from then); a marker still there keeps its time."""
    pipeline = client.pipeline(transaction=False)
    for marker in markers:
        pipeline.set(marker, began_ms, nx=missing_only)
    return pipeline


def noticed_loss(answer: Any, now_ms: int) -> bool:
    """The script refused for a lost memory and wrote the marker itself (with this call's ``now``)."""
    return is_memory_lost(answer) and int(answer[1]) == now_ms


def unix_ms(moment: float) -> int:
    """A time for the scripts: Unix milliseconds, whole (Lua numbers hold them exactly)."""
    return math.floor(moment * 1000)


def refuse_if_memory_lost(store: str, answer: Any, what: str) -> None:
    """Refuse a claim the store can no longer judge: StoreUnavailableError when ``answer`` is the script's
    ``[MEMORY_LOST, ms]`` (``what`` says what may have happened since); any other answer passes."""
    if not is_memory_lost(answer):
        return
    began = datetime.fromtimestamp(int(answer[1]) / 1000, timezone.utc).isoformat(timespec="seconds")
    _telemetry.store_error(store)
    raise StoreUnavailableError(store, f"{MEMORY_LOST}: Redis remembers only since {began} "
                                        f"(restarted empty, flushed or evicted); {what}. {_IF_NEW}")


_IF_NEW = ("A new Redis, or one you know lost nothing: call the store's declare_memory_complete() once, before its "
           "first request (never at every start-up: that would hide a loss)")
"""What ends the refusals at once: a store meets a Redis it never used as one that lost its memory."""


def is_memory_lost(answer: Any) -> bool:
    return isinstance(answer, list) and len(answer) == 2 and answer[0] in (MEMORY_LOST, MEMORY_LOST.encode())


def seconds(value: float, what: str, *, zero_ok: bool = False) -> float:
    """A configured duration, checked: finite, positive (or zero when ``zero_ok``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not zero_ok):
        raise ConfigurationError(f"{what} must be a {'non-negative' if zero_ok else 'positive'} number of seconds")
    return float(value)


def milliseconds(duration: float) -> int:
    """A key lifetime for PX/PEXPIRE: whole milliseconds, rounded up, at least 1."""
    return max(1, math.ceil(duration * 1000))


def is_cluster(client: Any) -> bool:
    """Whether client is redis-py's Redis Cluster client (sync or asyncio)."""
    return isinstance(client, _CLUSTER_CLIENTS)


def check_prefix(client: Any, prefix: str, *, one_slot: bool) -> str:
    """The key prefix, checked; ``one_slot`` stores run Lua scripts over several keys, which a Redis
    Cluster accepts only when every key hashes to one slot: the prefix must then carry a ``{hash tag}``."""
    if not isinstance(prefix, str):
        raise ConfigurationError("prefix must be a str")
    if one_slot and is_cluster(client) and not _has_hash_tag(prefix):
        raise ConfigurationError("on a Redis Cluster the prefix needs a {hash tag} (e.g. 'pasarela:{pending}:') so "
                                 "that the keys one script touches share a slot")
    return prefix


def _has_hash_tag(prefix: str) -> bool:
    """Redis Cluster hashes only the part between the first '{' and the next '}', when that part is not empty."""
    opening = prefix.find("{")
    closing = prefix.find("}", opening + 1) if opening >= 0 else -1
    return closing > opening + 1
