"""The card, transfer and terminal clients, unchanged, against a running sandbox over real HTTP on 127.0.0.1:
every scenario of spec section 8, the state machine of section 3, webhooks arriving at a receiver on
127.0.0.1, the Ecuador redirect followed to the callback, and the auth, route and schema refusals."""

# ruff: noqa: S105 (test keys and secrets are fixtures)

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Optional

import httpx
import pytest

from pasarela import AuthError, Terminal
from pasarela.cards import Card, CardClient, CardTokenRequest, ChargeRequest, NetworkTokenData, TokenlessChargeRequest
from pasarela.errors import ApiError, FinalStatusError, QrCodeError, TransportError
from pasarela.http import NO_RETRY, ServiceConfig
from pasarela.httpx import AsyncTerminalClient, TerminalClient
from pasarela.sandbox import Sandbox, SandboxConfig
from pasarela.sandbox.clabe import is_valid
from pasarela.transfers import (
    Amount,
    AsyncTransferClient,
    ColombiaQr,
    EcuadorRedirect,
    EcuadorWallet,
    MexicoClabe,
    PendingTransfers,
    TransferClient,
    TransferEvent,
    TransferInitRequest,
    TransferState,
    TransferTokenRequest,
    TransferWebhookReceiver,
)
from support.clocks import ShiftedClock
from support.local_server import LocalServer, Receive, Send

PUBLIC = "pk-test-sandbox"
PRIVATE = "sk-test-sandbox"
WEBHOOK_SECRET = "whsec-sandbox-test"
BUSINESS_CODE = "bc-sandbox-test"
SERIAL = "SN-SANDBOX-1"
DEADLINE = 10.0
PNG_PREFIX = "data:image/png;base64,"


# --- the merchant's side: a webhook receiver and the page the bank returns the payer to ------------


