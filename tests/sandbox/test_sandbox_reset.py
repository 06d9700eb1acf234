"""Issue 56 item 1: ``Sandbox.reset`` (what the test kit's fixture does between tests) empties every table, undoes
the clock's advances and the webhook URL's change, and a delivery under way across it is not recorded against the
state that follows; the served sandbox keeps its server (no restart)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from starlette.testclient import TestClient

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.store import _TABLES
from pasarela.testing import LiveSandbox
from pasarela.transfers import Amount, TransferInitRequest, TransferTokenRequest

COP = {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}  # spec 8: PAID at init, with a webhook
QR = {"currency": "COP", "amount": COP, "flow": {"processorName": "BRE-B", "type": "QR"}}


class HeldSender:
    """Holds each delivery until released; answers 200."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, url: str, headers: Mapping[str, str], body: bytes) -> int:
        self.entered.set()
        assert self.release.wait(10)
        return 200


def _counts(sandbox: Sandbox) -> dict[str, int]:
    with sandbox.store.read() as tx:
        return {table: tx._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608
                for table in _TABLES}


def test_reset_empties_every_table_and_undoes_clock_and_webhook_url() -> None:
    with LiveSandbox(SandboxConfig(webhook_url="http://127.0.0.1:9/configured")) as live:
        client = live.transfers
        amount = Amount.untaxed(10000, currency="COP")
        token = client.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
        client.init(TransferInitRequest(token=token, amount=amount))       # PAID at once: an outbox event
        live.webhook_url = "http://127.0.0.1:9/changed"
        live.wait_for_webhooks(1, delivered=False)                        # an attempt recorded (refused)
        live.advance(hours=3)
        live.sandbox.store.flush_requests()
        before = _counts(live.sandbox)
        assert all(before[table] > 0 for table in ("transfer_tokens", "transfers", "outbox", "transfer_history",
                                                   "webhook_attempts", "requests")), before
        url, server_thread = live.url, live._served._thread
        live.reset()
        assert _counts(live.sandbox) == dict.fromkeys(_TABLES, 0)
        assert live.sandbox.clock.offset == 0
        assert live.webhook_url == "http://127.0.0.1:9/configured"
        assert (live.url, live._served._thread) == (url, server_thread) and server_thread is not None
        assert server_thread.is_alive()                                    # the same server, not restarted
        assert client.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token  # and it still answers


def test_a_delivery_under_way_across_a_reset_is_not_recorded() -> None:
    sender = HeldSender()
    with Sandbox(SandboxConfig(webhook_url="http://127.0.0.1:9/hooks"), sender=sender) as sandbox:
        with TestClient(sandbox.app) as client:
            token = client.post("/transfer/v1/tokens", json=QR, headers={"Public-Merchant-Id": "sandbox-public-key"})
            started = client.post("/transfer/v1/init", json={"token": token.json()["token"], "amount": COP},
                                  headers={"Private-Merchant-Id": "sandbox-private-key"})
            assert started.status_code == 201
            assert sender.entered.wait(10)           # the delivery is under way
            sandbox.reset()
            sender.release.set()
            sandbox.dispatcher.stop()                # waits for the thread; the pool's delivery finishes too
            sandbox.dispatcher._pool.shutdown(wait=True)
        assert _counts(sandbox)["webhook_attempts"] == 0
        assert _counts(sandbox)["outbox"] == 0
