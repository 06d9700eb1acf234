"""Transfer webhooks (spec 6.1, rule 4): signatures accepted and refused, freshness, the simple signature
confirmed by a status query, parsing, redeliveries, hostile bodies, ASGI."""

# ruff: noqa: S106 (test tokens, keys and secrets are fixtures)

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

from pasarela.errors import ConfigurationError, StoreUnavailableError, TransportError, WebhookSignatureError
from pasarela.http import RetryPolicy, ServiceConfig
from pasarela.transfers import (
    AsyncTransferClient,
    PendingTransfers,
    SeenEvents,
    TransferClient,
    TransferEvent,
    TransferState,
    TransferStatus,
    TransferWebhookReceiver,
    VerifiedWebhook,
    WebhookHeaders,
    WebhookReply,
    body_signature,
    id_signature,
    verify_webhook_signature,
)
from pasarela.transfers.webhook_dedup import Claim, EventKey
from support.local_server import LocalServer, ScriptedService, scripted_service_fixtures
from support.signed_webhooks import (
    BODY,
    FORGED,
    NOW,
    REFERENCE,
    SECRET,
    WEBHOOK_ID,
    Clock,
    at,
    clock,
    signed,
    simple_only,
)

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
    assert verify_webhook_signature(headers, BODY, SECRET, clock=clock) == VerifiedWebhook(WEBHOOK_ID, BODY)
    verify_webhook_signature(signed(), BODY, SECRET.encode(), merchant_id="merchant-1", clock=clock)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda h, b: (h, b + b"x"), "does not match the body"),
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
        verify_webhook_signature(headers, body, SECRET, clock=clock)


def test_wrong_secret_refused() -> None:
    with pytest.raises(WebhookSignatureError):
        verify_webhook_signature(signed(secret="another-secret"), BODY, SECRET, clock=clock)


def test_merchant_id_checked_when_configured() -> None:
    with pytest.raises(WebhookSignatureError, match="X-Kushki-Key"):
        verify_webhook_signature(signed(), BODY, SECRET, merchant_id="merchant-2", clock=clock)


def test_simple_signature_refused_by_default_accepted_only_when_allowed_and_then_binds_no_body() -> None:
    headers = {"X-Kushki-Id": WEBHOOK_ID, "X-Kushki-SimpleSignature": id_signature(SECRET, WEBHOOK_ID)}
    with pytest.raises(WebhookSignatureError, match="missing X-Kushki-Signature"):
        verify_webhook_signature(headers, BODY, SECRET, clock=clock)
    verified = verify_webhook_signature(headers, BODY, SECRET, allow_simple_signature=True, clock=clock)
    assert verified == VerifiedWebhook(WEBHOOK_ID, None)  # nothing in the body is authenticated
    with pytest.raises(WebhookSignatureError, match="SimpleSignature does not match"):
        verify_webhook_signature({**headers, "X-Kushki-SimpleSignature": id_signature("nope", WEBHOOK_ID)}, BODY,
                                 SECRET, allow_simple_signature=True, clock=clock)


def test_a_present_body_signature_decides_even_with_a_valid_simple_one() -> None:
    headers = {**signed(), "X-Kushki-SimpleSignature": id_signature(SECRET, WEBHOOK_ID), "X-Kushki-Signature": "0" * 64}
    with pytest.raises(WebhookSignatureError):
        verify_webhook_signature(headers, BODY, SECRET, allow_simple_signature=True, clock=clock)


def test_header_names_are_configurable() -> None:
    names = WebhookHeaders(webhook_id="X-Id", signature="X-Sig", simple_signature="X-Simple", merchant_id="X-Merchant")
    headers = {"X-Id": WEBHOOK_ID, "X-Sig": body_signature(SECRET, BODY, WEBHOOK_ID), "X-Merchant": "m"}
    verify_webhook_signature(headers, BODY, SECRET, names=names, merchant_id="m", clock=clock)
    with pytest.raises(WebhookSignatureError):
        verify_webhook_signature(signed(), BODY, SECRET, names=names, clock=clock)


