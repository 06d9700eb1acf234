"""Client-side configuration builders (spec 2.9) and the HTML snippets they render."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest

from pasarela.errors import ValidationError
from pasarela.transfers import Amount, CheckoutV1, CheckoutV2, ClientLibraryConfig
from pasarela.transfers.checkout import _script_json

CDN = "https://cdn.payments.example"
AMOUNT = Amount.untaxed(10000, currency="COP")
USD = Amount.from_total("11.50", currency="USD", iva_rate="0.15")


def embedded_config(snippet: str) -> Any:
    match = re.search(r"new \w+\((\{.*\})\);", snippet, re.S)
    assert match, snippet
    return json.loads(match.group(1))


def test_checkout_v2_config_and_snippet() -> None:
    checkout = CheckoutV2(kform_id="kf-123", form="pay-form", public_merchant_id="pub-1", amount=AMOUNT)
    assert checkout.config() == {
        "kformId": "kf-123",
        "form": "pay-form",
        "publicMerchantId": "pub-1",
        "amount": {"subtotalIva": 0, "subtotalIva0": 10000, "iva": 0},
    }
    snippet = checkout.render(CDN + "/")
    assert f'<script src="{CDN}/kushki-checkout.js"></script>' in snippet
    assert "new KushkiCheckout(" in snippet
    assert embedded_config(snippet) == checkout.config()
    assert "<form" not in snippet


def test_checkout_renders_the_form_when_given_an_action() -> None:
    snippet = CheckoutV2(kform_id="kf", form="pay-form", public_merchant_id="pub-1", amount=AMOUNT).render(
        CDN, action="/orders/7/confirm?step=1&x=2"
    )
    assert '<form id="pay-form" method="post" action="/orders/7/confirm?step=1&amp;x=2"></form>' in snippet


def test_checkout_v1_config_includes_ice_and_payment_methods() -> None:
    checkout = CheckoutV1(
        form="pay-form",
        merchant_id="pub-1",
        amount=USD,
        currency="USD",
        callback_url="https://shop.example/return",
        in_test_environment=True,
    )
    assert checkout.config() == {
        "form": "pay-form",
        "merchant_id": "pub-1",
        "amount": {"subtotalIva": 10, "subtotalIva0": 0, "iva": 1.5, "ice": 0},
        "currency": "USD",
        "payment_methods": ["transfer"],
        "inTestEnvironment": True,
        "callback_url": "https://shop.example/return",
    }
    assert embedded_config(checkout.render(CDN)) == checkout.config()


def test_client_library_snippet() -> None:
    library = ClientLibraryConfig(merchant_id="pub-1", in_test_environment=False)
    snippet = library.render(CDN, script_path="v1/kushki.min.js")
    assert f'<script src="{CDN}/v1/kushki.min.js"></script>' in snippet
    assert "new Kushki(" in snippet
    assert embedded_config(snippet) == {"merchantId": "pub-1", "inTestEnvironment": False}
    assert f'src="{CDN}/kushki.min.js"' in library.render(CDN)


def test_embedded_values_cannot_close_the_script() -> None:
    checkout = CheckoutV2(
        kform_id="kf</script><script>alert(1)</script>", form="f", public_merchant_id="p", amount=AMOUNT
    )
    snippet = checkout.render(CDN)
    assert "</script><script>alert" not in snippet
    assert snippet.count("</script>") == 2
    assert embedded_config(snippet)["kformId"] == "kf</script><script>alert(1)</script>"
    with pytest.raises(ValidationError):  # a line separator is a blank: refused before rendering
        CheckoutV2(kform_id="kf\u2028x", form="f", public_merchant_id="p", amount=AMOUNT)
    escaped = _script_json({"a": "x\u2028y\u2029&<>"})
    assert escaped == '{"a": "x\\u2028y\\u2029\\u0026\\u003c\\u003e"}'
    assert json.loads(escaped) == {"a": "x\u2028y\u2029&<>"}


@pytest.mark.parametrize(
    "cdn_url",
    [
        "http://cdn.payments.example",
        "/static/vendor",
        "cdn.payments.example",
        "https://cdn.example/?v=1",
        "",
        "https://",
    ],
)
def test_scripts_only_from_an_absolute_https_cdn(cdn_url: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ClientLibraryConfig(merchant_id="pub-1", in_test_environment=True).render(cdn_url)
    assert caught.value.field == "cdn_url"


@pytest.mark.parametrize(
    "script_path", ["../evil.js", "/kushki.min.js", "https://evil.example/x.js", "a//b.js", "x.js?v=1", ""]
)
def test_script_path_stays_below_the_cdn(script_path: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ClientLibraryConfig(merchant_id="pub-1", in_test_environment=True).render(CDN, script_path=script_path)
    assert caught.value.field == "script_path"


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: CheckoutV2(kform_id="", form="f", public_merchant_id="p", amount=AMOUNT), "kformId"),
        (lambda: CheckoutV2(kform_id="k", form="my form", public_merchant_id="p", amount=AMOUNT), "form"),
        (lambda: CheckoutV2(kform_id="k", form="f", public_merchant_id="p\n", amount=AMOUNT), "publicMerchantId"),
        (lambda: CheckoutV2(kform_id="k", form="f", public_merchant_id="p", amount=Amount()), "amount"),
        (lambda: CheckoutV2(kform_id="k", form="f", public_merchant_id="p", amount={"iva": 0}), "amount"),
        (lambda: ClientLibraryConfig(merchant_id="", in_test_environment=True), "merchantId"),
        (lambda: ClientLibraryConfig(merchant_id="p", in_test_environment="yes"), "inTestEnvironment"),
    ],
)
def test_builder_fields_refused(build: Any, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    assert caught.value.field == field


def v1(**changes: Any) -> CheckoutV1:
    fields: dict[str, Any] = {
        "form": "f",
        "merchant_id": "pub-1",
        "amount": USD,
        "currency": "USD",
        "callback_url": "https://shop.example/return",
        "in_test_environment": True,
    }
    fields.update(changes)
    return CheckoutV1(**fields)


@pytest.mark.parametrize("currency", ["MXN", "USD", "COP", "CLP", "PEN"])
def test_checkout_v1_currencies_accepted(currency: str) -> None:
    assert v1(currency=currency, amount=Amount.untaxed(100)).currency == currency


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"currency": "EUR"}, "currency"),
        ({"currency": "CLP", "amount": Amount.untaxed(Decimal("10.5"))}, "amount.subtotalIva0"),
        ({"currency": "MXN", "amount": Amount(subtotal_iva0=Decimal(10), ice=Decimal(1))}, "amount.ice"),
        ({"callback_url": "/return"}, "callback_url"),
        ({"in_test_environment": 1}, "inTestEnvironment"),
        ({"payment_methods": ()}, "payment_methods"),
        ({"payment_methods": "transfer"}, "payment_methods"),
        ({"payment_methods": ("transfer", "card")}, "payment_methods[1]"),
    ],
)
def test_checkout_v1_fields_refused(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        v1(**changes)
    assert caught.value.field == field


def test_checkout_v1_keeps_a_given_ice() -> None:
    amount = Amount.from_total("12.00", currency="USD", iva_rate="0.15", ice="0.50")
    assert v1(amount=amount).config()["amount"]["ice"] == 0.5
