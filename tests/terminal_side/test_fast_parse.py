"""The C reader of opened payloads (csrc/cpython/parse.c, through pasarela._fastcall): Terminal.open returns what it
builds from the verified plaintext, so wherever it does not decline a text it must give exactly orjson.loads's
values (the general path it replaces), types included (int or float, -0.0, key order, the last of repeated keys).
Its declines must leave the text to that path, and open must read the headers in C exactly as Python read them."""

from __future__ import annotations

import contextlib
import json
import math
import struct
import sysconfig
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import Headers

import pasarela
from pasarela import AuthError, _fastcall, canonical_json  # _fastcall: CPython
from pasarela import reference as reference_impl
from pasarela.terminal.stringify import format_number
from support.finalizers import finalizer_at_each_collection
from support.json_text import text_depth
from support.node_oracle import NodeJSONError
from support.strategies import (
    BOUNDARY_FLOATS,
    floats,
    json_texts,
    keys,
    mutated_json_texts,
    number_texts,
    sealable_objects,
    string_texts,
    to_json_compatible,
)

# keys are remembered across calls on CPython with the GIL; a free-threaded build gives each call its own
SHARED_KEYS = not sysconfig.get_config_var("Py_GIL_DISABLED")
BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
NOON = 1_764_072_000


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types, floats to the bit (-0.0 is not 0.0), dicts in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def parse(text: bytes) -> Any:
    """The reader's value, or the text itself when it declines it."""
    return _fastcall.parse(text)


def check(text: bytes) -> bool:
    """The reader gives orjson.loads's value, or declines: a text orjson refuses is always declined. Returns
    whether it was read."""
    value = parse(text)
    try:
        expected = orjson.loads(text)
    except orjson.JSONDecodeError:
        assert value is text, text
        return False
    if value is text:
        return False
    assert same(value, expected), (text, value, expected)
    return True