# --- freshness of X-Kushki-Id -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "accepted"),
    [(-600.0, True), (-600.001, False), (-86_400.0, False), (0.0, True), (300.0, True), (300.001, False)],
)
def test_ids_older_than_ten_minutes_or_more_than_five_ahead_are_refused(sent: float, accepted: bool) -> None:
    webhook_id = at(sent)
    headers = signed(webhook_id=webhook_id)
    if accepted:
        verify_webhook_signature(headers, BODY, SECRET, clock=clock)
    else:
        with pytest.raises(WebhookSignatureError, match=r"old|future"):
            verify_webhook_signature(headers, BODY, SECRET, clock=clock)


def test_the_window_is_configurable() -> None:
    headers = signed(webhook_id=at(-120.0))
    verify_webhook_signature(headers, BODY, SECRET, clock=clock, max_age=121)
    with pytest.raises(WebhookSignatureError, match="120 s old"):
        verify_webhook_signature(headers, BODY, SECRET, clock=clock, max_age=60)
    with pytest.raises(WebhookSignatureError, match="future"):
        verify_webhook_signature(signed(webhook_id=at(2.0)), BODY, SECRET, clock=clock, max_ahead=1)
    with pytest.raises(ConfigurationError, match="max_age"):
        TransferWebhookReceiver(lambda event: None, secret=SECRET, max_age=-1, clock=clock)


@pytest.mark.parametrize("webhook_id", ["1700000000000-abc", "f47ac10b-58cc-4372-a567-0e02b2c3d479",
                                        "\uff11\uff17\uff10\uff10", "1" * 17, "-1700000000000", "1700000000000.5"])
def test_ids_that_are_not_timestamps_are_refused_unless_allowed(webhook_id: str) -> None:
    headers = signed(webhook_id=webhook_id)
    with pytest.raises(WebhookSignatureError, match="not a Unix timestamp"):
        verify_webhook_signature(headers, BODY, SECRET, clock=clock)
    verify_webhook_signature(headers, BODY, SECRET, clock=clock, allow_non_timestamp_id=True)


def test_a_stale_delivery_is_refused_by_the_receiver_with_401() -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=Clock(NOW + 601))
    assert receiver.handle(signed(), BODY).status == 401
    assert events == []


def test_a_captured_delivery_replayed_inside_the_window_reaches_the_handler_once() -> None:
    events: list[TransferEvent] = []
    moving = Clock()
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=moving)
    assert receiver.handle(signed(), BODY).status == 200
    moving.now += 300
    replayed = receiver.handle(signed(), BODY)  # the same captured headers and body
    retried = receiver.handle(signed(webhook_id=at(299.0)), BODY)  # the service's retry: a new id, same event
    assert (replayed.status, json.loads(replayed.body)) == (200, {"status": "duplicate"})
    assert (retried.status, json.loads(retried.body)) == (200, {"status": "duplicate"})
    moving.now += 301
    assert receiver.handle(signed(), BODY).status == 401  # out of the window: refused, not just deduplicated
    assert len(events) == 1


# --- a body re-spaced on the way ------------------------------------------------------------------


def test_a_body_re_spaced_by_a_proxy_verifies_against_its_json_stringify_form() -> None:
    respaced = json.dumps(json.loads(BODY), indent=2).encode()
    assert respaced != BODY
    headers = signed()  # signed over what JSON.stringify wrote
    assert verify_webhook_signature(headers, respaced, SECRET, clock=clock) == VerifiedWebhook(WEBHOOK_ID, BODY)
    assert verify_webhook_signature(headers, BODY + b"\r\n", SECRET, clock=clock).body == BODY
    events: list[TransferEvent] = []
    assert TransferWebhookReceiver(events.append, secret=SECRET, clock=clock).handle(headers, respaced).status == 200
    assert events[0].state is TransferState.APPROVED and events[0].transaction_reference == REFERENCE


def test_a_re_spaced_body_whose_content_differs_is_refused() -> None:
    tampered = json.dumps({**json.loads(BODY), "amount": 10001}, indent=2).encode()
    with pytest.raises(WebhookSignatureError, match="does not match the body"):
        verify_webhook_signature(signed(), tampered, SECRET, clock=clock)