@dataclass
class Merchant:
    """One server on 127.0.0.1: ``/hooks`` is the webhook receiver, ``/return`` the Ecuador callbackUrl."""

    events: list[TransferEvent] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)
    base_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.receiver = TransferWebhookReceiver(self._on_event, secret=WEBHOOK_SECRET, merchant_id=PUBLIC)

    def _on_event(self, event: TransferEvent) -> None:
        with self.lock:
            self.events.append(event)

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        if scope["path"] == "/hooks":
            await self.receiver(scope, receive, send)
            return
        with self.lock:
            self.returns.append(f"{self.base_url}{scope['path']}?{scope['query_string'].decode()}")
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html")]})
        await send({"type": "http.response.body", "body": b"<p>Thank you</p>"})

    def events_for(self, token: str) -> list[TransferEvent]:
        with self.lock:
            return [event for event in self.events if event.token == token]

    def wait_for_event(self, token: str) -> TransferEvent:
        """Poll (bounded) until the webhook of ``token`` has arrived."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            found = self.events_for(token)
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no webhook for {token} within {DEADLINE} s")


@pytest.fixture(scope="module")
def merchant() -> Iterator[Merchant]:
    merchant = Merchant()
    with LocalServer(merchant, max_lifetime=120) as server:
        merchant.base_url = server.base_url
        yield merchant


@dataclass
class Running:
    sandbox: Sandbox
    base_url: str
    clock: ShiftedClock
    config: ServiceConfig

    def http(self) -> httpx.Client:
        # A connection per request: the test server leaves Nagle on, which costs ~40 ms per keep-alive answer.
        return httpx.Client(base_url=self.base_url, limits=httpx.Limits(max_keepalive_connections=0), timeout=10)

    def transfers(self, **kwargs: Any) -> TransferClient:
        return TransferClient(self.config, http_client=self.http(), **kwargs)

    def cards(self) -> CardClient:
        return CardClient(self.config, http_client=self.http())

    def simulator(self, method: str, path: str, body: Any = None) -> httpx.Response:
        with self.http() as client:
            return client.request(method, path, json=body, headers={"Private-Merchant-Id": PRIVATE})


Start = Callable[..., Running]


@pytest.fixture
def start(merchant: Merchant) -> Iterator[Start]:
    """``start(**config)``: a sandbox under uvicorn on 127.0.0.1, webhooks to the merchant; stopped after the test."""
    with ExitStack() as stack:

        def starter(*, client_timeout: float = 10.0, **changes: Any) -> Running:
            settings: dict[str, Any] = {
                "public_key": PUBLIC, "private_key": PRIVATE, "webhook_url": f"{merchant.base_url}/hooks",
                "webhook_secret": WEBHOOK_SECRET, "business_code": BUSINESS_CODE, "terminal_serial": SERIAL,
                "webhook_backoff": 0.05, "webhook_backoff_max": 0.2, **changes,
            }
            clock = ShiftedClock()
            sandbox = stack.enter_context(Sandbox(SandboxConfig(**settings), clock=clock))
            app: Any = sandbox.app  # an ASGI app (its own, MutableMapping-based, type aliases)
            server = stack.enter_context(LocalServer(app, max_lifetime=120))
            config = ServiceConfig(base_url=server.base_url, public_merchant_id=PUBLIC, private_merchant_id=PRIVATE,
                                   retry=NO_RETRY, timeout=client_timeout)
            return Running(sandbox, server.base_url, clock, config)

        yield starter


def colombia(total: Any) -> tuple[TransferTokenRequest, Amount]:
    amount = Amount.untaxed(total, currency="COP")
    return TransferTokenRequest.colombia_qr(amount=amount), amount


def start_transfer(client: TransferClient, request: TransferTokenRequest, amount: Amount,
                   **init: Any) -> tuple[str, Any]:
    token = client.create_token(request).token
    return token, client.init(TransferInitRequest(token=token, amount=amount, **init))


def page_token(page: str) -> dict[str, str]:
    """The per-page token of a payer page's form, as the browser would post it back."""
    found = re.search(r'name="page_token" value="([^"]+)"', page)
    assert found is not None, page
    return {"page_token": found.group(1)}


def assert_png(data_uri: str) -> None:
    assert data_uri.startswith(PNG_PREFIX)
    assert base64.b64decode(data_uri[len(PNG_PREFIX):], validate=True).startswith(b"\x89PNG\r\n\x1a\n")


# --- Colombia QR: the scenarios of section 8 ------------------------------------------------------


def test_colombia_10000_is_paid_with_a_webhook_and_cannot_be_cancelled(start: Start, merchant: Merchant) -> None:
    running = start()
    with running.transfers() as client:
        token, answer = start_transfer(client, *colombia(10000), full_response=True)
        assert isinstance(answer, ColombiaQr)
        assert_png(answer.qr)
        assert answer.details is not None
        assert answer.details.status == "initializedTransaction"
        assert (answer.details.amount.currency, answer.details.amount.subtotal_iva0) == ("COP", Decimal(10000))
        assert (answer.details.merchant_id, answer.details.merchant_name) == (PUBLIC, "Sandbox merchant")
        assert abs(answer.details.created - time.time() * 1000) < 60_000
        event = merchant.wait_for_event(token)
        assert event.state is TransferState.APPROVED and event.status == "approvedTransaction"
        assert event.transaction_reference == answer.transaction_reference
        assert event.raw["ticketNumber"].isdigit() and event.raw["amount"]["subtotalIva0"] == 10000
        status = client.status(token)
        assert status.state is TransferState.APPROVED
        # what a callback handler reads (issue 58: no .token, and a guess at it gave a 500)
        assert (status.token, status.transaction_reference) == (token, answer.transaction_reference)
        with pytest.raises(FinalStatusError) as caught:
            client.cancel(token)
        assert (caught.value.status, caught.value.code, caught.value.message) == (
            400, "T023", "Transaction has a final status.")


