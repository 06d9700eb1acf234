"""Requests per second of real HTTP servers verifying terminal requests (issue 42, goal 4; issue 57 items 2 and 3).

Each server runs in a process of its own on a loopback port, one worker (or ``--workers``), and Debian's ``wrk``
drives it (``wrk -t1 -c16 -d<seconds>s``) with POSTs of sealed terminal requests of a 248-byte payload, every one
distinct, sealed before into a file (the load generator does no crypto; a replay store refuses a signature seen twice;
a wrk Lua script walks through them). The servers:

- ``bare``: an ASGI app on uvicorn with uvloop and httptools (``uvicorn[standard]``) answering 200 with the body;
- ``bare+open``: the bare app calling ``Terminal.open`` on the request itself (answering the payload, or 401 AUTH-001),
  no middleware, no replay store: what any verifying server must at least do, the bound of ``middleware / bare``;
- ``middleware``: the same app behind ``pasarela.asgi.TerminalAuthMiddleware`` as it comes (no replay store: the
  same checks as the Node.js server's);
- ``memory``: the same with an in-memory replay store (``InMemoryReplayStore``: a signature accepted once);
- ``exact``: the same as ``middleware`` with ``exact_body=True`` (the app reads the verified bytes: a forwarding
  gateway);
- ``redis``: the same behind the middleware with the Redis replay store on a real redis-server;
- ``postgres`` (benchmarks/postgres_stores.py's, which starts a PostgreSQL for it; not one of this script's): the
  same with the asyncio PostgreSQL replay store (``--serve postgres PORT CONNINFO WORKERS``);
- ``node``: a Node.js ``http`` server running benchmarks/node_verify.js's verify (benchmarks/node_verify_server.js);
- ``redis-set`` (not run unless asked): the bare app doing one ``SET key value PX ms NX`` on Redis per request with
  redis-py's asyncio client, nothing else: the bound a replay store on redis-py sets (one round trip per request).

Servers are alternated, several rounds; every round seals fresh requests (timestamps of now: the default 300 s
tolerance everywhere) and checks every answer was a 200 (wrk's non-2xx count and socket errors must be 0). Prints a
Markdown table of requests per second and of the server's CPU time per request (min-max over rounds: the
latter holds up better on a machine shared with other work) and of the ratios taken within each round.

    .venv/bin/python benchmarks/http_serving.py [--seconds 8] [--rounds 3] [--servers bare,middleware,redis,node]
    .venv/bin/python benchmarks/http_serving.py --servers bare,memory,redis --workers 2    # issue 57 item 2

The Python servers inherit the environment: ``PASARELA_OTEL=off`` measures them without OpenTelemetry's hooks
(with ``opentelemetry-api`` installed and no SDK the middleware opens no span: pasarela._telemetry.tracing).
Installs nothing: wrk, node, redis-server and uvicorn[standard] come from ``scripts/setup bench``.
``--workers N`` runs each Python server as ``uvicorn --workers N`` (the Redis store's workers on one prefix, as one
gateway's; an in-memory store protects each worker alone). ``--serve KIND PORT REDIS_URL WORKERS`` is the server side
(this script starts it). ``--in-process`` starts no server: it calls the Python servers' apps in this process (what
each adds, without the server's share).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "tests"), str(ROOT / "benchmarks")]

import pasarela  # noqa: E402
from pasarela import _telemetry  # noqa: E402
from payloads import payload_of_size  # noqa: E402

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
PAYLOAD_BYTES = 248
SERVERS = ["bare", "bare+open", "middleware", "memory", "exact", "redis", "node"]
BOUNDS = ["redis-set"]
TITLES = {"bare": "bare ASGI app (uvicorn, uvloop, httptools)",
          "bare+open": "bare ASGI app calling Terminal.open itself (no middleware, no store)",
          "middleware": "behind TerminalAuthMiddleware (no replay store)",
          "memory": "behind TerminalAuthMiddleware (in-memory replay store)",
          "exact": "behind TerminalAuthMiddleware(exact_body=True) (no replay store)",
          "redis": "behind TerminalAuthMiddleware (Redis replay store)",
          "postgres": "behind TerminalAuthMiddleware (PostgreSQL replay store)",
          "node": "Node.js http server, node_verify.js's verify",
          "redis-set": "bare ASGI app + one Redis SET per request (redis-py asyncio)"}
RATIOS = [("middleware", "bare", 0.9), ("bare+open", "bare", None), ("middleware", "bare+open", None),
          ("memory", "middleware", None), ("exact", "middleware", None),
          ("redis", "bare", 0.8), ("redis", "memory", 0.6), ("middleware", "node", 1.5), ("memory", "node", None),
          ("exact", "node", None), ("bare+open", "node", None),
          ("redis-set", "bare", None), ("redis", "redis-set", None)]
WARM_UP_SECONDS = 1
# the wrk side: requests from a file, one per line (timestamp, Authorization, body), sent in turn from FIRST to LAST;
# past LAST it starts again at FIRST (replays: the servers with a replay store answer 401, and the run is refused)
WRK_SCRIPT = """
local requests = {}
init = function(args)
  local path, first, last = args[1], tonumber(args[2]), tonumber(args[3])
  local n = 0
  for line in io.lines(path) do
    n = n + 1
    if n >= first and n <= last then
      local timestamp, authorization, body = line:match("^(%S+) (.-) ({.*})$")
      requests[#requests + 1] = wrk.format("POST", "/", {["Content-Type"] = "application/json",
        ["timestamp"] = timestamp, ["Authorization"] = authorization}, body)
    end
  end
  next_request = 0
