"""The replay store on Redis, shared by every gateway node and worker (extra ``pasarela[redis]``).

    import redis
    from pasarela.terminal.replay_redis import RedisReplayStore

    store = RedisReplayStore(redis.Redis.from_url("redis://replay.internal:6379/0", socket_timeout=0.5))
    app = TerminalAuthMiddleware(app, terminal, replay_store=AsyncRedisReplayStore(redis.asyncio.Redis(...)))

One script run per verified request (the asyncio store pipelines those of requests arriving together, one round trip
for them all; the sync store, one round trip each): a Lua script that Redis runs atomically, so of any number of
nodes presenting one signature exactly one gets the key ``<prefix>{xx}s:<signature>`` set (first use) and every
other is refused. It writes a token random and new for each check: when redis-py re-sends the script after a timeout
although Redis had run it, the retry finds its own token and the request is still the first use, not a replay of
itself. The key expires by itself when the request's window has passed on this node's clock, plus ``clock_skew``
seconds so that a node whose clock runs behind still finds it. The lifetime is relative (PX), so Redis's own clock
does not matter.

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
import time
from typing import Any, Callable, Optional

from .._redis_store import (
    MEMORY_BEGAN,
    attempt_token,
    bucket_markers,
    bucket_tag,
    check_prefix,
    failing_closed,
    is_cluster,
    is_memory_lost,
    memory_lost,
    milliseconds,
    noticed_loss,
    redis,
    seconds,
    setting_markers,
    unix_ms,
)
from .inbound import DEFAULT_TOLERANCE

__all__ = ["AsyncRedisReplayStore", "RedisReplayStore"]

_STORE = "replay store (Redis)"


# KEYS: the bucket's marker, the signature's key. ARGV: this check's token, the key's lifetime in ms, now (ms),
# the end of the request's window (ms), the margin (ms): 2 * tolerance + clock_skew.
# 1: first use (or this very check, re-sent by redis-py); 0: a replay; {'memory lost', began}: cannot tell.
_FIRST_USE = MEMORY_BEGAN + """
local began = memory_began(KEYS[1], ARGV[3])
local held = redis.call('GET', KEYS[2])
if held then
  if held == ARGV[1] then return 1 end
  return 0
end
if tonumber(ARGV[4]) <= began + tonumber(ARGV[5]) then return {'memory lost', began} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1
"""


class _ReplayKeys:
    def __init__(self, client: Any, *, prefix: str = "pasarela:replay:", clock_skew: float = 5.0,
                 tolerance: float = DEFAULT_TOLERANCE, clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._prefix = check_prefix(client, prefix, one_slot=False)
        self._skew = seconds(clock_skew, "clock_skew", zero_ok=True)
        self._tolerance = seconds(tolerance, "tolerance")
        # A request accepted before the loss had its window begin before it (on a clock up to clock_skew off):
        # it ends before the memory's beginning + 2 * tolerance + clock_skew.
        self._margin_ms = milliseconds(2 * self._tolerance + self._skew)
        self._clock = clock
        self._first_use = client.register_script(_FIRST_USE)
        self._markers = bucket_markers(self._prefix)

    @property
    def tolerance(self) -> float:
        """The longest a request's timestamp may be from the clock: how far back a lost memory reaches."""
        return self._tolerance

    def _call(self, signature: str, expires_at: float) -> tuple[list[str], list[Any]]:
        now = self._clock()
        bucket = self._prefix + bucket_tag(signature)
        lifetime = max(expires_at - now, 0.0) + self._skew
        return [bucket + "memory", bucket + "s:" + signature], [
            attempt_token(), milliseconds(lifetime), unix_ms(now), unix_ms(expires_at), self._margin_ms]

    def _setting_markers(self, answer: Any, args: list[Any]) -> Any:
        """After the check that noticed a loss, the pipeline telling the other buckets; else None."""
        if not noticed_loss(answer, args[2]):
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
    """:class:`~pasarela.terminal.replay.ReplayStore` on a ``redis.Redis`` (or ``redis.cluster.RedisCluster``)."""

    def first_use(self, signature: str, expires_at: float) -> bool:
        keys, args = self._call(signature, expires_at)
        with failing_closed(_STORE):
            answer = self._first_use(keys=keys, args=args)
            spreading = self._setting_markers(answer, args)
            if spreading is not None:
                spreading.execute()
        return _first(answer)

    def declare_memory_complete(self) -> None:
        """Redis holds every signature this store recorded (a new Redis, or one that lost nothing): judge by it
        from now on, refusing nothing for a lost memory. Wrong after a loss: replays of the last window pass."""
        with failing_closed(_STORE):
            setting_markers(self._client, self._markers, 0, missing_only=False).execute()


