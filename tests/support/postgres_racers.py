"""A merchant's webhook node for tests/stores/test_postgres_multiprocess.py (multiprocessing's spawn imports this
module): a TransferWebhookReceiver on the PostgreSQL inbox, sync or asyncio, whose handler writes the merchant's own
rows in the inbox's transaction, handling its share of each round of deliveries as the service sends them: again
after every 503, until a 200."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from psycopg_pool import AsyncConnectionPool, ConnectionPool

from pasarela.errors import StoreUnavailableError
from pasarela.transfers import TransferEvent, TransferWebhookReceiver, body_signature
from pasarela.transfers.inbox_postgres import AsyncPostgresInbox, PostgresInbox

Delivery = tuple[str, str]  # (transactionReference, status)
CONCURRENT = 8
"""Deliveries an asyncio node handles at once."""


def signed(secret: str, reference: str, status: str) -> tuple[dict[str, str], bytes]:
    body = json.dumps({"token": f"tok-{reference}", "transactionReference": reference, "status": status}).encode()
    webhook_id = str(int(time.time() * 1000))  # each attempt's own id, as the service sets it afresh
    return {"X-Kushki-Id": webhook_id, "X-Kushki-Signature": body_signature(secret, body, webhook_id)}, body


def _statements(schema: str) -> tuple[str, str]:
    effect = f"INSERT INTO {schema}.merchant_effects (event, node) VALUES (%s, %s)"  # noqa: S608
    order = f"UPDATE {schema}.orders SET state = %s, updated = updated + 1 WHERE reference = %s"  # noqa: S608
    return effect, order


def node(conninfo: str, schema: str, secret: str, rounds: list[list[Delivery]], is_async: bool, number: int,
         start: Barrier, outcomes: Queue[tuple[int, dict[str, int]]]) -> None:
    """Handle each round's deliveries (after every node is ready for it); report the answers counted."""
    counted: Counter[str] = Counter()
    if is_async:
        asyncio.run(_async_node(conninfo, schema, secret, rounds, number, start, counted))
    else:
        _sync_node(conninfo, schema, secret, rounds, number, start, counted)
    outcomes.put((number, dict(counted)))


def _sync_node(conninfo: str, schema: str, secret: str, rounds: list[list[Delivery]], number: int,
               start: Barrier, counted: Counter[str]) -> None:
    effect, order = _statements(schema)

    def on_event(event: TransferEvent, tx: Any) -> None:
        tx.execute(effect, (event.dedup_key, number))
        if event.state.is_final:
            tx.execute(order, (event.status, event.transaction_reference))

    with ConnectionPool(conninfo, kwargs={"autocommit": True}, min_size=1, max_size=2, open=False) as pool:
        receiver = TransferWebhookReceiver(on_event, secret=secret, inbox=PostgresInbox(pool, schema=schema))
        for deliveries in rounds:
            start.wait(timeout=120)
            for reference, status in deliveries:
                while True:
                    try:
                        outcome = json.loads(receiver.handle(*signed(secret, reference, status)).body)["status"]
                    except StoreUnavailableError:
                        outcome = "unavailable"
                    counted[outcome] += 1
                    if outcome not in ("in progress", "unavailable"):
                        break
                    time.sleep(0.01)


async def _async_node(conninfo: str, schema: str, secret: str, rounds: list[list[Delivery]], number: int,
                      start: Barrier, counted: Counter[str]) -> None:
    effect, order = _statements(schema)

    async def on_event(event: TransferEvent, tx: Any) -> None:
        await tx.execute(effect, (event.dedup_key, number))
        if event.state.is_final:
            await tx.execute(order, (event.status, event.transaction_reference))

    async with AsyncConnectionPool(conninfo, kwargs={"autocommit": True}, min_size=1, max_size=CONCURRENT,
                                   open=False) as pool:
        receiver = TransferWebhookReceiver(on_event, secret=secret, inbox=AsyncPostgresInbox(pool, schema=schema))
        turns = asyncio.Semaphore(CONCURRENT)

        async def deliver(reference: str, status: str) -> None:
            async with turns:
                while True:
                    try:
                        reply = await receiver.handle_async(*signed(secret, reference, status))
                        outcome = json.loads(reply.body)["status"]
                    except StoreUnavailableError:
                        outcome = "unavailable"
                    counted[outcome] += 1
                    if outcome not in ("in progress", "unavailable"):
                        return
                    await asyncio.sleep(0.01)

        for deliveries in rounds:
            await asyncio.to_thread(start.wait, 120)
            await asyncio.gather(*(deliver(reference, status) for reference, status in deliveries))
