"""Terminal.open of a text signed as it was sent: pasarela_open_request_as_sent checks the signature of the decrypted
text as sent, and the reader that builds the payload confirms the text is canonical (test_fast_parse.py: the
canonical reading), so that the C core need not canonicalize what a JavaScript client sends. A holder of the key may
sign anything as sent: the server refuses every such text that is not its own JSON.stringify, and so must open,
with the same refusal as the reference (which canonicalizes every text), and accept the rest with the same payload.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fast_parse import (
    CANONICAL_TEXTS,
    DECLINED_CANONICAL_TEXTS,
    NOT_CANONICAL_TEXTS,
    REFUSED_TEXTS,
    compact_texts,
    same,
)

import pasarela
from pasarela import AuthError, _binding, reference
from pasarela.terminal import reference as primitives
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL
from support.strategies import json_texts, mutated_json_texts, sealable_objects

IV = bytes(range(16))
_DERIVED = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
lib, ffi = _binding.lib, _binding.ffi


def _request(plaintext: bytes, *, sign_over: Optional[bytes] = None, pad: bool = True) -> tuple[dict[str, str], bytes]:
    """A POST request around plaintext under the right key, signed over sign_over (default: the plaintext as
    sent); pad=False encrypts the plaintext as it is (a multiple of 16 bytes), its last block read as padding."""
    if pad:
        data = primitives.encrypt(_DERIVED.aes_key, IV, plaintext)
    else:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        encryptor = Cipher(algorithms.AES(_DERIVED.aes_key), modes.CBC(IV)).encryptor()
        data = f"{IV.hex()}:{(encryptor.update(plaintext) + encryptor.finalize()).hex()}"
    signature = primitives.sign(plaintext if sign_over is None else sign_over, _DERIVED.encoded_key)
    return {"Authorization": "Basic " + signature, "timestamp": str(NOON)}, b'{"data":"' + data.encode() + b'"}'


def _outcome(terminal: Any, headers: dict[str, str], body: bytes, method: str = "POST") -> Any:
    try:
        return terminal.open(method, headers, body, now=NOON)
    except AuthError as exc:
        return ("refused", exc.reason)


def _same_outcome(plaintext: bytes, sign_over: Optional[bytes] = None) -> Any:
    """The outcome of open_post (pasarela._fastcall: the text as sent first), checked equal to that of the slower
    reading ("post": read_request_bytes, then pasarela_open, which canonicalizes every text), refusal reasons
    included, and to the reference's payload or refusal (whose reasons are worded for operators in its own way)."""
    headers, body = _request(plaintext, sign_over=sign_over)
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    ours = _outcome(terminal, headers, body)
    assert same(ours, _outcome(terminal, headers, body, "post")), plaintext
    theirs = _outcome(reference.Terminal(BUSINESS_CODE, SERIAL), headers, body)
    assert same(ours, theirs) or ours[0] == theirs[0] == "refused", (plaintext, ours, theirs)
    return ours


def _core(plaintext: bytes, *, sign_over: Optional[bytes] = None, pad: bool = True, as_sent: bool = True
          ) -> tuple[int, bytes, int, bytes]:
    """The C core's (status, ws->out[0, out_len), plaintext_len, the first bytes of ws->out) for the request."""
    headers, body = _request(plaintext, sign_over=sign_over, pad=pad)
    authorization, timestamp = headers["Authorization"].encode(), headers["timestamp"].encode()
    buffers = _binding._buffers(len(body))
    call = lib.pasarela_open_request_as_sent if as_sent else lib.pasarela_open_request
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)  # alive while its credentials are in use
    status = call(terminal._native.struct, buffers.ws, timestamp, len(timestamp), NOON, 300, authorization,
                  len(authorization), body, len(body))
    ws = buffers.ws
    return (status, ffi.unpack(ffi.cast("char *", ws.out), ws.out_len), ws.plaintext_len,
            ffi.unpack(ffi.cast("char *", ws.out), 16))


