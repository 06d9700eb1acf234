"""Terminal.seal on the C core: byte-identical to the reference, and every refusal clear and typed."""

from __future__ import annotations

import pickle
import re
from decimal import Decimal
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pasarela
from pasarela import PayloadError, Sealed, Terminal, TimestampError, canonical_json, reference
from pasarela.errors import CredentialsError
from support.strategies import json_texts, sealable_objects

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
NOON = 1763812800  # 2025-11-22 12:00:00 UTC

credentials = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
timestamps = st.integers(min_value=10**9, max_value=10**10 - 1)
ivs = st.binary(min_size=16, max_size=16)


def _same(a: Sealed, b: Sealed) -> None:
    assert a.plaintext == b.plaintext
    assert a.signature == b.signature
    assert a.data == b.data
    assert a.headers == b.headers
    assert a.body == b.body
    assert a.params == b.params
    assert a.signed == b.signed


@given(
    sealable_objects(),
    credentials,
    credentials,
    timestamps,
    ivs,
    st.sampled_from(["GET", "POST", "PUT", "PATCH"]),
)
def test_seal_matches_reference(
    payload: dict[str, Any], business_code: str, serial: str, timestamp: int, iv: bytes, method: str
) -> None:
    fast = Terminal(business_code, serial).seal(payload, method=method, timestamp=timestamp, iv=iv)
    slow = reference.Terminal(business_code, serial).seal(payload, method=method, timestamp=timestamp, iv=iv)
    _same(fast, slow)


@given(json_texts(), ivs)
def test_seal_of_json_text_matches_reference(text: str, iv: bytes) -> None:
    try:
        expected = reference.Terminal(BUSINESS_CODE, SERIAL).seal(text, timestamp=NOON, iv=iv)
    except PayloadError as exc:
        with pytest.raises(PayloadError) as info:
            Terminal(BUSINESS_CODE, SERIAL).seal(text, timestamp=NOON, iv=iv)
        assert info.value.path == exc.path
        return
    _same(Terminal(BUSINESS_CODE, SERIAL).seal(text, timestamp=NOON, iv=iv), expected)


@given(sealable_objects())
def test_canonical_json_matches_reference(payload: dict[str, Any]) -> None:
    assert canonical_json(payload) == reference.canonical_json(payload)


def test_seal_post_shape() -> None:
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal({"amount": 100.0}, timestamp=NOON, iv=bytes(range(16)))
    assert sealed.plaintext == b'{"amount":100}'
    assert re.fullmatch(r"Basic [0-9a-f]{128}", sealed.headers["Authorization"])
    assert sealed.headers["timestamp"] == "1763812800"
    assert sealed.headers["Content-Type"] == "application/json"
    assert sealed.data.startswith("000102030405060708090a0b0c0d0e0f:")
    assert re.fullmatch(r"[0-9a-f]{32}:([0-9a-f]{32})+", sealed.data)
    assert sealed.body == b'{"data":"' + sealed.data.encode() + b'"}'
    assert sealed.params is None
    assert sealed.signed.startswith(b'{"amount":100,"key":"')


@pytest.mark.parametrize("method", ["GET", "get"])
def test_seal_get_moves_everything_into_data_param(method: str) -> None:
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal(
        {"id": "print-7"}, method=method, timestamp=NOON, iv=bytes(16)
    )
    assert sealed.method == "GET"
    assert sealed.body is None
    assert sealed.params == {"data": sealed.data}


@pytest.mark.parametrize("payload", [None, {}, b"{}", "{ }"])
def test_seal_empty_payload_signs_braces(payload: Any) -> None:
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal(payload, method="GET", timestamp=NOON, iv=bytes(16))
    assert sealed.plaintext == b"{}"
    assert re.fullmatch(rb'\{"key":"[A-Za-z0-9+/]{56}"\}', sealed.signed)


def test_seal_default_timestamp_and_iv_are_fresh() -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    first, second = terminal.seal({"a": 1}), terminal.seal({"a": 1})
    assert len(first.headers["timestamp"]) == 10
    assert first.iv != second.iv and first.data != second.data


def test_seal_known_answer() -> None:
    # Worked by hand from spec 5.1 with hashlib/cryptography; pinned so a regression in both paths shows.
    sealed = Terminal("bc", "serial").seal({"amount": 100.0}, timestamp=NOON, iv=bytes(16))
    assert sealed.signature == (
        "3db001671c966470a611c3f4e7137ee39b2aa4423d9e6e4ab3abedc9b062da10"
        "e877cdcf7b4decdd2937aee598fa43d426c8ae96011ecff466e228d4fc26799e"
    )
    assert sealed.data == "00000000000000000000000000000000:654dd7839de628a1044c21b2f526de0d"