def test_colombia_12000_is_rejected_with_a_webhook(start: Start, merchant: Merchant) -> None:
    with start().transfers() as client:
        token, answer = start_transfer(client, *colombia(12000))
        assert isinstance(answer, ColombiaQr) and answer.details is None
        assert merchant.wait_for_event(token).state is TransferState.REJECTED
        assert client.status(token).state is TransferState.REJECTED


def test_colombia_9999_stays_initialized_without_a_webhook(start: Start, merchant: Merchant) -> None:
    running = start()
    with running.transfers() as client:
        token, _ = start_transfer(client, *colombia(9999))
        assert client.status(token).state is TransferState.INITIALIZED
        refused = running.simulator("POST", "/sandbox/v1/payments", {"token": token})
        assert refused.status_code == 409 and refused.json()["code"] == "SCENARIO_STAYS_INITIALIZED"
        outbox = running.simulator("GET", "/sandbox/v1/webhooks").json()["webhooks"]
        assert [hook for hook in outbox if hook["token"] == token] == []
        assert client.status(token).state is TransferState.INITIALIZED


def test_colombia_11000_is_qr_code_0001_and_releases_the_order(start: Start) -> None:
    guard = PendingTransfers()
    with start().transfers(pending=guard) as client:
        request, amount = colombia(11000)
        token = client.create_token(request).token
        with pytest.raises(QrCodeError) as caught:
            client.init(TransferInitRequest(token=token, amount=amount), order_id="order-1")
        assert (caught.value.status, caught.value.code) == (500, "QR-CODE-0001")
        assert guard.pending("order-1") is None
    guard.close()


def test_colombia_99999999_is_qr_code_0059(start: Start) -> None:
    with start().transfers() as client:
        request, amount = colombia(99999999)
        token = client.create_token(request).token
        with pytest.raises(QrCodeError) as caught:
            client.init(TransferInitRequest(token=token, amount=amount))
        assert (caught.value.status, caught.value.code) == (400, "QR-CODE-0059")


def test_colombia_13000_gets_no_answer_within_the_delay_and_stays_initialized(start: Start) -> None:
    running = start(timeout_delay=30.0, client_timeout=0.5)
    with running.transfers() as client:
        request, amount = colombia(13000)
        token = client.create_token(request).token
        with pytest.raises(TransportError):
            client.init(TransferInitRequest(token=token, amount=amount))
        assert client.status(token).state is TransferState.INITIALIZED


def test_colombia_13000_answers_504_only_after_the_delay(start: Start) -> None:
    running = start(timeout_delay=0.3)
    with running.transfers() as client:
        request, amount = colombia(13000)
        token = client.create_token(request).token
        with pytest.raises(ApiError) as caught:
            client.init(TransferInitRequest(token=token, amount=amount))
        assert (caught.value.status, caught.value.code) == (504, "TIMEOUT")
        assert client.status(token).state is TransferState.INITIALIZED


def test_colombia_other_amounts_succeed_without_webhook_until_the_payer_pays(start: Start, merchant: Merchant) -> None:
    running = start()
    with running.transfers() as client:
        token, answer = start_transfer(client, *colombia("5000.50"))
        assert isinstance(answer, ColombiaQr)
        assert client.status(token).state is TransferState.INITIALIZED
        assert merchant.events_for(token) == []
        paid = running.simulator("POST", "/sandbox/v1/payments", {"token": token})
        assert paid.status_code == 200 and paid.json()["status"] == "approvedTransaction"
        assert (paid.json()["processorState"], paid.json()["transactionStatus"]) == ("OK", "PAID")
        assert merchant.wait_for_event(token).state is TransferState.APPROVED


