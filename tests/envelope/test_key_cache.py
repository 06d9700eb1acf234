"""The per-thread key cache and the multi-buffer batch path, checked against the pure-Python reference.

Each thread's workspace keeps the keys derived for the last (terminal, timestamp) (and reuses the MD5
password within the same UTC minute); a batch hashes up to 16 signed texts side by side and runs their
CBC chains interleaved. Any stale or mixed-up key would show as a byte differing from the reference.
"""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pasarela import Terminal, reference, seal_batch
from pasarela.terminal import envelope
from support.strategies import sealable_objects

MINUTE_START = 1763812800  # 2025-11-22 12:00:00 UTC, a minute boundary
CREDENTIALS = [("bc-1", "SN-1"), ("bc-2", "SN-1"), ("bc-1", "SN-2"), ("ñandú-ß", "SN-€")]
TERMINALS = [Terminal(*c) for c in CREDENTIALS]
REFERENCES = [reference.Terminal(*c) for c in CREDENTIALS]
IV = bytes(range(16))


def _same(terminal: int, payload: Any, timestamp: int) -> None:
    got = TERMINALS[terminal].seal(payload, timestamp=timestamp, iv=IV)
    want = REFERENCES[terminal].seal(payload, timestamp=timestamp, iv=IV)
    assert (got.plaintext, got.signature, got.body) == (want.plaintext, want.signature, want.body)


# offsets around a minute boundary: same second, same minute, the next minute, the previous one
offsets = st.sampled_from([0, 0, 1, 59, 60, 61, -1, -60, 3600])


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, len(TERMINALS) - 1), offsets), min_size=1, max_size=30))
def test_consecutive_seals_of_terminals_and_timestamps_match_the_reference(steps: list[tuple[int, int]]) -> None:
    for terminal, offset in steps:
        _same(terminal, {"amount": 100.0, "ref": f"{terminal}:{offset}"}, MINUTE_START + offset)


def test_a_new_terminal_never_gets_the_keys_cached_for_a_freed_one() -> None:
    for round_ in range(50):
        business_code = f"bc-{round_ % 2}"
        terminal = Terminal(business_code, "SN-same")
        got = terminal.seal({"n": round_}, timestamp=MINUTE_START, iv=IV)
        want = reference.Terminal(business_code, "SN-same").seal({"n": round_}, timestamp=MINUTE_START, iv=IV)
        assert (got.signature, got.body) == (want.signature, want.body)
        del terminal
        gc.collect()


def test_open_uses_the_cache_consistently_with_seal() -> None:
    terminal = TERMINALS[3]
    for offset in (0, 1, 60, -1, 0):
        sealed = terminal.seal({"x": offset}, timestamp=MINUTE_START + offset)
        assert terminal.open("POST", sealed.headers, sealed.body, now=MINUTE_START + offset) == {"x": offset}
        assert REFERENCES[3].open("POST", sealed.headers, sealed.body, now=MINUTE_START + offset) == {"x": offset}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(TERMINALS) - 1),
                          sealable_objects()), min_size=1, max_size=70))
def test_multi_buffer_batches_match_the_reference(items: list[tuple[int, dict[str, Any]]]) -> None:
    """Groups of up to 16 with mixed terminals and lengths: every lane and chain checked."""
    sealed = seal_batch([(TERMINALS[i], payload) for i, payload in items], timestamp=MINUTE_START)
    for (i, payload), one in zip(items, sealed):
        want = REFERENCES[i].seal(payload, timestamp=MINUTE_START, iv=one.iv)
        assert (one.plaintext, one.signature, one.body) == (want.plaintext, want.signature, want.body)


def test_batch_of_many_sizes_matches_the_reference() -> None:
    """Lengths across SHA-512 block and AES block boundaries in one batch (lanes finish at different times)."""
    payloads = [{"p": "x" * n} for n in range(0, 700, 7)] + [{"p": "y" * 20000}]
    sealed = TERMINALS[0].seal_many(payloads, timestamp=MINUTE_START)
    for payload, one in zip(payloads, sealed):
        want = REFERENCES[0].seal(payload, timestamp=MINUTE_START, iv=one.iv)
        assert (one.plaintext, one.signature, one.body) == (want.plaintext, want.signature, want.body)


