"""The pure-Python JSON.stringify reference against node, known cases, and every refusal."""

from __future__ import annotations

import collections
import datetime
import enum
import json
import math
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pasarela.errors import PayloadError
from pasarela.terminal.stringify import (
    MAX_DEPTH,
    _canonicalize_exact,
    canonicalize_text,
    format_number,
    stringify,
)
from support.node_oracle import NodeJSONError
from support.strategies import (
    BOUNDARY_FLOATS,
    floats,
    json_objects,
    json_texts,
    json_values,
    mutated_json_texts,
    to_json_compatible,
)

NodeStringify = Callable[[bytes], bytes]


def python_json_text(value: Any) -> bytes:
    """The payload as an ASCII JSON text node can parse back into the same JavaScript value."""
    return json.dumps(to_json_compatible(value), ensure_ascii=True, allow_nan=False).encode("ascii")


def exact_parser(text: bytes | str) -> bytes:
    """canonicalize_text forced onto the module's own parser (not CPython's C scanner fast path)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return _canonicalize_exact(text, any(0xD800 <= ord(c) <= 0xDFFF for c in text))


def node_canonical(node_stringify: NodeStringify, text: bytes) -> bytes | None:
    """node's JSON.stringify(JSON.parse(text)), or None when JSON.parse refuses the text."""
    try:
        return node_stringify(text)
    except NodeJSONError:
        return None


# ---------------------------------------------------------------------------------------------------
# (a) stringify == node


@given(json_values())
@example({"b": 1, "10": 2, "2": 3, "a": 4, "4294967295": 5, "4294967294": 6, "01": 7, "0": 8})
@example(["\ud83d\ude00", "\ud83d", "\ude00\ud83d", "\ud800\ud800\udc00", "\x00\x1f\x7f\u2028\u2029/"])
@example([Decimal("1.10"), Decimal("-0"), Decimal("12345678901234567890"), Decimal("1E-400")])
@example([0.1 + 0.2, -0.0, 5e-324, 1e21, 1e-7, 100.0, float(2**53 - 1)])
def test_stringify_matches_node(node_stringify: NodeStringify, value: Any) -> None:
    assert stringify(value) == node_stringify(python_json_text(value))


@given(json_objects())
def test_stringify_objects_match_node(node_stringify: NodeStringify, value: dict[str, Any]) -> None:
    assert stringify(value) == node_stringify(python_json_text(value))


@given(floats)
def test_format_number_matches_node(node_stringify: NodeStringify, x: float) -> None:
    assert format_number(x).encode("ascii") == node_stringify(repr(x).encode("ascii"))


def test_stringify_boundary_floats_match_node(node_stringify: NodeStringify) -> None:
    for x in BOUNDARY_FLOATS:
        for y in (x, -x):
            assert stringify(y) == node_stringify(repr(y).encode("ascii")), y


def test_stringify_max_depth_matches_node(node_stringify: NodeStringify) -> None:
    value: Any = 1
    for _ in range(MAX_DEPTH):
        value = [value]
    expected = b"[" * MAX_DEPTH + b"1" + b"]" * MAX_DEPTH
    assert stringify(value) == expected == node_stringify(expected)
    deep: dict[str, Any] = {}
    node: dict[str, Any] = deep
    for _ in range(MAX_DEPTH - 1):
        node["k"] = {}
        node = node["k"]
    text = b'{"k":' * (MAX_DEPTH - 1) + b"{}" + b"}" * (MAX_DEPTH - 1)
    assert stringify(deep) == text == node_stringify(text)


def test_stringify_accepts_subclasses_and_enums(node_stringify: NodeStringify) -> None:
    class Color(enum.IntEnum):
        RED = 1

    class Mode(str, enum.Enum):
        FAST = "fast"

    class MyInt(int):
        pass

    class MyStr(str):
        pass

    ordered = collections.OrderedDict([("z", 1), ("2", 2)])
    ordered.move_to_end("z")

    class Point(NamedTuple):
        x: int
        y: int

    point = Point(1, 2)
    value = {"c": Color.RED, "m": Mode.FAST, "i": MyInt(7), "s": MyStr("x"), "o": ordered, "p": point}
    expected = node_stringify(b'{"c":1,"m":"fast","i":7,"s":"x","o":{"2":2,"z":1},"p":[1,2]}')
    assert stringify(value) == expected == b'{"c":1,"m":"fast","i":7,"s":"x","o":{"2":2,"z":1},"p":[1,2]}'


def test_stringify_shared_containers_are_not_cycles() -> None:
    shared = [1, 2]
    assert stringify({"a": shared, "b": shared, "c": [shared, shared]}) == (
        b'{"a":[1,2],"b":[1,2],"c":[[1,2],[1,2]]}'
    )


