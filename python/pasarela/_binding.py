"""The only module that touches the C library: checks arguments, calls, maps status codes.

Output buffers are allocated once per thread and grown on demand, so a call allocates
nothing but the Python objects it returns. Every function here releases the GIL while
the C code runs (cffi does so for every call in API mode).
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple, Optional

from ._version import __version__
from .errors import AuthError, NativeError, PayloadError, TimestampError
from .terminal.inbound import BAD_PADDING, KEY_IN_PLAINTEXT, NOT_JSON, NOT_OBJECT, SIGNATURE_MISMATCH
from .terminal.request import KEY_REASON, NOT_OBJECT_REASON

try:
    from ._native import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "pasarela's compiled core (pasarela._native) is missing: reinstall pasarela "
        "(`pip install --force-reinstall pasarela`) or, from a source checkout, `pip install -e .`"
    ) from exc

_native_version = ffi.string(lib.pasarela_version()).decode("ascii")
if _native_version != __version__:  # pragma: no cover - only a stale build gets here
    raise ImportError(
        f"pasarela._native was built for pasarela {_native_version} but this is pasarela {__version__}: "
        "the compiled module is stale; rebuild it (`pip install -e .` from the source checkout)"
    )

CPU_FEATURES: int = lib.pasarela_cpu_features()
HAS_HW_AES: bool = bool(CPU_FEATURES & lib.PASARELA_CPU_AES_ANY)

_OK = lib.PASARELA_OK
_JSON_UNSUPPORTED = lib.PASARELA_E_JSON_UNSUPPORTED
_SHORTEST = lib.PASARELA_JSON_SHORTEST_DIGITS
SIGNATURE_HEX_LEN: int = lib.PASARELA_SIGNATURE_HEX_LEN
IV_LEN: int = lib.PASARELA_IV_LEN


def strerror(status: int) -> str:
    return ffi.string(lib.pasarela_strerror(status)).decode("ascii")


def _fail(status: int) -> NativeError:
    return NativeError(status, strerror(status))


class Credentials:
    """A terminal's credentials as the C core takes them (copies, wiped when this object goes away)."""

    __slots__ = ("_business_code", "_terminal_serial", "struct")

    def __init__(self, business_code: bytes, terminal_serial: bytes) -> None:
        self._business_code = ffi.new("uint8_t[]", business_code)
        self._terminal_serial = ffi.new("uint8_t[]", terminal_serial)
        self.struct = ffi.new("pasarela_credentials *", {
            "business_code": self._business_code, "business_code_len": len(business_code),
            "terminal_serial": self._terminal_serial, "terminal_serial_len": len(terminal_serial),
            "cpu": CPU_FEATURES,
        })

    def __del__(self) -> None:
        ffi.memmove(self._business_code, bytes(len(self._business_code)), len(self._business_code))

    def __repr__(self) -> str:
        return "Credentials(<redacted>)"


