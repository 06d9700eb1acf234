"""Every error pasarela raises on purpose is importable from ``pasarela`` itself, the card and transfer
APIs' as well as the terminal's: ``except pasarela.ValidationError`` works without knowing the module."""

from __future__ import annotations

import inspect

import pytest

import pasarela
from pasarela import errors


def test_every_error_class_is_exported_from_the_package() -> None:
    classes = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, Exception) and value.__module__ == errors.__name__}
    assert {"ValidationError", "ApiError", "TransportError", "AuthError"} <= classes
    assert classes <= set(pasarela.__all__)
    assert all(getattr(pasarela, name) is getattr(errors, name) for name in classes)


def test_the_package_exports_only_what_exists() -> None:
    assert len(set(pasarela.__all__)) == len(pasarela.__all__)
    assert all(hasattr(pasarela, name) for name in pasarela.__all__)


def test_a_card_validation_error_is_caught_as_pasarela_validation_error() -> None:
    from pasarela.cards import Card

    with pytest.raises(pasarela.ValidationError) as caught:
        Card(name="Ana", number="4000", expiry_month="12", expiry_year="29")
    assert caught.value.field == "card.number"
