"""The simulator's own endpoints, under ``/sandbox/v1/`` (private key): what the service does not
have but a test needs. The payer pays (``POST /sandbox/v1/payments``), time passes
(``POST /sandbox/v1/clock``), the webhook outbox can be read (``GET /sandbox/v1/webhooks``)."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response
from starlette.routing import Route

from .auth import KeyRule
from .context import Context
from .endpoint import Call, api_route, json_reply
from .errors import SandboxError
from .payments import find_payable, pay
from .scenarios import Outcome
from .settlement import settle_due
from .store import OutboxEntry
from .transfers import status_record

__all__ = ["routes"]

_IDENTIFIERS = ("token", "clabe", "referenceCode")
_LISTED_WEBHOOKS = 200


def _webhook(entry: OutboxEntry) -> dict[str, Any]:
    status = json.loads(entry.body).get("status", "")
    item: dict[str, Any] = {
        "id": entry.id,
        "token": entry.token,
        "status": status,
        "delivered": entry.delivered_at is not None,
        "attempts": entry.attempts,
        "created": int(entry.created * 1000),
    }
    if entry.delivered_at is None:
        item["nextAttemptAt"] = int(entry.next_attempt_at * 1000)
    else:
        item["deliveredAt"] = int(entry.delivered_at * 1000)
    if entry.last_error is not None:
        item["lastError"] = entry.last_error
    return item


class Simulator:
    def __init__(self, context: Context) -> None:
        self._context = context

    async def payment(self, call: Call) -> Response:
        body = call.body
        given = [name for name in _IDENTIFIERS if name in body]
        if len(given) != 1:
            where = given[1] if given else "token"
            raise SandboxError.invalid(where, "give exactly one of token, clabe, referenceCode")
        with self._context.store.read() as tx:
            transfer = find_payable(tx, token=body.get("token"), clabe=body.get("clabe"),
                                    reference_code=body.get("referenceCode"))
        outcome = Outcome(body["outcome"]) if "outcome" in body else None
        paid = pay(self._context, transfer.token, outcome)
        return json_reply(200, status_record(paid, self._context.clock.now()))

    async def clock(self, call: Call) -> Response:
        now = self._context.clock.advance(float(call.body["seconds"]))
        settle_due(self._context)  # transfers whose settle_at has come
        self._context.webhook_queued()  # retries may have become due
        return json_reply(200, {"now": int(now * 1000)})

    async def webhooks(self, call: Call) -> Response:
        with self._context.store.read() as tx:
            entries = tx.outbox(_LISTED_WEBHOOKS)
        return json_reply(200, {"webhookUrl": self._context.config.webhook_url is not None,
                                "webhooks": [_webhook(entry) for entry in entries]})


def routes(context: Context) -> list[Route]:
    simulator = Simulator(context)
    return [
        api_route(context, "POST", "/sandbox/v1/payments", KeyRule.PRIVATE, simulator.payment, "PaymentRequest"),
        api_route(context, "POST", "/sandbox/v1/clock", KeyRule.PRIVATE, simulator.clock, "ClockAdvance"),
        api_route(context, "GET", "/sandbox/v1/webhooks", KeyRule.PRIVATE, simulator.webhooks),
    ]
