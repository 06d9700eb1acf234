"""The merchant's test kit: a live sandbox for your test suite, and a conformance run for your webhook endpoint.

With pasarela installed (``pip install "pasarela[testing]"``), pytest has the fixtures of
:mod:`pasarela.testing.plugin` and no code of your own is needed::

    def test_the_order_is_paid(pasarela_sandbox):
        amount = Amount.untaxed(25000, currency="COP")
        token = pasarela_sandbox.transfers.create_token(TransferTokenRequest.colombia_qr(amount=amount)).token
        pasarela_sandbox.transfers.init(TransferInitRequest(token=token, amount=amount))
        pasarela_sandbox.pay(token)
        assert pasarela_sandbox.transfers.status(token).state is TransferState.APPROVED

Outside pytest, :class:`LiveSandbox` is the same sandbox as a context manager, :class:`ServedApp` serves any
ASGI app (your webhook receiver) on a free loopback port, and :mod:`pasarela.testing.conformance` is the receiver
conformance run (also ``pasarela sandbox conformance``). docs/testing.md is the guide. Importing this package
imports none of the sandbox's dependencies: each name is loaded when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .live import DeliveryAttempt, LiveSandbox, SentWebhook
    from .served import ServedApp

__all__ = ["DeliveryAttempt", "LiveSandbox", "SentWebhook", "ServedApp"]

_HOMES = {"DeliveryAttempt": "live", "LiveSandbox": "live", "SentWebhook": "live", "ServedApp": "served"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