def test_colombia_qr_becomes_invalid_after_ten_minutes(start: Start) -> None:
    running = start()
    with running.transfers() as client:
        token, _ = start_transfer(client, *colombia(5000))
        assert client.status(token).raw["qrStatus"] == "valid"
        running.clock.offset = 599.0
        assert client.status(token).raw["qrStatus"] == "valid"
        running.clock.offset = 600.0
        record = client.status(token)
        assert record.raw["qrStatus"] == "expired" and record.status == "expiredTransaction"
        assert record.state is TransferState.REJECTED and record.raw["transactionStatus"] == "initialized"
        refused = running.simulator("POST", "/sandbox/v1/payments", {"token": token})
        assert refused.status_code == 409 and refused.json()["code"] == "QR_EXPIRED"
        client.cancel(token)  # not final: 204


def test_simulator_clock_endpoint_expires_the_qr(start: Start) -> None:
    running = start()
    with running.transfers() as client:
        token, _ = start_transfer(client, *colombia(5000))
        moved = running.simulator("POST", "/sandbox/v1/clock", {"seconds": 600})
        assert moved.status_code == 200 and moved.json()["now"] >= int((time.time() + 599) * 1000)
        assert client.status(token).raw["qrStatus"] == "expired"


def test_cancel_invalidates_the_qr_and_may_be_repeated(start: Start) -> None:
    running, guard = start(), PendingTransfers()
    with running.transfers(pending=guard) as client:
        request, amount = colombia(5000)
        token = client.create_token(request).token
        client.init(TransferInitRequest(token=token, amount=amount), order_id="order-2")
        client.cancel(token)
        record = client.status(token)
        assert record.raw["qrStatus"] == "cancelled" and record.raw["cancelled"] is True
        refused = running.simulator("POST", "/sandbox/v1/payments", {"token": token})
        assert refused.status_code == 409 and refused.json()["code"] == "PAYMENT_CANCELLED"
        client.cancel(token)
    guard.close()


def test_a_token_starts_one_transfer_only_and_its_amount_must_match(start: Start) -> None:
    with start().transfers() as client:
        request, amount = colombia(5000)
        token, _ = start_transfer(client, request, amount)
        with pytest.raises(ApiError) as caught:
            client.init(TransferInitRequest(token=token, amount=amount))
        assert (caught.value.status, json.loads(caught.value.body)["field"]) == (400, "token")
        other = client.create_token(request).token
        with pytest.raises(ApiError) as caught:
            client.init(TransferInitRequest(token=other, amount=Amount.untaxed(5001, currency="COP")))
        assert json.loads(caught.value.body)["field"] == "amount"


def test_async_client_runs_the_happy_path(start: Start, merchant: Merchant) -> None:
    running = start()

    async def scenario() -> str:
        http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
        async with AsyncTransferClient(running.config, http_client=http) as client:
            request, amount = colombia(10000)
            token = (await client.create_token(request)).token
            assert isinstance(await client.init(TransferInitRequest(token=token, amount=amount)), ColombiaQr)
            status = await client.status(token)
            assert status.state is TransferState.APPROVED and status.token == token
        await http.aclose()
        return token

    assert merchant.wait_for_event(asyncio.run(scenario())).state is TransferState.APPROVED


# --- Mexico and Ecuador ---------------------------------------------------------------------------


def mexico(document_number: str) -> tuple[TransferTokenRequest, Amount]:
    amount = Amount.from_total("1160", currency="MXN", iva_rate="0.16")
    return TransferTokenRequest.mexico(amount=amount, document_number=document_number, email="payer@example.mx"), amount


@pytest.mark.parametrize(("document_number", "state"), [("123456789", TransferState.APPROVED),
                                                         ("999999990", TransferState.REJECTED)])
