"""docs/postgres.md runs as written, on the tests' real PostgreSQL (a database of each test's own; the guide's
made-up database address replaced, nothing else): its stores' block; the shop's tables (its SQL block) and its
merchant's endpoint, written to a module and served by ``uvicorn --workers 2`` (two nodes) exactly as the guide
says to serve it, every event delivered three times at once and redelivered on each 503 as the service does,
finals before and after the events they supersede: each order marked paid (or rejected) once, one receipt in the
outbox for each order paid, every event handed to the handler once; and its outbox sender, two of them at once,
sending each receipt once. The guide's hand-off blocks run in tests/stores/test_handoff_rq.py, on a real RQ worker."""

# ruff: noqa: S105, S106 (test secrets and tokens)

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import psycopg
import pytest

from pasarela.errors import AuthError, PendingTransferError
from pasarela.transfers import body_signature
from support import postgres_guide as guide
from support.doc_blocks import blocks
from support.postgres_server import PostgresServer
from support.uvicorn_workers import UvicornWorkers

SECRET = "whsec-the-guide"
PAID, REJECTED, ORDERS = range(0, 12), range(12, 18), 18


def test_every_block_of_the_guide_is_run_by_a_test() -> None:
    """The Python blocks are the five these tests and tests/stores/test_handoff_rq.py run (each found by what only it
    holds); the rest is the install line and the shop's tables."""
    found = blocks(guide.GUIDE)
    assert sorted(language for language, _ in found) == ["python"] * 5 + ["sh", "sql"]
    python = [text for language, text in found if language == "python"]
    assert sorted(sum(marker in text for text in python) for marker in guide.MARKERS) == [1] * 5
    assert all(sum(marker in text for marker in guide.MARKERS) == 1 for text in python)
    [install] = [text for language, text in found if language == "sh"]
    assert install == 'pip install "pasarela[postgres]" "psycopg[binary]"\n'


def test_the_stores_block_refuses_a_replay_and_a_second_transfer(postgres_server: PostgresServer) -> None:
    database = guide.fresh_database(postgres_server)
    namespace: dict[str, Any] = {"__name__": "guide_stores"}
    code = guide.replaced(guide.block("python", guide.STORES), (guide.GATEWAY_DATABASE, database))
    exec(compile(code, "docs/postgres.md: the stores", "exec"), namespace)  # noqa: S102 (the project's own guide)
    with namespace["pool"]:
        sealed = namespace["terminal"].seal({"amount": 100, "currency": "COP"})
        assert namespace["verifier"].open("POST", sealed.headers, sealed.body) == {"amount": 100, "currency": "COP"}
        with pytest.raises(AuthError):
            namespace["verifier"].open("POST", sealed.headers, sealed.body)  # the same request again: a replay
        guard = namespace["guard"]
        guard.reserve("order-1", "tok-1")
        with pytest.raises(PendingTransferError):
            guard.reserve("order-1", "tok-2")
        guard.release_transfer(token="tok-1", transaction_reference=None)
        guard.reserve("order-1", "tok-2")


def delivery(index: int, status: str) -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{index}", "transactionReference": f"ref-{index}", "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(SECRET, body, webhook_id),
            "Content-Type": "application/json"}, body


def deliver_until_answered(base_url: str, events: list[tuple[int, str]], copies: int = 3) -> Counter[tuple[str, str]]:
    """Each event delivered ``copies`` times at once (16 connections), each copy redelivered after a 503 until it
    gets a 200, as the service does; how many copies got each answer, by (event, answer)."""
    answers: Counter[tuple[str, str]] = Counter()
    lock = threading.Lock()
    local = threading.local()
    clients: list[httpx.Client] = []

    def send(event: tuple[int, str]) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(base_url=base_url, timeout=30)
            with lock:
                clients.append(client)
        for _ in range(200):
            reply = client.post("/kushki/transfers", headers=delivery(*event)[0], content=delivery(*event)[1])
            if reply.status_code != 503:
                break
            time.sleep(0.02)
        assert reply.status_code == 200, (event, reply.status_code, reply.text)
        with lock:
            answers[f"ref-{event[0]}:{event[1]}", reply.json()["status"]] += 1

    try:
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(send, [event for event in events for _ in range(copies)]))
    finally:
        for client in clients:
            client.close()
    return answers


