"""Every body the API accepts takes the C core's door (issue 54 item 6): a ``str`` (what ``request.text`` gives), a
``bytearray`` or a ``memoryview`` is opened as the ``bytes`` it holds, with the same result or the same refusal (and
its reason) as those bytes, and through the same C call; what no bytes hold (a ``str`` with a lone surrogate, a
memoryview of wider items) is read as before."""

from __future__ import annotations

import array
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pasarela
from pasarela import AuthError, _binding, diagnose
from pasarela.terminal.inbound import as_bytes
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL
from support.strategies import sealable_objects

FORMS: dict[str, Callable[[bytes], Any]] = {
    "str": bytes.decode,
    "bytearray": bytearray,
    "memoryview": memoryview,
    "memoryview of a bytearray": lambda body: memoryview(bytearray(body)),
    "memoryview slice": lambda body: memoryview(b"  " + body + b"  ")[2:-2],
}
TERMINAL = pasarela.Terminal(BUSINESS_CODE, SERIAL)


def _outcome(open_call: Callable[..., Any], headers: Any, body: Any) -> tuple[str, Any]:
    try:
        return "opened", open_call("POST", headers, body, now=NOON)
    except AuthError as refused:
        return "refused", (refused.reason, refused.body, refused.status)


def _tampered(body: bytes, where: int) -> bytes:
    """body with one hex digit of its data changed (the signature or the padding then fails)."""
    position = 9 + where % (len(body) - 11)  # inside {"data":"..."}
    digit = body[position:position + 1]
    return body[:position] + (b"0" if digit != b"0" else b"1") + body[position + 1:]


@given(payload=sealable_objects(), form=st.sampled_from(sorted(FORMS)), tamper=st.none() | st.integers(0, 10_000))
def test_each_body_form_opens_as_its_bytes(payload: dict[str, Any], form: str, tamper: Any) -> None:
    sealed = TERMINAL.seal(payload, timestamp=NOON)
    assert sealed.body is not None
    body = sealed.body if tamper is None else _tampered(sealed.body, tamper)
    for open_call in (TERMINAL.open, TERMINAL.open_bytes):
        assert _outcome(open_call, sealed.headers, FORMS[form](body)) == _outcome(open_call, sealed.headers, body)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_body_form_takes_the_c_call_bytes_take(form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """(Through _fastcall, or the cffi path under PASARELA_NO_FASTCALL=1: the C call either way.)"""
    assert _binding.HAS_HW_AES, "a CPU without AES instructions opens in pure Python: nothing to count"
    calls: list[type] = []
    open_post, open_post_bytes = _binding.open_post, _binding.open_post_bytes

    def counted(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(native: Any, headers: Any, body: Any, *rest: Any) -> Any:
            calls.append(type(body))
            return real(native, headers, body, *rest)
        return call

    monkeypatch.setattr(_binding, "open_post", counted(open_post))
    monkeypatch.setattr(_binding, "open_post_bytes", counted(open_post_bytes))
    sealed = TERMINAL.seal({"amount": 100, "currency": "COP"}, timestamp=NOON)
    assert sealed.body is not None
    body = FORMS[form](sealed.body)
    assert TERMINAL.open("POST", sealed.headers, body, now=NOON) == {"amount": 100, "currency": "COP"}
    assert TERMINAL.open_bytes("POST", sealed.headers, body, now=NOON) == b'{"amount":100,"currency":"COP"}'
    assert calls == [bytes, bytes]


def test_what_no_bytes_hold_is_read_as_before() -> None:
    sealed = TERMINAL.seal({"a": 1}, timestamp=NOON)
    assert sealed.body is not None
    surrogate = sealed.body.decode()[:-2] + "\udc80\"}"
    assert as_bytes(surrogate) is surrogate
    wide = memoryview(array.array("H", [0x7B7B]))
    assert as_bytes(wide) is wide
    for body in (surrogate, wide, "", bytearray()):
        with pytest.raises(AuthError) as refused:
            TERMINAL.open("POST", sealed.headers, body, now=NOON)
        assert refused.value.status == 401


def test_as_bytes_copies_a_buffer_so_a_later_change_cannot_reach_the_opened_request() -> None:
    sealed = TERMINAL.seal({"a": 1}, timestamp=NOON)
    assert sealed.body is not None
    buffer = bytearray(sealed.body)
    copy = as_bytes(memoryview(buffer))
    buffer[:] = b"x" * len(buffer)
    assert copy == sealed.body and TERMINAL.open("POST", sealed.headers, copy, now=NOON) == {"a": 1}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_diagnose_reads_each_body_form_as_its_bytes(form: str) -> None:
    """(A memoryview body made diagnose raise TypeError: json.loads takes none.)"""
    late = TERMINAL.seal({"a": 1}, timestamp=NOON - 3600)
    assert late.body is not None
    for body in (late.body, FORMS[form](late.body)):
        assert diagnose("POST", late.headers, body, business_code=BUSINESS_CODE, terminal_serial=SERIAL,
                        now=NOON).cause == "clock_skew"
    timely = TERMINAL.seal({"a": 1}, timestamp=NOON)
    wide = memoryview(array.array("H", [0x7B7B]))  # no JSON text: diagnosed, not a TypeError
    assert diagnose("POST", timely.headers, wide, business_code=BUSINESS_CODE, terminal_serial=SERIAL,
                    now=NOON).cause != "ok"
