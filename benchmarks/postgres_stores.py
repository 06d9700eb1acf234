"""The PostgreSQL stores against the Redis ones, in one run (issue 55, goal 5): the replay check of a verified
terminal request, in this process and served by uvicorn; webhook deliveries handled per second through the inbox
and through the Redis ledger; the replay table's size after a million signatures.

    .venv/bin/python benchmarks/postgres_stores.py               # about 3 minutes
    .venv/bin/python benchmarks/postgres_stores.py --rounds 5 --seconds 8 --signatures 2000000
    .venv/bin/python benchmarks/postgres_stores.py --parts replay,webhooks --rounds 3

Self-contained: starts its own redis-server (no persistence, as the tests run it) and PostgreSQL
(tests/support/postgres_server.py: initdb in a temporary directory, run as an unprivileged user, both on loopback
ports). PostgreSQL runs with ``fsync`` and ``synchronous_commit`` on, as in production (``--no-fsync``: off, as the
tests run it): the inbox's commit waits for the disk, where the Redis ledger's writes never do. The replay table is
UNLOGGED, so its checks never wait for the disk either way.

- ``replay`` (in this process): benchmarks/http_serving.py's apps, the ones uvicorn serves below, called as uvicorn
  calls them on distinct sealed requests: TerminalAuthMiddleware over an echo app with no replay store
  (``middleware``), the asyncio Redis store (``redis``) and the asyncio PostgreSQL store (``postgres``, its own pool,
  autocommit). One request at a time (each check a round trip of its own), and 16 at a time (as 16 connections
  would send them: each store sends the checks made in one turn of the event loop together, one round trip).
  Microseconds per request, and the CPU per request of this process and of the store's server (all of
  PostgreSQL's processes; redis-server's).
- ``served``: the same apps under uvicorn (one worker, uvloop, httptools), ``bare`` (no middleware), ``redis`` and
  ``postgres``, driven by ``wrk -t1 -c16`` for ``--seconds`` after a second's warm-up, every answer a 200.
- ``webhooks`` (in this process): ``TransferWebhookReceiver.handle_async`` on distinct signed deliveries (the
  verification included), each handler writing the merchant's row (one INSERT into a table of its own): with the
  Redis ledger (the write on an autocommit connection of its own, as a merchant writes beside a Redis ledger),
  with the PostgreSQL ledger (the same), and with the inbox (the write in the inbox's transaction: claim, write
  and record, one commit). One delivery at a time, and 16 at a time. Deliveries per second.
- ``size``: ``--signatures`` distinct signatures through the asyncio PostgreSQL store (1,000 checks at a time), then
  ``pg_total_relation_size`` of the replay table (heap, primary key, TOAST) and its bytes per signature; then every
  one expired and pruned (the store's own batched DELETE) and the table vacuumed, as autovacuum would, and as many
  again: the table reuses its space, it does not grow with the traffic, only with a window's worth.

Rounds interleave the kinds (each round in another order, all on the same servers); ratios are taken within each
round and reported as their min-max and median. Goal: the PostgreSQL replay check (what the store adds to a
request: ``postgres - middleware``) at most 1.5x the Redis one (``redis - middleware``), per request. Prints Markdown
tables; the last line is the figures as JSON.
"""

# ruff: noqa: S105, S608 (the benchmark's own webhook secret; its own table's name in its SQL)

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "tests"), str(ROOT / "benchmarks")]

import http_serving  # noqa: E402
from support.postgres_server import PostgresServer  # noqa: E402
from support.redis_memory import declare_new  # noqa: E402
from support.redis_server import RedisServer  # noqa: E402

REPLAY_KINDS = ["middleware", "redis", "postgres"]
SERVED_KINDS = ["bare", "redis", "postgres"]
WEBHOOK_KINDS = ["redis ledger", "postgres ledger", "postgres inbox"]
CONCURRENCY = 16
PARTS = ["replay", "served", "webhooks", "size"]
WEBHOOK_SECRET = "whsec-benchmark"
MERCHANT_TABLE = "bench_effects"
SIGNATURE_BATCH = 1_000
SIZE_SCHEMA = "size_part"
"""The size part's own schema (create_schema's tables): nothing of the other parts in its table."""
_requests_sealed = itertools.count(step=1_000_000_000)
"""Where each run's requests begin (http_serving.distinct_requests' ``first``): the stores keep every signature
of the run, so no two runs may seal the same request."""


