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

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Optional

from ..errors import ValidationError
from . import fields as check
from .amounts import Amount, payable

__all__ = ["ECUADOR_DOCUMENT_TYPES", "TRANSFER_CURRENCIES", "check_flow", "check_init_request", "check_token_request"]

TRANSFER_CURRENCIES = frozenset({"MXN", "USD", "COP"})
ECUADOR_DOCUMENT_TYPES = frozenset({"CI", "RUC", "PAS"})
_MEXICO_DOCUMENT_TYPES = frozenset({"CURP"})
_USER_TYPES = frozenset({"0", "1"})  # the service's webhook docs: 0 natural person, 1 legal person
_TRANSFER_DECIMAL_PLACES = 2  # MXN, USD and COP alike


def check_flow(processor_name: str, type: str) -> None:
    check.choice(processor_name, "flow.processorName", {"BRE-B"})
    check.choice(type, "flow.type", {"QR"})


def check_token_request(
    amount: Amount,
    currency: str,
    user_type: Optional[str],
    document_type: Optional[str],
    document_number: Optional[str],
    payment_description: Optional[str],
    email: Optional[str],
    callback_url: Optional[str],
    bank_id: Optional[str],
    has_flow: bool,
) -> None:
    """A token request's fields (the model has checked that ``flow``, when given, is a TransferFlow)."""
    currency = check.choice(currency, "currency", TRANSFER_CURRENCIES)
    amount = payable(amount)
    if amount.currency is not None and amount.currency != currency:
        raise ValidationError("amount.currency", "differs from currency (leave it out: transfers send it beside)")
    amount.check_currency(currency)
    if user_type is not None:
        check.choice(user_type, "userType", _USER_TYPES)
    for value, wire in ((payment_description, "paymentDescription"), (bank_id, "bankId")):
        check.optional_text(value, wire)
    if email is not None:
        check.email(email, "email")
    if callback_url is not None:
        check.http_url(callback_url, "callbackUrl")
    if currency != "COP" and amount.is_mirrored:
        raise ValidationError("amount.subtotalIva", "repeats subtotalIva0 with iva 0: that form is Colombia's only")
    if currency == "MXN":
        _check_outside_colombia(has_flow, document_type, document_number, _MEXICO_DOCUMENT_TYPES)
        if email is None:
            raise ValidationError("email", "is required in Mexico: the service needs it to generate the CLABE")
    elif currency == "USD":
        _check_outside_colombia(has_flow, document_type, document_number, ECUADOR_DOCUMENT_TYPES)
        if callback_url is None:
            raise ValidationError("callbackUrl", "is required in Ecuador: the bank returns the payer there")
    elif has_flow:
        _check_colombia_qr(document_type, document_number)
    else:
        _check_colombia_ach(bank_id, document_type, document_number, callback_url)


def _check_outside_colombia(has_flow: bool, document_type: Optional[str], document_number: Optional[str],
                            allowed: frozenset[str]) -> None:
    """Mexico and Ecuador: no QR flow (Colombia's only), and a document of one of the country's types."""
    if has_flow:
        raise ValidationError("currency", "the QR flow (flow BRE-B/QR) takes COP only")
    check.choice(document_type, "documentType", allowed)
    check.text(document_number, "documentNumber")


def _check_colombia_qr(document_type: Optional[str], document_number: Optional[str]) -> None:
    check.optional_text(document_type, "documentType")
    check.optional_text(document_number, "documentNumber")


def _check_colombia_ach(bank_id: Optional[str], document_type: Optional[str], document_number: Optional[str],
                        callback_url: Optional[str]) -> None:
    if bank_id is None:
        raise ValidationError("bankId", "is required in COP without flow (PSE: a code of the bank list); "
                                        "for the QR flow send flow BRE-B/QR")
    check.text(document_type, "documentType")
    check.text(document_number, "documentNumber")
    if callback_url is None:
        raise ValidationError("callbackUrl", "is required for PSE: the bank returns the payer there")


def check_init_request(token: str, amount: Amount, metadata: Optional[Mapping[str, Any]], full_response: bool) -> None:
    check.text(token, "token")
    amount = payable(amount)
    if amount.currency is not None:
        check.choice(amount.currency, "amount.currency", TRANSFER_CURRENCIES)
    for path, value in amount.figures().items():
        if value.scaleb(_TRANSFER_DECIMAL_PLACES) % 1 != Decimal(0):
            raise ValidationError(path, f"has more than {_TRANSFER_DECIMAL_PLACES} decimal places")
    if metadata is not None:
        check.json_object(metadata, "metadata")
    if not isinstance(full_response, bool):
        raise ValidationError("fullResponse", "full_response must be a bool (True sends v2)")
