"""Transfer webhooks (spec 6.1, rule 4): signatures accepted and refused, parsing, redeliveries, ASGI."""

# ruff: noqa: S105, S106 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from local_server import LocalServer
from pasarela.errors import ConfigurationError, WebhookSignatureError
from pasarela.transfers import (
    PendingTransfers,
    SeenEvents,
    TransferEvent,
    TransferState,
    TransferWebhookReceiver,
    WebhookHeaders,
    body_signature,
    id_signature,
    verify_webhook_signature,
)

SECRET = "whsec-0123456789"
WEBHOOK_ID = "1700000000000-abc"
REFERENCE = "1f0c6a1e-3b1a-4c55-8a22-2f4e0f6d9b10"
BODY = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": "PAID", "amount": 10000}).encode()


def signed(body: bytes = BODY, webhook_id: str = WEBHOOK_ID, secret: str = SECRET) -> dict[str, str]:
    return {
        "X-Kushki-Id": webhook_id,
        "X-Kushki-Signature": body_signature(secret, body, webhook_id),
        "X-Kushki-Key": "merchant-1",
        "Content-Type": "application/json",
    }


# --- signatures ---------------------------------------------------------------------------------


def test_signatures_are_the_documented_hmacs() -> None:
    expected = hmac.new(SECRET.encode(), BODY + b"." + WEBHOOK_ID.encode(), hashlib.sha256).hexdigest()
    assert body_signature(SECRET, BODY, WEBHOOK_ID) == expected
    assert (
        id_signature(SECRET.encode(), WEBHOOK_ID)
        == hmac.new(SECRET.encode(), WEBHOOK_ID.encode(), hashlib.sha256).hexdigest()
    )


def test_valid_body_signature_accepted_case_insensitively() -> None:
    headers = {name.lower(): value for name, value in signed().items()}
    headers["x-kushki-signature"] = headers["x-kushki-signature"].upper()
    verify_webhook_signature(headers, BODY, SECRET)
    verify_webhook_signature(signed(), BODY, SECRET.encode(), merchant_id="merchant-1")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda h, b: (h, b + b" "), "does not match the body"),
        (lambda h, b: (h, b.replace(b"PAID", b"PAIX")), "does not match the body"),
        (lambda h, b: ({**h, "X-Kushki-Id": "other-id"}, b), "does not match the body"),
        (lambda h, b: ({k: v for k, v in h.items() if k != "X-Kushki-Id"}, b), "missing X-Kushki-Id"),
        (lambda h, b: ({k: v for k, v in h.items() if k != "X-Kushki-Signature"}, b), "missing X-Kushki-Signature"),
        (lambda h, b: ({**h, "X-Kushki-Signature": "zz"}, b), "does not match"),
    ],
)
def test_tampered_or_unsigned_deliveries_refused(mutate: Any, message: str) -> None:
    headers, body = mutate(signed(), BODY)
    with pytest.raises(WebhookSignatureError, match=message):
        verify_webhook_signature(headers, body, SECRET)


def test_wrong_secret_refused() -> None:
    with pytest.raises(WebhookSignatureError):
        verify_webhook_signature(signed(secret="another-secret"), BODY, SECRET)


def test_merchant_id_checked_when_configured() -> None:
    with pytest.raises(WebhookSignatureError, match="X-Kushki-Key"):
        verify_webhook_signature(signed(), BODY, SECRET, merchant_id="merchant-2")


def test_simple_signature_accepted_only_when_allowed() -> None:
    headers = {"X-Kushki-Id": WEBHOOK_ID, "X-Kushki-SimpleSignature": id_signature(SECRET, WEBHOOK_ID)}
    verify_webhook_signature(headers, BODY, SECRET)
    with pytest.raises(WebhookSignatureError):
        verify_webhook_signature(headers, BODY, SECRET, allow_simple_signature=False)
    with pytest.raises(WebhookSignatureError, match="SimpleSignature does not match"):
        verify_webhook_signature(
            {**headers, "X-Kushki-SimpleSignature": id_signature("nope", WEBHOOK_ID)}, BODY, SECRET
        )


