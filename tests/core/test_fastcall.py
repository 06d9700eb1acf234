"""pasarela._fastcall, the CPython way into the C core's two hottest calls, gives what the cffi way gives.

On CPython, _binding.seal_json and _binding.open_post call pasarela_seal_json and pasarela_open_request through
pasarela._fastcall (one C-API call instead of cffi's call, field reads and copy); elsewhere (PyPy) through cffi.
A batch's requests are copied out into their Sealed objects by _fastcall.rows, elsewhere by _binding._requests_py
and _binding._rows_py; requests too large to share buffers are sealed straight into theirs by _fastcall.seal_rows
(elsewhere sealed in the workspace and copied out like the others). Both ways run here: the other one with
_binding's _fast_seal_json, _fast_rows and _fast_seal_rows set to None, its seal_payload (on CPython the C function
itself, which Terminal.seal calls) set to the one that declines every payload, and its open_post (the C function
itself, which Terminal.open calls) set to the cffi one.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any, Callable, Optional

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pasarela import AuthError, PayloadError, Terminal, _binding, _fastcall, canonical_json  # _fastcall: CPython
from pasarela.terminal import envelope
from support.finalizers import finalizer_at_each_collection
from support.strategies import sealable_objects

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
NOON = 1_764_072_000  # 2025-11-25 12:00:00 UTC


@pytest.fixture
def cffi_way(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """_binding calls the C core through cffi, as on PyPy."""
    monkeypatch.setattr(_binding, "_fast_seal_json", None)
    monkeypatch.setattr(_binding, "seal_payload", _binding._seal_payload_declined)
    monkeypatch.setattr(_binding, "open_post", _binding._open_post_cffi)
    monkeypatch.setattr(_binding, "_fast_rows", None)
    monkeypatch.setattr(_binding, "_fast_seal_rows", None)
    yield


def _both_ways(call: Callable[[], Any]) -> tuple[Any, Any]:
    """call() through _fastcall, then through cffi (exceptions returned, not raised)."""
    results = []
    names = ("_fast_seal_json", "seal_payload", "open_post", "_fast_rows", "_fast_seal_rows")
    for fast in ((_fastcall.seal_json, _fastcall.seal_payload, _fastcall.open_post, _fastcall.rows,
                  _fastcall.seal_rows), (None, _binding._seal_payload_declined, _binding._open_post_cffi, None, None)):
        saved = [getattr(_binding, name) for name in names]
        for name, value in zip(names, fast):
            setattr(_binding, name, value)
        try:
            results.append(call())
        except Exception as exc:  # compared by the caller
            results.append(exc)
        finally:
            for name, value in zip(names, saved):
                setattr(_binding, name, value)
    return results[0], results[1]


def test_cpython_seals_and_opens_through_fastcall(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            calls.append(name)
            return function(*args)
        return call

    monkeypatch.setattr(_binding, "_fast_seal_json", counted("seal_json", _fastcall.seal_json))
    monkeypatch.setattr(_binding, "seal_payload", counted("seal_payload", _fastcall.seal_payload))
    monkeypatch.setattr(_binding, "open_post", counted("open_post", _fastcall.open_post))
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    terminal.seal({})  # fills this thread's IV pool (an empty pool costs a second call)
    calls.clear()
    sealed = terminal.seal({"amount": 1}, timestamp=NOON)
    assert terminal.open("POST", sealed.headers, sealed.body, now=NOON) == {"amount": 1}
    text = terminal.seal(b'{"amount":1}', timestamp=NOON)  # JSON text: canonicalized by the C core
    assert text.plaintext == sealed.plaintext
    assert calls == ["seal_payload", "open_post", "seal_json"]


def test_seal_payload_leaves_an_empty_iv_pool_and_a_small_workspace_to_the_two_calls() -> None:
    """A status other than PASARELA_OK (the pool empty, the workspace too small for the text) is returned; seal
    then writes the text and seals it with seal_json, which refills the pool or grows the workspace."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    payload = {"text": "x" * 20000}  # within the writer's 32 KiB, beyond a fresh workspace
    result: list[Any] = []

    def in_a_fresh_thread() -> None:  # (a thread's workspace starts small, its IV pool empty)
        buffers = _binding._workspace.buffers
        result.append(_binding.seal_payload(terminal._native, NOON, payload, None, _Row, ()))
        result.append(_binding.seal_payload(terminal._native, NOON, {"a": 1}, None, _Row, ()))
        result.append(terminal.seal(payload, timestamp=NOON))
        result.append(_binding._workspace.buffers is not buffers)

    thread = threading.Thread(target=in_a_fresh_thread)
    thread.start()
    thread.join()
    too_small, empty, sealed, grown = result
    assert too_small == _binding.lib.PASARELA_E_BUFFER_TOO_SMALL and empty == _binding.lib.PASARELA_E_IV_POOL_EMPTY
    assert grown and terminal.open("POST", sealed.headers, sealed.body, now=NOON) == payload
    assert _binding.seal_payload(terminal._native, NOON, {"key": 1}, None, _Row, ()) is None  # declined


@given(sealable_objects(), st.binary(min_size=16, max_size=16), st.integers(min_value=0, max_value=3))
def test_seal_gives_the_same_bytes_either_way(payload: dict[str, Any], iv: bytes, shift: int) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    fast, slow = _both_ways(lambda: terminal.seal(payload, timestamp=NOON + 61 * shift, iv=iv))
    if isinstance(slow, Exception):
        assert type(fast) is type(slow) and str(fast) == str(slow)
    else:
        assert (fast.plaintext, fast.signature, fast.body) == (slow.plaintext, slow.signature, slow.body)


