"""The app the multi-process Redis tests run under ``uvicorn --workers 4`` (one import per worker).

- any path: a terminal endpoint behind TerminalAuthMiddleware with the Redis replay store, answering the
  decrypted payload;
- ``/webhook``: a TransferWebhookReceiver with the Redis ledger and pending-transfer guard, whose handler
  appends one line per event it is handed to the file named by PASARELA_TEST_EVENTS;
- ``/health``: 200, unverified, touching nothing.

Every answer carries ``x-worker-pid``, so a test can see that several processes took part. Settings come
from the environment: PASARELA_TEST_REDIS_URL, PASARELA_TEST_EVENTS, PASARELA_TEST_WEBHOOK_SECRET, and
for the fault tests the Redis client's PASARELA_TEST_REDIS_TIMEOUT (seconds, default 1) and
PASARELA_TEST_REDIS_RETRIES (default 1), and the webhook ledger's PASARELA_TEST_LEASE (seconds, default 60).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, MutableMapping
from typing import Any, Callable

import redis.asyncio
import redis.asyncio.retry
import redis.backoff

import pasarela
from pasarela.asgi import TerminalAuthMiddleware
from pasarela.terminal.replay_redis import AsyncRedisReplayStore
from pasarela.transfers import TransferEvent, TransferWebhookReceiver
from pasarela.transfers.pending_redis import AsyncRedisPendingTransfers
from pasarela.transfers.webhook_dedup_redis import AsyncRedisEventLedger
from support.faulty_clients import BUSINESS_CODE, SERIAL

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# Refuse within about a second when Redis is gone (redis-py's default retries back off for seconds).
_timeout = float(os.environ.get("PASARELA_TEST_REDIS_TIMEOUT", "1"))
_client = redis.asyncio.Redis.from_url(
    os.environ["PASARELA_TEST_REDIS_URL"], socket_timeout=_timeout, socket_connect_timeout=_timeout,
    retry=redis.asyncio.retry.Retry(redis.backoff.NoBackoff(), int(os.environ.get("PASARELA_TEST_REDIS_RETRIES", "1"))),
)
_events = os.environ["PASARELA_TEST_EVENTS"]
_webhook_secret = os.environ["PASARELA_TEST_WEBHOOK_SECRET"]


async def _terminal_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
    body = json.dumps(scope["pasarela.payload"]).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _on_event(event: TransferEvent) -> None:
    await asyncio.sleep(0.02)  # a handler that takes a moment: concurrent redeliveries overlap it
    with open(_events, "a", encoding="utf-8") as events:
        events.write(f"{os.getpid()} {event.dedup_key}\n")


_terminal = TerminalAuthMiddleware(_terminal_endpoint, pasarela.Terminal(BUSINESS_CODE, SERIAL),
                                   replay_store=AsyncRedisReplayStore(_client))
_ledger = AsyncRedisEventLedger(_client, lease=float(os.environ.get("PASARELA_TEST_LEASE", "60")))
_webhooks = TransferWebhookReceiver(_on_event, secret=_webhook_secret, ledger=_ledger,
                                    pending=AsyncRedisPendingTransfers(_client))


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    pid = str(os.getpid()).encode()

    async def tagged(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"x-worker-pid", pid)]}
        await send(message)

    if scope["path"] == "/health":
        await tagged({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    target = _webhooks if scope["path"] == "/webhook" else _terminal
    await target(scope, receive, tagged)
