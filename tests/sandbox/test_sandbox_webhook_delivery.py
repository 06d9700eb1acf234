"""Webhook deliveries run concurrently (bounded): a receiver that hangs on one event does not hold back the
others, the hanging event is not sent twice while in flight, and one transfer's events still go out in order.
Driven over real HTTP: the sandbox under uvicorn, the merchant's receiver under uvicorn, both on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from typing import Any, Callable

import httpx

from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.store import Store
from support.local_server import LocalServer, read_body
from support.waiting import wait_for

PUBLIC, PRIVATE = "pk-delivery", "sk-delivery"
FLOW = {"processorName": "BRE-B", "type": "QR"}
PAID_AT_ONCE = {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}  # spec 8: PAID with a webhook at init


class StuckOnFirst:
    """A receiver that answers 200 at once, except to the first delivery, which it holds until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.received: list[str] = []  # transfer tokens, in arrival order

    async def __call__(self, scope: Mapping[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        body = await read_body(receive)
        with self.lock:
            self.received.append(json.loads(body)["token"])
            first = len(self.received) == 1
        while first and not self.release.is_set():
            await asyncio.sleep(0.01)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def tokens(self) -> list[str]:
        with self.lock:
            return list(self.received)


def _paid_transfer(client: httpx.Client) -> str:
    token: str = client.post("/transfer/v1/tokens", json={"currency": "COP", "amount": PAID_AT_ONCE, "flow": FLOW},
                             headers={"Public-Merchant-Id": PUBLIC}).json()["token"]
    started = client.post("/transfer/v1/init", json={"token": token, "amount": PAID_AT_ONCE},
                          headers={"Private-Merchant-Id": PRIVATE})
    assert started.status_code == 201
    return token


def test_a_hanging_receiver_does_not_hold_back_other_events() -> None:
    receiver = StuckOnFirst()
    with LocalServer(receiver, max_lifetime=60) as hooks:  # type: ignore[arg-type]
        config = SandboxConfig(public_key=PUBLIC, private_key=PRIVATE, webhook_url=f"{hooks.base_url}/hooks",
                               webhook_timeout=60.0, settle_after=None)
        with Sandbox(config) as sandbox, LocalServer(sandbox.app) as server, \
                httpx.Client(base_url=server.base_url, timeout=10) as client:  # type: ignore[arg-type]
            stuck = _paid_transfer(client)
            wait_for(lambda: receiver.tokens() == [stuck], "the first delivery reaches the receiver")
            others = [_paid_transfer(client) for _ in range(5)]
            wait_for(lambda: set(others) <= set(receiver.tokens()), "the other events arrive")
            assert not receiver.release.is_set()  # ... while the first one still hangs
            assert receiver.tokens().count(stuck) == 1  # and it was not handed out again while in flight
            receiver.release.set()
            listed = client.get("/sandbox/v1/webhooks", headers={"Private-Merchant-Id": PRIVATE}).json()["webhooks"]
            wait_for(lambda: all(hook["delivered"] for hook in client.get(
                "/sandbox/v1/webhooks", headers={"Private-Merchant-Id": PRIVATE}).json()["webhooks"]),
                "every event recorded as delivered")
            assert len(listed) == 6


def test_one_transfers_events_are_handed_out_oldest_first() -> None:
    store = Store(":memory:")
    with store.write() as tx:
        tx.enqueue("first", "transfer-a", b"{}", 100.0)
        tx.enqueue("second", "transfer-a", b"{}", 101.0)
        tx.enqueue("other", "transfer-b", b"{}", 102.0)
    with store.read() as tx:
        assert [entry.id for entry in tx.due(200.0, 10)] == ["first", "other"]
    with store.write() as tx:
        tx.failed("first", "HTTP 500", 300.0)  # retried later: the second waits behind it
    with store.read() as tx:
        assert [entry.id for entry in tx.due(200.0, 10)] == ["other"]
    with store.write() as tx:
        tx.delivered("first", 300.0)
    with store.read() as tx:
        assert [entry.id for entry in tx.due(300.0, 10)] == ["second", "other"]
    store.close()