def test_the_event_is_read_from_the_text_the_signature_covers() -> None:
    # JavaScript reads 10000000000000001 as the double 1e16: the raw text differs from the signed one, and the
    # event must say what was signed, not what Python's json.loads makes of the raw digits.
    signed_text = BODY.replace(b"10000}", b"10000000000000000}")
    raw = signed_text.replace(b"10000000000000000}", b"10000000000000001}")
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=clock)
    assert receiver.handle(signed(signed_text), raw).status == 200
    assert events[0].raw["amount"] == 10**16


# --- events -------------------------------------------------------------------------------------


def test_event_parsing_and_dedup_key() -> None:
    event = TransferEvent.from_body(BODY, "merchant-1")
    assert (event.token, event.transaction_reference, event.status) == ("tok-1", REFERENCE, "PAID")
    assert event.state is TransferState.APPROVED and event.merchant_id == "merchant-1"
    assert event.dedup_key == f"{REFERENCE}:PAID"
    anonymous = TransferEvent.from_body(b'{"hello": 1}')
    assert anonymous.state is TransferState.UNKNOWN
    assert anonymous.dedup_key == "sha256:" + hashlib.sha256(b'{"hello": 1}').hexdigest()


def test_a_replay_inside_the_window_is_refused_however_many_events_came_after() -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=clock)  # the in-memory ledger
    assert json.loads(receiver.handle(signed(), BODY).body) == {"status": "received"}
    for index in range(10_000):
        newer = json.dumps({"token": f"tok-{index}", "status": "PAID"}).encode()
        assert receiver.handle(signed(newer), newer).status == 200
    assert json.loads(receiver.handle(signed(), BODY).body) == {"status": "duplicate"}  # still inside the window
    assert sum(event.transaction_reference == REFERENCE for event in events) == 1


def test_seen_events_forgets_by_time_and_refuses_when_full() -> None:
    moving = Clock()
    seen = SeenEvents(max_entries=2, ttl=900, clock=moving)
    first, second, third = (EventKey(f"ref-{index}", "PAID", final=True) for index in range(3))
    for event in (first, second):
        assert seen.claim(event, "a") is Claim.CLAIMED
        seen.confirm(event, "a")
    with pytest.raises(StoreUnavailableError, match="full"):  # rather than forget a handled event
        seen.claim(third, "a")
    assert seen.claim(first, "b") is Claim.HANDLED and len(seen) == 2
    moving.now += 901
    assert seen.claim(third, "a") is Claim.CLAIMED and len(seen) == 1  # the others' time is up
    with pytest.raises(ValueError):
        SeenEvents(max_entries=0)
    with pytest.raises(ValueError):
        SeenEvents(ttl=60, lease=120)


def test_seen_events_lease_ends_by_itself_and_a_late_confirmation_keeps_the_new_lease() -> None:
    moving = Clock()
    seen, paid = SeenEvents(lease=30, clock=moving), EventKey("ref-1", "PAID", final=True)
    assert seen.claim(paid, "hung") is Claim.CLAIMED
    assert seen.claim(paid, "hung") is Claim.CLAIMED  # its own claim, asked again
    moving.now += 29
    assert seen.claim(paid, "redelivery") is Claim.IN_PROGRESS
    moving.now += 1  # 30 s after the claim: the lease is over
    assert seen.claim(paid, "redelivery") is Claim.CLAIMED
    seen.release(paid, "hung")  # the first handler fails at last: the new lease stands
    assert seen.claim(paid, "third") is Claim.IN_PROGRESS
    seen.confirm(paid, "redelivery")
    assert seen.claim(paid, "third") is Claim.HANDLED


def test_a_full_ledger_refuses_the_delivery_with_503_and_the_handler_is_not_called() -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, ledger=SeenEvents(max_entries=1))
    assert receiver.handle({}, BODY).status == 200
    other = json.dumps({"token": "tok-2", "status": "PAID"}).encode()
    with pytest.raises(StoreUnavailableError) as refused:
        receiver.handle({}, other)
    assert refused.value.status == 503 and len(events) == 1


