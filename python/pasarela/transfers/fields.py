"""Checks of single request fields, shared by the card and transfer models.

Each check returns the value it accepted (normalized where that is harmless) or raises
:class:`~pasarela.errors.ValidationError` naming the field by its wire path. Messages quote a value
only when it is one of a closed set of codes (currencies, document types): never a card number,
CVV, cryptogram or key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any, Optional
from urllib.parse import urlsplit

from ..errors import ValidationError

__all__ = ["choice", "digits", "email", "http_url", "json_object", "optional_text", "text"]

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")


def text(value: object, field: str) -> str:
    """A required string with something other than blanks in it (``None``: the field is missing)."""
    if value is None:
        raise ValidationError(field, "is required")
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(field, "must not be empty")
    return value


def optional_text(value: object, field: str) -> Optional[str]:
    """``None``, or a string as :func:`text` accepts it."""
    return None if value is None else text(value, field)


def digits(value: object, field: str, *, length: int, max_length: Optional[int] = None) -> str:
    """ASCII digits only, exactly ``length`` of them (or ``length`` to ``max_length``)."""
    checked = text(value, field)
    top = length if max_length is None else max_length
    if not (checked.isascii() and checked.isdigit()):
        raise ValidationError(field, "must contain digits only")
    if not length <= len(checked) <= top:
        size = f"{length}" if top == length else f"{length} to {top}"
        raise ValidationError(field, f"must have {size} digits, has {len(checked)}")
    return checked


def choice(value: object, field: str, allowed: Collection[str]) -> str:
    """One of ``allowed``, compared exactly (codes are case-sensitive on the wire).

    The error never echoes the value received: a secret passed in the wrong field would land in logs."""
    checked = text(value, field)
    if checked not in allowed:
        raise ValidationError(field, f"must be one of {', '.join(sorted(allowed))} (the value received is not shown)")
    return checked


def http_url(value: object, field: str) -> str:
    """An absolute http or https URL with a host."""
    checked = text(value, field)
    try:
        parts = urlsplit(checked)
    except ValueError:  # e.g. "https://]": an invalid IPv6 host
        raise ValidationError(field, "must be an absolute http(s) URL") from None
    if parts.scheme not in ("http", "https") or not parts.netloc or any(ch.isspace() for ch in checked):
        raise ValidationError(field, "must be an absolute http(s) URL")
    return checked


def email(value: object, field: str) -> str:
    """A plausible e-mail address (one @, a dot in the domain, no blanks); the service does the real check."""
    checked = text(value, field)
    if not _EMAIL.fullmatch(checked):
        raise ValidationError(field, "must be an e-mail address")
    return checked


def json_object(value: object, field: str) -> Mapping[str, Any]:
    """A mapping with string keys that JSON can carry exactly (no NaN, no custom objects)."""
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ValidationError(field, "must be a mapping with string keys")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(field, f"cannot travel as JSON ({exc})") from None
    return value
