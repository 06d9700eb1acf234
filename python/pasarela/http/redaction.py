"""Removing secrets from what is recorded: card numbers, CVV, cryptograms, private keys.

Members are recognized by name, case-insensitively and ignoring ``_`` and ``-``, at any depth: a
card number keeps its first six and last four digits (what the service itself shows, and what
support needs), the other secrets (a name holding ``cvv``, ``cvc``, ``securityCode``, ``cryptogram``,
``secret``, ``password``, ``privateKey``, ``merchantKey``, ``apiKey``...) are replaced whole. Form bodies
(``name=value&...``) get the same treatment field by field, a field named by its last part (``card[cvv]``,
``card.number``). The private merchant key is removed from headers.

:class:`Redactor` goes further, for a record of requests anybody may have sent in any shape (the sandbox's
access log): it also replaces the values it is told are secret wherever they appear (a private key sent in
``Public-Merchant-Id``, ``X-Api-Key`` or a ``merchantKey`` member), masks every card number a text holds
(:func:`mask_card_numbers`), and keeps only the headers of :data:`RECORDED_HEADERS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional
from urllib.parse import quote, quote_plus, unquote_plus

__all__ = ["RECORDED_HEADERS", "REDACTED", "Redactor", "mask_card_number", "mask_card_numbers", "passes_luhn",
           "redact_form", "redact_headers", "redact_json"]

REDACTED = "[REDACTED]"

_SECRET_WORDS = ("cvv", "cvc", "cvn", "securitycode", "cryptogram", "secret", "password", "privatekey",
                 "privatemerchant", "merchantkey", "apikey", "businesscode")
"""A member whose name (normalized) holds one of these is a secret: ``cvv2``, ``cardCvv``, ``card_security_code``,
``privateMerchantId``, ``webhookSecret``, ``x-api-key``."""
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


_CARD_NUMBER_TEXT = re.compile(r"(?<![0-9A-Za-z])[0-9](?:[ -]?[0-9]){12,18}(?![0-9A-Za-z])")
"""13 to 19 digits standing alone (no letter or digit either side), single spaces or hyphens between them allowed."""


def passes_luhn(digits: str) -> bool:
    """Whether ASCII ``digits`` pass the Luhn check, as every card number does (and 1 in 10 random runs)."""
    total = 0
    for index, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _mask_found(found: re.Match[str]) -> str:
    text = found.group()
    digits = [index for index, char in enumerate(text) if char.isdigit()]
    if not passes_luhn("".join(text[index] for index in digits)):
        return text
    hidden = set(digits[_VISIBLE_HEAD:-_VISIBLE_TAIL])
    return "".join("*" if index in hidden else char for index, char in enumerate(text))


def mask_card_numbers(text: str) -> str:
    """``text`` with every card number in it (13 to 19 digits standing alone, spaces or hyphens allowed between
    them, that pass the Luhn check, as card numbers do) masked to its first six and last four digits:
    ``paid with 4242 4242 4242 4242`` becomes ``paid with 4242 42** **** 4242``."""
    return _CARD_NUMBER_TEXT.sub(_mask_found, text) if len(text) >= _MIN_MASKABLE else text


def _normalized(name: str) -> str:
    return name.lower().translate(_IGNORED_IN_NAMES)


def _is_secret(name: str) -> bool:
    return any(word in name for word in _SECRET_WORDS)


def redact_json(value: Any, *, strings: Optional[Callable[[str], str]] = None) -> Any:
    """A copy of a parsed JSON value with every secret member masked or replaced (and, given ``strings``, every
    other string, member names included, put through it); walked without recursion, so a value nested MAX_DEPTH
    deep is redacted the same on every interpreter and at any caller depth."""
    scrub: Callable[[str], str] = strings if strings is not None else str
    result: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(value, result, 0)]  # (value to copy, where its copy goes, under what)
    while pending:
        source, target, place = pending.pop()
        if isinstance(source, Mapping):
            redacted: dict[str, Any] = {}
            for key, member in source.items():
                name, copied = _normalized(str(key)), scrub(key) if isinstance(key, str) else key
                if _is_secret(name):
                    redacted[copied] = REDACTED
                elif name in _CARD_NUMBER_MEMBERS and not isinstance(member, (Mapping, list)):
                    redacted[copied] = mask_card_number(member)
                else:
                    redacted[copied] = None  # its place in the order; the copy is put there when made
                    pending.append((member, redacted, copied))
            target[place] = redacted
        elif isinstance(source, list):
            items: list[Any] = [None] * len(source)
            pending.extend((item, items, index) for index, item in enumerate(source))
            target[place] = items
        else:
            target[place] = scrub(source) if isinstance(source, str) else source
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
    if name and _is_secret(name):
        return f"{raw_name}={quote_plus(REDACTED)}"
    if name in _CARD_NUMBER_MEMBERS:
        return f"{raw_name}={quote_plus(mask_card_number(unquote_plus(raw_value)), safe='*')}"
    return field


RECORDED_HEADERS = frozenset({
    "accept", "accept-encoding", "accept-language", "access-control-request-headers",
    "access-control-request-method", "cache-control", "connection", "content-encoding", "content-length",
    "content-type", "dnt", "expect", "forwarded", "host", "idempotency-key", "if-match", "if-modified-since",
    "if-none-match", "origin", "pragma", "priority", "public-merchant-id", "referer", "sec-ch-ua",
    "sec-ch-ua-mobile", "sec-ch-ua-platform", "sec-fetch-dest", "sec-fetch-mode", "sec-fetch-site", "sec-fetch-user",
    "te", "timestamp", "traceparent", "tracestate", "transfer-encoding", "upgrade-insecure-requests", "user-agent",
    "via", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-request-id",
})
"""The headers a record keeps the value of (lower-case): those of HTTP, browsers, tracing and the service's API
(``timestamp`` of the terminal, ``Public-Merchant-Id``, ``Idempotency-Key``). Any other is kept by name with its
value :data:`REDACTED` (``Private-Merchant-Id``, ``Authorization``, ``Proxy-Authorization``, ``X-Api-Key``,
cookies, and whatever a client invents)."""
_SUBSTRING_SECRET_CHARACTERS = 8
"""A secret this long or longer is replaced inside any text; a shorter one only where a whole value equals it
(replacing a 3-character key inside every text would garble the record and say where the key is)."""


class Redactor:
    """What a record of requests sent in any shape may keep: :func:`redact_json`'s rules, plus ``secrets`` (values
    never to be recorded: the private key, ...) replaced wherever they appear, card numbers masked in every text
    (:func:`mask_card_numbers`), and only :data:`RECORDED_HEADERS`'s values. Its ``repr`` never shows a secret."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {secret for secret in secrets if secret}
        self._whole = frozenset(values)
        inside = sorted({form for secret in values if len(secret) >= _SUBSTRING_SECRET_CHARACTERS
                         for form in (secret, quote(secret, safe=""))}, key=len, reverse=True)
        self._inside = re.compile("|".join(map(re.escape, inside))) if inside else None

    def secrets(self, text: str) -> str:
        """``text`` with each secret (and its percent-encoded form) replaced."""
        if text in self._whole:
            return REDACTED
        return self._inside.sub(REDACTED, text) if self._inside is not None else text

    def text(self, text: str) -> str:
        """``text`` with each secret replaced (:meth:`secrets`) and every card number masked."""
        return mask_card_numbers(self.secrets(text))

    def json(self, value: Any) -> Any:
        return redact_json(value, strings=self.text)

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {self.text(name): self.text(value) if name.lower() in RECORDED_HEADERS else REDACTED
                for name, value in headers.items()}

    def __repr__(self) -> str:
        return f"Redactor(<{len(self._whole)} secret(s), not shown>)"
