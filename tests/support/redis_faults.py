"""Faults put into a real redis-server (tests/support/redis_server.py) while a test runs, short of its death:

- :func:`busy`: a Lua script that spins for a while, so every other command waits behind it (a slow
  Redis: the clients time out, redis-py retries, and the first try has still run once Redis is free);
- :func:`pause`: ``CLIENT PAUSE``, Redis holding every client's commands for a while (the commands of a
  client that gave up waiting are dropped, not run);
- :func:`refusing_scripts`: a script running past ``busy-reply-threshold``, so Redis answers BUSY to
  every other command until the script is killed (a timeout in the middle of a script);
- :func:`faults_meanwhile`: busy, refusing, paused, busy past the client's retries, over and over while a
  test runs.

:func:`retrying_client` makes the clients docs/multi-node.md recommends: a short ``socket_timeout`` and
redis-py's retries on (on timeouts too). :func:`calls` reads Redis's own count of commands run, so a
test can show that the fault did make the client send a command again.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.retry
import redis.backoff
import redis.retry

from support.redis_server import RedisServer

# Spins until ARGV[1] microseconds have passed on Redis's clock (TIME is not frozen inside a script).
SPIN = """
local start = redis.call('TIME')
local deadline = start[1] * 1000000 + start[2] + tonumber(ARGV[1])
repeat local now = redis.call('TIME') until now[1] * 1000000 + now[2] >= deadline
return 1
"""
SOCKET_TIMEOUT = 0.3
RETRIES = 3
BUSY_FOR = 0.8
"""Longer than two timeouts, shorter than four: the first try and the first retry time out, a later retry
gets the answer; the first try's command has run by then."""
_STARTED = 0.15
"""How long the fault is given to take hold before the test goes on (the spinning script starts at once)."""


def retrying_client(server: RedisServer, kind: str = "sync") -> Any:
    """A client as docs/multi-node.md configures one: short timeouts, retries on (redis-py retries timeouts too)."""
    options: dict[str, Any] = {"port": server.port, "socket_timeout": SOCKET_TIMEOUT,
                               "socket_connect_timeout": SOCKET_TIMEOUT}
    if kind == "sync":
        return redis.Redis(retry=redis.retry.Retry(redis.backoff.NoBackoff(), RETRIES), **options)
    return redis.asyncio.Redis(retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), RETRIES), **options)


@contextmanager
def busy(server: RedisServer, seconds: float = BUSY_FOR) -> Iterator[None]:
    """Redis runs a script for ``seconds`` on another connection; commands sent meanwhile wait for it."""
    spinner = threading.Thread(target=_spin, args=(server, seconds))
    spinner.start()
    time.sleep(_STARTED)
    try:
        yield
    finally:
        spinner.join()


def _spin(server: RedisServer, seconds: float) -> None:
    with redis.Redis(port=server.port, socket_timeout=seconds + 10) as spinner:
        spinner.eval(SPIN, 0, int(seconds * 1_000_000))


def pause(server: RedisServer, seconds: float = BUSY_FOR) -> None:
    """``CLIENT PAUSE`` for ``seconds``, from now: Redis holds every client's commands, then runs them."""
    with server.client() as pauser:
        pauser.execute_command("CLIENT", "PAUSE", int(seconds * 1000), "ALL")


@contextmanager
def refusing_scripts(server: RedisServer) -> Iterator[None]:
    """A script stuck past ``busy-reply-threshold``: Redis answers BUSY to other commands until it is killed."""
    with server.client() as admin:
        admin.config_set("busy-reply-threshold", 50)
        spinner = threading.Thread(target=_spin_until_killed, args=(server,))
        spinner.start()
        time.sleep(_STARTED)
        try:
            yield
        finally:
            while spinner.is_alive():
                try:
                    admin.script_kill()
                except redis.ResponseError:  # not running yet, or already over
                    time.sleep(0.02)
                spinner.join(timeout=0.2)
            admin.config_set("busy-reply-threshold", 5000)


def _spin_until_killed(server: RedisServer) -> None:
    # ResponseError: "Script killed by user with SCRIPT KILL"
    with redis.Redis(port=server.port, socket_timeout=60) as spinner, suppress(redis.ResponseError):
        spinner.eval(SPIN, 0, 30_000_000)


def calls(server: RedisServer, command: str) -> int:
    """How many times Redis has run ``command`` (lower case: 'set', 'evalsha'), from INFO commandstats."""
    with server.client() as client:
        return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


@contextmanager
def faults_meanwhile(server: RedisServer) -> Iterator[list[str]]:
    """Until the block ends, over and over: Redis busy, refusing (BUSY), paused, then busy past the client's
    retries (its commands fail, and run once Redis is free), a short quiet between. Yields the faults applied
    so far."""
    stop, applied = threading.Event(), []
    faults = [("busy", BUSY_FOR), ("refusing", BUSY_FOR), ("paused", BUSY_FOR), ("busy", 2 * BUSY_FOR)]

    def cycle() -> None:
        for kind, seconds in itertools.cycle(faults):
            if stop.is_set():
                return
            if kind == "busy":
                with busy(server, seconds):
                    pass
            elif kind == "refusing":
                with refusing_scripts(server):
                    time.sleep(seconds)
            else:
                pause(server, seconds)
                time.sleep(seconds)
            applied.append(kind)
            stop.wait(0.2)

    faulting = threading.Thread(target=cycle)
    faulting.start()
    try:
        yield applied
    finally:
        stop.set()
        faulting.join()
