"""Every validation rule of the card models (spec 2.2, 2.3, 8), accepted and refused."""

# ruff: noqa: S106 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from pasarela.cards import Card, CardTokenRequest, ChargeRequest, NetworkTokenData, TokenlessChargeRequest
from pasarela.errors import ValidationError
from pasarela.transfers.amounts import Amount

VISA = "4000000000000002"
MASTERCARD = "5100000000000008"
CRYPTOGRAM = "AgAAAAAAAIR8CQrXcIhbQAAAAAA"  # 27 characters


def card(**changes: Any) -> Card:
    fields: dict[str, Any] = {
        "name": "Ana Gómez",
        "number": VISA,
        "expiry_month": "12",
        "expiry_year": "29",
        "cvv": "123",
    }
    fields.update(changes)
    return Card(**fields)


def token_request(**changes: Any) -> CardTokenRequest:
    fields: dict[str, Any] = {"card": card(), "total_amount": Decimal("10000"), "currency": "COP"}
    fields.update(changes)
    return CardTokenRequest(**fields)


def refused(field: str, build: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        build()
    assert caught.value.field == field, caught.value
    return caught.value


# --- card ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("month", ["01", "09", "12"])
def test_expiry_month_two_digits_accepted(month: str) -> None:
    assert card(expiry_month=month).expiry_month == month


@pytest.mark.parametrize("month", ["1", "001", "13", "00", "1a", "", 12])
def test_expiry_month_refused(month: object) -> None:
    refused("card.expiryMonth", lambda: card(expiry_month=month))


@pytest.mark.parametrize("year", ["00", "29", "99"])
def test_expiry_year_two_digits_accepted(year: str) -> None:
    assert card(expiry_year=year).expiry_year == year


@pytest.mark.parametrize("year", ["2029", "9", "2a", "٢٩"])
def test_expiry_year_refused(year: str) -> None:
    refused("card.expiryYear", lambda: card(expiry_year=year))


@pytest.mark.parametrize("number", ["4000 0000 0000 0002", "40000000000", "4" * 20, "400000000000000x"])
def test_card_number_refused_without_echoing_it(number: str) -> None:
    error = refused("card.number", lambda: card(number=number))
    assert number not in str(error)


@pytest.mark.parametrize("cvv", ["12", "12345", "12a"])
def test_cvv_refused_without_echoing_it(cvv: str) -> None:
    error = refused("card.cvv", lambda: card(cvv=cvv))
    assert f"'{cvv}'" not in str(error)


def test_cvv_optional_and_four_digits_accepted() -> None:
    assert card(cvv=None).cvv is None
    assert card(cvv="1234").cvv == "1234"


def test_name_required() -> None:
    refused("card.name", lambda: card(name="  "))


@pytest.mark.parametrize("length", [20, 24, 28])
def test_cryptogram_20_to_28_alphanumeric_accepted(length: int) -> None:
    value = ("Ab1" * 10)[:length]
    request = token_request(card=card(cryptogram=value), is_network_token=True)
    assert request.card.cryptogram == value


@pytest.mark.parametrize(
    "value",
    ["A" * 19, "A" * 29, "AgAAAAAAAIR8CQrXcIhbQ+AAAAA", "AgAAAAAAAIR8CQrXcIhbQ AAAA", "ÁgAAAAAAAIR8CQrXcIhbQAAAAA"],
)
def test_cryptogram_refused(value: str) -> None:
    error = refused("card.cryptogram", lambda: card(cryptogram=value))
    assert value not in str(error)


def test_cryptogram_only_with_network_token() -> None:
    error = refused("card.cryptogram", lambda: token_request(card=card(cryptogram=CRYPTOGRAM)))
    assert "isNetworkToken" in error.reason
    refused("card.cryptogram", lambda: token_request(card=card(cryptogram=CRYPTOGRAM), is_network_token=False))


# --- networkToken -------------------------------------------------------------------------------


@pytest.mark.parametrize("wallet_id", ["01", "04"])
def test_wallet_id_accepted(wallet_id: str) -> None:
    assert NetworkTokenData(wallet_id=wallet_id).wallet_id == wallet_id


@pytest.mark.parametrize("wallet_id", ["1", "02", "03", "05", "4"])
def test_wallet_id_refused(wallet_id: str) -> None:
    refused("networkToken.walletId", lambda: NetworkTokenData(wallet_id=wallet_id))


def test_mvv_ten_digits_on_visa_accepted() -> None:
    request = token_request(network_token=NetworkTokenData(mvv="0123456789"))
    assert request.network_token is not None and request.network_token.mvv == "0123456789"


@pytest.mark.parametrize("mvv", ["012345678", "01234567890", "01234567a9"])
def test_mvv_length_and_digits_refused(mvv: str) -> None:
    refused("networkToken.mvv", lambda: NetworkTokenData(mvv=mvv))


def test_mvv_refused_on_other_networks() -> None:
    error = refused(
        "networkToken.mvv",
        lambda: token_request(card=card(number=MASTERCARD), network_token=NetworkTokenData(mvv="0123456789")),
    )
    assert "Visa" in error.reason


def test_other_network_token_fields_are_non_empty_strings() -> None:
    data = NetworkTokenData(device_type="MOBILE", requestor_id="40010030273", source="WALLET", authentication_level="1")
    assert data.to_wire()["requestorId"] == "40010030273"
    refused("networkToken.deviceType", lambda: NetworkTokenData(device_type=""))
    refused("networkToken.requestorId", lambda: NetworkTokenData(requestor_id=123))  # type: ignore[arg-type]


def test_network_token_must_be_the_model() -> None:
    refused("networkToken", lambda: token_request(network_token={"walletId": "01"}))


def test_is_network_token_must_be_bool() -> None:
    refused("isNetworkToken", lambda: token_request(is_network_token="true"))


# --- token request: currency and totalAmount ----------------------------------------------------


@pytest.mark.parametrize("currency", ["COP", "CLP", "PEN", "MXN"])
def test_token_currency_accepted(currency: str) -> None:
    assert token_request(currency=currency).currency == currency


@pytest.mark.parametrize("currency", ["cop", "EUR", ""])
def test_token_currency_refused(currency: str) -> None:
    refused("currency", lambda: token_request(currency=currency))


def test_plain_card_token_in_usd_accepted_but_not_a_network_token() -> None:
    assert token_request(currency="USD").currency == "USD"
    refused("currency", lambda: token_request(currency="USD", card=card(cvv=None, cryptogram=CRYPTOGRAM),
                                              is_network_token=True))


@pytest.mark.parametrize("total", [Decimal(0), Decimal("0.01"), 100, "99.99", 12.5])
def test_total_amount_accepted(total: object) -> None:
    request = token_request(total_amount=total)
    assert isinstance(request.total_amount, Decimal)
    assert request.total_amount == Decimal(str(total))


@pytest.mark.parametrize("total", [Decimal(-1), Decimal("NaN"), float("inf"), "abc", True, Decimal("0.001")])
def test_total_amount_refused(total: object) -> None:
    refused("totalAmount", lambda: token_request(total_amount=total))


def test_total_amount_decimals_follow_the_currency() -> None:
    refused("totalAmount", lambda: token_request(total_amount=Decimal("1000.5"), currency="CLP"))
    assert token_request(total_amount=Decimal("1000.5"), currency="PEN").total_amount == Decimal("1000.5")


# --- charges ------------------------------------------------------------------------------------

AMOUNT_COP = Amount.from_total(Decimal("119000"), currency="COP", iva_rate="0.19", in_amount=True)


def test_charge_with_network_token_capability_accepted() -> None:
    request = ChargeRequest(token="tok_123", amount=AMOUNT_COP, capabilities=["networkToken"])  # type: ignore[arg-type]
    assert request.capabilities == ("networkToken",)


@pytest.mark.parametrize(
    ("capabilities", "field"),
    [
        (("networktoken",), "capabilities[0]"),
        (("networkToken", "other"), "capabilities[1]"),
        (("networkToken", "networkToken"), "capabilities"),
        ("networkToken", "capabilities"),
    ],
)
def test_charge_capabilities_refused(capabilities: Any, field: str) -> None:
    refused(field, lambda: ChargeRequest(token="tok", amount=AMOUNT_COP, capabilities=capabilities))


def test_network_token_capability_only_in_network_token_countries() -> None:
    usd = Amount.untaxed("10.00", currency="USD", in_amount=True)
    assert ChargeRequest(token="tok", amount=usd).amount.currency == "USD"
    refused("capabilities", lambda: ChargeRequest(token="tok", amount=usd, capabilities=("networkToken",)))


def test_charge_amount_needs_currency_and_a_positive_total() -> None:
    refused("amount.currency", lambda: ChargeRequest(token="tok", amount=Amount(subtotal_iva0=Decimal(100))))
    refused("amount", lambda: ChargeRequest(token="tok", amount=Amount(currency="COP")))
    refused("amount", lambda: ChargeRequest(token="tok", amount={"subtotalIva0": 1}))  # type: ignore[arg-type]


def test_charge_amount_fields_consistent() -> None:
    refused("amount.subtotalIva", lambda: ChargeRequest(token="tok", amount=Amount(iva=Decimal(19), currency="COP")))


def test_charge_token_required() -> None:
    refused("token", lambda: ChargeRequest(token="", amount=AMOUNT_COP))


def test_charge_extra_fields_may_not_shadow_typed_ones() -> None:
    request = ChargeRequest(token="tok", amount=AMOUNT_COP, extra={"metadata": {"order": "A-1"}, "fullResponse": "v2"})
    assert request.to_wire()["metadata"] == {"order": "A-1"}
    refused("extra.token", lambda: ChargeRequest(token="tok", amount=AMOUNT_COP, extra={"token": "other"}))
    refused("extra", lambda: ChargeRequest(token="tok", amount=AMOUNT_COP, extra={"bad": float("nan")}))
    refused("extra", lambda: ChargeRequest(token="tok", amount=AMOUNT_COP, extra={1: "x"}))


def test_tokenless_charge_applies_the_card_rules() -> None:
    nt_card = card(cryptogram=CRYPTOGRAM, cvv=None)
    request = TokenlessChargeRequest(card=nt_card, amount=AMOUNT_COP, is_network_token=True)
    assert request.is_network_token
    refused("card.cryptogram", lambda: replace(request, is_network_token=False))
    refused(
        "networkToken.mvv",
        lambda: replace(request, card=card(number=MASTERCARD), network_token=NetworkTokenData(mvv="0123456789")),
    )
    usd = Amount.untaxed("10.00", currency="USD", in_amount=True)
    refused("amount.currency", lambda: replace(request, amount=usd))
    refused("capabilities[0]", lambda: replace(request, capabilities=("bogus",)))
    refused("extra.card", lambda: replace(request, extra={"card": {}}))
    refused("card", lambda: replace(request, card={"number": VISA}))
