"""Response models of the bank transfer API (spec 2.7, 2.8); each keeps the raw JSON in ``raw``.

:func:`parse_transfer_init` reads an init answer as one of five variants, told apart by their
members: ``referenceProcessor`` is Mexico's CLABE; ``qr`` with ``referenceCode`` or
``redirectUrl`` is the Ecuador wallet processor; ``qr`` alone (with ``transactionReference``) is
Colombia QR; ``redirectUrl`` with ``trazabilityCode`` is Colombia PSE (the bank's URL and the
trazability code, as the service's transfer guide describes its answer); ``redirectUrl`` alone is
the Ecuador bank redirect. Each variant then checks the
members it must have, so a wrong shape fails at parse time with the path of the bad member.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Optional, Union

from ..errors import ResponseShapeError
from ..http.response_reader import ResponseReader, TokenReply
from .status import TransferState, find_status

__all__ = [
    "Bank",
    "ColombiaPse",
    "ColombiaQr",
    "EcuadorRedirect",
    "EcuadorWallet",
    "MexicoClabe",
    "QrDetails",
    "QrDetailsAmount",
    "TransferInit",
    "TransferStatus",
    "TransferToken",
    "parse_bank_list",
    "parse_transfer_init",
]

PNG_DATA_URI_PREFIX = "data:image/png;base64,"


def _png_data_uri(reader: ResponseReader, key: str) -> str:
    value = reader.text(key)
    if not value.startswith(PNG_DATA_URI_PREFIX):
        raise ResponseShapeError(reader.where(key), f"expected a data URI starting with {PNG_DATA_URI_PREFIX}")
    try:
        base64.b64decode(value[len(PNG_DATA_URI_PREFIX) :], validate=True)
    except binascii.Error:
        raise ResponseShapeError(reader.where(key), "the data URI does not hold valid Base64") from None
    return value


class TransferToken(TokenReply):
    """The transfer token (``POST /transfer/v1/tokens``), for init, status and cancel."""


@dataclass(frozen=True)
class MexicoClabe:
    """Mexico: show :attr:`clabe` (``referenceProcessor``) to the payer, who pays it from their bank portal."""

    bank: str
    reference_number: str
    reference_processor: str
    ticket_number: str
    transaction_reference: str
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def clabe(self) -> str:
        return self.reference_processor

    @classmethod
    def read(cls, reader: ResponseReader) -> MexicoClabe:
        return cls(
            bank=reader.text("bank"),
            reference_number=reader.text("referenceNumber"),
            reference_processor=reader.text("referenceProcessor"),
            ticket_number=reader.text("ticketNumber"),
            transaction_reference=reader.uuid("transactionReference"),
            raw=reader.raw,
        )


@dataclass(frozen=True)
class EcuadorRedirect:
    """Ecuador, traditional bank transfer: send the payer to :attr:`redirect_url`, the bank's portal."""

    redirect_url: str
    raw: Mapping[str, Any] = field(repr=False)
    transaction_reference: Optional[str] = None
    """The transaction's UUID when the answer carries it (the spec names only ``redirectUrl``)."""

    @classmethod
    def read(cls, reader: ResponseReader) -> EcuadorRedirect:
        url = reader.text("redirectUrl")
        if not url.startswith(("https://", "http://")):
            raise ResponseShapeError(reader.where("redirectUrl"), "expected an http(s) URL")
        return cls(url, reader.raw, reader.optional_uuid("transactionReference"))


@dataclass(frozen=True)
class EcuadorWallet:
    """Ecuador, wallet processor: offer all three ways to pay, the QR image, the deep link, the code.

    ``qr`` is a complete ``data:image/png;base64,`` URI (the service hosts no image): use it as an
    ``<img src>`` as is.
    """

    qr: str = field(repr=False)
    redirect_url: str
    reference_code: str
    raw: Mapping[str, Any] = field(repr=False)
    transaction_reference: Optional[str] = None
    """The transaction's UUID when the answer carries it (the spec names only ``qr``, ``redirectUrl``,
    ``referenceCode``)."""

    @property
    def deep_link(self) -> str:
        return self.redirect_url

    @classmethod
    def read(cls, reader: ResponseReader) -> EcuadorWallet:
        return cls(
            qr=_png_data_uri(reader, "qr"),
            redirect_url=reader.text("redirectUrl"),
            reference_code=reader.digits("referenceCode", 6),
            raw=reader.raw,
            transaction_reference=reader.optional_uuid("transactionReference"),
        )


@dataclass(frozen=True)
class QrDetailsAmount:
    currency: str
    iva: Decimal
    subtotal_iva: Decimal
    subtotal_iva0: Decimal


