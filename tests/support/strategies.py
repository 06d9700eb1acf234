"""Hypothesis strategies for JSON payloads (Python values) and JSON texts."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

MAX_SAFE_INTEGER = 2**53 - 1

# ---------------------------------------------------------------------------------------------------
# Scalars

SPECIAL_CHARS = [
    "\x00", "\x01", "\x08", "\x09", "\x0a", "\x0b", "\x0c", "\x0d", "\x1f", "\x7f", "\x80", "\x9f",
    '"', "\\", "/", "'", "<", ">", "&",
    "\u00e9", "\u00a0", "\u2028", "\u2029", "\ufeff", "\ufffd", "\uffff",
    "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00",
    "\U0001f600", "\U00010000", "\U0010ffff",
]  # fmt: skip

# Every code point, surrogates included (a Python str may hold lone surrogates).
any_char = st.characters(exclude_categories=())
chars = st.one_of(any_char, st.sampled_from(SPECIAL_CHARS))
texts = st.one_of(st.text(), st.text(alphabet=chars, max_size=40))

INTEGER_LIKE_KEYS = ["0", "7", "10", "42", "4294967294", "4294967295", "4294967296", "01", "-1", "1.5",
                     "00", "1e3", " 1", "+1", "\u0661"]  # fmt: skip
keys = st.one_of(
    st.sampled_from(INTEGER_LIKE_KEYS),
    st.integers(min_value=0, max_value=2**33).map(str),
    st.sampled_from(["a", "b", "price", "items", "a b", "", "$x", "_", "\u00e9", "__proto__"]),
    texts,
)

BOUNDARY_FLOATS = [
    0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
    1.7976931348623157e308, -1.7976931348623157e308,
    1e21, 9.999999999999999e20, 1.0000000000000001e21, 1e20, 123456789012345680000.0,
    1e-6, 9.999999999999999e-7, 1.0000000000000002e-6, 1e-7, 1.5e-7, 1.23e-18,
    1e16, 1e15, 9007199254740991.0, 9007199254740992.0, 9007199254740993.0,
    100.0, 1.0, -1.0, 0.1, 0.2, 0.30000000000000004, 1e-4, 1e-5, 123e-20, 1.5, 2.5e300, -2.5e300,
]  # fmt: skip
floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(BOUNDARY_FLOATS),
    st.integers(min_value=-(2**70), max_value=2**70).map(float),
    st.floats(min_value=1e-8, max_value=1e-5),
    st.floats(min_value=1e19, max_value=1e23),
)
ints = st.one_of(
    st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
    st.sampled_from([0, 1, -1, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 2**31, 2**32 - 1, 10**15, 2**53 - 2]),
)
# Integers beyond 2**53: some are doubles (10**16, 2**60: JSON.stringify writes 1152921504606847000), most
# are not (2**53 + 1); int(float(i)) always is.
EXACT_BIG_INTS = [2**53, 2**53 + 2, 10**16, 10**17, 2**60, 2**63, 2**64, 10**20, 10**21, 2**70, 2**1000]
INEXACT_INTS = [2**53 + 1, 10**16 + 1, 2**60 + 1, 2**63 - 1, 2**64 - 1, 1152921504606847000, 10**21 + 1, 10**400]
signs = st.sampled_from([1, -1])
big_ints = st.builds(lambda i, s: s * i, st.integers(min_value=2**52, max_value=2**66), signs)
exact_big_ints = big_ints.map(lambda i: int(float(i)))
big_exact_doubles = st.builds(lambda i, s: s * float(i), st.integers(min_value=2**52, max_value=2**75), signs)
decimals = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False).filter(lambda d: math.isfinite(float(d))),
    st.sampled_from([Decimal("0"), Decimal("-0"), Decimal("1.10"), Decimal("0.1"), Decimal("1E+21"),
                     Decimal("12345678901234567890"), Decimal("1E-400"), Decimal("9007199254740993")]),
)  # fmt: skip
scalars = st.one_of(st.none(), st.booleans(), ints, floats, decimals, texts)


def _nest(depth: int, leaf: Any) -> Any:
    value: Any = leaf
    for _ in range(depth):
        value = [value]
    return value


def js_string(s: str) -> str:
    """The str with surrogate pairs joined: the same JavaScript string, one spelling."""
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _distinct_in_javascript(d: dict[str, Any]) -> bool:
    # "\ud83d\ude00" and "\U0001f600" are two Python keys but one JavaScript key (stringify refuses that).
    return len({js_string(k) for k in d}) == len(d)


def _dicts(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(keys, children, max_size=8).filter(_distinct_in_javascript)


def json_values() -> st.SearchStrategy[Any]:
    """Any payload :func:`stringify` accepts: nested dicts, lists and tuples of accepted scalars."""
    nested = st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=8),
            st.lists(children, max_size=8).map(tuple),
            _dicts(children),
        ),
        max_leaves=40,
    )
    deep = st.builds(_nest, st.integers(min_value=1, max_value=200), nested)
    return st.one_of(nested, nested, nested, deep)


def json_objects() -> st.SearchStrategy[dict[str, Any]]:
    """Dict payloads (the usual top level)."""
    return _dicts(json_values())


def sealable_objects() -> st.SearchStrategy[dict[str, Any]]:
    """Dict payloads seal accepts the members of: no top-level "key" or "__proto__" (refused by design)."""
    return json_objects().filter(lambda d: "key" not in d and "__proto__" not in d)


# ---------------------------------------------------------------------------------------------------
# JSON texts (for canonicalize_text): spelled in the many ways JSON allows.

whitespace = st.text(alphabet=" \t\n\r", max_size=3)

NUMBER_TEXTS = [
    "0", "-0", "-0.0", "0e0", "0E-5", "1E2", "1e+2", "1.0", "1.50", "0.10000000000000001", "100",
    "12345678901234567890", "-12345678901234567890", "123456789012345678901234567890.5",
    "9007199254740991", "9007199254740993", "-9007199254740993", "999999999999999", "9999999999999999",
    "1e400", "-1e400", "1e-400", "-1e-400", "5e-324", "2.4703282292062328e-324", "2.4703282292062327e-324",
    "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
    "1e21", "1e-7", "0.000001", "0.0000001", "1e20", "4294967295", "1E-0", "1e00001",
]  # fmt: skip
number_texts = st.one_of(
    st.sampled_from(NUMBER_TEXTS),
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?", fullmatch=True),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)


@st.composite
def string_texts(draw: st.DrawFn, value: st.SearchStrategy[str] = texts) -> str:
    """A JSON string literal for a drawn str, each character spelled raw or escaped at random.

    The result holds no raw lone surrogate, so it always encodes to UTF-8.
    """
    s = draw(value)
    out = ['"']
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    for ch in s:
        cp = ord(ch)
        style = draw(st.integers(min_value=0, max_value=3))
        must_escape = cp < 0x20 or ch in '"\\' or 0xD800 <= cp <= 0xDFFF
        if style == 0 and not must_escape:
            out.append(ch)
        elif style == 1 and ch in short:
            out.append(short[ch])
        elif style == 1 and ch == "/":
            out.append("\\/")
        elif cp > 0xFFFF:
            hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
            fmt = "\\u{:04X}\\u{:04X}" if style >= 2 else "\\u{:04x}\\u{:04x}"
            out.append(fmt.format(hi, lo))
        else:
            out.append(("\\u{:04X}" if style >= 2 else "\\u{:04x}").format(cp))
    out.append('"')
    return "".join(out)


def _array_text(draw: st.DrawFn, children: st.SearchStrategy[str]) -> str:
    items = draw(st.lists(children, max_size=6))
    if not items:
        return "[" + draw(whitespace) + "]"
    return "[" + ",".join(draw(whitespace) + item + draw(whitespace) for item in items) + "]"


def _object_text(draw: st.DrawFn, children: st.SearchStrategy[str]) -> str:
    # A small key pool makes duplicate keys frequent.
    pool = draw(st.lists(keys, min_size=1, max_size=4))
    members = draw(st.lists(st.tuples(st.sampled_from(pool), children), max_size=6))
    if not members:
        return "{" + draw(whitespace) + "}"
    parts = []
    for key, child in members:
        key_text = draw(string_texts(st.just(key)))
        parts.append(
            draw(whitespace) + key_text + draw(whitespace) + ":" + draw(whitespace) + child + draw(whitespace)
        )
    return "{" + ",".join(parts) + "}"


@st.composite
def _container_text(draw: st.DrawFn, children: st.SearchStrategy[str]) -> str:
    if draw(st.booleans()):
        return _array_text(draw, children)
    return _object_text(draw, children)


scalar_texts = st.one_of(
    number_texts,
    string_texts(),
    st.sampled_from(["true", "false", "null"]),
)


def json_texts() -> st.SearchStrategy[str]:
    """Valid JSON texts (str, no raw lone surrogates), with whitespace, escapes and duplicate keys."""
    nested = st.recursive(scalar_texts, _container_text, max_leaves=30)
    plain = st.one_of(json_values(), json_objects()).map(lambda v: json.dumps(to_json_compatible(v)))
    deep = st.integers(min_value=1, max_value=300).map(lambda n: "[" * n + "1" + "]" * n)
    body = st.one_of(nested, nested, plain, deep)
    return st.builds(lambda a, b, c: a + b + c, whitespace, body, whitespace)


# Characters an invalid-text mutation may insert (JSON syntax, near misses and non-JSON whitespace).
MUTATION_TOKENS = [
    "{", "}", "[", "]", ",", ":", '"', "\\", "'", "-", "+", ".", "e", "E", "0", "1", " ", "\t", "\n",
    "\x00", "\x0b", "\x0c", "\x1f", "\u00a0", "\ufeff", "\u2028", "x", "u", "/", "*",
    "NaN", "Infinity", "-Infinity", "true", "nul", "\\u12", "\\x41", "\\uD800", "\\'", "//", "/**/",
]  # fmt: skip


@st.composite
def mutated_json_texts(draw: st.DrawFn) -> str:
    """A JSON text with a few random insertions, deletions or replacements (often invalid)."""
    text = draw(json_texts())
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        pos = draw(st.integers(min_value=0, max_value=len(text)))
        op = draw(st.integers(min_value=0, max_value=2))
        token = draw(st.sampled_from(MUTATION_TOKENS))
        if op == 0:
            text = text[:pos] + token + text[pos:]
        elif op == 1:
            text = text[:pos] + text[pos + 1 :]
        else:
            text = text[:pos] + token + text[pos + 1 :]
    return text


def to_json_compatible(value: Any) -> Any:
    """Replace Decimals by the double they parse to (float(Decimal) rounds correctly, like JavaScript)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: to_json_compatible(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_compatible(v) for v in value]
    return value