def test_the_endpoint_marks_each_order_paid_once_and_the_outbox_sends_each_receipt_once(
        postgres_server: PostgresServer, tmp_path: Path) -> None:
    database = guide.fresh_database(postgres_server)
    with psycopg.connect(database, autocommit=True) as shop:
        shop.execute(guide.block("sql", "CREATE TABLE orders").encode())
        for index in range(ORDERS):
            shop.execute("INSERT INTO orders (id, transfer_token, amount) VALUES (%s, %s, %s)",
                         (f"order-{index}", f"tok-{index}", 1000 + index))
    endpoint = guide.replaced(guide.block("python", guide.ENDPOINT), (guide.SHOP_DATABASE, database))
    (tmp_path / "shop_webhooks.py").write_text(endpoint)
    nodes = UvicornWorkers("shop_webhooks:app", {"KUSHKI_WEBHOOK_SECRET": SECRET}, workers=2, import_from=[tmp_path])
    try:
        nodes.wait_answering("/kushki/transfers")
        before = [(index, "initialized") for index in PAID]
        finals = [(index, "PAID") for index in PAID] + [(index, "rejected") for index in REJECTED]
        finals.append((99, "PAID"))  # a transfer of no order of this shop's: handled, nothing to write
        contradicting = ([(index, "rejected") for index in PAID] + [(index, "PAID") for index in REJECTED]
                         + [(index, "initialized") for index in REJECTED[:3]])  # an older state, late
        # the non-finals answered before their finals are sent (else a copy redelivered after a 503 could come after
        # its final, and be rightly superseded: the late ones are the next call's)
        handled = deliver_until_answered(nodes.base_url, before) + deliver_until_answered(nodes.base_url, finals)
        superseded = deliver_until_answered(nodes.base_url, contradicting)
    finally:
        nodes.stop()
    for event in before + finals:  # every event to the handler once; its other copies were duplicates
        key = f"ref-{event[0]}:{event[1]}"
        assert (handled[key, "received"], handled[key, "duplicate"]) == (1, 2), key
    assert set(superseded.values()) == {3} and {answer for _, answer in superseded} == {"superseded"}
    with psycopg.connect(database) as shop:
        orders = shop.execute("SELECT id, status, paid_at IS NOT NULL FROM orders ORDER BY amount").fetchall()
        receipts = shop.execute("SELECT payload FROM outbox ORDER BY id").fetchall()
    assert orders == [(f"order-{index}", "paid", True) for index in PAID] + [
        (f"order-{index}", "payment rejected", False) for index in REJECTED]
    assert sorted(payload["order"] for (payload,) in receipts) == sorted(f"order-{index}" for index in PAID)
    assert {payload["order"]: payload["amount"] for (payload,) in receipts} == {
        f"order-{index}": f"{1000 + index}.00" for index in PAID}

    # the outbox sender, in this process, on the endpoint's own pool: two of them at once
    namespace: dict[str, Any] = {"__name__": "shop_outbox"}
    code = endpoint + "\n\n" + guide.block("python", guide.OUTBOX)
    with mock.patch.dict("os.environ", {"KUSHKI_WEBHOOK_SECRET": SECRET}):
        exec(compile(code, "docs/postgres.md: the endpoint and its outbox", "exec"), namespace)  # noqa: S102
    sent: list[dict[str, Any]] = []

    async def send_receipt(message: dict[str, Any]) -> None:
        await asyncio.sleep(0.001)  # the e-mail's round trip: the other sender goes on meanwhile
        sent.append(message)

    async def send_everything() -> tuple[int, int, int]:
        async with namespace["pool"]:
            first, second = await asyncio.gather(namespace["send_outbox"](send_receipt),
                                                 namespace["send_outbox"](send_receipt))
            return first, second, await namespace["send_outbox"](send_receipt)

    first, second, again = asyncio.run(send_everything())
    assert (first + second, again) == (len(PAID), 0)
    assert sorted(message["order"] for message in sent) == sorted(f"order-{index}" for index in PAID)
    assert len({message["message_id"] for message in sent}) == len(PAID)
    with psycopg.connect(database) as shop:
        assert shop.execute("SELECT count(*) FROM outbox WHERE sent_at IS NULL").fetchone() == (0,)
