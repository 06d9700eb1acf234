"""Terminal.open and the CBC padding (issue 11, item 2; issue 53, item 1): whether the padding was valid shows
nowhere, not even in AuthError.reason.

Every refusal after decryption, a bad padding or a valid one over text that is refused, is the same AUTH-001 with
the one reason NOT_VERIFIED, in both implementations, for the Wycheproof padding cases and for every last byte,
while the C core's decryption primitive still tells the bad paddings from the others; the C path and the
reference agree on arbitrary plaintexts and paddings; a text that is not UTF-8 is refused by the C path itself; a
bad padding whose text needs the pure-Python path is refused only after that path has run. Timing is measured in
benchmarks/padding_timing.py, never here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest
from cryptography.hazmat.primitives import padding as pkcs7
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given
from hypothesis import strategies as st

import pasarela
from pasarela import AuthError, _binding, _telemetry, reference
from pasarela.errors import AUTH_001_BODY, NOT_VERIFIED
from pasarela.terminal import envelope
from pasarela.terminal import reference as primitives
from pasarela.terminal.stringify import canonicalize_text
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL
from support.strategies import sealable_objects

IMPLEMENTATIONS = [pasarela.Terminal, reference.Terminal]
IMPL_IDS = ["c", "reference"]
IV = bytes(range(16))
DERIVED = primitives.derive(BUSINESS_CODE.encode(), SERIAL.encode(), NOON)
VECTORS = Path(__file__).resolve().parents[1] / "vectors"


def _encrypt_blocks(padded: bytes) -> str:
    """data of a request whose decrypted blocks are exactly padded (padding included, valid or not)."""
    encryptor = Cipher(algorithms.AES(DERIVED.aes_key), modes.CBC(IV)).encryptor()
    return f"{IV.hex()}:{(encryptor.update(padded) + encryptor.finalize()).hex()}"


def _headers(signed: bytes) -> dict[str, str]:
    return {"Authorization": "Basic " + primitives.sign(signed, DERIVED.encoded_key), "timestamp": str(NOON)}


def _outcome(impl: Any, padded: bytes, signed: bytes = b"{}") -> tuple[str, Any]:
    """("accepted", payload) or ("refused", reason); a refusal must be the one AUTH-001."""
    try:
        payload = impl(BUSINESS_CODE, SERIAL).open("POST", _headers(signed), {"data": _encrypt_blocks(padded)},
                                                   now=NOON)
    except AuthError as err:
        assert err.body == AUTH_001_BODY and err.status == 401
        assert err.__context__ is None or not isinstance(err.__context__, AuthError)
        return "refused", err.reason
    return "accepted", payload


def _padding_is_valid(padded: bytes) -> bool:
    unpadder = pkcs7.PKCS7(128).unpadder()
    try:
        unpadder.update(padded)
        unpadder.finalize()
    except ValueError:
        return False
    return True


def _padded(text: bytes) -> bytes:
    padder = pkcs7.PKCS7(128).padder()
    return padder.update(text) + padder.finalize()


# --- Wycheproof's padding cases ----------------------------------------------------------------------


def _wycheproof_padded_blocks() -> list[tuple[int, bytes, bool]]:
    """(tcId, the decrypted blocks of the case with its padding, valid): each case's ciphertext decrypted
    under its own key without unpadding, to be sent again under the terminal's key."""
    data = json.loads((VECTORS / "wycheproof_aes_cbc_pkcs5_test.json").read_text())
    cases = []
    for group in data["testGroups"]:
        for case in group["tests"]:
            ciphertext = bytes.fromhex(case["ct"])
            if not ciphertext or len(ciphertext) % 16:
                continue
            key, iv = bytes.fromhex(case["key"]), bytes.fromhex(case["iv"])
            decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
            blocks = decryptor.update(ciphertext) + decryptor.finalize()
            cases.append((case["tcId"], blocks, case["result"] == "valid"))
    return cases


WYCHEPROOF = _wycheproof_padded_blocks()


def test_wycheproof_has_both_kinds_of_padding() -> None:
    assert sum(valid for _, _, valid in WYCHEPROOF) >= 20
    assert sum(not valid for _, _, valid in WYCHEPROOF) >= 30


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize(("blocks", "valid"), [case[1:] for case in WYCHEPROOF],
                         ids=[f"tc{case[0]}" for case in WYCHEPROOF])
