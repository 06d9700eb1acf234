"""The replay store on Redis, shared by every gateway node and worker (extra ``pasarela[redis]``).

    import redis
    from pasarela.terminal.replay_redis import RedisReplayStore

    store = RedisReplayStore(redis.Redis.from_url("redis://replay.internal:6379/0", socket_timeout=0.5))
    app = TerminalAuthMiddleware(app, terminal, replay_store=AsyncRedisReplayStore(redis.asyncio.Redis(...)))

One script call checks the claims of the requests arriving together (the asyncio store: one command and one round
trip for them all; the sync store, one call each): a Lua script that Redis runs atomically, so of any number of
nodes presenting one signature exactly one gets the key ``<prefix>{xx}s:<signature>`` set (first use) and every
other is refused, in the same call as in another. Each claim writes a token random and new for each call, and its
place in it: when redis-py re-sends the call after a timeout although Redis had run it, the retry finds its own
tokens and each request is still the first use, not a replay of itself. The key expires by itself when the
request's window has passed on this node's clock, plus ``clock_skew`` seconds so that a node whose clock runs
behind still finds it. The lifetime is relative (PX), so Redis's own clock does not matter.

The same script reads the memory marker ``<prefix>{xx}memory`` (see :mod:`pasarela._redis_store`). When
Redis lost its memory (a restart without persistence, FLUSHALL, an eviction), the signatures of the last
window are gone and any of them could be replayed: a request signed before the memory's beginning plus
``tolerance + clock_skew`` seconds may have been accepted before, so it is refused with
:class:`~pasarela.errors.StoreUnavailableError` ("memory lost"; 503 from the middleware: the terminal signs
again with a fresh timestamp); later requests are judged as usual. The store reads when a request was signed
from ``expires_at``, its timestamp plus ``tolerance`` as the verifier passes it: ``tolerance`` must be at least
the verifier's (:class:`~pasarela.terminal.replay.Verifier` checks it). :meth:`declare_memory_complete` tells
the store that Redis lost nothing (a new Redis, before its first request): nothing is refused for it.
``{xx}`` is one of 256 buckets of the signature, a Redis Cluster hash tag: each bucket's keys and its
marker share a slot, and the buckets spread over the cluster.

When Redis cannot be reached or refuses the command, :class:`~pasarela.errors.StoreUnavailableError` is
raised: the request is refused (HTTP 503 from the ASGI middleware), never accepted unchecked.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from typing import Any, Callable

from .._loop_batches import LoopBatches
from .._redis_store import (
    MEMORY_BEGAN,
    attempt_token,
    bucket_markers,
    bucket_tag,
    check_prefix,
    failing_closed,
    is_cluster,
    is_memory_lost,
    key_slot,
    memory_lost,
    milliseconds,
    noticed_loss,
    seconds,
    setting_markers,
    unix_ms,
)
from .inbound import DEFAULT_TOLERANCE

__all__ = ["AsyncRedisReplayStore", "RedisReplayStore"]

_STORE = "replay store (Redis)"


# One call checks a batch of claims, in order, as if each were its own call. KEYS: each claim's bucket marker and
# signature key (claim i: KEYS[2i - 1], KEYS[2i]). ARGV: the call's token, now (ms), clock_skew (ms), the margin
# (ms): 2 * tolerance + clock_skew; then each claim's window end (ms). A claim's key holds the call's token and its
# place in the call: a call redis-py re-sends finds its own claims, and a second claim of one signature in the same
# call finds the first one's. One answer per claim: 1, first use (or this very claim, re-sent); 0, a replay;
# {'memory lost', began}, cannot tell. The key expires when the window has passed on the caller's clock, plus the skew.
_FIRST_USES = MEMORY_BEGAN + """
local token, now, skew, margin = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local answers = {}
for i = 1, #KEYS / 2 do
  local key, mine, ends = KEYS[2 * i], token .. ':' .. i, tonumber(ARGV[4 + i])
  local began = memory_began(KEYS[2 * i - 1], ARGV[2])
  local held = redis.call('GET', key)
  if held then
    answers[i] = held == mine and 1 or 0
  elseif ends <= began + margin then
    answers[i] = {'memory lost', began}
  else
    redis.call('SET', key, mine, 'PX', math.max(math.max(ends - now, 0) + skew, 1))
    answers[i] = 1
  end
end
return answers
"""
MOST_CLAIMS_PER_CALL = 64
"""The asyncio store's bound on one script call: Redis runs a script alone, and 64 claims take it some 0.3 ms."""
Claim = tuple[str, float]
"""A signature and the end of its request's window (``expires_at``)."""


