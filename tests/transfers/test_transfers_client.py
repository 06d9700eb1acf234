"""TransferClient and AsyncTransferClient over real HTTP (spec 4.3, 7, rules 6 and 9)."""

# ruff: noqa: S105, S106 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

import asyncio
import base64

import pytest

from pasarela.errors import (
    ApiError,
    FinalStatusError,
    PendingTransferError,
    QrCodeError,
    TransportError,
    ValidationError,
)
from pasarela.http import RetryPolicy, ServiceConfig
from pasarela.transfers import (
    Amount,
    AsyncTransferClient,
    ColombiaQr,
    EcuadorWallet,
    MexicoClabe,
    PendingTransfers,
    TransferClient,
    TransferInitRequest,
    TransferState,
    TransferTokenRequest,
)
from support.local_server import ScriptedService, scripted_service_fixtures

PRIVATE_KEY = "priv-0123456789abcdef"
REFERENCE = "1f0c6a1e-3b1a-4c55-8a22-2f4e0f6d9b10"
QR = "data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()
COP = Amount.untaxed(10000, currency="COP")
COLOMBIA_INIT = {"qr": QR, "transactionReference": REFERENCE}


scripted_server, service = scripted_service_fixtures()


@pytest.fixture
def config(service: ScriptedService) -> ServiceConfig:
    return ServiceConfig(
        base_url=service.base_url,
        public_merchant_id="pub-1",
        private_merchant_id=PRIVATE_KEY,
        retry=RetryPolicy(jitter=lambda: 0.0),
    )


def no_sleep(_: float) -> None:
    pytest.fail("nothing here should be retried")


