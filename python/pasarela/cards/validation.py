"""The rules a card request must meet before it is sent (spec 2.2, 2.3, 8).

Each ``check_*`` raises :class:`~pasarela.errors.ValidationError` naming the wire path of the
first field that breaks a rule. Choices where the spec is silent:

- ``card.number`` is 12 to 19 digits (a card or network token number); no Luhn check, the service
  does that. ``card.cvv``, when given, is 3 or 4 digits; ``card.expiryMonth`` is 01 to 12.
- ``card.cryptogram`` (20 to 28 letters and digits) is allowed only with ``isNetworkToken: true``;
  ``networkToken.mvv`` (10 digits) only on a card of the network called Visa (number starting with 4).
- ``capabilities`` accepts only the documented ``networkToken``, once, and only in the four
  network-token countries (COP, CLP, PEN, MXN): an unknown value is far more likely a typo than a
  new feature. A charge's ``amount`` must carry a currency and be more than zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Optional

from ..errors import ValidationError
from ..transfers import fields as check
from ..transfers.amounts import MINOR_UNITS, Amount, check_minor_units, payable, to_decimal

__all__ = [
    "NETWORK_TOKEN_CAPABILITY",
    "NETWORK_TOKEN_CURRENCIES",
    "WALLET_IDS",
    "capability_tuple",
    "check_card",
    "check_card_token_request",
    "check_charge_request",
    "check_network_token_data",
    "check_network_token_use",
    "check_tokenless_charge_request",
]

NETWORK_TOKEN_CURRENCIES = frozenset({"COP", "CLP", "PEN", "MXN"})
"""Colombia, Chile, Peru and Mexico: the countries with card network tokens."""
NETWORK_TOKEN_CAPABILITY = "networkToken"  # noqa: S105 (a capability name, not a secret)
WALLET_IDS = frozenset({"01", "04"})
_MONTHS = frozenset(f"{month:02d}" for month in range(1, 13))


def check_card(name: str, number: str, expiry_month: str, expiry_year: str, cvv: Optional[str],
               cryptogram: Optional[str]) -> None:
    check.text(name, "card.name")
    check.digits(number, "card.number", length=12, max_length=19)
    if check.digits(expiry_month, "card.expiryMonth", length=2) not in _MONTHS:
        raise ValidationError("card.expiryMonth", "must be a month from 01 to 12")
    check.digits(expiry_year, "card.expiryYear", length=2)
    if cvv is not None:
        check.digits(cvv, "card.cvv", length=3, max_length=4)
    if cryptogram is not None:
        cryptogram = check.text(cryptogram, "card.cryptogram")
        if not (cryptogram.isascii() and cryptogram.isalnum() and 20 <= len(cryptogram) <= 28):
            raise ValidationError("card.cryptogram", "must be 20 to 28 letters and digits")


def check_network_token_data(device_type: Optional[str], requestor_id: Optional[str], source: Optional[str],
                             wallet_id: Optional[str], authentication_level: Optional[str], mvv: Optional[str]) -> None:
    for value, wire in (
        (device_type, "deviceType"),
        (requestor_id, "requestorId"),
        (source, "source"),
        (authentication_level, "authenticationLevel"),
    ):
        check.optional_text(value, f"networkToken.{wire}")
    if wallet_id is not None:
        check.choice(wallet_id, "networkToken.walletId", WALLET_IDS)
    if mvv is not None:
        check.digits(mvv, "networkToken.mvv", length=10)


def check_network_token_use(cryptogram: Optional[str], brand_is_visa: bool, is_network_token: object,
                            mvv: Optional[str]) -> None:
    """The card's cryptogram and the network token's mvv against the request (the models have checked the types)."""
    if not isinstance(is_network_token, bool):
        raise ValidationError("isNetworkToken", "must be a bool")
    if cryptogram is not None and not is_network_token:
        raise ValidationError("card.cryptogram", "is sent only with isNetworkToken true (a network token's cryptogram)")
    if mvv is not None and not brand_is_visa:
        raise ValidationError("networkToken.mvv", "applies to Visa cards only (numbers starting with 4)")


def check_card_token_request(currency: str, total_amount: object, is_network_token: bool) -> Decimal:
    """The total amount as a Decimal, once the currency and the amount's minor units are checked."""
    # COP/CLP/PEN/MXN is the network-token rule; a plain card is tokenized in any currency of the service.
    currency = check.choice(currency, "currency",
                            NETWORK_TOKEN_CURRENCIES if is_network_token else frozenset(MINOR_UNITS))
    total: Decimal = to_decimal(total_amount, "totalAmount")
    check_minor_units(total, currency, "totalAmount")
    return total


def capability_tuple(capabilities: Iterable[str]) -> tuple[str, ...]:
    """The capabilities as a tuple; a lone string is refused (it would read as its letters)."""
    if isinstance(capabilities, str) or not isinstance(capabilities, Iterable):
        raise ValidationError("capabilities", "must be a list of strings")
    return tuple(capabilities)


def _check_capabilities(capabilities: tuple[str, ...], currency: str) -> None:
    for index, capability in enumerate(capabilities):
        check.choice(capability, f"capabilities[{index}]", {NETWORK_TOKEN_CAPABILITY})
    if len(set(capabilities)) != len(capabilities):
        raise ValidationError("capabilities", "lists a value twice")
    if NETWORK_TOKEN_CAPABILITY in capabilities and currency not in NETWORK_TOKEN_CURRENCIES:
        raise ValidationError("capabilities", "networkToken is offered in COP, CLP, PEN and MXN only")


def _check_charge_amount(amount: Amount) -> str:
    if payable(amount).currency is None:
        raise ValidationError("amount.currency", "is required on a charge (Amount(..., currency=...))")
    return str(amount.currency)


def _check_extra(extra: object, typed: Iterable[str]) -> None:
    checked = check.json_object(extra, "extra")
    for name in typed:
        if name in checked:
            raise ValidationError(f"extra.{name}", "is a typed field: set it through the model, not extra")


_CHARGE_FIELDS = ("token", "amount", "capabilities")
_TOKENLESS_FIELDS = ("card", "amount", "capabilities", "isNetworkToken", "networkToken")


def check_charge_request(token: str, amount: Amount, capabilities: tuple[str, ...], extra: Mapping[str, Any]) -> None:
    check.text(token, "token")
    _check_capabilities(capabilities, _check_charge_amount(amount))
    _check_extra(extra, _CHARGE_FIELDS)


def check_tokenless_charge_request(amount: Amount, is_network_token: bool, capabilities: tuple[str, ...],
                                   extra: Mapping[str, Any]) -> None:
    """The rest of a tokenless charge, once check_network_token_use has passed."""
    currency = _check_charge_amount(amount)
    if is_network_token and currency not in NETWORK_TOKEN_CURRENCIES:
        raise ValidationError("amount.currency", "network tokens are offered in COP, CLP, PEN and MXN only")
    _check_capabilities(capabilities, currency)
    _check_extra(extra, _TOKENLESS_FIELDS)
