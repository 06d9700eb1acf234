"""The amount object and certification rule 1 (tax and totals correct)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pasarela.errors import ValidationError
from pasarela.transfers.amounts import Amount, ExtraTaxes, check_minor_units, to_decimal, wire_number


def test_from_total_splits_colombia_iva_exactly() -> None:
    amount = Amount.from_total("119000", currency="COP", iva_rate="0.19")
    assert (amount.subtotal_iva, amount.subtotal_iva0, amount.iva) == (Decimal("100000"), 0, Decimal("19000"))
    assert amount.total == Decimal("119000")


def test_from_total_rounds_to_minor_units_and_keeps_the_sum() -> None:
    amount = Amount.from_total("100.00", currency="USD", iva_rate="0.15")
    assert amount.subtotal_iva == Decimal("86.96")
    assert amount.iva == Decimal("13.04")
    assert amount.subtotal_iva + amount.iva == Decimal("100.00")


def test_from_total_clp_has_no_decimals() -> None:
    amount = Amount.from_total(1000, currency="CLP", iva_rate="0.19")
    assert amount.subtotal_iva == Decimal("840") and amount.iva == Decimal("160")
    assert amount.subtotal_iva.as_tuple().exponent == 0


def test_from_total_with_ice_and_extra_taxes_in_ecuador() -> None:
    extras = ExtraTaxes(propina=Decimal("2.00"), iac=Decimal("1.00"))
    amount = Amount.from_total("118.00", currency="USD", iva_rate="0.15", ice="2.00", extra_taxes=extras)
    assert amount.subtotal_iva + amount.iva == Decimal("113.00")
    assert amount.total == Decimal("118.00")
    assert amount.to_wire()["extraTaxes"] == {"propina": 2, "iac": 1}
    assert amount.to_wire()["ice"] == 2


def test_from_total_without_rate_is_untaxed_sum_form() -> None:
    amount = Amount.from_total("10000", currency="COP", iva_rate=0)
    assert amount.to_wire() == {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}


@given(
    cents=st.integers(min_value=1, max_value=10**11),
    rate=st.sampled_from(["0.19", "0.16", "0.15", "0.12", "0.18", "0.05"]),
)
def test_from_total_parts_always_add_up(cents: int, rate: str) -> None:
    total = Decimal(cents).scaleb(-2)
    amount = Amount.from_total(total, currency="MXN", iva_rate=rate)
    assert amount.total == total
    expected_iva = (amount.subtotal_iva * Decimal(rate)).quantize(Decimal("0.01"), ROUND_HALF_UP)
    assert abs(amount.iva - expected_iva) <= Decimal("0.01")


def test_from_total_prefers_a_subtotal_whose_tax_rounds_exactly() -> None:
    for cents in range(1, 3000):
        total = Decimal(cents).scaleb(-2)
        amount = Amount.from_total(total, currency="USD", iva_rate="0.12")
        expected_iva = (amount.subtotal_iva * Decimal("0.12")).quantize(Decimal("0.01"), ROUND_HALF_UP)
        candidates = [amount.subtotal_iva + Decimal(step).scaleb(-2) for step in range(-3, 4)]
        reachable = any(c + (c * Decimal("0.12")).quantize(Decimal("0.01"), ROUND_HALF_UP) == total for c in candidates)
        assert amount.iva == expected_iva or not reachable


def test_from_subtotals_computes_iva_half_up() -> None:
    amount = Amount.from_subtotals(currency="USD", iva_rate="0.15", taxed="10.10", untaxed="5.00")
    assert amount.iva == Decimal("1.52")  # 1.515 rounds half up
    assert amount.total == Decimal("16.62")


def test_from_subtotals_refuses_taxed_subtotal_without_rate() -> None:
    with pytest.raises(ValidationError) as caught:
        Amount.from_subtotals(currency="USD", iva_rate=0, taxed="10")
    assert caught.value.field == "iva_rate"


def test_rate_given_as_percentage_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Amount.from_total(100, currency="COP", iva_rate=19)
    assert caught.value.field == "iva_rate"
    assert "fraction" in caught.value.reason


def test_total_smaller_than_ice_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Amount.from_total("1.00", currency="USD", iva_rate="0.15", ice="2.00")
    assert caught.value.field == "total"


def test_untaxed_sum_form_and_mirrored_form_mean_the_same_total() -> None:
    summed = Amount.untaxed(10000, currency="COP")
    mirrored = Amount.untaxed(10000, currency="COP", mirrored=True)
    assert summed.to_wire() == {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0}
    assert mirrored.to_wire() == {"subtotalIva": 10000, "subtotalIva0": 10000, "iva": 0}
    assert summed.total == mirrored.total == Decimal(10000)
    assert mirrored.is_mirrored and not summed.is_mirrored


def test_untaxed_in_amount_carries_currency() -> None:
    assert Amount.untaxed("12.50", currency="PEN", in_amount=True).to_wire() == {
        "subtotalIva": 0,
        "subtotalIva0": 12.5,
        "iva": 0,
        "currency": "PEN",
    }
    assert "currency" not in Amount.untaxed("12.50", currency="PEN", in_amount=True).to_wire(with_currency=False)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (-1, "negative"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        ("Infinity", "finite"),
        ("12,5", "decimal number"),
        (True, "bool"),
        (None, "got NoneType"),
        ([1], "got list"),
    ],
)
def test_to_decimal_refuses(value: object, reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        to_decimal(value, "totalAmount")
    assert caught.value.field == "totalAmount"
    assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, Decimal(0)), ("10.50", Decimal("10.50")), (0.1, Decimal("0.1")), (Decimal("-0"), Decimal(0)), (7, Decimal(7))],
)
def test_to_decimal_accepts(value: object, expected: Decimal) -> None:
    assert to_decimal(value, "x") == expected


def test_minor_units_refuse_extra_decimals() -> None:
    check_minor_units(Decimal("10.25"), "COP", "amount.iva")
    check_minor_units(Decimal("1500"), "CLP", "amount.iva")
    with pytest.raises(ValidationError, match="CLP"):
        check_minor_units(Decimal("1500.5"), "CLP", "amount.iva")
    with pytest.raises(ValidationError) as caught:
        Amount(subtotal_iva0=Decimal("1.005"), currency="USD")
    assert caught.value.field == "amount.subtotalIva0"


def test_iva_without_taxed_subtotal_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Amount(subtotal_iva0=Decimal(100), iva=Decimal(19))
    assert caught.value.field == "amount.subtotalIva"


def test_iva_zero_with_a_third_form_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Amount(subtotal_iva=Decimal(50), subtotal_iva0=Decimal(100))
    assert caught.value.field == "amount.subtotalIva"
    assert "Colombia" in caught.value.reason


def test_mixed_basket_with_tax_is_accepted() -> None:
    amount = Amount(subtotal_iva=Decimal(100), subtotal_iva0=Decimal(50), iva=Decimal(15))
    assert amount.total == Decimal(165)


def test_ice_is_ecuador_only_and_extra_taxes_ecuador_and_colombia() -> None:
    with pytest.raises(ValidationError) as caught:
        Amount(subtotal_iva0=Decimal(100), ice=Decimal(1), currency="COP")
    assert caught.value.field == "amount.ice"
    with pytest.raises(ValidationError) as caught:
        Amount(subtotal_iva0=Decimal(100), extra_taxes=ExtraTaxes(propina=Decimal(1)), currency="MXN")
    assert caught.value.field == "amount.extraTaxes"
    assert Amount(subtotal_iva0=Decimal(100), ice=Decimal(0), currency="COP").total == Decimal(100)
    tip = Amount(subtotal_iva0=Decimal(100), extra_taxes=ExtraTaxes(propina=Decimal(10)), currency="COP")
    assert tip.total == Decimal(110) and tip.to_wire()["extraTaxes"] == {"propina": 10}


def test_extra_taxes_fields_are_checked() -> None:
    with pytest.raises(ValidationError) as caught:
        ExtraTaxes(tasa_aeroportuaria=Decimal(-1))
    assert caught.value.field == "amount.extraTaxes.tasaAeroportuaria"
    with pytest.raises(ValidationError) as caught:
        Amount(subtotal_iva0=Decimal(1), extra_taxes={"propina": 1})  # type: ignore[arg-type]
    assert caught.value.field == "amount.extraTaxes"


def test_unknown_currency_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        Amount(subtotal_iva0=Decimal(1), currency="EUR")
    assert caught.value.field == "amount.currency"
    assert "must be one of CLP, COP, MXN, PEN, USD" in caught.value.reason and "EUR" not in caught.value.reason


def test_wire_number_is_int_when_whole_and_exact_float_otherwise() -> None:
    assert wire_number(Decimal("10000.00")) == 10000 and isinstance(wire_number(Decimal("10000.00")), int)
    assert repr(wire_number(Decimal("10.15"))) == "10.15"
    assert repr(wire_number(Decimal("99999999.99"))) == "99999999.99"