def test_wycheproof_padding(impl: Any, blocks: bytes, valid: bool) -> None:
    assert _padding_is_valid(blocks) == valid
    kind, reason = _outcome(impl, blocks)
    assert (kind, reason) == ("refused", NOT_VERIFIED)  # none of these messages is a signed JSON object

    status, _ = _binding.aes256_cbc_decrypt(DERIVED.aes_key, IV, bytes.fromhex(_encrypt_blocks(blocks)[33:]))
    assert (status == 0) == valid  # (the C core's own verdict on the padding, which open keeps to itself)


# --- every last byte ---------------------------------------------------------------------------------

PREFIX = b'{"amount":100,"currency":"COP"}'  # 31 bytes: the padding starts inside the second block


def _last_block_variants() -> list[tuple[str, bytes]]:
    padded = _padded(PREFIX)  # one byte of padding, 0x01
    variants = [(f"last byte {value:#04x}", padded[:-1] + bytes([value])) for value in range(256)]
    whole = _padded(PREFIX + b" " * 1)  # 32 bytes of text: a whole block of padding
    for i in range(16):  # one byte of a full 16-byte padding changed
        for value in (0x00, 0x0F, 0x11, 0xFF):
            changed = whole[:-1 - i] + bytes([value]) + whole[len(whole) - i:]
            variants.append((f"full padding, byte {i} = {value:#04x}", changed))
    return variants


LAST_BLOCKS = _last_block_variants()


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
@pytest.mark.parametrize("padded", [v for _, v in LAST_BLOCKS], ids=[name for name, _ in LAST_BLOCKS])
def test_every_refusal_of_a_last_block_is_the_same(impl: Any, padded: bytes) -> None:
    outcome = _outcome(impl, padded, signed=canonicalize_text(PREFIX))
    if padded == _padded(PREFIX):
        assert outcome == ("accepted", json.loads(PREFIX))
    else:
        assert outcome == ("refused", NOT_VERIFIED)

    status, _ = _binding.aes256_cbc_decrypt(DERIVED.aes_key, IV, bytes.fromhex(_encrypt_blocks(padded)[33:]))
    assert (status == 0) == _padding_is_valid(padded)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=IMPL_IDS)
def test_valid_padding_and_signature_accepted(impl: Any) -> None:
    assert _outcome(impl, _padded(PREFIX), signed=PREFIX) == ("accepted", json.loads(PREFIX))


# --- the C path against the reference ----------------------------------------------------------------


@st.composite
def _plaintexts(draw: st.DrawFn) -> bytes:
    canonical = primitives.canonical_json(draw(sealable_objects()))
    return draw(st.one_of(
        st.just(canonical),
        st.binary(max_size=40),
        # a byte put anywhere: not UTF-8, a syntax error, or still JSON
        st.tuples(st.integers(0, len(canonical)), st.binary(min_size=1, max_size=3)).map(
            lambda t: canonical[:t[0]] + t[1] + canonical[t[0]:]),
        st.just(canonical[:-1] + b',"x":1,"x":2}' if canonical != b"{}" else b'{"x":1,"x":2}'),  # duplicate keys
    ))


@given(text=_plaintexts(), corrupt=st.one_of(st.none(), st.tuples(st.integers(0, 15), st.integers(0, 255))),
       right_signature=st.booleans())
def test_c_and_reference_agree(text: bytes, corrupt: Optional[tuple[int, int]], right_signature: bool) -> None:
    padded = _padded(text)
    if corrupt is not None:
        position, value = corrupt
        padded = padded[:len(padded) - 1 - position] + bytes([value]) + padded[len(padded) - position:]
    try:
        signed = canonicalize_text(text) if right_signature else b"{}"
    except pasarela.PayloadError:
        signed = b"{}"
    c, ref = (_outcome(impl, padded, signed) for impl in IMPLEMENTATIONS)
    assert c == ref
    if not _padding_is_valid(padded):
        assert c == ("refused", NOT_VERIFIED)


# --- not UTF-8: refused by the C path itself ---------------------------------------------------------


