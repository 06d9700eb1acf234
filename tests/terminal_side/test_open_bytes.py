"""Terminal.open_bytes: the verified plaintext as JSON.stringify writes it, after open's checks (issue 42, goal 2).

For every request the open tests use (tests/test_open*.py: round trips, every body form and method, every tampered
byte, every refusal, the C reading's mutations, texts signed as sent, spliced "key" members, paddings), open_bytes
answers as open does: the canonical bytes of open's payload, or the same AuthError (same reason, same AUTH-001). On
every path: pasarela._fastcall, the cffi path (what PASARELA_NO_FASTCALL=1 selects at import: in process by putting
its functions in place, and once in a subprocess with the switch), the reference a CPU without AES falls back to, and
pasarela.reference.Terminal itself. Hypothesis payloads and texts are cross-checked against the reference and against
node's JSON.stringify(JSON.parse(text)).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fast_parse import CANONICAL_TEXTS, DECLINED_CANONICAL_TEXTS, NOT_CANONICAL_TEXTS, REFUSED_TEXTS, compact_texts
from test_open import _MUTATIONS, PAYLOAD, PROTO_PLAINTEXT, REFUSALS, _forged, _sealed_bytes_request, _tampered_requests
from test_open_as_sent import _request as _request_signed_as_sent
from test_open_key_member import TEXTS as SPLICED_KEY_TEXTS
from test_open_key_member import _request as _spliced_request
from test_open_padding import LAST_BLOCKS, WYCHEPROOF, _encrypt_blocks, _headers, _padded

import pasarela
from pasarela import AuthError, _binding, reference
from pasarela.errors import AUTH_001_BODY, NOT_VERIFIED
from pasarela.terminal import envelope
from pasarela.terminal.replay import InMemoryReplayStore, Verifier
from pasarela.terminal.stringify import stringify
from support.faulty_clients import BUSINESS_CODE, FAULTY, HANDMADE, NOON, SERIAL, Captured
from support.otel_sdk import Sdk, installed, opened
from support.strategies import json_texts, mutated_json_texts, sealable_objects

PATHS = ["fastcall", "cffi", "no_aes", "reference"]


@contextlib.contextmanager
def _on_path(path: str) -> Iterator[Any]:
    """A terminal whose open and open_bytes take path: pasarela._fastcall (the default on CPython), the cffi
    functions PASARELA_NO_FASTCALL=1 selects, Terminal's fallback to the reference on a CPU without AES, or
    pasarela.reference.Terminal."""
    with pytest.MonkeyPatch.context() as patch:
        if path == "cffi":
            patch.setattr(_binding, "open_post", _binding._open_post_cffi)
            patch.setattr(_binding, "open_post_bytes", _binding._open_post_bytes_cffi)
        elif path == "no_aes":
            patch.setattr(envelope, "_HAS_HW_AES", False)
        yield (reference.Terminal if path == "reference" else pasarela.Terminal)(BUSINESS_CODE, SERIAL)


def _answer(call: Callable[[], Any]) -> Any:
    """What call returns, or ("refused", reason) for its AuthError, which must be the one AUTH-001."""
    try:
        return call()
    except AuthError as err:
        assert err.body == AUTH_001_BODY and err.status == 401
        assert str(err) == "AUTH-001: Invalid or expired credentials"
        return ("refused", err.reason)


def _both(terminal: Any, method: str, headers: Any, body: Any = None, params: Any = None, *, now: float = NOON,
          tolerance: float = 300) -> Any:
    """open_bytes's answer, checked equal to open's: its payload's canonical bytes, or the same refusal."""
    opened = _answer(lambda: terminal.open(method, headers, body, params, now=now, tolerance=tolerance))
    as_bytes = _answer(lambda: terminal.open_bytes(method, headers, body, params, now=now, tolerance=tolerance))
    if isinstance(opened, dict):
        assert type(as_bytes) is bytes, (opened, as_bytes)
        assert as_bytes == stringify(opened)
    else:
        assert as_bytes == opened
    return as_bytes


