"""Every validation rule of the transfer requests (spec 2.4-2.6, rule 9), accepted and refused."""

# ruff: noqa: S106 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from pasarela.errors import ValidationError
from pasarela.transfers import (
    Amount,
    ExtraTaxes,
    TransferCountry,
    TransferFlow,
    TransferInitRequest,
    TransferTokenRequest,
)

MXN = Amount.from_total("116.00", currency="MXN", iva_rate="0.16")
USD = Amount.from_total("115.00", currency="USD", iva_rate="0.15")
COP = Amount.untaxed(10000, currency="COP")


def mexico(**changes: Any) -> TransferTokenRequest:
    return replace(
        TransferTokenRequest.mexico(amount=MXN, document_number="123456789", email="ana@example.com"), **changes
    )


def ecuador(**changes: Any) -> TransferTokenRequest:
    request = TransferTokenRequest.ecuador(
        amount=USD, document_type="CI", document_number="123456789", callback_url="https://shop.example/return"
    )
    return replace(request, **changes)


def colombia(**changes: Any) -> TransferTokenRequest:
    return replace(TransferTokenRequest.colombia_qr(amount=COP), **changes)


def refused(field: str, build: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        build()
    assert caught.value.field == field, caught.value
    return caught.value


# --- Mexico -------------------------------------------------------------------------------------


def test_mexico_accepted() -> None:
    request = mexico()
    assert request.country is TransferCountry.MEXICO
    assert request.to_wire() == {
        "amount": {"subtotalIva": 100, "subtotalIva0": 0, "iva": 16},
        "currency": "MXN",
        "userType": "1",
        "documentType": "CURP",
        "documentNumber": "123456789",
        "email": "ana@example.com",
    }


def test_mexico_needs_email_for_the_clabe() -> None:
    error = refused("email", lambda: mexico(email=None))
    assert "CLABE" in error.reason


@pytest.mark.parametrize("email", ["ana", "ana@example", "ana @example.com", "@example.com"])
def test_email_format_refused(email: str) -> None:
    refused("email", lambda: mexico(email=email))


@pytest.mark.parametrize("document_type", ["CI", "RFC", None, "curp"])
def test_mexico_document_type_is_curp(document_type: Any) -> None:
    refused("documentType", lambda: mexico(document_type=document_type))


def test_mexico_document_number_required() -> None:
    refused("documentNumber", lambda: mexico(document_number=None))
    refused("documentNumber", lambda: mexico(document_number=" "))


# --- Ecuador ------------------------------------------------------------------------------------


@pytest.mark.parametrize("document_type", ["CI", "RUC", "PAS"])
def test_ecuador_document_types_accepted(document_type: str) -> None:
    request = ecuador(document_type=document_type)
    assert request.country is TransferCountry.ECUADOR
    assert request.to_wire()["documentType"] == document_type


@pytest.mark.parametrize("document_type", ["CURP", "ci", "DNI", None])
def test_ecuador_document_types_refused(document_type: Any) -> None:
    refused("documentType", lambda: ecuador(document_type=document_type))


def test_ecuador_needs_callback_url() -> None:
    refused("callbackUrl", lambda: ecuador(callback_url=None))


@pytest.mark.parametrize("url", ["shop.example/return", "ftp://shop.example/r", "https://", "https://shop.example/a b"])
def test_callback_url_must_be_absolute_http(url: str) -> None:
    refused("callbackUrl", lambda: ecuador(callback_url=url))


def test_ecuador_ice_and_extra_taxes_accepted() -> None:
    amount = Amount.from_total(
        "120.00", currency="USD", iva_rate="0.15", ice="3.00", extra_taxes=ExtraTaxes(propina=Decimal(2))
    )
    wire = ecuador(amount=amount).to_wire()["amount"]
    assert wire["ice"] == 3 and wire["extraTaxes"] == {"propina": 2}


def test_ice_refused_outside_ecuador() -> None:
    amount = Amount(subtotal_iva0=Decimal(100), ice=Decimal(5))
    refused("amount.ice", lambda: mexico(amount=amount))


# --- Colombia QR --------------------------------------------------------------------------------


def test_colombia_qr_accepted_with_only_the_required_fields() -> None:
    request = colombia(user_type=None)
    assert request.country is TransferCountry.COLOMBIA_QR
    assert request.to_wire() == {
        "amount": {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0},
        "currency": "COP",
        "flow": {"processorName": "BRE-B", "type": "QR"},
    }


def test_colombia_qr_accepts_the_mirrored_amount_form() -> None:
    request = colombia(amount=Amount.untaxed(10000, mirrored=True))
    assert request.to_wire()["amount"] == {"subtotalIva": 10000, "subtotalIva0": 10000, "iva": 0}
    assert request.amount.total == 10000


def test_mirrored_amount_form_refused_outside_colombia() -> None:
    refused("amount.subtotalIva", lambda: mexico(amount=Amount.untaxed(100, mirrored=True)))


def test_colombia_qr_accepts_the_optional_fields() -> None:
    request = TransferTokenRequest.colombia_qr(
        amount=Amount.from_total(119000, currency="COP", iva_rate="0.19"),
        document_type="CC",
        document_number="1234567890",
        email="ana@example.com",
        payment_description="Pedido 42",
        callback_url="https://shop.example/return",
        bank_id="1022",
    )
    wire = request.to_wire()
    assert wire["bankId"] == "1022" and wire["paymentDescription"] == "Pedido 42"
    assert wire["amount"] == {"subtotalIva": 100000, "subtotalIva0": 0, "iva": 19000}


def test_cop_without_flow_is_pse_and_needs_a_bank() -> None:
    error = refused("bankId", lambda: colombia(flow=None))
    assert "BRE-B" in error.reason and "bank list" in error.reason


def test_colombia_pse_builder_and_its_rules() -> None:
    amount = Amount.untaxed(50000, currency="COP")
    request = TransferTokenRequest.colombia_pse(amount=amount, bank_id="1022", document_type="CC",
                                                document_number="123456789", callback_url="https://shop.example/r")
    wire = request.to_wire()
    assert "flow" not in wire and (wire["bankId"], wire["userType"], wire["currency"]) == ("1022", "0", "COP")
    refused("callbackUrl", lambda: replace(request, callback_url=None))
    refused("documentNumber", lambda: replace(request, document_number=None))


@pytest.mark.parametrize(
    ("changes", "field"), [({"processor_name": "ACH"}, "flow.processorName"), ({"type": "qr"}, "flow.type")]
)
def test_flow_values_refused(changes: dict[str, str], field: str) -> None:
    refused(field, lambda: TransferFlow(**changes))


def test_flow_must_be_the_model() -> None:
    refused("flow", lambda: colombia(flow={"processorName": "BRE-B", "type": "QR"}))


@pytest.mark.parametrize("build", [mexico, ecuador])
def test_flow_is_cop_only(build: Any) -> None:
    error = refused("currency", lambda: build(flow=TransferFlow()))
    assert "COP" in error.reason


def test_colombia_amount_has_two_decimals_at_most() -> None:
    refused("amount.subtotalIva0", lambda: colombia(amount=Amount(subtotal_iva0=Decimal("1.001"))))


# --- shared fields ------------------------------------------------------------------------------


@pytest.mark.parametrize("currency", ["EUR", "PEN", "cop", ""])
def test_transfer_currency_refused(currency: str) -> None:
    refused("currency", lambda: mexico(currency=currency))


@pytest.mark.parametrize("user_type", ["2", 1, ""])
def test_user_type_is_0_or_1(user_type: Any) -> None:
    refused("userType", lambda: mexico(user_type=user_type))


@pytest.mark.parametrize("user_type", ["0", "1"])
def test_user_type_natural_and_legal_person_accepted(user_type: str) -> None:
    assert mexico(user_type=user_type).to_wire()["userType"] == user_type


def test_amount_must_be_positive_and_a_model() -> None:
    refused("amount", lambda: mexico(amount=Amount()))
    refused("amount", lambda: mexico(amount={"subtotalIva0": 100}))


def test_amount_currency_must_agree() -> None:
    refused("amount.currency", lambda: mexico(amount=Amount(subtotal_iva0=Decimal(100), currency="USD")))
    assert "currency" not in mexico(amount=Amount(subtotal_iva0=Decimal(100), currency="MXN")).to_wire()["amount"]


def test_optional_texts_refuse_blanks() -> None:
    refused("paymentDescription", lambda: mexico(payment_description=""))
    refused("bankId", lambda: colombia(bank_id=" "))


# --- init ---------------------------------------------------------------------------------------


def test_init_wire() -> None:
    request = TransferInitRequest(token="tok_1", amount=COP, metadata={"orderId": "A-1"}, full_response=True)
    assert request.to_wire() == {
        "token": "tok_1",
        "amount": {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0},
        "metadata": {"orderId": "A-1"},
        "fullResponse": "v2",
    }
    assert TransferInitRequest(token="tok_1", amount=COP).to_wire() == {"token": "tok_1", "amount": COP.to_wire()}


def test_init_refusals() -> None:
    refused("token", lambda: TransferInitRequest(token="", amount=COP))
    refused("amount", lambda: TransferInitRequest(token="t", amount=Amount()))
    refused(
        "amount.iva",
        lambda: TransferInitRequest(token="t", amount=Amount(subtotal_iva=Decimal(1), iva=Decimal("0.001"))),
    )
    refused(
        "amount.currency",
        lambda: TransferInitRequest(token="t", amount=Amount(subtotal_iva0=Decimal(1), currency="CLP")),
    )
    refused("metadata", lambda: TransferInitRequest(token="t", amount=COP, metadata={"when": object()}))
    refused("metadata", lambda: TransferInitRequest(token="t", amount=COP, metadata=["x"]))  # type: ignore[arg-type]
    refused("fullResponse", lambda: TransferInitRequest(token="t", amount=COP, full_response="v2"))  # type: ignore[arg-type]


def test_http_url_refuses_malformed_ipv6_host() -> None:
    from pasarela.errors import ValidationError
    from pasarela.transfers.fields import http_url

    with pytest.raises(ValidationError) as info:
        http_url("https://]", "callbackUrl")
    assert info.value.field == "callbackUrl"