def test_mexico_clabe_is_paid_by_the_payer_and_the_document_decides(
    start: Start, merchant: Merchant, document_number: str, state: TransferState
) -> None:
    running = start()
    with running.transfers() as client:
        token, answer = start_transfer(client, *mexico(document_number))
        assert isinstance(answer, MexicoClabe)
        assert is_valid(answer.clabe) and answer.bank == "STP"
        assert len(answer.reference_number) == 7 and answer.ticket_number.isdigit()
        assert uuid.UUID(answer.transaction_reference)
        assert client.status(token).state is TransferState.INITIALIZED
        paid = running.simulator("POST", "/sandbox/v1/payments", {"clabe": answer.clabe})
        assert paid.status_code == 200 and paid.json()["token"] == token
        assert client.status(token).state is state
        event = merchant.wait_for_event(token)
        assert event.state is state and event.raw["ticketNumber"] == answer.ticket_number
        again = running.simulator("POST", "/sandbox/v1/payments", {"token": token})
        assert again.status_code == 409 and again.json()["code"] == "TRANSACTION_FINAL"


def ecuador(document_number: str, callback_url: str) -> tuple[TransferTokenRequest, Amount]:
    amount = Amount.from_total("115", currency="USD", iva_rate="0.15")
    request = TransferTokenRequest.ecuador(amount=amount, document_type="CI", document_number=document_number,
                                           callback_url=callback_url)
    return request, amount


@pytest.mark.parametrize(("document_number", "state"), [("123456789", TransferState.APPROVED),
                                                         ("999999990", TransferState.REJECTED)])
def test_ecuador_bank_redirect_is_followed_to_the_callback(
    start: Start, merchant: Merchant, document_number: str, state: TransferState
) -> None:
    running = start(ecuador_processor="bank")
    with running.transfers() as client:
        callback = f"{merchant.base_url}/return?order=77"
        token, answer = start_transfer(client, *ecuador(document_number, callback))
        assert isinstance(answer, EcuadorRedirect)
        assert answer.transaction_reference == client.status(token).raw["transactionReference"]
        with httpx.Client(follow_redirects=True, timeout=10) as browser:
            portal = browser.get(answer.redirect_url)
            assert portal.status_code == 200 and 'name="action" value="pay"' in portal.text
            back = browser.post(answer.redirect_url, data={"action": "pay", **page_token(portal.text)})
        assert back.status_code == 200 and back.history[0].status_code == 303
        assert str(back.url) == f"{merchant.base_url}/return?order=77&token={token}"
        with merchant.lock:
            arrived = merchant.returns[-1]
        assert arrived == str(back.url)
        returned = client.status_from_callback(arrived)
        assert returned.state is state and returned.token == token
        assert returned.transaction_reference == answer.transaction_reference
        assert merchant.wait_for_event(token).state is state


def test_ecuador_wallet_gives_qr_deep_link_and_code(start: Start, merchant: Merchant) -> None:
    running = start(ecuador_processor="wallet")
    with running.transfers() as client:
        token, answer = start_transfer(client, *ecuador("123456789", f"{merchant.base_url}/return"))
        assert isinstance(answer, EcuadorWallet)
        assert answer.transaction_reference == client.status(token).raw["transactionReference"]
        assert_png(answer.qr)
        assert answer.deep_link.endswith(f"/sandbox/pay/{token}")
        assert len(answer.reference_code) == 6 and answer.reference_code.isdigit()
        paid = running.simulator("POST", "/sandbox/v1/payments", {"referenceCode": answer.reference_code})
        assert paid.status_code == 200 and paid.json()["token"] == token
        assert merchant.wait_for_event(token).state is TransferState.APPROVED


def test_payer_page_decline_and_unknown_token(start: Start, merchant: Merchant) -> None:
    running = start()
    with running.transfers() as client:
        token, _ = start_transfer(client, *colombia(5000))
        with httpx.Client(base_url=running.base_url, timeout=10) as browser:
            form = page_token(browser.get(f"/sandbox/pay/{token}").text)
            second_tab = page_token(browser.get(f"/sandbox/pay/{token}").text)
            declined = browser.post(f"/sandbox/pay/{token}", data={"action": "decline", **form})
            assert declined.status_code == 200 and "rejected" in declined.text
            assert browser.post(f"/sandbox/pay/{token}", data={"action": "pay", **second_tab}).status_code == 409
            assert browser.get("/sandbox/pay/nope").status_code == 404
        assert merchant.wait_for_event(token).state is TransferState.REJECTED