def test_colombia_qr_token_then_init_with_full_response(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("POST", "/transfer/v1/tokens", 201, {"token": "tok-co"})
    details = {
        "status": "initializedTransaction",
        "amount": {"currency": "COP", "iva": 0, "subtotalIva": 0, "subtotalIva0": 10000},
        "created": 1767225600000,
        "merchantId": "m-1",
        "merchantName": "Tienda",
    }
    service.reply("POST", "/transfer/v1/init", 201, {**COLOMBIA_INIT, "details": details})
    with TransferClient(config, sleep=no_sleep) as client:
        token = client.create_token(TransferTokenRequest.colombia_qr(amount=COP))
        result = client.init(TransferInitRequest(token=token.token, amount=COP, full_response=True))
    assert isinstance(result, ColombiaQr) and result.details is not None
    assert result.details.state is TransferState.INITIALIZED
    token_call, init_call = service.requests
    assert token_call.headers["public-merchant-id"] == "pub-1" and "private-merchant-id" not in token_call.headers
    assert token_call.json()["flow"] == {"processorName": "BRE-B", "type": "QR"}  # certification rule 9
    assert init_call.headers["private-merchant-id"] == PRIVATE_KEY and "public-merchant-id" not in init_call.headers
    assert init_call.headers["content-type"] == "application/json"
    assert init_call.json() == {"token": "tok-co", "amount": COP.to_wire(), "fullResponse": "v2"}


def test_mexico_and_ecuador_variants(service: ScriptedService, config: ServiceConfig) -> None:
    mexico = {
        "bank": "STP",
        "referenceNumber": "1",
        "referenceProcessor": "646180157000000004",
        "ticketNumber": "2",
        "transactionReference": REFERENCE,
    }
    service.reply("POST", "/transfer/v1/init", 200, mexico)
    service.reply("POST", "/transfer/v1/init", 200, {"qr": QR, "redirectUrl": "deuna://pay", "referenceCode": "123456"})
    amount = Amount.from_total("116.00", currency="MXN", iva_rate="0.16")
    with TransferClient(config, sleep=no_sleep) as client:
        clabe = client.init(TransferInitRequest(token="tok-mx", amount=amount))
        wallet = client.init(TransferInitRequest(token="tok-ec", amount=amount))
    assert isinstance(clabe, MexicoClabe) and clabe.clabe == "646180157000000004"
    assert isinstance(wallet, EcuadorWallet) and wallet.reference_code == "123456"


def test_status_uses_the_private_key_and_quotes_the_token(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("GET", "/transfer/v1/status/tok%2F%3F1", 200, {"status": "PAID", "amount": 1})
    with TransferClient(config, sleep=no_sleep) as client:
        status = client.status("tok/?1")
    assert status.state is TransferState.APPROVED and status.raw["amount"] == 1
    assert service.requests[0].headers["private-merchant-id"] == PRIVATE_KEY


def test_cancel_returns_on_204_with_no_body(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("PATCH", "/transfer/v1/cancel/tok-co", 204)
    with TransferClient(config, sleep=no_sleep) as client:
        assert client.cancel("tok-co") is None
    sent = service.requests[0]
    assert (sent.method, sent.body) == ("PATCH", b"")
    assert sent.headers["private-merchant-id"] == PRIVATE_KEY
    assert "idempotency-key" not in sent.headers


def test_cancel_of_a_final_transaction_is_final_status_error(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply(
        "PATCH", "/transfer/v1/cancel/tok-co", 400, {"code": "T023", "message": "Transaction has a final status."}
    )
    with TransferClient(config, sleep=no_sleep) as client, pytest.raises(FinalStatusError) as caught:
        client.cancel("tok-co")
    assert caught.value.message == "Transaction has a final status."


def test_cancel_is_not_retried(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("PATCH", "/transfer/v1/cancel/tok-co", 503)
    with TransferClient(config, sleep=no_sleep) as client, pytest.raises(ApiError):
        client.cancel("tok-co")
    assert len(service.requests) == 1


@pytest.mark.parametrize(("status", "code"), [(500, "QR-CODE-0001"), (400, "QR-CODE-0059")])
def test_qr_errors_of_the_test_scenarios(
    service: ScriptedService, config: ServiceConfig, status: int, code: str
) -> None:
    service.reply("POST", "/transfer/v1/init", status, {"code": code})
    with TransferClient(config, sleep=no_sleep) as client, pytest.raises(QrCodeError) as caught:
        client.init(TransferInitRequest(token="tok", amount=COP))
    assert (caught.value.status, caught.value.code) == (status, code)
    assert len(service.requests) == 1  # a POST is never retried, not even on a 500


def test_ecuador_return_reads_the_token_and_fetches_the_status(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("GET", "/transfer/v1/status/tok-ec", 200, {"status": "rejected"})
    service.reply("GET", "/transfer/v1/status/tok-ec", 200, {"status": "PAID"})
    with TransferClient(config, sleep=no_sleep) as client:
        assert (
            client.status_from_callback("https://shop.example/return?token=tok-ec&x=1").state is TransferState.REJECTED
        )
        assert client.status_from_callback({"token": "tok-ec"}).state is TransferState.APPROVED
        with pytest.raises(ValidationError) as caught:
            client.status_from_callback("https://shop.example/return?x=1")
    assert caught.value.field == "token"
    assert len(service.requests) == 2


# --- certification rule 6 -----------------------------------------------------------------------


def test_guard_blocks_a_second_transfer_until_the_status_is_final(
    service: ScriptedService, config: ServiceConfig
) -> None:
    guard = PendingTransfers()
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "initializedTransaction"})
    service.reply("GET", "/transfer/v1/status/tok-1", 200, {"status": "PAID"})
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    with TransferClient(config, pending=guard, sleep=no_sleep) as client:
        client.init(TransferInitRequest(token="tok-1", amount=COP), order_id="order-7")
        with pytest.raises(PendingTransferError):
            client.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-7")
        assert client.status("tok-1").state is TransferState.INITIALIZED
        with pytest.raises(PendingTransferError):
            client.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-7")
        assert client.status("tok-1").state is TransferState.APPROVED
        client.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-7")
        with pytest.raises(ValidationError) as caught:
            client.init(TransferInitRequest(token="tok-3", amount=COP))
    assert caught.value.field == "order_id"
    assert [r.path for r in service.requests].count("/transfer/v1/init") == 2  # refused ones were never sent
    pending = guard.pending("order-7")
    assert pending is not None and pending.token == "tok-2" and pending.transaction_reference == REFERENCE
    guard.close()


def test_guard_released_by_cancel_and_by_t023(service: ScriptedService, config: ServiceConfig) -> None:
    guard = PendingTransfers()
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    service.reply("PATCH", "/transfer/v1/cancel/tok-1", 204)
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    service.reply("PATCH", "/transfer/v1/cancel/tok-2", 400, {"code": "T023"})
    with TransferClient(config, pending=guard, sleep=no_sleep) as client:
        client.init(TransferInitRequest(token="tok-1", amount=COP), order_id="order-8")
        client.cancel("tok-1")
        assert guard.pending("order-8") is None
        client.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-8")
        with pytest.raises(FinalStatusError):
            client.cancel("tok-2")
        assert guard.pending("order-8") is None
    guard.close()


def test_guard_kept_when_the_init_outcome_is_unknown(service: ScriptedService, config: ServiceConfig) -> None:
    guard = PendingTransfers()
    service.hang("POST", "/transfer/v1/init")
    service.reply("POST", "/transfer/v1/init", 400, {"code": "T001", "message": "token inválido"})
    quick = ServiceConfig(base_url=config.base_url, private_merchant_id=PRIVATE_KEY, timeout=0.2)
    with TransferClient(quick, pending=guard, sleep=no_sleep) as client:
        with pytest.raises(TransportError):
            client.init(TransferInitRequest(token="tok-1", amount=COP), order_id="order-9")
        assert guard.pending("order-9") is not None  # the transfer may exist: only its status can tell
        with pytest.raises(ApiError):
            client.init(TransferInitRequest(token="tok-2", amount=COP), order_id="order-10")
        assert guard.pending("order-10") is None  # refused outright: nothing to wait for
    guard.close()


def test_async_client_full_round(service: ScriptedService, config: ServiceConfig) -> None:
    guard = PendingTransfers()
    service.reply("POST", "/transfer/v1/tokens", 201, {"token": "tok-a"})
    service.reply("POST", "/transfer/v1/init", 201, COLOMBIA_INIT)
    service.reply("GET", "/transfer/v1/status/tok-a", 500)
    service.reply("GET", "/transfer/v1/status/tok-a", 200, {"status": "rejected"})
    service.reply("GET", "/transfer/v1/status/tok-a", 200, {"status": "rejected"})
    service.reply(
        "PATCH", "/transfer/v1/cancel/tok-a", 400, {"code": "T023", "message": "Transaction has a final status."}
    )
    service.reply("PATCH", "/transfer/v1/cancel/tok-b", 204)
    sleeps: list[float] = []

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    async def main() -> None:
        async with AsyncTransferClient(config, pending=guard, sleep=record) as client:
            token = await client.create_token(TransferTokenRequest.colombia_qr(amount=COP))
            result = await client.init(TransferInitRequest(token=token.token, amount=COP), order_id="order-a")
            assert isinstance(result, ColombiaQr)
            assert guard.pending("order-a") is not None
            assert (await client.status("tok-a")).state is TransferState.REJECTED
            assert guard.pending("order-a") is None
            assert (
                await client.status_from_callback("https://shop.example/r?token=tok-a")
            ).state is TransferState.REJECTED
            with pytest.raises(FinalStatusError):
                await client.cancel("tok-a")
            assert await client.cancel("tok-b") is None

    asyncio.run(main())
    assert sleeps == [0.25]
    assert [r.method for r in service.requests] == ["POST", "POST", "GET", "GET", "GET", "PATCH", "PATCH"]
    guard.close()
