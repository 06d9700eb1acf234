"""The replay store on Redis, shared by every gateway node and worker (extra ``pasarela[redis]``).

    import redis
    from pasarela.terminal.replay_redis import RedisReplayStore

    store = RedisReplayStore(redis.Redis.from_url("redis://replay.internal:6379/0", socket_timeout=0.5))
    app = TerminalAuthMiddleware(app, terminal, replay_store=AsyncRedisReplayStore(redis.asyncio.Redis(...)))

One script call checks the claims of the requests arriving together (the asyncio store: one command and one round
trip for them all; the sync store, one call each): a Lua script that Redis runs atomically, so of any number of
nodes presenting one signature exactly one gets the key ``<prefix>{xx}s:<signature>`` set (first use) and every
other is refused, in the same call as in another. A first use writes a token random and new for each call: when
redis-py re-sends the call after a timeout although Redis had run it, the retry finds its own token and each request
is still the first use, not a replay of itself (a second claim of one signature in the same call, which would find
that token too, is known by the claim before it: a replay). The key expires by itself when the
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
from typing import Any, Callable, Union

from .._loop_batches import LoopBatches
from .._redis_store import (
    FAILURES,
    MEMORY_BEGAN,
    MEMORY_LOST,
    attempt_token,
    bucket_markers,
    bucket_of,
    bucket_prefixes,
    check_prefix,
    encoded,
    failing_closed,
    is_cluster,
    key_slot,
    milliseconds,
    noticed_loss,
    refuse_if_memory_lost,
    seconds,
    setting_markers,
    unavailable,
    unix_ms,
)
from .inbound import DEFAULT_TOLERANCE

__all__ = ["AsyncRedisReplayStore", "RedisReplayStore"]

_STORE = "replay store (Redis)"


# One call checks a batch of claims, in order, each exactly as a call of its own would. KEYS: the n claims' bucket
# markers, then their signature keys (claim i: KEYS[i], KEYS[n + i]). ARGV: the call's token, now (ms), the margin
# (ms): 2 * tolerance + clock_skew; then two words a claim: the end of its request's window (ms) and its key's
# lifetime (ms): until that end on the caller's clock, plus the skew (given as text: Redis takes 1 us a claim to
# write a Lua number as text). A first use sets its key to the call's token: the call redis-py re-sends finds its
# own claims, and a later claim of that signature in the same call is a replay. The answers, one word a claim: 1,
# first use (or this very claim, re-sent); 0, a replay; m<began>, cannot tell (memory lost). A first use costs Redis
# one SET (NX: the key is read only when it was there, or the memory lost).
_FIRST_USES = MEMORY_BEGAN + """
local token, margin = ARGV[1], tonumber(ARGV[3])
local n = #KEYS / 2
local markers = redis.call('MGET', unpack(KEYS, 1, n))
local function earlier(key, i)
  for j = n + 1, n + i - 1 do
    if KEYS[j] == key then return true end
  end
  return false
end
local answers, i = {}, 0
for ends, lifetime in string.gmatch(ARGV[4], '(%S+) (%S+)') do
  i = i + 1
  local key = KEYS[n + i]
  local began = tonumber(markers[i]) or memory_began(KEYS[i], ARGV[2])
  if tonumber(ends) > began + margin and redis.call('SET', key, token, 'NX', 'PX', lifetime) then
    answers[i] = '1'
  else
    local held = redis.call('GET', key)
    if held == token and not earlier(key, i) then
      answers[i] = '1'
    elseif held then
      answers[i] = '0'
    else
      answers[i] = 'm' .. math.floor(began)
    end
  end
