"""The durable outbox: a sandbox killed with SIGKILL while webhooks are pending (one of them delivered but
not yet acknowledged) and restarted on the same database delivers every webhook, and an idempotent
receiver handles each event exactly once; no transaction is lost."""

# ruff: noqa: S105 (test keys and secrets are fixtures)

from __future__ import annotations

import json
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from pasarela.transfers import TransferEvent, TransferWebhookReceiver
from support.local_server import LocalServer, Receive, Send, read_body
from support.sandbox_process import Started, sandbox_process
from support.waiting import wait_for

PUBLIC = "pk-restart"
PRIVATE = "sk-restart"
SECRET = "whsec-restart"
DEADLINE = 20.0
_REFUSE, _HOLD, _OPEN = "refuse", "hold", "open"


class GatedReceiver:
    """The merchant's idempotent receiver behind a gate: refuse (503), hold (handle the event, then never
    answer: the sandbox dies waiting) or open (answer as the receiver does)."""

    def __init__(self) -> None:
        self.mode = _REFUSE
        self.handled: Counter[str] = Counter()
        self.deliveries: dict[str, Counter[str]] = {_REFUSE: Counter(), _HOLD: Counter(), _OPEN: Counter()}
        self.held = threading.Event()
        self._lock = threading.Lock()
        self.receiver = TransferWebhookReceiver(self._on_event, secret=SECRET, merchant_id=PUBLIC)

    def _on_event(self, event: TransferEvent) -> None:
        with self._lock:
            self.handled[event.dedup_key] += 1

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        with self._lock:
            mode = self.mode
            # One webhook per transfer here: the token names the event (X-Kushki-Id dates each attempt).
            self.deliveries[mode][json.loads(body)["token"]] += 1
        if mode == _REFUSE:
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        reply = await self.receiver.handle_async(headers, body)
        if mode == _HOLD:
            self.held.set()
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        await send({"type": "http.response.start", "status": reply.status,
                    "headers": [(name.encode(), value.encode()) for name, value in reply.headers.items()]})
        await send({"type": "http.response.body", "body": reply.body})


@contextmanager
def sandbox(db: Path, webhook_url: str) -> Iterator[Started]:
    options = ["--db", str(db), "--public-key", PUBLIC, "--webhook-url", webhook_url, "--webhook-backoff", "0.05",
               "--webhook-backoff-max", "0.2", "--log-level", "error"]
    environment = {"PASARELA_SANDBOX_PRIVATE_KEY": PRIVATE, "PASARELA_SANDBOX_WEBHOOK_SECRET": SECRET}
    with sandbox_process(options, environment=environment) as started:
        yield started


def outbox(client: httpx.Client) -> list[dict[str, Any]]:
    hooks: list[dict[str, Any]] = client.get("/sandbox/v1/webhooks").json()["webhooks"]
    return hooks


def start_transfers(client: httpx.Client) -> dict[str, str]:
    """Five transfers that end with a webhook and two that stay initialized: token -> expected status."""
    expected: dict[str, str] = {}
    flow = {"processorName": "BRE-B", "type": "QR"}
    for total, status in ((10000, "approvedTransaction"), (10000, "approvedTransaction"),
                          (12000, "declinedTransaction"), (9999, "initializedTransaction"),
                          (5000, "initializedTransaction")):
        amount = {"subtotalIva": 0, "subtotalIva0": total, "iva": 0}
        token = client.post("/transfer/v1/tokens", json={"currency": "COP", "amount": amount, "flow": flow},
                            headers={"Public-Merchant-Id": PUBLIC}).json()["token"]
        assert client.post("/transfer/v1/init", json={"token": token, "amount": amount}).status_code == 201
        expected[token] = status
    for document, status in (("123456789", "approvedTransaction"), ("999999990", "declinedTransaction")):
        amount = {"subtotalIva": 1000, "subtotalIva0": 0, "iva": 160}
        token = client.post("/transfer/v1/tokens", json={
            "currency": "MXN", "amount": amount, "documentType": "CURP", "documentNumber": document,
            "email": "payer@example.mx"}, headers={"Public-Merchant-Id": PUBLIC}).json()["token"]
        assert client.post("/transfer/v1/init", json={"token": token, "amount": amount}).status_code == 201
        assert client.post("/sandbox/v1/payments", json={"token": token}).status_code == 200
        expected[token] = status
    return expected


def statuses(client: httpx.Client, tokens: list[str]) -> dict[str, str]:
    return {token: client.get(f"/transfer/v1/status/{token}").json()["status"] for token in tokens}


def test_sigkill_with_pending_webhooks_then_restart_delivers_each_exactly_once(tmp_path: Path) -> None:
    db = tmp_path / "sandbox.sqlite3"
    gate = GatedReceiver()
    with LocalServer(gate, max_lifetime=120) as hooks:
        url = f"{hooks.base_url}/hooks"
        with sandbox(db, url) as first:
            with httpx.Client(base_url=first.url, headers={"Private-Merchant-Id": PRIVATE}, timeout=10) as client:
                expected = start_transfers(client)
                before = statuses(client, list(expected))
                wait_for(lambda: len(outbox(client)) == 5 and all(hook["attempts"] >= 1 for hook in outbox(client)),
                         "every webhook refused at least once", timeout=DEADLINE)
                assert not any(hook["delivered"] for hook in outbox(client))
            gate.mode = _HOLD
            assert gate.held.wait(DEADLINE), "no delivery reached the receiver"
            first.process.send_signal(signal.SIGKILL)
            assert first.process.wait(10) == -signal.SIGKILL
        # handled once each, never acknowledged (the sandbox delivers up to 8 at once: one or more were held)
        assert len(gate.handled) == len(gate.deliveries[_HOLD]) >= 1 and set(gate.handled.values()) == {1}
        gate.mode = _OPEN
        with sandbox(db, url) as second, \
                httpx.Client(base_url=second.url, headers={"Private-Merchant-Id": PRIVATE}, timeout=10) as client:
            wait_for(lambda: all(hook["delivered"] for hook in outbox(client)), "every webhook delivered",
                     timeout=DEADLINE)
            assert statuses(client, list(expected)) == before == expected
            hooks_after = outbox(client)
    assert len(hooks_after) == 5
    assert len(gate.handled) == 5 and set(gate.handled.values()) == {1}, gate.handled
    assert {key.split(":")[1] for key in gate.handled} == {"approvedTransaction", "declinedTransaction"}
    held = set(gate.deliveries[_HOLD])  # handled, then the sandbox died before the 200 came back
    after_restart = gate.deliveries[_OPEN]
    assert set(after_restart) == {hook["token"] for hook in hooks_after} and set(after_restart.values()) == {1}
    assert held <= set(after_restart)  # delivered again, same events: the receiver recognized them