def test_stringify_strings_exact() -> None:
    assert (
        stringify('"\\\b\f\n\r\t\x00\x1f\x7f/\u2028')
        == b'"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\x7f/\xe2\x80\xa8"'
    )
    assert stringify("\ud83d\ude00") == stringify("\U0001f600") == b'"\xf0\x9f\x98\x80"'
    assert stringify(["\udfff", "\ud800"]) == b'["\\udfff","\\ud800"]'
    assert stringify({"\ud800": "\ud800x"}) == b'{"\\ud800":"\\ud800x"}'


# ---------------------------------------------------------------------------------------------------
# (b) canonicalize_text == node


@given(json_texts())
@example(' {"a": 1, "b": [1E2, 1.0, 0.10000000000000001], "a": {"x": -0}} ')
@example(
    '["\\u00e9\\/\\uD83D\\uDE00\\ud83d\\ude00\\uDE00\\uD83D", 12345678901234567890, 1e400, -1e400, 1e-400]'
)
@example('{"2": 1, "1": 2, "b": 3, "1": 4, "4294967295": 5, "4294967294": 6}')
@example("\t\r\n 0 \n")
@example('{"0":0,"x\U0002ef6a":1,"x\\ud87b\\udf6a":2,"\\ud87b\\udf6a":3,"\U0002ef6a":4}')
def test_canonicalize_text_matches_node(node_stringify: NodeStringify, text: str) -> None:
    data = text.encode("utf-8")
    expected = node_stringify(data)
    assert canonicalize_text(data) == expected
    assert canonicalize_text(text) == expected
    assert exact_parser(text) == expected


@given(mutated_json_texts())
@example("[1,]")
@example('{"a":1,}')
@example("NaN")
@example("-Infinity")
@example("\ufeff1")
@example("01")
@example("1.")
@example(".5")
@example("1e")
@example("+1")
@example('"\\x41"')
@example('"\\u12"')
@example('"\t"')
@example("'a'")
@example("\u00a01")
@example("[1]x")
@example("")
@example(" ")
@example("{'a':1}")
@example('{"a" 1}')
@example("[1 2]")
def test_canonicalize_text_accepts_and_refuses_like_node(node_stringify: NodeStringify, text: str) -> None:
    data = text.encode("utf-8")
    expected = node_canonical(node_stringify, data)
    if expected is None:
        for canonicalize in (canonicalize_text, exact_parser):
            with pytest.raises(PayloadError) as info:
                canonicalize(data)
            assert info.value.path == "$"
            assert "byte offset" in info.value.reason
    else:
        assert canonicalize_text(data) == expected
        assert exact_parser(data) == expected


def test_canonicalize_text_known_cases() -> None:
    assert canonicalize_text(b"12345678901234567890") == b"12345678901234567000"
    assert canonicalize_text(b"1E400") == b"null"
    assert canonicalize_text(b"-0") == b"0"
    assert canonicalize_text(b"1e-400") == b"0"
    assert canonicalize_text(b'{"a":1,"b":2,"a":3}') == b'{"a":3,"b":2}'
    assert canonicalize_text(b'"\\uD800"') == b'"\\ud800"'
    assert canonicalize_text('"\ud800"') == b'"\\ud800"'


def test_canonicalize_text_str_with_raw_surrogates(node_stringify: NodeStringify) -> None:
    # A str may hold raw surrogates; a raw high one and an escaped low one still make one character.
    text = '{"\ud83d\ude00":1,"\U0001f600":2,"\ud83d\\ude00":3,"a":"\ud800","b":"\udfff\ud800"}'
    expected = node_stringify(text.encode("utf-8", "surrogatepass"))
    assert expected == b'{"\xf0\x9f\x98\x80":3,"a":"\\ud800","b":"\\udfff\\ud800"}'
    assert canonicalize_text(text) == expected
    assert exact_parser(text) == expected


def test_canonicalize_text_depth(node_stringify: NodeStringify) -> None:
    ok = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert canonicalize_text(ok) == ok == node_stringify(ok)
    assert exact_parser(ok) == ok
    too_deep = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    with pytest.raises(PayloadError) as info:
        canonicalize_text(too_deep)
    assert info.value.path == "$"
    assert "nesting deeper than" in info.value.reason
    assert f"byte offset {MAX_DEPTH}" in info.value.reason


@pytest.mark.parametrize(
    ("text", "offset"),
    [(b'{"a":1,}', 7), (b"[1,2", 4), ('["\u00e9\u00e9", x]'.encode(), 9), (b'"\xc3\xa9\x01"', 3)],
)
def test_canonicalize_text_error_offsets(text: bytes, offset: int) -> None:
    with pytest.raises(PayloadError) as info:
        canonicalize_text(text)
    assert info.value.path == "$"
    assert info.value.reason.endswith(f"at byte offset {offset}")


