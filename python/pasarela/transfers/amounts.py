"""The amount object (spec 2.4) and the arithmetic behind certification rule 1.

Every figure is a :class:`~decimal.Decimal` held to the minor units of its currency (ISO 4217:
CLP has none, COP, MXN, PEN and USD two), rounded half up where a tax is computed. The card charge
(spec 2.3) carries the same object with ``currency`` inside it; transfers send the currency beside it.

Two forms of a tax-free amount
------------------------------
The spec contradicts itself on a Colombia amount without tax. Section 2.4 says ``subtotalIva``
"equals subtotalIva0 when iva is 0 (Colombia flow)" (the *mirrored* form: 10000 is sent as
``subtotalIva=10000, subtotalIva0=10000, iva=0``), while section 8 picks the test scenario by
``subtotalIva0 + subtotalIva + iva`` and calls 10000 the happy path, which only the *sum* form
(``subtotalIva=0, subtotalIva0=10000, iva=0``) reaches. Both are accepted on input and
:attr:`Amount.total` reads both as 10000. The builders write the sum form, because there the
fields add up to what the payer pays in every country; ``Amount.untaxed(total, mirrored=True)``
writes the mirrored form for a processor that wants it. An amount with ``iva`` 0 and a
``subtotalIva`` that is neither 0 nor ``subtotalIva0`` is refused: it matches neither form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Optional, Union

from ..errors import ValidationError
from . import fields as check

__all__ = [
    "MINOR_UNITS",
    "Amount",
    "DecimalLike",
    "ExtraTaxes",
    "check_minor_units",
    "payable",
    "to_decimal",
    "wire_number",
]

MINOR_UNITS: Mapping[str, int] = {"CLP": 0, "COP": 2, "MXN": 2, "PEN": 2, "USD": 2}
"""Decimal places of each currency the card and transfer APIs use (ISO 4217)."""

DecimalLike = Union[Decimal, int, str, float]
"""What the amount builders take; floats are read through their shortest text (``0.1`` is 0.1)."""

_ZERO = Decimal(0)
_ECUADOR_CURRENCY = "USD"
_EXTRA_TAX_CURRENCIES = frozenset({"USD", "COP"})
_EXTRA_TAX_WIRE_NAMES = {
    "propina": "propina",
    "tasa_aeroportuaria": "tasaAeroportuaria",
    "agencia_de_viaje": "agenciaDeViaje",
    "iac": "iac",
}


def to_decimal(value: object, field: str) -> Decimal:
    """A finite, non-negative Decimal from a Decimal, int, str or float; bools are refused."""
    if isinstance(value, bool):
        raise ValidationError(field, "must be a number, not a bool")
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, (float, str)):
        try:
            number = Decimal(repr(value) if isinstance(value, float) else value.strip())
        except InvalidOperation:
            raise ValidationError(field, "must be a decimal number") from None
    else:
        raise ValidationError(field, f"must be a decimal number, got {type(value).__name__}")
    if not number.is_finite():
        raise ValidationError(field, "must be a finite number")
    if number < 0:
        raise ValidationError(field, "must not be negative")
    return number + 0  # folds -0 into 0


def check_minor_units(value: Decimal, currency: str, field: str) -> None:
    """Refuse more decimal places than ``currency`` has (CLP 1500.5 is not an amount)."""
    places = MINOR_UNITS[currency]
    if value.scaleb(places) % 1 != 0:
        raise ValidationError(field, f"has more decimal places than {currency} allows ({places})")


def payable(amount: object) -> Amount:
    """``amount`` if it is an :class:`Amount` adding up to more than zero (what a payment needs)."""
    if not isinstance(amount, Amount):
        raise ValidationError("amount", "must be an Amount")
    if amount.total <= 0:
        raise ValidationError("amount", "must add up to more than zero")
    return amount


def wire_number(value: Decimal) -> Union[int, float]:
    """The JSON number for an amount: an int when whole, else the float whose shortest text is the decimal.

    Amounts hold at most two decimal places and stay far below 2**53 / 100, where that float
    prints back as exactly the same digits.
    """
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def _quantum(currency: str) -> Decimal:
    return Decimal(1).scaleb(-MINOR_UNITS[currency])


def _rate(iva_rate: DecimalLike) -> Decimal:
    rate = to_decimal(iva_rate, "iva_rate")
    if rate >= 1:
        raise ValidationError("iva_rate", "must be a fraction below 1 (0.19 for 19 %), not a percentage")
    return rate


@dataclass(frozen=True)
class ExtraTaxes:
    """Ecuador's extra taxes (``amount.extraTaxes``); a field left ``None`` is not sent."""

    propina: Optional[Decimal] = None
    tasa_aeroportuaria: Optional[Decimal] = None
    agencia_de_viaje: Optional[Decimal] = None
    iac: Optional[Decimal] = None

    def __post_init__(self) -> None:
        for name, wire in _EXTRA_TAX_WIRE_NAMES.items():
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, to_decimal(value, f"amount.extraTaxes.{wire}"))

    def present(self) -> dict[str, Decimal]:
        """The taxes given, by wire name."""
        given = {wire: getattr(self, name) for name, wire in _EXTRA_TAX_WIRE_NAMES.items()}
        return {wire: value for wire, value in given.items() if value is not None}

    @property
    def total(self) -> Decimal:
        """The sum of the taxes given."""
        return sum(self.present().values(), _ZERO)

    def to_wire(self) -> dict[str, Any]:
        return {wire: wire_number(value) for wire, value in self.present().items()}