def test_a_ledger_forgetting_inside_the_window_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="freshness window"):
        TransferWebhookReceiver(lambda event: None, secret=SECRET, ledger=SeenEvents(ttl=600))
    TransferWebhookReceiver(lambda event: None, secret=SECRET, ledger=SeenEvents(ttl=900))
    TransferWebhookReceiver(lambda event: None, secret=SECRET, ledger=SeenEvents(ttl=60, lease=30), max_age=40,
                            max_ahead=20)


def test_after_the_final_event_the_handler_gets_no_other_event_of_the_transaction() -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=clock)
    late = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": "initializedTransaction"})
    contradicting = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": "declined"})
    assert json.loads(receiver.handle(signed(), BODY).body) == {"status": "received"}
    for body in (late.encode(), contradicting.encode()):
        assert json.loads(receiver.handle(signed(body), body).body) == {"status": "superseded"}
    assert [event.state for event in events] == [TransferState.APPROVED]
    before = json.dumps({"token": "tok-9", "status": "initializedTransaction"}).encode()
    after = json.dumps({"token": "tok-9", "status": "PAID"}).encode()
    assert [receiver.handle(signed(body), body).status for body in (before, after)] == [200, 200]
    assert [event.state for event in events[1:]] == [TransferState.INITIALIZED, TransferState.APPROVED]


def test_a_delivery_while_its_transaction_is_being_handled_gets_503_in_progress() -> None:
    answers: list[WebhookReply] = []
    later = json.dumps({"token": "tok-1", "transactionReference": REFERENCE, "status": "declined"}).encode()

    def on_event(event: TransferEvent) -> None:
        if not answers:  # the service delivers it again, and another event of the transaction, meanwhile
            answers.append(receiver.handle(signed(webhook_id=at(1.0)), BODY))
            answers.append(receiver.handle(signed(later), later))

    receiver = TransferWebhookReceiver(on_event, secret=SECRET, clock=clock)
    assert json.loads(receiver.handle(signed(), BODY).body) == {"status": "received"}
    assert [(answer.status, json.loads(answer.body)) for answer in answers] == [(503, {"status": "in progress"})] * 2
    assert json.loads(receiver.handle(signed(webhook_id=at(2.0)), BODY).body) == {"status": "duplicate"}


# --- the receiver as a plain callable -----------------------------------------------------------


def test_receiver_hands_over_once_and_answers_200() -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=clock)
    first = receiver.handle(signed(), BODY)
    again = receiver.handle(signed(webhook_id=at(1.0)), BODY)
    assert (first.status, json.loads(first.body)) == (200, {"status": "received"})
    assert (again.status, json.loads(again.body)) == (200, {"status": "duplicate"})
    assert first.headers == {"content-type": "application/json"}
    assert len(events) == 1 and events[0].transaction_reference == REFERENCE


def test_receiver_refuses_bad_signatures_with_401(caplog: pytest.LogCaptureFixture) -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=clock)
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

    receiver = TransferWebhookReceiver(flaky, secret=SECRET, clock=clock)
    with pytest.raises(RuntimeError):
        receiver.handle(signed(), BODY)
    assert receiver.handle(signed(), BODY).status == 200
    assert len(calls) == 2


def test_final_events_release_the_pending_order() -> None:
    guard = PendingTransfers()
    guard.reserve("order-1", "tok-1")
    guard.confirm("order-1", REFERENCE, token="tok-1")
    guard.reserve("order-2", "tok-2")
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, pending=guard, clock=clock)
    initialized = json.dumps({"token": "tok-2", "status": "initializedTransaction"}).encode()
    receiver.handle(signed(initialized), initialized)
    receiver.handle(signed(), BODY)
    assert guard.pending("order-1") is None
    assert guard.pending("order-2") is not None
    guard.close()


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
    assert SECRET not in repr(TransferWebhookReceiver(lambda event: None, secret=SECRET, clock=clock))


# --- the receiver as an ASGI app over real HTTP -------------------------------------------------


@pytest.fixture
def asgi_receiver() -> Iterator[tuple[str, list[TransferEvent]]]:
    events: list[TransferEvent] = []

    async def on_event(event: TransferEvent) -> None:
        events.append(event)

    with LocalServer(TransferWebhookReceiver(on_event, secret=SECRET, merchant_id="merchant-1", clock=clock)) as server:
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