class _ReplayKeys:
    def __init__(self, client: Any, *, prefix: str = "pasarela:replay:", clock_skew: float = 5.0,
                 tolerance: float = DEFAULT_TOLERANCE, clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._prefix = check_prefix(client, prefix, one_slot=False)
        skew = seconds(clock_skew, "clock_skew", zero_ok=True)
        self._skew_ms = math.ceil(skew * 1000)
        self._tolerance = seconds(tolerance, "tolerance")
        # A request accepted before the loss had its window begin before it (on a clock up to clock_skew off):
        # it ends before the memory's beginning + 2 * tolerance + clock_skew.
        self._margin_ms = milliseconds(2 * self._tolerance + skew)
        self._clock = clock
        self._first_uses = client.register_script(_FIRST_USES)
        self._markers = bucket_markers(self._prefix)

    @property
    def tolerance(self) -> float:
        """The longest a request's timestamp may be from the clock: how far back a lost memory reaches."""
        return self._tolerance

    def _call(self, claims: Sequence[Claim]) -> tuple[list[str], list[Any]]:
        """The keys and arguments of the script call checking claims (all in one slot on a Redis Cluster)."""
        keys: list[str] = []
        ends: list[int] = []
        for signature, expires_at in claims:
            bucket = self._prefix + bucket_tag(signature)
            keys += (bucket + "memory", bucket + "s:" + signature)
            ends.append(math.ceil(expires_at * 1000))  # (rounded up: the key outlives the window)
        return keys, [attempt_token(), unix_ms(self._clock()), self._skew_ms, self._margin_ms, *ends]

    def _setting_markers(self, answers: Sequence[Any], args: list[Any]) -> Any:
        """After a call that noticed a loss, the pipeline telling the other buckets (once is enough); else None."""
        if not any(noticed_loss(answer, args[1]) for answer in answers):
            return None
        return setting_markers(self._client, self._markers, unix_ms(self._clock()), missing_only=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


def _first(answer: Any) -> bool:
    if is_memory_lost(answer):
        raise memory_lost(_STORE, answer, "a request signed before then plus the tolerance and clock skew may have "
                                          "been accepted already: refused, sign it again later")
    return bool(answer)


class RedisReplayStore(_ReplayKeys):
    """:class:`~pasarela.terminal.replay.ReplayStore` on a ``redis.Redis`` (or ``redis.cluster.RedisCluster``).

    One script call per claim: a synchronous caller waits for its own answer, so there is nothing to batch."""

    def first_use(self, signature: str, expires_at: float) -> bool:
        keys, args = self._call([(signature, expires_at)])
        with failing_closed(_STORE):
            answers = self._first_uses(keys=keys, args=args)
            spreading = self._setting_markers(answers, args)
            if spreading is not None:
                spreading.execute()
        return _first(answers[0])

    def declare_memory_complete(self) -> None:
        """Redis holds every signature this store recorded (a new Redis, or one that lost nothing): judge by it
        from now on, refusing nothing for a lost memory. Wrong after a loss: replays of the last window pass."""
        with failing_closed(_STORE):
            setting_markers(self._client, self._markers, 0, missing_only=False).execute()


class AsyncRedisReplayStore(_ReplayKeys):
    """:class:`~pasarela.terminal.replay.AsyncReplayStore` on a ``redis.asyncio.Redis`` (or its RedisCluster).

    The claims made in one turn of the event loop go to Redis as one script call over all their keys
    (:mod:`pasarela._loop_batches`; at most :data:`MOST_CLAIMS_PER_CALL`), and while one call is on its way the
    next gathers: a server's concurrent requests share one command, one round trip and one connection. Redis runs
    the claims of a call in order, each exactly as a call of its own would be run. Every claim gets its own answer;
    a call that fails (Redis unreachable, a timeout after redis-py's retries, an error inside the script) fails
    each of its claims closed (:class:`~pasarela.errors.StoreUnavailableError`). On a Redis Cluster a batch makes
    one call per hash slot (the ``{xx}`` buckets), side by side, each claim answered by its own slot's call.
    """

    def __init__(self, client: Any, **options: Any) -> None:
        super().__init__(client, **options)
        self._batches: LoopBatches[Claim, Any] = LoopBatches(self._send, most=MOST_CLAIMS_PER_CALL)
        self._cluster = is_cluster(client)

    async def first_use(self, signature: str, expires_at: float) -> bool:
        with failing_closed(_STORE):
            return _first(await self._batches.call((signature, expires_at)))

    async def _send(self, claims: list[Claim]) -> list[Any]:
        """The script's answer for each claim, or for those of a call that failed, its exception."""
        if not self._cluster:
            return await self._checked(claims)
        by_slot: dict[int, list[int]] = {}
        for index, (signature, _) in enumerate(claims):
            by_slot.setdefault(key_slot((self._prefix + bucket_tag(signature)).encode()), []).append(index)
        slots = list(by_slot.values())
        calls = await asyncio.gather(*(self._checked([claims[i] for i in slot]) for slot in slots),
                                     return_exceptions=True)
        answers: list[Any] = [None] * len(claims)
        for slot, answered in zip(slots, calls):
            for position, index in enumerate(slot):
                answers[index] = answered if isinstance(answered, BaseException) else answered[position]
        return answers

    async def _checked(self, claims: list[Claim]) -> list[Any]:
        """One script call for claims (loaded first where Redis lacks it: redis-py's Script does that)."""
        keys, args = self._call(claims)
        answers = list(await self._first_uses(keys=keys, args=args))
        spreading = self._setting_markers(answers, args)
        if spreading is not None:
            await spreading.execute()
        return answers

    async def declare_memory_complete(self) -> None:
        """As :meth:`RedisReplayStore.declare_memory_complete`."""
        with failing_closed(_STORE):
            await setting_markers(self._client, self._markers, 0, missing_only=False).execute()