@pytest.mark.parametrize("path", PATHS)
def test_open_bytes_returns_the_sealed_text_for_every_body_form_and_method(path: str) -> None:
    with _on_path(path) as terminal:
        sealed = terminal.seal(PAYLOAD, timestamp=NOON)
        text = reference.canonical_json(PAYLOAD)
        lowered = {name.lower(): value for name, value in sealed.headers.items()}
        for body in (sealed.body, sealed.body.decode(), json.loads(sealed.body)):
            assert _both(terminal, "POST", dict(sealed.headers), body) == text
            assert _both(terminal, "post", lowered, body) == text
        for method in ("PUT", "PATCH"):
            other = terminal.seal(PAYLOAD, method=method, timestamp=NOON)
            assert _both(terminal, method, other.headers, other.body) == text
        get = terminal.seal(PAYLOAD, method="GET", timestamp=NOON)
        assert _both(terminal, "GET", get.headers, params=f"data={get.data}") == text
        assert _both(terminal, "GET", get.headers, params={"data": [get.data]}) == text
        empties: list[Optional[dict[str, Any]]] = [None, {}]
        for empty in empties:
            braces = terminal.seal(empty, timestamp=NOON)
            assert _both(terminal, "POST", braces.headers, braces.body) == b"{}"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("method", "headers", "body", "params", "word"), [case[1:] for case in REFUSALS],
                         ids=[case[0] for case in REFUSALS])
def test_open_bytes_refuses_what_open_refuses(path: str, method: str, headers: dict[str, str], body: Any,
                                              params: Any, word: str) -> None:
    with _on_path(path) as terminal:
        assert _both(terminal, method, headers, body, params)[0] == "refused"


@pytest.mark.parametrize("path", PATHS)
def test_open_bytes_refuses_every_tampered_byte(path: str) -> None:
    with _on_path(path) as terminal:
        for what, headers, body in _tampered_requests():
            assert _both(terminal, "POST", headers, body)[0] == "refused", what


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mutation", range(len(_MUTATIONS)))
@pytest.mark.parametrize("now", [NOON, NOON + 0.5, float("nan")])
def test_open_bytes_reads_a_changed_post_as_open_does(path: str, mutation: int, now: float) -> None:
    headers, body = _MUTATIONS[mutation](*_sealed_bytes_request())
    with _on_path(path) as terminal:
        _both(terminal, "POST", headers, body, now=now)
        _both(terminal, "post", headers, body, now=now)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("now", "tolerance"), [(NOON + 301, 300), (NOON + 300, 300), (NOON + 10, 5),
                                                 (float("nan"), 300), (NOON, float("nan"))])
def test_open_bytes_keeps_open_s_timestamp_window(path: str, now: float, tolerance: float) -> None:
    headers, body = _sealed_bytes_request()
    with _on_path(path) as terminal:
        _both(terminal, "POST", headers, body, now=now, tolerance=tolerance)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("text", CANONICAL_TEXTS + DECLINED_CANONICAL_TEXTS + NOT_CANONICAL_TEXTS + REFUSED_TEXTS,
                         ids=repr)
def test_open_bytes_of_any_text_signed_as_sent(path: str, text: bytes) -> None:
    headers, body = _request_signed_as_sent(text)
    with _on_path(path) as terminal:
        answer = _both(terminal, "POST", headers, body)
    if text in CANONICAL_TEXTS:
        assert answer == text


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("plaintext", [b'{"amount":100,"meta":{"__proto__":{"admin":true}}}',
                                       b'{"a": 12345678901234567890, "b" : [1.0, -0.0, 1E2]}', b'{"b":2,"a":1,"b":3}',
                                       b'{"a":"\\u00e9\\ud83d\\ude00","c":0.30000000000000004,"d":5e-324}'], ids=repr)
