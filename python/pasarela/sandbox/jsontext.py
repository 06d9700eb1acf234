"""JSON text for answers and storage: compact, ASCII (a lone surrogate a caller sent stays an escape, which
SQLite and UTF-8 can carry), Decimals written as the number they hold; and read back at any caller depth.

:func:`parse_body` is the one reading of a request body, for the handlers (:mod:`.endpoint`) and the access log
(:mod:`.access_log`) alike: UTF-8 JSON, no NaN or Infinity, every number within a double's range, nesting
bounded by a count made before any recursive code sees the value."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from typing import Any, Callable, Optional, Union

import orjson

from ..http import json_tree
from ..http.json_depth import nesting_too_deep

__all__ = ["MAX_BODY_DEPTH", "BodyError", "dumps", "loads", "number", "parse_body", "plain"]

MAX_BODY_DEPTH = 64
"""Deepest nesting of a request body the handlers take (the outermost object is level 1). The deepest shape of
the API is 3 levels (``amount.extraTaxes``) and merchant ``metadata`` is free-form: 64 leaves it room. Counted
before jsonschema, whose messages ``repr`` the value recursively: a body 999 levels deep overflowed Python's
stack inside it (a 500 on every JSON POST route, each with a traceback)."""
_LARGEST = sys.float_info.max
_LARGEST_DECIMAL = Decimal(_LARGEST)
_LARGEST_INT = int(_LARGEST)
_LARGEST_INT_DIGITS = len(str(_LARGEST_INT)) + 1  # with a sign


class BodyError(ValueError):
    """A request body that is not JSON the sandbox reads; ``reason`` says why, never quoting the body."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_OUT_OF_RANGE = "holds a number too large for a double (beyond 1.8e308)"


def _decimal(text: str) -> Decimal:
    value = Decimal(text)
    if abs(value) > _LARGEST_DECIMAL:  # 1e400: JavaScript reads Infinity, which JSON cannot write back
        raise BodyError(_OUT_OF_RANGE)
    return value


def _integer(text: str) -> int:
    if len(text) > _LARGEST_INT_DIGITS:  # (before int(): past 4300 digits it raises a ValueError of its own)
        raise BodyError(_OUT_OF_RANGE)
    value = int(text)
    if abs(value) > _LARGEST_INT:
        raise BodyError(_OUT_OF_RANGE)
    return value


def parse_body(body: bytes, max_depth: int = MAX_BODY_DEPTH) -> Any:
    """A request body as JSON: numbers with a fraction or an exponent as Decimal (amounts keep their digits),
    integers as int. :class:`BodyError` when it is not UTF-8 JSON (NaN and Infinity are not JSON), nests deeper
    than ``max_depth`` (by a count, the same at any caller depth) or holds a number a double cannot hold."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyError("is not valid JSON (not UTF-8)") from None
    if nesting_too_deep(text, max_depth) is not None:
        raise BodyError(f"nests deeper than {max_depth} levels")
    try:
        return json_tree.loads(text, parse_int=_integer, parse_float=_decimal, parse_constant=json_tree.refuse_constant)
    except BodyError:
        raise
    except (ValueError, RecursionError):
        raise BodyError("is not valid JSON") from None


def number(value: Any) -> Union[int, float]:
    """A Decimal as a JSON number: an int when whole, else the float of its digits (amounts have two decimals)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def loads(text: Union[str, bytes], parse_float: Optional[Callable[[str], Any]] = None) -> Any:
    """``json.loads(text, parse_float=parse_float)``, NaN and Infinity refused, the same at any caller depth
    (pasarela.http.json_tree.loads: text nesting deeper than MAX_DEPTH refused by the count, text within it that
    json's recursive scanner cannot finish from this stack read without recursion). ValueError (PayloadError for
    json_tree's refusals) when it is not JSON.

    Without ``parse_float``, orjson reads it first: the same values for every text it takes (it refuses NaN,
    nesting past 1024 and integers past 64 bits, which then go the way above), about ten times as fast, and the
    store reads a JSON column of every row it lists (the certification reads thousands)."""
    if parse_float is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json_tree.loads(text, parse_float=parse_float, parse_constant=json_tree.refuse_constant)


def dumps(value: Any) -> str:
    """Compact ASCII JSON, Decimals as numbers, NaN and Infinity refused: the same text from any caller depth
    (pasarela.http.json_tree.dumps: json.dumps, else its non-recursive writer)."""
    return json_tree.dumps(value, default=number)


def plain(value: Any) -> Any:
    """``value`` with its Decimals turned into ints and floats (what json.loads gives)."""
    return json.loads(dumps(value))