NOT_UTF8 = [(b'{"a":"\xff"}', 6), (b'{"a":"\xc3"}', 6), (b'{"a":"\xed\xa0\x80"}', 6), (b'{"a":"\xc0\xaf"}', 6),
            (b'\xff{"a":1}', 0), (b'{"a":1,"b":"\xe2\x82"}', 12)]


@pytest.mark.parametrize(("text", "offset"), NOT_UTF8)
def test_not_utf8_is_refused_in_c_without_the_python_path(monkeypatch: pytest.MonkeyPatch, text: bytes,
                                                          offset: int) -> None:
    def no_fallback(_: bytes) -> bytes:
        raise AssertionError("the C path handed a text that is not UTF-8 to the pure-Python path")

    monkeypatch.setattr(envelope, "canonicalize_text", no_fallback)
    with pytest.raises(AuthError) as info:
        _binding.open_request(pasarela.Terminal(BUSINESS_CODE, SERIAL)._native, NOON,
                              _encrypt_blocks(_padded(text)).encode(), _headers(b"{}")["Authorization"][6:].encode())
    assert info.value.reason == NOT_VERIFIED
    assert _outcome(pasarela.Terminal, _padded(text)) == ("refused", NOT_VERIFIED)
    assert _outcome(reference.Terminal, _padded(text)) == ("refused", NOT_VERIFIED)  # the very same words


# --- bad padding on the pure-Python path -------------------------------------------------------------

DUPLICATES = b'{"a":1,"b":2,"a":3}'  # the C path leaves duplicate keys to the pure-Python path


def test_bad_padding_goes_the_python_path_too_then_is_refused() -> None:
    native = pasarela.Terminal(BUSINESS_CODE, SERIAL)._native
    signature = _headers(canonicalize_text(DUPLICATES))["Authorization"][6:].encode()
    bad = _padded(DUPLICATES)[:-1] + b"\x00"
    opened = _binding.open_request(native, NOON, _encrypt_blocks(bad).encode(), signature)
    assert not opened.verified and opened.bad_padding
    good = _binding.open_request(native, NOON, _encrypt_blocks(_padded(DUPLICATES)).encode(), signature)
    assert not good.verified and not good.bad_padding and good.text == DUPLICATES
    for impl in IMPLEMENTATIONS:
        assert _outcome(impl, bad, canonicalize_text(DUPLICATES)) == ("refused", NOT_VERIFIED)
        assert _outcome(impl, _padded(DUPLICATES), canonicalize_text(DUPLICATES)) == ("accepted", {"a": 3, "b": 2})
        assert _outcome(impl, _padded(DUPLICATES)) == ("refused", NOT_VERIFIED)


# --- nothing of a refused text stays in the workspace ------------------------------------------------


@pytest.mark.parametrize("padded", [_padded(PREFIX), _padded(PREFIX)[:-1] + b"\x00", _padded(b'{"a":')],
                         ids=["bad signature", "bad padding", "not JSON"])
def test_refusal_wipes_the_decrypted_text(padded: bytes) -> None:
    assert _outcome(pasarela.Terminal, padded)[0] == "refused"
    out = _binding._workspace.buffers.out
    assert bytes(_binding.ffi.buffer(out, len(padded))) == bytes(len(padded))


def test_the_two_answers_to_a_padding_probe_are_the_same_new_strings() -> None:
    """A bad padding and a valid padding over text that is not UTF-8 (the two answers to a padding-oracle probe)
    are refused with the one reason, each a new string, not the module's constant, whose hash would already be known
    to the dict lookups that read a reason later (the middleware's and the telemetry's refusal_cause: a cached hash
    had made the bad padding measurably faster through the middleware). Timing itself: benchmarks/padding_timing.py."""
    reasons = {}
    for name, padded in (("bad", _padded(PREFIX)[:-1] + b"\x00"), ("not utf-8", _padded(b'{"a":"\xff"}'))):
        body = json.dumps({"data": _encrypt_blocks(padded)}).encode()
        with pytest.raises(AuthError) as refused:
            pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", _headers(b"{}"), body, now=NOON)
        reasons[name] = refused.value.reason
    assert reasons["bad"] == reasons["not utf-8"] == NOT_VERIFIED
    assert reasons["bad"] is not NOT_VERIFIED and reasons["not utf-8"] is not NOT_VERIFIED
    assert {_telemetry.refusal_cause(reason) for reason in reasons.values()} == {"not_verified"}
