"""JSON text for answers and storage: compact, ASCII (a lone surrogate a caller sent stays an escape, which
SQLite and UTF-8 can carry), Decimals written as the number they hold; and read back at any caller depth."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Callable, Optional, Union

from ..http import json_tree

__all__ = ["dumps", "loads", "number", "plain"]


def number(value: Any) -> Union[int, float]:
    """A Decimal as a JSON number: an int when whole, else the float of its digits (amounts have two decimals)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def loads(text: Union[str, bytes], parse_float: Optional[Callable[[str], Any]] = None) -> Any:
    """``json.loads(text, parse_float=parse_float)``, NaN and Infinity refused, the same at any caller depth
    (pasarela.http.json_tree.loads: text nesting deeper than MAX_DEPTH refused by the count, text within it that
    json's recursive scanner cannot finish from this stack read without recursion). ValueError (PayloadError for
    json_tree's refusals) when it is not JSON."""
    return json_tree.loads(text, parse_float=parse_float, parse_constant=json_tree.refuse_constant)


def dumps(value: Any) -> str:
    """Compact ASCII JSON, Decimals as numbers, NaN and Infinity refused: the same text from any caller depth
    (pasarela.http.json_tree.dumps: json.dumps, else its non-recursive writer)."""
    return json_tree.dumps(value, default=number)


def plain(value: Any) -> Any:
    """``value`` with its Decimals turned into ints and floats (what json.loads gives)."""
    return json.loads(dumps(value))