@pytest.mark.parametrize("impl", [pasarela, reference], ids=["c", "reference"])
@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({"items": [1, 2, {"price": float("nan")}]}, "$.items[2].price"),
        ({"a": float("inf")}, "$.a"),
        ({"a": -float("inf")}, "$.a"),
        ({"n": 2**53 + 1}, "$.n"),
        ({"n": -(2**53) - 1}, "$.n"),
        ({"__proto__": {"admin": True}, "amount": 1}, "$.__proto__"),
        ({"a b": {1: 2}}, '$["a b"]'),
        ({"blob": b"\x00"}, "$.blob"),
        ({"tags": {"x"}}, "$.tags"),
        ({"when": __import__("datetime").datetime(2025, 1, 1)}, "$.when"),
            ({"o": object()}, "$.o"),
        ({"d": Decimal("NaN")}, "$.d"),
        ({"d": Decimal("1e400")}, "$.d"),
        ({"key": "mine"}, "$.key"),
    ],
)
def test_seal_refuses_unrepresentable_value(impl: Any, payload: dict[str, Any], path: str) -> None:
    with pytest.raises(PayloadError) as info:
        impl.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON)
    assert isinstance(info.value, ValueError)
    assert info.value.path == path
    assert BUSINESS_CODE not in str(info.value)


@pytest.mark.parametrize("impl", [pasarela, reference], ids=["c", "reference"])
def test_seal_refuses_cycle(impl: Any) -> None:
    payload: dict[str, Any] = {"a": []}
    payload["a"].append(payload)
    with pytest.raises(PayloadError) as info:
        impl.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON)
    assert info.value.path == "$.a[0]"


@pytest.mark.parametrize("impl", [pasarela, reference], ids=["c", "reference"])
@pytest.mark.parametrize(
    "payload", [[1, 2], "[1]", b"3", "null", 5, "not json", b'{"key":1}', '{"a":1,"key":2}']
)
def test_seal_refuses_non_object_payload(impl: Any, payload: Any) -> None:
    with pytest.raises(PayloadError) as info:
        impl.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON)
    assert info.value.path in ("$", "$.key")


@pytest.mark.parametrize("impl", [pasarela, reference], ids=["c", "reference"])
@pytest.mark.parametrize(
    ("timestamp", "message"),
    [
        (1763812800000, "milliseconds"),
        (176381280, "10 digits"),
        (10**10, "10 digits"),
        (-1763812800, "10 digits"),
        (1763812800.5, "int"),
        ("1763812800", "int"),
        (True, "int"),
    ],
)
def test_seal_refuses_bad_timestamp(impl: Any, timestamp: Any, message: str) -> None:
    with pytest.raises(TimestampError, match=message):
        impl.Terminal(BUSINESS_CODE, SERIAL).seal({}, timestamp=timestamp)


