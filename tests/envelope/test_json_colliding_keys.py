"""Objects whose keys all share one FNV-1a hash (issue 11, item 3): the C canonicalizer still finds every
duplicate and accepts distinct keys, as JSON.parse + JSON.stringify would (a repeated key keeps its first
position and its last value). Its cost, now O(k log k), is in docs/security.md ("Sizes"), with the measurement."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pasarela
from pasarela import _binding, reference
from pasarela.terminal.stringify import canonicalize_text
from support.faulty_clients import BUSINESS_CODE, NOON, SERIAL

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "csrc" / "fuzz"))
import seeds

KEYS = seeds.fnv1a_colliding_keys(9)  # 512 keys: the sorted path (more than 16 members)


def _object(members: list[tuple[bytes, int]]) -> bytes:
    return b"{" + b",".join(b'"' + key + b'":' + str(value).encode() for key, value in members) + b"}"


def test_the_keys_collide() -> None:
    assert len(set(KEYS)) == len(KEYS) == 512
    assert len({seeds._fnv1a_step(2166136261, key) for key in KEYS}) == 1


def test_distinct_colliding_keys_are_accepted_unchanged() -> None:
    text = _object([(key, i) for i, key in enumerate(KEYS)])
    canonical = _binding.canonicalize(text)
    assert canonical is not None and canonical.text == text == canonicalize_text(text)


@pytest.mark.parametrize("twin", [0, 1, 255, 510, 511])
def test_a_duplicate_among_colliding_keys_is_found(twin: int) -> None:
    text = _object([(key, i) for i, key in enumerate(KEYS)] + [(KEYS[twin], -1)])
    assert _binding.canonicalize(text) is None  # left to the exact path, which keeps the last value
    expected = _object([(key, -1 if i == twin else i) for i, key in enumerate(KEYS)])
    assert canonicalize_text(text) == expected
    assert pasarela.canonical_json(text) == expected


def test_colliding_keys_through_seal_and_open() -> None:
    members = [(key, i) for i, key in enumerate(KEYS)]
    duplicated = _object([*members, (KEYS[7], -1)])
    for sealer in (pasarela.Terminal, reference.Terminal):
        sealed = sealer(BUSINESS_CODE, SERIAL).seal(duplicated, timestamp=NOON)
        opened = pasarela.Terminal(BUSINESS_CODE, SERIAL).open("POST", dict(sealed.headers), sealed.body, now=NOON)
        assert opened == {key.decode(): (-1 if i == 7 else i) for i, key in enumerate(KEYS)}
