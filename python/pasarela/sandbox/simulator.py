"""The simulator's own endpoints, under ``/sandbox/v1/`` (private key): what the service does not
have but a test needs. The payer pays (``POST /sandbox/v1/payments``), time passes
(``POST /sandbox/v1/clock``), the webhook outbox can be read with each delivery attempt
(``GET /sandbox/v1/webhooks``), a webhook sent again (``POST /sandbox/v1/webhooks/{id}/redeliver``), the webhook URL
changed while it runs (``PUT /sandbox/v1/webhook-url``, :mod:`.webhook_target`), and what happened since a point
followed (``GET /sandbox/v1/feed``, what ``pasarela sandbox tail`` reads)."""

from __future__ import annotations

from typing import Optional

from starlette.responses import Response
from starlette.routing import Route

from ..errors import ConfigurationError
from .auth import KeyRule
from .certification import certification
from .context import Context
from .endpoint import Call, api_route, json_reply
from .errors import SandboxError
from .payments import find_payable, pay
from .records import webhook_item
from .scenarios import Outcome
from .settlement import settle_due
from .store import OutboxEntry
from .transfers import status_record
from .webhook_target import check_runtime_url

__all__ = ["advance_clock", "change_webhook_url", "redeliver", "routes"]

_IDENTIFIERS = ("token", "clabe", "referenceCode")
_LISTED_WEBHOOKS = 200


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
        now = advance_clock(self._context, float(call.body["seconds"]))
        return json_reply(200, {"now": int(now * 1000)})

    async def webhooks(self, call: Call) -> Response:
        with self._context.store.read() as tx:
            entries = tx.outbox(_LISTED_WEBHOOKS, token=call.request.query_params.get("token"))
            attempts = tx.attempts([entry.id for entry in entries])
        return json_reply(200, {"webhookUrl": self._context.webhook_target.url,
                                "webhooks": [webhook_item(entry, attempts) for entry in entries]})

    async def certification(self, call: Call) -> Response:
        with self._context.store.read(recorded_requests=True) as tx:
            verdicts = certification(tx, self._context.webhook_target.url)
        return json_reply(200, {"rules": [verdict.to_json() for verdict in verdicts]})

    async def webhook_url(self, call: Call) -> Response:
        url = None if call.body is None else str(call.body["url"])  # DELETE: nowhere
        change_webhook_url(self._context, url)
        return json_reply(200, {"webhookUrl": url})

    async def redeliver(self, call: Call) -> Response:
        entry = redeliver(self._context, call.params["id"])
        with self._context.store.read() as tx:
            attempts = tx.attempts([entry.id])
        return json_reply(202, webhook_item(entry, attempts))


def advance_clock(context: Context, seconds: float) -> float:
    """Move the sandbox's clock forward; what has become due settles, and due webhook retries go out."""
    now = context.clock.advance(seconds)
    settle_due(context)
    context.webhook_queued()
    return now


def change_webhook_url(context: Context, url: Optional[str]) -> None:
    """Deliver to ``url`` from now on (``None``: keep events in the outbox); a 400 naming ``url`` when it may not be
    set at run time (:func:`.webhook_target.check_runtime_url`)."""
    try:
        check_runtime_url(url, context.config)
    except ConfigurationError as exc:
        raise SandboxError.invalid("url", str(exc).removeprefix("url: ").removeprefix("webhook_url ")) from None
    context.webhook_target.change(url)
    context.webhook_queued()


def redeliver(context: Context, event_id: str) -> OutboxEntry:
    """Queue the webhook ``event_id`` for delivery now, delivered before or not; 404 when there is no such event."""
    with context.store.write() as tx:
        if not tx.redeliver(event_id, context.clock.now()):
            raise SandboxError.not_found("no webhook has this id")
        entry = tx.outbox_entry(event_id)
    context.webhook_queued()
    assert entry is not None  # updated in this very transaction
    return entry


def routes(context: Context) -> list[Route]:
    simulator = Simulator(context)
    return [
        api_route(context, "POST", "/sandbox/v1/payments", KeyRule.PRIVATE, simulator.payment, "PaymentRequest"),
        api_route(context, "POST", "/sandbox/v1/clock", KeyRule.PRIVATE, simulator.clock, "ClockAdvance"),
        api_route(context, "GET", "/sandbox/v1/webhooks", KeyRule.PRIVATE, simulator.webhooks),
        api_route(context, "POST", "/sandbox/v1/webhooks/{id}/redeliver", KeyRule.PRIVATE, simulator.redeliver),
        api_route(context, "PUT", "/sandbox/v1/webhook-url", KeyRule.PRIVATE, simulator.webhook_url,
                  "WebhookUrlChange"),
        api_route(context, "DELETE", "/sandbox/v1/webhook-url", KeyRule.PRIVATE, simulator.webhook_url),
        api_route(context, "GET", "/sandbox/v1/certification", KeyRule.PRIVATE, simulator.certification),
    ]