end
return table.concat(answers, ' ')
"""
MOST_CLAIMS_PER_CALL = 64
"""The asyncio store's bound on one script call: Redis runs a script alone, and 64 claims take it some 0.3 ms."""
_Claim = tuple[str, float]
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
        # what the calls' keys begin with, by bucket, as bytes (redis-py packs bytes faster than it encodes text: the
        # keys of 32 claims built and packed in 1.29 us a claim, 2.03 as text)
        self._key_starts = [encoded(start + "s:") for start in bucket_prefixes(self._prefix)]
        self._marker_keys = [encoded(marker) for marker in self._markers]

    @property
    def tolerance(self) -> float:
        """The longest a request's timestamp may be from the clock: how far back a lost memory reaches."""
        return self._tolerance

    def _call(self, claims: Sequence[_Claim]) -> tuple[list[bytes], list[Any]]:
        """The keys and arguments of the script call checking claims (all in one slot on a Redis Cluster)."""
        now = unix_ms(self._clock())
        skew = self._skew_ms
        markers: list[bytes] = []
        keys: list[bytes] = []
        words: list[str] = []
        of_window: dict[float, str] = {}  # the two words of a window's end (a turn's requests share few of them)
        for signature, expires_at in claims:
            name = encoded(signature)
            bucket = bucket_of(name)
            markers.append(self._marker_keys[bucket])
            keys.append(self._key_starts[bucket] + name)
            word = of_window.get(expires_at)
            if word is None:
                ends = math.ceil(expires_at * 1000)  # (rounded up: the key outlives the window)
                word = of_window[expires_at] = f"{ends} {max(ends - now + skew, skew, 1)}"
            words.append(word)
        return markers + keys, [attempt_token(), now, self._margin_ms, " ".join(words)]

    def _answers(self, reply: Union[bytes, str], args: list[Any]) -> tuple[list[Any], Any]:
        """Each claim's answer (True, False, or [MEMORY_LOST, began]) from the script's reply, and the pipeline
        telling the other buckets of a loss this call noticed (once is enough), else None."""
        words = (reply.decode("ascii") if isinstance(reply, bytes) else reply).split(" ")
        answers = [word == "1" if word in ("0", "1") else [MEMORY_LOST, int(word[1:])] for word in words]
        if not any(noticed_loss(answer, args[1]) for answer in answers):
            return answers, None
        return answers, setting_markers(self._client, self._markers, unix_ms(self._clock()), missing_only=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(prefix={self._prefix!r})"


def _first(answer: Any) -> bool:
    refuse_if_memory_lost(_STORE, answer, "a request signed before then plus the tolerance and clock skew may "
                                          "have been accepted already: refused, sign it again later")
    return bool(answer)


class RedisReplayStore(_ReplayKeys):
    """:class:`~pasarela.terminal.replay.ReplayStore` on a ``redis.Redis`` (or ``redis.cluster.RedisCluster``).

    One script call per claim: a synchronous caller waits for its own answer, so there is nothing to batch."""

    def first_use(self, signature: str, expires_at: float) -> bool:
        keys, args = self._call([(signature, expires_at)])
        with failing_closed(_STORE):
            answers, spreading = self._answers(self._first_uses(keys=keys, args=args), args)
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
        self._batches: LoopBatches[_Claim, Any] = LoopBatches(self._send, most=MOST_CLAIMS_PER_CALL)
        self._cluster = is_cluster(client)

    async def first_use(self, signature: str, expires_at: float) -> bool:
        try:  # (as failing_closed, which costs a claim about 0.9 us more: a generator's context manager)
            answer = await self._batches.submit((signature, expires_at))
        except FAILURES as exc:
            raise unavailable(_STORE, exc) from None
        return _first(answer)

    async def _send(self, claims: list[_Claim]) -> list[Any]:
        """The script's answer for each claim, or for those of a call that failed, its exception."""
        if not self._cluster:
            return await self._checked(claims)
        by_slot: dict[int, list[int]] = {}
        for index, (signature, _) in enumerate(claims):
            by_slot.setdefault(key_slot(self._key_starts[bucket_of(encoded(signature))]), []).append(index)
        slots = list(by_slot.values())
        calls = await asyncio.gather(*(self._checked([claims[i] for i in slot]) for slot in slots),
                                     return_exceptions=True)
        answers: list[Any] = [None] * len(claims)
        for slot, answered in zip(slots, calls):
            for position, index in enumerate(slot):
                answers[index] = answered if isinstance(answered, BaseException) else answered[position]
        return answers

    async def _checked(self, claims: list[_Claim]) -> list[Any]:
        """One script call for claims (loaded first where Redis lacks it: redis-py's Script does that)."""
        keys, args = self._call(claims)
        answers, spreading = self._answers(await self._first_uses(keys=keys, args=args), args)
        if spreading is not None:
            await spreading.execute()
        return answers

    async def declare_memory_complete(self) -> None:
        """As :meth:`RedisReplayStore.declare_memory_complete`."""
        with failing_closed(_STORE):
            await setting_markers(self._client, self._markers, 0, missing_only=False).execute()
