"""The terminal envelope on the C core: seal a payload in one pass, serialized exactly once.

A plain dict is sealed in one C call: pasarela's C writer writes exactly what JSON.stringify writes,
straight from its objects, and the same call signs and encrypts those bytes. Any other payload first
gets its exact text from exact_text.py (the one ladder: orjson's text, which the C core makes exact,
JSON text as given, the pure-Python reference; and every refusal, PayloadError naming the path),
which one C call then seals.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union, cast

import orjson

from .. import _binding, _telemetry
from ..errors import BAD_DATA, BAD_LENGTH, AuthError, PayloadError, signature_refusal
from . import reference
from .exact_text import ORJSON_OPTIONS as _ORJSON_OPTIONS
from .exact_text import compact_json, exact_text, finite, vouch
from .exact_text import orjson_default as _default
from .inbound import (
    DEFAULT_TOLERANCE,
    Body,
    Params,
    as_bytes,
    has_long_digit_run,
    parse_payload,
    read_request,
    read_request_bytes,
)
from .request import (
    Sealed,
    check_iv,
    check_method,
    check_timestamp,
    encode_credential,
)
from .stringify import canonicalize_text

__all__ = ["Payload", "Terminal", "canonical_json", "seal_batch"]

Payload = Union[dict[str, Any], bytes, bytearray, memoryview, str, None]
"""A dict, JSON object text, or None for an empty payload (sealed as ``{}``)."""

_SHORTEST_DIGITS = _binding.SHORTEST_DIGITS
_STRINGIFIED = _binding.STRINGIFIED
_stringify = _binding.stringify
_FACT_NULL = _binding.FACT_NULL
_FACT_PROTO = _binding.FACT_PROTO
_FACT_CHECK = _FACT_NULL | _FACT_PROTO  # a batch item the single path must look at: refuse, or walk for NaN
_HAS_HW_AES = _binding.HAS_HW_AES
_now = time.time
_whole = math.trunc  # int(_now()), 40 ns sooner (int() of a float takes the generic call)
_dumps = orjson.dumps
_loads = orjson.loads
_seal_json = _binding.seal_json
_FACT_LONG_INT = _binding.FACT_LONG_INT
def canonical_json(payload: Payload) -> bytes:
    """The exact bytes JSON.stringify writes for payload (what seal encrypts and signs).

    Raises PayloadError, naming the path, for anything JSON.stringify cannot represent exactly.
    """
    json, flags, _ = exact_text(payload)
    if flags == _STRINGIFIED:
        return json
    canonical, facts = _binding.canonicalize(json, flags) or (None, None)
    exact = vouch(payload, facts, canonical)
    return cast(bytes, canonical) if exact is None else exact


def _parse_canonical(text: bytes, long_int: Optional[bool] = None) -> dict[str, Any]:
    """parse_payload (the reference's), with orjson where it returns the same values. long_int: whether text
    has an integer literal of 17 digits or more, as the C canonicalizer reports it (None: not known)."""
    if has_long_digit_run(text) if long_int is None else long_int:  # maybe an integer JSON.parse rounds
        return parse_payload(text)
    try:
        payload: dict[str, Any] = orjson.loads(text)
    except orjson.JSONDecodeError:  # lone surrogates
        return parse_payload(text)
    return payload


class Terminal:
    """A terminal's credentials, sealing requests on the C core.

    ``repr`` and ``str`` show the terminal serial only; the business code never leaves this object.
    Its credentials are set once (a second ``__init__`` raises TypeError, assigning or deleting them
    AttributeError), since other threads may be sealing and opening with them.
    """

    __slots__ = ("_business_code", "_native", "_serial_bytes", "terminal_serial")
    _business_code: bytes
    _native: _binding.Credentials
    _serial_bytes: bytes
    terminal_serial: str

    def __init__(self, business_code: str, terminal_serial: str) -> None:
        if hasattr(self, "_native"):
            raise TypeError(f"a {type(self).__name__}'s credentials cannot be changed: make a new one")
        code = encode_credential("business_code", business_code)
        serial = encode_credential("terminal_serial", terminal_serial)
        native = _binding.Credentials(code, serial)
        for name, value in (("_business_code", code), ("_serial_bytes", serial), ("_native", native),
                            ("terminal_serial", serial.decode("utf-8"))):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        if name in Terminal.__slots__:
            raise AttributeError(f"a {type(self).__name__}'s credentials cannot be changed: make a new one")
        object.__setattr__(self, name, value)  # (a subclass's own attributes)

    def __delattr__(self, name: str) -> None:
        if name in Terminal.__slots__:
            raise AttributeError(f"a {type(self).__name__}'s credentials cannot be changed: make a new one")
        object.__delattr__(self, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(terminal_serial={self.terminal_serial!r}, business_code=<redacted>)"

    def __reduce__(self) -> Any:
        raise TypeError(f"{type(self).__name__} holds a secret and cannot be pickled")

    def seal(self, payload: Payload = None, *, method: str = "POST", timestamp: Optional[int] = None,
             iv: Optional[bytes] = None) -> Sealed:
        """Sign and encrypt one request.

        payload: a dict, JSON object text (bytes or str), or None for an empty payload (sealed as ``{}``,
        as abort calls need). timestamp: whole UTC seconds, 10 digits (default: now). iv: 16 bytes
        (default: random, from this thread's pool: AES-256 output under a key fresh from the OS CSPRNG,
        csrc/ivs.c); pass it only to reproduce a request.
        """
        if method != "POST":
            method = check_method(method)
        if timestamp is not None:
            timestamp = check_timestamp(timestamp)
        if iv is not None:
            iv = check_iv(iv)
        declined = False
        if type(payload) is dict and _HAS_HW_AES:  # the fast path: its exact text written, signed and encrypted in one
            # C call (which reads the clock when timestamp is None, makes the row, and counts it with pasarela[otel])
            row = _binding.seal_payload(self._native, timestamp, payload, iv, Sealed, (self, method))
            if type(row) is Sealed:
                return row
            declined = row is None  # the C writer declined it; else a status: an empty IV pool, a small workspace
        return self._seal_text(payload, method, timestamp, iv, declined)

    def _seal_text(self, payload: Payload, method: str, timestamp: Optional[int], iv: Optional[bytes],
                   declined: bool) -> Sealed:
        """seal of what its fast path did not seal (another payload, one its C writer declined, a CPU without AES):
        the payload's exact text, sealed in one C call (counted by pasarela.terminal.counting with pasarela[otel])."""
        ts = _whole(_now()) if timestamp is None else timestamp
        if not _HAS_HW_AES:
            return self._reference().seal(payload, method=method, timestamp=ts, iv=iv)
        # its exact text (exact_text.py: the ladder from a payload to its text, and the refusals), sealed in one C
        # call, which makes orjson's text or the caller's exact on the way
        json, flags, check_facts = exact_text(payload, declined)
        sealed = _seal_json(self._native, ts, json, flags, iv, Sealed, (self, method, ts), check_facts)
        if type(sealed) is Sealed:
            return sealed
        # the C core could not vouch for that text alone: it declined it (None) or reports a fact of it (a null, a
        # top-level "__proto__"); vouch refuses the payload, keeps the row (None) or gives the reference's text
        # (typed by ignores: cast() is a call, which cost this path 2%)
        kept, facts = sealed if sealed is not None else (None, None)  # type: ignore[misc]  # (row, facts)
        exact = vouch(payload, facts)
        if exact is None:
            return kept  # type: ignore[return-value]  # the row, kept
        return _seal_json(self._native, ts, exact, _STRINGIFIED, iv, Sealed,  # type: ignore[return-value]
                          (self, method, ts), 0)  # the reference's exact text: sealed as it is

    def seal_many(self, payloads: Iterable[Payload], *, method: str = "POST",
                  timestamp: Optional[int] = None) -> list[Sealed]:
        """Seal many payloads for this terminal at one timestamp: the same results as seal() called for
        each (fresh IVs), with one key derivation and few C calls for the whole batch, requests hashed
        and encrypted 16 at a time side by side, IVs from this thread's pool."""
        payloads = list(payloads)
        return _seal_many([self] * len(payloads), payloads, method, timestamp, self)

    def open(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
             now: Optional[float] = None, tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
        """Verify and decrypt a received terminal request, exactly as the JavaScript server does.

        Returns the payload. Every failure raises AuthError, whose ``body`` is the same AUTH-001 for
        every cause; ``reason`` says what was wrong, for the operator's logs only.
        """
        if type(body) is not bytes:
            body = as_bytes(body)  # a str, bytearray or memoryview takes the bytes' path (one copy)
        if method == "POST" and type(body) is bytes and _HAS_HW_AES:  # the common case: headers and body read by the C
            # core too, in one call, which counts the payload it makes with pasarela[otel]
            when = _now() if now is None else now
            opened: Any = _binding.open_post(self._native, headers, body, when, tolerance)
            if type(opened) is dict:  # the payload
                return opened
            if type(opened) is int:  # a status: the workspace grown and the request opened again, or still a status
                opened = _binding.open_post_grown(self._native, headers, body, when, tolerance, opened)
            if type(opened) is tuple:  # the plaintext, whose payload the C core did not build
                return _parse_canonical(opened[0], bool(opened[1] & _FACT_LONG_INT))
            if type(opened) is dict:  # (the workspace grown)
                return opened
            return self._open_rest(method, headers, body, params, now, tolerance, opened,  # type: ignore[return-value]
                                   False)
        return self._open_rest(method, headers, body, params, now, tolerance, None, False)  # type: ignore[return-value]

    def open_bytes(self, method: str, headers: Mapping[str, str], body: Body = None, params: Params = None, *,
                   now: Optional[float] = None, tolerance: float = DEFAULT_TOLERANCE) -> bytes:
        """Verify and decrypt a received terminal request as :meth:`open` does, returning the verified plaintext
        as ``JSON.stringify`` writes it (without the ``"key"`` member the signature adds) instead of the payload.

        For a gateway that forwards what it verified (to a queue, another service): no Python objects are made
        of the payload. The same checks, the same refusals (AuthError with the same AUTH-001 ``body`` and the
        same ``reason``) and the same telemetry (counted as an open) as :meth:`open`; ``json.loads`` of the bytes
        is open's payload, up to the integers JSON.parse rounds (open returns those as the doubles it makes).
        """
        if type(body) is not bytes:
            body = as_bytes(body)  # a str, bytearray or memoryview takes the bytes' path (one copy)
        if method == "POST" and type(body) is bytes and _HAS_HW_AES:  # the common case, read by the C core as open's
            # is, which counts the bytes it makes with pasarela[otel]
            when = _now() if now is None else now
            text: Any = _binding.open_post_bytes(self._native, headers, body, when, tolerance)
            if type(text) is int:  # a status: the workspace grown and the request opened again, or still a status
                text = _binding.open_post_grown(self._native, headers, body, when, tolerance, text, True)
            if type(text) is bytes:  # the verified bytes
                return text
            return self._open_rest(method, headers, body, params, now, tolerance, text, True)  # type: ignore[return-value]
        return self._open_rest(method, headers, body, params, now, tolerance, None, True)  # type: ignore[return-value]

    def _open_rest(self, method: str, headers: Mapping[str, str], body: Body, params: Params, now: Optional[float],
                   tolerance: float, status: Optional[int], as_bytes: bool) -> Union[dict[str, Any], bytes]:
        """open and open_bytes (as_bytes) of what their fast path did not open: after its status (an int: a refusal
        raised here) or None (read the slower way: _open_read, which names the refusal), or another method or body,
        a CPU without AES (counted by pasarela.terminal.counting with pasarela[otel])."""
        if not _HAS_HW_AES:
            reference = self._reference()
            return (reference.open_bytes if as_bytes else reference.open)(method, headers, body, params, now=now,
                                                                          tolerance=tolerance)
        if status is not None:
            _binding.settle_open_post(headers, status)
        return self._open_read(method, headers, body, params, now, tolerance, as_bytes)

    def _open_read(self, method: str, headers: Mapping[str, str], body: Body, params: Params, now: Optional[float],
                   tolerance: float, as_bytes: bool) -> Union[dict[str, Any], bytes]:
        """open's reading of a request the C core did not read whole (another method, a parsed body, other header
        spellings, escapes in the body, a refusal to name): the payload, or with as_bytes (open_bytes) its verified
        canonical text."""
        timestamp, signature, data, raw = read_request_bytes(method, headers, body, params, now, tolerance)
        try:
            opened = _binding.open_request(self._native, timestamp, data, signature)
            raw = False
        except AuthError as exc:
            if not raw or exc.reason not in (BAD_DATA, BAD_LENGTH):
                raise
        if raw:  # the body, read as JSON: its precise refusal, or hex digits written as escapes
            data = read_request(method, headers, body, params, now=now, tolerance=tolerance).data.encode("ascii")
            opened = _binding.open_request(self._native, timestamp, data, signature)
        text = opened.text
        if not opened.verified:  # a plaintext whose JSON.stringify form the C path leaves to the reference
            refused = opened.bad_padding  # decided only at the end, the same work done as for a valid padding
            payload: Optional[dict[str, Any]] = None
            try:
                text = canonicalize_text(text)
            except PayloadError:
                refused = True
            else:
                if text.startswith(b"{"):  # a top-level "key" or "__proto__": refused whatever was signed, as the
                    try:  # C path and the reference do (a splicing client signs it)
                        payload = _parse_canonical(text)
                    except AuthError:
                        refused = True
                    else:
                        refused |= "key" in payload or "__proto__" in payload
                try:
                    _binding.verify(self._native, timestamp, text, signature)
                except AuthError:
                    refused = True
            if refused:  # every refusal after decryption is the same one (errors.NOT_VERIFIED)
                raise signature_refusal(signature.decode("ascii"))
            return text if as_bytes else cast("dict[str, Any]", payload)  # verified: JSON object text
        return text if as_bytes else _parse_canonical(text)

    def _derive(self, timestamp: int) -> _binding.Derived:
        return _binding.derive(self._business_code, self._serial_bytes, timestamp)

    def _decrypt(self, timestamp: int, iv: bytes, ciphertext: bytes) -> bytes:
        if not _HAS_HW_AES:
            return self._reference()._decrypt(timestamp, iv, ciphertext)
        return _binding.decrypt_data(self._native, timestamp, f"{iv.hex()}:{ciphertext.hex()}".encode("ascii"))

    def _reference(self) -> reference.Terminal:
        return reference.Terminal(self._business_code, self._serial_bytes)


def seal_batch(items: Iterable[tuple[Terminal, Payload]], *, method: str = "POST",
               timestamp: Optional[int] = None) -> list[Sealed]:
    """Seal requests for many terminals at once (a gateway's outgoing queue): the same results as
    ``terminal.seal(payload)`` for each pair, in few C calls with the GIL released."""
    pairs = list(items)
    return _seal_many([terminal for terminal, _ in pairs], [payload for _, payload in pairs], method, timestamp)


_CHUNK_BYTES = 1 << 20
"""A batch is serialized and sealed about this many bytes of JSON at a time (its first item alone). Per request,
batches in 1 MiB chunks against 64 KiB ones (2-vCPU Xeon, one process, medians of 5 interleaved rounds, 2026-11-27):
256 B x 256 1.03 / 1.02 us, 1 KiB x 256 2.91 / 3.18 us, 16 KiB x 64 35.9 / 52.0 us, 128 KiB x 8 478 / 704 us; fewer,
longer C calls also hold the GIL for a smaller share (benchmarks/threads.py)."""

_SMALL_ITEM_BYTES = 1024
"""Items up to about this many bytes of JSON are serialized a chunk at a time, as one array (one orjson call
and one output buffer instead of one per item), which the C core splits into its items (64 bytes at a time:
about 0.2 ns a byte): at 64 B that costs a third of serializing each item alone, and seal_many of 1 KiB items
took 0.84-0.97x the time of the per-item way in paired runs; at 2 and 3 KiB the runs disagreed (1.02x, 0.87x),
so larger items keep the per-item way."""


def _seal_many(terminals: list[Terminal], payloads: list[Payload], method: str, timestamp: Optional[int],
               only: Optional[Terminal] = None) -> list[Sealed]:
    """only: the terminal of every item, when there is one."""
    method = check_method(method)
    ts = check_timestamp(timestamp)
    if not _HAS_HW_AES:
        return [terminal.seal(payload, method=method, timestamp=ts) for terminal, payload in zip(terminals, payloads)]
    sealed: list[Sealed] = []
    n = len(payloads)
    start, count = 0, 1  # items per chunk: one, then as many as about _CHUNK_BYTES of their JSON
    small = False  # the items are small (as the first one is): the chunk is serialized as one array
    while start < n:
        stop = min(n, start + count)
        # each chunk's texts are dropped before the next chunk is serialized: the C allocator then reuses
        # their memory (kept one chunk longer, at 1 MiB they cost 225 page faults and 50% more time per item)
        if stop - start == 1:  # (the first item, and every item of 32 KiB or more) what seal does, with this text
            text_len = _seal_lone(terminals[start], payloads[start], method, ts, sealed)
            small = text_len <= _SMALL_ITEM_BYTES
        else:
            text_len = _seal_chunk(terminals[start:stop], payloads[start:stop], method, ts, only, small, sealed)
        count = max(1, min(4096, _CHUNK_BYTES * (stop - start) // max(1, text_len)))
        start = stop
    return sealed


def _seal_chunk(terminals: list[Terminal], payloads: list[Payload], method: str, ts: int, only: Optional[Terminal],
                small: bool, sealed: list[Sealed]) -> int:
    """Seals a chunk of two or more items in few C calls, appending to sealed; returns the length of their JSON."""
    # held until this function returns, after its last C call: the arrays hold bare pointers to their structs
    natives = [only._native] if only is not None else [terminal._native for terminal in terminals]
    credentials = (_binding.repeated_credentials(natives[0].struct, len(payloads)) if only is not None
                   else _binding.credentials_array([native.struct for native in natives]))
    common = (method, ts)  # each item's Sealed: (terminal, method, ts, buffer, plaintext_len, start)
    # every item written exactly by _stringify (sealed as it is), else orjson's array of them (split and checked
    # by the C core), else each item serialized alone
    stringified = _binding.seal_payloads(credentials, ts, payloads, Sealed, terminals, common)
    result, text_len = stringified if stringified is not None else (None, 0)
    # (orjson's text of the list, or None when it refuses it: then each item is serialized alone; items that are
    # not dicts are refused by the C path, which sends them to the single path)
    array = compact_json(payloads) if small and result is None else None
    if array is not None:
        result = _binding.seal_json_array(credentials, ts, array, len(payloads), _FACT_CHECK, Sealed, terminals,
                                          common)
        text_len = len(array)
    if result is None:
        raws = _compact_jsons(payloads)
        result = _binding.seal_json_batch(credentials, ts, raws, _FACT_CHECK, Sealed, terminals, common)
        text_len = sum(map(len, raws))
    batch, facts = result
    if facts is None:  # every item sealed, none to check
        sealed += cast("list[Sealed]", batch)
        _telemetry.sealed_many(method, len(batch))
    else:
        sealed += [_checked(terminal, payload, request, fact, method, ts)
                   for terminal, payload, request, fact in zip(terminals, payloads, batch, facts)]
    return text_len


def _seal_lone(terminal: Terminal, payload: Payload, method: str, ts: int, sealed: list[Sealed]) -> int:
    """One item alone, appended to sealed: the single seal's C call on _stringify's text, or (declined) on
    _compact_jsons's (sealed in a batch of one, it would cost the batch's bookkeeping on top: at 1 MiB that made
    seal_many slower than seal). Returns the length of that text."""
    text = _stringify(payload)  # None for anything but a dict, as for what it declines
    raw, flags = (_compact_jsons([payload])[0], _SHORTEST_DIGITS) if text is None else (text, _STRINGIFIED)
    try:
        out = _seal_json(terminal._native, ts, raw, flags, None, Sealed, (terminal, method, ts),
                         _FACT_CHECK) if raw else None
    except PayloadError:  # the single path raises it, with its precise wording
        out = None
    if type(out) is Sealed:
        sealed.append(out)
        _telemetry.sealed_many(method, 1)
    elif out is None:
        sealed.append(terminal.seal(payload, method=method, timestamp=ts))
    else:
        sealed.append(_checked(terminal, payload, *cast("tuple[Sealed, int]", out), method, ts))
    return len(raw)


def _compact_jsons(payloads: list[Payload]) -> list[bytes]:
    """orjson's text of each dict payload; b"" (which the C path refuses) for the others and for those orjson
    refuses: the single path then seals them or raises the precise error. A dict with a "key" member is
    refused by the C path too."""
    try:
        return [_dumps(payload, default=_default, option=_ORJSON_OPTIONS) if type(payload) is dict else b""
                for payload in payloads]
    except (orjson.JSONEncodeError, TypeError):
        return [compact_json(payload) or b"" if type(payload) is dict else b"" for payload in payloads]


def _checked(terminal: Terminal, payload: Payload, sealed: Optional[Sealed], fact: int, method: str, ts: int
             ) -> Sealed:
    """The batch's result for one item (None: refused), or the single path's when the batch could not vouch for
    it (refused, a top-level "__proto__" member, or a null that may stand for a NaN or an infinity)."""
    if sealed is not None and not fact & _FACT_PROTO and (not fact & _FACT_NULL or finite(payload)):
        _telemetry.sealed_many(method, 1)
        return sealed
    return terminal.seal(payload, method=method, timestamp=ts)
