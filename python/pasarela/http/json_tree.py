"""JSON.parse (and compact json.dumps) without recursion, below every module that reads or writes JSON:
:func:`loads` is ``json.loads`` at any caller depth (json's recursive scanner first; where it cannot finish from the
caller's stack, :func:`parse_tree`), used by the payloads' and webhooks' parser (:mod:`pasarela.terminal.stringify`),
the sandbox's stored rows and request bodies (:mod:`pasarela.sandbox.jsontext`) and audit records
(:mod:`pasarela.http.audit`); :func:`dumps` is compact ``json.dumps`` at any caller depth (the sandbox's stored rows
and answers, :class:`~pasarela.http.audit.JsonlAuditLog`'s lines)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, Optional, cast

from ..errors import PayloadError
from .json_depth import MAX_DEPTH, nesting_too_deep

__all__ = [
    "SURROGATE", "JsonSyntaxError", "dumps", "join_surrogate_pairs", "loads", "parse_tree", "refuse_constant",
    "syntax_error", "write_compact",
]

_INF = math.inf
_NINF = -math.inf
SURROGATE = re.compile("[\ud800-\udfff]").search
"""Whether a str holds a surrogate code point (a match) or not (None)."""


def join_surrogate_pairs(text: str) -> str:
    """Join each surrogate pair into the code point it encodes (JavaScript cannot tell them apart)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# Always matches (possibly empty), hence the cast.
_WS = cast("Callable[[str, int], re.Match[str]]", re.compile(r"[ \t\n\r]*").match)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?").match
_SIMPLE_STRING = re.compile(r'"([^"\\\x00-\x1f]*)"').match
# The longest valid string prefix (unrolled loop: linear time, no catastrophic backtracking).
_STRING_PREFIX = re.compile(
    r'"([^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*)'
).match
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))")
_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(m: re.Match[str]) -> str:
    hex_digits = m.group(1)
    if hex_digits is not None:
        return chr(int(hex_digits, 16))
    return _SHORT_ESCAPES[m.group(2)]


class JsonSyntaxError(Exception):
    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.message = message
        self.index = index


def _describe_char(s: str, i: int) -> str:
    if i >= len(s):
        return "unexpected end of JSON text"
    c = s[i]
    if " " < c < "\x7f":
        return f"unexpected character {c!r}"
    return f"unexpected character U+{ord(c):04X}"


def _parse_string(s: str, i: int, raw_surrogates: bool) -> tuple[str, int]:
    """Parse the JSON string starting at s[i] == '"'; return (value, index after the closing quote).

    Surrogate pairs in the value (escaped, raw in a str input, or one of each) are joined into one code
    point, so that strings JavaScript sees as equal (keys in particular) are equal here too.
    """
    m = _SIMPLE_STRING(s, i)
    if m is not None:
        if raw_surrogates:
            return join_surrogate_pairs(m.group(1)), m.end()
        return m.group(1), m.end()
    m = _STRING_PREFIX(s, i)
    assert m is not None  # s[i] == '"'
    end = m.end()
    if end >= len(s):
        raise JsonSyntaxError("unterminated string", i)
    c = s[end]
    if c == '"':
        value = _ESCAPE.sub(_unescape, m.group(1))
        if SURROGATE(value):
            value = join_surrogate_pairs(value)
        return value, end + 1
    if c == "\\":
        raise JsonSyntaxError("invalid escape sequence in string", end)
    raise JsonSyntaxError(f"unescaped control character U+{ord(c):04X} in string", end)


def _member_key(s: str, i: int, raw_surrogates: bool, expected: str) -> tuple[str, int]:
    """An object member's key at s[i] and its ':': (the key, the index of its value, whitespace skipped)."""
    if not s.startswith('"', i):
        raise JsonSyntaxError(_describe_char(s, i) + f" (expected {expected})", i)
    key, i = _parse_string(s, i, raw_surrogates)
    i = _WS(s, i).end()
    if not s.startswith(":", i):
        raise JsonSyntaxError(_describe_char(s, i) + " (expected ':')", i)
    return key, _WS(s, i + 1).end()