def test_open_bytes_of_a_text_signed_canonical(path: str, plaintext: bytes) -> None:
    """Texts the C canonicalizer writes and those it leaves to the pure-Python path (repeated keys, 5e-324)."""
    canonical = reference.canonical_json(plaintext)
    headers, data = _forged(plaintext, sign_over=canonical)
    with _on_path(path) as terminal:
        assert _both(terminal, "POST", headers, {"data": data}) == canonical
        assert _both(terminal, "POST", headers, b'{"data":"' + data.encode() + b'"}') == canonical


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("signed", [PROTO_PLAINTEXT, b'{"amount":100}'], ids=["obj.key=", "Object.assign"])
def test_open_bytes_refuses_a_top_level_proto(path: str, signed: bytes) -> None:
    headers, data = _forged(PROTO_PLAINTEXT, sign_over=signed)
    with _on_path(path) as terminal:
        assert _both(terminal, "POST", headers, {"data": data})[0] == "refused"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("text", SPLICED_KEY_TEXTS, ids=repr)
def test_open_bytes_refuses_a_top_level_key_signed_by_splicing(path: str, text: bytes) -> None:
    headers, data = _spliced_request(text)
    with _on_path(path) as terminal:
        assert _both(terminal, "POST", headers, {"data": data})[0] == "refused"
        assert _both(terminal, "POST", headers, b'{"data":"' + data.encode() + b'"}')[0] == "refused"


@pytest.mark.parametrize("path", PATHS)
def test_open_bytes_and_the_padding(path: str) -> None:
    """Every padding of test_open_padding (Wycheproof's and every last block), signed as sent and as "{}"."""
    with _on_path(path) as terminal:
        for padded in [blocks for _, blocks, _ in WYCHEPROOF] + [blocks for _, blocks in LAST_BLOCKS]:
            for signed in (b"{}", padded[:len(padded) - padded[-1]] if 0 < padded[-1] <= 16 else padded):
                _both(terminal, "POST", _headers(signed), {"data": _encrypt_blocks(padded)})
        prefix = b'{"amount":100,"currency":"COP"}'
        assert _both(terminal, "POST", _headers(prefix), {"data": _encrypt_blocks(_padded(prefix))}) == prefix


@given(payload=sealable_objects(), path=st.sampled_from(PATHS), method=st.sampled_from(["GET", "POST", "PUT"]))
def test_open_bytes_of_any_sealed_payload_is_node_s_stringify(node_stringify: Callable[[bytes], bytes],
                                                             payload: dict[str, Any], path: str, method: str) -> None:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload, method=method, timestamp=NOON)
    with _on_path(path) as terminal:
        answer = _both(terminal, method, dict(sealed.headers), sealed.body, sealed.params)
    assert answer == sealed.plaintext == node_stringify(sealed.plaintext)
    assert answer == reference.Terminal(BUSINESS_CODE, SERIAL).open_bytes(method, sealed.headers, sealed.body,
                                                                          sealed.params, now=NOON)


def _node_answer(node_stringify: Callable[[bytes], bytes], text: bytes) -> Optional[bytes]:
    try:
        return node_stringify(text)
    except ValueError:  # NodeJSONError: JSON.parse refuses it
        return None


@given(text=st.one_of(compact_texts(), json_texts(), mutated_json_texts()), wrapped=st.booleans(),
       path=st.sampled_from(PATHS), signed_canonical=st.booleans())