@st.composite
def compact_texts(draw: st.DrawFn) -> str:
    """JSON texts with no whitespace (as JSON.stringify writes them), strings and keys spelled with escapes or
    raw at random, repeated keys frequent."""
    def container(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        arrays = st.lists(children, max_size=40).map(lambda items: "[" + ",".join(items) + "]")
        members = st.lists(st.tuples(st.one_of(keys, st.sampled_from(["sku", "qty", "price"])).flatmap(
            lambda k: string_texts(st.just(k))), children), max_size=6)
        objects = members.map(lambda m: "{" + ",".join(k + ":" + v for k, v in m) + "}")
        return st.one_of(arrays, objects)
    scalars = st.one_of(number_texts, string_texts(), st.sampled_from(["true", "false", "null"]),
                        floats.map(format_number), floats.map(repr).filter(lambda t: t[-1].isdigit()))
    return draw(st.recursive(scalars, container, max_leaves=40))


def test_the_reader_is_at_work() -> None:
    assert same(parse(b'{"a":[1,1.5,-0.0,"x",true,false,null,{}]}'),
                {"a": [1, 1.5, -0.0, "x", True, False, None, {}]})


@given(compact_texts())
def test_wherever_it_reads_it_gives_orjsons_values(text: str) -> None:
    check(text.encode("utf-8"))


@given(sealable_objects())
def test_it_reads_every_canonical_text_of_plain_payloads(payload: dict[str, Any]) -> None:
    """What open hands it: JSON.stringify's text. Declined only for what it leaves to the general path."""
    text = canonical_json(payload)
    read = check(text)
    declinable = b"\\ud" in text.lower() or any(len(run) > 18 for run in _integer_runs(text)) or text_depth(text) > 64
    assert read or declinable, text


@given(mutated_json_texts())
def test_texts_orjson_refuses_are_declined_and_nothing_crashes(text: str) -> None:
    check(text.encode("utf-8", "surrogatepass"))


@given(st.one_of(floats, st.sampled_from(BOUNDARY_FLOATS)))
def test_floats_are_the_nearest_doubles_on_both_of_its_ways(x: float) -> None:
    """Clinger's fast path (digits up to 2**53, exponents within 22) and PyOS_string_to_double for the rest."""
    for text in (format_number(x), repr(x), f"{x:.17e}", f"{x:.3e}", f"{x:.25f}"):
        integer_literal = text.lstrip("-").isdigit()  # (as an int: declined beyond 18 digits)
        assert (check(b"[" + text.encode() + b"]") or (integer_literal and len(text.lstrip("-")) > 18)
                or math.isinf(float(text))), text  # (rounded to 4 digits, the largest doubles overflow)


@pytest.mark.parametrize("text", [
    "0.1", "0.3", "1999.99", "125.5", "9007199254740993.0", "9007199254740992.5", "1e22", "1e23", "1.5e22",
    "123456789012345678e5", "0.1e-30", "4.9e-324", "5e-324", "2.2250738585072011e-308", "1.7976931348623157e308",
    "1.7976931348623158e308", "0.000001", "1e-7", "12345678901234567890.5", "0.00000000000000000000001",
    "1" + "0" * 30 + ".5", "7.0e+0", "1E5", "1e-0", "-0.0", "0e500", "0.0e-500", "1e-400",
])  # fmt: skip
def test_number_texts_at_the_edges_of_the_fast_path(text: str) -> None:
    assert check(b"[" + text.encode() + b",0]"), text


@pytest.mark.parametrize(("text", "value"), [
    (b"0", 0), (b"-0", 0), (b"7", 7), (b"-9007199254740993", -9007199254740993),
    (b"999999999999999999", 999999999999999999), (b"-999999999999999999", -999999999999999999),
])  # fmt: skip
def test_integer_literals_up_to_18_digits_are_ints(text: bytes, value: int) -> None:
    assert same(parse(b"[" + text + b"]"), [value])


@pytest.mark.parametrize("text", [
    # not JSON, or not as JSON.stringify writes it (orjson then gives the value or the error)
    b"", b" {}", b"{} ", b'{"a" :1}', b"[1,]", b"{,}", b'{"a":1,}', b"[01]", b"[1.]", b"[.5]", b"[1e]", b"[-]",
    b"[+1]", b"[tru]", b"[nulll]", b"[1]x", b'{"a":1', b'"abc', b'"\\x"', b'"\\u12"', b'"\x01"', b"[NaN]",
    # what it leaves to the general path: 19 digits and more, infinities, surrogate escapes, bad UTF-8, depth
    b"[1234567890123456789]", b"[-12345678901234567890]", b"[1e400]", b"[-1e400]", b'["\\ud800"]',
    b'["\\ud83d\\ude00"]', b'["\\udfff"]', b'["\xff"]', b'["\xed\xa0\x80"]', b'{"\xc3":1}',
    b"[" * 65 + b"]" * 65, b'{"a":' * 65 + b"1" + b"}" * 65,
])  # fmt: skip
def test_what_it_declines(text: bytes) -> None:
    assert parse(text) is text
    check(text)


def test_nesting_of_64_is_read() -> None:
    assert check(b"[" * 64 + b"]" * 64) and check(b'{"a":' * 64 + b"1" + b"}" * 64)


def test_escapes_are_replaced() -> None:
    text = b'{"k\\n\\"":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\\u00e9\\u20ac\\uFFFF\xc3\xa9\xf0\x9f\x98\x80"}'
    assert check(text)
    assert parse(text) == {'k\n"': '"\\/\b\f\n\r\t\x00\x1f\u00e9\u20ac\uffff\u00e9\U0001f600'}
    long = b'["' + b"\\n" * 5000 + b'x"]'  # its unescaped text made on the heap, not on the stack
    assert parse(long) == ["\n" * 5000 + "x"]


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 64, 1000])
def test_arrays_of_every_length(n: int) -> None:
    """Up to 32 items are held until the list is made at its size; the rest are appended."""
    values: list[Any] = [i * 1.5 if i % 2 else {"i": i} for i in range(n)]
    assert same(parse(json.dumps(values, separators=(",", ":")).encode()), values)


