"""Request models of the card payments API with network tokens (spec 2.2, 2.3, 4.2).

Every model checks itself when built (:mod:`.validation`), so an invalid request cannot exist,
and ``to_wire()`` gives the JSON object the service expects. A card's number, CVV and cryptogram
never appear in a ``repr``.

Fields the spec leaves out ("other request fields of charge and pre-authorization: not shown")
can be sent through ``extra``: a JSON-ready mapping merged into the body, which may not override
a typed field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Optional

from ..errors import ValidationError
from ..http.redaction import mask_card_number
from ..transfers.amounts import Amount, wire_number
from . import validation

__all__ = ["Card", "CardTokenRequest", "ChargeRequest", "NetworkTokenData", "TokenlessChargeRequest"]


def _present(members: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in members.items() if value is not None}


@dataclass(frozen=True, repr=False)
class Card:
    """``card``: with ``is_network_token`` on the request, ``number`` is the network token number and
    ``cryptogram`` its dynamic cryptogram (which is separate from ``cvv``)."""

    name: str
    number: str
    expiry_month: str
    expiry_year: str
    cvv: Optional[str] = None
    cryptogram: Optional[str] = None

    def __post_init__(self) -> None:
        validation.check_card(self.name, self.number, self.expiry_month, self.expiry_year, self.cvv, self.cryptogram)

    @property
    def brand_is_visa(self) -> bool:
        """The network called Visa: numbers (and its network tokens) starting with 4."""
        return self.number.startswith("4")

    def to_wire(self) -> dict[str, Any]:
        return _present(
            {
                "name": self.name,
                "number": self.number,
                "expiryMonth": self.expiry_month,
                "expiryYear": self.expiry_year,
                "cvv": self.cvv,
                "cryptogram": self.cryptogram,
            }
        )

    def __repr__(self) -> str:
        masked = mask_card_number(self.number)
        extras = "".join(f", {name}=<hidden>" for name in ("cvv", "cryptogram") if getattr(self, name) is not None)
        return f"Card(name={self.name!r}, number={masked!r}, expiry={self.expiry_month}/{self.expiry_year}{extras})"


NETWORK_TOKEN_WIRE_NAMES = {"device_type": "deviceType", "requestor_id": "requestorId", "source": "source",
                            "wallet_id": "walletId", "authentication_level": "authenticationLevel", "mvv": "mvv"}
"""Each field of :class:`NetworkTokenData` and its member of ``networkToken`` on the wire, in the wire's order."""


@dataclass(frozen=True)
class NetworkTokenData:
    """``networkToken``: wallet and device metadata of a network token (Transport).

    The spec does not say which members are required nor the allowed values of ``device_type``,
    ``source`` and ``authentication_level``: each is optional and any non-empty string is sent as
    given. ``wallet_id`` is ``"01"`` (a mobile wallet of one maker) or ``"04"`` (other wallets);
    ``mvv`` is the 10-digit merchant verification value, Visa only.
    """

    device_type: Optional[str] = None
    requestor_id: Optional[str] = None
    source: Optional[str] = None
    wallet_id: Optional[str] = None
    authentication_level: Optional[str] = None
    mvv: Optional[str] = None

    def __post_init__(self) -> None:
        validation.check_network_token_data(self.device_type, self.requestor_id, self.source, self.wallet_id,
                                            self.authentication_level, self.mvv)

    def to_wire(self) -> dict[str, Any]:
        return _present({wire: getattr(self, name) for name, wire in NETWORK_TOKEN_WIRE_NAMES.items()})


def _check_network_token_use(card: Card, is_network_token: object, network_token: Optional[NetworkTokenData]) -> None:
    if not isinstance(card, Card):
        raise ValidationError("card", "must be a Card")
    if network_token is not None and not isinstance(network_token, NetworkTokenData):
        raise ValidationError("networkToken", "must be a NetworkTokenData")
    mvv = network_token.mvv if network_token is not None else None
    validation.check_network_token_use(card.cryptogram, card.brand_is_visa, is_network_token, mvv)


def _network_token_members(is_network_token: bool, network_token: Optional[NetworkTokenData]) -> dict[str, Any]:
    # isNetworkToken is sent only when true, so requests of integrations without the (beta)
    # Transport feature keep exactly their old shape.
    members: dict[str, Any] = {}
    if is_network_token:
        members["isNetworkToken"] = True
    if network_token is not None:
        members["networkToken"] = network_token.to_wire()
    return members


@dataclass(frozen=True)
class CardTokenRequest:
    """``POST /card/v1/tokens``. ``currency`` is the country's: COP, CLP, PEN or MXN for a network token, any
    currency of the service (also USD) for a plain card."""

    card: Card
    total_amount: Decimal
    currency: str
    is_network_token: bool = False
    network_token: Optional[NetworkTokenData] = None

    def __post_init__(self) -> None:
        _check_network_token_use(self.card, self.is_network_token, self.network_token)
        total = validation.check_card_token_request(self.currency, self.total_amount, self.is_network_token)
        object.__setattr__(self, "total_amount", total)

    def to_wire(self) -> dict[str, Any]:
        return {
            "card": self.card.to_wire(),
            "totalAmount": wire_number(self.total_amount),
            "currency": self.currency,
            **_network_token_members(self.is_network_token, self.network_token),
        }


@dataclass(frozen=True)
class ChargeRequest:
    """``POST /card/v1/charges`` and ``POST /card/v1/preAuthorization`` (the same shape).

    ``amount`` carries its currency (``Amount(..., currency="COP")`` or a builder with
    ``in_amount=True``). ``capabilities=("networkToken",)`` asks the service to also tokenize the
    card with a network token (Creation).
    """

    token: str
    amount: Amount
    capabilities: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "capabilities", validation.capability_tuple(self.capabilities))
        validation.check_charge_request(self.token, self.amount, self.capabilities, self.extra)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"token": self.token, "amount": self.amount.to_wire()}
        if self.capabilities:
            wire["capabilities"] = list(self.capabilities)
        return {**self.extra, **wire}


@dataclass(frozen=True)
class TokenlessChargeRequest:
    """``POST /card/v2/charges``: the card travels in the charge, with the network-token fields of 2.2."""

    card: Card
    amount: Amount
    is_network_token: bool = False
    network_token: Optional[NetworkTokenData] = None
    capabilities: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "capabilities", validation.capability_tuple(self.capabilities))
        _check_network_token_use(self.card, self.is_network_token, self.network_token)
        validation.check_tokenless_charge_request(self.amount, self.is_network_token, self.capabilities, self.extra)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "card": self.card.to_wire(),
            "amount": self.amount.to_wire(),
            **_network_token_members(self.is_network_token, self.network_token),
        }
        if self.capabilities:
            wire["capabilities"] = list(self.capabilities)
        return {**self.extra, **wire}