def test_a_present_body_signature_decides_even_with_a_valid_simple_one() -> None:
    headers = {**signed(), "X-Kushki-SimpleSignature": id_signature(SECRET, WEBHOOK_ID), "X-Kushki-Signature": "0" * 64}
    with pytest.raises(WebhookSignatureError):
        verify_webhook_signature(headers, BODY, SECRET)


def test_header_names_are_configurable() -> None:
    names = WebhookHeaders(webhook_id="X-Id", signature="X-Sig", simple_signature="X-Simple", merchant_id="X-Merchant")
    headers = {"X-Id": WEBHOOK_ID, "X-Sig": body_signature(SECRET, BODY, WEBHOOK_ID), "X-Merchant": "m"}
    verify_webhook_signature(headers, BODY, SECRET, names=names, merchant_id="m")
    with pytest.raises(WebhookSignatureError):
        verify_webhook_signature(signed(), BODY, SECRET, names=names)


# --- events -------------------------------------------------------------------------------------


def test_event_parsing_and_dedup_key() -> None:
    event = TransferEvent.from_body(BODY, "merchant-1")
    assert (event.token, event.transaction_reference, event.status) == ("tok-1", REFERENCE, "PAID")
    assert event.state is TransferState.APPROVED and event.merchant_id == "merchant-1"
    assert event.dedup_key == f"{REFERENCE}:PAID"
    anonymous = TransferEvent.from_body(b'{"hello": 1}')
    assert anonymous.state is TransferState.UNKNOWN
    assert anonymous.dedup_key == "sha256:" + hashlib.sha256(b'{"hello": 1}').hexdigest()


def test_seen_events_is_bounded() -> None:
    seen = SeenEvents(capacity=2)
    assert seen.claim("a") and seen.claim("b") and not seen.claim("a")
    assert seen.claim("c") and len(seen) == 2
    assert seen.claim("a")  # "a" was the oldest and fell out
    seen.forget("a")
    assert seen.claim("a")
    with pytest.raises(ValueError):
        SeenEvents(capacity=0)


# --- the receiver as a plain callable -----------------------------------------------------------


def test_receiver_hands_over_once_and_answers_200() -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET)
    first = receiver.handle(signed(), BODY)
    again = receiver.handle(signed(webhook_id="redelivery-2"), BODY)
    assert (first.status, json.loads(first.body)) == (200, {"status": "received"})
    assert (again.status, json.loads(again.body)) == (200, {"status": "duplicate"})
    assert first.headers == {"content-type": "application/json"}
    assert len(events) == 1 and events[0].transaction_reference == REFERENCE


def test_receiver_refuses_bad_signatures_with_401(caplog: pytest.LogCaptureFixture) -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET)
    with caplog.at_level(logging.WARNING, logger="pasarela.webhooks"):
        reply = receiver.handle(signed(secret="forged"), BODY)
    assert reply.status == 401 and events == []
    assert SECRET not in caplog.text


def test_receiver_refuses_unreadable_bodies_with_400() -> None:
    receiver = TransferWebhookReceiver(lambda event: None)
    assert receiver.handle({}, b"not json").status == 400
    assert receiver.handle({}, b"[1, 2]").status == 400
    assert receiver.handle({}, b'{"status": 5}').status == 200  # unknown shape of a member is tolerated


