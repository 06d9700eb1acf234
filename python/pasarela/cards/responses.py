"""Response models of the card payments API (spec 2.3, 4.2); each keeps the raw JSON in ``raw``.

The card token response is "not shown" in the spec: :class:`CardToken` reads a ``token`` string,
as the transfer token response has. Charge, pre-authorization and tokenless charge answers are
read as :class:`ChargeResult` (``ticketNumber``, ``transactionReference`` as a UUID, and the
``network`` object when the transaction was tokenized with a network token).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import ResponseShapeError
from ..http.response_reader import ResponseReader, TokenReply

__all__ = ["CardToken", "ChargeResult", "ChargeReversal", "NetworkTokenInfo"]

_MASKED_CARD_NUMBER = re.compile(r"[0-9]{6}[Xx*•]+[0-9]{4}")


class CardToken(TokenReply):
    """The card token (``POST /card/v1/tokens``), for a charge or pre-authorization."""


@dataclass(frozen=True)
class NetworkTokenInfo:
    """The ``network`` object: what was asked in ``capabilities`` and what happened, by either path.

    Every member is optional (the spec gives types, not presence), but a member that is present
    must have its documented shape: ``tms_masked_card_number`` shows only the first 6 and last 4
    digits, ``tms_bin`` is 6 digits, ``tms_last_four_digits`` 4.
    """

    wallet: Optional[str]
    wallet_id: Optional[str]
    is_network_token: Optional[bool]
    tms_masked_card_number: Optional[str]
    tms_last_four_digits: Optional[str]
    tms_bin: Optional[str]
    tms_integration: Optional[str]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def read(cls, reader: ResponseReader) -> NetworkTokenInfo:
        masked = reader.optional_text("tmsMaskedCardNumber")
        if masked is not None and not _MASKED_CARD_NUMBER.fullmatch(masked):
            raise ResponseShapeError(
                reader.where("tmsMaskedCardNumber"), "expected only the first 6 and last 4 digits visible"
            )
        return cls(
            wallet=reader.optional_text("wallet"),
            wallet_id=reader.optional_text("walletId"),
            is_network_token=reader.optional_boolean("isNetworkToken"),
            tms_masked_card_number=masked,
            tms_last_four_digits=reader.digits("tmsLastFourDigits", 4) if reader.has("tmsLastFourDigits") else None,
            tms_bin=reader.digits("tmsBin", 6) if reader.has("tmsBin") else None,
            tms_integration=reader.optional_text("tmsIntegration"),
            raw=reader.raw,
        )


@dataclass(frozen=True)
class ChargeResult:
    """A charge, pre-authorization or tokenless charge; ``network`` only when a network token was used."""

    ticket_number: str
    transaction_reference: str
    network: Optional[NetworkTokenInfo]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, value: object) -> ChargeResult:
        reader = ResponseReader.of(value)
        network = reader.optional_child("network")
        return cls(
            ticket_number=reader.text("ticketNumber"),
            transaction_reference=reader.uuid("transactionReference"),
            network=NetworkTokenInfo.read(network) if network is not None else None,
            raw=reader.raw,
        )


@dataclass(frozen=True)
class ChargeReversal:
    """The answer to ``DELETE /card/v1/charges/{ticketNumber}``: the void's (or refund's) own ``ticketNumber``;
    ``transaction_type`` (VOID or REFUND) when the service says which it was."""

    ticket_number: str
    transaction_type: Optional[str]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, value: object) -> ChargeReversal:
        reader = ResponseReader.of(value)
        return cls(reader.text("ticketNumber"), reader.optional_text("transactionType"), reader.raw)
