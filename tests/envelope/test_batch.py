"""seal_many and seal_batch: byte-identical to seal() with the same timestamp and IVs."""

from __future__ import annotations

import tracemalloc
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pasarela
from pasarela import PayloadError, Sealed, Terminal, seal_batch
from support.finalizers import finalizer_at_each_collection
from support.strategies import sealable_objects

NOON = 1763812800
TERMINALS = [Terminal("bc-1", "SN-1"), Terminal("bc-2", "SN-2"), Terminal("bc-3", "SN-3")]


def _same_as_single(terminal: Terminal, payload: Any, sealed: Sealed, method: str) -> None:
    single = terminal.seal(payload, method=method, timestamp=NOON, iv=sealed.iv)
    assert (sealed.plaintext, sealed.signature, sealed.body, sealed.params, sealed.headers) == (
        single.plaintext, single.signature, single.body, single.params, single.headers)


payloads = st.one_of(sealable_objects(), st.none(),
                     st.just({"d": Decimal("19.99")}), st.just(b'{"text": 1.0}'))


@settings(max_examples=60)
@given(st.lists(payloads, max_size=40), st.sampled_from(["POST", "GET"]))
def test_seal_many_matches_seal(batch: list[Any], method: str) -> None:
    terminal = TERMINALS[0]
    sealed = terminal.seal_many(batch, method=method, timestamp=NOON)
    assert len(sealed) == len(batch)
    for payload, one in zip(batch, sealed):
        _same_as_single(terminal, payload, one, method)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=2), payloads), max_size=40))
def test_seal_batch_matches_seal_per_terminal(pairs: list[tuple[int, Any]]) -> None:
    sealed = seal_batch([(TERMINALS[i], payload) for i, payload in pairs], timestamp=NOON)
    for (i, payload), one in zip(pairs, sealed):
        _same_as_single(TERMINALS[i], payload, one, "POST")


def test_seal_many_spans_several_workspace_fills() -> None:
    big = [{"n": i, "blob": "x" * 3000} for i in range(200)]  # ~600 KB: many C calls
    sealed = TERMINALS[0].seal_many(big, timestamp=NOON)
    assert len({one.iv for one in sealed}) == 200
    for payload, one in zip(big[::37], sealed[::37]):
        _same_as_single(TERMINALS[0], payload, one, "POST")


def test_seal_many_item_larger_than_workspace() -> None:
    huge = {"blob": "y" * 100_000}
    (one,) = TERMINALS[0].seal_many([huge], timestamp=NOON)
    _same_as_single(TERMINALS[0], huge, one, "POST")


def test_seal_many_refuses_bad_item_with_its_path() -> None:
    with pytest.raises(PayloadError) as info:
        TERMINALS[0].seal_many([{"a": 1}, {"items": [float("nan")]}], timestamp=NOON)
    assert info.value.path == "$.items[0]"


def test_seal_batch_opens_with_each_terminal() -> None:
    pairs = [(TERMINALS[i % 3], {"i": i}) for i in range(9)]
    for (terminal, payload), one in zip(pairs, seal_batch(pairs, timestamp=NOON)):
        assert terminal.open("POST", one.headers, one.body, now=NOON) == payload