def test_canonicalize_text_invalid_utf8() -> None:
    with pytest.raises(PayloadError) as info:
        canonicalize_text(b'["ok", "\xff"]')
    assert info.value.path == "$"
    assert "invalid UTF-8 at byte offset 8" in info.value.reason


# ---------------------------------------------------------------------------------------------------
# (c) format_number known cases

FORMAT_CASES = [
    (1e21, "1e+21"),
    (-1e21, "-1e+21"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (1e-6, "0.000001"),
    (1.5e-6, "0.0000015"),
    (123e-20, "1.23e-18"),
    (100.0, "100"),
    (0.0, "0"),
    (-0.0, "0"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (0.1 + 0.2, "0.30000000000000004"),
    (float(2**53 - 1), "9007199254740991"),
    (1e16, "10000000000000000"),
    (1e20, "100000000000000000000"),
    (123456789012345680000.0, "123456789012345680000"),
    (9.999999999999999e20, "999999999999999900000"),
    (-2.5e300, "-2.5e+300"),
    (1e-5, "0.00001"),
    (0.5, "0.5"),
    (-1.5, "-1.5"),
    (1.2345e-5, "0.000012345"),
    (2.2250738585072014e-308, "2.2250738585072014e-308"),
]


@pytest.mark.parametrize(("x", "expected"), FORMAT_CASES)
def test_format_number_known_cases(x: float, expected: str) -> None:
    assert format_number(x) == expected
    assert stringify(x) == expected.encode("ascii")


def test_format_number_refuses_non_finite() -> None:
    for x in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="finite"):
            format_number(x)


# ---------------------------------------------------------------------------------------------------
# (d) refusals: PayloadError (a ValueError) with the exact path


def refused(value: object) -> PayloadError:
    with pytest.raises(PayloadError) as info:
        stringify(value)
    assert isinstance(info.value, ValueError)
    assert info.value.reason
    assert str(info.value) == f"{info.value.path}: {info.value.reason}"
    return info.value


def test_stringify_nan() -> None:
    err = refused({"items": [1, 2, {"price": float("nan")}]})
    assert err.path == "$.items[2].price"
    assert "NaN" in err.reason


def test_stringify_infinity() -> None:
    assert refused(math.inf).path == "$"
    err = refused({"a": [0, -math.inf]})
    assert err.path == "$.a[1]"
    assert "-Infinity" in err.reason


INEXACT = "integer is not exactly representable as a JavaScript number (an IEEE double): JavaScript would round it"


def test_stringify_int_not_a_double() -> None:
    err = refused({"n": 2**53 + 1})
    assert err.path == "$.n"
    assert err.reason == INEXACT  # the path and the reason, never the value itself
    assert "9007199254740993" not in str(err)
    err = refused({"items": [1, 2, {"price": 10**16 + 1}]})
    assert err.path == "$.items[2].price"
    assert "1000" not in str(err)


def test_stringify_negative_int_not_a_double() -> None:
    err = refused({"x y": -(2**53) - 1})
    assert err.path == '$["x y"]'
    assert err.reason == INEXACT
    assert "9007199254740993" not in str(err)


def test_stringify_huge_int() -> None:
    err = refused([10**5000])  # beyond the largest double: refused, not an OverflowError
    assert err.path == "$[0]"
    assert err.reason == INEXACT


@pytest.mark.parametrize(
    ("value", "js"),
    [
        (2**53, "9007199254740992"),
        (-(2**53), "-9007199254740992"),
        (2**53 + 2, "9007199254740994"),
        (10**16, "10000000000000000"),  # JSON.stringify(1e16)
        (2**60, "1152921504606847000"),  # exact, written as JavaScript writes the double 2**60
        (2**64, "18446744073709552000"),
        (10**21, "1e+21"),
        (2**70, "1.1805916207174113e+21"),
        (-(2**1023), "-8.98846567431158e+307"),
    ],
)
def test_stringify_int_that_is_a_double_is_written_as_javascript_writes_it(value: int, js: str) -> None:
    assert float(value) == value
    assert stringify({"n": value}) == b'{"n":' + js.encode() + b"}"


def test_stringify_int_enum_not_a_double() -> None:
    class Big(enum.IntEnum):
        HUGE = 2**60 + 1
        EXACT = 2**60

    assert refused({"e": Big.HUGE}).path == "$.e"
    assert stringify({"e": Big.EXACT}) == b'{"e":1152921504606847000}'


def test_stringify_non_str_key() -> None:
    err = refused({"a b": {1: 2}})
    assert err.path == '$["a b"]'
    assert "int" in err.reason
    assert "1" in err.reason


def test_stringify_non_str_keys_of_other_types() -> None:
    for key in (None, 1.5, ("t",), b"k", True):
        err = refused({"outer": [{"ok": 1, key: 2}]})
        assert err.path == "$.outer[0]"
        assert type(key).__name__ in err.reason
        assert repr(key) in err.reason


def test_stringify_bytes() -> None:
    err = refused({"data": b"\x00"})
    assert err.path == "$.data"
    assert "bytes" in err.reason


def test_stringify_bytearray() -> None:
    err = refused([bytearray(b"x")])
    assert err.path == "$[0]"
    assert "bytearray" in err.reason


def test_stringify_set() -> None:
    err = refused({"tags": {"a", "b"}})
    assert err.path == "$.tags"
    assert "set" in err.reason


def test_stringify_frozenset() -> None:
    err = refused([[frozenset()]])
    assert err.path == "$[0][0]"
    assert "frozenset" in err.reason


def test_stringify_datetime() -> None:
    err = refused({"when": datetime.datetime(2024, 1, 2, 3, 4, 5)})
    assert err.path == "$.when"
    assert "datetime" in err.reason


def test_stringify_date() -> None:
    err = refused({"día": datetime.date(2024, 1, 2)})
    assert err.path == '$["día"]'
    assert "date" in err.reason


def test_stringify_writes_uuid_as_its_text() -> None:
    assert stringify({"id": uuid.UUID(int=1)}) == b'{"id":"00000000-0000-0000-0000-000000000001"}'


def test_stringify_writes_enum_member_as_its_value() -> None:
    class Color(enum.Enum):
        RED = 1
        BLUE = (1.5, "b")

    assert stringify({"a": Color.RED, "b": [Color.BLUE]}) == b'{"a":1,"b":[[1.5,"b"]]}'


def test_stringify_enum_value_refused_at_its_path() -> None:
    class Bad(enum.Enum):
        NAN = float("nan")

    err = refused({"x": [Bad.NAN]})
    assert err.path == "$.x[0]"
    assert "NaN" in err.reason


def test_stringify_float_enum(node_stringify: NodeStringify) -> None:
    class Rate(float, enum.Enum):
        HALF = 0.5

    assert stringify([Rate.HALF]) == b"[0.5]" == node_stringify(b"[0.5]")


def test_stringify_arbitrary_object() -> None:
    class Thing:
        pass

    err = refused({"$ok": {"_x": [None, Thing()]}})
    assert err.path == "$.$ok._x[1]"
    assert "Thing" in err.reason


def test_stringify_complex() -> None:
    err = refused({"z": 1j})
    assert err.path == "$.z"
    assert "complex" in err.reason


def test_stringify_cycle() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    err = refused({"a": loop})
    assert err.path == "$.a[1]"
    assert err.reason == "cycle: this container contains itself"


def test_stringify_dict_cycle() -> None:
    d: dict[str, Any] = {"k": []}
    d["k"].append(d)
    err = refused(d)
    assert err.path == "$.k[0]"
    assert "cycle" in err.reason


def test_stringify_too_deep() -> None:
    value: Any = []
    for _ in range(MAX_DEPTH):
        value = [value]
    err = refused(value)
    assert err.path == "$" + "[0]" * MAX_DEPTH
    assert "nesting deeper than 1000" in err.reason


def test_stringify_decimal_nan() -> None:
    err = refused({"amount": Decimal("NaN")})
    assert err.path == "$.amount"
    assert "NaN" in err.reason


def test_stringify_decimal_infinity() -> None:
    assert refused([Decimal("-Infinity")]).path == "$[0]"


def test_stringify_decimal_overflow() -> None:
    err = refused({"amount": Decimal("1e400")})
    assert err.path == "$.amount"
    assert "Infinity" in err.reason


def test_stringify_surrogate_pair_key_collision() -> None:
    err = refused({"a": [{"\U0001f600": 1, "\ud83d\ude00": 2}]})
    assert err.path == "$.a[0]"
    assert "same JavaScript string" in err.reason
    # Keys differing only in lone surrogates are distinct JavaScript keys: accepted.
    lone_keys = dict([(chr(0xD83D), 1), (chr(0xDE00), 2)])  # (a literal confuses ruff's F601)
    assert stringify(lone_keys) == b'{"\\ud83d":1,"\\ude00":2}'


def test_stringify_non_json_key_path_quoting() -> None:
    err = refused({'we"ird': {"0": {"": {"a-b": [math.nan]}}}})
    assert err.path == '$["we\\"ird"]["0"][""]["a-b"][0]'


@given(st.sampled_from([math.nan, math.inf, -math.inf, 2**53 + 1, b"x", {1}]), st.integers(0, 5))
def test_stringify_refusal_path_in_nested_lists(bad: object, depth: int) -> None:
    value: Any = bad
    for _ in range(depth):
        value = [0, value]
    assert refused(value).path == "$" + "[1]" * depth
