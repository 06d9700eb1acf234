"""Transfer responses: every init variant, QR details, status records, and wrong shapes."""

# ruff: noqa: S105 (test tokens, keys and secrets are fixtures)

from __future__ import annotations

import base64
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest

from pasarela.errors import ResponseShapeError
from pasarela.transfers import (
    Bank,
    ColombiaPse,
    ColombiaQr,
    EcuadorRedirect,
    EcuadorWallet,
    MexicoClabe,
    TransferState,
    TransferStatus,
    TransferToken,
    parse_transfer_init,
)
from pasarela.transfers.responses import parse_bank_list

QR = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n fake image").decode()
REFERENCE = "1f0c6a1e-3b1a-4c55-8a22-2f4e0f6d9b10"
MEXICO = {
    "bank": "STP",
    "referenceNumber": "1234567",
    "referenceProcessor": "646180157000000004",
    "ticketNumber": "987654321",
    "transactionReference": REFERENCE,
}
WALLET = {"qr": QR, "redirectUrl": "deuna://pay?ref=123", "referenceCode": "482913"}
DETAILS = {
    "status": "initializedTransaction",
    "amount": {"currency": "COP", "iva": 0, "subtotalIva": 0, "subtotalIva0": 10000.5},
    "created": 1767225600000,
    "merchantId": "1000000001",
    "merchantName": "Tienda",
}


def test_mexico_clabe() -> None:
    result = parse_transfer_init(MEXICO)
    assert isinstance(result, MexicoClabe)
    assert result.clabe == "646180157000000004"
    assert (result.bank, result.reference_number, result.ticket_number) == ("STP", "1234567", "987654321")
    assert result.transaction_reference == REFERENCE


def test_ecuador_redirect() -> None:
    result = parse_transfer_init({"redirectUrl": "https://bank.example/portal?t=1"})
    assert result == EcuadorRedirect(
        "https://bank.example/portal?t=1", {"redirectUrl": "https://bank.example/portal?t=1"}
    )


def test_ecuador_wallet_has_all_three_ways_to_pay() -> None:
    result = parse_transfer_init(WALLET)
    assert isinstance(result, EcuadorWallet)
    assert result.qr == QR
    assert result.deep_link == "deuna://pay?ref=123"
    assert result.reference_code == "482913"
    assert QR not in repr(result)  # a data URI does not belong in logs


def test_colombia_qr_without_details() -> None:
    result = parse_transfer_init({"qr": QR, "transactionReference": REFERENCE})
    assert isinstance(result, ColombiaQr)
    assert result.qr == QR and result.transaction_reference == REFERENCE and result.details is None


def test_colombia_qr_with_full_response_v2_details() -> None:
    result = parse_transfer_init({"qr": QR, "transactionReference": REFERENCE, "details": DETAILS})
    assert isinstance(result, ColombiaQr) and result.details is not None
    details = result.details
    assert details.status == "initializedTransaction" and details.state is TransferState.INITIALIZED
    assert details.amount.currency == "COP"
    assert details.amount.subtotal_iva0 == Decimal("10000.5")
    assert details.created_at == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert (details.merchant_id, details.merchant_name) == ("1000000001", "Tienda")


def test_raw_keeps_unknown_members() -> None:
    result = parse_transfer_init({**MEXICO, "newField": {"x": 1}})
    assert result.raw["newField"] == {"x": 1}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "$"),
        ({"status": "ok"}, "$"),
        ([], "$"),
        ({**MEXICO, "bank": None}, "$.bank"),
        ({**MEXICO, "transactionReference": "123"}, "$.transactionReference"),
        ({**MEXICO, "ticketNumber": 987654321}, "$.ticketNumber"),
        ({"redirectUrl": "bank.example/portal"}, "$.redirectUrl"),
        ({**WALLET, "referenceCode": "48291"}, "$.referenceCode"),
        ({**WALLET, "referenceCode": 482913}, "$.referenceCode"),
        ({**WALLET, "qr": "iVBORw0KGgo="}, "$.qr"),
        ({**WALLET, "qr": "data:image/png;base64,not base64!"}, "$.qr"),
        ({"qr": QR, "redirectUrl": "deuna://x"}, "$.referenceCode"),
        ({"qr": QR}, "$.transactionReference"),
        ({"qr": QR, "transactionReference": REFERENCE, "details": []}, "$.details"),
        (
            {"qr": QR, "transactionReference": REFERENCE, "details": {**DETAILS, "created": "1767225600000"}},
            "$.details.created",
        ),
        ({"qr": QR, "transactionReference": REFERENCE, "details": {**DETAILS, "created": True}}, "$.details.created"),
        (
            {"qr": QR, "transactionReference": REFERENCE, "details": {**DETAILS, "amount": {"currency": "COP"}}},
            "$.details.amount.iva",
        ),
        (
            {
                "qr": QR,
                "transactionReference": REFERENCE,
                "details": {k: v for k, v in DETAILS.items() if k != "merchantName"},
            },
            "$.details.merchantName",
        ),
    ],
)
def test_wrong_shapes_raise_a_clear_error(body: Any, path: str) -> None:
    with pytest.raises(ResponseShapeError) as caught:
        parse_transfer_init(body)
    assert caught.value.field == path