# --- the simple signature: never trusted for the body ---------------------------------------------

def test_a_forged_body_with_only_the_simple_signature_is_refused_by_default() -> None:
    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, clock=clock)
    reply = receiver.handle(simple_only(), FORGED)
    assert reply.status == 401 and events == []


def test_opting_in_to_the_simple_signature_needs_a_status_query() -> None:
    with pytest.raises(ConfigurationError, match="status_query"):
        TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True)
    with pytest.raises(ConfigurationError, match="secret"):
        TransferWebhookReceiver(lambda event: None, allow_simple_signature=True, status_query=lambda token: {})
    with pytest.raises(ConfigurationError, match="only with allow_simple_signature"):
        TransferWebhookReceiver(lambda event: None, secret=SECRET, status_query=lambda token: {})
    with pytest.raises(ConfigurationError, match="function of the token or a transfers client"):
        TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True, status_query=42)


def test_with_the_simple_signature_the_handler_sees_the_status_query_state_not_the_body() -> None:
    asked: list[str] = []

    def status_of(token: str) -> TransferStatus:
        asked.append(token)
        return TransferStatus.from_json({"status": "declinedTransaction", "transactionReference": REFERENCE})

    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, allow_simple_signature=True,
                                       status_query=status_of, clock=clock)
    assert receiver.handle(simple_only(), FORGED).status == 200
    assert asked == ["tok-1"]
    [event] = events
    assert event.state is TransferState.REJECTED and event.status == "declinedTransaction"
    assert event.raw == {"status": "declinedTransaction", "transactionReference": REFERENCE}
    assert event.dedup_key == f"{REFERENCE}:declinedTransaction"
    assert receiver.handle(simple_only(at(5.0)), FORGED).status == 200 and len(events) == 1  # deduplicated
    # A body signature still decides alone, without a query.
    other = json.dumps({"token": "tok-2", "transactionReference": "ref-2", "status": "PAID"}).encode()
    assert receiver.handle(signed(other), other).status == 200 and asked == ["tok-1", "tok-1"]
    assert events[-1].state is TransferState.APPROVED


def test_the_simple_signature_path_is_still_dated_and_needs_a_token() -> None:
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True,
                                       status_query=lambda token: {"status": "PAID"}, clock=clock)
    assert receiver.handle(simple_only(at(-601.0)), FORGED).status == 401
    no_token = receiver.handle(simple_only(), b'{"status": "approvedTransaction"}')
    assert (no_token.status, json.loads(no_token.body)) == (400, {"status": "no token to query"})


@pytest.mark.parametrize("token", ["..", ".", "%2e%2E", "x" * 1025])
def test_a_token_the_status_query_would_refuse_is_a_400_not_a_503_redelivered_forever(token: str) -> None:
    asked: list[str] = []
    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True,
                                       status_query=lambda token: asked.append(token) or {"status": "PAID"},
                                       clock=clock)
    reply = receiver.handle(simple_only(), json.dumps({"token": token, "status": "PAID"}).encode())
    assert (reply.status, json.loads(reply.body), asked) == (400, {"status": "token cannot be queried"}, [])


scripted_server, service = scripted_service_fixtures()


@pytest.fixture
def service_config(service: ScriptedService) -> ServiceConfig:
    return ServiceConfig(base_url=service.base_url, public_merchant_id="pub-1", private_merchant_id="priv-1",
                         retry=RetryPolicy(max_attempts=1))


def test_the_transfers_client_is_a_status_query(service: ScriptedService, service_config: ServiceConfig) -> None:
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "initializedTransaction"})
    events: list[TransferEvent] = []
    with TransferClient(service_config) as client:
        receiver = TransferWebhookReceiver(events.append, secret=SECRET, allow_simple_signature=True,
                                           status_query=client, clock=clock)
        assert receiver.handle(simple_only(), FORGED).status == 200
    assert [(event.token, event.state) for event in events] == [("tok-1", TransferState.INITIALIZED)]
    assert service.requests[0].headers["private-merchant-id"] == "priv-1"


