"""Transfer webhooks as the service signs them (tests/transfers/test_webhooks.py, and the logging and OpenTelemetry
tests that receive them): a secret, a fixed clock, a body as JSON.stringify writes it, its signed headers, and the
forgery an attacker who saw one delivery can send (the id and its simple signature, any body)."""

# ruff: noqa: S105 (test secrets are fixtures)

from __future__ import annotations

import json
import time

from pasarela.errors import StoreUnavailableError
from pasarela.transfers import TransferWebhookReceiver, body_signature, id_signature
from support.clocks import ManualClock

SECRET = "whsec-0123456789"
NOW = 1_700_000_000.0
WEBHOOK_ID = "1700000000000"  # the sender's clock in Unix milliseconds: NOW
REFERENCE = "1f0c6a1e-3b1a-4c55-8a22-2f4e0f6d9b10"
BODY = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": "PAID", "amount": 10000},
                  separators=(",", ":")).encode()  # as JSON.stringify writes it


class Clock(ManualClock):
    """The receiver's clock, at NOW until the test moves it."""

    def __init__(self, now: float = NOW) -> None:
        super().__init__(now)


def clock() -> float:
    return NOW


def at(seconds: float) -> str:
    """The X-Kushki-Id the service sends ``seconds`` after NOW."""
    return str(int((NOW + seconds) * 1000))


def signed(body: bytes = BODY, webhook_id: str = WEBHOOK_ID, secret: str = SECRET) -> dict[str, str]:
    return {
        "X-Kushki-Id": webhook_id,
        "X-Kushki-Signature": body_signature(secret, body, webhook_id),
        "X-Kushki-Key": "merchant-1",
        "Content-Type": "application/json",
    }


FORGED = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": "approvedTransaction"}).encode()


def simple_only(webhook_id: str = WEBHOOK_ID) -> dict[str, str]:
    """What an attacker who saw one delivery can send with any body: the id and its simple signature."""
    return {"X-Kushki-Id": webhook_id, "X-Kushki-SimpleSignature": id_signature(SECRET, webhook_id),
            "X-Kushki-Key": "merchant-1"}


def answer(receiver: TransferWebhookReceiver, headers: dict[str, str], body: bytes) -> str:
    """What the service is told: the outcome of a 200 or 503, or 'unavailable' (the ASGI app's 503)."""
    try:
        reply = receiver.handle(headers, body)
    except StoreUnavailableError:
        return "unavailable"
    return str(json.loads(reply.body)["status"])


def delivered_until_received(receiver: TransferWebhookReceiver, headers: dict[str, str], body: bytes) -> list[str]:
    """The service delivering again after each 503 until it gets a 200, as it does; the outcomes in order."""
    outcomes = [answer(receiver, headers, body)]
    deadline = time.monotonic() + 30
    while outcomes[-1] in ("in progress", "unavailable") and time.monotonic() < deadline:
        time.sleep(0.05)
        outcomes.append(answer(receiver, headers, body))
    return outcomes
