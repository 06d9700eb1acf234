"""What the sandbox recorded, as the JSON the simulator's endpoints answer and the dashboard shows: a transfer
with its history, a recorded request, a webhook with each of its delivery attempts.

A webhook's body is shown as it was sent, less what :func:`pasarela.http.redaction.redact_json` hides (card
numbers, CVVs and keys a merchant may have put in ``metadata``); its headers are those of each attempt, as
sent: none carries a secret (the signatures are HMACs of the webhook secret, which is never shown).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..http.redaction import redact_json
from .jsontext import loads
from .store import Attempt, HistoryEntry, OutboxEntry, RequestRecord, Transfer
from .transfers import status_record

__all__ = ["attempt_item", "feed_attempt_item", "history_item", "request_item", "transfer_item", "webhook_item"]


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def transfer_item(transfer: Transfer, now: float) -> dict[str, Any]:
    """The status record, and the flow (``clabe``, ``bank``, ``wallet``, ``qr``, ``pse``) and payer's document."""
    item = status_record(transfer, now)
    item["flow"] = transfer.variant
    if transfer.document_number is not None:
        item["documentNumber"] = transfer.document_number
    return item


def history_item(entry: HistoryEntry) -> dict[str, Any]:
    return {"at": _ms(entry.at), "state": entry.state, "cause": entry.cause}


def request_item(record: RequestRecord) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": record.id, "at": _ms(record.at), "kind": record.kind, "method": record.method, "path": record.path,
        "status": record.status, "ms": record.ms, "key": record.key, "token": record.token,
        "headers": dict(record.headers), "body": record.body, "response": record.response,
    }
    if record.verdict is not None:
        item["verdict"] = record.verdict
    return item


def attempt_item(attempt: Attempt) -> dict[str, Any]:
    item: dict[str, Any] = {"id": attempt.id, "at": _ms(attempt.at), "url": attempt.url,
                            "headers": dict(attempt.headers), "status": attempt.status,
                            "latencyMs": round(attempt.latency_ms, 1)}
    if attempt.error is not None:
        item["error"] = attempt.error
    if attempt.answer is not None:
        item["answer"] = attempt.answer
    if attempt.chaos is not None:
        item["chaos"] = attempt.chaos
    return item


def webhook_item(entry: OutboxEntry, attempts: Sequence[Attempt]) -> dict[str, Any]:
    """The outbox entry, its body and its attempts (oldest first)."""
    body = loads(entry.body)
    item: dict[str, Any] = {
        "id": entry.id,
        "token": entry.token,
        "status": body.get("status", ""),
        "delivered": entry.delivered_at is not None,
        "attempts": entry.attempts,
        "created": _ms(entry.created),
        "body": redact_json(body),
        "deliveries": [attempt_item(attempt) for attempt in attempts if attempt.event_id == entry.id],
    }
    if entry.delivered_at is None:
        item["nextAttemptAt"] = _ms(entry.next_attempt_at)
    else:
        item["deliveredAt"] = _ms(entry.delivered_at)
    if entry.last_error is not None:
        item["lastError"] = entry.last_error
    if entry.chaos is not None:
        item["chaos"] = entry.chaos
    return item


def feed_attempt_item(attempt: Attempt, entry: OutboxEntry) -> dict[str, Any]:
    """An attempt with what its event is: the event's id, transfer token and status word, whether it is delivered
    now, and when it is tried next if not (what ``pasarela sandbox tail`` prints)."""
    item = attempt_item(attempt)
    item.update({"event": entry.id, "token": entry.token, "eventStatus": str(loads(entry.body).get("status", "")),
                 "delivered": entry.delivered_at is not None})
    if entry.delivered_at is None:
        item["nextAttemptAt"] = _ms(entry.next_attempt_at)
    return item
