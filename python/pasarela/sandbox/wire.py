"""From a request body (already checked against its schema) to the client's own models.

Building :mod:`pasarela.cards` and :mod:`pasarela.transfers` models applies exactly the rules the
clients apply before sending (a cryptogram only with ``isNetworkToken``, ``mvv`` only on Visa,
amounts adding up, the fields each country requires); a broken rule becomes the sandbox's 400
naming the same field. Members a charge may carry beyond the documented ones are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Optional
from urllib.parse import urlsplit

from ..cards.models import (
    NETWORK_TOKEN_WIRE_NAMES,
    Card,
    CardTokenRequest,
    ChargeRequest,
    NetworkTokenData,
    TokenlessChargeRequest,
)
from ..errors import ValidationError
from ..transfers.amounts import Amount, ExtraTaxes
from ..transfers.models import TransferFlow, TransferInitRequest, TransferTokenRequest
from .errors import SandboxError
from .jsontext import plain

__all__ = [
    "amount",
    "card_token_request",
    "charge_request",
    "client_rules",
    "tokenless_charge_request",
    "transfer_init_request",
    "transfer_token_request",
]

@contextmanager
def client_rules() -> Iterator[None]:
    """Turn the models' ValidationError into the sandbox's 400 naming the field."""
    try:
        yield
    except ValidationError as exc:
        raise SandboxError.invalid(exc.field, exc.reason) from None


def _url(value: Optional[str], field: str) -> Optional[str]:
    """The client's URL check lets urlsplit's own ValueError out ("https://]"): name the field here."""
    if value is not None:
        try:
            urlsplit(value)
        except ValueError:
            raise SandboxError.invalid(field, "must be an absolute http(s) URL") from None
    return value


def amount(wire: Mapping[str, Any], *, with_currency: bool = False) -> Amount:
    extra = wire.get("extraTaxes")
    return Amount(
        subtotal_iva=wire["subtotalIva"],
        subtotal_iva0=wire["subtotalIva0"],
        iva=wire["iva"],
        ice=wire.get("ice"),
        extra_taxes=None if extra is None else ExtraTaxes(
            propina=extra.get("propina"),
            tasa_aeroportuaria=extra.get("tasaAeroportuaria"),
            # The service's webhook docs spell it agenciaDeViajes; its request docs agenciaDeViaje.
            agencia_de_viaje=extra.get("agenciaDeViaje", extra.get("agenciaDeViajes")),
            iac=extra.get("iac"),
        ),
        currency=wire.get("currency") if with_currency else None,
    )


def transfer_token_request(body: Mapping[str, Any]) -> TransferTokenRequest:
    flow = body.get("flow")
    with client_rules():
        return TransferTokenRequest(
            amount=amount(body["amount"]),
            currency=body["currency"],
            user_type=body.get("userType"),
            document_type=body.get("documentType"),
            document_number=body.get("documentNumber"),
            payment_description=body.get("paymentDescription"),
            email=body.get("email"),
            callback_url=_url(body.get("callbackUrl"), "callbackUrl"),
            bank_id=body.get("bankId"),
            flow=None if flow is None else TransferFlow(flow["processorName"], flow["type"]),
        )


def _asks_full_response(body: Mapping[str, Any]) -> bool:
    """Whether a request asks for the full answer: ``fullResponse`` ``"v2"`` (the value the spec documents for
    transfer init, and the service's docs for tokenless charges) or ``true`` (its older card docs, the PHP SDK).
    Any other value is accepted and asks for nothing more, on cards and transfers alike: the service's charges
    take members they do not know, so a value it would ignore must not become a 400 here."""
    value = body.get("fullResponse")
    return value is True or value == "v2"


def transfer_init_request(body: Mapping[str, Any]) -> TransferInitRequest:
    with client_rules():
        return TransferInitRequest(
            token=body["token"],
            amount=amount(body["amount"]),
            metadata=None if body.get("metadata") is None else plain(body["metadata"]),
            full_response=_asks_full_response(body),
        )


def _card(wire: Mapping[str, Any]) -> Card:
    return Card(
        name=wire["name"],
        number=wire["number"],
        expiry_month=wire["expiryMonth"],
        expiry_year=wire["expiryYear"],
        cvv=wire.get("cvv"),
        cryptogram=wire.get("cryptogram"),
    )


def _network_token(wire: Optional[Mapping[str, Any]]) -> Optional[NetworkTokenData]:
    if wire is None:
        return None
    return NetworkTokenData(**{name: wire.get(member) for name, member in NETWORK_TOKEN_WIRE_NAMES.items()})


def card_token_request(body: Mapping[str, Any]) -> CardTokenRequest:
    with client_rules():
        return CardTokenRequest(
            card=_card(body["card"]),
            total_amount=body["totalAmount"],
            currency=body["currency"],
            is_network_token=body.get("isNetworkToken", False),
            network_token=_network_token(body.get("networkToken")),
        )


def charge_request(body: Mapping[str, Any]) -> ChargeRequest:
    with client_rules():
        return ChargeRequest(
            token=body["token"],
            amount=amount(body["amount"], with_currency=True),
            capabilities=tuple(body.get("capabilities", ())),
        )


def tokenless_charge_request(body: Mapping[str, Any]) -> TokenlessChargeRequest:
    with client_rules():
        return TokenlessChargeRequest(
            card=_card(body["card"]),
            amount=amount(body["amount"], with_currency=True),
            is_network_token=body.get("isNetworkToken", False),
            network_token=_network_token(body.get("networkToken")),
            capabilities=tuple(body.get("capabilities", ())),
        )