@given(sealable_objects(), st.integers(min_value=-1, max_value=200))
def test_open_gives_the_same_payload_or_refusal_either_way(payload: dict[str, Any], flip: int) -> None:
    """flip: -1 opens the request as sealed; otherwise one byte of the body is changed (a refusal, or the
    slower way's reading)."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    try:
        sealed = terminal.seal(payload, timestamp=NOON)
    except PayloadError:  # nothing to open
        return
    body = bytearray(sealed.body or b"")
    if flip >= 0:
        body[flip % len(body)] ^= 0x01
    fast, slow = _both_ways(lambda: terminal.open("POST", sealed.headers, bytes(body), now=NOON))
    if isinstance(slow, AuthError):
        assert isinstance(fast, AuthError) and fast.reason == slow.reason
    else:
        assert not isinstance(fast, Exception) and fast == slow


def test_a_refused_timestamp_and_header_read_the_same_either_way() -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal({"a": 1}, timestamp=NOON)
    for headers, now in [(sealed.headers, NOON + 3600),
                         ({**sealed.headers, "Authorization": "Basic " + "0" * 128}, NOON),
                         ({**sealed.headers, "timestamp": "1764072000x"}, NOON)]:
        fast, slow = _both_ways(lambda h=headers, n=now: terminal.open("POST", h, sealed.body, now=n))
        assert isinstance(fast, AuthError) and isinstance(slow, AuthError)
        assert fast.reason == slow.reason


@pytest.mark.parametrize("at", [0, 5, 6, 40, 127, 128, 133])  # in "Basic ", in the 8-byte words, in the tail
@pytest.mark.parametrize("character", ["\u00e9", "\u0080", "\U0001f600"])
def test_an_authorization_that_is_not_ascii_is_left_to_the_slower_way(at: int, character: str) -> None:
    """open_post and open_post_bytes read the Authorization only when it is ASCII (None otherwise: read_request_bytes
    then names what is wrong), wherever the other character is; the same header with an ASCII character there is
    read here (a refusal's status, not None)."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal({"a": 1}, timestamp=NOON)
    authorization = sealed.headers["Authorization"]
    assert len(authorization) == 134
    for call in (_fastcall.open_post, _fastcall.open_post_bytes):
        for replacement, read in ((character, False), ("x", True)):
            headers = {**sealed.headers, "Authorization": authorization[:at] + replacement + authorization[at + 1:]}
            result = call(terminal._native, headers, sealed.body, float(NOON), 300.0)
            assert (result is not None) == read, (call, at, replacement, result)


class _Row(tuple):  # type: ignore[type-arg]  # what rows() makes: a class derived from tuple alone, like Sealed
    __slots__ = ()


def _has_null(value: Any) -> bool:
    """Whether JSON.stringify writes a null in value's text (sealable_objects have no NaN or infinity)."""
    if isinstance(value, dict):
        return any(map(_has_null, value.values()))
    if isinstance(value, (list, tuple)):
        return any(map(_has_null, value))
    return value is None


@given(st.one_of(sealable_objects(),  # and payloads the C path seals, whatever their numbers
                 st.dictionaries(st.text(max_size=8), st.none() | st.integers(-1000, 1000) | st.text(max_size=8))
                 .filter(lambda d: "key" not in d and "__proto__" not in d)),  # as sealable_objects: refused
       st.sampled_from([None, {"n": None}, {"__proto__": {}}, {"n": None, "__proto__": 0}]),
       st.sampled_from([0, _binding.FACT_NULL, _binding.FACT_PROTO, _binding.FACT_NULL | _binding.FACT_PROTO,
                        2**32 - 1]))
@example({"n": None}, {"n": None}, _binding.FACT_NULL)  # a member of both: the text has it once, the extra's
def test_seal_json_gives_the_same_row_and_facts_either_way(payload: dict[str, Any], extra: Optional[dict[str, Any]],
                                                          check_facts: int) -> None:
    """_binding.seal_json's row is (*head, request, plaintext_len, 0), of row_type; it comes alone, or with the
    text's facts when they have a bit of check_facts (here: a null somewhere, a top-level "__proto__")."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    if extra is not None:  # one text of distinct members: a duplicate key ({"n":null,"n":null}) is another test's
        payload = {key: value for key, value in payload.items() if key not in extra}
    text = canonical_json(payload)  # whose numbers the C path proves exact only with SHORTEST_DIGITS
    if extra is not None:  # members canonical_json refuses at the top level ("__proto__"), after the others
        members = json.dumps(extra, separators=(",", ":"))[1:-1].encode()
        text = text[:-1] + (b"," if len(text) > 2 else b"") + members + b"}"
    head = (terminal, "POST", NOON)  # as a Sealed begins
    fast, slow = _both_ways(lambda: _binding.seal_json(terminal._native, NOON, text, _binding.SHORTEST_DIGITS,
                                                       bytes(16), _Row, head, check_facts))
    if isinstance(slow, Exception) or slow is None:  # refused or left to the Python path: the same either way
        assert type(fast) is type(slow) and str(fast) == str(slow)
        return
    facts_expected = (_binding.FACT_NULL if _has_null({**payload, **(extra or {})}) else 0) | (
        _binding.FACT_PROTO if extra is not None and "__proto__" in extra else 0)
    single = terminal.seal(text, timestamp=NOON, iv=bytes(16)) if not facts_expected & _binding.FACT_PROTO else None
    for out in (fast, slow):
        row, facts = out if type(out) is tuple else (out, None)
        assert type(row) is _Row and row[:3] == head and row[4] < len(row[3]) and row[5] == 0
        if single is not None:  # what seal() sends (it refuses a top-level "__proto__")
            assert row[3:] == single[3:]
        if facts_expected & check_facts:
            assert facts is not None and facts & (_binding.FACT_NULL | _binding.FACT_PROTO) == facts_expected
        else:
            assert facts is None
    assert fast == slow


@given(st.lists(st.integers(min_value=0, max_value=5000), max_size=60), st.integers(min_value=1, max_value=40000),
       st.integers(min_value=0, max_value=3000), st.integers(min_value=0, max_value=3),
       st.lists(st.integers(min_value=0, max_value=2), max_size=3), st.data())
def test_rows_hold_what_the_python_way_makes(out_lens: list[int], buffer_bytes: int, shared_request_bytes: int,
                                             column_start: int, common: list[int], data: st.DataObject) -> None:
    """_fastcall.rows (a batch's requests copied out of the workspace into their rows) gives the same rows, their
    buffers shared the same way, as _binding._requests_py and _binding._rows_py, which PyPy runs: every split of
    a batch into shared buffers and lone requests, empty (refused) requests among them, rows of several widths,
    a column of one object repeated or of several, read from any start."""
    n = len(out_lens)
    out = _binding.ffi.new("char[]", bytes(i % 251 for i in range(max(1, sum(out_lens)))))
    lens = _binding.ffi.new("size_t[]", out_lens or [0])
    plaintext_lens = data.draw(st.lists(st.integers(min_value=0, max_value=2**40), min_size=n, max_size=n))
    plaintext = _binding.ffi.new("size_t[]", plaintext_lens or [0])
    objects = [object(), "terminal", None]
    column = [objects[k] for k in data.draw(st.lists(st.integers(min_value=0, max_value=2), min_size=column_start + n,
                                                     max_size=column_start + n + 2))]
    shared = tuple(objects[k] for k in common)
    fast = _fastcall.rows(_Row, column, column_start, shared, _binding._address(out), _binding._address(lens),
                          _binding._address(plaintext), n, buffer_bytes, shared_request_bytes)
    buffers, starts = _binding._requests_py(out, out_lens, buffer_bytes, shared_request_bytes)
    slow = _binding._rows_py(_Row, column[column_start:column_start + n], shared, buffers, plaintext_lens, starts)
    assert fast == slow
    assert all(type(row) is _Row and len(row) == len(shared) + 4 for row in fast)
    assert [row[0] for row in fast] == column[column_start:column_start + n]
    assert all(row[0] is item for row, item in zip(fast, column[column_start:]))
    assert all(row[1:-3] == shared for row in fast)

    def sharing(buffers: list[bytes]) -> list[int]:  # for each request, the first request sharing its buffer
        first: dict[int, int] = {}
        return [first.setdefault(id(buffer), i) for i, buffer in enumerate(buffers)]

    fast_buffers = [row[-3] for row in fast]
    assert sharing(fast_buffers) == sharing(buffers)
    text, end = bytes(_binding.ffi.buffer(out)), 0
    for row, out_len, plaintext_len in zip(fast, out_lens, plaintext_lens):
        buffer, row_plaintext_len, start = row[-3:]
        assert buffer[start:start + out_len] == text[end:end + out_len] and row_plaintext_len == plaintext_len
        end += out_len
    shares = sharing(fast_buffers)
    for i, buffer in enumerate(fast_buffers):  # a buffer holds one request, or requests within buffer_bytes
        assert shares.count(shares[i]) == 1 or len(buffer) <= buffer_bytes


def test_the_iv_pool_refills_through_fastcall() -> None:
    """More seals than one pool holds (256 IVs): every IV differs and every request opens."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    sealed = [terminal.seal({"n": n}, timestamp=NOON) for n in range(700)]
    assert len({s.iv for s in sealed}) == 700
    assert [terminal.open("POST", s.headers, s.body, now=NOON) for s in sealed] == [{"n": n} for n in range(700)]


def test_the_cffi_way_still_refills_the_iv_pool(cffi_way: None) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    sealed = [terminal.seal({"n": n}, timestamp=NOON) for n in range(300)]
    assert len({s.iv for s in sealed}) == 300
    assert terminal.open("POST", sealed[-1].headers, sealed[-1].body, now=NOON) == {"n": 299}


@pytest.mark.parametrize("size", [10, 1000, 5000])  # requests in shared buffers, one each, and large ones
def test_the_cffi_way_copies_a_batchs_requests_out_too(cffi_way: None, size: int) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    payloads = [{"n": n, "text": "x" * size} for n in range(300)]
    batch = terminal.seal_many(payloads, timestamp=NOON)
    assert [terminal.open("POST", s.headers, s.body, now=NOON) for s in batch] == payloads
    assert [s.plaintext for s in batch] == [terminal.seal(p, timestamp=NOON).plaintext for p in payloads]


def test_a_batch_of_large_requests_is_sealed_straight_into_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests too large to share buffers (payloads of about 620 B and more) are sealed by _fastcall.seal_rows,
    each into the bytes object its Sealed holds, whole and alone: the same requests as single seals with their IVs,
    across IV pool refills (700 items, 256 IVs a pool) and chunks of the batch (64 KiB here: about 60 items)."""
    made: list[int] = []
    monkeypatch.setattr(envelope, "_CHUNK_BYTES", 65536)

    def counted(*args: Any) -> Any:
        rows = _fastcall.seal_rows(*args)
        made.append(len(rows))
        return rows

    monkeypatch.setattr(_binding, "_fast_seal_rows", counted)
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    payloads = [{"n": n, "text": "é" * (n % 50) + "x" * 1000} for n in range(700)]
    batch = terminal.seal_many(payloads, timestamp=NOON)
    assert sum(made) == 699 and len(made) > 3  # the first item is sealed alone, as seal_many always does
    assert len({s.iv for s in batch}) == 700
    for payload, sealed in zip(payloads, batch):
        request, plaintext_len, start = sealed[3:]
        assert start == 0 and len(request) == plaintext_len + _binding.lib.pasarela_sealed_len(plaintext_len)
        assert sealed == terminal.seal(payload, timestamp=NOON, iv=sealed.iv)
    assert [terminal.open("POST", s.headers, s.body, now=NOON) for s in batch[::23]] == payloads[::23]


def _seal_rows(buffers: Any, credentials: list[Any], texts: list[bytes]) -> tuple[list[Any], list[int]]:
    """_fastcall.seal_rows of texts in buffers' workspace: the rows and the statuses."""
    ffi = _binding.ffi
    n = len(texts)
    array = ffi.new("pasarela_credentials *[]", credentials)
    blob = ffi.new("uint8_t[]", b"".join(texts) or b"-")
    lens = ffi.new("size_t[]", [len(text) for text in texts] or [0])
    statuses = ffi.new("int[]", [-1] * max(1, n))
    rows = _fastcall.seal_rows(_Row, [f"t{i}" for i in range(n)], 0, ("m",), _binding._address(array),
                               buffers.ws_address, NOON, _binding._address(blob), _binding._address(lens), n,
                               _binding._address(statuses))
    return rows, list(statuses)[:n]


def test_seal_rows_leaves_the_items_the_core_refuses_empty() -> None:
    """An item the C core refuses (not an object; no credentials) gets b"" and 0, never the bytes object's
    uninitialized memory; each item takes an IV, sealed or not, as in every batch."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    buffers = _binding._Buffers(65536)
    buffers.refill_ivs()
    good = b'{"a":"' + b"x" * 1000 + b'"}'
    struct = terminal._native.struct
    rows, statuses = _seal_rows(buffers, [struct, struct, _binding.ffi.NULL, struct], [good, b"[1]", good, good])
    lib = _binding.lib
    assert statuses == [lib.PASARELA_OK, lib.PASARELA_E_JSON_NOT_OBJECT, lib.PASARELA_E_INVALID_ARGUMENT,
                        lib.PASARELA_OK]
    assert [row[:2] for row in rows] == [("t0", "m"), ("t1", "m"), ("t2", "m"), ("t3", "m")]
    assert rows[1][2:] == rows[2][2:] == (b"", 0, 0)
    assert buffers.ws.iv_pool_used == 4 * 16
    for row in (rows[0], rows[3]):
        request, plaintext_len, start = row[2:]
        assert (plaintext_len, start, request[:plaintext_len]) == (len(good), 0, good)
        body = request[plaintext_len + 128:]
        iv = bytes.fromhex(body[9:41].decode())
        assert request == terminal.seal(json.loads(good), timestamp=NOON, iv=iv)._request
    assert rows[0][2] != rows[3][2]


def test_seal_rows_stops_before_an_item_the_workspace_cannot_hold_or_when_the_pool_is_empty() -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    small = _binding._Buffers(4096)  # its pool starts empty
    text = b'{"a":"' + b"y" * 600 + b'"}'
    struct = terminal._native.struct
    assert _seal_rows(small, [struct], [text]) == ([], [-1])
    small.refill_ivs()
    small.ws.iv_pool_used = 4096 - 32  # two IVs left
    rows, statuses = _seal_rows(small, [struct] * 3, [text] * 3)
    assert len(rows) == 2 and statuses == [0, 0, -1]
    small.refill_ivs()
    rows, statuses = _seal_rows(small, [struct] * 3, [text, b'{"a":"' + b"z" * 9000 + b'"}', text])
    assert len(rows) == 1 and statuses == [0, -1, -1]
    assert rows[0][2][:len(text)] == text
    assert _seal_rows(small, [], []) == ([], [])


@pytest.mark.parametrize(("change", "error", "words"), [
    (lambda a: a[:10], TypeError, "seal_rows takes 11 arguments"),
    (lambda a: (tuple, *a[1:]), TypeError, "row_type must be a subclass of tuple"),
    (lambda a: (a[0], ("t",), *a[2:]), TypeError, "column must be a list"),
    (lambda a: (*a[:3], ["m"], *a[4:]), TypeError, "common a tuple"),
    (lambda a: (*a[:4], 0, *a[5:]), TypeError, "credentials: expected a non-zero address"),
    (lambda a: (*a[:5], 0, *a[6:]), TypeError, "ws: expected a non-zero address"),
    (lambda a: (*a[:6], -1, *a[7:]), OverflowError, None),
    (lambda a: (*a[:7], 0, *a[8:]), TypeError, "plaintexts: expected a non-zero address"),
    (lambda a: (*a[:8], None, *a[9:]), TypeError, "lens: expected a non-zero address"),
    (lambda a: (*a[:9], 2, a[10]), ValueError, "exceed column's items"),
    (lambda a: (*a[:9], -1, a[10]), ValueError, "must not be negative"),
    (lambda a: (a[0], a[1], 1, *a[3:]), ValueError, "exceed column's items"),
    (lambda a: (*a[:10], 0), TypeError, "statuses: expected a non-zero address"),
])
def test_seal_rows_refuses_bad_arguments(change: Callable[[tuple[Any, ...]], tuple[Any, ...]],
                                         error: type[Exception], words: Optional[str]) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    ffi = _binding.ffi
    array, blob = ffi.new("pasarela_credentials *[]", [terminal._native.struct]), ffi.new("uint8_t[]", b"{}")
    lens, statuses = ffi.new("size_t[]", [2]), ffi.new("int[]", [-1])
    args = (_Row, ["t"], 0, (), _binding._address(array), _binding._workspace.buffers.ws_address, NOON,
            _binding._address(blob), _binding._address(lens), 1, _binding._address(statuses))
    with pytest.raises(error, match=words):
        _fastcall.seal_rows(*change(args))
    assert statuses[0] == -1  # refused before sealing


_CALLS_MADE_HERE = [tracemalloc.Filter(True, __file__, all_frames=True)]
"""The memory that a call made in this file allocated, wherever it was allocated: not what another thread
allocates meanwhile (pytest-xdist's worker receives its next tests in a thread of its own, tens of KB)."""


def _traced_growth(call: Callable[[], object], times: int) -> int:
    for _ in range(200):
        call()
    tracemalloc.start(8)  # frames enough to reach this file from any allocation (3 were not: see the control below)
    try:  # a refusal's traceback holds its frames in a cycle until the collector runs: collected at both ends
        gc.collect()
        before = tracemalloc.take_snapshot().filter_traces(_CALLS_MADE_HERE)
        for _ in range(times):
            call()
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(_CALLS_MADE_HERE)
        return sum(trace.size for trace in after.traces) - sum(trace.size for trace in before.traces)
    finally:
        tracemalloc.stop()


def test_fastcall_keeps_no_reference_to_what_it_returns() -> None:
    """A result or argument never released would grow traced memory by ~1 KB a call (5 MB here); the cffi way
    gives the same figures (728 bytes after 5,000 refusals, and after 20,000)."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    payload = {"text": "x" * 600}
    sealed = terminal.seal(payload, timestamp=NOON)
    forged = {**sealed.headers, "Authorization": "Basic " + "0" * 128}

    def refused() -> None:
        with pytest.raises(AuthError):
            terminal.open("POST", forged, sealed.body, now=NOON)

    calls: list[Callable[[], object]] = [
        lambda: terminal.seal(payload),
        lambda: terminal.open("POST", sealed.headers, sealed.body, now=NOON),
        refused,
        lambda: _fastcall.seal_json(terminal._native, _binding._workspace.buffers.ws_address, NOON, b"[1]",
                                    0, None, _Row, (), 0),  # a refusal: the status comes back
        lambda: _fastcall.seal_json(terminal._native, _binding._workspace.buffers.ws_address, NOON,
                                    b'{"a":null}', 0, bytes(16), _Row, ("h",), _binding.FACT_NULL),  # (row, facts)
        lambda: terminal.seal_many([payload] * 8),  # through _fastcall.rows
        lambda: terminal.seal_many([{"text": "x" * 1000}] * 8),  # through _fastcall.seal_rows
    ]
    growth = [_traced_growth(call, 5000) for call in calls]
    assert all(size < 64 * 1024 for size in growth), growth
    kept: list[object] = []  # the control: results kept are counted, however deep their allocation
    assert _traced_growth(lambda: kept.extend((terminal.seal(payload), terminal.seal_many([payload] * 8))), 500) > 4e6


def _address() -> int:
    return _binding._workspace.buffers.ws_address


@pytest.mark.parametrize(("args", "error", "words"), [
    (lambda c: (c, NOON, {}, None, _Row), TypeError, "takes 6 arguments"),
    (lambda c: (c.address, NOON, {}, None, _Row, ()), TypeError, "credentials must be a pasarela._binding.Credentials"),
    (lambda c: ((0,), NOON, {}, None, _Row, ()), TypeError, "credentials: expected a non-zero address"),
    (lambda c: (c, -1, {}, None, _Row, ()), OverflowError, None),
    (lambda c: (c, "now", {}, None, _Row, ()), TypeError, None),
    (lambda c: (c, NOON, {}, b"short", _Row, ()), ValueError, "seal_payload: iv must be 16 bytes"),
    (lambda c: (c, NOON, {}, "0" * 16, _Row, ()), TypeError, "seal_payload: iv: expected bytes"),
    (lambda c: (c, NOON, {}, None, tuple, ()), TypeError, "row_type must be a subclass of tuple"),
    (lambda c: (c, NOON, {}, None, type(sys.flags), ()), TypeError, "made by a class statement"),  # static
    (lambda c: (c, NOON, {}, None, _Row, ["h"]), TypeError, "head must be a tuple"),
])
def test_seal_payload_refuses_bad_arguments_with_type_errors(args: Callable[[Any], tuple[Any, ...]],
                                                             error: type[Exception], words: Optional[str]) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    with pytest.raises(error, match=words):
        _fastcall.seal_payload(*args(terminal._native))


def test_seal_payload_reads_the_clock_when_no_timestamp_is_given_and_puts_it_in_the_row() -> None:
    """timestamp None: the C call reads the time itself (time(): whole seconds, as int(time.time())) and the row
    holds it before the request, as it holds a timestamp given; the request is the one sealed at that second."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    iv = bytes(range(16))
    for _ in range(3):  # a second may turn between the readings, and time() is glibc's coarse clock: up to a tick
        before = int(time.time())  # (4-10 ms) behind time.time(), so in a second's first tick the two disagree.
        row = _fastcall.seal_payload(terminal._native, None, {"a": 1}, iv, _Row, ("head",))
        after = int(time.time())
        if before == after == row[1]:
            break
        time.sleep(0.05)  # then once more, past that tick (three tries at once all fell in it: stop 50's CI)
    assert type(row) is _Row and row[0] == "head" and row[1] == before == after, (row[:2], before, after)
    given = _fastcall.seal_payload(terminal._native, before, {"a": 1}, iv, _Row, ("head",))
    assert given == row and type(given[1]) is int
    sealed = terminal.seal({"a": 1}, iv=iv)  # Terminal.seal lets the C call read the clock
    assert terminal.open("POST", sealed.headers, sealed.body) == {"a": 1}
    assert abs(sealed.timestamp - time.time()) < 5 and sealed == terminal.seal({"a": 1}, timestamp=sealed.timestamp,
                                                                                 iv=iv)


def test_seal_payload_finds_each_threads_own_workspace() -> None:
    """The workspace seal_payload works in is the calling thread's (_binding._workspace, a threading.local given to
    connect()): a thread's first seal makes that thread's workspace, its IVs come from that thread's pool (the
    main thread's is untouched), and threads sealing at once get what each would alone."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    payloads = [{"n": n, "text": "t" * (n * 37 % 3000)} for n in range(200)]
    expected = [terminal.seal(p, timestamp=NOON, iv=bytes(16)) for p in payloads]
    main = _binding._workspace.buffers.ws
    main_used = main.iv_pool_used
    results: dict[int, list[Any]] = {}
    pools: dict[int, int] = {}

    def work(k: int) -> None:
        results[k] = [terminal.seal(p, timestamp=NOON, iv=bytes(16)) for p in payloads]
        for _ in range(5):  # IVs from the pool: the first seal finds it empty, the slower way fills it
            terminal.seal({"k": k})
        pools[k] = _binding._workspace.buffers.ws.iv_pool_used

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[k] == expected for k in range(4))
    assert pools == {k: 5 * _binding.IV_LEN for k in range(4)} and main.iv_pool_used == main_used


@pytest.mark.parametrize(("args", "error", "words"), [
    (lambda c, w: (c, w, NOON, b"{}", 0, None), TypeError, "takes 9 arguments"),
    (lambda c, w: (c, w, NOON, "{}", 0, None, _Row, (), 0), TypeError, "json: expected bytes"),
    (lambda c, w: (c, w, NOON, bytearray(b"{}"), 0, None, _Row, (), 0), TypeError, "json: expected bytes"),
    (lambda c, w: (c.address, w, NOON, b"{}", 0, None, _Row, (), 0), TypeError,
     "credentials must be a pasarela._binding.Credentials"),
    (lambda c, w: ((0,), w, NOON, b"{}", 0, None, _Row, (), 0), TypeError, "credentials: expected a non-zero address"),
    (lambda c, w: (("1",), w, NOON, b"{}", 0, None, _Row, (), 0), TypeError,
     "credentials: expected a non-zero address"),
    (lambda c, w: (c, None, NOON, b"{}", 0, None, _Row, (), 0), TypeError, "ws: expected a non-zero address"),
    (lambda c, w: (c, w, -1, b"{}", 0, None, _Row, (), 0), OverflowError, None),
    (lambda c, w: (c, w, NOON, b"{}", -1, None, _Row, (), 0), OverflowError, None),
    (lambda c, w: (c, w, NOON, b"{}", 0, b"short", _Row, (), 0), ValueError, "iv must be 16 bytes"),
    (lambda c, w: (c, w, NOON, b"{}", 0, "0" * 16, _Row, (), 0), TypeError, "iv: expected bytes"),
    (lambda c, w: (c, w, NOON, b"{}", 0, None, tuple, (), 0), TypeError, "row_type must be a subclass of tuple"),
    (lambda c, w: (c, w, NOON, b"{}", 0, None, _Row(), (), 0), TypeError, "row_type must be a subclass of tuple"),
    (lambda c, w: (c, w, NOON, b"{}", 0, None, _Row, ["h"], 0), TypeError, "head must be a tuple"),
    (lambda c, w: (c, w, NOON, b"{}", 0, None, _Row, (), -1), OverflowError, None),
    (lambda c, w: (c, w, NOON, b"{}", 0, None, _Row, (), None), TypeError, None),
])
def test_seal_json_refuses_bad_arguments_with_type_errors(args: Callable[[Any, int], tuple[Any, ...]],
                                                          error: type[Exception], words: Optional[str]) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    with pytest.raises(error, match=words):
        _fastcall.seal_json(*args(terminal._native, _address()))


@pytest.mark.parametrize(("args", "error", "words"), [
    (lambda c: (c, {}, b"{}", NOON), TypeError, "takes 5 arguments"),
    (lambda c: (c, {}, "{}", NOON, 300.0), TypeError, "body: expected bytes"),
    (lambda c: (c, {}, memoryview(b"{}"), NOON, 300.0), TypeError, "body: expected bytes"),
    (lambda c: (c, {}, b"{}", "noon", 300.0), TypeError, None),
    (lambda c: (c, {}, b"{}", NOON, None), TypeError, None),
    (lambda c: (c, None, b"{}", NOON, 300.0), AttributeError, "get"),  # headers: a mapping
    (lambda c: (c.address, {}, b"{}", NOON, 300.0), TypeError, "credentials must be a pasarela._binding.Credentials"),
    (lambda c: ((0,), {}, b"{}", NOON, 300.0), TypeError, "credentials: expected a non-zero"),
])
def test_open_post_refuses_bad_arguments_with_type_errors(args: Callable[[Any], tuple[Any, ...]],
                                                          error: type[Exception], words: Optional[str]) -> None:
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    with pytest.raises(error, match=words):
        _fastcall.open_post(*args(terminal._native))


def test_open_post_leaves_a_workspace_too_small_to_the_caller_which_grows_it() -> None:
    """open_post works in the calling thread's workspace and returns PASARELA_E_BUFFER_TOO_SMALL when the body does
    not fit it (a fresh thread's starts small); Terminal.open then grows it (_binding.settle_open_post) and opens
    the request again."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    payload = {"text": "x" * 20000}
    sealed = terminal.seal(payload, timestamp=NOON)
    result: list[Any] = []

    def in_a_fresh_thread() -> None:
        buffers = _binding._workspace.buffers
        result.append(_fastcall.open_post(terminal._native, sealed.headers, sealed.body, NOON, 300.0))
        result.append(terminal.open("POST", sealed.headers, sealed.body, now=NOON))
        result.append(_binding._workspace.buffers is not buffers)

    thread = threading.Thread(target=in_a_fresh_thread)
    thread.start()
    thread.join()
    assert result == [_binding.lib.PASARELA_E_BUFFER_TOO_SMALL, payload, True]


@pytest.mark.parametrize(("args", "error", "words"), [
    (lambda o, lens: (_Row, ["t"], 0, (), o, lens, lens, 1, 32768), TypeError, "takes 10 arguments"),
    (lambda o, lens: (tuple, ["t"], 0, (), o, lens, lens, 1, 32768, 2048), TypeError, "subclass of tuple"),
    (lambda o, lens: (list, ["t"], 0, (), o, lens, lens, 1, 32768, 2048), TypeError, "subclass of tuple"),
    (lambda o, lens: (_Row(), ["t"], 0, (), o, lens, lens, 1, 32768, 2048), TypeError, "subclass of tuple"),
    (lambda o, lens: (_Row, ("t",), 0, (), o, lens, lens, 1, 32768, 2048), TypeError, "column must be a list"),
    (lambda o, lens: (_Row, ["t"], 0, [], o, lens, lens, 1, 32768, 2048), TypeError, "common a tuple"),
    (lambda o, lens: (_Row, ["t"], 0, (), 0, lens, lens, 1, 32768, 2048), TypeError,
     "out: expected a non-zero address"),
    (lambda o, lens: (_Row, ["t"], 0, (), o, None, lens, 1, 32768, 2048), TypeError,
     "out_lens: expected a non-zero address"),
    (lambda o, lens: (_Row, ["t"], 0, (), o, lens, 0, 1, 32768, 2048), TypeError,
     "plaintext_lens: expected a non-zero address"),
    (lambda o, lens: (_Row, ["t"], 0, (), o, lens, lens, -1, 32768, 2048), ValueError, "must not be negative"),
    (lambda o, lens: (_Row, ["t"], 0, (), o, lens, lens, 2, 32768, 2048), ValueError, "exceed column's items"),
    (lambda o, lens: (_Row, ["t"], 1, (), o, lens, lens, 1, 32768, 2048), ValueError, "exceed column's items"),
    (lambda o, lens: (_Row, ["t"], -1, (), o, lens, lens, 1, 32768, 2048), ValueError,
     "column_start must not be negative"),
    (lambda o, lens: (_Row, ["t"], 0, (), o, lens, lens, 1, -1, 2048), OverflowError, None),
    (lambda o, lens: (_Row, ["t"], 0, (), o, lens, lens, 1, 32768, "2048"), TypeError, None),
])
def test_rows_refuses_bad_arguments(args: Callable[[int, int], tuple[Any, ...]], error: type[Exception],
                                    words: Optional[str]) -> None:
    out, lens = _binding.ffi.new("char[]", 16), _binding.ffi.new("size_t[]", [16])
    with pytest.raises(error, match=words):
        _fastcall.rows(*args(_binding._address(out), _binding._address(lens)))


def test_rows_refuses_lengths_whose_sum_overflows() -> None:
    half = 2 ** (8 * _binding.ffi.sizeof("size_t") - 1) - 1  # PY_SSIZE_T_MAX: each fits, their sum does not
    out, lens = _binding.ffi.new("char[]", 16), _binding.ffi.new("size_t[]", [half, half])
    with pytest.raises(OverflowError, match="total length is too large"):
        _fastcall.rows(_Row, ["t", "t"], 0, (), _binding._address(out), _binding._address(lens),
                       _binding._address(lens), 2, 32768, 2048)


def test_an_unconnected_or_mismatched_fastcall_refuses_before_touching_memory() -> None:
    """A copy of the module loaded alone (not through pasarela._binding) is not connected: it raises instead of
    calling through a null pointer (the addresses given, 1, would crash if used), and connect() refuses a
    workspace layout other than its own, and a zero address."""
    code = f"""
import importlib.util
spec = importlib.util.spec_from_file_location("_fastcall", {_fastcall.__file__!r})
fastcall = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fastcall)
for call in (lambda: fastcall.seal_json(1, 1, {NOON}, b"{{}}", 0, None, tuple, (), 0),
             lambda: fastcall.open_post(1, {{}}, b"{{}}", 0.0, 300.0),
             lambda: fastcall.connect(1, 1, (0, 0, 0, 0, 0, 0), 1, 1, 1, 1, None, 1),
             lambda: fastcall.connect(1, 1, (0, 0), 1, 1, 1, 1, None, 1),
             lambda: fastcall.seal_json(1, 1, {NOON}, b"{{}}", 0, None, tuple, (), 0),
             lambda: fastcall.stringify({{}}),
             lambda: fastcall.connect(1, 1, (0, 0, 0, 0, 0, 0), 1, 1, 1),
             lambda: fastcall.seal_payload(1, {NOON}, {{}}, None, tuple, ())):
    try:
        call()
    except Exception as exc:
        print(type(exc).__name__, exc)
"""
    result = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 8, result.stdout
    assert lines[0].startswith("RuntimeError ") and "not connected" in lines[0]
    assert lines[1].startswith("RuntimeError ") and "not connected" in lines[1]
    assert lines[2].startswith("ImportError ") and "another pasarela_workspace layout" in lines[2]
    assert "rebuild" in lines[2]
    assert lines[3].startswith("TypeError ") and "layout must be a tuple of 6 ints" in lines[3]
    assert lines[4] == lines[0]  # still not connected
    assert lines[5].startswith("RuntimeError ") and "not connected" in lines[5]
    assert lines[6] == "TypeError connect takes 9 arguments"
    assert lines[7].startswith("RuntimeError ") and "not connected" in lines[7]


def test_a_seal_from_a_finalizer_while_the_row_is_made_does_not_change_the_facts() -> None:
    """seal_json reads the facts of its text before it makes the row: the row's allocation may start a collection
    of the cyclic GC, and a finalizer that seals on this thread overwrites the workspace's facts. A NaN (orjson's
    null, FACT_NULL) must still be refused."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    sealed_inside: list[Any] = []

    def reseal() -> bool:
        if len(sealed_inside) >= 2000:
            return False
        sealed_inside.append(terminal.seal({"b": 1}, timestamp=NOON))  # no facts
        return True

    refusals = 0
    for _ in range(20):
        with finalizer_at_each_collection(reseal):
            try:
                terminal.seal({"a": float("nan")}, timestamp=NOON)
            except PayloadError:
                refusals += 1
    assert len(sealed_inside) > 20 and refusals == 20


# --- the GIL's release (csrc/cpython/fastcall.c: release_for, open_releases) ---------------------------------------

LARGE = 17_000  # bytes of plaintext: past RELEASE_BYTES (16 KiB), as is half the body's hex


def _items_heavy(size: int) -> dict[str, Any]:
    """A payload of {"sku","qty","price"} objects, about size bytes of text: an open makes many objects of it."""
    items = [{"sku": f"SKU-{i:05d}", "qty": i % 7 + 1, "price": 1999.99 + i} for i in range(size // 40)]
    return {"amount": 125.5, "currency": "COP", "items": items}


def _string_heavy(size: int) -> dict[str, Any]:
    """A payload of one long string, about size bytes of text: an open makes a few objects of it."""
    return {"amount": 125.5, "currency": "COP", "note": "n" * size}


def _lets_another_thread_run(call: Callable[[], object], share: float) -> bool:
    """Whether call() releases the GIL, with pasarela._fastcall's learned open share set to share before each call.
    A second thread, woken and waiting for the GIL, can run only if call() lets it go: the switch interval is raised
    beyond the test's length first, so the interpreter never hands the GIL over on its own (the thread is started
    under it, and runs until it waits on the gate, which releases the GIL). The call is repeated for up to a second,
    since the woken thread may not yet wait for the GIL during the first calls. The cyclic GC is off meanwhile: a
    finalizer it ran could release the GIL (closing a file or a database) in place of the call."""
    gate = threading.Lock()
    gate.acquire()
    ran: list[bool] = []

    def other() -> None:
        with gate:
            ran.append(True)

    interval, collecting = sys.getswitchinterval(), gc.isenabled()
    gc.collect()
    gc.disable()
    sys.setswitchinterval(1000.0)
    thread = threading.Thread(target=other)
    opened = False
    try:
        thread.start()
        gate.release()
        opened = True
        stop = time.monotonic() + 1.0
        while not ran and time.monotonic() < stop:
            _fastcall.set_open_gil_share(share)
            call()
        released = bool(ran)
    finally:
        sys.setswitchinterval(interval)
        if collecting:
            gc.enable()
        if not opened:
            gate.release()
        if thread.ident is not None:
            thread.join()
    return released


@pytest.mark.parametrize(("what", "shape", "size", "share", "released"), [
    ("open", _string_heavy, LARGE, 0.0, True),
    ("open", _items_heavy, LARGE, 0.0, True),  # the share decides, not the payload
    ("open", _items_heavy, LARGE, 0.49, True),
    ("open", _items_heavy, LARGE, 0.5, False),  # OPEN_KEEP_SHARE
    ("open", _string_heavy, LARGE, 0.9, False),
    ("open", _string_heavy, 1024, 0.0, False),  # below RELEASE_BYTES: kept whatever the share
    ("open_bytes", _items_heavy, LARGE, 0.9, True),  # makes no payload: released on size alone
    ("open_bytes", _string_heavy, 1024, 0.0, False),
])
def test_a_large_open_releases_the_gil_unless_its_payloads_hold_it_as_long_as_its_c_work(
        what: str, shape: Callable[[int], dict[str, Any]], size: int, share: float, released: bool) -> None:
    """An open of 16 KiB of plaintext or more releases the GIL around its C work unless the share of such opens
    spent making their payloads under the GIL, as learned, is 0.5 or more (two threads opening items-heavy payloads
    had made 0.83x the requests per second of one with it released); open_bytes makes no payload and releases it
    on size alone; below 16 KiB both keep it."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    sealed = terminal.seal(shape(size), timestamp=NOON)
    headers, body = dict(sealed.headers), sealed.body or b""
    assert (len(body) // 2 >= 16384) == (size == LARGE)
    method = getattr(terminal, what)
    before = _fastcall.set_open_gil_share(0.0)
    try:
        assert _lets_another_thread_run(lambda: method("POST", headers, body, now=NOON), share) is released
        assert method("POST", headers, body, now=NOON) == (json.loads(sealed.plaintext) if what == "open"
                                                           else sealed.plaintext)
    finally:
        _fastcall.set_open_gil_share(before)


def test_the_open_share_is_learned_from_large_opens_that_make_a_payload() -> None:
    """Each open of 16 KiB or more that makes a payload moves the learned share towards its own (the payload's
    making over that and its C work: above 0, below 1); smaller opens and open_bytes leave it alone; a share outside
    0-1 is refused."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)

    def request(payload: dict[str, Any]) -> tuple[dict[str, str], bytes]:
        sealed = terminal.seal(payload, timestamp=NOON)
        return dict(sealed.headers), sealed.body or b""

    large, small = request(_items_heavy(LARGE)), request(_items_heavy(1024))
    before = _fastcall.set_open_gil_share(0.0)
    try:
        terminal.open("POST", *small, now=NOON)
        terminal.open_bytes("POST", *large, now=NOON)
        assert _fastcall.open_gil_share() == 0.0
        terminal.open("POST", *large, now=NOON)
        assert 0.0 < _fastcall.open_gil_share() < 0.25  # a quarter of the way to a share below 1
        _fastcall.set_open_gil_share(1.0)
        terminal.open("POST", *large, now=NOON)
        assert 0.75 < _fastcall.open_gil_share() < 1.0
        for bad in (-0.1, 1.5, float("nan")):
            with pytest.raises(ValueError, match="share must be from 0 to 1"):
                _fastcall.set_open_gil_share(bad)
        with pytest.raises(TypeError):
            _fastcall.set_open_gil_share("0.5")
        assert 0.75 < _fastcall.open_gil_share() < 1.0  # unchanged by the refusals
    finally:
        _fastcall.set_open_gil_share(before)


def test_four_threads_opening_and_sealing_across_the_release_threshold_get_single_thread_results() -> None:
    """Four threads seal (seal, seal_many) and open (open, open_bytes) payloads of both shapes below and above 16
    KiB at once, the learned share moving under them (its release decided per call from the shared module state):
    every result is the one a single thread got."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    payloads = [shape(size) for shape in (_items_heavy, _string_heavy) for size in (256, 1024, LARGE)]
    requests = [terminal.seal(payload, timestamp=NOON) for payload in payloads]
    expected = [(json.loads(r.plaintext), r.plaintext) for r in requests]
    texts = [r.plaintext for r in requests]
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(k: int) -> None:
        try:
            barrier.wait()
            for round_ in range(6):
                for i, r in enumerate(requests):
                    headers, body = dict(r.headers), r.body or b""
                    assert terminal.open("POST", headers, body, now=NOON) == expected[i][0]
                    assert terminal.open_bytes("POST", headers, body, now=NOON) == expected[i][1]
                    if (i + k + round_) % 3 == 0:
                        assert terminal.seal(payloads[i], timestamp=NOON).plaintext == texts[i]
                assert [s.plaintext for s in terminal.seal_many(payloads, timestamp=NOON)] == texts
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert 0.0 <= _fastcall.open_gil_share() <= 1.0


def test_released_ns_counts_the_time_the_gil_was_let_go_and_nothing_else() -> None:
    """released_ns() (benchmarks/threads.py --gil-share) grows over calls that release the GIL (an open and a seal
    of 16 KiB or more, a seal_many of such payloads) and not over those that keep it (1 KiB; a large open with the
    learned share at 0.9)."""
    terminal = Terminal(BUSINESS_CODE, SERIAL)
    large, small = _string_heavy(LARGE), _string_heavy(1024)
    sealed_large, sealed_small = terminal.seal(large, timestamp=NOON), terminal.seal(small, timestamp=NOON)

    def grows(call: Callable[[], object], share: float = 0.0) -> bool:
        _fastcall.set_open_gil_share(share)
        before = _fastcall.released_ns()
        call()
        return _fastcall.released_ns() > before

    previous = _fastcall.set_open_gil_share(0.0)
    try:
        assert grows(lambda: terminal.open("POST", dict(sealed_large.headers), sealed_large.body, now=NOON))
        assert grows(lambda: terminal.seal(large, timestamp=NOON))
        assert grows(lambda: terminal.seal_many([large] * 3, timestamp=NOON))
        assert not grows(lambda: terminal.open("POST", dict(sealed_large.headers), sealed_large.body, now=NOON), 0.9)
        assert not grows(lambda: terminal.open("POST", dict(sealed_small.headers), sealed_small.body, now=NOON))
        assert not grows(lambda: terminal.seal(small, timestamp=NOON))
        assert not grows(lambda: terminal.seal_many([small] * 3, timestamp=NOON))
    finally:
        _fastcall.set_open_gil_share(previous)
