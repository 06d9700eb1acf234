"""The exact text of a payload: the bytes JSON.stringify writes for it, which Terminal.seal signs and encrypts.

Terminal.seal's fast path writes, signs and encrypts a plain dict in one C call (_binding.seal_payload). Every other
payload takes the one ladder here, fastest rung first, each rung writing the text exactly or leaving the payload to
the next; the refusals of a payload (PayloadError naming the path) are made on the way:

1. pasarela's C writer (_binding.stringify) writes a plain dict's text straight from its objects;
2. orjson writes the dict's compact text, exact but for key order and number format, which the C core then makes
   exact (flags SHORTEST_DIGITS), reporting a null (orjson's text of a NaN or an infinity) as a fact;
3. JSON text given as bytes or str goes to the C core as it is (flags 0), which canonicalizes it and reports a
   top-level "key" or "__proto__" as a fact (its seal refuses what is not JSON or not an object, and a "key", itself);
4. the pure-Python reference (reference.canonical_json) writes what the C core declines, or refuses it.

exact_text climbs rungs 1 to 3. Its result is sealed in one C call that makes the text of rungs 2 and 3 exact on
the way (_binding.seal_json: as two calls, a seal of 64 B of JSON text took 1.8x the time); only when that call cannot
vouch for the text alone (it declined it, or reports a fact) does vouch judge it, and give rung 4.
"""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import Any, Optional

import orjson

from .. import _binding
from ..errors import KEY_REASON, NOT_OBJECT_REASON, PROTO_REASON, PayloadError
from .reference import Payload
from .reference import canonical_json as reference_text
from .request import check_object_text, reserved_member

__all__ = ["ORJSON_OPTIONS", "ExactText", "compact_json", "exact_text", "finite", "orjson_default", "vouch"]

_STRINGIFIED = _binding.STRINGIFIED
_SHORTEST_DIGITS = _binding.SHORTEST_DIGITS
_FACT_NULL = _binding.FACT_NULL
_FACT_PROTO = _binding.FACT_PROTO
_FACT_KEY = _binding.FACT_KEY
_stringify = _binding.stringify
_dumps = orjson.dumps

# orjson writes exact JSON for the built-in types; everything else (subclasses, datetimes, dataclasses) goes to
# orjson_default, which takes Decimal and refuses the rest: the reference then decides. So do ints beyond
# ±(2**53 - 1) (OPT_STRICT_INTEGER): the reference writes those that are doubles, refuses the rest.
ORJSON_OPTIONS = (orjson.OPT_STRICT_INTEGER | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME
                  | orjson.OPT_PASSTHROUGH_DATACLASS)

ExactText = tuple[bytes, int, int]
"""exact_text's result, (json, flags, check_facts): JSON text, the flags with which the C core makes the exact text of
it (STRINGIFIED: json is that text already), and the facts of that text for vouch to judge."""


def orjson_default(value: Any) -> Any:
    if type(value) is Decimal:
        return float(value)  # correctly rounded, as JavaScript parses the decimal
    raise TypeError


def compact_json(value: Any) -> Optional[bytes]:
    """orjson's compact text of value, exact up to key order, number format and NaN (written as null); None when
    orjson refuses it (lone surrogates, nesting deeper than its 254 levels, big ints, non-str keys, other types)."""
    try:
        return _dumps(value, default=orjson_default, option=ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return None


def exact_text(payload: Payload, declined: bool = False) -> ExactText:
    """The payload's text up to the C core (rungs 1 to 3), or the reference's exact text (rung 4) where orjson refuses
    a dict. declined: the C writer has declined this dict already (Terminal.seal's fast path). Raises PayloadError
    for a dict with a top-level "key" or "__proto__" member and for what is not a dict, JSON text or None."""
    if type(payload) is dict:
        if not declined:
            text = _stringify(payload)  # None: declined
            if text is not None:
                return text, _STRINGIFIED, 0
        if "key" in payload or "__proto__" in payload:
            raise reserved_member(payload)
        try:  # compact_json, inlined (a function call is a few percent of a small seal)
            return _dumps(payload, default=orjson_default, option=ORJSON_OPTIONS), _SHORTEST_DIGITS, _FACT_NULL
        except (orjson.JSONEncodeError, TypeError):
            return reference_text(payload), _STRINGIFIED, 0
    if isinstance(payload, str):
        return payload.encode("utf-8", "surrogatepass"), 0, _FACT_PROTO
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload), 0, _FACT_PROTO
    if payload is None:
        return b"{}", _STRINGIFIED, 0
    if isinstance(payload, dict):  # a subclass: which orjson passes through (ORJSON_OPTIONS), so the reference decides
        return reference_text(payload), _STRINGIFIED, 0
    raise PayloadError("$", f"{NOT_OBJECT_REASON}; got {type(payload).__name__}")


def vouch(payload: Payload, facts: Optional[int], canonical: Optional[bytes] = None) -> Optional[bytes]:
    """The judgement of what the C core made of exact_text's JSON text of payload (flags SHORTEST_DIGITS or 0):
    facts, the FACT_* bits of its canonical text (None: it declined the text), and canonical, that text when the C
    core has not refused it for not being an object (_binding.canonicalize does not; its seal does, and a top-level
    "key" too). Returns None when the C core's canonical text is the exact text, else the reference's exact text;
    raises PayloadError for what is refused."""
    if facts is None:
        return reference_text(payload)
    if type(payload) is dict:  # orjson's text (exact_text refused a top-level "key" or "__proto__"): only a null needs
        # a look, which may stand for a NaN or an infinity (then the reference refuses it, naming its path)
        return None if not facts & _FACT_NULL or finite(payload) else reference_text(payload)
    if canonical is not None:
        check_object_text(canonical)
    if facts & _FACT_KEY:
        raise PayloadError("$.key", KEY_REASON)
    if facts & _FACT_PROTO:
        raise PayloadError("$.__proto__", PROTO_REASON)
    return None


def finite(value: Any) -> bool:
    """True when no float inside value is NaN or infinite (orjson writes those as null). Walked without recursion,
    so that it answers the same at any caller depth."""
    todo = [value]
    while todo:
        value = todo.pop()
        t = type(value)
        if t is float or t is Decimal:
            if float(value) - float(value) != 0.0:
                return False
        elif t is dict:
            todo.extend(value.values())
        elif t is list or t is tuple:
            todo.extend(value)
        elif isinstance(value, enum.Enum):
            todo.append(value.value)
    return True
