"""Card models: the wire bodies, secrets kept out of reprs, and every response shape."""

# ruff: noqa: S105, S106 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from pasarela.cards import (
    Card,
    CardToken,
    CardTokenRequest,
    ChargeRequest,
    ChargeResult,
    NetworkTokenData,
    NetworkTokenInfo,
    TokenlessChargeRequest,
)
from pasarela.errors import ResponseShapeError
from pasarela.transfers.amounts import Amount

VISA = "4000000000000002"
CRYPTOGRAM = "AgAAAAAAAIR8CQrXcIhbQAAAAAA"
REFERENCE = "8a5e1b2c-0d3f-4e6a-9b7c-1d2e3f4a5b6c"
NT_CARD = Card(name="Ana Gómez", number=VISA, expiry_month="12", expiry_year="29", cryptogram=CRYPTOGRAM)
NT_DATA = NetworkTokenData(
    device_type="MOBILE",
    requestor_id="40010030273",
    source="WALLET",
    wallet_id="01",
    authentication_level="1",
    mvv="0123456789",
)
AMOUNT = Amount.from_total("119000", currency="COP", iva_rate="0.19", in_amount=True)


def test_token_request_wire_with_network_token() -> None:
    request = CardTokenRequest(
        card=NT_CARD, total_amount=Decimal("119000"), currency="COP", is_network_token=True, network_token=NT_DATA
    )
    assert request.to_wire() == {
        "card": {
            "name": "Ana Gómez",
            "number": VISA,
            "expiryMonth": "12",
            "expiryYear": "29",
            "cryptogram": CRYPTOGRAM,
        },
        "totalAmount": 119000,
        "currency": "COP",
        "isNetworkToken": True,
        "networkToken": {
            "deviceType": "MOBILE",
            "requestorId": "40010030273",
            "source": "WALLET",
            "walletId": "01",
            "authenticationLevel": "1",
            "mvv": "0123456789",
        },
    }


def test_token_request_wire_without_network_token_keeps_the_classic_shape() -> None:
    classic = Card(name="Ana", number=VISA, expiry_month="01", expiry_year="30", cvv="123")
    wire = CardTokenRequest(card=classic, total_amount=Decimal("10.50"), currency="PEN").to_wire()
    assert wire == {
        "card": {"name": "Ana", "number": VISA, "expiryMonth": "01", "expiryYear": "30", "cvv": "123"},
        "totalAmount": 10.5,
        "currency": "PEN",
    }
    assert json.dumps(wire)  # plain JSON, no Decimal left


def test_charge_wire() -> None:
    request = ChargeRequest(token="tok_1", amount=AMOUNT, capabilities=("networkToken",))
    assert request.to_wire() == {
        "token": "tok_1",
        "amount": {"subtotalIva": 100000, "subtotalIva0": 0, "iva": 19000, "currency": "COP"},
        "capabilities": ["networkToken"],
    }
    assert "capabilities" not in ChargeRequest(token="tok_1", amount=AMOUNT).to_wire()


def test_tokenless_charge_wire() -> None:
    request = TokenlessChargeRequest(
        card=NT_CARD, amount=AMOUNT, is_network_token=True, network_token=NetworkTokenData(wallet_id="04")
    )
    wire = request.to_wire()
    assert wire["card"]["cryptogram"] == CRYPTOGRAM
    assert wire["isNetworkToken"] is True
    assert wire["networkToken"] == {"walletId": "04"}
    assert wire["amount"]["currency"] == "COP"


def test_reprs_hide_card_number_cvv_and_cryptogram() -> None:
    classic = Card(name="Ana", number=VISA, expiry_month="01", expiry_year="30", cvv="987")
    request = CardTokenRequest(card=NT_CARD, total_amount=Decimal(1), currency="COP", is_network_token=True)
    for text in (repr(classic), repr(NT_CARD), repr(request), str(request)):
        assert VISA not in text
        assert CRYPTOGRAM not in text
        assert "987" not in text
    assert "400000******0002" in repr(classic)
    assert "cvv=<hidden>" in repr(classic)
    assert "cryptogram=<hidden>" in repr(NT_CARD)