def test_batches_larger_than_a_chunk_match_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """seal_many serializes and seals about _CHUNK_BYTES of JSON at a time (here 64 KiB: several chunks): items on
    both sides of chunk boundaries, with items the batch path leaves to the single path (JSON text, NaN refused) in
    between."""
    monkeypatch.setattr(envelope, "_CHUNK_BYTES", 65536)
    payloads: list[Any] = []
    for n in range(12):
        payloads.append({"big": "z" * (9000 + 997 * n), "n": n})
        payloads.append({"small": n, "price": 1999.99 + n})
        if n % 5 == 0:
            payloads.append(b'{"text": 1.0}')
    sealed = TERMINALS[1].seal_many(payloads, timestamp=MINUTE_START)
    assert len(sealed) == len(payloads)
    for payload, one in zip(payloads, sealed):
        want = REFERENCES[1].seal(payload, timestamp=MINUTE_START, iv=one.iv)
        assert (one.plaintext, one.signature, one.body) == (want.plaintext, want.signature, want.body)


def _matches_reference(terminal: int, payloads: list[Any], sealed: list[Any]) -> None:
    assert len(sealed) == len(payloads)
    for payload, one in zip(payloads, sealed):
        want = REFERENCES[terminal].seal(payload, timestamp=MINUTE_START, iv=one.iv)
        assert (one.plaintext, one.signature, one.body) == (want.plaintext, want.signature, want.body)


def test_batch_items_whose_canonical_form_outgrows_the_workspace_match_the_reference() -> None:
    """orjson writes 1e20 in 6 bytes, JSON.stringify in 21: items whose request would not fit what is left
    of the workspace (the C call stops before them, the next call takes them) and whose text and
    ciphertext would not fit a group at all (sealed alone inside the batch). In a new thread, whose
    workspace has the batch size these lengths are chosen for (a thread's workspace only grows)."""
    payloads = [{"small": 1}] + [{"a": [1e20] * 9000, "i": i} for i in range(3)]  # one chunk after the first
    with ThreadPoolExecutor(1) as pool:
        sealed = pool.submit(TERMINALS[2].seal_many, payloads, timestamp=MINUTE_START).result()
    _matches_reference(2, payloads, sealed)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.sampled_from([1, 100, 5000, 16384, 70000, 300000, 1 << 20]), min_size=1, max_size=6),
       st.integers(0, len(TERMINALS) - 1))
def test_batches_of_payloads_up_to_a_mebibyte_match_the_reference(sizes: list[int], terminal: int) -> None:
    """Groups of one or two large requests take the single seal's fused hash-and-encrypt path; more
    go side by side; items beyond the workspace grow it."""
    payloads = [{"p": "q" * size, "n": n} for n, size in enumerate(sizes)]
    _matches_reference(terminal, payloads, TERMINALS[terminal].seal_many(payloads, timestamp=MINUTE_START))


def _payload_of_alignment(alignment: int, tag: int) -> dict[str, str]:
    """A payload whose canonical text's head (all but the final brace) has length % 3 == alignment."""
    for pad in range(3):
        payload = {"tag": str(tag), "p": "x" * pad}
        if (len(reference.canonical_json(payload)) - 1) % 3 == alignment:
            return payload
    raise AssertionError("unreachable")


def test_the_key_tail_encoded_once_per_alignment_matches_the_reference_in_any_order() -> None:
    """Sealing encodes the secret key tail once per (terminal, timestamp, alignment) and reuses it: every
    order of alignments, a new second in the same minute (a new encoded key), "{}" (no comma before the
    key) and batches must give the reference's bytes."""
    order = [0, 1, 2, 2, 1, 0, 1, 0, 2]
    for terminal, ref in zip(TERMINALS, REFERENCES):
        for timestamp in (MINUTE_START, MINUTE_START + 1, MINUTE_START + 1, MINUTE_START + 60):
            payloads: list[dict[str, str]] = [_payload_of_alignment(a, i) for i, a in enumerate(order)]
            payloads.insert(4, {})
            for payload in payloads:
                _same(TERMINALS.index(terminal), payload, timestamp)
            batch = terminal.seal_many(payloads * 3, timestamp=timestamp)
            for sealed, payload in zip(batch, payloads * 3):
                want = ref.seal(payload, timestamp=timestamp, iv=sealed.iv)
                assert (sealed.plaintext, sealed.signature, sealed.body) == (want.plaintext, want.signature, want.body)
