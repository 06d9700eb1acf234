"""Checking a request body with ``jsonschema`` against the sandbox's own OpenAPI document.

The document (:mod:`.openapi`) is the single source of the request shapes: the very object served at
``/openapi.json`` is registered here and each body is validated against ``#/components/schemas/<name>``
of it, so the two cannot drift. OpenAPI 3.0 schema objects are JSON Schema draft 4 with extensions the
document does not use, hence :class:`~jsonschema.Draft4Validator`.

Numbers arrive as ``int`` or ``Decimal`` (the body is parsed with ``parse_float=Decimal`` so amounts
keep the digits that were sent); ``multipleOf`` is therefore decided in Decimal arithmetic, where
``0.07`` is a multiple of ``0.01`` (binary floating point says it is not).

The first violation (by :func:`jsonschema.exceptions.best_match`) raises :class:`SandboxError` (400)
naming the field by its wire path (``amount.subtotalIva``, ``capabilities[0]``). The reason is phrased
here rather than taken from jsonschema, whose messages quote the value received (a card number, a key).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

from jsonschema import Draft4Validator, validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.jsonschema import DRAFT4

from .errors import SandboxError
from .openapi import document

__all__ = ["PATTERN_WORDS", "check_body", "field_path"]

_DOCUMENT_URI = "urn:pasarela:sandbox:openapi"


def _multiple_of(validator: Validator, step: Any, instance: Any,
                 schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "number"):
        return
    try:
        if Decimal(str(instance)) % Decimal(str(step)) != 0:
            yield ValidationError(f"not a multiple of {step}")
    except InvalidOperation:  # a quotient too large for the context: not a sane amount either
        yield ValidationError(f"not a multiple of {step}")


_Validator = validators.extend(Draft4Validator, {"multipleOf": _multiple_of})  # type: ignore[no-untyped-call]


@cache
def _registry() -> Registry[Any]:
    registry: Registry[Any] = Registry().with_resource(_DOCUMENT_URI, DRAFT4.create_resource(document()))
    return registry


@cache
def _validator(component: str) -> Validator:
    schema = {"$ref": f"{_DOCUMENT_URI}#/components/schemas/{component}"}
    validator: Validator = _Validator(schema, registry=_registry())
    return validator


def field_path(parts: Sequence[Any]) -> str:
    """``["amount", "iva"]`` -> ``amount.iva``; ``["capabilities", 0]`` -> ``capabilities[0]``; ``[]`` -> body."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "body"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__


PATTERN_WORDS = {
    r"\S": "must not be blank",
    r"^[^@\s]+@[^@\s]+\.[^@\s.]+$": "must be an e-mail address, such as name@example.com",
    r"^https?://[^\s/?#]+[^\s]*$": "must be an http or https URL",
    r"^https?://": "must be an http or https URL",
    r"^[0-9]{12,19}$": "must be 12 to 19 digits",
    r"^(0[1-9]|1[0-2])$": "must be a month of two digits, 01 to 12",
    r"^[0-9]{2}$": "must be two digits",
    r"^[0-9]{3,4}$": "must be 3 or 4 digits",
    r"^[A-Za-z0-9]{20,28}$": "must be 20 to 28 letters or digits",
    r"^[0-9]{4}$": "must be 4 digits",
    r"^[0-9]{6}$": "must be 6 digits",
    r"^[0-9]{7}$": "must be 7 digits",
    r"^[0-9]{10}$": "must be 10 digits",
    r"^[0-9]{18}$": "must be 18 digits",
    r"^[0-9]{1,18}$": "must be 1 to 18 digits",
    r"^[0-9a-f]{32}$": "must be 32 lowercase hexadecimal digits",
    r"^[0-9a-f]{32}:[0-9a-f]+$": "must be the IV's 32 hexadecimal digits, a colon, and the ciphertext in hexadecimal",
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$": "must be a UUID in lowercase hexadecimal",
    r"^data:image/png;base64,": "must be a PNG image as a data URI",
    r"^[0-9]{6}X+[0-9]{4}$": "must be 6 digits, X's, then 4 digits",
    r"^[ -~]+$": "must be printable ASCII characters",   # the Idempotency-Key header (pasarela.sandbox.idempotency)
}
"""Each pattern of the OpenAPI document in words: a refusal is read by people (a payer, on the checkout's form), for
whom ``must match \\S`` says nothing. tests/sandbox/test_sandbox_units.py holds every pattern the document has to a line
here."""

_REASONS = {
    "minLength": "must have at least {expected} characters",
    "maxLength": "must have at most {expected} characters",
    "minimum": "must be at least {expected}",
    "maximum": "must be at most {expected}",
    "multipleOf": "must be a multiple of {expected}",
    "minItems": "must have at least {expected} items",
    "maxItems": "must have at most {expected} items",
    "uniqueItems": "lists a value twice",
    "anyOf": "matches none of the allowed forms",
}


def _reason(error: ValidationError) -> tuple[list[Any], str]:
    """Where (path parts) and why, never quoting the value itself."""
    path = list(error.absolute_path)
    # The attributes are typed "or Unset" for errors built by hand; errors from iter_errors have them all.
    keyword: Any = error.validator
    expected: Any = error.validator_value
    instance: Any = error.instance
    schema: Any = error.schema
    if keyword == "required":
        missing = next(name for name in expected if name not in instance)
        return [*path, missing], "is required"
    if keyword == "additionalProperties":
        allowed = set(schema.get("properties", {}))
        extra = next(name for name in instance if name not in allowed)
        return [*path, extra], "is not a member of this object"
    if keyword == "type":
        article = "an" if str(expected)[0] in "aeiou" else "a"
        return path, f"must be {article} {expected}, got {_kind(instance)}"
    if keyword == "enum":
        return path, f"must be one of {', '.join(map(str, expected))}"
    if keyword == "pattern":
        return path, PATTERN_WORDS.get(str(expected), f"must match {expected}")
    return path, _REASONS.get(str(keyword), "breaks the schema ({keyword})").format(keyword=keyword, expected=expected)


def check_body(body: Any, component: str) -> None:
    """Raise SandboxError (400) naming the first place ``body`` breaks ``#/components/schemas/<component>``."""
    error = best_match(_validator(component).iter_errors(body))
    if error is not None:
        parts, reason = _reason(error)
        raise SandboxError.invalid(field_path(parts), reason)
