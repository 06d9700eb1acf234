"""The only module that touches the C library: checks arguments, calls, maps status codes.

Output buffers are allocated once per thread and grown on demand, so a call allocates
nothing but the Python objects it returns. Every function here releases the GIL while
the C code runs (cffi does so for every call in API mode), except those of pasarela._fastcall,
which release it only around C work on 16 KiB or more (RELEASE_BYTES in csrc/cpython/fastcall.c), and for
an open that makes a payload only while making payloads has taken less time than the C work (open_releases).
"""

from __future__ import annotations

import bisect
import itertools
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, NoReturn, Optional, TypeVar, Union, cast

from ._version import __version__
from .errors import (
    BAD_DATA,
    BAD_LENGTH,
    BAD_PADDING,
    KEY_REASON,
    NOT_OBJECT_REASON,
    AuthError,
    NativeError,
    PayloadError,
    TimestampError,
    signature_refusal,
)


def _missing(what: str) -> ImportError:
    return ImportError(
        f"pasarela's {what} is missing: reinstall pasarela (`pip install --force-reinstall pasarela`) or, from a "
        "source checkout, `pip install -e .`"
    )


try:
    from ._native import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise _missing("compiled core (pasarela._native)") from exc

_native_version = ffi.string(lib.pasarela_version()).decode("ascii")
if _native_version != __version__:  # pragma: no cover - only a stale build gets here
    raise ImportError(
        f"pasarela._native was built for pasarela {_native_version} but this is pasarela {__version__}: "
        "the compiled module is stale; rebuild it (`pip install -e .` from the source checkout)"
    )


def _address(cdata: Any) -> int:
    return int(ffi.cast("uintptr_t", cdata))


# PASARELA_NO_FASTCALL=1: the cffi path alone, as on PyPy or a build without _fastcall (docs/free-threading.md)
FASTCALL = sys.implementation.name == "cpython" and os.environ.get("PASARELA_NO_FASTCALL") != "1"
if FASTCALL:  # seal_json and open_post through pasarela._fastcall (see its source)
    try:
        from ._fastcall import connect as _connect_fastcall
        from ._fastcall import open_post as _fast_open_post
        from ._fastcall import open_post_bytes as _fast_open_post_bytes
        from ._fastcall import rows as _fast_rows
        from ._fastcall import seal_json as _fast_seal_json
        from ._fastcall import seal_json_batch as _fast_seal_json_batch
        from ._fastcall import seal_payload as _fast_seal_payload
        from ._fastcall import seal_rows as _fast_seal_rows
        from ._fastcall import stringify as _fast_stringify
        from ._fastcall import stringify_into as _fast_stringify_into
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise _missing("compiled entry points module (pasarela._fastcall)") from exc
else:  # PyPy and others: cffi is their native way into C
    _connect_fastcall = None  # type: ignore[assignment]
    _fast_seal_json = _fast_seal_payload = _fast_open_post = _fast_open_post_bytes = None  # type: ignore[assignment]
    _fast_rows = _fast_seal_json_batch = None  # type: ignore[assignment]
    _fast_stringify = _fast_stringify_into = _fast_seal_rows = None  # type: ignore[assignment]

CPU_FEATURES: int = lib.pasarela_cpu_features()
if os.environ.get("PASARELA_NO_AVX512") == "1":  # this CPU run as an AVX2 one (the gate's "x86-64 AVX2" class)
    CPU_FEATURES &= ~lib.PASARELA_CPU_AVX512_ALL
HAS_HW_AES: bool = bool(CPU_FEATURES & lib.PASARELA_CPU_AES_ANY)

_OK = lib.PASARELA_OK
_SIGNATURE_MISMATCH = lib.PASARELA_E_SIGNATURE
_JSON_UNSUPPORTED = lib.PASARELA_E_JSON_UNSUPPORTED
_BUFFER_TOO_SMALL = lib.PASARELA_E_BUFFER_TOO_SMALL
_IV_POOL_EMPTY = lib.PASARELA_E_IV_POOL_EMPTY
SHORTEST_DIGITS: int = lib.PASARELA_JSON_SHORTEST_DIGITS
STRINGIFIED: int = lib.PASARELA_JSON_STRINGIFIED
FACT_KEY: int = lib.PASARELA_JSON_FACT_KEY
FACT_NULL: int = lib.PASARELA_JSON_FACT_NULL
FACT_PROTO: int = lib.PASARELA_JSON_FACT_PROTO
FACT_LONG_INT: int = lib.PASARELA_JSON_FACT_LONG_INT
_NULL = ffi.NULL
_seal_json = lib.pasarela_seal_json
_open = lib.pasarela_open
_open_request = lib.pasarela_open_request
_unpack = ffi.unpack
SIGNATURE_HEX_LEN: int = lib.PASARELA_SIGNATURE_HEX_LEN
IV_LEN: int = lib.PASARELA_IV_LEN


def strerror(status: int) -> str:
    return ffi.string(lib.pasarela_strerror(status)).decode("ascii")


def _fail(status: int) -> NativeError:
    return NativeError(status, strerror(status))


_credential_ids = itertools.count(1)  # never reused: a workspace's key cache is keyed by it


