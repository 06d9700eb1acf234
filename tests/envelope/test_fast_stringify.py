"""The C writer of JSON.stringify's text (csrc/cpython/stringify.c, through _binding.stringify): seal and seal_many
seal its text as it is, without the C core's check, so wherever it does not decline it must write exactly what the
reference (pasarela.terminal.stringify) writes, and what Node's JSON.stringify gives back unchanged. It must also
not decline the payloads it exists for (prices, ids, quantities), or the speed it brings would silently be lost."""

from __future__ import annotations

import collections
import datetime
import enum
import random
import struct
import sys
import sysconfig
from decimal import Decimal
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pasarela
from pasarela import _binding
from pasarela.terminal.stringify import format_number
from pasarela.terminal.stringify import stringify as reference_stringify
from support.strategies import BOUNDARY_FLOATS, floats, json_objects

# the C writer is at work on CPython with the GIL (on a free-threaded build it declines everything: no container
# could be walked safely with another thread changing it; PyPy has no pasarela._fastcall)
WRITING = sys.implementation.name == "cpython" and not sysconfig.get_config_var("Py_GIL_DISABLED")


def reference(payload: Any) -> bytes:
    text = reference_stringify(payload)
    return text if isinstance(text, bytes) else text.encode("utf-8")


def shortest_digits(x: float) -> int:
    """How many significant digits Number::toString writes for x."""
    mantissa = repr(abs(x)).split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) or 1


def test_the_writer_is_at_work_on_cpython() -> None:
    assert (_binding.stringify({"a": 1}) is not None) == WRITING


@given(json_objects())
def test_wherever_it_writes_it_writes_what_the_reference_writes(payload: dict[str, Any]) -> None:
    text = _binding.stringify(payload)
    if text is not None:
        assert text == reference(payload)


@given(floats)
def test_floats_exact_and_declined_only_outside_their_range(x: float) -> None:
    text = _binding.stringify({"v": x})
    if text is not None:
        assert text == b'{"v":' + format_number(x).encode() + b"}"
    elif WRITING:  # declined only for sizes out of range or 16 digits and more
        assert abs(x) < 1e-5 or abs(x) >= 2**53 or shortest_digits(x) >= 16, x


@given(st.decimals(min_value=Decimal("-1e12"), max_value=Decimal("1e12"), places=2, allow_nan=False),
       st.integers(min_value=0, max_value=6))
def test_prices_and_short_decimals_are_written(amount: Decimal, shift: int) -> None:
    x = float(amount.scaleb(-shift))
    if x != 0 and abs(x) < 1e-5:
        return
    text = _binding.stringify({"amount": x, "items": [{"price": x, "qty": 3, "sku": "SKU-1"}]})
    assert text is not None or not WRITING
    if text is not None:
        assert text == reference({"amount": x, "items": [{"price": x, "qty": 3, "sku": "SKU-1"}]})


