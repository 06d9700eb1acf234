"""Known answers and cross-checks for the C primitives (MD5, SHA-512, Base64, hex, AES-256-CBC)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given
from hypothesis import strategies as st

from pasarela import _binding
from pasarela._native import lib

VECTORS = Path(__file__).resolve().parents[1] / "vectors"

# RFC 1321, appendix A.5
MD5_SUITE = [
    (b"", "d41d8cd98f00b204e9800998ecf8427e"),
    (b"a", "0cc175b9c0f1b6a831c399e269772661"),
    (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
    (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
    (b"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
    (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
    (b"1234567890" * 8, "57edf4a22be3c955ac49da2e2107b67a"),
]

# FIPS 180-4 examples (NIST CSRC "SHA512.pdf")
SHA512_SUITE = [
    (
        b"abc",
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
        "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
    ),
    (
        b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
        "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
        "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909",
    ),
    (
        b"",
        "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
        "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
    ),
    (
        b"a" * 1_000_000,
        "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
        "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b",
    ),
]

# NIST SP 800-38A, F.2.5 / F.2.6 (CBC-AES256)
SP800_38A_KEY = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
SP800_38A_IV = "000102030405060708090a0b0c0d0e0f"
SP800_38A_PLAIN = (
    "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710"
)
SP800_38A_CIPHER = (
    "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
    "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b"
)


@pytest.mark.parametrize(("message", "digest"), MD5_SUITE)
def test_md5_rfc1321_suite(message: bytes, digest: str) -> None:
    assert _binding.md5(message).hex() == digest


@pytest.mark.parametrize(("message", "digest"), SHA512_SUITE, ids=["abc", "two-block", "empty", "million-a"])
def test_sha512_fips180_examples(message: bytes, digest: str) -> None:
    assert _binding.sha512(message).hex() == digest


@given(st.binary(max_size=2048))
def test_md5_and_sha512_match_hashlib(data: bytes) -> None:
    assert _binding.md5(data) == hashlib.md5(data).digest()  # noqa: S324
    assert _binding.sha512(data) == hashlib.sha512(data).digest()


@given(st.binary(max_size=1024))
def test_base64_and_hex_match_stdlib(data: bytes) -> None:
    assert _binding.base64_encode(data) == base64.b64encode(data)
    assert _binding.hex_encode(data) == data.hex()
    assert _binding.hex_decode(data.hex().encode()) == data
    assert _binding.hex_decode(data.hex().upper().encode()) == data


@pytest.mark.parametrize("text", [b"0", b"abc", b"zz", b"0g", b"12 4", b"\xff\xff"])
def test_hex_decode_refuses_non_hex(text: bytes) -> None:
    assert _binding.hex_decode(text) is None


def test_aes256_cbc_sp800_38a() -> None:
    key, iv = bytes.fromhex(SP800_38A_KEY), bytes.fromhex(SP800_38A_IV)
    plain, cipher = bytes.fromhex(SP800_38A_PLAIN), bytes.fromhex(SP800_38A_CIPHER)
    sealed = _binding.aes256_cbc_encrypt(key, iv, plain)
    assert sealed[:64] == cipher  # then one block of PKCS#7 padding (16 x 0x10)
    assert len(sealed) == 80
    status, opened = _binding.aes256_cbc_decrypt(key, iv, sealed)
    assert status == lib.PASARELA_OK and opened == plain


def _wycheproof_aes256_cases() -> list[dict[str, str]]:
    data = json.loads((VECTORS / "wycheproof_aes_cbc_pkcs5_test.json").read_text())
    return [case for group in data["testGroups"] if group["keySize"] == 256 for case in group["tests"]]


@pytest.mark.parametrize("case", _wycheproof_aes256_cases(), ids=lambda c: f"tc{c['tcId']}")
def test_aes256_cbc_wycheproof(case: dict[str, str]) -> None:
    key, iv = bytes.fromhex(case["key"]), bytes.fromhex(case["iv"])
    msg, ct = bytes.fromhex(case["msg"]), bytes.fromhex(case["ct"])
    status, opened = _binding.aes256_cbc_decrypt(key, iv, ct)
    if case["result"] == "valid":
        assert _binding.aes256_cbc_encrypt(key, iv, msg) == ct
        assert status == lib.PASARELA_OK and opened == msg
    else:  # invalid padding or length: refused, nothing returned
        assert status in (lib.PASARELA_E_BAD_PADDING, lib.PASARELA_E_BAD_LENGTH)
        assert opened == b""


def test_wycheproof_file_has_aes256_invalid_cases() -> None:
    cases = _wycheproof_aes256_cases()
    assert len(cases) > 50
    assert any(case["result"] == "invalid" for case in cases)


@given(st.binary(min_size=32, max_size=32), st.binary(min_size=16, max_size=16), st.binary(max_size=600))
def test_aes256_cbc_matches_cryptography(key: bytes, iv: bytes, plain: bytes) -> None:
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    expected = encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
    assert _binding.aes256_cbc_encrypt(key, iv, plain) == expected
    assert _binding.aes256_cbc_decrypt(key, iv, expected) == (lib.PASARELA_OK, plain)


@pytest.mark.parametrize("length", [0, 15, 17, 31])
def test_aes256_cbc_decrypt_refuses_bad_length(length: int) -> None:
    assert _binding.aes256_cbc_decrypt(bytes(32), bytes(16), bytes(length)) == (
        lib.PASARELA_E_BAD_LENGTH,
        b"",
    )


def test_strerror_names_every_status() -> None:
    messages = {_binding.strerror(status) for status in range(lib.PASARELA_SIGNED_AS_SENT + 1)}
    assert len(messages) == lib.PASARELA_SIGNED_AS_SENT + 1 and "unknown status" not in messages
    assert _binding.strerror(999) == "unknown status"


def test_hardware_aes_detected_on_this_machine() -> None:
    # CI and development machines are x86-64 with AES-NI; the fallback path has its own test.
    assert _binding.HAS_HW_AES