def test_open_bytes_of_any_text_is_the_reference_s_and_node_s(node_stringify: Callable[[bytes], bytes], text: str,
                                                             wrapped: bool, path: str, signed_canonical: bool) -> None:
    """Any text, signed as sent or signed as the server signs it (node's JSON.stringify of its JSON.parse): accepted
    exactly when the reference accepts it, as node's text."""
    plaintext = (f'{{"a":{text}}}' if wrapped else text).encode("utf-8", "surrogatepass")
    node_text = _node_answer(node_stringify, plaintext)
    headers, body = _request_signed_as_sent(plaintext, sign_over=node_text if signed_canonical else None)
    with _on_path(path) as terminal:
        answer = _both(terminal, "POST", headers, body)
    theirs = _answer(lambda: reference.Terminal(BUSINESS_CODE, SERIAL).open_bytes("POST", headers, body, now=NOON))
    assert answer == theirs or answer[0] == theirs[0] == "refused", (answer, theirs)
    if type(answer) is bytes:
        assert answer == node_text


@pytest.fixture(scope="module")
def otel() -> Sdk:
    assert pasarela._telemetry.ENABLED, "opentelemetry-api must be installed for these tests (the dev extra has it)"
    return installed()


@pytest.mark.parametrize(("outcome", "make"), FAULTY + HANDMADE, ids=[o for o, _ in FAULTY + HANDMADE])
def test_open_bytes_is_counted_as_an_open_under_open_s_outcome(otel: Sdk, outcome: str,
                                                                make: Callable[[], Captured]) -> None:
    captured = make()
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    before = otel.points()
    answer = _answer(lambda: terminal.open_bytes(captured.method, captured.headers, captured.body, captured.params,
                                                 now=NOON))
    assert (answer[0] == "refused") == (outcome != "ok"), answer
    assert opened(otel, before) == {outcome: 1}


@pytest.mark.parametrize("path", PATHS)
def test_a_verifier_s_open_bytes_answers_as_its_open_and_refuses_a_replay(path: str) -> None:
    headers, body = _sealed_bytes_request()
    with _on_path(path) as terminal:
        for call in ("open_bytes", "open_bytes_async"):
            verifier = Verifier(terminal, replay_store=InMemoryReplayStore(clock=lambda: NOON), clock=lambda: NOON)
            first = getattr(verifier, call)("POST", headers, body)
            text = asyncio.run(first) if call.endswith("_async") else first
            assert text == stringify(Verifier(terminal).open("POST", headers, body, now=NOON))
            again = _answer(functools.partial(asyncio.run, verifier.open_bytes_async("POST", headers, body)))
            assert again[0] == "refused" and "replayed" in again[1]
            assert _answer(functools.partial(verifier.open_bytes, "POST", headers, body)) == again
        forged = {**headers, "Authorization": headers["Authorization"][:-1] + "0"}
        assert (_answer(lambda: Verifier(terminal).open_bytes("POST", forged, body, now=NOON))
                == _answer(lambda: Verifier(terminal).open("POST", forged, body, now=NOON)))


PROBE = """
import json, pasarela
from pasarela import _binding
terminal = pasarela.Terminal("bc-1", "SN-1")
sealed = terminal.seal({"amount": 1.5, "items": [None], "n": 2.0 ** 60}, timestamp=1764072000)
try:
    terminal.open_bytes("POST", {**sealed.headers, "timestamp": "1764072001"}, sealed.body, now=1764072000)
except pasarela.AuthError as exc:
    refusal = exc.reason
print(json.dumps({
    "cffi": _binding.open_post_bytes is _binding._open_post_bytes_cffi,
    "opened": terminal.open_bytes("POST", sealed.headers, sealed.body, now=1764072000).decode(),
    "refusal": refusal,
}))
"""


def test_open_bytes_with_pasarela_no_fastcall() -> None:
    environment = {**os.environ, "PASARELA_NO_FASTCALL": "1"}
    result = subprocess.run([sys.executable, "-c", PROBE], env=environment, capture_output=True, text=True,
                            check=True, timeout=60)
    answer = json.loads(result.stdout)
    assert answer["cffi"] is True
    assert answer["opened"] == '{"amount":1.5,"items":[null],"n":1152921504606847000}'
    assert answer["refusal"] == NOT_VERIFIED  # another timestamp: another key