def test_a_million_doubles_agree_with_the_reference() -> None:
    """Random bit patterns (every magnitude) and the boundary floats, then random decimals of up to 12 digits
    with up to 6 after the point, in lists of 1,000, one call each (the reference writes each with repr and the
    layout of ECMA-262). The decimals (amounts, rates) must all be written."""
    rng = random.Random(20261126)  # noqa: S311 - test data, reproducible
    doubles: list[float] = list(BOUNDARY_FLOATS)
    while len(doubles) < 500_000:
        (x,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if x - x == 0.0:
            doubles.append(x)
    short = [rng.randrange(-10**12, 10**12) / 10**rng.randint(0, 6) for _ in range(500_000)]
    for values, all_written in ((doubles, False), (short, True)):
        for start in range(0, len(values), 1000):
            chunk = values[start:start + 1000]
            text = _binding.stringify({"v": chunk})
            if text is not None:
                assert text == reference({"v": chunk})
                continue
            for x in chunk:  # some value declined: each alone
                one = _binding.stringify({"v": x})
                if one is not None:
                    assert one == b'{"v":' + format_number(x).encode() + b"}", x
                else:
                    assert not WRITING or not all_written or 0 < abs(x) < 1e-5, x


class Color(enum.Enum):
    RED = "red"


class Size(enum.IntEnum):
    SMALL = 1


class Text(str):
    pass


def nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("payload", [
    {"key": 1}, {"a": {"__proto__": 1}}, {"__proto__": {}}, {"0": 1}, {"7a": 1}, {1: 1}, {(1, 2): 1},
    {"s": "\ud800"}, {"\udc00": 1}, {"pair": "\ud83d\ude00"}, {"n": 2**53}, {"n": -(2**53)}, {"n": 10**30},
    {"f": float("nan")}, {"f": float("inf")}, {"f": -float("inf")}, {"f": 1e21}, {"f": 1e-7}, {"f": 5e-324},
    {"f": 0.1 + 0.2}, {"d": Decimal("1.5")}, {"t": datetime.date(2026, 11, 26)}, {"e": Color.RED},
    {"e": Size.SMALL}, {"s": Text("x")}, {"o": collections.OrderedDict(a=1)}, {"b": b"x"}, {"s": {1, 2}},
    {"deep": nest(64)}, collections.OrderedDict(a=1), [1], "{}",
])
def test_declines_what_it_does_not_write_exactly(payload: Any) -> None:
    """The general path then writes it (or raises the precise PayloadError): orjson or the reference."""
    assert _binding.stringify(payload) is None


def test_the_deepest_nesting_it_writes() -> None:
    payload = {"deep": nest(62)}  # the dict is depth 1, the lists 2..63, the int inside them
    assert _binding.stringify(payload) == reference(payload) or not WRITING


def test_nested_key_members_are_written() -> None:
    payload = {"a": {"key": 1, "__proto_": 2}, "list": [{"key": "x"}]}
    assert _binding.stringify(payload) == reference(payload) or not WRITING


def test_texts_beyond_32_kib_are_left_to_orjson_alone() -> None:
    """stringify() declines a payload whose text would pass 32 KiB (growing its buffer further cost more than it
    saved); a batch's items, written into the thread's items buffer, have no such limit. Both seal the same."""
    terminal = pasarela.Terminal("bc-7f3a1c2e9d", "SN-0042")
    small, large = {"text": "x" * 32_000}, {"text": "x" * 33_000}
    assert (_binding.stringify(small) is not None) == WRITING
    assert _binding.stringify(large) is None
    for payload in (small, large):
        sealed = terminal.seal(payload, timestamp=1764158400)
        assert sealed.plaintext == reference(payload)
        assert terminal.open("POST", sealed.headers, sealed.body, now=sealed.timestamp) == payload
    batch = terminal.seal_many([large, small, large], timestamp=1764158400)
    assert [s.plaintext for s in batch] == [reference(large), reference(small), reference(large)]


def test_keys_seen_before_are_copied_as_they_were_written() -> None:
    """The writer keeps the text of the keys it has written, by their str object, and copies it when that object
    comes again (in the same payload, nested, in the later items of a batch). "key" is never kept, so that it is
    still declined at the top level after being written deeper."""
    key = "".join(["ke", "y"])  # one str object, made at run time
    assert _binding.stringify({"x": {key: 1}, "y": [{key: 2}]}) in (b'{"x":{"key":1},"y":[{"key":2}]}', None)
    assert _binding.stringify({"x": {key: 1}, key: 2}) is None
    items = [{"sku": f"S{n}", "qty": n, "price": n + 0.5, "\u00e9\n\"": n, "k" * 60: None} for n in range(50)]
    keys = {f"key{n}": n for n in range(100)}  # more keys than it keeps: they take each other's places
    payload = {"items": items, "many": [keys, keys]}
    assert _binding.stringify(payload) in (reference(payload), None)
    assert (_binding.stringify(payload) is not None) == WRITING


def _key_set(key: str) -> int:
    """The set of the writer's remembered keys that key's str object falls in (stringify.c, key_set)."""
    return ((id(key) * 0x9E3779B97F4A7C15) % 2**64) >> (64 - 5)


def test_three_keys_of_one_set_take_each_others_places_and_are_still_written_right() -> None:
    """A set holds two keys, the more recent first: a third one pushes the older out. Keys of one set, written
    in turns and in every order, must each come out as its own text (escapes, and one too long to be kept)."""
    made = [f"k{n}\u00e9\t\"" + ("x" * 50 if n % 7 == 0 else "") for n in range(4000)]
    by_set: dict[int, list[str]] = {}
    for key in made:
        by_set.setdefault(_key_set(key), []).append(key)
    crowded = next(keys for keys in by_set.values() if len(keys) >= 4)[:4]
    orders = [[crowded[i % 4] for i in range(start, start + 4)] for start in range(4)]
    payload = {"items": [{key: n for n, key in enumerate(order)} for order in orders * 3],
               "again": [{crowded[0]: 1}, {crowded[3]: [{crowded[1]: {crowded[2]: None}}]}]}
    assert _binding.stringify(payload) in (reference(payload), None)
    assert (_binding.stringify(payload) is not None) == WRITING


@given(json_objects())
def test_node_gives_its_text_back_unchanged(node_stringify: Callable[[bytes], bytes],
                                            payload: dict[str, Any]) -> None:
    text = _binding.stringify(payload)
    if text is not None:
        assert node_stringify(text) == text


def test_stringify_into_reports_what_it_could_not_do() -> None:
    if _binding._fast_stringify_into is None:  # PyPy
        return
    from pasarela import _fastcall

    payloads = [{"a": 1}, {"b": "xyz"}, {"c": [1.5, None]}]
    lens = _binding.ffi.new("size_t[]", 3)
    out = _binding.ffi.new("uint8_t[]", 128)  # room asked for a token at a time, up to 48 bytes more than it takes
    if not WRITING:  # free-threaded: declined
        assert _fastcall.stringify_into(payloads, 0, 3, _binding._address(out), 128, _binding._address(lens)) == -1
        return
    used = _fastcall.stringify_into(payloads, 0, 3, _binding._address(out), 128, _binding._address(lens))
    assert bytes(_binding.ffi.buffer(out, used)) == b'{"a":1}{"b":"xyz"}{"c":[1.5,null]}'
    assert list(lens) == [7, 11, 16]
    assert _fastcall.stringify_into(payloads, 1, 3, _binding._address(out), 128, _binding._address(lens)) == 27
    assert _fastcall.stringify_into(payloads, 0, 3, _binding._address(out), 40, _binding._address(lens)) == -2
    assert _fastcall.stringify_into([{"a": 1}, {"key": 2}], 0, 2, _binding._address(out), 128,
                                    _binding._address(lens)) == -1
    for bad in [([1], 0, 2), ([{}], -1, 1), ([{}], 1, 0)]:
        with pytest.raises(ValueError, match="start and stop"):
            _fastcall.stringify_into(*bad, _binding._address(out), 128, _binding._address(lens))
    with pytest.raises(TypeError, match="must be a list"):
        _fastcall.stringify_into((1,), 0, 1, _binding._address(out), 128, _binding._address(lens))


def test_a_batch_larger_than_the_items_buffer_grows_it() -> None:
    """seal_payloads writes a batch's texts into this thread's items buffer, grown (and written again, whole) when
    they do not fit: the requests are those of seal."""
    terminal = pasarela.Terminal("bc-7f3a1c2e9d", "SN-0042")
    payloads = [{"n": n, "text": "t" * 20_000} for n in range(12)]  # 240 KB: more than the 64 KiB grown to first
    _binding._workspace.items = _binding.ffi.new("uint8_t[]", 1)
    credentials = _binding.repeated_credentials(terminal._native.struct, len(payloads))
    result = _binding.seal_payloads(credentials, 1764158400, payloads, pasarela.Sealed, [terminal] * 12,
                                    ("POST", 1764158400))
    if not WRITING:
        assert result is None
        return
    assert result is not None
    (rows, facts), used = result
    assert facts is None and used == sum(len(reference(p)) for p in payloads)
    assert len(_binding._workspace.items) == 262144  # 1 byte, then 64 KiB, doubled twice
    assert [row.plaintext for row in rows] == [reference(p) for p in payloads]
    assert [terminal.open("POST", row.headers, row.body, now=row.timestamp) for row in rows] == payloads
