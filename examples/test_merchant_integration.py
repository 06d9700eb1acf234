"""A merchant's integration tests, written with pasarela's test kit (docs/testing.md). Run them with
``pip install "pasarela[testing]" pytest`` and ``pytest test_merchant_integration.py``: no code of your own starts a
server, picks a port or cleans up; the ``pasarela_sandbox`` and ``pasarela_conformance`` fixtures come with pasarela.

``Shop`` stands for your back end: it starts a transfer for an order, and its webhook endpoint marks the order paid
or declined. In your project it is your own code; the tests below are the part you copy.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing

import pytest

from pasarela.testing import LiveSandbox, ServedApp
from pasarela.testing.conformance import ConformanceReport
from pasarela.transfers import (
    Amount,
    TransferClient,
    TransferEvent,
    TransferInitRequest,
    TransferState,
    TransferTokenRequest,
    TransferWebhookReceiver,
)


class Shop:
    """Orders in SQLite; ``checkout`` starts a Colombia QR transfer; ``webhooks`` is the ASGI endpoint the service
    (here the sandbox) delivers transfer webhooks to."""

    def __init__(self, transfers: TransferClient, *, webhook_secret: str, public_key: str) -> None:
        self._transfers = transfers
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, token TEXT, state TEXT NOT NULL)")
        self._db.execute("CREATE TABLE applied (order_id TEXT NOT NULL, status TEXT NOT NULL)")
        self._lock = threading.Lock()  # the endpoint runs in the web server's thread
        self.webhooks = TransferWebhookReceiver(self._on_transfer, secret=webhook_secret, merchant_id=public_key)

    def checkout(self, order_id: str, total: int) -> str:
        # The order exists before init: its webhook can arrive before init has answered (the sandbox's 10000
        # scenario is paid at once; test_the_sandbox_scenario_10000_is_paid_at_once caught it).
        with self._lock, self._db:
            self._db.execute("INSERT INTO orders VALUES (?, NULL, 'pending')", (order_id,))
        amount = Amount.untaxed(total, currency="COP")
        token = self._transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
        with self._lock, self._db:
            self._db.execute("UPDATE orders SET token = ? WHERE id = ?", (token, order_id))
        self._transfers.init(TransferInitRequest(token=token, amount=amount, metadata={"order": order_id}))
        return token

    def _on_transfer(self, event: TransferEvent) -> None:
        order_id = str((event.raw.get("metadata") or {}).get("order"))
        state = {TransferState.APPROVED: "paid", TransferState.REJECTED: "declined"}.get(event.state, "pending")
        with self._lock, self._db:
            self._db.execute("UPDATE orders SET state = ? WHERE id = ?", (state, order_id))
            self._db.execute("INSERT INTO applied VALUES (?, ?)", (order_id, event.status))

    def state(self, order_id: str) -> str:
        with self._lock:
            row = self._db.execute("SELECT state FROM orders WHERE id = ?", (order_id,)).fetchone()
        return str(row[0])

    def applied(self, order_id: str) -> Counter[str]:
        """How many times each webhook status was applied to the order (what the conformance run asks)."""
        with self._lock:
            rows = self._db.execute("SELECT status FROM applied WHERE order_id = ?", (order_id,)).fetchall()
        return Counter(status for (status,) in rows)

    def close(self) -> None:
        self._db.close()


@pytest.fixture
def shop(pasarela_sandbox: LiveSandbox) -> Iterator[Shop]:
    """The shop, its webhook endpoint served on a free port, the sandbox delivering to it."""
    shop = Shop(pasarela_sandbox.transfers, webhook_secret=pasarela_sandbox.config.webhook_secret,
                public_key=pasarela_sandbox.config.public_key)
    with closing(shop), ServedApp(shop.webhooks) as endpoint:
        pasarela_sandbox.webhook_url = f"{endpoint.url}/webhooks/transfers"
        yield shop


def test_a_paid_order_is_marked_paid(shop: Shop, pasarela_sandbox: LiveSandbox) -> None:
    token = shop.checkout("order-1", 25000)
    pasarela_sandbox.pay(token)                       # the payer pays the QR
    pasarela_sandbox.wait_for_webhooks(1)             # its webhook reached the shop's endpoint, answered 200
    assert shop.state("order-1") == "paid"


def test_a_declined_payment_leaves_the_order_unpaid(shop: Shop, pasarela_sandbox: LiveSandbox) -> None:
    token = shop.checkout("order-2", 25000)
    pasarela_sandbox.decline(token)
    pasarela_sandbox.wait_for_webhooks(1)
    assert shop.state("order-2") == "declined"


def test_an_unpaid_qr_expires_after_ten_minutes(shop: Shop, pasarela_sandbox: LiveSandbox) -> None:
    token = shop.checkout("order-3", 25000)
    pasarela_sandbox.advance(minutes=11)              # no waiting: the sandbox clock moves
    assert pasarela_sandbox.transfers.status(token).status == "expiredTransaction"
    assert pasarela_sandbox.webhooks() == []          # no webhook for an expiry: poll the status
    assert shop.state("order-3") == "pending"


def test_a_redelivered_webhook_is_applied_once(shop: Shop, pasarela_sandbox: LiveSandbox) -> None:
    token = shop.checkout("order-4", 25000)
    pasarela_sandbox.pay(token)
    (sent,) = pasarela_sandbox.wait_for_webhooks(1)
    pasarela_sandbox.redeliver(sent.id)               # the service delivers at least once
    pasarela_sandbox.wait_for_webhooks(1)
    (again,) = pasarela_sandbox.webhooks()
    assert [attempt.status for attempt in again.attempts] == [200, 200]
    assert shop.applied("order-4") == {"approvedTransaction": 1}


def test_the_sandbox_scenario_10000_is_paid_at_once(shop: Shop, pasarela_sandbox: LiveSandbox) -> None:
    shop.checkout("order-5", 10000)                   # spec 8: the happy path, PAID with a webhook at init
    pasarela_sandbox.wait_for_webhooks(1)
    assert shop.state("order-5") == "paid"


def test_the_webhook_endpoint_passes_the_conformance_run(
        pasarela_sandbox: LiveSandbox, pasarela_conformance: Callable[..., ConformanceReport]) -> None:
    """Duplicates, concurrent twins, late and stale deliveries, forgeries, oversize bodies, lost answers: each event
    applied exactly once, forged ones never."""
    shop = Shop(pasarela_sandbox.transfers, webhook_secret=pasarela_sandbox.config.webhook_secret,
                public_key=pasarela_sandbox.config.public_key)
    with closing(shop), ServedApp(shop.webhooks) as endpoint:
        report = pasarela_conformance(f"{endpoint.url}/webhooks/transfers", lambda order: shop.applied(order.order_id))
    print(report.table())
    report.raise_for_failures()
