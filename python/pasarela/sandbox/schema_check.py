"""Checking a request body against the JSON Schema of the sandbox's own OpenAPI document.

The document (:mod:`.openapi`) is the single source of the request shapes: the same schema objects
are served at ``/openapi.json`` and checked here, so the two cannot drift. Only the keywords the
document uses are implemented (:data:`KEYWORDS`; a test keeps the document inside that set), with
JSON Schema's meaning. The first violation raises :class:`SandboxError` (400) naming the field by
its wire path (``amount.subtotalIva``, ``capabilities[0]``).

Numbers arrive as ``int`` or ``Decimal`` (the body is parsed with ``parse_float=Decimal``, so
amounts keep the digits that were sent).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import cache
from typing import Any

from .errors import SandboxError

__all__ = ["KEYWORDS", "check"]

KEYWORDS = frozenset(
    {
        "$ref", "type", "properties", "required", "additionalProperties", "enum", "pattern", "minLength",
        "maxLength", "minimum", "maximum", "multipleOf", "items", "minItems", "maxItems", "uniqueItems",
        # annotations, no effect on validation
        "description", "title", "example", "examples", "format", "default",
    }
)
_REF_PREFIX = "#/components/schemas/"


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__


def _is(value: object, expected: str) -> bool:
    actual = _kind(value)
    if expected == "integer":
        return actual == "number" and (isinstance(value, int) or Decimal(str(value)) % 1 == 0)
    return actual == expected


def _join(path: str, member: str) -> str:
    return f"{path}.{member}" if path else member


def check(value: Any, schema: Mapping[str, Any], components: Mapping[str, Any], path: str = "") -> None:
    """Raise SandboxError (400) at the first place ``value`` breaks ``schema``."""
    where = path or "body"
    if "$ref" in schema:
        check(value, components[str(schema["$ref"])[len(_REF_PREFIX):]], components, path)
        return
    expected = schema.get("type")
    if expected is not None and not _is(value, expected):
        article = "an" if expected[0] in "aeiou" else "a"
        raise SandboxError.invalid(where, f"must be {article} {expected}, got {_kind(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise SandboxError.invalid(where, f"must be one of {', '.join(map(str, schema['enum']))}")
    if isinstance(value, str):
        _check_string(value, schema, where)
    elif _kind(value) == "number":
        _check_number(Decimal(str(value)) if isinstance(value, Decimal) else Decimal(value), schema, where)
    elif isinstance(value, list):
        _check_array(value, schema, components, path, where)
    elif isinstance(value, Mapping):
        _check_object(value, schema, components, path)


def _check_string(value: str, schema: Mapping[str, Any], where: str) -> None:
    if len(value) < schema.get("minLength", 0):
        raise SandboxError.invalid(where, f"must have at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise SandboxError.invalid(where, f"must have at most {schema['maxLength']} characters")
    if "pattern" in schema and _regex(schema["pattern"]).search(value) is None:
        raise SandboxError.invalid(where, f"must match {schema['pattern']}")


def _check_number(value: Decimal, schema: Mapping[str, Any], where: str) -> None:
    if "minimum" in schema and value < Decimal(str(schema["minimum"])):
        raise SandboxError.invalid(where, f"must be at least {schema['minimum']}")
    if "maximum" in schema and value > Decimal(str(schema["maximum"])):
        raise SandboxError.invalid(where, f"must be at most {schema['maximum']}")
    if "multipleOf" in schema and value % Decimal(str(schema["multipleOf"])) != 0:
        raise SandboxError.invalid(where, f"must be a multiple of {schema['multipleOf']}")


def _check_array(value: list[Any], schema: Mapping[str, Any], components: Mapping[str, Any], path: str,
                 where: str) -> None:
    if len(value) < schema.get("minItems", 0):
        raise SandboxError.invalid(where, f"must have at least {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise SandboxError.invalid(where, f"must have at most {schema['maxItems']} items")
    if schema.get("uniqueItems") and len({repr(item) for item in value}) != len(value):
        raise SandboxError.invalid(where, "lists a value twice")
    if "items" in schema:
        for index, item in enumerate(value):
            check(item, schema["items"], components, f"{where}[{index}]")


def _check_object(value: Mapping[str, Any], schema: Mapping[str, Any], components: Mapping[str, Any],
                  path: str) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in value:
            raise SandboxError.invalid(_join(path, name), "is required")
    additional = schema.get("additionalProperties", True)
    for name, member in value.items():
        if name in properties:
            check(member, properties[name], components, _join(path, name))
        elif additional is False:
            raise SandboxError.invalid(_join(path, name), "is not a member of this object")
        elif isinstance(additional, Mapping):
            check(member, additional, components, _join(path, name))