end
request = function()
  next_request = next_request % #requests + 1
  return requests[next_request]
end
"""


# --- the server side ----------------------------------------------------------------------------------------------
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def echo_app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """The application: answers 200 with the request's body (behind the middleware, the verified payload)."""
    if scope["type"] != "http":
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def opening_app(terminal: pasarela.Terminal) -> Any:
    """The bare app that verifies the request itself: Terminal.open, then the payload as JSON (AUTH-001 if refused)."""
    import orjson

    from pasarela.errors import AUTH_001_BODY, AuthError

    refusal = orjson.dumps(AUTH_001_BODY)

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        message = await receive()
        headers = {bytes(name).decode("latin-1"): bytes(value).decode("latin-1") for name, value in scope["headers"]}
        try:
            status, body = 200, orjson.dumps(terminal.open("POST", headers, message.get("body", b"")))
        except AuthError:
            status, body = 401, refusal
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})

    return app


def served_app(kind: str, redis_url: str, prefix: str = "") -> Any:
    """The ASGI app of one kind of server (the Redis store's prefix new if not given, and declared complete at
    startup; the PostgreSQL store's pool opened at startup, its schema created by the caller; ``redis_url`` is then
    the server's conninfo)."""
    from pasarela.asgi import TerminalAuthMiddleware
    from pasarela.terminal.replay import InMemoryReplayStore

    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    if kind == "bare":
        return echo_app
    if kind == "bare+open":
        return opening_app(terminal)
    if kind in ("middleware", "exact"):
        return TerminalAuthMiddleware(echo_app, terminal, exact_body=kind == "exact")
    if kind == "memory":
        return TerminalAuthMiddleware(echo_app, terminal, replay_store=InMemoryReplayStore(max_entries=1_000_000))
    if kind == "postgres":
        return _postgres_app(terminal, redis_url)
    import redis.asyncio

    if kind == "redis-set":
        client = redis.asyncio.Redis.from_url(redis_url)
        claims = iter(range(1 << 62))

        async def claiming(scope: dict[str, Any], receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                await client.set(f"bench:{os.getpid()}:{next(claims)}", b"1", px=600_000, nx=True)
            await echo_app(scope, receive, send)

        return claiming

    from pasarela.terminal.replay_redis import AsyncRedisReplayStore

    client = redis.asyncio.Redis.from_url(redis_url)
    store = AsyncRedisReplayStore(client, prefix=prefix or f"bench:{secrets.token_hex(4)}:")
    guarded = TerminalAuthMiddleware(echo_app, terminal, replay_store=store)

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await store.declare_memory_complete()
                await send({"type": "lifespan.startup.complete"})
            await client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await guarded(scope, receive, send)

    return app


def _postgres_app(terminal: pasarela.Terminal, conninfo: str) -> Any:
    """The middleware with the asyncio PostgreSQL replay store on a pool of its own (autocommit: one round trip a
    batch of checks), opened at startup and closed at shutdown."""
    from psycopg_pool import AsyncConnectionPool

    from pasarela.asgi import TerminalAuthMiddleware
    from pasarela.terminal.replay_postgres import AsyncPostgresReplayStore

    pool = AsyncConnectionPool(conninfo, min_size=1, max_size=4, open=False, kwargs={"autocommit": True})
    guarded = TerminalAuthMiddleware(echo_app, terminal, replay_store=AsyncPostgresReplayStore(pool))

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await pool.open(wait=True)
                await send({"type": "lifespan.startup.complete"})
            await pool.close()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await guarded(scope, receive, send)

    return app


def serve(kind: str, port: int, redis_url: str, workers: int) -> None:
    """One server: ``workers`` uvicorn worker processes (each its own app; with Redis all on one prefix, as the nodes
    of one gateway)."""
    import uvicorn

    os.environ.update({"PASARELA_BENCH_KIND": kind, "PASARELA_BENCH_REDIS_URL": redis_url,
                       "PASARELA_BENCH_PREFIX": f"bench:{secrets.token_hex(4)}:"})
    uvicorn.run("http_serving:app_of_environment", factory=True, app_dir=str(ROOT / "benchmarks"), host="127.0.0.1",
                port=port, loop="uvloop", http="httptools", workers=workers, log_level="warning", access_log=False,
                lifespan="auto")


def app_of_environment() -> Any:
    """uvicorn's factory in each worker: served_app of what serve() put in the environment."""
    return served_app(os.environ["PASARELA_BENCH_KIND"], os.environ["PASARELA_BENCH_REDIS_URL"],
                      os.environ["PASARELA_BENCH_PREFIX"])


# --- the driver ---------------------------------------------------------------------------------------------------
def missing_tools() -> list[str]:
    missing = [tool for tool in ("wrk", "node", "redis-server") if shutil.which(tool) is None]
    missing += [f"{module} (Python)" for module in ("uvicorn", "uvloop", "httptools", "redis")
                if importlib.util.find_spec(module) is None]
    return missing


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def distinct_requests(count: int, first: int = 0) -> list[pasarela.Sealed]:
    """count distinct requests of a PAYLOAD_BYTES payload (the ref differs: first, first + 1, ...), sealed now."""
    base = payload_of_size(PAYLOAD_BYTES)
    digits = len(base["ref"]) - len("ord-")
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    return terminal.seal_many(dict(base, ref=f"ord-{i:0{digits}d}") for i in range(first, first + count))


def write_requests(path: Path, count: int, first: int = 0) -> None:
    """distinct_requests(count, first), one per line."""
    sealed = distinct_requests(count, first)
    with path.open("wb") as out:
        for request in sealed:
            headers = request.headers
            body = request.body
            assert body is not None and b"\n" not in body
            out.write(f"{headers['timestamp']} {headers['Authorization']} ".encode() + body + b"\n")


@contextmanager
def server(kind: str, redis_url: str, log: Any, workers: int = 1) -> Iterator[tuple[int, int]]:
    """(port, pid) of one server started and answering (the Node.js one is one process whatever ``workers``)."""
    port = free_port()
    if kind == "node":
        command = ["node", str(ROOT / "benchmarks" / "node_verify_server.js"), str(port), BUSINESS_CODE, SERIAL]
    else:
        command = [sys.executable, __file__, "--serve", kind, str(port), redis_url, str(workers)]
    process = subprocess.Popen(command, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                tail = log.read().decode(errors="replace")[-3000:]
                raise RuntimeError(f"the {kind} server did not start; the servers' output ends:\n{tail}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port, process.pid
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) the process and its children alive (uvicorn's workers) have used so far (Linux:
    /proc/PID/stat and /proc/PID/task/*/children)."""
    total = 0.0
    pending = [pid]
    while pending:
        each = pending.pop()
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            children = " ".join(task.read_text() for task in Path(f"/proc/{each}/task").glob("*/children"))
        except OSError:  # (gone meanwhile)
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        pending += [int(child) for child in children.split()]
    return total


def wrk(port: int, script: Path, requests: Path, first: int, last: int, seconds: int,
        connections: int) -> tuple[float, int]:
    """Requests per second and requests answered; every answer must have been a 200 on a connection that held."""
    output = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), f"http://127.0.0.1:{port}/",
         "--", str(requests), str(first), str(last)], capture_output=True, text=True, check=True).stdout
    refused = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = re.search(r"Socket errors: (.*)", output)
    if refused or errors:
        raise RuntimeError(f"wrk saw answers other than 200 or socket errors (too few distinct requests, or a "
                           f"refusal):\n{output}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    count = re.search(r"(\d+) requests in", output)
    if rate is None or count is None:
        raise RuntimeError(f"no Requests/sec in wrk's output:\n{output}")
    return float(rate.group(1)), int(count.group(1))


def asgi_requests(count: int, first: int = 0) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """distinct_requests(count, first) as uvicorn hands them to an app: each one's scope and its one body message."""
    requests = []
    for request in distinct_requests(count, first):
        assert request.body is not None
        headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                   *((name.lower().encode(), value.encode()) for name, value in request.headers.items()),
                   (b"content-length", b"%d" % len(request.body))]
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                 "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000), "scheme": "http", "method": "POST",
                 "root_path": "", "path": "/", "raw_path": b"/", "query_string": b"", "headers": headers, "state": {}}
        requests.append((scope, {"type": "http.request", "body": request.body, "more_body": False}))
    return requests