def test_keys_remembered_across_calls_stay_right() -> None:
    """Keys are remembered by their text in 64 slots: many keys, of equal lengths, first and last bytes, meet in
    the same slots; each is still read as its own."""
    names = [f"k{i:03d}x" for i in range(1000)] + [f"a{'b' * i}" for i in range(70)] + ["\u00e9t\u00e9", "\u20ac"]
    for round_ in range(3):
        for start in range(0, len(names), 7):
            chunk = names[start:start + 7]
            payload = {name: [round_, {name: start}] for name in chunk}
            assert same(parse(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()), payload)


def test_a_key_read_again_is_the_same_str() -> None:
    first, second = parse(b'{"currency":1}'), parse(b'[{"currency":2}]')
    assert (next(iter(first)) is next(iter(second[0]))) == SHARED_KEYS


def test_parse_refuses_what_is_not_bytes() -> None:
    with pytest.raises(TypeError, match="parse: text: expected bytes"):
        _fastcall.parse("{}")  # type: ignore[arg-type]


# --- Terminal.open: the headers read in C, as Python read them -------------------------------------------------

class GetCounting(Mapping[str, str]):
    """A mapping that is not a dict: read through its get method."""

    def __init__(self, items: Mapping[str, str]) -> None:
        self._items = dict(items)
        self.reads: list[str] = []

    def __getitem__(self, key: str) -> str:
        self.reads.append(key)
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Exploding(dict):  # type: ignore[type-arg]
    def get(self, key: Any, default: Any = None) -> Any:
        raise RuntimeError("the mapping's own error")


def _outcome(terminal: Any, headers: Any, body: bytes) -> Any:
    try:
        return terminal.open("POST", headers, body, now=NOON)
    except AuthError as exc:
        return ("refused", exc.reason)
    except TypeError as exc:  # a header value that is not a str, as the slower way reads it
        return ("TypeError", str(exc))


def _sealed(payload: Any = None) -> tuple[dict[str, str], bytes]:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload or {"amount": 100, "ref": "o-1"}, timestamp=NOON)
    return dict(sealed.headers), sealed.body or b""


HEADER_FORMS = [
    lambda h: h,
    lambda h: Headers(h),  # Starlette's (case-insensitive), as an ASGI app has them
    lambda h: Headers({k.lower(): v for k, v in h.items()}),
    lambda h: {**{k: v for k, v in h.items() if k != "Authorization"}, "authorization": h["Authorization"]},
    lambda h: {**h, "Authorization": None, "authorization": h["Authorization"]},  # None: then the lower case
    lambda h: {**h, "authorization": "Basic " + "0" * 128},  # "Authorization" first
    lambda h: {k: v for k, v in h.items() if k != "Authorization"},
    lambda h: {k: v for k, v in h.items() if k != "timestamp"},
    lambda h: {**h, "timestamp": NOON},  # not a str
    lambda h: {**h, "timestamp": str(NOON)[:-1] + "\ud800"},  # a lone surrogate
    lambda h: {**h, "timestamp": str(NOON)[:-1] + "\u0661"},  # a digit, not ASCII
    lambda h: {**h, "Authorization": h["Authorization"][:-1] + "\u00e9"},  # not ASCII
    lambda h: {**h, "Authorization": h["Authorization"].encode()},  # bytes
    lambda h: {**h, "Authorization": "Basic " + "0" * 128},  # a forged signature
    lambda h: {**h, "timestamp": str(NOON + 301)},  # stale
    lambda h: GetCounting(h),
]


@pytest.mark.parametrize("form", range(len(HEADER_FORMS)))
def test_open_reads_every_form_of_headers_as_the_reference_does(form: int) -> None:
    headers, body = _sealed()
    given_headers = HEADER_FORMS[form](headers)
    fast = _outcome(pasarela.Terminal(BUSINESS_CODE, SERIAL), given_headers, body)
    expected = _outcome(reference_impl.Terminal(BUSINESS_CODE, SERIAL), given_headers, body)
    assert fast == expected
    if form == 0:
        assert fast == {"amount": 100, "ref": "o-1"}