# --- cards ----------------------------------------------------------------------------------------

_NETWORK_CARD = Card(name="Ana Gómez", number="4000000000000002", expiry_month="12", expiry_year="29",
                     cryptogram="AgAAAAAAAIR8CQrXcIhbQAAAAAA")
_PLAIN_CARD = Card(name="Ana Gómez", number="5100000000000008", expiry_month="12", expiry_year="29", cvv="123")
_CHARGE_AMOUNT = Amount.from_total("119000", currency="COP", iva_rate="0.19", in_amount=True)


def _card_token(client: CardClient, card: Card, *, network: Optional[NetworkTokenData] = None) -> str:
    request = CardTokenRequest(card=card, total_amount=Decimal("119000"), currency="COP",
                               is_network_token=card.cryptogram is not None, network_token=network)
    return client.create_token(request).token


def test_transport_network_token_produces_the_network_object(start: Start) -> None:
    with start().cards() as client:
        token = _card_token(client, _NETWORK_CARD, network=NetworkTokenData(wallet_id="01", source="WALLET-X",
                                                                             mvv="0123456789"))
        result = client.charge(ChargeRequest(token=token, amount=_CHARGE_AMOUNT))
        assert result.network is not None
        assert (result.network.wallet, result.network.wallet_id, result.network.is_network_token) == (
            "WALLET-X", "01", True)
        assert result.network.tms_masked_card_number == "400000XXXXXX0002"
        assert (result.network.tms_bin, result.network.tms_last_four_digits) == ("400000", "0002")
        assert result.network.tms_integration == "transport"
        assert result.ticket_number.isdigit() and uuid.UUID(result.transaction_reference)


def test_creation_capability_produces_the_network_object(start: Start) -> None:
    with start().cards() as client:
        token = _card_token(client, _PLAIN_CARD)
        result = client.pre_authorize(ChargeRequest(token=token, amount=_CHARGE_AMOUNT,
                                                    capabilities=("networkToken",)))
        assert result.network is not None
        assert (result.network.tms_integration, result.network.wallet_id) == ("creation", "04")
        assert result.network.tms_masked_card_number == "510000XXXXXX0008"


def test_a_plain_charge_has_no_network_object_and_tokens_are_single_use(start: Start) -> None:
    with start().cards() as client:
        token = _card_token(client, _PLAIN_CARD)
        assert client.charge(ChargeRequest(token=token, amount=_CHARGE_AMOUNT)).network is None
        with pytest.raises(ApiError) as caught:
            client.charge(ChargeRequest(token=token, amount=_CHARGE_AMOUNT))
        assert (caught.value.status, json.loads(caught.value.body)["field"]) == (400, "token")


def test_the_card_client_voids_a_charge_once(start: Start) -> None:
    with start().cards() as client:
        charged = client.charge(ChargeRequest(token=_card_token(client, _PLAIN_CARD), amount=_CHARGE_AMOUNT))
        voided = client.void_charge(charged.ticket_number)
        assert voided.transaction_type == "VOID" and voided.ticket_number != charged.ticket_number
        with pytest.raises(ApiError) as caught:
            client.void_charge(charged.ticket_number)
        assert (caught.value.status, caught.value.code) == (400, "CHARGE_ALREADY_REVERSED")


def test_tokenless_charge_with_transport_fields(start: Start) -> None:
    with start().cards() as client:
        result = client.charge_tokenless(TokenlessChargeRequest(
            card=_NETWORK_CARD, amount=_CHARGE_AMOUNT, is_network_token=True,
            network_token=NetworkTokenData(wallet_id="04"), capabilities=("networkToken",)))
        assert result.network is not None and result.network.tms_integration == "transport"