class Credentials(tuple[int, Any, Any, Any]):
    """A terminal's credentials as the C core takes them (copies, wiped when this object goes away).

    Immutable (a tuple: the address of its pasarela_credentials, that struct, and the two buffers it points to),
    and handed whole to every C call that reads it, never as a bare address: the call's arguments then keep the
    memory alive while the C code runs with the GIL released, whatever other threads do meanwhile (given the
    address alone, a Terminal re-initialized in another thread freed it under a running seal)."""

    __slots__ = ()

    def __new__(cls, business_code: bytes, terminal_serial: bytes) -> Credentials:
        code = ffi.new("uint8_t[]", business_code)
        serial = ffi.new("uint8_t[]", terminal_serial)
        struct = ffi.new("pasarela_credentials *", {
            "business_code": code, "business_code_len": len(business_code),
            "terminal_serial": serial, "terminal_serial_len": len(terminal_serial),
            "cpu": CPU_FEATURES, "id": next(_credential_ids),
        })
        return tuple.__new__(cls, (_address(struct), struct, code, serial))

    @property
    def address(self) -> int:
        """The pasarela_credentials' address, valid while this object lives."""
        return self[0]

    @property
    def struct(self) -> Any:
        """The pasarela_credentials (cffi), for the cffi calls."""
        return self[1]

    def __del__(self) -> None:
        code = self[2]
        ffi.memmove(code, bytes(len(code)), len(code))

    def __repr__(self) -> str:
        return "Credentials(<redacted>)"


_IV_POOL_BYTES = 4096  # one fill serves 256 seals
_IV_SEED_LEN: int = lib.PASARELA_IV_SEED_LEN
_iv_pool_fill = lib.pasarela_iv_pool_fill