def parse_tree(s: str, raw_surrogates: bool, parse_int: Optional[Callable[[str], Any]] = None,
           parse_float: Optional[Callable[[str], Any]] = None) -> object:
    """JSON.parse of *s* into Python values: dict, list, str, int/float (a double), bool and None.

    Numbers that overflow to ±Infinity become None, since that is what JSON.stringify writes for them.
    parse_int: what an integer literal becomes (as json.loads takes it); by default an int up to 15 digits, else
    the double. parse_float: what a number with a fraction or exponent becomes (as json.loads takes it); by default
    the double.
    """
    n = len(s)
    i = _WS(s, 0).end()
    stack: list[Any] = []  # open containers (list or dict)
    keys: list[Any] = []  # for each open dict, the key whose value is being parsed
    val: object
    while True:
        # ---- parse one value starting at s[i] ----
        c = s[i] if i < n else ""
        if c == '"':
            val, i = _parse_string(s, i, raw_surrogates)
        elif c == "{" or c == "[":
            if len(stack) >= MAX_DEPTH:
                raise JsonSyntaxError(f"nesting deeper than {MAX_DEPTH} arrays/objects", i)
            i = _WS(s, i + 1).end()
            if c == "[":
                if s.startswith("]", i):
                    val = []
                    i += 1
                else:
                    stack.append([])
                    keys.append(None)
                    continue
            elif s.startswith("}", i):
                val = {}
                i += 1
            else:
                key, i = _member_key(s, i, raw_surrogates, "a string key or '}'")
                stack.append({})
                keys.append(key)
                continue
        elif c == "-" or "0" <= c <= "9":
            m = _NUMBER(s, i)
            if m is None:
                raise JsonSyntaxError("invalid number", i)
            text = m.group()
            i = m.end()
            if m.lastindex is None and parse_int is not None:
                val = parse_int(text)
            elif m.lastindex is not None and parse_float is not None:
                val = parse_float(text)
            elif m.lastindex is None and len(text) <= 15:
                val = int(text)
            else:
                f = float(text)
                val = None if f in (_INF, _NINF) else f
        elif c == "t" and s.startswith("true", i):
            val = True
            i += 4
        elif c == "f" and s.startswith("false", i):
            val = False
            i += 5
        elif c == "n" and s.startswith("null", i):
            val = None
            i += 4
        else:
            raise JsonSyntaxError(_describe_char(s, i) + " (expected a JSON value)", i)

        # ---- store the value in its container; close finished containers ----
        while True:
            i = _WS(s, i).end()
            if not stack:
                if i != n:
                    raise JsonSyntaxError(_describe_char(s, i) + " after the JSON value", i)
                return val
            top = stack[-1]
            c = s[i] if i < n else ""
            if keys[-1] is None:  # array
                top.append(val)
                close = "]"
            else:  # object: a repeated key keeps its first position and takes the last value, as in JavaScript
                top[keys[-1]] = val
                close = "}"
            if c == ",":
                i = _WS(s, i + 1).end()
                if close == "}":
                    keys[-1], i = _member_key(s, i, raw_surrogates, "a string key")
                break
            if c == close:
                i += 1
                val = stack.pop()
                keys.pop()
                continue
            raise JsonSyntaxError(f"{_describe_char(s, i)} (expected ',' or '{close}')", i)


def refuse_constant(name: str) -> object:
    """json's parse_constant refusing NaN, Infinity and -Infinity (not JSON, as JSON.parse says)."""
    raise ValueError(f"{name} is not JSON")


def syntax_error(s: str, exc: JsonSyntaxError) -> PayloadError:
    """The PayloadError (path ``$``) for a syntax error parse_tree found in *s*, with its byte offset."""
    offset = len(s[: exc.index].encode("utf-8", "surrogatepass"))
    return PayloadError("$", f"JSON syntax error: {exc.message} at byte offset {offset}", offset)


def loads(text: bytes | str, parse_int: Optional[Callable[[str], Any]] = None,
          parse_float: Optional[Callable[[str], Any]] = None,
          parse_constant: Optional[Callable[[str], Any]] = None) -> Any:
    """``json.loads(text, parse_int=..., parse_float=..., parse_constant=...)`` of JSON text whatever the caller's
    stack: nesting deeper than MAX_DEPTH is refused (PayloadError, path ``$``) before json's recursive scanner sees
    it, and a text within the limit that the scanner cannot finish from this stack (RecursionError) is read by
    parse_tree, which makes the same values (and, having no NaN/Infinity literals, refuses them as syntax).
    Bytes are decoded as json.loads decodes them (UTF-8, or UTF-16/32 by their first bytes). Not JSON: json's
    ValueError, or PayloadError from parse_tree."""
    s = text.decode(json.detect_encoding(text), "surrogatepass") if isinstance(text, (bytes, bytearray)) else text
    if nesting_too_deep(s) is None:
        try:
            return json.loads(s, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant)
        except RecursionError:
            pass
    try:  # (beyond MAX_DEPTH, refused by parse_tree's own count, with the offset of the first level too deep)
        return parse_tree(s, SURROGATE(s) is not None, int if parse_int is None else parse_int, parse_float)
    except JsonSyntaxError as exc:
        raise syntax_error(s, exc) from None