# --- the stores' servers ----------------------------------------------------------------------------------------
class Servers:
    """The redis-server and PostgreSQL of the run, and the CPU time their processes used so far."""

    def __init__(self, redis_server: RedisServer, postgres: PostgresServer) -> None:
        self.redis = redis_server
        self.postgres = postgres
        with redis_server.client() as client:
            self._redis_pid = int(client.info("server")["process_id"])

    def cpu(self, kind: str) -> float:
        """Seconds of CPU used so far by the server of ``kind``'s store (0 for a kind without one). A PostgreSQL
        backend that ended meanwhile drops out of the sum: the pools here keep theirs."""
        if kind.startswith("redis"):
            return run_time(self._redis_pid)
        if kind.startswith("postgres"):
            total = 0.0
            for pid in self.postgres.processes():
                try:
                    total += run_time(pid)
                except (FileNotFoundError, ProcessLookupError):
                    continue
            return total
        return 0.0


def run_time(pid: int) -> float:
    """Seconds the process's main thread has run (Linux's /proc/PID/sched, to the nanosecond, where /proc/PID/stat
    counts ticks of 10 ms: too coarse for runs of a second). redis-server runs its commands there, and each
    PostgreSQL process is one thread."""
    for line in Path(f"/proc/{pid}/sched").read_text().splitlines():
        if line.startswith("se.sum_exec_runtime"):
            return float(line.rpartition(":")[2]) / 1000
    return http_serving.cpu_seconds(pid)


@contextmanager
def servers(fsync: bool) -> Iterator[Servers]:
    from pasarela.postgres import create_schema

    setting = "on" if fsync else "off"
    with RedisServer() as redis_server, PostgresServer(fsync=setting, full_page_writes=setting,
                                                       synchronous_commit=setting) as postgres:
        declare_new(redis_server)  # a new Redis: the stores judge at once (see pasarela._redis_store)
        with postgres.connect() as admin:
            create_schema(admin)
            create_schema(admin, schema=SIZE_SCHEMA)
            admin.execute(f"CREATE TABLE {MERCHANT_TABLE} (event text NOT NULL, at timestamptz DEFAULT now())")
        yield Servers(redis_server, postgres)


def store_url(kind: str, run: Servers) -> str:
    return run.postgres.conninfo if kind.startswith("postgres") else run.redis.url


# --- in this process --------------------------------------------------------------------------------------------
async def running(app: Any, work: Callable[[], Awaitable[Any]]) -> Any:
    """``work()`` between the app's lifespan startup and shutdown (where its store's client opens and closes)."""
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    started = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    lifespan = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"}}, messages.get, send))
    await messages.put({"type": "lifespan.startup"})
    await started.wait()
    try:
        return await work()
    finally:
        await messages.put({"type": "lifespan.shutdown"})
        await lifespan


async def in_parallel(count: int, one: Callable[[int], Awaitable[None]], concurrency: int) -> None:
    """``one(0)`` .. ``one(count - 1)``, ``concurrency`` of them at a time (as that many connections would)."""
    indexes = iter(range(count))

    async def lane() -> None:
        for index in indexes:
            await one(index)

    await asyncio.gather(*(lane() for _ in range(concurrency)))


class Timing:
    """One measurement: wall time, this process's CPU time and the store server's, per item."""

    def __init__(self, run: Servers, kind: str) -> None:
        self._run, self._kind = run, kind

    def __enter__(self) -> Timing:
        self._wall, self._cpu, self._server = time.perf_counter(), time.process_time(), self._run.cpu(self._kind)
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
        self.server = self._run.cpu(self._kind) - self._server

    def per(self, count: int) -> dict[str, float]:
        return {"us": self.wall / count * 1e6, "cpu_us": self.cpu / count * 1e6,
                "server_cpu_us": self.server / count * 1e6}


def replay_round(run: Servers, kind: str, count: int, concurrency: int) -> dict[str, float]:
    """``count`` distinct sealed requests through ``kind``'s app, ``concurrency`` at a time; every answer a 200."""
    import uvloop

    requests = http_serving.asgi_requests(count, next(_requests_sealed))
    app = http_serving.served_app(kind, store_url(kind, run))
    statuses: list[int] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def one(index: int) -> None:
        scope, message = requests[index]

        async def receive() -> dict[str, Any]:
            return message

        await app(scope, receive, send)

    async def measured() -> dict[str, float]:
        await in_parallel(min(count, 50), one, 1)  # the client's connections open before the clock starts
        with Timing(run, kind) as timing:
            await in_parallel(count - 50, lambda index: one(index + 50), concurrency)
        return timing.per(count - 50)

    figures = uvloop.run(running(app, measured) if kind != "middleware" else measured())
    if statuses != [200] * count:
        raise RuntimeError(f"{kind}: answers other than 200: {sorted(set(statuses))}")
    return figures


