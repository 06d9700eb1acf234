"""A lone seal, open or canonicalization through cffi writes into this thread's workspace, then copies its output out
in Python: a collection of the cyclic GC may run between the C call and the copy (tests/support/finalizers.py forces one
at every check point), and a finalizer that seals, opens and canonicalizes on this thread must not change what the
call in progress copies out (on both paths: PASARELA_NO_FASTCALL=1 runs the cffi one everywhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from pasarela import Terminal, _binding
from pasarela.terminal.inbound import read_request_bytes
from support.finalizers import finalizer_at_each_collection

NOON = 1763812800
TERMINAL = Terminal("bc-7f3a1c2e9d", "SN-0042")
CREDENTIALS = _binding.Credentials(b"bc-7f3a1c2e9d", b"SN-0042")
OUTER = b'{"who":"outer","pad":"' + b"p" * 300 + b'"}'
INNER = b'{"who":"inner","n":1}'
IV = bytes(range(16))


def _read(text: bytes) -> tuple[int, bytes, bytes]:
    """(timestamp, data, signature) of the request Terminal.seal makes of text."""
    sealed = TERMINAL.seal(orjson.loads(text), timestamp=NOON)
    timestamp, signature, data, _ = read_request_bytes("POST", sealed.headers, sealed.body, None, NOON, 300)
    return timestamp, data, signature


def _under_inner_work(calls: Callable[[], Any]) -> tuple[Any, int]:
    """calls() run while each collection seals, opens and canonicalizes INNER on this thread: its result and how
    many times that ran."""
    inner_request = _read(INNER)
    done: list[int] = []

    def work() -> bool:
        _binding.seal(CREDENTIALS, NOON, INNER)
        _binding.open_request(CREDENTIALS, *inner_request)
        _binding.canonicalize(INNER)
        done.append(1)
        return True

    with finalizer_at_each_collection(work):
        result = calls()
    return result, len(done)


CALLS: dict[str, Callable[[], Any]] = {
    "seal": lambda: _binding.seal(CREDENTIALS, NOON, OUTER, IV),
    "open_request": lambda: _binding.open_request(CREDENTIALS, *_read(OUTER)).text,
    "canonicalize": lambda: _binding.canonicalize(OUTER),
}
EXPECTED = {name: call() for name, call in CALLS.items()}  # made with no collection forced


@pytest.mark.parametrize("name", CALLS)
def test_a_finalizer_working_between_the_c_call_and_the_copy_changes_nothing(name: str) -> None:
    results, inner = _under_inner_work(lambda: [CALLS[name]() for _ in range(20)])
    assert inner >= 20  # collections ran, each sealing, opening and canonicalizing on this thread
    assert results == [EXPECTED[name]] * 20


def test_open_post_through_cffi_under_a_finalizer_changes_nothing() -> None:
    sealed = TERMINAL.seal(orjson.loads(OUTER), timestamp=NOON)
    headers, body = sealed.headers, sealed.body
    assert body is not None  # a POST's
    results, inner = _under_inner_work(
        lambda: [_binding._open_post_cffi(CREDENTIALS, headers, body, NOON, 300) for _ in range(20)])
    assert inner >= 20
    assert results == [(OUTER, 0)] * 20