def test_seal_batch_of_large_items_for_many_terminals_matches_seal() -> None:
    """Items large enough to be sealed straight into their own buffers (about 620 B of JSON and more), the
    terminals taking turns and runs: each request is the one its own terminal's seal makes with its IV."""
    pairs = [(TERMINALS[(i // 2) % 3], {"i": i, "pad": "p" * (600 + 97 * (i % 13))}) for i in range(90)]
    for (terminal, payload), one in zip(pairs, seal_batch(pairs, timestamp=NOON)):
        _same_as_single(terminal, payload, one, "POST")
        assert terminal.open("POST", one.headers, one.body, now=NOON) == payload


def test_seal_batch_is_exported() -> None:
    assert pasarela.seal_batch is seal_batch


def test_seal_many_of_small_items_with_every_kind_of_odd_item_matches_seal() -> None:
    """Small items are serialized a chunk at a time as one array that the C core splits: items that orjson
    refuses in the array (an integer beyond 64 bits, text given as bytes) or that the C path refuses (not an
    object, a "key" member, a top-level "__proto__", a NaN) still end as seal() ends them."""
    odd: list[Any] = [
        {"s": '],[{"x":1}', "t": 'a\\"b', "u": "\\\\"}, {"2": 1, "1": 2, "b": [{"10": 0, "9": 1}]},
        b'{"text": [1, 2]}', '{"text": 1.5e3}', {"n": None, "f": -0.0, "e": 1e21}, {"__proto__x": 1},
        {"nested": {"__proto__": 1}}, {"d": Decimal("0.1")}, {"e": []}, {}, {"ñ": "€\u2028"},
        {"big": 2**53}, {"neg": -(2**53)},
    ]
    for cut in range(len(odd)):  # every odd item at every place of a chunk
        batch = [{"first": 1}] + odd[cut:] + [{"i": i} for i in range(20)] + odd[:cut]
        for payload, one in zip(batch, TERMINALS[1].seal_many(batch, timestamp=NOON)):
            _same_as_single(TERMINALS[1], payload, one, "POST")
    for refused in ({"key": 1}, {"__proto__": 1}, [1, 2], {"nan": float("nan")}, {"big": 2**64 + 1},
                    {"neg": -(2**60) - 3}):
        batch = [{"first": 1}, {"i": 1}, refused, {"i": 2}]
        with pytest.raises((PayloadError, TypeError, ValueError)) as batch_error:
            TERMINALS[1].seal_many(batch, timestamp=NOON)
        with pytest.raises((PayloadError, TypeError, ValueError)) as single_error:
            TERMINALS[1].seal(refused, timestamp=NOON)
        assert (type(batch_error.value), str(batch_error.value)) == (type(single_error.value), str(single_error.value))


def _array_items(text: bytes, max_items: int = 1000) -> list[bytes]:
    from pasarela._binding import ffi, lib

    items, lens = ffi.new("uint8_t[]", max(1, len(text))), ffi.new("size_t[]", max_items)
    count = lib.pasarela_json_array_items(text, len(text), items, lens, max_items)
    out, offset = [], 0
    for i in range(count):
        out.append(ffi.buffer(items + offset, lens[i])[:])
        offset += lens[i]
    return out


@settings(max_examples=300)
@given(st.lists(st.tuples(st.sampled_from([0, 0, 0, -1, -7]), st.integers(0, 15))), st.integers(0, 15))
def test_the_first_batch_item_to_look_at(items: list[tuple[int, int]], mask: int) -> None:
    """pasarela_batch_first_exception: the first item not sealed (status not PASARELA_OK) or with a fact of the
    mask; all of them when there is none (seal_many then takes every request without reading its items)."""
    from pasarela._binding import ffi, lib

    assert lib.PASARELA_OK == 0
    statuses = ffi.new("int[]", [status for status, _ in items] or [0])
    facts = ffi.new("unsigned[]", [fact for _, fact in items] or [0])
    expected = next((i for i, (status, fact) in enumerate(items) if status != 0 or fact & mask), len(items))
    assert lib.pasarela_batch_first_exception(statuses, facts, len(items), mask) == expected
    assert lib.pasarela_batch_first_exception(ffi.NULL, facts, len(items), mask) == 0
    assert lib.pasarela_batch_first_exception(statuses, ffi.NULL, len(items), mask) == 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab"\\,[]{}: \u00e9\u2028')),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=12)


@settings(max_examples=300)
@given(st.lists(json_values, min_size=1, max_size=8), st.booleans())
def test_the_c_split_of_an_array_gives_its_items(values: list[Any], spaced: bool) -> None:
    import json

    text = json.dumps(values, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":")).encode()
    items = _array_items(text)
    assert [json.loads(item) for item in items] == values
    assert _array_items(text, max_items=len(values) - 1) == []  # one item too many: refused whole


def test_the_c_split_across_block_boundaries() -> None:
    """The split reads 64 bytes at a time: strings holding brackets, commas, escaped quotes and runs of
    backslashes, at every position around two block boundaries, still split into exactly the array's items."""
    import json

    for pad in range(0, 140):
        for tail in ("],[", "\\", '\\"],', '{"a":[1,2]}', ",", '"'):
            values = [{"p": "x" * pad + tail}, [1, {"b": tail}], "s" * pad, 7, {"c": [tail, {}]}]
            text = json.dumps(values, separators=(",", ":")).encode()
            assert [json.loads(item) for item in _array_items(text)] == values


@settings(max_examples=500)
@given(st.binary(max_size=200) | st.text(alphabet=st.sampled_from('[]{}",\\ab1 '), max_size=200).map(str.encode))
def test_the_c_split_of_any_bytes_is_all_or_nothing(text: bytes) -> None:
    """Whatever the bytes, the items are either none or, joined by commas inside brackets, the text itself;
    a valid JSON array as a serializer writes one (first byte '[', last ']': pasarela.h's contract; with whitespace
    around it the split gives none and its caller takes the other path) splits into as many items as it has."""
    import json

    items = _array_items(text)
    if items:
        assert b"[" + b",".join(items) + b"]" == text
        assert all(items)
    try:
        parsed = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return
    if isinstance(parsed, list) and parsed and text[:1] == b"[" and text[-1:] == b"]":
        assert len(items) == len(parsed)
    elif isinstance(parsed, list) and parsed:
        assert items == []  # whitespace outside the brackets: none, never a wrong split


def test_batch_requests_share_a_buffer_yet_each_is_its_own_request() -> None:
    """A batch's requests lie back to back in one buffer per C call: each Sealed reads only its own bytes,
    and equals (and hashes as, and copies to) the Sealed a single seal makes with its IV."""
    import copy

    batch = [{"i": i, "pad": "x" * (i % 40)} for i in range(300)]  # lengths that differ, several C calls
    sealed = TERMINALS[2].seal_many(batch, method="PUT", timestamp=NOON)
    for payload, one in zip(batch, sealed):
        single = TERMINALS[2].seal(payload, method="PUT", timestamp=NOON, iv=one.iv)
        assert one == single and (one != single) is False and hash(one) == hash(single)
        assert copy.copy(one) == one and copy.copy(one)._request == single._request
        assert (one.data, one.iv, one.signed, one.as_dict(), repr(one)) == (
            single.data, single.iv, single.signed, single.as_dict(), repr(single))
        assert TERMINALS[2].open("PUT", one.headers, one.body, now=NOON) == payload
    assert sealed[0] != sealed[1] and sealed[0] != TERMINALS[2].seal(batch[0], method="PUT", timestamp=NOON)
    assert len({id(one[3]) for one in sealed}) < len(sealed)  # shared, not one buffer per request


def _transient_bytes(call: Any) -> tuple[Any, int]:
    """call's result and the most memory Python's allocators held for it at once beyond what the result keeps."""
    tracemalloc.start()
    try:
        result = call()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - held


def test_seal_many_of_large_items_holds_one_items_text_at_a_time() -> None:
    """Items of 32 KiB or more are sealed one by one, each text dropped before the next is serialized: kept one
    item longer, two texts lived at once, and at 1 MiB the C allocator faulted fresh pages in for every item
    (seal_many took 1.5x the time of a loop of seals). Traced, a batch of such items needs at its peak no more
    memory beyond its results than one seal does (orjson reserves far more than a text's length for it)."""
    payload = {"ref": "x" * (1 << 20)}
    terminal = Terminal("bc-large", "SN-large")
    terminal.seal_many([payload], timestamp=NOON)  # the workspace grown for these items before the traces
    _, single = _transient_bytes(lambda: terminal.seal(payload, timestamp=NOON))
    sealed, batch = _transient_bytes(lambda: terminal.seal_many([payload] * 4, timestamp=NOON))
    assert [one.plaintext for one in sealed] == [pasarela.canonical_json(payload)] * 4
    assert single > 1 << 20
    assert batch <= single + 65536


def test_a_seal_from_a_finalizer_during_a_batch_does_not_change_the_batchs_requests() -> None:
    """A batch writes its texts and requests into this thread's buffers, then makes its rows: objects that the
    cyclic GC counts, so a collection may run meanwhile, and a finalizer may seal on this thread. The batch holds
    its buffers until its requests are copied out (_Workspace.hold); the finalizer's seal works in others."""
    terminal = Terminal("bc-7f3a1c2e9d", "SN-0042")
    payloads = [{"who": "outer", "n": n, "pad": "p" * size} for size in (10, 2000, 9000) for n in range(40)]
    sealed_inside: list[Any] = []

    def reseal() -> bool:
        if len(sealed_inside) >= 5000:
            return False
        sealed_inside.append(terminal.seal({"who": "inner", "pad": "q" * 9000}, timestamp=NOON))
        return True

    with finalizer_at_each_collection(reseal):
        batch = terminal.seal_many(payloads, timestamp=NOON)
    assert len(sealed_inside) > 100  # collections ran all through the batch, each sealing on this thread
    assert [terminal.open("POST", s.headers, s.body, now=NOON) for s in batch] == payloads
    assert all(terminal.open("POST", s.headers, s.body, now=NOON)["who"] == "inner" for s in sealed_inside[:50])


def test_a_seal_from_a_finalizer_while_the_workspace_grows_works_and_changes_nothing() -> None:
    """Growing a thread's buffers allocates (and calls into C): a collection may run meanwhile, and a finalizer may
    seal on this thread in the buffers still installed, which must stay whole (they had lost their key cache and
    IV pool to the new ones: TypeError). Each buffers has its own pool, so no IV is handed out twice."""
    terminal = Terminal("bc-7f3a1c2e9d", "SN-0042")
    sealed_inside: list[Any] = []

    def reseal() -> bool:
        if len(sealed_inside) >= 200:
            return False
        sealed_inside.append(terminal.seal({"who": "inner"}, timestamp=NOON))
        return True

    payloads = [{"who": "outer", "pad": "p" * size} for size in (5000, 20000, 70000, 300000)]  # each a grow
    with finalizer_at_each_collection(reseal):
        outer = [terminal.seal(payload, timestamp=NOON) for payload in payloads]
    assert len(sealed_inside) > 10
    assert [terminal.open("POST", s.headers, s.body, now=NOON) for s in outer] == payloads
    assert all(terminal.open("POST", s.headers, s.body, now=NOON) == {"who": "inner"} for s in sealed_inside)
    ivs = [s.body for s in outer + sealed_inside]
    assert len(set(ivs)) == len(ivs)
