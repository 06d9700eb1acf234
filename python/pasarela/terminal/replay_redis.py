"""The replay store on Redis, shared by every gateway node and worker (extra ``pasarela[redis]``).

    import redis
    from pasarela.terminal.replay_redis import RedisReplayStore

    store = RedisReplayStore(redis.Redis.from_url("redis://replay.internal:6379/0", socket_timeout=0.5))
    app = TerminalAuthMiddleware(app, terminal, replay_store=AsyncRedisReplayStore(redis.asyncio.Redis(...)))

One command per verified request, ``SET <prefix><signature> <token> NX GET PX <ms>`` (Redis 7.0 or later):
Redis runs it atomically, so of any number of nodes presenting one signature exactly one gets the key set
(first use) and every other is refused. ``<token>`` is random, new for each check: when redis-py re-sends
the command after a timeout although Redis had run it, the retry finds its own token (``GET`` returns
it) and the request is still the first use, not a replay of itself. The key expires by itself when the
request's window has passed on this node's clock, plus ``clock_skew`` seconds so that a node whose clock
runs behind still finds it. The lifetime is relative (PX), so Redis's own clock does not matter.

When Redis cannot be reached or refuses the command, :class:`~pasarela.errors.StoreUnavailableError` is
raised: the request is refused (HTTP 503 from the ASGI middleware), never accepted unchecked.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from .._redis_store import attempt_token, check_prefix, failing_closed, milliseconds, seconds

__all__ = ["AsyncRedisReplayStore", "RedisReplayStore"]

_STORE = "replay store (Redis)"


class _ReplayKeys:
    def __init__(self, client: Any, *, prefix: str = "pasarela:replay:", clock_skew: float = 5.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._prefix = check_prefix(client, prefix, one_slot=False)
        self._skew = seconds(clock_skew, "clock_skew", zero_ok=True)
        self._clock = clock

    def _set_args(self, signature: str, expires_at: float) -> tuple[str, str, dict[str, Any]]:
        """The key, this check's token, and the options of a SET that answers what the key held before."""
        lifetime = max(expires_at - self._clock(), 0.0) + self._skew
        return self._prefix + signature, attempt_token(), {"nx": True, "get": True, "px": milliseconds(lifetime)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


def _first(held_before: Any, token: str) -> bool:
    """First use when the key was free, or held by this very check (its own try, re-sent by redis-py)."""
    return held_before is None or held_before in (token, token.encode("ascii"))


class RedisReplayStore(_ReplayKeys):
    """:class:`~pasarela.terminal.replay.ReplayStore` on a ``redis.Redis`` (or ``redis.cluster.RedisCluster``)."""

    def first_use(self, signature: str, expires_at: float) -> bool:
        key, token, options = self._set_args(signature, expires_at)
        with failing_closed(_STORE):
            return _first(self._client.set(key, token, **options), token)


class AsyncRedisReplayStore(_ReplayKeys):
    """:class:`~pasarela.terminal.replay.AsyncReplayStore` on a ``redis.asyncio.Redis`` (or its RedisCluster)."""

    async def first_use(self, signature: str, expires_at: float) -> bool:
        key, token, options = self._set_args(signature, expires_at)
        with failing_closed(_STORE):
            return _first(await self._client.set(key, token, **options), token)