def test_a_mapping_is_read_through_its_get_method() -> None:
    headers, body = _sealed()
    counting = GetCounting(headers)
    assert pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", counting, body, now=NOON) == {"amount": 100,
                                                                                               "ref": "o-1"}
    assert counting.reads == ["timestamp", "Authorization"]


def test_the_mappings_own_error_is_raised() -> None:
    headers, body = _sealed()
    with pytest.raises(RuntimeError, match="the mapping's own error"):
        pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", Exploding(headers), body, now=NOON)


@given(sealable_objects())
def test_open_gives_back_every_sealed_payload_as_the_reference_reads_it(payload: dict[str, Any]) -> None:
    headers, body = _sealed(payload)
    opened = pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", headers, body, now=NOON)
    assert same(opened, reference_impl.Terminal(BUSINESS_CODE, SERIAL).open("POST", headers, body, now=NOON))


def _integer_runs(text: bytes) -> list[bytes]:
    runs, current, in_string, escaped = [], b"", False, False
    for byte in text:
        c = bytes([byte])
        if in_string:
            in_string = escaped or c != b'"'
            escaped = not escaped and c == b"\\"
        elif c == b'"':
            in_string = True
        if not in_string and c.isdigit():
            current += c
            continue
        if current:
            runs.append(current)
        current = b""
    return runs + ([current] if current else [])


def test_the_helpers_of_these_tests() -> None:
    assert _integer_runs(b'{"a1":12,"b":[3.5,"7"]}') == [b"12", b"3", b"5"]
    assert text_depth(b'[[["]]]]"]]]') == 3 and text_depth(b'[[["[[[["]]]') == 3 and text_depth('[1,"\\"[",[]]') == 2
    assert same(-0.0, -0.0) and not same(0.0, -0.0) and not same(1, 1.0) and not same({"a": 1, "b": 2},
                                                                                      {"b": 2, "a": 1})


def test_an_open_from_a_finalizer_during_the_build_does_not_change_the_payload() -> None:
    """The payload is built with objects that the cyclic GC counts: a collection may run during the build, and a
    finalizer may open another request on this thread, in the same workspace. The outer payload must still be
    read from its own plaintext (the reader works on a copy of it)."""
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    outer_payload = {"items": [{"sku": f"SKU-{n}", "n": n} for n in range(60)], "who": "outer"}
    inner_payload = {"items": [{"sku": "x" * 40, "n": -1}] * 60, "who": "inner"}
    outer, inner = terminal.seal(outer_payload, timestamp=NOON), terminal.seal(inner_payload, timestamp=NOON)
    opened_inside: list[Any] = []

    def reopen() -> bool:
        if len(opened_inside) >= 30:
            return False
        opened_inside.append(terminal.open("POST", inner.headers, inner.body, now=NOON))
        return True

    with finalizer_at_each_collection(reopen):
        opened = terminal.open("POST", outer.headers, outer.body, now=NOON)
    assert len(opened_inside) > 1  # collections ran during the outer open, opening the inner request
    assert all(inside == inner_payload for inside in opened_inside)
    assert opened == outer_payload


# --- the canonical reading (pasarela_parse_canonical_json): what open makes of a text signed as it was sent ------
# Terminal.open first checks the signature of the decrypted text as sent (pasarela_open_request_as_sent) and has
# the reader confirm, as it builds the payload, that the text is its own JSON.stringify(JSON.parse(text)): the C
# core then need not canonicalize it. Whatever a holder of the key signed, the reader must confirm nothing else.

def check_canonical(text: bytes, node_stringify: Callable[[bytes], bytes]) -> bool:
    """Where the canonical reading reads a text, node's JSON.stringify(JSON.parse(text)) is the text itself, the
    value is orjson's and a payload the server accepts (no top-level "key" or "__proto__"). Returns whether it read
    the text."""
    value = _fastcall.parse_canonical(text)
    if value is None:
        return False
    assert node_stringify(text) == text, text
    assert same(value, orjson.loads(text)), text
    assert isinstance(value, dict) and "key" not in value and "__proto__" not in value, text
    return True


