"""Removing secrets from what is recorded: card numbers, CVV, cryptograms, private keys.

Members are recognized by name, case-insensitively and ignoring ``_`` and ``-``, at any depth: a
card number keeps its first six and last four digits (what the service itself shows, and what
support needs), the other secrets are replaced whole. Form bodies (``name=value&...``) get the same
treatment field by field, a field named by its last part (``card[cvv]``, ``card.number``). The
private merchant key is removed from headers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote_plus, unquote_plus

__all__ = ["REDACTED", "mask_card_number", "redact_form", "redact_headers", "redact_json"]

REDACTED = "[REDACTED]"

_SECRET_MEMBERS = frozenset({"cvv", "cvc", "cvv2", "cryptogram", "privatemerchantid", "privatekey", "secret"})
_CARD_NUMBER_MEMBERS = frozenset({"number", "cardnumber", "pan"})
_IGNORED_IN_NAMES = str.maketrans("", "", "_-")
_FORM_NAME_PARTS = re.compile(r"[\[\].]+")
_SECRET_HEADERS = frozenset({"private-merchant-id", "authorization", "cookie", "set-cookie"})
_VISIBLE_HEAD, _VISIBLE_TAIL, _MIN_MASKABLE = 6, 4, 13


def mask_card_number(value: object) -> str:
    """``4242424242424242`` becomes ``424242******4242``; anything too short or not digits is redacted whole."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) >= _MIN_MASKABLE:
        hidden = len(value) - _VISIBLE_HEAD - _VISIBLE_TAIL
        return value[:_VISIBLE_HEAD] + "*" * hidden + value[-_VISIBLE_TAIL:]
    return REDACTED


def _normalized(name: str) -> str:
    return name.lower().translate(_IGNORED_IN_NAMES)


def redact_json(value: Any) -> Any:
    """A copy of a parsed JSON value with every secret member masked or replaced; walked without recursion, so a
    value nested MAX_DEPTH deep is redacted the same on every interpreter and at any caller depth."""
    result: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(value, result, 0)]  # (value to copy, where its copy goes, under what)
    while pending:
        source, target, place = pending.pop()
        if isinstance(source, Mapping):
            redacted: dict[str, Any] = {}
            for key, member in source.items():
                name = _normalized(str(key))
                if name in _SECRET_MEMBERS:
                    redacted[key] = REDACTED
                elif name in _CARD_NUMBER_MEMBERS and not isinstance(member, (Mapping, list)):
                    redacted[key] = mask_card_number(member)
                else:
                    redacted[key] = None  # its place in the order; the copy is put there when made
                    pending.append((member, redacted, key))
            target[place] = redacted
        elif isinstance(source, list):
            items: list[Any] = [None] * len(source)
            pending.extend((item, items, index) for index, item in enumerate(source))
            target[place] = items
        else:
            target[place] = source
    return result[0]


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A copy of the headers with the private key (and any credentials) replaced."""
    return {name: REDACTED if name.lower() in _SECRET_HEADERS else value for name, value in headers.items()}


def redact_form(text: str) -> str:
    """``text`` with the value of every secret field of a form body (``a=1&card[cvv]=123``) masked or
    replaced; everything else, and any text that is not a form, as it was."""
    return "&".join(_redact_field(field) for field in text.split("&"))


def _redact_field(field: str) -> str:
    raw_name, equals, raw_value = field.partition("=")
    parts = [part for part in _FORM_NAME_PARTS.split(unquote_plus(raw_name)) if part]
    name = _normalized(parts[-1]) if equals and parts else ""
    if name in _SECRET_MEMBERS:
        return f"{raw_name}={quote_plus(REDACTED)}"
    if name in _CARD_NUMBER_MEMBERS:
        return f"{raw_name}={quote_plus(mask_card_number(unquote_plus(raw_value)), safe='*')}"
    return field