class _Buffers:
    """One thread's workspace: buffers for JSON input of up to json_capacity bytes, the cache of the
    keys derived for the last (terminal, timestamp), and a pool of random IVs. The secrets in it are
    wiped when it goes away (with its thread)."""

    def __init__(self, json_capacity: int) -> None:
        self.json_capacity = json_capacity
        plaintext_cap = lib.pasarela_json_out_max(json_capacity)
        scratch_cap = lib.pasarela_workspace_scratch_size(json_capacity)
        sealed_cap = lib.pasarela_sealed_len(plaintext_cap)
        if not (plaintext_cap and scratch_cap and sealed_cap):  # 0: the sizes would not fit in size_t
            raise _fail(lib.PASARELA_E_TOO_LARGE)
        out_cap = plaintext_cap + sealed_cap
        self.plaintext = ffi.new("uint8_t[]", plaintext_cap)
        self.plaintext_text = ffi.cast("char *", self.plaintext)  # ffi.unpack of a char * gives bytes
        self.scratch = ffi.new("uint64_t[]", (scratch_cap + 7) // 8)
        self.out = ffi.new("char[]", out_cap)
        # Each its own key cache and IV pool, even when grown from other buffers: those stay whole and in use until
        # the new ones are installed (a finalizer may seal in them meanwhile), and two pools never share IVs.
        keys_cap = lib.pasarela_key_cache_size()
        self.keys = ffi.new("uint64_t[]", (keys_cap + 7) // 8)
        self.iv_pool = ffi.new("uint8_t[]", _IV_POOL_BYTES)
        pool_used = _IV_POOL_BYTES  # empty: filled on first use
        self.ws: Any = ffi.new("pasarela_workspace *", {
            "plaintext": self.plaintext, "plaintext_cap": plaintext_cap, "scratch": self.scratch,
            "scratch_cap": scratch_cap, "out": self.out, "out_cap": out_cap, "keys": self.keys,
            "keys_cap": keys_cap, "iv_pool": self.iv_pool, "iv_pool_len": _IV_POOL_BYTES, "iv_pool_used": pool_used,
        })
        self.facts = ffi.new("unsigned *")
        self.ws_address = _address(self.ws)  # for _fastcall, valid while this object lives
        self.out_address = _address(self.out)

    def refill_ivs(self) -> None:
        """AES-256 output under a key fresh from the OS (csrc/ivs.c: 2.2 against 12.9 us for os.urandom of the
        whole pool on a VM whose getrandom gave 320 MB/s), or the OS's bytes themselves without hardware AES."""
        if _iv_pool_fill(CPU_FEATURES, os.urandom(_IV_SEED_LEN), self.iv_pool, _IV_POOL_BYTES) != _OK:
            ffi.memmove(self.iv_pool, os.urandom(_IV_POOL_BYTES), _IV_POOL_BYTES)
        self.ws.iv_pool_used = 0

    def __del__(self) -> None:
        lib.pasarela_workspace_wipe(self.ws)


def _grown(buffers: _Buffers, json_len: int) -> _Buffers:
    """Buffers for json_len bytes of JSON (at least twice as large as buffers), with a key cache and IV pool of their
    own."""
    return _Buffers(max(json_len, 2 * buffers.json_capacity))


class _Held:
    """A batch's _Buffers and items buffer (its texts back to back), held apart from its thread's workspace; as a
    context manager (`with _workspace.hold() as held:`), given back to that workspace on leaving."""

    __slots__ = ("buffers", "items", "workspace")

    def __init__(self, buffers: _Buffers, items: Any, workspace: Optional[_Workspace] = None) -> None:
        self.buffers, self.items, self.workspace = buffers, items, workspace

    def __enter__(self) -> _Held:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.workspace is not None:
            self.workspace.release(self)

    def grow(self, json_len: int) -> _Buffers:
        self.buffers = _grown(self.buffers, json_len)
        return self.buffers

    def fitting(self, json_len: int) -> _Buffers:
        """The held buffers, grown if json_len bytes of JSON do not fit."""
        return self.buffers if json_len <= self.buffers.json_capacity else self.grow(json_len)


class _Workspace(threading.local):
    """Each thread's _Buffers and items buffer (never shared between threads), grown on demand.

    A batch holds them (`with hold()`: released on leaving) from before it writes its texts until its requests are
    copied out: the objects made meanwhile (the rows, the arguments of its calls) may start a collection of the
    cyclic GC, whose finalizers may seal or open on this thread, and those then work in a spare pair instead of
    overwriting the batch's. (A single seal or open copies its output out before it makes any such object:
    _fastcall.)"""

    def __init__(self) -> None:
        self.buffers = _Buffers(4096)
        self.items = ffi.new("uint8_t[]", 1)  # seal_json_array's copy of a batch's items, grown on demand
        self.spare: Optional[_Held] = None

    def grow(self, json_len: int) -> _Buffers:
        self.buffers = _grown(self.buffers, json_len)
        return self.buffers

    def hold(self) -> _Held:
        """This thread's pair, for a batch alone until it is released; the thread works in a spare pair meanwhile."""
        held = _Held(self.buffers, self.items, self)
        spare = self.spare if self.spare is not None else _Held(_Buffers(4096), ffi.new("uint8_t[]", 1))
        self.spare = None
        self.buffers, self.items = spare.buffers, spare.items
        return held

    def release(self, held: _Held) -> None:
        self.spare = _Held(self.buffers, self.items)
        self.buffers, self.items = held.buffers, held.items


_workspace = _Workspace()

if _connect_fastcall is not None:
    import ctypes  # PyUnicode_AsUTF8AndSize's address: the limited API of 3.9 does not have it (stringify.h)

    _connect_fastcall(
        _address(ffi.addressof(lib, "pasarela_seal_json")), _address(ffi.addressof(lib, "pasarela_open_request")),
        (ffi.sizeof("pasarela_workspace"), *(ffi.offsetof("pasarela_workspace", field) for field in
                                              ("plaintext", "out", "plaintext_len", "out_len", "json_facts"))),
        ctypes.cast(ctypes.pythonapi.PyUnicode_AsUTF8AndSize, ctypes.c_void_p).value or 0,  # 0: refused
        _address(ffi.addressof(lib, "pasarela_seal_batch")),
        _address(ffi.addressof(lib, "pasarela_open_request_as_sent")),
        _address(ffi.addressof(lib, "pasarela_json_canonicalize")),
        _workspace,  # seal_payload and open_post find the calling thread's workspace through it
        _address(ffi.addressof(lib, "pasarela_seal_json_batch")),
    )


def _forget_ivs_after_fork() -> None:
    """A forked child must not hand out the IVs its parent has yet to use (nor those of the spare buffers)."""
    _workspace.buffers.ws.iv_pool_used = _IV_POOL_BYTES
    if _workspace.spare is not None:
        _workspace.spare.buffers.ws.iv_pool_used = _IV_POOL_BYTES


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_ivs_after_fork)


def _buffers(json_len: int) -> _Buffers:
    b: _Buffers = _workspace.buffers
    return b if json_len <= b.json_capacity else _workspace.grow(json_len)


def _check_timestamp(status: int, timestamp: int) -> None:
    if status == lib.PASARELA_E_TIMESTAMP:
        raise TimestampError(f"timestamp {timestamp} is not 10 digits of whole UTC seconds")


SealOutput = tuple[bytes, int]
"""(request, plaintext_len): the request is the plaintext (the canonical JSON that was encrypted and, with the
key, signed), the 128-hex signature and the POST body back to back."""

Row = TypeVar("Row", bound="tuple[Any, ...]")
"""What a seal returns for each item: an instance of a class derived in Python from tuple alone (Sealed)."""

SealedRow = Union[Row, tuple[Row, int]]
"""seal_json's result: the row alone, or (row, facts) when the text has a fact of the caller's check_facts."""


def _raise_unless_fallback(status: int, timestamp: int, error_offset: int) -> None:
    """Returns for the statuses that send the payload to the pure-Python path; raises for the others."""
    if status == _JSON_UNSUPPORTED or status == lib.PASARELA_E_JSON_UNSAFE_INTEGER:
        return
    if status == lib.PASARELA_E_JSON_SYNTAX:
        raise PayloadError("$", f"not JSON text (error at byte {error_offset})", error_offset)
    if status == lib.PASARELA_E_JSON_NOT_OBJECT:
        raise PayloadError("$", NOT_OBJECT_REASON)
    if status == lib.PASARELA_E_KEY_MEMBER:
        raise PayloadError("$.key", KEY_REASON)
    _check_timestamp(status, timestamp)
    raise _fail(status)


def seal_json(credentials: Credentials, timestamp: int, json: bytes, flags: int, iv: Optional[bytes],
              row_type: type[Row], head: tuple[Any, ...], check_facts: int) -> Optional[SealedRow[Row]]:
    """One C call that canonicalizes JSON object text, then signs and encrypts it (with iv, or the next IV of this
    thread's pool), and makes its row: row_type's instance of (*head, request, plaintext_len, 0), made as
    tuple.__new__(row_type, ...) makes it, without running row_type's __new__ (the request: plaintext, signature
    and body back to back, plaintext_len bytes of it the plaintext). Returns the row alone, or (row, facts) when
    the text has one of the FACT_* bits of check_facts.

    Returns None when the C path does not handle this text (duplicate keys, very deep nesting,
    numbers it cannot prove exact): the caller then takes the pure-Python path.
    """
    b = _workspace.buffers
    if len(json) > b.json_capacity:
        b = _workspace.grow(len(json))
    if _fast_seal_json is not None:
        out = _fast_seal_json(credentials, b.ws_address, timestamp, json, flags, iv, row_type, head, check_facts)
        if type(out) is not int:
            return out  # type: ignore[return-value]  # the row, or (row, facts)
        status = out
    else:
        return _seal_json_cffi(credentials, timestamp, json, flags, iv, row_type, head, check_facts)
    if status == _IV_POOL_EMPTY:
        b.refill_ivs()
        return seal_json(credentials, timestamp, json, flags, iv, row_type, head, check_facts)
    _raise_unless_fallback(status, timestamp, b.ws.error_offset)
    return None


def _seal_json_cffi(credentials: Credentials, timestamp: int, json: bytes, flags: int, iv: Optional[bytes],
                    row_type: type[Row], head: tuple[Any, ...], check_facts: int) -> Optional[SealedRow[Row]]:
    """seal_json through cffi (PyPy, or PASARELA_NO_FASTCALL=1), in buffers held (_Workspace.hold) until the request
    is copied out: each Python-level call between the C call and the copy may start a collection of the cyclic GC,
    whose finalizers may seal on this thread, in the spare buffers then."""
    with _workspace.hold() as held:
        b = held.buffers if len(json) <= held.buffers.json_capacity else held.grow(len(json))
        ws = b.ws
        status = _seal_json(credentials.struct, ws, timestamp, json, len(json), flags, _NULL if iv is None else iv)
        if status == _IV_POOL_EMPTY:
            b.refill_ivs()
            status = _seal_json(credentials.struct, ws, timestamp, json, len(json), flags, _NULL if iv is None else iv)
        if status == _OK:
            request, plaintext_len, facts = _unpack(b.out, ws.out_len), ws.plaintext_len, ws.json_facts
        error_offset = ws.error_offset
    if status == _OK:
        row = tuple.__new__(row_type, (*head, request, plaintext_len, 0))
        return (row, facts) if facts & check_facts else row
    _raise_unless_fallback(status, timestamp, error_offset)
    return None


def seal(credentials: Credentials, timestamp: int, plaintext: bytes, iv: Optional[bytes] = None) -> SealOutput:
    """Sign and encrypt canonical JSON object text (exactly what JSON.stringify writes), in buffers held until the
    request is copied out (a collection after the C call may run a finalizer that seals on this thread)."""
    with _workspace.hold() as held:
        b = held.fitting(len(plaintext))
        ws = b.ws
        status = lib.pasarela_seal(credentials.struct, ws, timestamp, plaintext, len(plaintext),
                                   _NULL if iv is None else iv)
        if status == _IV_POOL_EMPTY:
            b.refill_ivs()
            status = lib.pasarela_seal(credentials.struct, ws, timestamp, plaintext, len(plaintext), _NULL)
        if status == _OK:
            return _unpack(b.out, ws.out_len), len(plaintext)
    _check_timestamp(status, timestamp)
    raise _fail(status)


_BATCH_JSON_CAPACITY = 65536
"""A batch workspace (~2.6 MiB per thread, touched only as far as a batch fills it) holds about 64 KiB of
JSON per C call, and up to 8 requests of 16 KiB in one group hashed side by side."""


def credentials_array(credentials: list[Any]) -> Any:
    """The C array of a batch's credentials (the Credentials.struct of each item). It does not keep them alive: the
    caller holds the Credentials objects until the last C call that reads the array has returned."""
    return ffi.new("pasarela_credentials *[]", credentials)


def repeated_credentials(credentials: Any, n: int) -> Any:
    """The C array of n pointers to one Credentials.struct (a batch of one terminal): its pointer's bytes
    repeated, without converting n Python objects. The caller holds the Credentials as credentials_array's does."""
    one = ffi.new("pasarela_credentials *[1]", [credentials])
    return ffi.from_buffer("pasarela_credentials *[]", ffi.buffer(one)[:] * n)


_BUFFER_BYTES = 32768
"""A batch's small requests are copied out of the workspace into bytes objects of up to about this size, each shared
by the Sealed objects of its requests: one copy instead of one per request, and none so large that the C allocator
takes it from mmap (glibc: from 128 KiB by default), which costs page faults on every batch."""

_SHARED_REQUEST_BYTES = 2048
"""Requests up to about this size on average (those of payloads up to about 512 B) share buffers; larger ones are
copied out one bytes object each: for 1 KiB payloads (3.3 KB requests) shared buffers made the C allocator give
memory back and fault it in again on every batch (141 page faults per batch of 256 against 72, 11% slower)."""

BatchOutput = tuple[list[Optional[Row]], Optional[list[int]]]
"""A batch's results: a row for each item (None: refused, the item needs the single path) and the facts of
each item. Row i is row_type's instance of (column[i], *common, buffer, plaintext_len, start), its request
(plaintext, signature and body, back to back) being buffer[start:], plaintext_len bytes of it the plaintext:
made as tuple.__new__(row_type, ...) makes it, without running row_type's __new__. Requests that follow one
another share a buffer (of up to _BUFFER_BYTES). The facts are None when every item was sealed and none has a
fact of the caller's check_facts (the common case, told by one C call: the caller then takes every row as it
is)."""


def seal_json_batch(credentials: Any, timestamp: int, jsons: list[bytes], check_facts: int, row_type: type[Row],
                    column: list[Any], common: tuple[Any, ...]) -> BatchOutput[Row]:
    """pasarela_seal_json for many compact JSON texts (orjson output; credentials: credentials_array or
    repeated_credentials, one per text) in as few C calls as the workspace allows, the GIL released during
    each, IVs from this thread's pool. check_facts: the FACT_* bits that make an item the caller must look at;
    row_type, column (an item each) and common: what the rows hold besides the request (BatchOutput)."""
    n = len(jsons)
    blob = ffi.from_buffer("uint8_t[]", jsons[0] if n == 1 else b"".join(jsons))  # large items come one by one
    with _workspace.hold() as held:
        return _seal_items(credentials, timestamp, blob, ffi.new("size_t[]", list(map(len, jsons))), n, check_facts,
                           row_type, column, common, held)


def seal_json_array(credentials: Any, timestamp: int, array: bytes, n: int, check_facts: int, row_type: type[Row],
                    column: list[Any], common: tuple[Any, ...]) -> Optional[BatchOutput[Row]]:
    """seal_json_batch for the n items of one JSON array text (orjson's text of the list of payloads: one
    serializer call for the whole batch instead of one per item). The C core splits it into its items. None
    when array is not an array of n items."""
    with _workspace.hold() as held:
        items = held.items
        if len(items) < len(array):
            items = held.items = ffi.new("uint8_t[]", max(len(array), 2 * len(items)))
        lens = ffi.new("size_t[]", n)
        if lib.pasarela_json_array_items(array, len(array), items, lens, n) != n:
            return None
        return _seal_items(credentials, timestamp, items, lens, n, check_facts, row_type, column, common, held)


def _seal_payload_declined(credentials: Credentials, timestamp: Optional[int], payload: Any, iv: Optional[bytes],
                           row_type: type[Row], head: tuple[Any, ...]) -> None:
    """seal_payload where pasarela._fastcall is not built: every payload is left to the caller's other paths."""
    return None


seal_payload = _fast_seal_payload if _fast_seal_payload is not None else _seal_payload_declined
"""seal_payload(credentials, timestamp, payload, iv, row_type, head): seal_json of stringify(payload)'s text in one
C call, in this thread's workspace (the text never made a bytes object). credentials: a Credentials;
timestamp: None for now, read by that call. The row of (*head, timestamp, request, plaintext_len, 0), None when
stringify declines the payload (and where pasarela._fastcall is not built), or a status (an int) when it is not
PASARELA_OK: then stringify and seal_json, which refill the IV pool, grow the workspace or raise. The C function
itself where there is one: no Python call around it (with the clock and the thread's workspace read in Python,
that took 16% of a seal at 256 B)."""


def _no_stringify(payload: Any) -> Optional[bytes]:
    return None


stringify: Callable[[Any], Optional[bytes]] = _fast_stringify if _fast_stringify is not None else _no_stringify
"""JSON.stringify's exact text of a plain payload (a dict of str, int, float, bool and None, and of lists, tuples
and dicts of them), written straight from the objects by csrc/cpython/stringify.c: seal it with the STRINGIFIED
flag (no check, no facts). None when that writer declines the payload (other types, and keys and numbers it leaves
to the general path: see stringify.h; a top-level "key" or "__proto__" member), and where pasarela._fastcall is
not built (PyPy). The C function itself where there is one: no Python call around it."""


def seal_payloads(credentials: Any, timestamp: int, payloads: list[Any], row_type: type[Row], column: list[Any],
                  common: tuple[Any, ...]) -> Optional[tuple[BatchOutput[Row], int]]:
    """seal_json_batch of payloads written by stringify back to back in this thread's items buffer, where the C
    core reads them (nothing to split, check or copy), and the length of their texts. None when stringify
    declines one of them."""
    if _fast_stringify_into is None:
        return None
    n = len(payloads)
    lens = ffi.new("size_t[]", n)
    with _workspace.hold() as held:
        while True:
            items = held.items
            used: int = _fast_stringify_into(payloads, 0, n, _address(items), len(items), _address(lens))
            if used != -2:
                break
            held.items = ffi.new("uint8_t[]", max(65536, 2 * len(items)))  # then written again, whole
        if used < 0:
            return None
        if _fast_seal_rows is not None and used + n * _sealed_len(used // n) > _SHARED_REQUEST_BYTES * n:
            return _sealed_into_rows(credentials, timestamp, items, lens, n, row_type, column, common, held), used
        return _seal_items(credentials, timestamp, items, lens, n, 0, row_type, column, common, held,
                           STRINGIFIED), used


def _sealed_len(plaintext_len: int) -> int:
    """pasarela_sealed_len (PASARELA_SEALED_LEN) in Python: a cffi call releases the GIL, which another thread then
    holds until its own next release (with two threads sealing batches, each such call cost a hand-off)."""
    return SIGNATURE_HEX_LEN + 11 + 2 * IV_LEN + 1 + 2 * (plaintext_len // 16 + 1) * 16


def _sealed_into_rows(credentials: Any, timestamp: int, plaintexts: Any, lens: Any, n: int, row_type: type[Row],
                      column: list[Any], common: tuple[Any, ...], held: _Held) -> BatchOutput[Row]:
    """_seal_items of n canonical texts (the writer's) whose requests are too large to share buffers: each request
    sealed straight into the bytes object its row holds (_fastcall.seal_rows, pasarela_seal_batch), none copied out
    of the workspace. At 1 KiB that copy, 3.3 KB a request, had taken 4% of seal_many's time."""
    b = held.buffers if held.buffers.json_capacity >= _BATCH_JSON_CAPACITY else held.grow(_BATCH_JSON_CAPACITY)
    statuses = ffi.new("int[]", n)
    rows: list[Optional[Row]] = []
    start, at = 0, _address(plaintexts)
    while start < n:
        ivs_left = (_IV_POOL_BYTES - b.ws.iv_pool_used) // IV_LEN  # (negative after a fork: empty)
        if ivs_left <= 0:
            b.refill_ivs()
            continue
        done = _fast_seal_rows(row_type, column, start, common, _address(credentials + start), b.ws_address,
                               timestamp, at, _address(lens + start), min(n - start, ivs_left),
                               _address(statuses + start))
        if not done:  # an item larger than the workspace
            b = held.grow(lens[start])
            continue
        rows += done
        at += sum(_unpack(lens + start, len(done)))
        start += len(done)
    refused = _unpack(statuses, n)
    if not any(refused):  # PASARELA_OK is 0
        return rows, None
    return [row if status == _OK else None for row, status in zip(rows, refused)], [0] * n


def _seal_items(credentials: Any, timestamp: int, blob: Any, lens: Any, n: int, check_facts: int,
                row_type: type[Row], column: list[Any], common: tuple[Any, ...], held: _Held,
                flags: int = SHORTEST_DIGITS) -> BatchOutput[Row]:
    """seal_json_batch of the n texts back to back at blob, lens[i] bytes each (flags: their JSON flags), in the
    buffers the caller holds (_Workspace.hold)."""
    b = held.buffers if held.buffers.json_capacity >= _BATCH_JSON_CAPACITY else held.grow(_BATCH_JSON_CAPACITY)
    statuses = ffi.new("int[]", n)
    plaintext_lens = ffi.new("size_t[]", n)
    out_lens = ffi.new("size_t[]", n)
    facts = ffi.new("unsigned[]", n)
    rows: list[Optional[Row]] = []
    start = offset = 0
    clean = True  # (through pasarela._fastcall) no item so far refused or with a fact of check_facts
    if _fast_seal_json_batch is not None:
        at = [_address(array) for array in (credentials, blob, lens, statuses, plaintext_lens, out_lens, facts)]
    while start < n:
        if _fast_seal_json_batch is not None:  # the GIL kept for short batches (csrc/cpython/fastcall.c)
            done, first = _fast_seal_json_batch(at[0], timestamp, at[1], offset, at[2], start, n - start, flags,
                                                b.ws_address, at[3], at[4], at[5], at[6], check_facts)
            clean = clean and first == done
        else:
            done = lib.pasarela_seal_json_batch(
                credentials + start, timestamp, blob + offset, lens + start, n - start, flags, _NULL, b.ws,
                statuses + start, plaintext_lens + start, out_lens + start, facts + start,
            )
        if done == 0:
            if b.ws.iv_pool_used + IV_LEN > _IV_POOL_BYTES:
                b.refill_ivs()
            else:  # one item larger than the workspace
                b = held.grow(lens[start])
            continue
        if _fast_rows is not None:
            rows += _fast_rows(row_type, column, start, common, b.out_address, _address(out_lens + start),
                               _address(plaintext_lens + start), done, _BUFFER_BYTES, _SHARED_REQUEST_BYTES)
        else:
            buffers, starts = _requests_py(b.out, _unpack(out_lens + start, done), _BUFFER_BYTES,
                                           _SHARED_REQUEST_BYTES)
            rows += _rows_py(row_type, column[start:start + done], common, buffers,
                             _unpack(plaintext_lens + start, done), starts)
        if start + done < n:
            offset += sum(_unpack(lens + start, done))
        start += done
    if (clean if _fast_seal_json_batch is not None  # (about 50 ns a request less at 64 B)
            else lib.pasarela_batch_first_exception(statuses, facts, n, check_facts) == n):
        return rows, None
    return [row if status == _OK else None for row, status in zip(rows, _unpack(statuses, n))], _unpack(facts, n)


def _rows_py(row_type: type[Row], column: list[Any], common: tuple[Any, ...], buffers: list[bytes],
             plaintext_lens: list[int], starts: list[int]) -> list[Row]:
    """The rows (BatchOutput) of a batch's requests, from _requests_py's buffers and starts: what
    _fastcall.rows does, for PyPy."""
    return list(map(tuple.__new__, itertools.repeat(row_type),
                    zip(column, *map(itertools.repeat, common), buffers, plaintext_lens, starts)))


def _requests_py(out: Any, out_lens: list[int], buffer_bytes: int, shared_request_bytes: int
                 ) -> tuple[list[bytes], list[int]]:
    """Where each of a batch's requests lies (back to back at out, out_lens[i] bytes each) once copied out:
    (buffers, starts), request i being buffers[i][starts[i]:]. Requests of up to shared_request_bytes on average
    share buffers of up to about buffer_bytes; larger ones are copied out one each. With _rows_py, what
    _fastcall.rows does, for PyPy."""
    ends = list(itertools.accumulate(out_lens))
    if not ends:
        return [], []
    if ends[-1] > shared_request_bytes * len(ends):  # each request copied out alone (a refused one is empty)
        out_bytes = ffi.buffer(out, ends[-1])
        return list(map(out_bytes.__getitem__, map(slice, [0, *ends[:-1]], ends))), [0] * len(ends)
    buffers: list[bytes] = []  # a buffer of up to buffer_bytes at a time, shared by its requests
    starts: list[int] = []
    first = base = 0
    while first < len(ends):
        last = max(first + 1, bisect.bisect_right(ends, base + buffer_bytes, first))
        buffers += [_unpack(out + base, ends[last - 1] - base)] * (last - first)
        starts.append(0)
        starts += [end - base for end in ends[first:last - 1]]
        first, base = last, ends[last - 1]
    return buffers, starts


_NOT_VERIFIED_STATUSES = frozenset({
    lib.PASARELA_E_BAD_PADDING, lib.PASARELA_E_JSON_NOT_UTF8, lib.PASARELA_E_JSON_SYNTAX,
    lib.PASARELA_E_JSON_NOT_OBJECT, lib.PASARELA_E_KEY_MEMBER, lib.PASARELA_E_PROTO_MEMBER, _SIGNATURE_MISMATCH,
})
"""The refusals decided after decryption: one reason for all (errors.NOT_VERIFIED; a malformed signature apart)."""
_DATA_REFUSALS = {lib.PASARELA_E_BAD_HEX: BAD_DATA, lib.PASARELA_E_BAD_LENGTH: BAD_LENGTH}
"""The refusals of data whose form is wrong, which its bytes alone decide."""


def _refuse(status: int, timestamp: int, signature: bytes) -> NoReturn:
    """The AuthError of a refused request (or the NativeError of a misuse). Every refusal decided after decryption
    is the same one, made by the same work (signature_refusal): which of them it was must show neither in the reason
    nor in the time a refusal takes. (A CBC padding oracle's probe fails either as a padding or, its padding valid,
    as the garbage block before it: as text that is not UTF-8.)"""
    if status in _NOT_VERIFIED_STATUSES:
        raise signature_refusal(signature.decode("ascii"))
    reason = _DATA_REFUSALS.get(status)
    if reason is not None:
        raise AuthError(reason)
    _check_timestamp(status, timestamp)
    raise _fail(status)


class Opened(NamedTuple):
    verified: bool  # text is the verified canonical text; else the decrypted text, for the pure-Python path
    text: bytes
    bad_padding: bool  # (not verified) the padding was invalid: refuse once the pure-Python path has run


def open_request(credentials: Credentials, timestamp: int, data: bytes, signature: bytes) -> Opened:
    """Decrypt and verify in one C call, as the JavaScript server does, in a time that does not depend
    on whether the padding was valid.

    verified: the canonical text. Not verified: the decrypted text, whose canonical form needs the
    pure-Python path (then verify it with verify(), and refuse it if bad_padding, after doing that work).
    Refusals raise AuthError. In buffers held until the text is copied out (as seal).
    """
    n = len(data)
    with _workspace.hold() as held:
        b = held.fitting(n // 2)
        ws = b.ws
        status = _open(credentials.struct, ws, timestamp, data, n, signature)
        if status == _OK:
            return Opened(True, ffi.unpack(b.plaintext_text, ws.plaintext_len), False)
        if status == _JSON_UNSUPPORTED:
            return Opened(False, ffi.unpack(b.out, ws.out_len), bool(ws.json_facts & lib.PASARELA_OPEN_BAD_PADDING))
    _refuse(status, timestamp, signature)


_READ_THE_SLOWER_WAY = frozenset({
    lib.PASARELA_E_REQUEST_FORM,  # a header, the body or the timestamp's window: read_request says which
    lib.PASARELA_E_BAD_HEX, lib.PASARELA_E_BAD_LENGTH,  # maybe data with JSON escapes: read it as JSON
    _JSON_UNSUPPORTED,  # (padding valid or not) the canonical form needs the pure-Python path
    lib.PASARELA_E_TIMESTAMP,
})


def _open_post_cffi(credentials: Credentials, headers: Mapping[str, str], body: bytes, now: float, tolerance: float
                    ) -> Union[tuple[bytes, int], int, None]:
    """open_post where pasarela._fastcall is not built (PyPy): the headers read here (_post_headers), the request
    opened through cffi in this thread's workspace; the verified text and its facts (the payload is left to the
    caller), a status, or None."""
    read = _post_headers(headers)
    if read is None:
        return None
    timestamp_text, authorization = read
    with _workspace.hold() as held:  # until the text is copied out (as seal)
        b = held.buffers  # (too small: open_post_grown grows _workspace.buffers, which these are again after)
        ws = b.ws
        status: int = _open_request(credentials.struct, ws, timestamp_text, len(timestamp_text), now, tolerance,
                                    authorization, len(authorization), body, len(body))
        if status == _OK:
            return _unpack(b.plaintext_text, ws.plaintext_len), ws.json_facts
    return status


open_post = _fast_open_post if _fast_open_post is not None else _open_post_cffi
"""open_post(credentials, headers, body, now, tolerance): open_request of a POST request in the form seal writes, its
headers (the str values of "timestamp" and "Authorization", or else "authorization", as ASGI servers spell it) and
body read by the C core too, in this thread's workspace. credentials: a Credentials. The payload of the
verified canonical text (as orjson.loads returns it, built by pasarela._fastcall), or (that text, its FACT_* bits)
when it is left to the caller to read (without pasarela._fastcall; a text with an integer of 17 digits or more,
which JSON.parse rounds; what that reader declines), a status (an int: open_post_grown, then settle_open_post), or
None when the request is to be read the slower way (read_request_bytes, then open_request), which gives the precise
refusal: the headers not in that form (missing, not str, a timestamp with lone surrogates, an authorization that is
not ASCII). The C function itself where there is one: Terminal.open calls it with no Python call around it."""


def _open_post_bytes_cffi(credentials: Credentials, headers: Mapping[str, str], body: bytes, now: float,
                          tolerance: float) -> Union[bytes, int, None]:
    """open_post_bytes where pasarela._fastcall is not built: _open_post_cffi's verified text alone."""
    out = _open_post_cffi(credentials, headers, body, now, tolerance)
    return out[0] if type(out) is tuple else cast("Optional[int]", out)


open_post_bytes = _fast_open_post_bytes if _fast_open_post_bytes is not None else _open_post_bytes_cffi
"""open_post_bytes(credentials, headers, body, now, tolerance): open_post's checks, returning the verified canonical
text (bytes: what JSON.stringify writes, without the "key" member) instead of its payload; or, as open_post, a status
(open_post_grown(..., as_bytes=True), then settle_open_post) or None (read the slower way). Terminal.open_bytes calls
it directly."""


def open_post_grown(credentials: Credentials, headers: Mapping[str, str], body: bytes, now: float, tolerance: float,
                    status: int, as_bytes: bool = False) -> Union[Any, tuple[bytes, int], int, None]:
    """open_post's answer once its status is seen to (as_bytes: open_post_bytes's): a workspace too small for the body
    is grown and the request opened again (that call's answer); any other status as it is."""
    if status != _BUFFER_TOO_SMALL:
        return status
    _workspace.grow(len(body) // 2)
    return (open_post_bytes if as_bytes else open_post)(credentials, headers, body, now, tolerance)


def settle_open_post(headers: Mapping[str, str], status: int) -> None:
    """What becomes of a status open_post answered (open_post_grown's, its workspace grown): None for a status the
    slower way reads (it names the refusal); other refusals raise AuthError."""
    if status in _READ_THE_SLOWER_WAY:
        return None
    _refuse(status, 0, cast("tuple[bytes, bytes]", _post_headers(headers))[1][6:])


def _post_headers(headers: Mapping[str, str]) -> Optional[tuple[bytes, bytes]]:
    """What open_post reads of the headers, as pasarela._fastcall reads it: the UTF-8 of the "timestamp" and
    "Authorization" (else "authorization") values, or None when they are not both str or the latter is not ASCII
    (the request is then read the slower way)."""
    timestamp_text, authorization = headers.get("timestamp"), headers.get("Authorization")
    if authorization is None:
        authorization = headers.get("authorization")
    if type(timestamp_text) is not str or type(authorization) is not str or not authorization.isascii():
        return None
    return timestamp_text.encode("utf-8", "surrogatepass"), authorization.encode("ascii")


def verify(credentials: Credentials, timestamp: int, canonical: bytes, signature: bytes) -> None:
    """Raises AuthError unless signature is the signature of canonical JSON object text."""
    # the signed text and ciphertext of a plaintext of n bytes fit in the scratch of JSON input of n bytes
    status = lib.pasarela_verify(credentials.struct, _buffers(len(canonical)).ws, timestamp, canonical, len(canonical),
                                 signature)
    if status != _OK:
        _refuse(status, timestamp, signature)


def decrypt_data(credentials: Credentials, timestamp: int, data: bytes) -> bytes:
    """The plaintext of ``<iv_hex>:<ct_hex>`` under the aesKey of (credentials, timestamp): a client decrypting
    the answer to its own request, which names a bad padding (its own key, or an answer not meant for it)."""
    out = ffi.new("uint8_t[]", max(len(data) // 2, 1))
    out_len = ffi.new("size_t *")
    status = lib.pasarela_decrypt_data(credentials.struct, timestamp, data, len(data), out, len(out), out_len)
    if status != _OK:
        reason = BAD_PADDING if status == lib.PASARELA_E_BAD_PADDING else _DATA_REFUSALS.get(status)
        if reason is None:
            raise _fail(status)
        raise AuthError(reason)
    return ffi.buffer(out, out_len[0])[:]


class Canonical(NamedTuple):
    text: bytes
    facts: int  # its FACT_* bits


def canonicalize(text: bytes, flags: int = 0) -> Optional[Canonical]:
    """JSON.stringify(JSON.parse(text)) and its facts, text read with flags (SHORTEST_DIGITS: orjson's text); None when
    the C path leaves it to the reference. In buffers held until the text is copied out (as seal)."""
    with _workspace.hold() as held:
        b = held.fitting(len(text))
        ws = b.ws
        status = lib.pasarela_json_canonicalize(
            text, len(text), flags, b.plaintext, ws.plaintext_cap, ffi.addressof(ws, "plaintext_len"), ws.scratch,
            ws.scratch_cap, ffi.addressof(ws, "error_offset"), b.facts,
        )
        if status == _OK:
            return Canonical(ffi.unpack(b.plaintext_text, ws.plaintext_len), b.facts[0])
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