# texts JSON.stringify writes that the reader confirms, one form of each kind of token at least
CANONICAL_TEXTS = [
    b"{}", b'{"a":1}', b'{"a":0}', b'{"a":-5}', b'{"a":123456789012345}', b'{"a":-123456789012345}',
    b'{"a":100}', b'{"a":1e+21}', b'{"a":1.5}', b'{"a":-0.5}', b'{"a":125.5}', b'{"a":1999.99}',
    b'{"a":0.000001}', b'{"a":0.0000015}', b'{"a":1.25e-7}', b'{"a":1e-7}', b'{"a":-1.5e+300}',
    b'{"a":9.99999999999999e+307}', b'{"a":1e-307}',
    b'{"a":0.123456789012345}', b'{"a":12345678901234.5}', b'{"a":1.23456789012345e+21}',
    b'{"a":0.30000000000000004}', b'{"a":1.2345678901234568e+21}', b'{"a":0.0000012345678901234567}',
    b'{"a":"\\u0000\\u001f\\b\\t\\n\\f\\r\\"\\\\/\x7f"}', '{"a":"\u00e9\u2028\u2029\U0001f600"}'.encode(),
    b'{"a":true,"b":false,"c":null}', b'{"a":[],"b":{},"c":[[{}]]}', b'{"":1}', b'{"a":{"key":1}}',
    b'{"01":1,"-1":2,"1.5":3,"4294967295":4}', b'{"sku":"SKU-00001","qty":2,"price":2000.99}',
]  # fmt: skip
# texts JSON.stringify writes that the reader leaves to the C core's canonical form (the server's own verdict)
DECLINED_CANONICAL_TEXTS = [
    b'{"a":1234567890123456}', b'{"a":1.7976931348623157e+308}',
    b'{"a":5e-324}', b'{"a":1e+308}', b'{"a":1e-308}', b'{"a":123456789012345680000}',
    b'{"a":123456789012345000000}', b'{"a":1000000000000000}',
    b'{"1":1,"a":2}', b'{"4294967294":1}', b'{"a":{"__proto__":1}}', b'{"a":"\\ud800"}',
    b'{"a":' + b"[" * 64 + b"]" * 64 + b"}",
]  # fmt: skip
# texts that are not their own JSON.stringify (or not JSON, or not an object)
NOT_CANONICAL_TEXTS = [
    b'{"a":1.50}', b'{"a":1.0}', b'{"a":-0}', b'{"a":-0.0}', b'{"a":1e21}', b'{"a":1E+21}', b'{"a":1e+021}',
    b'{"a":10e+20}', b'{"a":0e+21}', b'{"a":1e+20}', b'{"a":1e-6}', b'{"a":0.0000001}', b'{"a":100e0}',
    b'{"a":0.30000000000000003}', b'{"a":1.2345678901234567e+21}', b'{"a":0.300000000000000044}',
    b'{"a":"\\/"}', b'{"a":"\\u0041"}', b'{"a":"\\u001F"}', b'{"a":"\\u000a"}', b'{"a":"\\u00e9"}',
    b'{"a":1,"a":2}', b'{"a":1,"b":2,"a":3}', b'{"a":2,"1":1}', b'{ "a":1}', b'{"a":1}\n', b'{"a":01}',
    b'[1]', b'"a"', b"1", b"", b"{", b'{"a":1,}', b'{"a":"\x01"}', b'{"a":"\xff"}', b'{"a":"\xed\xa0\x80"}',
]  # fmt: skip
# texts JSON.stringify writes that the server refuses as payloads
REFUSED_TEXTS = [b'{"key":1}', b'{"a":1,"key":"x"}', b'{"__proto__":{"admin":true}}']