# --------------------------------------------------------------------------------------------------
# json.dumps(value, separators=(",", ":"), default=default, ...), without recursion


def dumps(value: Any, default: Callable[[Any], Any], *, ensure_ascii: bool = True, allow_nan: bool = False) -> str:
    """``json.dumps(value, separators=(",", ":"), default=default, ensure_ascii=..., allow_nan=...)`` at any caller
    depth: json's recursive encoder first, and where it cannot finish from this stack (RecursionError),
    :func:`write_compact`."""
    try:
        return json.dumps(value, separators=(",", ":"), default=default, ensure_ascii=ensure_ascii, allow_nan=allow_nan)
    except RecursionError:
        return write_compact(value, default, ensure_ascii=ensure_ascii, allow_nan=allow_nan)


_END: Any = object()  # what next() gives past a container's last item
_LITERALS = {None: "null", True: "true", False: "false"}  # (looked up only for these three: 1 == True)


def _float_text(x: float, allow_nan: bool) -> str:
    if x != x or x in (_INF, _NINF):
        if not allow_nan:
            raise ValueError(f"Out of range float values are not JSON compliant: {x!r}")
        return "NaN" if x != x else "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)


def _key_text(key: Any, quote: Callable[[str], str], allow_nan: bool) -> str:
    """A member name as json writes it: str as is, float, bool, None and int as their JSON text, quoted."""
    if isinstance(key, str):
        text: str = key
    elif isinstance(key, float):
        text = _float_text(key, allow_nan)
    elif key is True or key is False or key is None:
        text = _LITERALS[key]
    elif isinstance(key, int):
        text = int.__repr__(key)
    else:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return quote(text)


def write_compact(value: Any, default: Callable[[Any], Any], *, ensure_ascii: bool = True,
                  allow_nan: bool = False) -> str:
    """The text ``json.dumps(value, separators=(",", ":"), default=default, ensure_ascii=..., allow_nan=...)``
    gives, written with a stack of its own instead of recursion (ValueError for a container holding itself and,
    unless allow_nan, for NaN and Infinity; TypeError for a member name json refuses; what ``default`` raises for
    what it refuses)."""
    quote = encode_basestring_ascii if ensure_ascii else encode_basestring
    parts: list[str] = []
    write = parts.append
    open_containers: list[tuple[Iterator[Any], bool, int]] = []  # (its items, whether a dict, its id)
    written_first: list[bool] = []
    open_ids: set[int] = set()
    v = value
    while True:
        defaulted: set[int] = set()  # the objects default was given for this value (a cycle through default)
        while True:  # write v, or open it
            if v is None or v is True or v is False:
                write(_LITERALS[v])
            elif isinstance(v, str):
                write(quote(v))
            elif isinstance(v, int):
                write(int.__repr__(v))
            elif isinstance(v, float):
                write(_float_text(v, allow_nan))
            elif isinstance(v, (list, tuple, dict)):
                if id(v) in open_ids:
                    raise ValueError("Circular reference detected")
                is_dict = isinstance(v, dict)
                if not v:
                    write("{}" if is_dict else "[]")
                else:
                    write("{" if is_dict else "[")
                    items: Iterator[Any] = iter(v.items()) if isinstance(v, dict) else iter(v)
                    open_containers.append((items, is_dict, id(v)))
                    written_first.append(False)
                    open_ids.add(id(v))
            else:
                if id(v) in defaulted or id(v) in open_ids:
                    raise ValueError("Circular reference detected")
                defaulted.add(id(v))
                v = default(v)
                continue
            break
        while open_containers:  # move on to the next value, closing finished containers
            remaining, is_dict, container_id = open_containers[-1]
            item = next(remaining, _END)
            if item is _END:
                open_containers.pop()
                written_first.pop()
                open_ids.discard(container_id)
                write("}" if is_dict else "]")
                continue
            if written_first[-1]:
                write(",")
            written_first[-1] = True
            if is_dict:
                key, v = item
                write(_key_text(key, quote, allow_nan))
                write(":")
            else:
                v = item
            break
        else:
            return "".join(parts)

