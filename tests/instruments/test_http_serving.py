"""benchmarks/http_serving.py's servers do the work they are timed for (issue 42, goal 4): each, started as the
benchmark starts it, answers a sealed request 200 with its payload, and the verifying ones refuse a tampered
signature with AUTH-001 and a replay with AUTH-001 (a server that accepted everything, or refused everything, would
time fast). Real processes: uvicorn, node, redis-server, PostgreSQL (benchmarks/postgres_stores.py's server); a missing
one fails the test."""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import http_serving
import pasarela
from pasarela.errors import AUTH_001_BODY
from support.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis_url() -> str:
    assert shutil.which("redis-server"), "redis-server is not installed (scripts/setup test installs it)"
    with RedisServer() as server:
        yield server.url  # type: ignore[misc]


@pytest.fixture(scope="module")
def postgres_conninfo() -> Iterator[str]:
    """A PostgreSQL of this module's own with the stores' schema where the benchmark's server looks (the default
    one, which the session's shared server leaves to the tests that check it is never created unasked)."""
    from pasarela.postgres import create_schema
    from support.postgres_server import PostgresServer

    with PostgresServer() as server:
        with server.connect() as admin:
            create_schema(admin)
        yield server.conninfo


def _sealed(ref: str) -> tuple[dict[str, str], bytes, dict[str, object]]:
    payload = dict(http_serving.payload_of_size(http_serving.PAYLOAD_BYTES), ref=ref)
    sealed = pasarela.Terminal(http_serving.BUSINESS_CODE, http_serving.SERIAL).seal(payload)
    assert sealed.body is not None
    return sealed.headers, sealed.body, payload


@pytest.mark.parametrize("kind", ["bare+open", "middleware", "memory", "exact", "redis", "node", "postgres"])
def test_a_verifying_server_accepts_once_and_refuses_a_tampered_signature(kind: str, redis_url: str,
                                                                          request: pytest.FixtureRequest) -> None:
    assert shutil.which("node"), "`node` is not installed"
    headers, body, payload = _sealed(f"ord-{kind}")
    signature = headers["Authorization"]
    tampered = {**headers, "Authorization": signature[:-1] + ("0" if signature[-1] != "0" else "1")}
    store = request.getfixturevalue("postgres_conninfo") if kind == "postgres" else redis_url
    with tempfile.TemporaryFile() as log, http_serving.server(kind, store, log) as (port, _):
        url = f"http://127.0.0.1:{port}/"
        refused = httpx.post(url, headers=tampered, content=body)
        accepted = httpx.post(url, headers=headers, content=body)
        again = httpx.post(url, headers=headers, content=body)
    assert (refused.status_code, refused.json()) == (401, AUTH_001_BODY)
    assert accepted.status_code == 200
    assert json.loads(accepted.content) == payload
    if kind in ("memory", "redis", "postgres"):  # the others keep no replay store (as node_verify.js's verify)
        assert (again.status_code, again.json()) == (401, AUTH_001_BODY)
    else:
        assert again.status_code == 200


def test_the_bare_app_echoes_the_body(redis_url: str) -> None:
    headers, body, _ = _sealed("ord-bare")
    with tempfile.TemporaryFile() as log, http_serving.server("bare", redis_url, log) as (port, _):
        answer = httpx.post(f"http://127.0.0.1:{port}/", headers=headers, content=body)
    assert (answer.status_code, answer.content) == (200, body)


def test_in_process_drives_each_python_app_and_prints_its_time(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """--in-process calls each Python server's app, the Redis one on its own redis-server, on distinct sealed
    requests 32 at a time and checks every answer was a 200 (a refusing app would raise), then prints one row per
    app, Redis's own time per claim, and the ratios with issue 57's goal."""
    monkeypatch.setattr(http_serving, "IN_PROCESS_REQUESTS", 64)
    assert http_serving.main(["--in-process", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ")]
    apps = [row for row in rows if row[0][2:] in http_serving.TITLES.values()]
    assert [row[0][2:] for row in apps] == [http_serving.TITLES[kind] for kind in http_serving.IN_PROCESS]
    assert all(float(cell.split()[0]) > 0 for row in apps for cell in row[1:3])
    assert "32 at a time" in out
    claims = re.search(r"Redis's own time \(INFO commandstats, EVALSHA\): ([\d.]+) .* ([\d.]+) \(.*claims per "
                       r"script call", out)
    assert claims is not None and float(claims.group(1)) > 0
    assert 1 < float(claims.group(2)) <= http_serving.IN_PROCESS_CONCURRENCY  # the claims of a turn went together
    ratio = next(row for row in rows if row[0] == "| redis / memory per request")
    assert float(ratio[1].split()[0]) > 0 and ratio[3].strip(" |") == "<= 2.0x"
