"""Issue 56 item 4: ``pasarela sandbox tail`` follows a running sandbox (the real CLI in a subprocess, the sandbox
and a receiver under uvicorn): a line per request (method, path, status, latency, key, the terminal's verdict) and
per webhook attempt (event, URL, the receiver's status and answer, the next retry), filters, JSON lines, what it
prints from a receiver's answer plain text; its polls are not in the access log; errors one line, status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from pasarela.testing import LiveSandbox, ServedApp
from pasarela.transfers import Amount, TransferInitRequest, TransferTokenRequest
from support.answering_receiver import Answering

REFUSING = b'\x1b[2J\x1b[31m{"status":"invalid signature"}\n'
"""A receiver's answer holding terminal escape sequences."""


def _tail(live: LiveSandbox, *options: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "tail", "--url", live.url, "--since-start",
                           "--interval", "0.1", *options], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def traffic(live: LiveSandbox) -> Iterator[str]:
    """A token request, an init paid at once (spec 8's 10000) whose webhook is refused, a status query, a 404 and a
    terminal request refused AUTH-001; the transfer's token."""
    live.reset()
    with ServedApp(Answering(401, REFUSING)) as hooks:
        live.webhook_url = f"{hooks.url}/hooks"
        amount = Amount.untaxed(10000, currency="COP")
        token = live.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
        live.transfers.init(TransferInitRequest(token=token, amount=amount))
        live.wait_for_webhooks(1, token=token, delivered=False)
        live.webhook_url = None
    live.transfers.status(token)
    httpx.get(f"{live.url}/no/such/path")
    httpx.post(f"{live.url}/terminal/v1/sync/charge", json={"data": "00:00"},
               headers={"Authorization": "Basic 00", "timestamp": "1700000000"})
    yield token


def test_each_request_and_webhook_attempt_is_one_line(live: LiveSandbox, traffic: str) -> None:
    run = _tail(live, "--count", "6")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 6
    assert [line.split()[1:4] for line in lines if " webhook " not in line] == [
        ["POST", "/transfer/v1/tokens", "201"], ["POST", "/transfer/v1/init", "201"],
        ["GET", f"/transfer/v1/status/{traffic}", "200"], ["GET", "/no/such/path", "404"],
        ["POST", "/terminal/v1/sync/charge", "401"]]
    requests = [line for line in lines if " webhook " not in line]
    assert requests[0].endswith("key=public") and requests[1].endswith("key=private")
    assert requests[-1].endswith("key=none verdict=clock_skew")       # the AUTH-001's cause, as diagnose names it
    (webhook,) = [line for line in lines if " webhook " in line]
    assert " webhook approvedTransaction " in webhook and "/hooks 401 " in webhook
    assert '?[2J?[31m{"status":"invalid signature"}?' in webhook       # no escape reaches the terminal
    assert "\x1b" not in run.stdout and " retry at " in webhook


def test_filters_narrow_what_is_shown(live: LiveSandbox, traffic: str) -> None:
    only_webhooks = _tail(live, "--kind", "webhook", "--count", "1")
    assert only_webhooks.stdout.count("\n") == 1 and " webhook " in only_webhooks.stdout
    client_errors = _tail(live, "--status", "4xx", "--kind", "api", "--count", "1")
    assert client_errors.stdout.split()[1:4] == ["GET", "/no/such/path", "404"]
    by_token = _tail(live, "--token", traffic, "--method", "GET", "--count", "1")
    assert by_token.stdout.split()[1:3] == ["GET", f"/transfer/v1/status/{traffic}"]
    by_path = _tail(live, "--path", "/terminal/", "--count", "1")
    assert by_path.stdout.split()[1:4] == ["POST", "/terminal/v1/sync/charge", "401"]


def test_json_lines(live: LiveSandbox, traffic: str) -> None:
    run = _tail(live, "--output", "json", "--count", "6")
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert sorted(record["type"] for record in records) == ["request"] * 5 + ["webhook"]
    (webhook,) = [record for record in records if record["type"] == "webhook"]
    assert webhook["status"] == 401 and webhook["token"] == traffic and webhook["delivered"] is False
    assert webhook["answer"].startswith("\x1b[2J")                    # JSON escapes it: the value as it was


def test_it_follows_what_happens_after_it_started(live: LiveSandbox) -> None:
    live.reset()
    follower = subprocess.Popen([sys.executable, "-m", "pasarela", "sandbox", "tail", "--url", live.url,
                                 "--interval", "0.1", "--count", "1", "--kind", "api"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        httpx.get(f"{live.url}/before/it/asked")  # may come before its first poll: then not shown
        shown = ""
        for _ in range(100):
            httpx.get(f"{live.url}/after")
            try:
                shown, _ = follower.communicate(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        follower.kill()
    assert shown.split()[1:4] == ["GET", "/after", "404"]


def test_its_polls_are_neither_logged_nor_recorded(live: LiveSandbox, traffic: str) -> None:
    _tail(live, "--count", "2")
    live.sandbox.store.flush_requests()
    with live.sandbox.store.read() as tx:
        paths = [call.path for call in tx.logged_calls("api")]
    assert not any(path.startswith("/sandbox/v1/feed") for path in paths) and paths


def test_errors_are_one_line_and_status_2(live: LiveSandbox) -> None:
    unreachable = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "tail", "--url", "http://127.0.0.1:9"],
                                 capture_output=True, text=True, timeout=30)
    assert unreachable.returncode == 2 and unreachable.stderr.count("\n") == 1
    assert "cannot reach the sandbox at http://127.0.0.1:9" in unreachable.stderr
    wrong_key = subprocess.run([sys.executable, "-m", "pasarela", "sandbox", "tail", "--url", live.url],
                               capture_output=True, text=True, timeout=30,
                               env={**__import__("os").environ, "PASARELA_SANDBOX_PRIVATE_KEY": "not-the-key"})
    assert wrong_key.returncode == 2 and "the private key was refused" in wrong_key.stderr
    assert "not-the-key" not in wrong_key.stderr
    bad = _tail(live, "--status", "4x")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "4xx" in bad.stderr