def test_a_failed_status_query_answers_503_and_the_redelivery_is_handled(
    service: ScriptedService, service_config: ServiceConfig
) -> None:
    service.reply("GET", "/transfer/v1/status/tok-1", 500, {"code": "K500", "message": "down"})
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "PAID"})
    events: list[TransferEvent] = []
    with TransferClient(service_config) as client:
        receiver = TransferWebhookReceiver(events.append, secret=SECRET, allow_simple_signature=True,
                                           status_query=client.status, clock=clock)
        failed = receiver.handle(simple_only(), FORGED)
        assert (failed.status, json.loads(failed.body)) == (503, {"status": "status unavailable"})
        assert events == []
        assert receiver.handle(simple_only(at(1.0)), FORGED).status == 200
    assert [event.state for event in events] == [TransferState.APPROVED]


def test_an_unreachable_status_service_fails_closed() -> None:
    def down(token: str) -> TransferStatus:
        raise TransportError("connection refused")

    events: list[TransferEvent] = []
    receiver = TransferWebhookReceiver(events.append, secret=SECRET, allow_simple_signature=True, status_query=down,
                                       clock=clock)
    assert receiver.handle(simple_only(), FORGED).status == 503 and events == []


def test_over_asgi_the_async_client_is_queried_and_the_forged_state_never_arrives(
    service: ScriptedService, service_config: ServiceConfig
) -> None:
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "declinedTransaction"})
    events: list[TransferEvent] = []

    async def on_event(event: TransferEvent) -> None:
        events.append(event)

    async def run() -> int:
        async with AsyncTransferClient(service_config) as client:
            receiver = TransferWebhookReceiver(on_event, secret=SECRET, allow_simple_signature=True,
                                               status_query=client, clock=clock)
            transport = httpx.ASGITransport(app=receiver)
            async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as http:
                reply = await http.post("/hooks", content=FORGED, headers=simple_only())
                return reply.status_code

    assert asyncio.run(run()) == 200
    assert [event.state for event in events] == [TransferState.REJECTED]


def test_a_blocking_status_query_runs_off_the_event_loop() -> None:
    threads: list[bool] = []

    def status_of(token: str) -> dict[str, str]:
        try:
            asyncio.get_running_loop()
            threads.append(False)
        except RuntimeError:  # no loop in this thread: a worker
            threads.append(True)
        return {"status": "PAID"}

    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True,
                                       status_query=status_of, clock=clock)
    assert asyncio.run(receiver.handle_async(simple_only(), FORGED)).status == 200
    assert threads == [True]


def test_sync_handle_refuses_an_async_status_query() -> None:
    async def status_of(token: str) -> dict[str, str]:
        return {"status": "PAID"}

    receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True,
                                       status_query=status_of, clock=clock)
    with pytest.raises(TypeError, match="status query is async"):
        receiver.handle(simple_only(), FORGED)


# --- hostile bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1_000, 5_000, 100_000])  # 1001 levels and more (1000: test_depth_limits.py)
def test_deeply_nested_bodies_get_400_not_a_crash(depth: int) -> None:
    nested = b'{"token":"tok-1","x":' + b"[" * depth + b"]" * depth + b"}"
    unsigned = TransferWebhookReceiver(lambda event: None, max_body_bytes=1 << 20)
    assert unsigned.handle({}, nested).status == 400
    signed_receiver = TransferWebhookReceiver(lambda event: None, secret=SECRET, clock=clock)
    assert signed_receiver.handle(signed(nested), nested).status == 400
    simple = TransferWebhookReceiver(lambda event: None, secret=SECRET, allow_simple_signature=True,
                                     status_query=lambda token: {"status": "PAID"}, clock=clock)
    assert simple.handle(simple_only(), nested).status == 400
    # re-spaced: the JSON.stringify form is tried, and refused (too deep), not crashed on
    assert signed_receiver.handle(signed(nested), b" " + nested).status == 401


def test_deeply_nested_bodies_over_http_get_400() -> None:
    nested = b"[" * 100_000 + b"]" * 100_000
    with LocalServer(TransferWebhookReceiver(lambda event: None, secret=SECRET, clock=clock)) as server, \
            httpx.Client(base_url=server.base_url) as client:
        assert client.post("/", content=nested, headers=signed(nested)).status_code == 400
