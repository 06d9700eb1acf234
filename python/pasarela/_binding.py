"""The only module that touches the C library: checks arguments, calls, maps status codes.

Output buffers are allocated once per thread and grown on demand, so a call allocates
nothing but the Python objects it returns. Every function here releases the GIL while
the C code runs (cffi does so for every call in API mode).
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple, Optional

from ._version import __version__
from .errors import NativeError, PayloadError, TimestampError
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
SIGNATURE_HEX_LEN: int = lib.PASARELA_SIGNATURE_HEX_LEN
IV_LEN: int = lib.PASARELA_IV_LEN


def strerror(status: int) -> str:
    return ffi.string(lib.pasarela_strerror(status)).decode("ascii")


def _fail(status: int) -> NativeError:
    return NativeError(status, strerror(status))


class _Buffers(threading.local):
    """Per-thread output buffers, grown on demand (never shared between concurrent calls)."""

    def __init__(self) -> None:
        self.json_capacity = -1
        self.plain_capacity = -1
        self.signature = ffi.new("char[]", SIGNATURE_HEX_LEN)
        self.sizes = ffi.new("size_t[3]")  # plaintext length, data length, error offset
        self.flag = ffi.new("int *")
        self.plain: Any = None
        self.scratch: Any = None
        self.data: Any = None

    def for_json(self, json_len: int) -> None:
        if json_len > self.json_capacity:
            capacity = max(json_len, 4096)
            self.plain = ffi.new("uint8_t[]", lib.pasarela_json_out_max(capacity))
            self.scratch = ffi.new("uint64_t[]", (lib.pasarela_json_scratch_size(capacity) + 7) // 8)
            self.json_capacity = capacity
        self.for_plaintext(lib.pasarela_json_out_max(json_len))

    def for_plaintext(self, plaintext_len: int) -> None:
        if plaintext_len > self.plain_capacity:
            capacity = max(plaintext_len, 4096)
            self.data = ffi.new("char[]", lib.pasarela_data_len(capacity))
            self.plain_capacity = capacity


_buffers = _Buffers()


class SealOutput(NamedTuple):
    plaintext: bytes
    signature: str
    data: str


def _check_timestamp(status: int, timestamp: int) -> None:
    if status == lib.PASARELA_E_TIMESTAMP:
        raise TimestampError(f"timestamp {timestamp} is not 10 digits of whole UTC seconds")


def seal_json(
    business_code: bytes, terminal_serial: bytes, timestamp: int, json: bytes, shortest_digits: bool, iv: bytes
) -> Optional[SealOutput]:
    """Canonicalize compact JSON object text and seal it in one C call.

    Returns None when the C path does not handle this text (duplicate keys, very deep nesting,
    numbers it cannot prove exact): the caller then takes the pure-Python path.
    """
    b = _buffers
    b.for_json(len(json))
    flags = lib.PASARELA_JSON_SHORTEST_DIGITS if shortest_digits else 0
    sizes = b.sizes
    status = lib.pasarela_seal_json(
        CPU_FEATURES, business_code, len(business_code), terminal_serial, len(terminal_serial), timestamp,
        json, len(json), flags, iv, b.plain, lib.pasarela_json_out_max(len(json)), sizes, b.scratch,
        lib.pasarela_json_scratch_size(len(json)), sizes + 2, b.signature, b.data,
        lib.pasarela_data_len(lib.pasarela_json_out_max(len(json))), sizes + 1,
    )
    if status != _OK:
        if status == _JSON_UNSUPPORTED or status == lib.PASARELA_E_JSON_UNSAFE_INTEGER:
            return None
        if status == lib.PASARELA_E_JSON_SYNTAX:
            raise PayloadError("$", f"not JSON text (error at byte {sizes[2]})")
        if status == lib.PASARELA_E_JSON_NOT_OBJECT:
            raise PayloadError("$", NOT_OBJECT_REASON)
        if status == lib.PASARELA_E_KEY_MEMBER:
            raise PayloadError("$.key", KEY_REASON)
        _check_timestamp(status, timestamp)
        raise _fail(status)
    return SealOutput(
        ffi.buffer(b.plain, sizes[0])[:],
        ffi.unpack(b.signature, SIGNATURE_HEX_LEN).decode("ascii"),
        ffi.unpack(b.data, sizes[1]).decode("ascii"),
    )


def seal(business_code: bytes, terminal_serial: bytes, timestamp: int, plaintext: bytes, iv: bytes) -> SealOutput:
    """Seal canonical JSON object text (already exactly what JSON.stringify writes)."""
    b = _buffers
    b.for_plaintext(len(plaintext))
    sizes = b.sizes
    status = lib.pasarela_seal(
        CPU_FEATURES, business_code, len(business_code), terminal_serial, len(terminal_serial), timestamp,
        plaintext, len(plaintext), iv, b.signature, b.data, lib.pasarela_data_len(b.plain_capacity), sizes + 1,
    )
    if status != _OK:
        _check_timestamp(status, timestamp)
        raise _fail(status)
    return SealOutput(
        plaintext,
        ffi.unpack(b.signature, SIGNATURE_HEX_LEN).decode("ascii"),
        ffi.unpack(b.data, sizes[1]).decode("ascii"),
    )


class Canonical(NamedTuple):
    text: bytes
    top_level_key: bool  # the text is an object with a top-level "key" member


def canonicalize(text: bytes, shortest_digits: bool = False) -> Optional[Canonical]:
    """JSON.stringify(JSON.parse(text)), or None when the C path leaves it to the reference."""
    b = _buffers
    b.for_json(len(text))
    sizes = b.sizes
    top_level_key = b.flag
    flags = lib.PASARELA_JSON_SHORTEST_DIGITS if shortest_digits else 0
    status = lib.pasarela_json_canonicalize(
        text, len(text), flags, b.plain, lib.pasarela_json_out_max(len(text)), sizes, b.scratch,
        lib.pasarela_json_scratch_size(len(text)), sizes + 2, top_level_key,
    )
    if status == _OK:
        return Canonical(ffi.buffer(b.plain, sizes[0])[:], bool(top_level_key[0]))
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