@pytest.mark.parametrize("iv", [bytes(15), bytes(17), "0" * 16])
def test_seal_refuses_bad_iv(iv: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        Terminal(BUSINESS_CODE, SERIAL).seal({}, timestamp=NOON, iv=iv)


@pytest.mark.parametrize("method", ["DELETE", "HEAD", "", None])
def test_seal_refuses_unknown_method(method: Any) -> None:
    with pytest.raises(ValueError, match="GET, POST, PUT, PATCH"):
        Terminal(BUSINESS_CODE, SERIAL).seal({}, method=method, timestamp=NOON)


@pytest.mark.parametrize(
    ("business_code", "serial", "name"),
    [
        ("", SERIAL, "business_code"),
        (BUSINESS_CODE, "", "terminal_serial"),
        (None, SERIAL, "business_code"),
        ("bad\ud800", SERIAL, "business_code"),
    ],
)
def test_terminal_refuses_bad_credentials(business_code: Any, serial: Any, name: str) -> None:
    with pytest.raises(CredentialsError, match=name) as info:
        Terminal(business_code, serial)
    assert "bad" not in str(info.value)


@pytest.mark.parametrize("impl", [pasarela, reference], ids=["c", "reference"])
def test_terminal_never_shows_business_code(impl: Any) -> None:
    terminal = impl.Terminal(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal({"a": 1}, timestamp=NOON)
    for text in (repr(terminal), str(terminal), repr(sealed), str(sealed)):
        assert BUSINESS_CODE not in text
        assert SERIAL in text or "Sealed" in text
    with pytest.raises(TypeError, match="secret"):
        pickle.dumps(terminal)


def test_seal_key_order_and_numbers_are_javascripts() -> None:
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal(
        {"b": 1e21, "10": 1e-7, "2": 100.0, "a": -0.0, "01": 1.5e-7}, timestamp=NOON, iv=bytes(16)
    )
    assert sealed.plaintext == b'{"2":100,"10":1e-7,"b":1e+21,"a":0,"01":1.5e-7}'


def test_seal_accepts_decimal_and_subclasses_exactly() -> None:
    import collections
    import enum

    class Color(str, enum.Enum):
        RED = "red"

    payload = collections.OrderedDict([("d", Decimal("19.990")), ("c", Color.RED), ("t", (1, 2))])
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON, iv=bytes(16))
    assert sealed.plaintext == b'{"d":19.99,"c":"red","t":[1,2]}'


@pytest.mark.parametrize("impl", [pasarela, reference], ids=["c", "reference"])
def test_seal_writes_uuid_and_enum_as_values(impl: Any) -> None:
    import enum
    import uuid

    class Plan(enum.Enum):
        BASIC = "basic"
        RATE = 0.25
        BAD = float("nan")

    sealed = impl.Terminal(BUSINESS_CODE, SERIAL).seal(
        {"id": uuid.UUID(int=255), "plan": Plan.BASIC, "rate": Plan.RATE, "tip": None}, timestamp=NOON, iv=bytes(16))
    assert sealed.plaintext == b'{"id":"00000000-0000-0000-0000-0000000000ff","plan":"basic","rate":0.25,"tip":null}'
    with pytest.raises(PayloadError) as info:
        impl.Terminal(BUSINESS_CODE, SERIAL).seal({"tip": None, "plan": [Plan.BAD]}, timestamp=NOON)
    assert info.value.path == "$.plan[0]"


def test_seal_deep_nesting_up_to_limit() -> None:
    deep: Any = 1
    for _ in range(999):
        deep = [deep]
    sealed = Terminal(BUSINESS_CODE, SERIAL).seal({"d": deep}, timestamp=NOON, iv=bytes(16))
    assert sealed.plaintext == b'{"d":' + b"[" * 999 + b"1" + b"]" * 999 + b"}"
    with pytest.raises(PayloadError, match="deeper"):
        Terminal(BUSINESS_CODE, SERIAL).seal({"d": [deep]}, timestamp=NOON)


def test_fresh_ivs_never_repeat_within_and_across_pools() -> None:
    from pasarela.terminal.ivs import fresh_iv

    ivs = {fresh_iv() for _ in range(10_000)}  # spans 40 pools of 256
    assert len(ivs) == 10_000
    assert all(len(iv) == 16 for iv in ivs)


def _in_forked_child(produce: Callable[[], bytes]) -> bytes:
    """What produce() returns when run in a forked child of this process."""
    import os

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read)
        os.write(write, produce())
        os._exit(0)
    os.close(write)
    child = b""
    while chunk := os.read(read, 4096):
        child += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return child


def test_forked_child_does_not_reuse_parent_ivs() -> None:
    from pasarela.terminal.ivs import fresh_iv

    fresh_iv()  # the parent's pool now holds unused IVs a child must not hand out again
    child = _in_forked_child(lambda: b"".join(fresh_iv() for _ in range(8)))
    parent = b"".join(fresh_iv() for _ in range(8))
    assert len(child) == 128
    assert {child[i:i + 16] for i in range(0, 128, 16)}.isdisjoint({parent[i:i + 16] for i in range(0, 128, 16)})


def test_forked_child_does_not_reuse_the_ivs_of_the_parents_workspace() -> None:
    """Terminal.seal and seal_many take IVs from the thread's workspace pool (in C): a child discards it."""
    terminal = Terminal("bc-fork", "SN-fork")
    terminal.seal({"n": 0})  # the parent's workspace pool now holds 255 unused IVs

    def seal_some() -> list[Sealed]:
        return [terminal.seal({"n": i}) for i in range(8)] + terminal.seal_many([{"m": i} for i in range(8)])

    child = _in_forked_child(lambda: b"".join(one.iv for one in seal_some()))
    parent = seal_some()
    assert len(child) == 16 * 16
    assert {child[i:i + 16] for i in range(0, len(child), 16)}.isdisjoint({one.iv for one in parent})
