"""seal_many and seal_batch: byte-identical to seal() with the same timestamp and IVs."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pasarela
from pasarela import PayloadError, Sealed, Terminal, seal_batch
from strategies import sealable_objects

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


def test_seal_batch_is_exported() -> None:
    assert pasarela.seal_batch is seal_batch