def deliveries(count: int) -> list[tuple[dict[str, str], bytes]]:
    """``count`` signed deliveries of distinct final events (dated now: inside the receiver's window)."""
    from pasarela.transfers import body_signature

    webhook_id = str(int(time.time() * 1000))
    signed = []
    for index in range(count):
        body = json.dumps({"token": f"tok-{index}", "transactionReference": f"{os.urandom(8).hex()}-{index}",
                           "status": "PAID"}).encode()
        signed.append(({"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(WEBHOOK_SECRET, body,
                                                                                         webhook_id)}, body))
    return signed


def webhook_round(run: Servers, kind: str, count: int, concurrency: int) -> dict[str, float]:
    """``count`` deliveries through a receiver of ``kind``, ``concurrency`` at a time; each answered "received" and
    its row written once."""
    import redis.asyncio
    import uvloop
    from psycopg_pool import AsyncConnectionPool

    from pasarela.transfers import TransferEvent, TransferWebhookReceiver
    from pasarela.transfers.inbox_postgres import AsyncPostgresInbox
    from pasarela.transfers.webhook_dedup_postgres import AsyncPostgresEventLedger
    from pasarela.transfers.webhook_dedup_redis import AsyncRedisEventLedger

    signed = deliveries(count)
    insert = f"INSERT INTO {MERCHANT_TABLE} (event) VALUES (%s)".encode()

    async def measured() -> dict[str, float]:
        pool = AsyncConnectionPool(run.postgres.conninfo, min_size=concurrency, max_size=concurrency, open=False,
                                   kwargs={"autocommit": True})
        client = redis.asyncio.Redis.from_url(run.redis.url)
        async with pool:
            await pool.wait()

            async def beside(event: TransferEvent) -> None:  # the merchant's write beside a ledger
                async with pool.connection() as connection:
                    await connection.execute(insert, (event.dedup_key,))

            async def inside(event: TransferEvent, tx: Any) -> None:  # ... inside the inbox's transaction
                await tx.execute(insert, (event.dedup_key,))

            if kind == "postgres inbox":
                receiver = TransferWebhookReceiver(inside, secret=WEBHOOK_SECRET, inbox=AsyncPostgresInbox(pool))
            else:
                ledger = (AsyncRedisEventLedger(client) if kind == "redis ledger" else AsyncPostgresEventLedger(pool))
                receiver = TransferWebhookReceiver(beside, secret=WEBHOOK_SECRET, ledger=ledger)
            answers: list[bytes] = []

            async def one(index: int) -> None:
                answers.append((await receiver.handle_async(*signed[index])).body)

            with Timing(run, kind) as timing:
                await in_parallel(count, one, concurrency)
        await client.aclose()
        if answers != [b'{"status": "received"}'] * count:
            raise RuntimeError(f"{kind}: answers other than received: {sorted(set(answers))}")
        return timing.per(count)

    figures: dict[str, float] = uvloop.run(measured())
    with run.postgres.connect() as admin:
        written = admin.execute(f"SELECT count(DISTINCT event), count(*) FROM {MERCHANT_TABLE}").fetchone()
        admin.execute(f"TRUNCATE {MERCHANT_TABLE}")
    if written != (count, count):
        raise RuntimeError(f"{kind}: {written} rows (distinct, all) for {count} events")
    return figures


# --- served by uvicorn ------------------------------------------------------------------------------------------
def served_round(run: Servers, kind: str, scratch: Path, seconds: int, rate: int, log: Any) -> dict[str, float]:
    """wrk against ``kind``'s app under uvicorn (http_serving.server): requests per second, and the CPU per request
    of the uvicorn process and of the store's server."""
    script = scratch / "requests.lua"
    script.write_text(http_serving.WRK_SCRIPT)
    requests = scratch / "requests.txt"
    main_count, warm_count = rate * seconds, rate * http_serving.WARM_UP_SECONDS
    http_serving.write_requests(requests, main_count + warm_count, next(_requests_sealed))  # sealed now
    with http_serving.server(kind, store_url(kind, run), log) as (port, pid):
        http_serving.wrk(port, script, requests, main_count + 1, main_count + warm_count,
                         http_serving.WARM_UP_SECONDS, CONCURRENCY)
        before, server_before = http_serving.cpu_seconds(pid), run.cpu(kind)
        per_second, count = http_serving.wrk(port, script, requests, 1, main_count, seconds, CONCURRENCY)
        return {"per_second": per_second, "us": 1e6 / per_second,
                "cpu_us": (http_serving.cpu_seconds(pid) - before) / count * 1e6,
                "server_cpu_us": (run.cpu(kind) - server_before) / count * 1e6}