def test_the_core_answers_signed_as_sent_for_a_text_signed_as_sent() -> None:
    text = b'{"amount":100,"currency":"COP"}'
    status, out, plaintext_len, _ = _core(text)
    assert (status, out, plaintext_len) == (lib.PASARELA_SIGNED_AS_SENT, text, 0)
    assert lib.PASARELA_SIGNED_AS_SENT not in (lib.PASARELA_OK, lib.PASARELA_E_SIGNATURE)
    assert "caller must confirm" in _binding.strerror(lib.PASARELA_SIGNED_AS_SENT)


@pytest.mark.parametrize(("plaintext", "sign_over", "pad"), [
    (b'{ "amount": 100 }', b'{"amount":100}', True),  # not canonical, signed as the server signs it: accepted
    (b'{"amount":100}', b'{"amount":101}', True),  # a wrong signature
    (b'{"amount":1.50}', b'{"amount":1.5}', True),
    (b"", b"{}", True), (b"{", b"{", True), (b"{" + b"\x0f" * 15, b"{", False),  # shorter than "{}"
    (b"\x10" * 16, b"", False),  # all padding
    (b'{"amount":100}\x02\x02', b'{"amount":100}\x02\x02', False),  # "\x02\x02" is valid padding: not signed
    (b'{"a":"01234567"}', b'{"a":"01234567"}', False),  # 16 bytes ending in "}": no valid padding
])  # fmt: skip
def test_when_the_text_as_sent_is_not_what_was_signed_the_core_answers_as_open_request(
        plaintext: bytes, sign_over: bytes, pad: bool) -> None:
    as_sent = _core(plaintext, sign_over=sign_over, pad=pad)
    assert as_sent[0] != lib.PASARELA_SIGNED_AS_SENT
    assert as_sent == _core(plaintext, sign_over=sign_over, pad=pad, as_sent=False)


def test_invalid_padding_is_refused_as_such_even_when_the_whole_text_was_signed_as_sent() -> None:
    text = b'{"a":"01234567"}'  # 16 bytes whose last, "}", is no padding
    status, out, _, head = _core(text, sign_over=text, pad=False)
    assert status == lib.PASARELA_E_BAD_PADDING
    assert out == b"" and head == bytes(16)  # wiped, as every refusal


@pytest.mark.parametrize("text", CANONICAL_TEXTS + DECLINED_CANONICAL_TEXTS + NOT_CANONICAL_TEXTS + REFUSED_TEXTS,
                         ids=repr)
def test_open_answers_as_the_reference_whatever_was_signed_as_sent(text: bytes) -> None:
    outcome = _same_outcome(text)
    if text in CANONICAL_TEXTS or text in DECLINED_CANONICAL_TEXTS:
        assert isinstance(outcome, dict)
    elif text in REFUSED_TEXTS:
        assert outcome[0] == "refused"


@pytest.mark.parametrize("text", NOT_CANONICAL_TEXTS, ids=repr)
def test_a_text_that_is_not_canonical_is_refused_when_signed_as_sent_and_read_when_signed_canonical(
        text: bytes) -> None:
    outcome = _same_outcome(text)
    assert outcome[0] == "refused", outcome
    try:
        canonical = reference.canonical_json(json.loads(text.decode("utf-8")))
    except ValueError:  # not UTF-8, not JSON (or nothing JSON.stringify writes): refused either way
        return
    if text.startswith(b"{") and canonical.startswith(b"{"):
        assert isinstance(_same_outcome(text, sign_over=canonical), dict)


@given(text=st.one_of(compact_texts(), json_texts(), mutated_json_texts()), wrapped=st.booleans())
def test_open_answers_as_the_reference_for_any_text_signed_as_sent(text: str, wrapped: bool) -> None:
    _same_outcome((f'{{"a":{text}}}' if wrapped else text).encode("utf-8", "surrogatepass"))


@given(payload=sealable_objects())
def test_every_sealed_payload_opens_as_the_reference_opens_it(payload: dict[str, Any]) -> None:
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=NOON)
    headers, body = dict(sealed.headers), sealed.body or b""
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    ours = _outcome(terminal, headers, body)
    assert isinstance(ours, dict)
    assert same(ours, _outcome(terminal, headers, body, "post"))
    assert same(ours, _outcome(reference.Terminal(BUSINESS_CODE, SERIAL), headers, body))