IN_PROCESS = ["bare", "bare+open", "middleware", "memory", "exact", "redis"]
IN_PROCESS_REQUESTS = 20_000
IN_PROCESS_CONCURRENCY = 32
IN_PROCESS_RATIOS = [("redis", "memory", 2.0), ("memory", "middleware", None), ("middleware", "bare", None)]
"""(top, bottom, goal): top's time per request over bottom's, within each round; issue 57's goal 3, with Redis a
verified request costs at most 2x what it costs with the in-memory store."""


async def drive(app: Any, requests: list[tuple[dict[str, Any], dict[str, Any]]], concurrency: int,
                lifespan: bool) -> tuple[float, float]:
    """(wall, CPU) microseconds per request: requests through app, concurrency of them at a time (each of
    ``concurrency`` tasks takes the next as soon as its last one is answered, as a server's connections do), every
    answer checked to be a 200. ``lifespan``: the app's startup and shutdown run around it, as uvicorn runs them."""
    statuses: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def connection(pending: Iterator[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        for scope, message in pending:
            async def receive(message: dict[str, Any] = message) -> dict[str, Any]:
                return message
            await app(scope, receive, send)

    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    if lifespan:
        running = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"}}, events.get, answers.put))
        await events.put({"type": "lifespan.startup"})
        assert (await answers.get())["type"] == "lifespan.startup.complete"
    pending = iter(requests)
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(connection(pending) for _ in range(concurrency)))
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    if lifespan:
        await events.put({"type": "lifespan.shutdown"})
        await answers.get()
        await running
    if statuses != [200] * len(requests):
        raise RuntimeError(f"answers other than 200: {sorted(set(statuses))}")
    return took / len(requests) * 1e6, cpu / len(requests) * 1e6


def in_process(rounds: int, concurrency: int) -> int:
    """--in-process: each Python server's app (served_app) called on IN_PROCESS_REQUESTS distinct sealed requests in
    this process, ``concurrency`` at a time, the scope and messages as uvicorn gives them, on uvloop; interleaved
    rounds (who goes first turns), a fresh app (and replay store) each. Prints each app's time per request (wall, and
    this process's CPU), the IN_PROCESS_RATIOS within each round, and for the Redis store Redis's own time per claim
    and claims per script call (INFO commandstats): what the Redis store's wall time holds that is not ours."""
    import uvloop

    from support.redis_server import RedisServer

    requests = asgi_requests(IN_PROCESS_REQUESTS)
    wall: dict[str, list[float]] = {kind: [] for kind in IN_PROCESS}
    cpu: dict[str, list[float]] = {kind: [] for kind in IN_PROCESS}
    redis_us: list[float] = []
    per_call: list[float] = []
    with RedisServer() as redis_server, redis_server.client() as stats:
        for round_number in range(rounds):
            turn = round_number % len(IN_PROCESS)
            for kind in IN_PROCESS[turn:] + IN_PROCESS[:turn]:
                stats.config_resetstat()
                took, used = uvloop.run(drive(served_app(kind, redis_server.url), requests, concurrency,
                                              lifespan=kind == "redis"))
                wall[kind].append(took)
                cpu[kind].append(used)
                if kind == "redis":
                    scripts = stats.info("commandstats")["cmdstat_evalsha"]
                    redis_us.append(int(scripts["usec"]) / len(requests))
                    per_call.append(len(requests) / int(scripts["calls"]))
    print(f"In one process: {IN_PROCESS_REQUESTS:,} distinct POSTs of a {PAYLOAD_BYTES}-byte payload per app, "
          f"{concurrency} at a time, {rounds} interleaved rounds (median, min-max); OpenTelemetry: "
          f"{'on' if _telemetry.ENABLED else 'off'}\n")
    print("| app | us per request | CPU us per request |\n|---|---|---|")
    for kind in IN_PROCESS:
        print(f"| {TITLES[kind]} | {_spread(wall[kind])} | {_spread(cpu[kind])} |")
    print(f"\nRedis's own time (INFO commandstats, EVALSHA): {_spread(redis_us)} us per claim, "
          f"{_spread(per_call, '.1f')} claims per script call\n")
    print("| ratio (within each round) | wall | CPU | goal |\n|---|---|---|---|")
    for top, bottom, goal in IN_PROCESS_RATIOS:
        print(f"| {top} / {bottom} per request | {_spread([a / b for a, b in zip(wall[top], wall[bottom])])}x | "
              f"{_spread([a / b for a, b in zip(cpu[top], cpu[bottom])])}x | {'' if goal is None else f'<= {goal}x'} |")
    beside = [(a - own) / b for a, own, b in zip(wall["redis"], redis_us, wall["memory"])]
    print(f"| redis / memory per request, less Redis's own time per claim | {_spread(beside)}x | | |")
    return 0


def _spread(values: list[float], spec: str = ".2f") -> str:
    """median (min-max)"""
    return f"{statistics.median(values):{spec}} ({min(values):{spec}}-{max(values):{spec}})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=8, help="each wrk run (default 8)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each server once per round (default 3)")
    parser.add_argument("--connections", type=int, default=16, help="wrk -c (default 16)")
    parser.add_argument("--servers", default=",".join(SERVERS), help=f"some of {','.join(SERVERS + BOUNDS)}")
    parser.add_argument("--max-rate", type=int, default=40_000,
                        help="requests per second sealed for (distinct requests per run: rate x seconds)")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn --workers of each Python server (default 1)")
    parser.add_argument("--serve", nargs=4, metavar=("KIND", "PORT", "REDIS_URL", "WORKERS"), help=argparse.SUPPRESS)
    parser.add_argument("--in-process", action="store_true",
                        help="no server: the Python apps called in this process (IN_PROCESS), microseconds a request")
    parser.add_argument("--concurrency", type=int, default=IN_PROCESS_CONCURRENCY,
                        help=f"--in-process: requests at a time (default {IN_PROCESS_CONCURRENCY})")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), args.serve[2], int(args.serve[3]))
        return 0
    if args.in_process:
        return in_process(args.rounds, args.concurrency)
    kinds = args.servers.split(",")
    unknown = set(kinds) - set(SERVERS + BOUNDS)
    if unknown:
        parser.error(f"unknown servers {sorted(unknown)}: choose from {SERVERS + BOUNDS}")
    missing = missing_tools()
    if missing:
        print(f"http_serving.py: missing {', '.join(missing)}: `scripts/setup bench` installs them", file=sys.stderr)
        return 2

    from support.redis_server import RedisServer

    main_count = args.max_rate * args.seconds
    warm_count = args.max_rate * WARM_UP_SECONDS
    rates: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpu: dict[str, list[float]] = {kind: [] for kind in kinds}  # the server's CPU time per request (us)
    redis_cpu: list[float] = []  # redis-server's, per request of the redis server
    redis_scripts: list[tuple[float, float]] = []  # (claims per script call, Redis's us per claim), INFO commandstats
    with tempfile.TemporaryDirectory(prefix="pasarela-http-") as scratch, RedisServer() as redis_server, \
            redis_server.client() as stats:
        script = Path(scratch) / "requests.lua"
        script.write_text(WRK_SCRIPT)
        requests = Path(scratch) / "requests.txt"
        with open(Path(scratch) / "servers.log", "w+b") as log:
            for round_number in range(args.rounds):
                order = kinds[round_number % len(kinds):] + kinds[:round_number % len(kinds)]
                for kind in order:
                    write_requests(requests, main_count + warm_count)  # fresh timestamps for each run
                    with server(kind, redis_server.url, log, args.workers) as (port, pid):
                        wrk(port, script, requests, main_count + 1, main_count + warm_count, WARM_UP_SECONDS,
                            args.connections)
                        stats.config_resetstat()
                        before, redis_before = cpu_seconds(pid), cpu_seconds(redis_server.pid)
                        rate, count = wrk(port, script, requests, 1, main_count, args.seconds, args.connections)
                        cpu[kind].append((cpu_seconds(pid) - before) / count * 1e6)
                        if kind == "redis":
                            redis_cpu.append((cpu_seconds(redis_server.pid) - redis_before) / count * 1e6)
                            calls = stats.info("commandstats").get("cmdstat_evalsha", {"calls": 0, "usec": 0})
                            claims = max(int(calls["calls"]), 1)
                            redis_scripts.append((count / claims, int(calls["usec"]) / count))
                    rates[kind].append(rate)
                    print(f"round {round_number + 1}: {kind}: {rate:,.0f} req/s, {cpu[kind][-1]:.1f} us of the "
                          f"server's CPU per request", file=sys.stderr)
    workers = "one worker each" if args.workers == 1 else f"uvicorn --workers {args.workers} (Node.js: one process)"
    print(f"`wrk -t1 -c{args.connections} -d{args.seconds}s`, one POST of a {PAYLOAD_BYTES}-byte payload, "
          f"{workers}, {args.rounds} rounds; OpenTelemetry in the Python servers: "
          f"{'on (opentelemetry-api installed, no SDK)' if _telemetry.ENABLED else 'off'}\n")
    print("| server | req/s (min-max) | server CPU per request, us (min-max) |\n|---|---|---|")
    for kind in kinds:
        print(f"| {TITLES[kind]} | {min(rates[kind]):,.0f}-{max(rates[kind]):,.0f} | "
              f"{min(cpu[kind]):.1f}-{max(cpu[kind]):.1f} |")
    if redis_cpu:
        print(f"\nThe Redis-guarded server: redis-server's CPU {_spread(redis_cpu, '.1f')} us per request, of which "
              f"the script's own {_spread([own for _, own in redis_scripts])} us a claim; "
              f"{_spread([per for per, _ in redis_scripts], '.1f')} claims per script call (INFO commandstats)")
    print("\n| ratio (within each round) | min-max | median | goal |\n|---|---|---|---|")
    for top, bottom, goal in RATIOS:
        if top in rates and bottom in rates:
            ratios = [a / b for a, b in zip(rates[top], rates[bottom])]
            print(f"| {top} / {bottom} req/s | {min(ratios):.2f}-{max(ratios):.2f}x | "
                  f"{statistics.median(ratios):.2f}x | {'' if goal is None else f'>= {goal}x'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
