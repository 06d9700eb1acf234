"""The replay check on Redis: Redis commands per verified request, and requests/s with 4 uvicorn workers.

    python benchmarks/redis_replay.py                    # 3 rounds x 5 s per store, 16 connections
    python benchmarks/redis_replay.py --seconds 3 --rounds 2 --connections 8

Starts its own redis-server on a loopback port and two ``uvicorn --workers 4`` servers running
tests/support/redis_app.py (TerminalAuthMiddleware): one with the shared Redis replay store, one with each worker's
own in-memory store (the single-process baseline, which does not protect across workers). Rounds alternate
between the two so that both see the same machine load. Every request is a distinct, freshly sealed
(pre-sealed before the clock starts) POST that must be answered 200.

Commands (the asyncio store checks the claims of concurrent requests in one script call): Redis's own counters (CONFIG
RESETSTAT, then INFO commandstats) over the Redis rounds, divided by the requests answered; the INFO calls of the
measurement itself are not counted, nor the handshake of connections a worker's pool opens when concurrency grows,
nor the MGET, SET and GET the store's script runs inside its one EVALSHA (all listed apart). The last line is JSON.
Only 127.0.0.1 is targeted; every phase stops by itself after ``--seconds``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "tests")]

import pasarela  # noqa: E402
from support.faulty_clients import BUSINESS_CODE, SERIAL  # noqa: E402
from support.redis_memory import declare_new  # noqa: E402
from support.redis_server import RedisServer  # noqa: E402
from support.uvicorn_workers import UvicornWorkers  # noqa: E402

TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)
_CONNECTION_SETUP = {"hello", "client|setinfo", "auth", "select"}
"""Sent once per new connection of a worker's pool (it grows with concurrency), not per request."""
_INSIDE_THE_SCRIPT = {"mget", "get", "set"}
"""Run by the replay store's script inside its one EVALSHA (Redis counts them too): not commands sent."""


def sealed_requests(count: int, host: str) -> list[bytes]:
    """``count`` distinct signed POSTs as raw HTTP/1.1 keep-alive requests (sealed now: inside the window)."""
    requests = []
    for index in range(count):
        sealed = TERMINAL.seal({"amount": 100, "request": index})
        head = ["POST /charge HTTP/1.1", f"Host: {host}", f"Content-Length: {len(sealed.body)}"]
        head += [f"{name}: {value}" for name, value in sealed.headers.items()]
        requests.append(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + sealed.body)
    return requests


def _receive(connection: socket.socket) -> bytes:
    """One recv, acknowledging at once: uvicorn's multi-worker mode writes a response's head and body as two
    segments with Nagle on, so the body waits for the ACK of the head, which Linux delays up to 40 ms.
    TCP_QUICKACK (re-armed before each recv: the kernel drops it by itself) measures the server, not that."""
    if hasattr(socket, "TCP_QUICKACK"):
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    chunk = connection.recv(65536)
    if not chunk:
        raise ConnectionError("the server closed the connection")
    return chunk


def _status_of_one_exchange(connection: socket.socket, request: bytes) -> bytes:
    connection.sendall(request)
    received = b""
    while b"\r\n\r\n" not in received:
        received += _receive(connection)
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += _receive(connection)
    return lines[0].split()[1]


def load(port: int, requests: list[bytes], seconds: float, connections: int) -> tuple[int, int, float]:
    """(answered 200, other answers, elapsed seconds): ``connections`` keep-alive connections, one thread each."""
    tally = {b"200": 0}
    lock = threading.Lock()
    start = time.monotonic()
    deadline = start + seconds

    def one_connection() -> None:
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while time.monotonic() < deadline:
                with lock:
                    if not requests:
                        return
                    request = requests.pop()
                status = _status_of_one_exchange(connection, request)
                with lock:
                    tally[status] = tally.get(status, 0) + 1

    threads = [threading.Thread(target=one_connection) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    return tally.pop(b"200"), sum(tally.values()), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each phase (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="phases per store, alternating (default 3)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (default 16)")
    parser.add_argument("--max-rate", type=int, default=8_000, help="requests sealed per second of a phase")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, RedisServer() as redis_server:
        declare_new(redis_server)  # a new Redis: the stores judge at once (see pasarela._redis_store)
        base = {"PASARELA_TEST_REDIS_URL": redis_server.url, "PASARELA_TEST_EVENTS": str(Path(scratch, "events")),
                "PASARELA_TEST_WEBHOOK_SECRET": "unused"}
        with UvicornWorkers("support.redis_app:app", base) as on_redis, \
                UvicornWorkers("support.redis_app:app", {**base, "PASARELA_TEST_REPLAY_STORE": "memory"}) as in_memory:
            servers = {"redis": on_redis, "memory": in_memory}
            totals = {name: [0, 0, 0.0] for name in servers}
            with redis_server.client() as stats:
                for warm in servers.values():  # every worker opens its connections before anything is counted
                    load(warm.port, sealed_requests(400, "127.0.0.1"), 1.0, options.connections)
                stats.config_resetstat()
                for _ in range(options.rounds):
                    for name, server in servers.items():
                        requests = sealed_requests(int(options.max_rate * options.seconds), "127.0.0.1")
                        ok, errors, elapsed = load(server.port, requests, options.seconds, options.connections)
                        totals[name][0] += ok
                        totals[name][1] += errors
                        totals[name][2] += elapsed
                        print(f"{name:>6}: {ok / elapsed:8.0f} requests/s ({ok} in {elapsed:.1f} s, {errors} errors)")
                commands = stats.info("commandstats")
            counted = {name.removeprefix("cmdstat_"): int(row["calls"]) for name, row in commands.items()
                       if name != "cmdstat_info" and name != "cmdstat_config|resetstat"}
    redis_ok = totals["redis"][0]
    summary = {
        "workers": 4,
        "connections": options.connections,
        "redis_requests_per_second": round(redis_ok / totals["redis"][2]),
        "in_memory_requests_per_second": round(totals["memory"][0] / totals["memory"][2]),
        "errors": totals["redis"][1] + totals["memory"][1],
        "redis_commands_per_verified_request": round(sum(calls for name, calls in counted.items()
                                                         if name not in _CONNECTION_SETUP | _INSIDE_THE_SCRIPT)
                                                     / redis_ok, 4),
        "redis_commands": counted,
        "verified_requests_on_redis": redis_ok,
    }
    summary["redis_over_in_memory"] = round(summary["redis_requests_per_second"]
                                            / summary["in_memory_requests_per_second"], 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
