"""A plaintext that is not UTF-8 is refused, whatever else is wrong with it, and the C core finds its first bad byte.

The C core canonicalizes the decrypted text first and looks for bad UTF-8 only in a text it refused (a text it
accepts is UTF-8: it checks every byte of its strings, and reads nothing else but ASCII). So the refusal must be the
same when the canonicalizer stops for another reason before the bad byte (a syntax error, a control byte), declines
the text (a duplicate key, an unsafe integer, a number out of range) or never reaches it (bytes after the value):
open and open_bytes, on the C paths (pasarela._fastcall and cffi), answer as the reference does, with the one
reason of every refusal after decryption (errors.NOT_VERIFIED: where the bad byte lies is no forger's business);
the C core's workspace says where the first bad byte is.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from test_open import _forged

import pasarela
from pasarela import AuthError, _binding, reference
from pasarela.errors import NOT_VERIFIED
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL

TEXTS = [
    b'{"a":1,,"b":"\xff"}',  # a syntax error before it
    b'{"a":"\x01\xff"}',  # a control byte in the string before it
    b'{"a":"x","a":"\xff"}',  # a duplicate key (declined) before it
    b'{"a":12345678901234567890,"b":"\xc3"}',  # an unsafe integer before it; a truncated sequence
    b'{"a":1e999,"b":"\xf5\x80\x80\x80"}',  # a number out of range before it; a lead byte above U+10FFFF
    b'{"\xed\xa0\x80":1}',  # a UTF-8-encoded surrogate in a key
    b'{"a":"\xc0\xaf"}',  # an overlong form
    b'{"a":1}\xff',  # after the value
    b'{"a":1} \xe2\x82',  # after the value and a space, cut short
    b'\xff{"a":1}',  # before the value
    b'{"a":[1,2,\xff]}',  # where a value is expected
]


def _first_bad_byte(text: bytes) -> int:
    """Where Python's UTF-8 decoder (an independent reading of the same rules) first fails on text."""
    with pytest.raises(UnicodeDecodeError) as failed:
        text.decode("utf-8")
    return failed.value.start


def _reason(call: Callable[[], Any]) -> str:
    with pytest.raises(AuthError) as refused:
        call()
    return refused.value.reason


@pytest.mark.parametrize("path", ["fastcall", "cffi"])
@pytest.mark.parametrize("plaintext", TEXTS, ids=[repr(text) for text in TEXTS])
def test_a_plaintext_that_is_not_utf8_is_refused_at_its_first_bad_byte(path: str, plaintext: bytes) -> None:
    headers, data = _forged(plaintext, sign_over=b"{}")
    body = b'{"data":"' + data.encode("ascii") + b'"}'
    expected = NOT_VERIFIED
    ours = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    assert _reason(lambda: _binding.open_request(ours._native, NOON, data.encode("ascii"),
                                                 headers["Authorization"][6:].encode("ascii"))) == expected
    assert _binding._workspace.buffers.ws.error_offset == _first_bad_byte(plaintext)
    theirs = reference.Terminal(BUSINESS_CODE, SERIAL)
    assert _reason(lambda: theirs.open("POST", headers, body, now=NOON)) == expected
    assert _reason(lambda: theirs.open_bytes("POST", headers, body, now=NOON)) == expected
    with pytest.MonkeyPatch.context() as patch:
        if path == "cffi":
            patch.setattr(_binding, "open_post", _binding._open_post_cffi)
            patch.setattr(_binding, "open_post_bytes", _binding._open_post_bytes_cffi)
        else:
            # pasarela._fastcall, built here, unless PASARELA_NO_FASTCALL=1 chose the cffi path for every call
            assert (_binding.open_post is not _binding._open_post_cffi) == _binding.FASTCALL
        ours = pasarela.Terminal(BUSINESS_CODE, SERIAL)
        assert _reason(lambda: ours.open("POST", headers, body, now=NOON)) == expected
        assert _reason(lambda: ours.open_bytes("POST", headers, body, now=NOON)) == expected