def test_card_rules_are_the_clients(start: Start) -> None:
    running = start()
    body = {"card": {"name": "A", "number": "5100000000000008", "expiryMonth": "12", "expiryYear": "29",
                     "cryptogram": "AgAAAAAAAIR8CQrXcIhbQAAAAAA"}, "totalAmount": 1000, "currency": "COP"}
    with running.http() as client:
        refused = client.post("/card/v1/tokens", json=body, headers={"Public-Merchant-Id": PUBLIC})
    assert refused.status_code == 400 and refused.json()["field"] == "card.cryptogram"
    assert "5100000000000008" not in refused.text and "AgAAAAAAAIR8CQrXcIhbQAAAAAA" not in refused.text


# --- auth, routes, schema -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "header", "needed"),
    [
        ("POST", "/transfer/v1/tokens", None, "Public-Merchant-Id"),
        ("POST", "/transfer/v1/init", ("Public-Merchant-Id", PUBLIC), "Private-Merchant-Id"),
        ("GET", "/transfer/v1/status/abc", ("Private-Merchant-Id", "sk-wrong-value"), "Private-Merchant-Id"),
        ("PATCH", "/transfer/v1/cancel/abc", ("Private-Merchant-Id", PUBLIC), "Private-Merchant-Id"),
        ("POST", "/card/v1/charges", None, "Private-Merchant-Id"),
        ("POST", "/card/v1/tokens", ("Public-Merchant-Id", PRIVATE), "Public-Merchant-Id"),
        ("POST", "/sandbox/v1/payments", None, "Private-Merchant-Id"),
        ("GET", "/status/abc", ("Public-Merchant-Id", "pk-wrong-value"), "Public-Merchant-Id"),
    ],
)
def test_every_call_checks_its_key_header(
    start: Start, method: str, path: str, header: Optional[tuple[str, str]], needed: str
) -> None:
    running = start()
    with running.http() as client:
        answer = client.request(method, path, json={}, headers=dict([header]) if header else {})
    assert answer.status_code == 401
    body = answer.json()
    assert body["code"] == "UNAUTHORIZED" and needed in body["message"]
    if header is not None:
        assert header[1] not in answer.text


def test_a_client_with_a_wrong_private_key_gets_401(start: Start) -> None:
    running = start()
    config = ServiceConfig(base_url=running.base_url, public_merchant_id=PUBLIC, private_merchant_id="sk-other",
                           retry=NO_RETRY)
    with TransferClient(config, http_client=running.http()) as client, pytest.raises(ApiError) as caught:
        client.status("abc")
    assert caught.value.status == 401 and "sk-other" not in caught.value.body


