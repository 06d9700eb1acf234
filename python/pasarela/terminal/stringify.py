"""Pure-Python reference for the exact bytes JavaScript's ``JSON.stringify`` writes.

The payment service computes ``JSON.stringify(JSON.parse(text))`` on the JSON it receives and signs
those bytes, so both sides must produce them byte for byte:

* :func:`stringify` writes a Python payload exactly as ``JSON.stringify`` writes the JavaScript value
  the payload stands for, and refuses (with :class:`~pasarela.errors.PayloadError`) every value that
  has no exact JavaScript counterpart instead of silently changing it.
* :func:`canonicalize_text` is ``JSON.stringify(JSON.parse(text))`` for a JSON text received as is.
* :func:`format_number` is ``Number.prototype.toString`` for a finite double.

This module is the reference the C core is tested and benchmarked against; it never imports it.
"""

from __future__ import annotations

import datetime
import enum
import json
import json.scanner
import math
import re
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

from ..errors import PayloadError
from ..http.json_depth import MAX_DEPTH, nesting_too_deep
from ..http.json_tree import (
    SURROGATE,
    JsonSyntaxError,
    join_surrogate_pairs,
    loads,
    parse_tree,
    refuse_constant,
    syntax_error,
)

__all__ = ["MAX_DEPTH", "canonicalize_text", "format_number", "loads", "nesting_too_deep", "stringify"]


_MAX_SAFE_INTEGER = 2**53 - 1  # every int up to here is a double; beyond, _int_token checks
_INF = math.inf
_NINF = -math.inf

# Object keys JavaScript treats as array indices: written first, in ascending numeric order.
# (At most ten digits here; ten-digit candidates are compared with 2**32 - 1 separately.)
_INDEX_KEY = re.compile(r"0|[1-9][0-9]{0,9}").fullmatch
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*").fullmatch
_LONE_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")

# encode_basestring (C-accelerated in CPython) quotes a str and escapes exactly what JSON.stringify
# escapes except lone surrogates: " \\ \b \f \n \r \t as short escapes, other U+0000-U+001F as \u00xx
# with lowercase hex, everything else (including U+007F, U+2028, U+2029 and "/") raw.
_quote: Callable[[str], str] = encode_basestring


