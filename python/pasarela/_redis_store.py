"""What the Redis stores share: importing redis-py with a clear message, failing closed on its errors,
the token that makes a claim survive redis-py's own retries, and the checks on key prefixes and lifetimes.

Imported only by the ``*_redis`` modules, so ``import pasarela`` never imports redis.
"""

from __future__ import annotations

import asyncio
import math
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import ConfigurationError, StoreUnavailableError

try:
    import redis
    import redis.asyncio.cluster
    import redis.cluster
except ImportError as exc:  # pragma: no cover - the tests install redis
    raise ImportError('pasarela\'s Redis stores need the redis package: pip install "pasarela[redis]"') from exc

__all__ = ["attempt_token", "check_prefix", "failing_closed", "milliseconds", "redis", "seconds"]

_CLUSTER_CLIENTS = (redis.cluster.RedisCluster, redis.asyncio.cluster.RedisCluster)


@contextmanager
def failing_closed(store: str) -> Iterator[None]:
    """Turn any failure to reach or use Redis into StoreUnavailableError: the caller refuses, never lets through.

    ``from None``: the redis-py exception chain is dropped so nothing of the connection leaks into logs
    beyond its class and message.
    """
    try:
        yield
    except (redis.RedisError, OSError, asyncio.TimeoutError) as exc:
        raise StoreUnavailableError(store, f"{type(exc).__name__}: {exc}") from None


def attempt_token() -> str:
    """A value unique to one claim, written with it (as redis-py's ``Lock`` writes its token).

    redis-py re-sends a command that timed out (``retry``, on timeouts too), although Redis may have run
    it: the retry then finds the key taken. Finding its own token there, the claim knows the key is its own
    and not someone else's.
    """
    return secrets.token_hex(16)


def seconds(value: float, what: str, *, zero_ok: bool = False) -> float:
    """A configured duration, checked: finite, positive (or zero when ``zero_ok``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not zero_ok):
        raise ConfigurationError(f"{what} must be a {'non-negative' if zero_ok else 'positive'} number of seconds")
    return float(value)


def milliseconds(duration: float) -> int:
    """A key lifetime for PX/PEXPIRE: whole milliseconds, rounded up, at least 1."""
    return max(1, math.ceil(duration * 1000))


def check_prefix(client: Any, prefix: str, *, one_slot: bool) -> str:
    """The key prefix, checked; ``one_slot`` stores run Lua scripts over several keys, which a Redis
    Cluster accepts only when every key hashes to one slot: the prefix must then carry a ``{hash tag}``."""
    if not isinstance(prefix, str):
        raise ConfigurationError("prefix must be a str")
    if one_slot and isinstance(client, _CLUSTER_CLIENTS) and not _has_hash_tag(prefix):
        raise ConfigurationError("on a Redis Cluster the prefix needs a {hash tag} (e.g. 'pasarela:{pending}:') so "
                                 "that the keys one script touches share a slot")
    return prefix


def _has_hash_tag(prefix: str) -> bool:
    """Redis Cluster hashes only the part between the first '{' and the next '}', when that part is not empty."""
    opening = prefix.find("{")
    closing = prefix.find("}", opening + 1) if opening >= 0 else -1
    return closing > opening + 1