def test_unknown_routes_wrong_methods_and_schema_errors(start: Start) -> None:
    running = start()
    with running.http() as client:
        missing = client.get("/transfer/v2/tokens")
        assert (missing.status_code, missing.json()["code"]) == (404, "NOT_FOUND")
        wrong = client.get("/transfer/v1/tokens", headers={"Public-Merchant-Id": PUBLIC})
        assert wrong.status_code == 405 and wrong.headers["allow"] == "OPTIONS, POST"  # OPTIONS: its CORS preflight
        keys = {"Public-Merchant-Id": PUBLIC}
        bad = client.post("/transfer/v1/tokens", json={"currency": "COP", "amount": {
            "subtotalIva": 0, "subtotalIva0": "10000", "iva": 0}}, headers=keys)
        assert bad.status_code == 400
        assert bad.json() == {"code": "INVALID_REQUEST", "field": "amount.subtotalIva0",
                              "message": "amount.subtotalIva0: must be a number, got string"}
        rule = client.post("/transfer/v1/tokens", json={"currency": "COP", "amount": {
            "subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}}, headers=keys)
        assert rule.status_code == 400 and rule.json()["field"] == "bankId"  # COP without flow is PSE
        not_json = client.post("/transfer/v1/tokens", content=b"{nope",
                               headers={**keys, "Content-Type": "application/json"})
        assert not_json.status_code == 400 and not_json.json()["field"] == "body"
        assert client.get("/status/unknown", headers=keys).status_code == 404
        assert client.get("/openapi.json").json()["openapi"] == "3.0.3"


def test_lone_surrogates_are_stored_and_a_broken_url_is_named(start: Start) -> None:
    running = start()
    keys = {"Public-Merchant-Id": PUBLIC, "Content-Type": "application/json"}
    amount = '{"subtotalIva": 0, "subtotalIva0": 100, "iva": 0}'
    flow = '{"processorName": "BRE-B", "type": "QR"}'
    with running.http() as client:
        odd = client.post("/transfer/v1/tokens", headers=keys, content=(
            f'{{"currency": "COP", "amount": {amount}, "flow": {flow}, "documentNumber": "\\ud800x"}}').encode())
        assert odd.status_code == 201
        broken = client.post("/transfer/v1/tokens", headers=keys, content=(
            f'{{"currency": "USD", "amount": {amount}, "documentType": "CI", "documentNumber": "1",'
            f' "callbackUrl": "https://]"}}').encode())
        assert broken.status_code == 400 and broken.json()["field"] == "callbackUrl"


# --- terminal -------------------------------------------------------------------------------------


def test_terminal_echoes_the_payload_encrypted(start: Start) -> None:
    running = start()
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    with TerminalClient(f"{running.base_url}/terminal", terminal) as client:
        assert client.post("/v1/sync/charge", {"amount": 100.0, "currency": "COP"}) == {"amount": 100,
                                                                                        "currency": "COP"}
        assert client.put("/v1/devices/7", {"name": "caja 1"}) == {"name": "caja 1"}
        assert client.get("/v1/sync/abort") == {}
        assert client.get("/v1/async/abort", {"transactionId": "t-77"}) == {"transactionId": "t-77"}
        assert client.get("/v1/print/status", {"printJobId": "job-9"}) == {"printJobId": "job-9", "status": "printed"}
        with pytest.raises(ApiError) as caught:
            client.get("/v1/print/status")
        assert (caught.value.status, caught.value.code) == (400, "INVALID_REQUEST")
        assert json.loads(caught.value.body)["field"] == "printJobId"


def test_terminal_answers_auth_001_to_every_invalid_request(start: Start) -> None:
    running = start()
    url = f"{running.base_url}/terminal"
    with TerminalClient(url, Terminal("bc-someone-else", SERIAL)) as client, pytest.raises(AuthError):
        client.post("/v1/sync/charge", {"amount": 1})
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal({"amount": 1}, timestamp=int(time.time()) - 600)
    expected = {"type": "AUTH", "code": "AUTH-001", "message": "Invalid or expired credentials"}
    with httpx.Client(base_url=url, timeout=10) as http:
        expired = http.post("/v1/sync/charge", content=sealed.body, headers=sealed.headers)
        fresh = Terminal(BUSINESS_CODE, SERIAL).seal({"id": "x"}, method="GET")
        extra_query = http.get("/v1/sync/abort", params={**(fresh.params or {}), "transactionId": "x"},
                               headers=fresh.headers)
        unsigned = http.post("/v1/sync/charge", json={"amount": 1})
    for answer in (expired, extra_query, unsigned):
        assert (answer.status_code, answer.json()) == (401, expected)


def test_terminal_async_client(start: Start) -> None:
    running = start()

    async def call() -> Any:
        async with AsyncTerminalClient(f"{running.base_url}/terminal", Terminal(BUSINESS_CODE, SERIAL)) as client:
            return await client.patch("/v1/sync/charge", {"tip": 10.5})

    assert asyncio.run(call()) == {"tip": 10.5}