def test_card_token_parsed() -> None:
    token = CardToken.from_json({"token": "abc123", "extra": 1})
    assert token.token == "abc123"
    assert token.raw["extra"] == 1


@pytest.mark.parametrize(("body", "path"), [({}, "$.token"), ({"token": 5}, "$.token"), ([], "$"), ("x", "$")])
def test_card_token_wrong_shape(body: Any, path: str) -> None:
    with pytest.raises(ResponseShapeError) as caught:
        CardToken.from_json(body)
    assert caught.value.field == path


NETWORK = {
    "wallet": "ApplePay",
    "walletId": "01",
    "isNetworkToken": True,
    "tmsMaskedCardNumber": "424242XXXXXX4242",
    "tmsLastFourDigits": "4242",
    "tmsBin": "424242",
    "tmsIntegration": "VTS",
}


def test_charge_result_with_network_object() -> None:
    result = ChargeResult.from_json(
        {"ticketNumber": "123456789012", "transactionReference": REFERENCE, "network": NETWORK}
    )
    assert result.ticket_number == "123456789012"
    assert result.transaction_reference == REFERENCE
    assert result.network == NetworkTokenInfo(
        wallet="ApplePay",
        wallet_id="01",
        is_network_token=True,
        tms_masked_card_number="424242XXXXXX4242",
        tms_last_four_digits="4242",
        tms_bin="424242",
        tms_integration="VTS",
        raw=NETWORK,
    )


def test_charge_result_without_network_object() -> None:
    result = ChargeResult.from_json({"ticketNumber": "1", "transactionReference": REFERENCE, "approvalCode": "000"})
    assert result.network is None
    assert result.raw["approvalCode"] == "000"


def test_network_members_are_optional_but_typed() -> None:
    result = ChargeResult.from_json(
        {"ticketNumber": "1", "transactionReference": REFERENCE, "network": {"wallet": "GooglePay"}}
    )
    assert result.network is not None and result.network.tms_bin is None and result.network.wallet == "GooglePay"


@pytest.mark.parametrize(
    ("network", "path"),
    [
        ({**NETWORK, "tmsMaskedCardNumber": "4242424242424242"}, "$.network.tmsMaskedCardNumber"),
        ({**NETWORK, "tmsMaskedCardNumber": "42424XXXXXXX4242"}, "$.network.tmsMaskedCardNumber"),
        ({**NETWORK, "tmsMaskedCardNumber": "424242XXXXXX424"}, "$.network.tmsMaskedCardNumber"),
        ({**NETWORK, "tmsBin": "42424"}, "$.network.tmsBin"),
        ({**NETWORK, "tmsBin": 424242}, "$.network.tmsBin"),
        ({**NETWORK, "tmsLastFourDigits": "42a2"}, "$.network.tmsLastFourDigits"),
        ({**NETWORK, "isNetworkToken": "true"}, "$.network.isNetworkToken"),
        ({**NETWORK, "walletId": 1}, "$.network.walletId"),
        ("not an object", "$.network"),
    ],
)
def test_network_wrong_shape(network: Any, path: str) -> None:
    with pytest.raises(ResponseShapeError) as caught:
        ChargeResult.from_json({"ticketNumber": "1", "transactionReference": REFERENCE, "network": network})
    assert caught.value.field == path


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"transactionReference": REFERENCE}, "$.ticketNumber"),
        ({"ticketNumber": 12, "transactionReference": REFERENCE}, "$.ticketNumber"),
        ({"ticketNumber": "1"}, "$.transactionReference"),
        ({"ticketNumber": "1", "transactionReference": "not-a-uuid"}, "$.transactionReference"),
    ],
)
def test_charge_result_wrong_shape(body: Any, path: str) -> None:
    with pytest.raises(ResponseShapeError) as caught:
        ChargeResult.from_json(body)
    assert caught.value.field == path
    assert "unexpected response" in str(caught.value)
