"""The rules a transfer request must meet before it is sent (spec 2.4, 2.5, 2.6, 8, rule 9).

Per country, read from the currency:

- Mexico (MXN): ``documentType`` CURP, ``documentNumber`` and ``email`` (needed for the CLABE).
- Ecuador (USD): ``documentType`` CI, RUC or PAS, ``documentNumber``, ``callbackUrl``.
- Colombia QR (COP with ``flow``): ``processorName`` BRE-B and ``type`` QR; the rest optional.
- Colombia ACH, PSE (COP without ``flow``): ``bankId`` (a code of the bank list), ``documentType``,
  ``documentNumber`` and ``callbackUrl`` (the bank returns the payer there).

Everywhere: ``userType`` is "0" (natural person) or "1" (legal person) when sent, the amount adds up to
more than zero with the currency's decimals, ICE only in Ecuador, extra taxes in Ecuador and Colombia,
the mirrored amount form of 2.4 only in Colombia. Document numbers are not checked against the
CURP/CI/RUC formats: the test environment decides outcomes by numbers such as 123456789 and
999999990, which are neither.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from ..errors import ValidationError
from . import fields as check
from .amounts import payable

if TYPE_CHECKING:
    from .models import TransferFlow, TransferInitRequest, TransferTokenRequest

__all__ = ["ECUADOR_DOCUMENT_TYPES", "TRANSFER_CURRENCIES", "check_flow", "check_init_request", "check_token_request"]

TRANSFER_CURRENCIES = frozenset({"MXN", "USD", "COP"})
ECUADOR_DOCUMENT_TYPES = frozenset({"CI", "RUC", "PAS"})
_MEXICO_DOCUMENT_TYPES = frozenset({"CURP"})
_USER_TYPES = frozenset({"0", "1"})  # the service's webhook docs: 0 natural person, 1 legal person
_TRANSFER_DECIMAL_PLACES = 2  # MXN, USD and COP alike


def check_flow(flow: TransferFlow) -> None:
    check.choice(flow.processor_name, "flow.processorName", {"BRE-B"})
    check.choice(flow.type, "flow.type", {"QR"})


def check_token_request(request: TransferTokenRequest) -> None:
    from .models import TransferFlow

    currency = check.choice(request.currency, "currency", TRANSFER_CURRENCIES)
    amount = payable(request.amount)
    if amount.currency is not None and amount.currency != currency:
        raise ValidationError("amount.currency", "differs from currency (leave it out: transfers send it beside)")
    amount.check_currency(currency)
    if request.user_type is not None:
        check.choice(request.user_type, "userType", _USER_TYPES)
    for name, wire in (("payment_description", "paymentDescription"), ("bank_id", "bankId")):
        check.optional_text(getattr(request, name), wire)
    if request.email is not None:
        check.email(request.email, "email")
    if request.callback_url is not None:
        check.http_url(request.callback_url, "callbackUrl")
    if request.flow is not None and not isinstance(request.flow, TransferFlow):
        raise ValidationError("flow", "must be a TransferFlow")
    if currency != "COP" and amount.is_mirrored:
        raise ValidationError("amount.subtotalIva", "repeats subtotalIva0 with iva 0: that form is Colombia's only")
    if currency == "MXN":
        _check_mexico(request)
    elif currency == "USD":
        _check_ecuador(request)
    elif request.flow is not None:
        _check_colombia_qr(request)
    else:
        _check_colombia_ach(request)


def _check_document(request: TransferTokenRequest, allowed: frozenset[str]) -> None:
    check.choice(request.document_type, "documentType", allowed)
    check.text(request.document_number, "documentNumber")


def _check_mexico(request: TransferTokenRequest) -> None:
    _refuse_flow(request)
    _check_document(request, _MEXICO_DOCUMENT_TYPES)
    if request.email is None:
        raise ValidationError("email", "is required in Mexico: the service needs it to generate the CLABE")


def _check_ecuador(request: TransferTokenRequest) -> None:
    _refuse_flow(request)
    _check_document(request, ECUADOR_DOCUMENT_TYPES)
    if request.callback_url is None:
        raise ValidationError("callbackUrl", "is required in Ecuador: the bank returns the payer there")


def _check_colombia_qr(request: TransferTokenRequest) -> None:
    check.optional_text(request.document_type, "documentType")
    check.optional_text(request.document_number, "documentNumber")


def _check_colombia_ach(request: TransferTokenRequest) -> None:
    if request.bank_id is None:
        raise ValidationError("bankId", "is required in COP without flow (PSE: a code of the bank list); "
                                        "for the QR flow send flow BRE-B/QR")
    check.text(request.document_type, "documentType")
    check.text(request.document_number, "documentNumber")
    if request.callback_url is None:
        raise ValidationError("callbackUrl", "is required for PSE: the bank returns the payer there")


def _refuse_flow(request: TransferTokenRequest) -> None:
    if request.flow is not None:
        raise ValidationError("currency", "the QR flow (flow BRE-B/QR) takes COP only")


def check_init_request(request: TransferInitRequest) -> None:
    check.text(request.token, "token")
    amount = payable(request.amount)
    if amount.currency is not None:
        check.choice(amount.currency, "amount.currency", TRANSFER_CURRENCIES)
    for path, value in amount.figures().items():
        if value.scaleb(_TRANSFER_DECIMAL_PLACES) % 1 != Decimal(0):
            raise ValidationError(path, f"has more than {_TRANSFER_DECIMAL_PLACES} decimal places")
    if request.metadata is not None:
        check.json_object(request.metadata, "metadata")
    if not isinstance(request.full_response, bool):
        raise ValidationError("fullResponse", "full_response must be a bool (True sends v2)")