def test_the_lists_of_texts_say_what_node_says(node_stringify: Callable[[bytes], bytes]) -> None:
    for text in CANONICAL_TEXTS + DECLINED_CANONICAL_TEXTS + REFUSED_TEXTS:
        assert node_stringify(text) == text, text
    for text in NOT_CANONICAL_TEXTS:
        with contextlib.suppress(NodeJSONError, UnicodeDecodeError):  # not JSON, or not UTF-8 (node is not asked)
            assert node_stringify(text) != text or not text.startswith(b"{"), text


@pytest.mark.parametrize("text", CANONICAL_TEXTS, ids=repr)
def test_the_canonical_reading_confirms_what_javascript_writes(text: bytes,
                                                               node_stringify: Callable[[bytes], bytes]) -> None:
    assert check_canonical(text, node_stringify)


@pytest.mark.parametrize("text", DECLINED_CANONICAL_TEXTS + NOT_CANONICAL_TEXTS + REFUSED_TEXTS, ids=repr)
def test_the_canonical_reading_declines_the_rest(text: bytes) -> None:
    assert _fastcall.parse_canonical(text) is None


@given(text=st.one_of(compact_texts(), mutated_json_texts(), json_texts()), wrapped=st.booleans())
def test_the_canonical_reading_confirms_only_texts_that_are_their_own_json_stringify(
        text: str, wrapped: bool, node_stringify: Callable[[bytes], bytes]) -> None:
    check_canonical(((f'{{"a":{text}}}' if wrapped else text)).encode("utf-8", "surrogatepass"), node_stringify)


@given(token=st.one_of(number_texts, floats.map(format_number), floats.map(repr)))
def test_number_tokens_are_confirmed_only_in_the_form_javascript_writes(
        token: str, node_stringify: Callable[[bytes], bytes]) -> None:
    check_canonical(b'{"a":' + token.encode() + b"}", node_stringify)


@given(x=st.one_of(floats, st.sampled_from([0.1 + 0.2, 1 / 3, 2 / 3 * 1e-7, 1.2345678901234568e21])))
def test_every_double_is_confirmed_as_javascript_writes_it(x: float, node_stringify: Callable[[bytes], bytes]) -> None:
    """Up to 15 significant digits by the form alone, 16 and 17 against repr's shortest digits; left out: integers
    of more than 15 digits and magnitudes beyond 10**+-307 (the C core's canonicalizer confirms those)."""
    token = format_number(x)
    read = check_canonical(b'{"a":' + token.encode() + b"}", node_stringify)
    within = x == 0 or 1e-307 <= abs(x) < 1e308
    integer = "." not in token and "e" not in token
    assert read == (within and (not integer or len(token.lstrip("-")) <= 15)), token


@given(literal=string_texts())
def test_strings_are_confirmed_only_as_json_stringify_escapes_them(literal: str,
                                                                   node_stringify: Callable[[bytes], bytes]) -> None:
    text = ('{"a":' + literal + "}").encode("utf-8")
    read = check_canonical(text, node_stringify)
    assert read or node_stringify(text) != text or b"\\ud" in text.lower(), text


def _integer_like(key: str) -> bool:
    """JavaScript's array index: "0" or [1-9][0-9]* below 2**32 - 1."""
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1


def _declinable(value: Any, depth: int = 0) -> bool:
    """What the canonical reading may leave to the C core in a payload's JSON.stringify text."""
    if isinstance(value, dict):
        return depth >= 64 or any(_integer_like(k) or k == "__proto__" or any(0xD800 <= ord(c) <= 0xDFFF for c in k)
                                  or _declinable(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return depth >= 64 or any(_declinable(v, depth + 1) for v in value)
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        token = format_number(float(value)) if isinstance(value, float) or abs(value) > 2**53 else str(value)
        return not (value == 0 or 1e-307 <= abs(value) < 1e308) or (
            "." not in token and "e" not in token and len(token.lstrip("-")) > 15)
    return False


@given(payload=sealable_objects())
def test_the_canonical_reading_confirms_every_plain_payloads_text(payload: dict[str, Any],
                                                                  node_stringify: Callable[[bytes], bytes]) -> None:
    text = canonical_json(payload)
    assert check_canonical(text, node_stringify) or _declinable(to_json_compatible(payload)), text
