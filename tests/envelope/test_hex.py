"""Hex as the C core writes and reads it, against the standard library's bytes.hex and bytes.fromhex.

The core has hex codes that must agree byte for byte: the portable one (pasarela_hex_encode and
pasarela_hex_decode, which _binding.hex_encode and hex_decode call) and, on x86-64 with AVX2, the vector ones (AVX2,
and for decoding AVX-512 VBMI where the CPU has it), which seal and open run with the credentials' cpu bits. The
_binding tests reach the first; the seal and decrypt_data tests reach the widest this machine has (the first
elsewhere). csrc/tests/test_primitives.c compares them directly, every length and every invalid byte.
"""

from __future__ import annotations

import itertools
import random
import string
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pasarela import AuthError, _binding
from pasarela.errors import BAD_DATA
from pasarela.terminal import reference

BUSINESS_CODE = b"bc-7f3a1c2e9d"
SERIAL = b"SN-0042"
NOON = 1763812800
CREDENTIALS = _binding.Credentials(BUSINESS_CODE, SERIAL)
DERIVED = reference.derive(BUSINESS_CODE, SERIAL, NOON)

NON_HEX = sorted(set(range(256)) - set(string.hexdigits.encode("ascii")))
payloads = st.binary(max_size=2000)  # up to 126 ciphertext blocks: the 64- and 32-digit vector steps and tails
ivs = st.binary(min_size=16, max_size=16)
non_hex_bytes = st.sampled_from(NON_HEX)


def _any_case(text: bytes, uppers: Iterator[bool]) -> bytes:
    """text with the letters for which uppers says so in uppercase."""
    return bytes(c - 32 if c in b"abcdef" and upper else c for c, upper in zip(text, uppers))


def _coin_flips(rnd: random.Random) -> Iterator[bool]:
    return iter(lambda: rnd.random() < 0.5, None)


MIXED = (False, True, True)  # by position: lowercase, uppercase, uppercase, and again


def _with_byte(text: bytes, position: int, byte: int) -> bytes:
    return text[:position] + bytes([byte]) + text[position + 1:]


@given(st.binary(max_size=2000), st.randoms(use_true_random=False))
def test_binding_hex_decode_reads_any_case(data: bytes, rnd: random.Random) -> None:
    text = _any_case(data.hex().encode("ascii"), _coin_flips(rnd))
    assert _binding.hex_decode(text) == bytes.fromhex(text.decode("ascii")) == data


@given(st.binary(min_size=1, max_size=600), st.randoms(use_true_random=False), non_hex_bytes, st.data())
def test_binding_hex_decode_refuses_any_non_hex_byte(data: bytes, rnd: random.Random, bad: int,
                                                     draw: st.DataObject) -> None:
    text = _any_case(data.hex().encode("ascii"), _coin_flips(rnd))
    position = draw.draw(st.integers(0, len(text) - 1))
    assert _binding.hex_decode(_with_byte(text, position, bad)) is None
    with pytest.raises(ValueError):
        bytes.fromhex(_with_byte(text, position, bad).decode("latin-1"))


def test_binding_hex_decode_refuses_every_non_hex_byte_at_every_position() -> None:
    data = bytes(range(0, 256, 20))
    text = _any_case(data.hex().encode("ascii"), itertools.cycle(MIXED))  # 26 digits: three SWAR words, then a pair
    assert _binding.hex_decode(text) == data
    refused = {(bad, position) for bad in NON_HEX for position in range(len(text))
               if _binding.hex_decode(_with_byte(text, position, bad)) is None}
    assert len(refused) == len(NON_HEX) * len(text)


@given(st.binary(max_size=600).map(lambda b: b.hex().encode("ascii")))
def test_binding_hex_decode_refuses_odd_lengths(text: bytes) -> None:
    assert _binding.hex_decode(text + b"0") is None


@given(payloads, ivs)
def test_seal_writes_the_stdlib_hex_of_signature_iv_and_ciphertext(middle: bytes, iv: bytes) -> None:
    plaintext = b"{" + middle + b"}"
    sealed, n = _binding.seal(CREDENTIALS, NOON, plaintext, iv)  # the plaintext, the signature, the body
    assert sealed[:n] == plaintext
    signature, body = sealed[n:n + 128].decode("ascii"), sealed[n + 128:]
    assert signature == reference.sign(plaintext, DERIVED.encoded_key)  # hashlib's hexdigest()
    # iv.hex() + ":" + ciphertext.hex(), the ciphertext from the cryptography package
    assert body == b'{"data":"' + reference.encrypt(DERIVED.aes_key, iv, plaintext).encode("ascii") + b'"}'


@given(payloads, ivs, st.randoms(use_true_random=False))
def test_decrypt_data_reads_hex_in_any_case(plaintext: bytes, iv: bytes, rnd: random.Random) -> None:
    data = _any_case(reference.encrypt(DERIVED.aes_key, iv, plaintext).encode("ascii"), _coin_flips(rnd))
    assert _binding.decrypt_data(CREDENTIALS, NOON, data) == plaintext


@given(payloads, ivs, st.randoms(use_true_random=False), non_hex_bytes, st.data())
def test_decrypt_data_refuses_any_non_hex_byte(plaintext: bytes, iv: bytes, rnd: random.Random, bad: int,
                                               draw: st.DataObject) -> None:
    data = _any_case(reference.encrypt(DERIVED.aes_key, iv, plaintext).encode("ascii"), _coin_flips(rnd))
    position = draw.draw(st.integers(0, len(data) - 1).filter(lambda p: p != 32))  # 32: the colon
    with pytest.raises(AuthError) as info:
        _binding.decrypt_data(CREDENTIALS, NOON, _with_byte(data, position, bad))
    assert info.value.reason == BAD_DATA


def test_decrypt_data_refuses_every_non_hex_byte_at_every_position() -> None:
    data = _any_case(reference.encrypt(DERIVED.aes_key, bytes(16), b"x" * 100).encode("ascii"), itertools.cycle(MIXED))
    assert len(data) == 33 + 224  # the IV (a 32-digit step), the ciphertext (three 64-digit steps and a 32-digit one)
    assert _binding.decrypt_data(CREDENTIALS, NOON, data) == b"x" * 100
    for position in [p for p in range(len(data)) if p != 32]:
        for bad in NON_HEX:
            with pytest.raises(AuthError) as info:
                _binding.decrypt_data(CREDENTIALS, NOON, _with_byte(data, position, bad))
            assert info.value.reason == BAD_DATA, (position, bad)
