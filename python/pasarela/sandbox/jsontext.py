"""JSON text for answers and storage: compact, ASCII (a lone surrogate a caller sent stays an escape, which
SQLite and UTF-8 can carry), Decimals written as the number they hold."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Union

__all__ = ["dumps", "number", "plain"]


def number(value: Any) -> Union[int, float]:
    """A Decimal as a JSON number: an int when whole, else the float of its digits (amounts have two decimals)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, default=number)


def plain(value: Any) -> Any:
    """``value`` with its Decimals turned into ints and floats (what json.loads gives)."""
    return json.loads(dumps(value))