class _Refused(Exception):
    """Internal: the value at the current path has no exact JavaScript counterpart."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --------------------------------------------------------------------------------------------------
# Numbers


def format_number(x: float) -> str:
    """Return ``Number.prototype.toString()`` of the finite double *x* (ECMA-262 Number::toString).

    The shortest digits that round-trip come from Python's ``repr`` (both pick the shortest string
    and, among those, the one closest to *x*); they are then laid out as ECMA-262 prescribes: plain
    decimal notation when ``1e-6 <= |x| < 1e21``, exponent notation (``1e+21``, ``1.5e-7``) otherwise.
    ``-0.0`` is written ``"0"``.
    """
    x = float(x)
    if x != x or x in (_INF, _NINF):
        raise ValueError(f"format_number needs a finite number, got {x!r}")
    if x == 0.0:
        return "0"
    r = repr(x)
    if "e" not in r:
        # repr uses plain notation only for 1e-4 <= |x| < 1e16, where JavaScript does too.
        return r[:-2] if r.endswith(".0") else r
    return _format_exponent_repr(r)


def _format_exponent_repr(r: str) -> str:
    """Lay out the digits of a finite, nonzero float repr per ECMA-262 Number::toString."""
    sign = ""
    if r[0] == "-":
        sign, r = "-", r[1:]
    mantissa, _, exp_text = r.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    stripped = digits.lstrip("0")
    # The value is 0.<digits> * 10**n.
    n = len(int_part) + exponent - (len(digits) - len(stripped))
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp_str = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + exp_str
    return sign + digits[0] + "." + digits[1:] + exp_str


def _float_token(x: float) -> str:
    """JSON.stringify of a Python float (refusing NaN and the infinities)."""
    if x != x:
        raise _Refused("NaN is not a JSON number (JSON.stringify would write null)")
    if x in (_INF, _NINF):
        raise _Refused(
            f"{'-' if x < 0 else ''}Infinity is not a JSON number (JSON.stringify would write null)"
        )
    if x == 0.0:
        return "0"
    r = float.__repr__(x)
    if "e" not in r:
        return r[:-2] if r.endswith(".0") else r
    return _format_exponent_repr(r)


_INEXACT_INTEGER = (
    "integer is not exactly representable as a JavaScript number (an IEEE double): JavaScript would round it"
)


def _int_token(x: int) -> str:
    """JSON.stringify of the double the int stands for: refused unless that double is exactly the int.

    Beyond 2**53 only some ints are doubles (10**16 and 2**60 are, 2**53 + 1 is not); JavaScript writes
    those as it writes any double (2**60 as 1152921504606847000, the shortest digits that read back as it).
    """
    if -_MAX_SAFE_INTEGER <= x <= _MAX_SAFE_INTEGER:
        return int.__repr__(x)
    try:
        f = float(x)
    except OverflowError:
        raise _Refused(_INEXACT_INTEGER) from None
    if f != x:  # int == float compares the exact values
        raise _Refused(_INEXACT_INTEGER)
    return _float_token(f)


def _decimal_token(d: Decimal) -> str:
    if not d.is_finite():
        raise _Refused(f"Decimal {str(d)!r} is not a finite number")
    f = float(d)
    if f in (_INF, _NINF):
        raise _Refused(
            f"Decimal {str(d)!r} overflows to {'-' if f < 0 else ''}Infinity as a JavaScript number"
        )
    return _float_token(f)


# --------------------------------------------------------------------------------------------------
# Values that are not plain dict/list/tuple/str/int/float/bool/None


def _describe(v: object) -> str:
    t = type(v)
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{name} {text}"


def _scalar_token(v: object) -> str:
    """Token for a scalar of a non-exact type, or raise _Refused. Containers never reach here."""
    if isinstance(v, bool):  # pragma: no cover - bool cannot be subclassed
        return "true" if v else "false"
    if isinstance(v, int):
        return _int_token(int(v))
    if isinstance(v, str):
        return _quote(str.__str__(v))
    if isinstance(v, float):
        return _float_token(float.__float__(v))
    if isinstance(v, Decimal):
        return _decimal_token(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        raise _Refused(f"{type(v).__name__} is not JSON: decode or base64-encode it into a str first")
    if isinstance(v, (set, frozenset)):
        raise _Refused(f"{type(v).__name__} is not JSON: it has no order; convert it to a sorted list")
    if isinstance(v, (datetime.date, datetime.time, datetime.timedelta)):
        raise _Refused(f"{_describe(v)} is not JSON: format it as a str (or a number) first")
    if isinstance(v, uuid.UUID):
        return _quote(str(v))  # its canonical text, as orjson, pydantic and FastAPI write it
    if isinstance(v, complex):
        raise _Refused(f"{_describe(v)} is not JSON: complex numbers have no JSON form")
    raise _Refused(
        f"{_describe(v)} is not JSON: only dict, list, tuple, str, int, float, Decimal, bool "
        "and None are accepted"
    )


# --------------------------------------------------------------------------------------------------
# Serialization


def _key_path(key: str) -> str:
    if _IDENTIFIER(key):
        return "." + key
    return "[" + _quote(str.__str__(key)) + "]"


class _Frame:
    __slots__ = ("is_dict", "items", "n", "next", "oid")

    def __init__(self, items: Sequence[Any], is_dict: bool, oid: int) -> None:
        self.items = items
        self.n = len(items)
        self.next = 0
        self.is_dict = is_dict
        self.oid = oid


def _path(stack: list[_Frame]) -> str:
    """JSON path of the value currently being written (the element each frame last handed out)."""
    parts = ["$"]
    for frame in stack:
        i = frame.next - 1
        if frame.is_dict:
            parts.append(_key_path(frame.items[i][0]))
        else:
            parts.append(f"[{i}]")
    return "".join(parts)


def _ordered_items(d: dict[Any, Any]) -> list[tuple[str, object]]:
    """The members of *d* in JavaScript property order; raises _Refused for a non-str key."""
    key_types = set(map(type, d))
    if key_types and key_types != {str}:
        for k in d:
            if not isinstance(k, str):
                raise _Refused(f"object keys must be str, found key {k!r} of type {type(k).__qualname__}")
    items: list[tuple[str, object]] = list(d.items())
    index_keys = [k for k in filter(_INDEX_KEY, d) if len(k) < 10 or int(k) < 4294967295]
    if not index_keys:
        return items
    index_set = set(index_keys)
    first = sorted((kv for kv in items if kv[0] in index_set), key=lambda kv: int(kv[0]))
    first.extend(kv for kv in items if kv[0] not in index_set)
    return first


def _fix_surrogates(text: str) -> bytes:
    """Escape lone surrogates like JSON.stringify, join surrogate pairs, and encode as UTF-8."""
    text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return join_surrogate_pairs(text).encode("utf-8")


def _check_joined_keys(value: object) -> None:
    """Refuse objects with two keys that are one JavaScript string once surrogate pairs are joined.

    (``"\\ud83d\\ude00"`` and ``"\\U0001f600"`` are different Python keys but the same JavaScript
    property.) Only called when the output holds surrogates, so the common path never pays for it.
    """
    todo: list[tuple[object, str]] = [(value, "$")]
    while todo:
        v, path = todo.pop()
        if isinstance(v, dict):
            seen: dict[str, str] = {}
            for k, child in v.items():
                js_key = join_surrogate_pairs(k) if SURROGATE(k) else k
                if js_key in seen:
                    raise PayloadError(
                        path,
                        f"keys {seen[js_key]!r} and {k!r} are the same JavaScript string "
                        "(a surrogate pair and the character it encodes)",
                    )
                seen[js_key] = k
                if isinstance(child, (dict, list, tuple)):
                    todo.append((child, path + _key_path(k)))
        elif isinstance(v, (list, tuple)):
            todo.extend(
                (child, f"{path}[{i}]") for i, child in enumerate(v) if isinstance(child, (dict, list, tuple))
            )


def stringify(value: object) -> bytes:
    """UTF-8 bytes of exactly what ``JSON.stringify`` writes for the JavaScript value *value* stands for.

    Accepted: dict (str keys), list and tuple, str, bool, None, int that is exactly a double (all within
    ±2**53, and beyond it those like 10**16; written as JavaScript writes that double), finite float
    and finite :class:`~decimal.Decimal` (written as the double it parses to); also :class:`uuid.UUID`
    (written as its canonical text) and :class:`enum.Enum` members (written as their value). Anything else raises
    :class:`~pasarela.errors.PayloadError` naming the JSON path of the offending value.
    """
    parts: list[str] = []
    ap = parts.append
    stack: list[_Frame] = []
    active: set[int] = set()
    v: Any = value  # dispatched on its exact type below
    try:
        while True:
            # ---- write v (or open it, if it is a non-empty container) ----
            t = type(v)
            if t is str:
                ap(_quote(v))
            elif t is int:
                if -_MAX_SAFE_INTEGER <= v <= _MAX_SAFE_INTEGER:
                    ap(int.__repr__(v))
                else:
                    ap(_int_token(v))
            elif t is float:
                ap(_float_token(v))
            elif v is None:
                ap("null")
            elif v is True:
                ap("true")
            elif v is False:
                ap("false")
            elif isinstance(v, (dict, list, tuple)):
                if len(stack) >= MAX_DEPTH:
                    raise _Refused(f"nesting deeper than {MAX_DEPTH} arrays/objects")
                oid = id(v)
                if oid in active:
                    raise _Refused("cycle: this container contains itself")
                items: Sequence[Any]
                is_dict, items = (True, _ordered_items(v)) if isinstance(v, dict) else (False, v)
                if items:
                    ap("{" if is_dict else "[")
                    stack.append(_Frame(items, is_dict, oid))
                    active.add(oid)
                else:
                    ap("{}" if is_dict else "[]")
            elif t is Decimal:
                ap(_decimal_token(v))
            elif isinstance(v, enum.Enum) and not isinstance(v, (int, str, float)):
                v = v.value  # written as its value, as orjson, pydantic and FastAPI write it
                continue
            else:
                ap(_scalar_token(v))

            # ---- move on to the next value, closing finished containers ----
            while stack:
                frame = stack[-1]
                i = frame.next
                if i < frame.n:
                    frame.next = i + 1
                    if frame.is_dict:
                        k, v = frame.items[i]
                        if i:
                            ap(",")
                        ap(_quote(k))
                        ap(":")
                    else:
                        v = frame.items[i]
                        if i:
                            ap(",")
                    break
                stack.pop()
                active.discard(frame.oid)
                ap("}" if frame.is_dict else "]")
            else:
                break
    except _Refused as exc:
        raise PayloadError(_path(stack), exc.reason) from None

    text = "".join(parts)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        _check_joined_keys(value)
        return _fix_surrogates(text)


# --------------------------------------------------------------------------------------------------
# JSON.parse: pasarela.http.json_tree (parse_tree, loads), below both this module and pasarela.http.audit


# CPython's C scanner (json.scanner.c_make_scanner) reads exactly the JSON.parse grammar, save for the
# NaN/Infinity/-Infinity literals, which refuse_constant refuses. The pure-Python scanner is laxer
# (its \d matches non-ASCII digits), so without the C scanner every text takes the exact parser.
_FAST_DECODER = json.JSONDecoder(parse_constant=refuse_constant)
_HAVE_C_SCANNER = getattr(json.scanner, "c_make_scanner", None) is not None


def _decode_text(text: bytes | str) -> tuple[str, bool]:
    """The text as a str, and whether it holds raw surrogates (only a str input can)."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            return bytes(text).decode("utf-8"), False
        except UnicodeDecodeError as exc:
            raise PayloadError("$", f"invalid UTF-8 at byte offset {exc.start}", exc.start) from None
    if isinstance(text, str):
        s = str.__str__(text)
        return s, SURROGATE(s) is not None
    raise TypeError(f"canonicalize_text needs bytes or str, not {type(text).__qualname__}")


