"""Property-based API test of the sandbox against its own OpenAPI document (schemathesis), for a bounded time.

Every check of schemathesis runs (responses match the document in status, content type, headers and
schema; schema-violating requests are refused; missing auth is refused; unsupported methods get 405;
stateful sequences follow the document's links), except ``positive_data_acceptance``: a request can
match the schema and still break a rule the schema cannot say (an amount adding up to zero, a token
that was never issued), which the sandbox refuses with a documented 400. No answer may be a 5xx, except
the specified QR-CODE-0001 scenario (HTTP 500): that is checked on every recorded exchange.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.sandbox_process import sandbox_process

SECONDS = 45
PUBLIC, PRIVATE = "pk-schemathesis", "sk-schemathesis"
# max-redirects = 0: the sandbox's own answer is checked against the document (GET / is a documented 303 to the
# dashboard), not the page it leads to: schemathesis 4.30 (the newest for Python 3.10) follows every redirect unless
# told, 4.32 stops at documented ones.
CONFIG = """
max-redirects = 0

[checks.not_a_server_error]
# QR-CODE-0001 is HTTP 500 by the spec; every 5xx is checked to be that one below.
expected-statuses = ["2xx", "3xx", "4xx", "500"]

[checks.positive_data_acceptance]
enabled = false
"""


@pytest.fixture
def sandbox_url() -> Iterator[str]:
    options = ["--db", ":memory:", "--public-key", PUBLIC, "--private-key", PRIVATE, "--timeout-delay", "0.5",
               "--log-level", "error"]
    with sandbox_process(options) as started:
        yield started.url


def test_schemathesis_finds_no_failure_and_no_unexpected_server_error(sandbox_url: str, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
               f"{sandbox_url}/openapi.json", "--max-time", str(SECONDS), "--request-timeout", "10",
               "-H", f"Public-Merchant-Id: {PUBLIC}", "-H", f"Private-Merchant-Id: {PRIVATE}",
               "--report", "har", "--report-dir", str(tmp_path), "--output-truncate", "true"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 60, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    [har] = tmp_path.glob("har-*.json")
    entries = json.loads(har.read_text())["log"]["entries"]
    assert len(entries) > 500, f"only {len(entries)} requests were made"
    for entry in entries:
        response = entry["response"]
        if response["status"] >= 500:
            body = json.loads(response["content"].get("text") or "{}")
            assert (response["status"], body.get("code")) == (500, "QR-CODE-0001"), entry