def test_receiver_without_secret_warns_and_accepts(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pasarela.webhooks"):
        receiver = TransferWebhookReceiver(lambda event: None)
    assert "without signature verification" in caplog.text
    assert receiver.handle({}, BODY).status == 200
    with pytest.raises(ConfigurationError):
        TransferWebhookReceiver(lambda event: None, secret="")


def test_a_failing_handler_gets_no_200_and_the_redelivery_is_handled() -> None:
    calls: list[TransferEvent] = []

    def flaky(event: TransferEvent) -> None:
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("database down")

    receiver = TransferWebhookReceiver(flaky, secret=SECRET)
    with pytest.raises(RuntimeError):
        receiver.handle(signed(), BODY)
    assert receiver.handle(signed(), BODY).status == 200
    assert len(calls) == 2


def test_final_events_release_the_pending_order() -> None:
    guard = PendingTransfers()
    guard.reserve("order-1", "tok-1")
    guard.confirm("order-1", REFERENCE)
    guard.reserve("order-2", "tok-2")
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, pending=guard)
    initialized = json.dumps({"token": "tok-2", "status": "initializedTransaction"}).encode()
    receiver.handle(signed(initialized), initialized)
    receiver.handle(signed(), BODY)
    assert guard.pending("order-1") is None
    assert guard.pending("order-2") is not None


def test_merchant_id_checked_even_without_a_secret() -> None:
    receiver = TransferWebhookReceiver(lambda event: None, merchant_id="merchant-1")
    assert receiver.handle({"X-Kushki-Key": "merchant-2"}, BODY).status == 401
    assert receiver.handle({}, BODY).status == 401
    assert receiver.handle({"x-kushki-key": "merchant-1"}, BODY).status == 200


def test_oversized_bodies_get_413() -> None:
    receiver = TransferWebhookReceiver(lambda event: None, max_body_bytes=10)
    assert receiver.handle({}, b"x" * 11).status == 413


def test_sync_handle_refuses_an_async_handler() -> None:
    async def handler(event: TransferEvent) -> None:
        pass

    receiver = TransferWebhookReceiver(handler)
    with pytest.raises(TypeError, match="ASGI"):
        receiver.handle({}, BODY)
    handled = asyncio.run(receiver.handle_async({}, BODY))  # the claim was released: handled now
    assert handled.status == 200


def test_receiver_repr_hides_the_secret() -> None:
    assert SECRET not in repr(TransferWebhookReceiver(lambda event: None, secret=SECRET))


# --- the receiver as an ASGI app over real HTTP -------------------------------------------------


@pytest.fixture
def asgi_receiver() -> Iterator[tuple[str, list[TransferEvent]]]:
    events: list[TransferEvent] = []

    async def on_event(event: TransferEvent) -> None:
        events.append(event)

    with LocalServer(TransferWebhookReceiver(on_event, secret=SECRET, merchant_id="merchant-1")) as server:
        yield server.base_url, events


def test_asgi_receiver_over_http(asgi_receiver: tuple[str, list[TransferEvent]]) -> None:
    base_url, events = asgi_receiver
    with httpx.Client(base_url=base_url) as client:
        accepted = client.post("/webhooks/transfers", content=BODY, headers=signed())
        duplicate = client.post("/webhooks/transfers", content=BODY, headers=signed())
        forged = client.post("/webhooks/transfers", content=BODY, headers=signed(secret="forged"))
        wrong_method = client.get("/webhooks/transfers")
        chunked = client.post("/webhooks/transfers", content=iter([BODY[:10], BODY[10:]]), headers=signed())
    assert (accepted.status_code, accepted.json()) == (200, {"status": "received"})
    assert (duplicate.status_code, duplicate.json()) == (200, {"status": "duplicate"})
    assert forged.status_code == 401
    assert wrong_method.status_code == 405
    assert chunked.status_code == 200
    assert len(events) == 1 and events[0].state is TransferState.APPROVED and events[0].merchant_id == "merchant-1"


def test_asgi_receiver_limits_the_body_and_serves_lifespan() -> None:
    receiver = TransferWebhookReceiver(lambda event: None, max_body_bytes=16)
    with LocalServer(receiver) as server, httpx.Client(base_url=server.base_url) as client:
        assert client.post("/", content=b"x" * 64).status_code == 413

    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(receiver({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