class _Workspace(threading.local):
    """Per-thread buffers of pasarela_seal_json, grown on demand (never shared between threads)."""

    def __init__(self) -> None:
        self.json_capacity = 0
        self.grow(4096)

    def grow(self, json_len: int) -> None:
        capacity = max(json_len, 2 * self.json_capacity)
        plaintext_cap = lib.pasarela_json_out_max(capacity)
        scratch_cap = lib.pasarela_json_scratch_size(capacity)
        out_cap = lib.pasarela_sealed_len(plaintext_cap)
        self._buffers = (
            ffi.new("uint8_t[]", plaintext_cap),
            ffi.new("uint64_t[]", (scratch_cap + 7) // 8),
            ffi.new("char[]", out_cap),
        )
        plaintext, scratch, out = self._buffers
        self.ws: Any = ffi.new("pasarela_workspace *", {
            "plaintext": plaintext, "plaintext_cap": plaintext_cap, "scratch": scratch,
            "scratch_cap": scratch_cap, "out": out, "out_cap": out_cap,
        })
        self.plaintext, self.out = plaintext, out
        self.json_capacity = capacity
        self.top_level_key = ffi.new("int *")


_workspace = _Workspace()


def _check_timestamp(status: int, timestamp: int) -> None:
    if status == lib.PASARELA_E_TIMESTAMP:
        raise TimestampError(f"timestamp {timestamp} is not 10 digits of whole UTC seconds")


class SealOutput(NamedTuple):
    plaintext: bytes  # the canonical JSON that was encrypted and (with the key) signed
    signature: str  # 128 lowercase hex
    body: bytes  # {"data":"<iv_hex>:<ct_hex>"}


def _output(plaintext: bytes, out: Any, out_len: int) -> SealOutput:
    return SealOutput(plaintext, ffi.unpack(out, SIGNATURE_HEX_LEN).decode("ascii"),
                      ffi.buffer(out + SIGNATURE_HEX_LEN, out_len - SIGNATURE_HEX_LEN)[:])


def seal_json(credentials: Credentials, timestamp: int, json: bytes, shortest_digits: bool,
              iv: bytes) -> Optional[SealOutput]:
    """One C call that canonicalizes JSON object text, then signs and encrypts it.

    Returns None when the C path does not handle this text (duplicate keys, very deep nesting,
    numbers it cannot prove exact): the caller then takes the pure-Python path.
    """
    w = _workspace
    if len(json) > w.json_capacity:
        w.grow(len(json))
    ws = w.ws
    status = lib.pasarela_seal_json(credentials.struct, ws, timestamp, json, len(json),
                                    _SHORTEST if shortest_digits else 0, iv)
    if status != _OK:
        if status == _JSON_UNSUPPORTED or status == lib.PASARELA_E_JSON_UNSAFE_INTEGER:
            return None
        if status == lib.PASARELA_E_JSON_SYNTAX:
            raise PayloadError("$", f"not JSON text (error at byte {ws.error_offset})")
        if status == lib.PASARELA_E_JSON_NOT_OBJECT:
            raise PayloadError("$", NOT_OBJECT_REASON)
        if status == lib.PASARELA_E_KEY_MEMBER:
            raise PayloadError("$.key", KEY_REASON)
        _check_timestamp(status, timestamp)
        raise _fail(status)
    return _output(ffi.buffer(w.plaintext, ws.plaintext_len)[:], w.out, ws.out_len)


def seal(credentials: Credentials, timestamp: int, plaintext: bytes, iv: bytes) -> SealOutput:
    """Sign and encrypt canonical JSON object text (exactly what JSON.stringify writes)."""
    w = _workspace
    if len(plaintext) > w.ws.plaintext_cap:
        w.grow(len(plaintext))
    ws = w.ws
    out_len = ffi.new("size_t *")
    status = lib.pasarela_seal(credentials.struct, timestamp, plaintext, len(plaintext), iv, w.out, ws.out_cap,
                               out_len)
    if status != _OK:
        _check_timestamp(status, timestamp)
        raise _fail(status)
    return _output(plaintext, w.out, out_len[0])


_BATCH_JSON_CAPACITY = 16384  # a workspace of ~0.5 MiB per thread; each call fills it, then Python calls again


def seal_json_batch(credentials: list[Credentials], timestamps: list[int], jsons: list[bytes],
                    ivs: bytes) -> list[Optional[SealOutput]]:
    """pasarela_seal_json for many compact JSON texts (orjson output) in as few C calls as the workspace
    allows, the GIL released during each. Item i: its SealOutput, or None when it needs the single path."""
    n = len(jsons)
    w = _workspace
    if w.json_capacity < _BATCH_JSON_CAPACITY:
        w.grow(_BATCH_JSON_CAPACITY)
    creds = ffi.new("pasarela_credentials *[]", [c.struct for c in credentials])
    stamps = ffi.new("uint64_t[]", timestamps)
    lens = ffi.new("size_t[]", [len(j) for j in jsons])
    blob = ffi.from_buffer("uint8_t[]", b"".join(jsons))
    iv_buffer = ffi.from_buffer("uint8_t[]", ivs)
    statuses = ffi.new("int[]", n)
    plaintext_lens = ffi.new("size_t[]", n)
    out_lens = ffi.new("size_t[]", n)
    results: list[Optional[SealOutput]] = []
    start = offset = 0
    while start < n:
        ws = w.ws
        done = lib.pasarela_seal_json_batch(
            creds + start, stamps + start, blob + offset, lens + start, n - start, _SHORTEST, iv_buffer + 16 * start,
            ws, statuses + start, plaintext_lens + start, out_lens + start,
        )
        if done == 0:  # one item larger than the workspace
            w.grow(len(jsons[start]))
            continue
        plaintexts = ffi.buffer(w.plaintext, sum(plaintext_lens[start:start + done]))[:]
        outs = ffi.buffer(w.out, sum(out_lens[start:start + done]))[:]
        p = o = 0
        for i in range(start, start + done):
            if statuses[i] == _OK:
                p_end, o_end = p + plaintext_lens[i], o + out_lens[i]
                results.append(SealOutput(plaintexts[p:p_end], outs[o:o + SIGNATURE_HEX_LEN].decode("ascii"),
                                          outs[o + SIGNATURE_HEX_LEN:o_end]))
                p, o = p_end, o_end
            else:
                results.append(None)
            offset += lens[i]
        start += done
    return results


_REFUSALS = {
    lib.PASARELA_E_BAD_HEX: "data is not <iv hex>:<ciphertext hex>",
    lib.PASARELA_E_BAD_LENGTH: "ciphertext is not a non-zero multiple of 16 bytes",
    lib.PASARELA_E_BAD_PADDING: BAD_PADDING,
    lib.PASARELA_E_JSON_SYNTAX: NOT_JSON,
    lib.PASARELA_E_JSON_NOT_OBJECT: NOT_OBJECT,
    lib.PASARELA_E_KEY_MEMBER: KEY_IN_PLAINTEXT,
    lib.PASARELA_E_SIGNATURE: SIGNATURE_MISMATCH,
}


def open_request(credentials: Credentials, timestamp: int, data: bytes, signature: bytes) -> tuple[bool, bytes]:
    """Decrypt and verify in one C call, as the JavaScript server does.

    (True, canonical text) when the request verifies; (False, decrypted plaintext) when its
    canonical form needs the pure-Python path (then verify it with verify()). Refusals raise AuthError.
    """
    w = _workspace
    n = len(data) // 2
    if n > w.json_capacity:
        w.grow(n)
    ws = w.ws
    status = lib.pasarela_open(credentials.struct, ws, timestamp, data, len(data), signature)
    if status == _OK:
        return True, ffi.buffer(w.plaintext, ws.plaintext_len)[:]
    if status == _JSON_UNSUPPORTED:
        return False, ffi.buffer(w.out, ws.out_len)[:]
    reason = _REFUSALS.get(status)
    if reason is None:
        _check_timestamp(status, timestamp)
        raise _fail(status)
    raise AuthError(reason)


def verify(credentials: Credentials, timestamp: int, canonical: bytes, signature: bytes) -> None:
    """Raises AuthError unless signature is the signature of canonical JSON object text."""
    status = lib.pasarela_verify(credentials.struct, timestamp, canonical, len(canonical), signature)
    if status != _OK:
        reason = _REFUSALS.get(status)
        if reason is None:
            raise _fail(status)
        raise AuthError(reason)


def decrypt_data(credentials: Credentials, timestamp: int, data: bytes) -> bytes:
    """The plaintext of ``<iv_hex>:<ct_hex>`` under the aesKey of (credentials, timestamp)."""
    out = ffi.new("uint8_t[]", max(len(data) // 2, 1))
    out_len = ffi.new("size_t *")
    status = lib.pasarela_decrypt_data(credentials.struct, timestamp, data, len(data), out, len(out), out_len)
    if status != _OK:
        reason = _REFUSALS.get(status)
        if reason is None:
            raise _fail(status)
        raise AuthError(reason)
    return ffi.buffer(out, out_len[0])[:]


class Canonical(NamedTuple):
    text: bytes
    top_level_key: bool  # the text is an object with a top-level "key" member


def canonicalize(text: bytes, shortest_digits: bool = False) -> Optional[Canonical]:
    """JSON.stringify(JSON.parse(text)), or None when the C path leaves it to the reference."""
    w = _workspace
    if len(text) > w.json_capacity:
        w.grow(len(text))
    ws = w.ws
    status = lib.pasarela_json_canonicalize(
        text, len(text), _SHORTEST if shortest_digits else 0, w.plaintext, ws.plaintext_cap,
        ffi.addressof(ws, "plaintext_len"), ws.scratch, ws.scratch_cap, ffi.addressof(ws, "error_offset"),
        w.top_level_key,
    )
    if status == _OK:
        return Canonical(ffi.buffer(w.plaintext, ws.plaintext_len)[:], bool(w.top_level_key[0]))
    if status in (_JSON_UNSUPPORTED, lib.PASARELA_E_JSON_UNSAFE_INTEGER, lib.PASARELA_E_JSON_SYNTAX):
        return None
    raise _fail(status)


# ---- primitives, exposed for known-answer tests and the diagnostics ----

def md5(data: bytes) -> bytes:
    out = ffi.new("uint8_t[16]")
    lib.pasarela_md5(data, len(data), out)
    return ffi.buffer(out, 16)[:]


def sha512(data: bytes) -> bytes:
    out = ffi.new("uint8_t[64]")
    lib.pasarela_sha512(data, len(data), out)
    return ffi.buffer(out, 64)[:]


def base64_encode(data: bytes) -> bytes:
    out = ffi.new("char[]", (len(data) + 2) // 3 * 4 + 1)
    written = lib.pasarela_base64_encode(data, len(data), out)
    return ffi.unpack(out, written)


def hex_encode(data: bytes) -> str:
    out = ffi.new("char[]", 2 * len(data) + 1)
    lib.pasarela_hex_encode(data, len(data), out)
    return ffi.unpack(out, 2 * len(data)).decode("ascii")


def hex_decode(text: bytes) -> Optional[bytes]:
    """Bytes, or None when text is not hex."""
    out = ffi.new("uint8_t[]", len(text) // 2 + 1)
    if lib.pasarela_hex_decode(text, len(text), out) != _OK:
        return None
    return ffi.buffer(out, len(text) // 2)[:]


def aes256_cbc_encrypt(key: bytes, iv: bytes, plaintext: bytes) -> bytes:
    _check_key_iv(key, iv)
    cap = (len(plaintext) // 16 + 1) * 16
    out = ffi.new("uint8_t[]", cap)
    out_len = ffi.new("size_t *")
    status = lib.pasarela_aes256_cbc_encrypt(CPU_FEATURES, key, iv, plaintext, len(plaintext), out, cap, out_len)
    if status != _OK:
        raise _fail(status)
    return ffi.buffer(out, out_len[0])[:]


def aes256_cbc_decrypt(key: bytes, iv: bytes, ciphertext: bytes) -> tuple[int, bytes]:
    """(status, plaintext): status is PASARELA_OK or the reason the ciphertext was refused."""
    _check_key_iv(key, iv)
    out = ffi.new("uint8_t[]", max(len(ciphertext), 1))
    out_len = ffi.new("size_t *")
    status = lib.pasarela_aes256_cbc_decrypt(
        CPU_FEATURES, key, iv, ciphertext, len(ciphertext), out, len(ciphertext), out_len
    )
    return status, (ffi.buffer(out, out_len[0])[:] if status == _OK else b"")


def _check_key_iv(key: bytes, iv: bytes) -> None:
    if len(key) != 32 or len(iv) != IV_LEN:
        raise ValueError("AES-256-CBC takes a 32-byte key and a 16-byte IV")


def formatted_date(timestamp: int) -> str:
    out = ffi.new("char[16]")
    status = lib.pasarela_formatted_date(timestamp, out)
    if status != _OK:
        _check_timestamp(status, timestamp)
        raise _fail(status)
    return ffi.buffer(out, 16)[:].decode("ascii")


class Derived(NamedTuple):
    password: str
    encoded_key: str
    aes_key: bytes


def derive(business_code: bytes, terminal_serial: bytes, timestamp: int) -> Derived:
    password = ffi.new("char[32]")
    encoded = ffi.new("char[56]")
    aes_key = ffi.new("uint8_t[32]")
    status = lib.pasarela_derive(
        business_code, len(business_code), terminal_serial, len(terminal_serial), timestamp, password, encoded,
        aes_key,
    )
    if status != _OK:
        _check_timestamp(status, timestamp)
        raise _fail(status)
    return Derived(
        ffi.unpack(password, 32).decode("ascii"), ffi.unpack(encoded, 56).decode("ascii"), ffi.buffer(aes_key, 32)[:]
    )