class AsyncRedisReplayStore(_ReplayKeys):
    """:class:`~pasarela.terminal.replay.AsyncReplayStore` on a ``redis.asyncio.Redis`` (or its RedisCluster).

    The claims made in one turn of the event loop go to Redis together, in one pipeline (each still its own
    atomic script), and while one batch is on its way the next gathers: a server's requests share round trips
    (a pipeline costs redis-py far less per command than single commands do) and one connection, however many
    arrive at once. Every claim gets its own answer; if the pipeline fails, each of them fails closed
    (:class:`~pasarela.errors.StoreUnavailableError`). On a Redis Cluster, whose pipelines redis-py does not let
    run scripts, a batch's claims are sent side by side instead, each its own command.
    """

    def __init__(self, client: Any, **options: Any) -> None:
        super().__init__(client, **options)
        self._waiting: list[tuple[list[str], list[Any], asyncio.Future[Any]]] = []  # the claims not yet sent
        self._sending: Optional[asyncio.Task[None]] = None  # the batch on its way (held: the loop holds it weakly)
        self._cluster = is_cluster(client)

    async def first_use(self, signature: str, expires_at: float) -> bool:
        keys, args = self._call(signature, expires_at)
        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        self._waiting.append((keys, args, answer))
        if len(self._waiting) == 1 and self._sending is None:  # sent with the rest of this turn's, once it ends
            loop.call_soon(self._send_waiting)
        with failing_closed(_STORE):
            return _first(await answer)

    def _send_waiting(self) -> None:
        batch, self._waiting = self._waiting, []
        self._sending = asyncio.ensure_future(self._send(batch))
        self._sending.add_done_callback(self._sent)

    def _sent(self, _: asyncio.Task[None]) -> None:
        """One batch at a time: the claims made while it was on its way go next, together (one connection)."""
        self._sending = None
        if self._waiting:
            self._send_waiting()

    async def _send(self, batch: list[tuple[list[str], list[Any], asyncio.Future[Any]]]) -> None:
        """Runs the batch's scripts in one pipeline and gives each claim its answer (or the failure)."""
        try:
            answers = await self._scripts([(keys, args) for keys, args, _ in batch])
            for (_, args, _), answer in zip(batch, answers):
                spreading = self._setting_markers(answer, args)
                if spreading is not None:  # one telling of the other buckets is enough for the batch
                    await spreading.execute()
                    break
        except asyncio.CancelledError:
            for _, _, answer in batch:
                answer.cancel()
            raise
        except Exception as exc:  # each claim raises it (failing_closed: StoreUnavailableError if from Redis)
            for _, _, answer in batch:
                if not answer.done():
                    answer.set_exception(exc)
            return
        for (_, _, answer), result in zip(batch, answers):
            if not answer.done():  # (a request cancelled meanwhile: its claim stands, as a sent command's would)
                if isinstance(result, Exception):
                    answer.set_exception(result)
                else:
                    answer.set_result(result)

    async def _scripts(self, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
        """The script's answers (or a command's error) for calls, pipelined; loaded first where Redis lacks it."""
        answers = await self._pipelined(calls)
        missing = [i for i, answer in enumerate(answers) if isinstance(answer, redis.exceptions.NoScriptError)]
        if missing:  # (a new or flushed Redis: not run, so run again once loaded)
            await self._client.script_load(_FIRST_USE)
            for i, answer in zip(missing, await self._pipelined([calls[i] for i in missing])):
                answers[i] = answer
        return answers

    async def _pipelined(self, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
        if self._cluster:  # (the script object loads itself where a node lacks it; one failure fails the batch)
            return list(await asyncio.gather(*(self._first_use(keys=keys, args=args) for keys, args in calls)))
        pipeline = self._client.pipeline(transaction=False)
        for keys, args in calls:
            pipeline.evalsha(self._first_use.sha, len(keys), *keys, *args)
        return list(await pipeline.execute(raise_on_error=False))

    async def declare_memory_complete(self) -> None:
        """As :meth:`RedisReplayStore.declare_memory_complete`."""
        with failing_closed(_STORE):
            await setting_markers(self._client, self._markers, 0, missing_only=False).execute()