@dataclass(frozen=True)
class Amount:
    """The amount object. Build it with :meth:`from_total`, :meth:`from_subtotals` or :meth:`untaxed`.

    ``subtotal_iva`` is the taxed subtotal (before tax), ``subtotal_iva0`` the untaxed one, ``iva``
    the tax; ``ice`` is Ecuador only (USD), ``extra_taxes`` Ecuador and Colombia (COP); both sent only when
    set. ``currency`` belongs inside the object for card charges (spec 2.3) and is left ``None`` for transfers, whose
    request carries the currency beside the amount.
    """

    subtotal_iva: Decimal = _ZERO
    subtotal_iva0: Decimal = _ZERO
    iva: Decimal = _ZERO
    ice: Optional[Decimal] = None
    extra_taxes: Optional[ExtraTaxes] = None
    currency: Optional[str] = None

    def __post_init__(self) -> None:
        for name, wire in (("subtotal_iva", "subtotalIva"), ("subtotal_iva0", "subtotalIva0"), ("iva", "iva")):
            object.__setattr__(self, name, to_decimal(getattr(self, name), f"amount.{wire}"))
        if self.ice is not None:
            object.__setattr__(self, "ice", to_decimal(self.ice, "amount.ice"))
        if self.extra_taxes is not None and not isinstance(self.extra_taxes, ExtraTaxes):
            raise ValidationError("amount.extraTaxes", "must be an ExtraTaxes")
        if self.iva > 0 and self.subtotal_iva == 0:
            raise ValidationError("amount.subtotalIva", "must be positive when iva is (a tax needs a taxed subtotal)")
        if self.iva == 0 and self.subtotal_iva not in (_ZERO, self.subtotal_iva0):
            raise ValidationError(
                "amount.subtotalIva", "with iva 0 it must be 0, or equal subtotalIva0 (the Colombia form of 2.4)"
            )
        if self.currency is not None:
            self.check_currency(check.choice(self.currency, "amount.currency", MINOR_UNITS))

    def figures(self) -> dict[str, Decimal]:
        """Every figure given, by wire path (``amount.subtotalIva``, ``amount.extraTaxes.iac``)."""
        given = {
            "amount.subtotalIva": self.subtotal_iva,
            "amount.subtotalIva0": self.subtotal_iva0,
            "amount.iva": self.iva,
        }
        if self.ice is not None:
            given["amount.ice"] = self.ice
        if self.extra_taxes is not None:
            given.update({f"amount.extraTaxes.{wire}": value for wire, value in self.extra_taxes.present().items()})
        return given

    def check_currency(self, currency: str) -> None:
        """Refuse figures ``currency`` cannot carry: too many decimals, ICE outside Ecuador, extra taxes outside
        Ecuador and Colombia (the official PHP SDK sends a Colombian tip as ``extraTaxes.propina``)."""
        for path, value in self.figures().items():
            check_minor_units(value, currency, path)
        if currency != _ECUADOR_CURRENCY and self.ice:
            raise ValidationError("amount.ice", "applies to Ecuador (USD) only")
        if currency not in _EXTRA_TAX_CURRENCIES and self.extra_taxes and self.extra_taxes.total:
            raise ValidationError("amount.extraTaxes", "applies to Ecuador (USD) and Colombia (COP) only")

    @property
    def is_mirrored(self) -> bool:
        """True for the Colombia form of 2.4: no tax and ``subtotalIva`` repeating ``subtotalIva0``."""
        return self.iva == 0 and self.subtotal_iva > 0 and self.subtotal_iva == self.subtotal_iva0

    @property
    def total(self) -> Decimal:
        """What the payer pays: the subtotals, the tax, ICE and the extra taxes (the mirrored form counted once)."""
        base = self.subtotal_iva0 if self.is_mirrored else self.subtotal_iva + self.subtotal_iva0 + self.iva
        extras = self.extra_taxes.total if self.extra_taxes is not None else _ZERO
        return base + (self.ice or _ZERO) + extras

    def to_wire(self, *, with_currency: bool = True) -> dict[str, Any]:
        """The JSON object of the request (numbers as JSON numbers, optional members only when set).

        ``with_currency=False`` leaves ``currency`` out, for the requests that send it beside the amount.
        """
        wire: dict[str, Any] = {
            "subtotalIva": wire_number(self.subtotal_iva),
            "subtotalIva0": wire_number(self.subtotal_iva0),
            "iva": wire_number(self.iva),
        }
        if self.ice is not None:
            wire["ice"] = wire_number(self.ice)
        if self.extra_taxes is not None:
            wire["extraTaxes"] = self.extra_taxes.to_wire()
        if with_currency and self.currency is not None:
            wire["currency"] = self.currency
        return wire

    @classmethod
    def untaxed(
        cls, total: DecimalLike, *, currency: Optional[str] = None, mirrored: bool = False, in_amount: bool = False
    ) -> Amount:
        """A tax-free amount: the sum form by default, the mirrored Colombia form with ``mirrored=True``.

        ``currency`` checks the decimals; it travels inside the object only with ``in_amount=True`` (charges).
        """
        value = to_decimal(total, "total")
        if currency is not None:
            check_minor_units(value, check.choice(currency, "currency", MINOR_UNITS), "total")
        return cls(
            subtotal_iva=value if mirrored else _ZERO,
            subtotal_iva0=value,
            currency=currency if in_amount else None,
        )

    @classmethod
    def from_total(
        cls,
        total: DecimalLike,
        *,
        currency: str,
        iva_rate: DecimalLike,
        ice: Optional[DecimalLike] = None,
        extra_taxes: Optional[ExtraTaxes] = None,
        in_amount: bool = False,
    ) -> Amount:
        """Split a tax-inclusive ``total`` into taxed subtotal and IVA at ``iva_rate`` (0.19 for 19 %).

        ICE and extra taxes are taken off first. The parts always add up to ``total`` exactly; the
        subtotal is chosen so that ``iva`` is also ``subtotal * rate`` rounded half up whenever such a
        subtotal exists (when none does, ``iva`` absorbs the one-minor-unit difference). A total so
        small that its tax rounds to zero is sent as tax-free.
        """
        code = check.choice(currency, "currency", MINOR_UNITS)
        rate = _rate(iva_rate)
        gross = to_decimal(total, "total")
        check_minor_units(gross, code, "total")
        ice_value = None if ice is None else to_decimal(ice, "amount.ice")
        taxable = gross - (ice_value or _ZERO) - (extra_taxes.total if extra_taxes is not None else _ZERO)
        if taxable < 0:
            raise ValidationError("total", "is smaller than ICE and the extra taxes")
        quantum = _quantum(code)
        subtotal, iva = taxable, _ZERO
        if rate > 0:
            estimate = (taxable / (1 + rate)).quantize(quantum, ROUND_HALF_UP)
            candidates = [estimate + quantum * step for step in (0, -1, 1, -2, 2)]
            exact = [c for c in candidates if c >= 0 and c + (c * rate).quantize(quantum, ROUND_HALF_UP) == taxable]
            subtotal = exact[0] if exact else estimate
            iva = taxable - subtotal
        taxed = iva > 0  # a tax that rounds to nothing leaves a tax-free amount
        return cls(
            subtotal_iva=subtotal if taxed else _ZERO,
            subtotal_iva0=_ZERO if taxed else subtotal,
            iva=iva,
            ice=ice_value,
            extra_taxes=extra_taxes,
            currency=code if in_amount else None,
        )._checked_for(code)

    @classmethod
    def from_subtotals(
        cls,
        *,
        currency: str,
        iva_rate: DecimalLike,
        taxed: DecimalLike = 0,
        untaxed: DecimalLike = 0,
        ice: Optional[DecimalLike] = None,
        extra_taxes: Optional[ExtraTaxes] = None,
        in_amount: bool = False,
    ) -> Amount:
        """Compute IVA on a tax-exclusive ``taxed`` subtotal (rounded half up); ``untaxed`` goes to subtotalIva0.

        A subtotal so small that its tax rounds to zero is sent as tax-free (``subtotalIva0``).
        """
        code = check.choice(currency, "currency", MINOR_UNITS)
        rate = _rate(iva_rate)
        taxed_value = to_decimal(taxed, "amount.subtotalIva")
        untaxed_value = to_decimal(untaxed, "amount.subtotalIva0")
        if taxed_value > 0 and rate == 0:
            raise ValidationError("iva_rate", "must be positive for a taxed subtotal (put tax-free parts in untaxed)")
        iva = (taxed_value * rate).quantize(_quantum(code), ROUND_HALF_UP)
        if iva == 0:  # a tax that rounds to nothing leaves a tax-free amount
            taxed_value, untaxed_value = _ZERO, untaxed_value + taxed_value
        return cls(
            subtotal_iva=taxed_value,
            subtotal_iva0=untaxed_value,
            iva=iva,
            ice=None if ice is None else to_decimal(ice, "amount.ice"),
            extra_taxes=extra_taxes,
            currency=code if in_amount else None,
        )._checked_for(code)

    def _checked_for(self, currency: str) -> Amount:
        self.check_currency(currency)
        return self
