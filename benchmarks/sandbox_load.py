"""Load on the sandbox over loopback: requests per second and errors, for a bounded time.

    python benchmarks/sandbox_load.py                       # starts its own sandbox, 30 s
    python benchmarks/sandbox_load.py --duration 5 --connections 8
    python benchmarks/sandbox_load.py --url http://127.0.0.1:8790   # an already running sandbox

Keep-alive HTTP/1.1 connections (asyncio, one request in flight each) send a mix of what merchants
do most: status queries (70 %), transfer token creation (20 %) and card token creation (10 %).
An error is a connection failure or any answer other than the expected status. The last line is
JSON: ``{"requests": ..., "seconds": ..., "requests_per_second": ..., "errors": ...}``.
Only 127.0.0.1 is ever targeted; the run stops by itself after ``--duration`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import urlsplit

PUBLIC_KEY = "sandbox-public-key"
PRIVATE_KEY = "sandbox-private-key"
_STARTUP_SECONDS = 20.0
_TRANSFER_TOKEN = json.dumps({"currency": "COP", "amount": {"subtotalIva": 0, "subtotalIva0": 5000, "iva": 0},
                              "flow": {"processorName": "BRE-B", "type": "QR"}}).encode()
_CARD_TOKEN = json.dumps({"card": {"name": "Ana", "number": "5100000000000008", "expiryMonth": "12",
                                   "expiryYear": "29", "cvv": "123"}, "totalAmount": 5000, "currency": "COP"}).encode()


@dataclass
class Tally:
    requests: int = 0
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)

    def error(self, description: str) -> None:
        self.errors += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(description)


def _request(method: str, path: str, host: str, key: tuple[str, str], body: Optional[bytes] = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"{key[0]}: {key[1]}", "Connection: keep-alive"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (body or b"")


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> tuple[int, bytes]:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def _prepare(host: str, port: int, count: int) -> list[str]:
    """Tokens of initialized transfers, for the status queries."""
    reader, writer = await asyncio.open_connection(host, port)
    tokens = []
    for _ in range(count):
        status, body = await _exchange(reader, writer, _request("POST", "/transfer/v1/tokens", host,
                                                                ("Public-Merchant-Id", PUBLIC_KEY), _TRANSFER_TOKEN))
        token = json.loads(body)["token"]
        init = json.dumps({"token": token, "amount": {"subtotalIva": 0, "subtotalIva0": 5000, "iva": 0}}).encode()
        status, body = await _exchange(reader, writer, _request("POST", "/transfer/v1/init", host,
                                                                ("Private-Merchant-Id", PRIVATE_KEY), init))
        if status != 201:
            raise RuntimeError(f"could not start a transfer to query: HTTP {status} {body[:200]!r}")
        tokens.append(token)
    writer.close()
    return tokens


async def _worker(host: str, port: int, tokens: list[str], deadline: float, tally: Tally, seed: int) -> None:
    chooser = random.Random(seed)  # noqa: S311 (a request mix, not a secret)
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        tally.error(f"connect: {exc}")
        return
    try:
        while time.monotonic() < deadline:
            draw = chooser.random()
            if draw < 0.7:
                request = _request("GET", f"/transfer/v1/status/{chooser.choice(tokens)}", host,
                                   ("Private-Merchant-Id", PRIVATE_KEY))
                expected = 200
            elif draw < 0.9:
                request = _request("POST", "/transfer/v1/tokens", host, ("Public-Merchant-Id", PUBLIC_KEY),
                                   _TRANSFER_TOKEN)
                expected = 201
            else:
                request = _request("POST", "/card/v1/tokens", host, ("Public-Merchant-Id", PUBLIC_KEY), _CARD_TOKEN)
                expected = 201
            try:
                status, body = await _exchange(reader, writer, request)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                tally.error(f"{type(exc).__name__}: {exc}")
                return
            tally.requests += 1
            if status != expected:
                tally.error(f"HTTP {status}: {body[:200]!r}")
    finally:
        writer.close()


async def _load(url: str, duration: float, connections: int) -> tuple[Tally, float]:
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80
    if host != "127.0.0.1":
        raise SystemExit("the load test targets 127.0.0.1 only")
    tokens = await _prepare(host, port, 20)
    tally = Tally()
    started = time.monotonic()
    await asyncio.gather(*(_worker(host, port, tokens, started + duration, tally, seed)
                           for seed in range(connections)))
    return tally, time.monotonic() - started


@contextmanager
def _own_sandbox(db: str) -> Iterator[str]:
    """A sandbox in a subprocess (its own core), on a free port; yields its URL."""
    command = [sys.executable, "-m", "pasarela.sandbox", "--port", "0", "--db", db, "--log-level", "error"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        stdout = process.stdout
        if stdout is None:
            raise RuntimeError("no pipe to the sandbox")
        ready, _, _ = select.select([stdout], [], [], _STARTUP_SECONDS)
        line = stdout.readline() if ready else ""
        if " listening on " not in line:
            raise SystemExit(f"the sandbox did not start: {line!r}")
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load (default 30)")
    parser.add_argument("--connections", type=int, default=16, help="concurrent connections (default 16)")
    parser.add_argument("--url", help="a running sandbox on 127.0.0.1 (default: start one)")
    args = parser.parse_args(argv)
    if not 0 < args.duration <= 600 or not 0 < args.connections <= 256:
        parser.error("--duration must be in (0, 600] and --connections in (0, 256]")
    with tempfile.TemporaryDirectory() as scratch:
        if args.url:
            tally, seconds = asyncio.run(_load(args.url, args.duration, args.connections))
        else:
            with _own_sandbox(os.path.join(scratch, "load.sqlite3")) as url:
                tally, seconds = asyncio.run(_load(url, args.duration, args.connections))
    rate = tally.requests / seconds if seconds else 0.0
    print(f"{tally.requests} requests in {seconds:.1f} s over {args.connections} connections: "
          f"{rate:.0f} requests/s, {tally.errors} errors")
    for description in tally.first_errors:
        print(f"  error: {description}")
    print(json.dumps({"requests": tally.requests, "seconds": round(seconds, 3),
                      "requests_per_second": round(rate, 1), "errors": tally.errors}))
    return 0 if tally.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