# --- the replay table's size ------------------------------------------------------------------------------------
def table_size(run: Servers, signatures: int, cycles: int) -> dict[str, Any]:
    """``cycles`` windows of ``signatures`` first uses each through the asyncio store: after each, the table's size
    (heap, primary key); then the window ends, the store prunes every row and the table is vacuumed, as
    autovacuum would, before the next window."""
    import uvloop
    from psycopg_pool import AsyncConnectionPool

    from pasarela.terminal.replay_postgres import AsyncPostgresReplayStore

    def signature(index: int) -> str:
        """As a request's: 128 hex digits of a SHA-512, spread over the whole primary key as real ones are."""
        return hashlib.sha512(index.to_bytes(8, "big")).hexdigest()

    async def window(first: int, now: float) -> tuple[float, float, int]:
        """Fill the window beginning at ``now``, then prune it once it is over: the seconds each took, rows pruned."""
        async with AsyncConnectionPool(run.postgres.conninfo, min_size=1, max_size=2,
                                       kwargs={"autocommit": True}) as pool:
            store = AsyncPostgresReplayStore(pool, schema=SIZE_SCHEMA, prune_interval=None, clock=lambda: now)
            start = time.perf_counter()
            for batch in range(first, first + signatures, SIGNATURE_BATCH):
                last = min(batch + SIGNATURE_BATCH, first + signatures)
                answers = await asyncio.gather(*(store.first_use(signature(index), now + 300.0)
                                                 for index in range(batch, last)))
                if not all(answers):
                    raise RuntimeError("a distinct signature was refused")
            filled = time.perf_counter() - start
            sizes.append(size())
            over = AsyncPostgresReplayStore(pool, schema=SIZE_SCHEMA, prune_interval=None, clock=lambda: now + 600.0)
            start = time.perf_counter()
            deleted = await over.prune()
            return filled, time.perf_counter() - start, deleted

    def size() -> tuple[int, int]:
        with run.postgres.connect() as admin:
            row = admin.execute(f"SELECT pg_relation_size('{SIZE_SCHEMA}.replay_signatures'),"
                                f" pg_indexes_size('{SIZE_SCHEMA}.replay_signatures')").fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    sizes: list[tuple[int, int]] = []
    fills, prunes = [], []
    for cycle in range(cycles):
        filled, pruned, deleted = uvloop.run(window(cycle * signatures, time.time() + cycle * 1000.0))
        if deleted != signatures:
            raise RuntimeError(f"pruned {deleted} of {signatures} expired signatures")
        with run.postgres.connect() as admin:
            admin.execute(f"VACUUM {SIZE_SCHEMA}.replay_signatures")
        fills.append(filled)
        prunes.append(pruned)
    return {"signatures": signatures, "sizes": sizes, "fill_seconds": fills, "prune_seconds": prunes}


# --- the report -------------------------------------------------------------------------------------------------
def rotated(kinds: list[str], round_number: int) -> list[str]:
    shift = round_number % len(kinds)
    return kinds[shift:] + kinds[:shift]


def spread(values: list[float], digits: int = 0) -> str:
    return f"{min(values):,.{digits}f}-{max(values):,.{digits}f}"


def measured_rows(measured: dict[tuple[str, int], list[dict[str, float]]], what: str, *, per_second: bool) -> None:
    """A table of one row per kind and concurrency: the time per item (or items per second), and the CPU per item of
    this process and of the store's server (min-max over rounds)."""
    print(f"| {what} | in flight | {'per second' if per_second else 'us each'} | this process's CPU each, us | "
          "the store server's CPU each, us |\n|---|---|---|---|---|")
    for (kind, concurrency), rows in measured.items():
        timing = spread([1e6 / r["us"] for r in rows]) if per_second else spread([r["us"] for r in rows], 1)
        print(f"| {kind} | {concurrency} | {timing} | {spread([r['cpu_us'] for r in rows], 1)} | "
              f"{spread([r['server_cpu_us'] for r in rows], 1)} |")