@dataclass(frozen=True)
class QrDetails:
    """``details`` of a Colombia QR answer to ``fullResponse: "v2"``; ``created`` is epoch milliseconds."""

    status: str
    amount: QrDetailsAmount
    created: int
    merchant_id: str
    merchant_name: str
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def created_at(self) -> datetime:
        return datetime.fromtimestamp(self.created / 1000, tz=timezone.utc)

    @property
    def state(self) -> TransferState:
        return TransferState.of(self.status)

    @classmethod
    def read(cls, reader: ResponseReader) -> QrDetails:
        amount = reader.child("amount")
        return cls(
            status=reader.text("status"),
            amount=QrDetailsAmount(
                currency=amount.text("currency"),
                iva=amount.decimal("iva"),
                subtotal_iva=amount.decimal("subtotalIva"),
                subtotal_iva0=amount.decimal("subtotalIva0"),
            ),
            created=reader.integer("created"),
            merchant_id=reader.text("merchantId"),
            merchant_name=reader.text("merchantName"),
            raw=reader.raw,
        )


@dataclass(frozen=True)
class ColombiaQr:
    """Colombia instant QR: show ``qr`` (a complete data URI); it is valid for 10 minutes."""

    qr: str = field(repr=False)
    transaction_reference: str
    details: Optional[QrDetails]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def read(cls, reader: ResponseReader) -> ColombiaQr:
        details = reader.optional_child("details")
        return cls(
            qr=_png_data_uri(reader, "qr"),
            transaction_reference=reader.uuid("transactionReference"),
            details=QrDetails.read(details) if details is not None else None,
            raw=reader.raw,
        )


@dataclass(frozen=True)
class ColombiaPse:
    """Colombia ACH (PSE): send the payer to :attr:`redirect_url`, their bank; keep :attr:`trazability_code`
    (the reference PSE gives the payment)."""

    redirect_url: str
    trazability_code: str
    raw: Mapping[str, Any] = field(repr=False)
    transaction_reference: Optional[str] = None
    """The transaction's UUID when the answer carries it."""

    @classmethod
    def read(cls, reader: ResponseReader) -> ColombiaPse:
        redirect = EcuadorRedirect.read(reader)
        return cls(redirect.redirect_url, reader.text("trazabilityCode"), reader.raw, redirect.transaction_reference)


@dataclass(frozen=True)
class Bank:
    """One entry of ``GET /transfer/v1/bankList``: the ``code`` to send as ``bankId``, and the name to show."""

    code: str
    name: str


def parse_bank_list(value: object) -> list[Bank]:
    if not isinstance(value, list):
        raise ResponseShapeError("$", f"expected an array of banks, got {type(value).__name__}")
    banks = []
    for index, item in enumerate(value):
        reader = ResponseReader.of(item, f"$[{index}]")
        banks.append(Bank(reader.text("code"), reader.text("name")))
    return banks


TransferInit = Union[MexicoClabe, EcuadorRedirect, EcuadorWallet, ColombiaQr, ColombiaPse]
"""What ``POST /transfer/v1/init`` returns; the merchant's enabled processor decides the Ecuador variant."""


def parse_transfer_init(value: object) -> TransferInit:
    """The variant of an init answer (see the module docstring for how they are told apart)."""
    reader = ResponseReader.of(value)
    if reader.has("referenceProcessor"):
        return MexicoClabe.read(reader)
    if reader.has("qr"):
        if reader.has("referenceCode") or reader.has("redirectUrl"):
            return EcuadorWallet.read(reader)
        return ColombiaQr.read(reader)
    if reader.has("redirectUrl"):
        return ColombiaPse.read(reader) if reader.has("trazabilityCode") else EcuadorRedirect.read(reader)
    members = ", ".join(sorted(reader.raw)) or "none"
    variants = "Mexico, Ecuador redirect, Ecuador wallet, Colombia QR, Colombia PSE"
    raise ResponseShapeError("$", f"matches no transfer init variant ({variants}); members: {members}")


@dataclass(frozen=True)
class TransferStatus:
    """A status record (``GET /transfer/v1/status/{token}``); its fields are "not shown" in the spec,
    so only the status is typed (see :mod:`.status` for where it is looked up), with the transfer's ``token`` and
    ``transaction_reference``, and ``raw`` has the rest."""

    status: Optional[str]
    state: TransferState
    raw: Mapping[str, Any] = field(repr=False)
    token: Optional[str] = None
    """The transfer's token: the one queried (the clients' ``status``), else the record's ``token``."""
    transaction_reference: Optional[str] = None
    """The record's ``transactionReference``, when it has one."""

    @classmethod
    def from_json(cls, value: object, token: Optional[str] = None) -> TransferStatus:
        """``token``: the token the record was asked for (a record that names none still has it)."""
        reader = ResponseReader.of(value)
        status = find_status(reader.raw)
        return cls(status, TransferState.of(status), reader.raw, token or _text(reader.raw, "token"),
                   _text(reader.raw, "transactionReference"))


def _text(record: Mapping[str, Any], key: str) -> Optional[str]:
    """A member of a record whose fields are not shown: a non-empty string, else nothing (never an error)."""
    value = record.get(key)
    return value if isinstance(value, str) and value else None