def test_unknown_variant_names_the_members_seen() -> None:
    with pytest.raises(ResponseShapeError, match="members: foo, status"):
        parse_transfer_init({"status": "x", "foo": 1})


def test_transfer_token() -> None:
    assert TransferToken.from_json({"token": "t1"}).token == "t1"
    with pytest.raises(ResponseShapeError):
        TransferToken.from_json({"code": "E1"})


@pytest.mark.parametrize(
    ("body", "state"),
    [
        ({"status": "PAID"}, TransferState.APPROVED),
        ({"status": "approvedTransaction"}, TransferState.APPROVED),
        ({"transactionStatus": "rejected"}, TransferState.REJECTED),
        ({"status": "declinedTransaction"}, TransferState.REJECTED),
        ({"details": {"status": "initializedTransaction"}}, TransferState.INITIALIZED),
        ({"status": "Initialized"}, TransferState.INITIALIZED),
        ({"status": "somethingNew"}, TransferState.UNKNOWN),
        ({}, TransferState.UNKNOWN),
        # The service's public webhook vocabulary, and processorState, which some clients read first.
        ({"status": "expiredTransaction"}, TransferState.REJECTED),
        ({"processorState": "OK"}, TransferState.APPROVED),
        ({"processorState": "NOT_AUTHORIZED"}, TransferState.REJECTED),
        ({"processorState": "FAILED"}, TransferState.REJECTED),
        ({"status": "approvedTransaction", "processorState": "OK", "transactionStatus": "PAID"},
         TransferState.APPROVED),
        # An unrecognized word in one place does not hide a known one in another.
        ({"status": "somethingNew", "processorState": "OK"}, TransferState.APPROVED),
        ({"status": "somethingNew", "details": {"status": "declinedTransaction"}}, TransferState.REJECTED),
    ],
)
def test_status_record_states(body: dict[str, Any], state: TransferState) -> None:
    status = TransferStatus.from_json(body)
    assert status.state is state
    assert status.state.is_final is (state in (TransferState.APPROVED, TransferState.REJECTED))
    assert status.raw == body


@pytest.mark.parametrize(("body", "queried", "token", "reference"), [
    ({"status": "PAID", "token": "tok-1", "transactionReference": "ref-1"}, None, "tok-1", "ref-1"),
    ({"status": "PAID"}, "tok-2", "tok-2", None),  # a record that names no token still has the one asked for
    ({"status": "PAID", "token": "tok-3"}, "tok-3", "tok-3", None),
    ({"status": "PAID", "token": 5, "transactionReference": ["x"]}, None, None, None),  # fields not shown: lenient
    ({"status": "PAID", "token": "", "transactionReference": ""}, None, None, None),
])
def test_status_record_has_its_token_and_transaction_reference(body: dict[str, Any], queried: Any, token: Any,
                                                                reference: Any) -> None:
    status = TransferStatus.from_json(body, queried)
    assert (status.token, status.transaction_reference) == (token, reference)


def test_status_record_must_be_an_object() -> None:
    with pytest.raises(ResponseShapeError):
        TransferStatus.from_json(["PAID"])


def test_colombia_pse_is_the_bank_redirect_with_a_trazability_code() -> None:
    answer = parse_transfer_init({"redirectUrl": "https://bank.example/pse?x=1", "trazabilityCode": "4561237"})
    assert isinstance(answer, ColombiaPse)
    assert (answer.redirect_url, answer.trazability_code) == ("https://bank.example/pse?x=1", "4561237")
    assert isinstance(parse_transfer_init({"redirectUrl": "https://bank.example/portal"}), EcuadorRedirect)


def test_bank_list() -> None:
    assert parse_bank_list([{"code": "1022", "name": "Banco Uno"}]) == [Bank("1022", "Banco Uno")]
    with pytest.raises(ResponseShapeError) as caught:
        parse_bank_list([{"code": "1022"}])
    assert caught.value.field == "$[0].name"
    with pytest.raises(ResponseShapeError):
        parse_bank_list({"banks": []})


@pytest.mark.parametrize("answer", [
    {"redirectUrl": "https://bank.example/portal"},
    {"redirectUrl": "https://bank.example/pse", "trazabilityCode": "4561237"},
    {"qr": QR, "redirectUrl": "deuna://pay?ref=1", "referenceCode": "482913"},
], ids=["ecuador_bank", "colombia_pse", "ecuador_wallet"])
def test_ecuador_and_pse_answers_keep_their_transaction_reference(answer: dict[str, object]) -> None:
    assert parse_transfer_init(answer).transaction_reference is None  # type: ignore[union-attr]
    named = parse_transfer_init({**answer, "transactionReference": REFERENCE})
    assert named.transaction_reference == REFERENCE  # type: ignore[union-attr]
    with pytest.raises(ResponseShapeError, match=r"\$\.transactionReference"):
        parse_transfer_init({**answer, "transactionReference": "not-a-uuid"})