def ratio_row(name: str, ratios: list[float], goal: str = "") -> str:
    return f"| {name} | {min(ratios):.2f}-{max(ratios):.2f}x | {statistics.median(ratios):.2f}x | {goal} |"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each kind once per round (default 3)")
    parser.add_argument("--requests", type=int, default=2_000,
                        help="requests per in-process replay run, one at a time; 16 at a time: twice as many")
    parser.add_argument("--deliveries", type=int, default=500,
                        help="webhook deliveries per run, one at a time; 16 at a time: three times as many")
    parser.add_argument("--seconds", type=int, default=5, help="each wrk run of the served part (default 5)")
    parser.add_argument("--max-rate", type=int, default=25_000,
                        help="requests per second sealed for each wrk run (distinct requests: rate x seconds)")
    parser.add_argument("--signatures", type=int, default=1_000_000, help="signatures a window of the size part")
    parser.add_argument("--windows", type=int, default=3, help="windows of the size part, one after the other")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"some of {','.join(PARTS)}")
    parser.add_argument("--no-fsync", action="store_true", help="PostgreSQL without fsync (as the tests run it)")
    options = parser.parse_args(argv)
    parts = options.parts.split(",")
    if set(parts) - set(PARTS):
        parser.error(f"unknown parts {sorted(set(parts) - set(PARTS))}: choose from {PARTS}")
    if "served" in parts and http_serving.missing_tools():
        print(f"postgres_stores.py: missing {', '.join(http_serving.missing_tools())}: `scripts/setup bench` "
              "installs them", file=sys.stderr)
        return 2
    results: dict[str, Any] = {"rounds": options.rounds, "fsync": not options.no_fsync}
    replay: dict[tuple[str, int], list[dict[str, float]]] = {}
    served: dict[str, list[dict[str, float]]] = {kind: [] for kind in SERVED_KINDS}
    webhooks: dict[tuple[str, int], list[dict[str, float]]] = {}
    started = time.monotonic()
    with servers(fsync=not options.no_fsync) as run, tempfile.TemporaryDirectory(prefix="pasarela-pg-") as scratch, \
            open(Path(scratch) / "servers.log", "w+b") as log:
        for round_number in range(options.rounds):
            if "replay" in parts:
                for concurrency, count in ((1, options.requests), (CONCURRENCY, 2 * options.requests)):
                    for kind in rotated(REPLAY_KINDS, round_number):
                        replay.setdefault((kind, concurrency), []).append(replay_round(run, kind, count, concurrency))
            if "webhooks" in parts:
                for concurrency, count in ((1, options.deliveries), (CONCURRENCY, 3 * options.deliveries)):
                    for kind in rotated(WEBHOOK_KINDS, round_number):
                        webhooks.setdefault((kind, concurrency), []).append(
                            webhook_round(run, kind, count, concurrency))
            if "served" in parts:
                for kind in rotated(SERVED_KINDS, round_number):
                    served[kind].append(served_round(run, kind, Path(scratch), options.seconds, options.max_rate,
                                                     log))
            print(f"round {round_number + 1} of {options.rounds} done ({time.monotonic() - started:.0f} s)",
                  file=sys.stderr)
        if "size" in parts:
            results["size"] = table_size(run, options.signatures, options.windows)
        with run.postgres.connect() as admin:
            version = admin.execute("SHOW server_version").fetchone()
    print(f"PostgreSQL {version[0] if version else '?'} (fsync {'on' if results['fsync'] else 'off'}), redis-server "
          f"without persistence, on loopback; {options.rounds} interleaved rounds; "
          f"{time.monotonic() - started:.0f} s in all\n")

    if replay:
        print("Replay check, in one process (TerminalAuthMiddleware over an echo app, the asyncio stores), per "
              "request (min-max over rounds):\n")
        measured_rows(replay, "store", per_second=False)
        print("\n| ratio (within each round) | min-max | median | goal |\n|---|---|---|---|")
        results["replay"] = {}
        for concurrency in (1, CONCURRENCY):
            bare, on_redis, on_postgres = (replay[(kind, concurrency)] for kind in REPLAY_KINDS)
            whole = [p["us"] / r["us"] for p, r in zip(on_postgres, on_redis)]
            check = [(p["us"] - b["us"]) / (r["us"] - b["us"]) for p, r, b in zip(on_postgres, on_redis, bare)]
            cpu = [(p["cpu_us"] + p["server_cpu_us"] - b["cpu_us"]) / (r["cpu_us"] + r["server_cpu_us"] - b["cpu_us"])
                   for p, r, b in zip(on_postgres, on_redis, bare)]
            print(ratio_row(f"{concurrency} in flight: the check (store - middleware), postgres / redis", check,
                            "<= 1.5x"))
            print(ratio_row(f"{concurrency} in flight: the whole request, postgres / redis", whole))
            print(ratio_row(f"{concurrency} in flight: the check's CPU (client + server), postgres / redis", cpu))
            results["replay"][str(concurrency)] = {
                "check_postgres_over_redis": round(statistics.median(check), 3),
                "request_postgres_over_redis": round(statistics.median(whole), 3),
                "check_cpu_postgres_over_redis": round(statistics.median(cpu), 3),
                **{f"{kind}_us": round(statistics.median(r["us"] for r in replay[(kind, concurrency)]), 1)
                   for kind in REPLAY_KINDS}}
        print()
    if any(served.values()):
        print(f"Served by uvicorn (one worker, uvloop, httptools), `wrk -t1 -c{CONCURRENCY} -d{options.seconds}s`, "
              "distinct sealed requests, every answer a 200:\n")
        print("| server | req/s | uvicorn's CPU per request, us | the store server's CPU per request, us |")
        print("|---|---|---|---|")
        for kind, rows in served.items():
            print(f"| {http_serving.TITLES[kind]} | {spread([r['per_second'] for r in rows])} | "
                  f"{spread([r['cpu_us'] for r in rows], 1)} | {spread([r['server_cpu_us'] for r in rows], 1)} |")
        time_ratio = [r["per_second"] / p["per_second"] for p, r in zip(served["postgres"], served["redis"])]
        check = [(p["us"] - b["us"]) / (r["us"] - b["us"])
                 for p, r, b in zip(served["postgres"], served["redis"], served["bare"])]
        print("\n| ratio (within each round) | min-max | median | goal |\n|---|---|---|---|")
        print(ratio_row("time per request, postgres / redis", time_ratio))
        print(ratio_row("time the middleware and its store add (over bare), postgres / redis", check))
        print(ratio_row("redis / bare req/s", [r["per_second"] / b["per_second"]
                                              for r, b in zip(served["redis"], served["bare"])]))
        print(ratio_row("postgres / bare req/s", [p["per_second"] / b["per_second"]
                                                 for p, b in zip(served["postgres"], served["bare"])]))
        print()
        results["served"] = {f"{kind}_per_second": round(statistics.median(r["per_second"] for r in rows))
                             for kind, rows in served.items()}
        results["served"]["request_postgres_over_redis"] = round(statistics.median(time_ratio), 3)
    if webhooks:
        print("Webhook deliveries handled per second (TransferWebhookReceiver.handle_async, signature checked, one "
              "merchant INSERT each):\n")
        measured_rows(webhooks, "ledger", per_second=True)
        print("\n| ratio (within each round) | min-max | median | goal |\n|---|---|---|---|")
        results["webhooks"] = {}
        for concurrency in (1, CONCURRENCY):
            for kind in WEBHOOK_KINDS[1:]:
                ratios = [r["us"] / k["us"] for k, r in zip(webhooks[(kind, concurrency)],
                                                           webhooks[("redis ledger", concurrency)])]
                print(ratio_row(f"{concurrency} in flight: {kind} / redis ledger, deliveries/s", ratios))
                results["webhooks"][f"{kind} / redis ledger, {concurrency} in flight"] = round(
                    statistics.median(ratios), 3)
            for kind in WEBHOOK_KINDS:
                results["webhooks"][f"{kind} per second, {concurrency} in flight"] = round(
                    statistics.median(1e6 / r["us"] for r in webhooks[(kind, concurrency)]))
        print()
    if "size" in results:
        size = results["size"]
        count = size["signatures"]
        print(f"The replay table ({count:,} signatures a window, each a SHA-512 in hex, {SIGNATURE_BATCH:,} checks at "
              "a time; then the window over, every row pruned by the store, the table vacuumed):\n")
        print("| window | heap, MiB | primary key, MiB | total, MiB | bytes per signature | filled in, s | "
              "pruned in, s |\n|---|---|---|---|---|---|---|")
        for number, ((heap, index), filled, pruned) in enumerate(zip(size["sizes"], size["fill_seconds"],
                                                                  size["prune_seconds"]), 1):
            print(f"| {number} | {heap / 2**20:,.1f} | {index / 2**20:,.1f} | {(heap + index) / 2**20:,.1f} | "
                  f"{(heap + index) / count:.0f} | {filled:.1f} | {pruned:.1f} |")
        print()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
