"""The exactness edges of seal and open: integers beyond 2**53, and a top-level "__proto__" member.

Integers: JavaScript numbers are doubles, so an int is sealed when it is exactly a double (10**16 and
2**53 are; 2**53 + 1 is not) and written as JSON.stringify writes that double; open returns what JSON.parse
made of each literal, so that whatever open returns, seal accepts and writes back to the same bytes.

"__proto__": JSON.parse makes a top-level "__proto__" member an own property, and whether the text the
server signs keeps it depends on how it adds key (obj.key = ... and spread keep it, Object.assign drops it):
seal refuses it, open refuses it (AUTH-001), diagnose names it. Nested, it is plain data.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import pasarela
from pasarela import PayloadError, reference
from pasarela.errors import PROTO_REASON
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL
from support.strategies import (
    EXACT_BIG_INTS,
    INEXACT_INTS,
    big_exact_doubles,
    big_ints,
    exact_big_ints,
    sealable_objects,
)

IMPLEMENTATIONS = [pasarela.Terminal, reference.Terminal]
IMPL_IDS = ["c", "reference"]
IV = bytes(range(16))

# ---------------------------------------------------------------------------------------------------
# Integers beyond 2**53

@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("value", EXACT_BIG_INTS + [-v for v in EXACT_BIG_INTS], ids=lambda v: str(v)[:24])
def test_seal_accepts_an_int_that_is_a_double(impl: Any, value: int) -> None:
    sealed = impl(BUSINESS_CODE, SERIAL).seal({"n": value}, timestamp=NOON, iv=IV)
    assert json.loads(sealed.plaintext, parse_int=float)["n"] == value  # the same double, exactly


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("value", INEXACT_INTS + [-v for v in INEXACT_INTS], ids=lambda v: str(v)[:24])
def test_seal_refuses_an_int_javascript_would_round_naming_only_the_path(impl: Any, value: int) -> None:
    with pytest.raises(PayloadError) as info:
        impl(BUSINESS_CODE, SERIAL).seal({"items": [1, 2, {"price": value}]}, timestamp=NOON, iv=IV)
    assert info.value.path == "$.items[2].price"
    assert "double" in info.value.reason
    assert str(abs(value))[:6] not in str(info.value)  # the value itself is not echoed


def test_seal_of_ten_to_the_sixteen_is_what_javascript_writes_for_1e16() -> None:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal({"n": 10**16}, timestamp=NOON, iv=IV)
    assert sealed.plaintext == b'{"n":10000000000000000}'
    assert pasarela.canonical_json({"n": 2**60}) == b'{"n":1152921504606847000}'


def _number_literal(value: Any) -> str:
    return str(value) if isinstance(value, int) else repr(value)


@example(literals=["10000000000000000", "1e16", "9007199254740993", "1152921504606847000",
                   "1152921504606846976", "-18446744073709551615", "1e21"], as_text=True)
@given(st.lists(st.one_of(big_ints, exact_big_ints, big_exact_doubles, st.sampled_from(INEXACT_INTS[:-1]))
                .map(_number_literal), min_size=1, max_size=6),
       st.booleans())
def test_whatever_open_returns_seal_accepts_and_writes_back_the_same_bytes(literals: list[str],
                                                                          as_text: bool) -> None:
    """Sealed from JSON text (JSON.parse rounds every literal to a double, as the server does) or from the
    values open returned for it: open, then seal, gives the same plaintext, on both implementations."""
    text = '{"a":' + literals[0] + ',"items":[' + ",".join(literals) + '],"o":{"p":' + literals[-1] + "}}"
    first = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(text if as_text else json.loads(text, parse_float=float,
                                                                                        parse_int=_as_double),
                                                          timestamp=NOON, iv=IV)
    for opener in IMPLEMENTATIONS:
        opened = opener(BUSINESS_CODE, SERIAL).open("POST", first.headers, first.body, now=NOON)
        for sealer in IMPLEMENTATIONS:
            again = sealer(BUSINESS_CODE, SERIAL).seal(opened, timestamp=NOON, iv=IV)
            assert again.plaintext == first.plaintext
            assert again.signature == first.signature


def _as_double(text: str) -> Any:
    value = int(text)
    return value if float(value) == value else float(text)


@given(sealable_objects())
def test_open_then_seal_round_trips_any_payload(payload: dict[str, Any]) -> None:
    first = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON, iv=IV)
    opened = pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", first.headers, first.body, now=NOON)
    assert pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(opened, timestamp=NOON, iv=IV).plaintext == first.plaintext


# ---------------------------------------------------------------------------------------------------
# A top-level "__proto__"

PROTO_TEXTS = ['{"__proto__":{"admin":true},"amount":1}', '{"amount":1,"\\u005f_proto__":null}',
               ' { "__proto__" : [] } ']


def _seal_ways(impl: Any) -> list[Callable[[Any], Any]]:
    terminal = impl(BUSINESS_CODE, SERIAL)
    return [lambda p: terminal.seal(p, timestamp=NOON, iv=IV),
            lambda p: terminal.seal_many([{"ok": 1}, p], timestamp=NOON) if hasattr(terminal, "seal_many")
            else terminal.seal(p, timestamp=NOON),
            lambda p: pasarela.seal_batch([(pasarela.Terminal(BUSINESS_CODE, SERIAL), p)], timestamp=NOON),
            pasarela.canonical_json if impl is pasarela.Terminal else reference.canonical_json]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("payload", [{"__proto__": {"admin": True}, "amount": 1}, {"__proto__": None},
                                     *PROTO_TEXTS, *(text.encode() for text in PROTO_TEXTS)], ids=repr)
def test_seal_refuses_a_top_level_proto_saying_why(impl: Any, payload: Any) -> None:
    for seal in _seal_ways(impl):
        with pytest.raises(PayloadError) as info:
            seal(payload)
        assert info.value.path == "$.__proto__"
        assert info.value.reason == PROTO_REASON
        assert "Object.assign" in info.value.reason


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("payload", [{"meta": {"__proto__": {"admin": True}}, "amount": 1},
                                     '{"meta":{"__proto__":1}}', '{"a":"\\"__proto__\\":1"}',
                                     {"list": [{"__proto__": 2}]}], ids=repr)
def test_seal_keeps_a_nested_proto_as_data(impl: Any, payload: Any) -> None:
    sealed = impl(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON, iv=IV)
    opened = pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", sealed.headers, sealed.body, now=NOON)
    assert opened == (payload if isinstance(payload, dict) else json.loads(payload))