def _canonicalize_exact(s: str, raw_surrogates: bool) -> bytes:
    """JSON.stringify(JSON.parse(s)) on this module's own parser (exact for every input)."""
    try:
        value = parse_tree(s, raw_surrogates)
    except JsonSyntaxError as exc:
        raise syntax_error(s, exc) from None
    return stringify(value)


def canonicalize_text(text: bytes | str) -> bytes:
    """Exactly ``JSON.stringify(JSON.parse(text))`` as UTF-8 bytes.

    *text* is UTF-8 bytes (decoded strictly; a byte order mark is not JSON whitespace, so it is refused
    like JSON.parse refuses U+FEFF) or a str. Syntax errors and nesting deeper than :data:`MAX_DEPTH`
    raise :class:`~pasarela.errors.PayloadError` with path ``$`` and the byte offset in the reason.
    """
    s, raw_surrogates = _decode_text(text)
    if _HAVE_C_SCANNER and not raw_surrogates and nesting_too_deep(s) is None:
        # Fast path: CPython's C scanner builds the same values JSON.parse would (a repeated key keeps
        # its first position and takes the last value; escaped surrogate pairs are joined). Whatever
        # it cannot do exactly -- syntax errors (for the message and offset), integers JSON.parse rounds,
        # numbers overflowing to Infinity, nesting deeper than this caller's stack allows -- makes it raise or
        # makes stringify refuse, and the exact parser takes over (as for text nested deeper than MAX_DEPTH,
        # which the recursive scanner never sees).
        try:
            value = _FAST_DECODER.decode(s)
        except (ValueError, RecursionError):
            pass
        else:
            try:
                return stringify(value)
            except PayloadError:
                pass
    return _canonicalize_exact(s, raw_surrogates)
