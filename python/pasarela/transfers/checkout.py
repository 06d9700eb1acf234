"""Client-side configuration (spec 2.9): hosted checkout v2 and v1, and the client library.

Each builder checks its fields when built, gives the configuration object (:meth:`config`) and
renders an HTML snippet that loads the service's script from ``{cdn_url}``: the scripts are
always loaded from the service's CDN, never bundled or self-hosted, so ``cdn_url`` must be an
absolute https URL, or, for tests and offline work, the sandbox's stand-ins on this machine
(``render("http://127.0.0.1:8790/cdn")``, ``Sandbox.cdn_url``; plain http is accepted for 127.0.0.1, ::1 and
localhost only). The configuration is embedded as JSON with ``<``, ``>``, ``&`` and the JavaScript
line separators escaped, so no value can close the ``<script>`` element.

Not shown in the spec, taken from the service's public documentation and overridable: the script
paths below ``{cdn_url}`` (``kushki-checkout.js`` for both checkouts, ``kushki.min.js`` for the
library) and the constructors they define (``KushkiCheckout``, ``Kushki``).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlsplit

from ..errors import ValidationError
from . import fields as check
from .amounts import MINOR_UNITS, Amount, payable

__all__ = ["CHECKOUT_SCRIPT", "LIBRARY_SCRIPT", "CheckoutV1", "CheckoutV2", "ClientLibraryConfig"]

CHECKOUT_SCRIPT = "kushki-checkout.js"
LIBRARY_SCRIPT = "kushki.min.js"
_CHECKOUT_CONSTRUCTOR = "KushkiCheckout"
_LIBRARY_CONSTRUCTOR = "Kushki"
_PAYMENT_METHODS = frozenset({"transfer"})
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
"""Hosts whose plain http is allowed: the sandbox's CDN stand-ins (``pasarela sandbox``: ``<its URL>/cdn``)."""
_SCRIPT_PATH = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _token(value: object, field: str) -> str:
    """An identifier: non-empty, no blanks (a form id, a key, a kform id)."""
    checked = check.text(value, field)
    if any(ch.isspace() or not ch.isprintable() for ch in checked):
        raise ValidationError(field, "must not contain blanks or control characters")
    return checked


def _flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(field, "must be a bool")
    return value


def _cdn_base(cdn_url: str) -> str:
    try:
        parts = urlsplit(check.text(cdn_url, "cdn_url"))
    except ValueError:  # urlsplit's own ("https://[")
        parts = urlsplit("")
    on_this_machine = parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS
    if (parts.scheme != "https" and not on_this_machine) or not parts.netloc or parts.query or parts.fragment:
        raise ValidationError("cdn_url", "must be the service's absolute https CDN URL (scripts are never self-hosted),"
                                         " or the sandbox's stand-ins on this machine (http://127.0.0.1:PORT/cdn)")
    return cdn_url.rstrip("/")


def _script_json(config: dict[str, Any]) -> str:
    text = json.dumps(config, ensure_ascii=False, separators=(", ", ": "))
    return "".join(_SCRIPT_ESCAPES.get(ch, ch) for ch in text)


def _snippet(
    cdn_url: str, script_path: str, constructor: str, config: dict[str, Any], form: Optional[str], action: Optional[str]
) -> str:
    if not _SCRIPT_PATH.fullmatch(script_path) or ".." in script_path.split("/"):
        raise ValidationError("script_path", "must be a relative path below cdn_url")
    lines = []
    if action is not None:
        target = check.text(action, "action")
        lines.append(f'<form id="{html.escape(form or "")}" method="post" action="{html.escape(target)}"></form>')
    src = html.escape(f"{_cdn_base(cdn_url)}/{script_path}")
    lines.append(f'<script src="{src}"></script>')
    lines.append(f"<script>\n  var kushki = new {constructor}({_script_json(config)});\n</script>")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CheckoutV2:
    """Hosted checkout v2, customized in the admin console (``kform_id``) and shown in the form ``form``."""

    kform_id: str
    form: str
    public_merchant_id: str
    amount: Amount

    def __post_init__(self) -> None:
        _token(self.kform_id, "kformId")
        _token(self.form, "form")
        _token(self.public_merchant_id, "publicMerchantId")
        payable(self.amount)

    def config(self) -> dict[str, Any]:
        amount = self.amount.to_wire(with_currency=False)
        return {
            "kformId": self.kform_id,
            "form": self.form,
            "publicMerchantId": self.public_merchant_id,
            "amount": amount,
        }

    def render(self, cdn_url: str, *, script_path: str = CHECKOUT_SCRIPT, action: Optional[str] = None) -> str:
        """The snippet; with ``action`` it also writes the ``<form>`` posting the token to your back end."""
        return _snippet(cdn_url, script_path, _CHECKOUT_CONSTRUCTOR, self.config(), self.form, action)


@dataclass(frozen=True)
class CheckoutV1:
    """Hosted checkout v1 (not customizable). ``merchant_id`` is the *public* key; ``currency`` is the
    country's (MXN in Mexico, USD in Ecuador, else COP, CLP or PEN); ``amount.ice`` is sent, 0 when unset."""

    form: str
    merchant_id: str
    amount: Amount
    currency: str
    callback_url: str
    in_test_environment: bool
    payment_methods: tuple[str, ...] = ("transfer",)

    def __post_init__(self) -> None:
        _token(self.form, "form")
        _token(self.merchant_id, "merchant_id")
        payable(self.amount).check_currency(check.choice(self.currency, "currency", MINOR_UNITS))
        check.http_url(self.callback_url, "callback_url")
        _flag(self.in_test_environment, "inTestEnvironment")
        if isinstance(self.payment_methods, str) or not self.payment_methods:
            raise ValidationError("payment_methods", "must be a non-empty list")
        object.__setattr__(self, "payment_methods", tuple(self.payment_methods))
        for index, method in enumerate(self.payment_methods):
            check.choice(method, f"payment_methods[{index}]", _PAYMENT_METHODS)

    def config(self) -> dict[str, Any]:
        amount = self.amount.to_wire(with_currency=False)
        amount.setdefault("ice", 0)
        return {
            "form": self.form,
            "merchant_id": self.merchant_id,
            "amount": amount,
            "currency": self.currency,
            "payment_methods": list(self.payment_methods),
            "inTestEnvironment": self.in_test_environment,
            "callback_url": self.callback_url,
        }

    def render(self, cdn_url: str, *, script_path: str = CHECKOUT_SCRIPT, action: Optional[str] = None) -> str:
        return _snippet(cdn_url, script_path, _CHECKOUT_CONSTRUCTOR, self.config(), self.form, action)


@dataclass(frozen=True)
class ClientLibraryConfig:
    """The client library (requestTransferToken in the browser): public ``merchant_id`` and the test flag."""

    merchant_id: str
    in_test_environment: bool

    def __post_init__(self) -> None:
        _token(self.merchant_id, "merchantId")
        _flag(self.in_test_environment, "inTestEnvironment")

    def config(self) -> dict[str, Any]:
        return {"merchantId": self.merchant_id, "inTestEnvironment": self.in_test_environment}

    def render(self, cdn_url: str, *, script_path: str = LIBRARY_SCRIPT) -> str:
        return _snippet(cdn_url, script_path, _LIBRARY_CONSTRUCTOR, self.config(), None, None)
