"""Request models of the bank transfer API (spec 2.5, 2.6).

The country is read from the currency: MXN is Mexico (CLABE), USD Ecuador (bank redirect or
wallet processor), COP Colombia: the QR flow with the ``flow`` object, the ACH flow (PSE, a bank
chosen from the bank list, then a redirect to it) without. The builders
:meth:`TransferTokenRequest.mexico`, :meth:`~TransferTokenRequest.ecuador`,
:meth:`~TransferTokenRequest.colombia_qr` and :meth:`~TransferTokenRequest.colombia_pse` ask for
exactly what each requires. Models check themselves when built (:mod:`.validation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional

from ..errors import ValidationError
from . import validation
from .amounts import Amount

__all__ = ["BRE_B", "QR", "TransferCountry", "TransferFlow", "TransferInitRequest", "TransferTokenRequest"]

BRE_B = "BRE-B"
QR = "QR"
FULL_RESPONSE_V2 = "v2"


class TransferCountry(Enum):
    MEXICO = "MXN"
    ECUADOR = "USD"
    COLOMBIA_QR = "COP"


def _present(members: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in members.items() if value is not None}


@dataclass(frozen=True)
class TransferFlow:
    """``flow``: activates the Colombia QR flow (certification rule 9: BRE-B and QR are sent)."""

    processor_name: str = BRE_B
    type: str = QR

    def __post_init__(self) -> None:
        validation.check_flow(self.processor_name, self.type)

    def to_wire(self) -> dict[str, Any]:
        return {"processorName": self.processor_name, "type": self.type}


@dataclass(frozen=True)
class TransferTokenRequest:
    """``POST /transfer/v1/tokens`` (also what the browser's requestTransferToken sends).

    ``amount`` has no currency of its own here: ``currency`` travels beside it. ``user_type`` is
    ``"1"`` (legal person, the value the spec uses) or ``"0"`` (natural person, in the service's docs).
    """

    amount: Amount
    currency: str
    user_type: Optional[str] = "1"
    document_type: Optional[str] = None
    document_number: Optional[str] = None
    payment_description: Optional[str] = None
    email: Optional[str] = None
    callback_url: Optional[str] = None
    bank_id: Optional[str] = None
    flow: Optional[TransferFlow] = None

    def __post_init__(self) -> None:
        if self.flow is not None and not isinstance(self.flow, TransferFlow):
            raise ValidationError("flow", "must be a TransferFlow")
        validation.check_token_request(
            self.amount,
            self.currency,
            self.user_type,
            self.document_type,
            self.document_number,
            self.payment_description,
            self.email,
            self.callback_url,
            self.bank_id,
            has_flow=self.flow is not None,
        )

    @property
    def country(self) -> TransferCountry:
        return TransferCountry(self.currency)

    def to_wire(self) -> dict[str, Any]:
        amount = self.amount.to_wire(with_currency=False)
        return _present(
            {
                "amount": amount,
                "currency": self.currency,
                "userType": self.user_type,
                "documentType": self.document_type,
                "documentNumber": self.document_number,
                "paymentDescription": self.payment_description,
                "email": self.email,
                "callbackUrl": self.callback_url,
                "bankId": self.bank_id,
                "flow": self.flow.to_wire() if self.flow is not None else None,
            }
        )

    @classmethod
    def mexico(
        cls,
        *,
        amount: Amount,
        document_number: str,
        email: str,
        payment_description: Optional[str] = None,
        callback_url: Optional[str] = None,
    ) -> TransferTokenRequest:
        """Mexico: a CURP and the payer's e-mail, which the service needs to generate the CLABE."""
        return cls(
            amount=amount,
            currency=TransferCountry.MEXICO.value,
            document_type="CURP",
            document_number=document_number,
            email=email,
            payment_description=payment_description,
            callback_url=callback_url,
        )

    @classmethod
    def ecuador(
        cls,
        *,
        amount: Amount,
        document_type: str,
        document_number: str,
        callback_url: str,
        email: Optional[str] = None,
        payment_description: Optional[str] = None,
        bank_id: Optional[str] = None,
    ) -> TransferTokenRequest:
        """Ecuador: CI, RUC or PAS, in USD, and the URL the bank sends the payer back to."""
        return cls(
            amount=amount,
            currency=TransferCountry.ECUADOR.value,
            document_type=document_type,
            document_number=document_number,
            callback_url=callback_url,
            email=email,
            payment_description=payment_description,
            bank_id=bank_id,
        )

    @classmethod
    def colombia_pse(
        cls,
        *,
        amount: Amount,
        bank_id: str,
        document_type: str,
        document_number: str,
        callback_url: str,
        user_type: str = "0",
        email: Optional[str] = None,
        payment_description: Optional[str] = None,
    ) -> TransferTokenRequest:
        """Colombia ACH (PSE): COP without ``flow``, the payer's bank (a ``code`` of the bank list), their
        document, and where the bank returns them; ``user_type`` "0" natural person, "1" legal person."""
        return cls(
            amount=amount,
            currency=TransferCountry.COLOMBIA_QR.value,
            user_type=user_type,
            document_type=document_type,
            document_number=document_number,
            callback_url=callback_url,
            email=email,
            payment_description=payment_description,
            bank_id=bank_id,
        )

    @classmethod
    def colombia_qr(
        cls,
        *,
        amount: Amount,
        document_type: Optional[str] = None,
        document_number: Optional[str] = None,
        email: Optional[str] = None,
        payment_description: Optional[str] = None,
        callback_url: Optional[str] = None,
        bank_id: Optional[str] = None,
    ) -> TransferTokenRequest:
        """Colombia instant QR: COP, ``flow`` BRE-B/QR; everything else optional, no bank list needed."""
        return cls(
            amount=amount,
            currency=TransferCountry.COLOMBIA_QR.value,
            document_type=document_type,
            document_number=document_number,
            email=email,
            payment_description=payment_description,
            callback_url=callback_url,
            bank_id=bank_id,
            flow=TransferFlow(),
        )


@dataclass(frozen=True)
class TransferInitRequest:
    """``POST /transfer/v1/init``: the token, the same amount, optional merchant ``metadata``.

    ``full_response=True`` sends ``fullResponse: "v2"`` (the only documented value), which adds
    the ``details`` object to a Colombia QR answer. A bool rather than a free string, so the
    spelling cannot drift between call sites.
    """

    token: str
    amount: Amount
    metadata: Optional[Mapping[str, Any]] = None
    full_response: bool = False

    def __post_init__(self) -> None:
        validation.check_init_request(self.token, self.amount, self.metadata, self.full_response)

    def to_wire(self) -> dict[str, Any]:
        amount = self.amount.to_wire(with_currency=False)
        return _present(
            {
                "token": self.token,
                "amount": amount,
                "metadata": dict(self.metadata) if self.metadata is not None else None,
                "fullResponse": FULL_RESPONSE_V2 if self.full_response else None,
            }
        )
