"""CardClient and AsyncCardClient over real HTTP (spec 4.2): paths, headers, bodies, parsing, errors."""

# ruff: noqa: S105, S106 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from pasarela.cards import (
    AsyncCardClient,
    Card,
    CardClient,
    CardTokenRequest,
    ChargeRequest,
    ChargeResult,
    NetworkTokenData,
    TokenlessChargeRequest,
)
from pasarela.errors import ApiError, ConfigurationError, ResponseShapeError
from pasarela.http import ServiceConfig
from pasarela.transfers.amounts import Amount
from support.local_server import ScriptedService, scripted_service_fixtures

VISA = "4000000000000002"
CRYPTOGRAM = "AgAAAAAAAIR8CQrXcIhbQAAAAAA"
PRIVATE_KEY = "priv-0123456789abcdef"
REFERENCE = "8a5e1b2c-0d3f-4e6a-9b7c-1d2e3f4a5b6c"
AMOUNT = Amount.from_total("119000", currency="COP", iva_rate="0.19", in_amount=True)
NETWORK = {
    "wallet": "GooglePay",
    "walletId": "04",
    "isNetworkToken": True,
    "tmsMaskedCardNumber": "400000XXXXXX0002",
    "tmsLastFourDigits": "0002",
    "tmsBin": "400000",
    "tmsIntegration": "MDES",
}


scripted_server, service = scripted_service_fixtures()


@pytest.fixture
def config(service: ScriptedService) -> ServiceConfig:
    return ServiceConfig(base_url=service.base_url, public_merchant_id="pub-1", private_merchant_id=PRIVATE_KEY)


def nt_card() -> Card:
    return Card(name="Ana", number=VISA, expiry_month="12", expiry_year="29", cryptogram=CRYPTOGRAM)


def test_create_token_uses_the_public_key(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("POST", "/card/v1/tokens", 200, {"token": "card-tok-1"})
    request = CardTokenRequest(
        card=nt_card(),
        total_amount=Decimal(119000),
        currency="COP",
        is_network_token=True,
        network_token=NetworkTokenData(wallet_id="01"),
    )
    with CardClient(config) as client:
        assert client.create_token(request).token == "card-tok-1"
    sent = service.requests[0]
    assert sent.headers["public-merchant-id"] == "pub-1"
    assert "private-merchant-id" not in sent.headers
    assert sent.headers["content-type"] == "application/json"
    assert sent.json() == request.to_wire()


def test_charge_with_network_token_creation(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply(
        "POST", "/card/v1/charges", 201, {"ticketNumber": "T-1", "transactionReference": REFERENCE, "network": NETWORK}
    )
    with CardClient(config) as client:
        result = client.charge(ChargeRequest(token="card-tok-1", amount=AMOUNT, capabilities=("networkToken",)))
    assert result.ticket_number == "T-1" and result.network is not None and result.network.tms_bin == "400000"
    sent = service.requests[0]
    assert sent.headers["private-merchant-id"] == PRIVATE_KEY and "public-merchant-id" not in sent.headers
    assert sent.json() == {
        "token": "card-tok-1",
        "amount": {"subtotalIva": 100000, "subtotalIva0": 0, "iva": 19000, "currency": "COP"},
        "capabilities": ["networkToken"],
    }


def test_pre_authorization_and_tokenless_charge_paths(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("POST", "/card/v1/preAuthorization", 200, {"ticketNumber": "T-2", "transactionReference": REFERENCE})
    service.reply(
        "POST", "/card/v2/charges", 200, {"ticketNumber": "T-3", "transactionReference": REFERENCE, "network": NETWORK}
    )
    with CardClient(config) as client:
        pre = client.pre_authorize(ChargeRequest(token="card-tok-1", amount=AMOUNT))
        tokenless = client.charge_tokenless(
            TokenlessChargeRequest(card=nt_card(), amount=AMOUNT, is_network_token=True)
        )
    assert pre.ticket_number == "T-2" and pre.network is None
    assert tokenless.network is not None and tokenless.network.wallet == "GooglePay"
    assert [r.path for r in service.requests] == ["/card/v1/preAuthorization", "/card/v2/charges"]
    assert service.requests[1].json()["card"]["cryptogram"] == CRYPTOGRAM


def test_error_answers_become_api_errors_with_the_service_message(
    service: ScriptedService, config: ServiceConfig
) -> None:
    service.reply("POST", "/card/v1/charges", 400, {"code": "K322", "message": "Monto inválido"})
    with CardClient(config) as client, pytest.raises(ApiError) as caught:
        client.charge(ChargeRequest(token="t", amount=AMOUNT))
    assert (caught.value.status, caught.value.code, caught.value.message) == (400, "K322", "Monto inválido")
    assert PRIVATE_KEY not in str(caught.value)


def test_a_wrong_success_shape_is_reported_at_parse_time(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("POST", "/card/v1/charges", 200, {"ticketNumber": "T-1", "transactionReference": "nope"})
    with CardClient(config) as client, pytest.raises(ResponseShapeError) as caught:
        client.charge(ChargeRequest(token="t", amount=AMOUNT))
    assert caught.value.field == "$.transactionReference"


def test_missing_key_is_refused_before_anything_is_sent(service: ScriptedService) -> None:
    public_only = ServiceConfig(base_url=service.base_url, public_merchant_id="pub-1")
    with CardClient(public_only) as client, pytest.raises(ConfigurationError, match="private_merchant_id"):
        client.charge(ChargeRequest(token="t", amount=AMOUNT))
    assert service.requests == []


def test_client_repr_hides_the_private_key(config: ServiceConfig) -> None:
    with CardClient(config) as client:
        assert PRIVATE_KEY not in repr(client) and "CardClient(ServiceConfig(" in repr(client)


def test_async_client_does_the_same_calls(service: ScriptedService, config: ServiceConfig) -> None:
    service.reply("POST", "/card/v1/tokens", 200, {"token": "card-tok-2"})
    service.reply("POST", "/card/v1/charges", 200, {"ticketNumber": "T-1", "transactionReference": REFERENCE})
    service.reply("POST", "/card/v1/preAuthorization", 200, {"ticketNumber": "T-2", "transactionReference": REFERENCE})
    service.reply("POST", "/card/v2/charges", 200, {"ticketNumber": "T-3", "transactionReference": REFERENCE})

    async def main() -> list[object]:
        async with AsyncCardClient(config) as client:
            token = await client.create_token(
                CardTokenRequest(card=nt_card(), total_amount=Decimal(1), currency="MXN", is_network_token=True)
            )
            charge = await client.charge(ChargeRequest(token=token.token, amount=AMOUNT), idempotency_key="order-9")
            pre = await client.pre_authorize(ChargeRequest(token=token.token, amount=AMOUNT))
            tokenless = await client.charge_tokenless(
                TokenlessChargeRequest(card=nt_card(), amount=AMOUNT, is_network_token=True)
            )
            return [token.token, charge, pre, tokenless]

    token, *results = asyncio.run(main())
    assert token == "card-tok-2"
    assert [r.ticket_number for r in results if isinstance(r, ChargeResult)] == ["T-1", "T-2", "T-3"]
    assert service.requests[0].headers["public-merchant-id"] == "pub-1"
    assert service.requests[1].headers["private-merchant-id"] == PRIVATE_KEY
    assert service.requests[1].headers["idempotency-key"] == "order-9"
