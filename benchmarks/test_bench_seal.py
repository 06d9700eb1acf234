"""Terminal.seal: the C core against the pure-Python reference and the naive implementation.

Run: python3 -m pytest benchmarks --benchmark-enable --benchmark-group-by=param:size
Each group shows every implementation at one payload size; the bracketed factor is the ratio to the
fastest in the same run. (Without --benchmark-enable, as in the test command, each runs once.)
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

import pasarela
from naive import naive_seal
from pasarela import canonical_json, reference
from payloads import SIZES, payload_of_size

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
TIMESTAMP = 1763812800
IV = bytes(range(16))


def _c() -> Callable[[dict[str, Any]], object]:
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    return lambda payload: terminal.seal(payload, timestamp=TIMESTAMP, iv=IV)


def _reference() -> Callable[[dict[str, Any]], object]:
    terminal = reference.Terminal(BUSINESS_CODE, SERIAL)
    return lambda payload: terminal.seal(payload, timestamp=TIMESTAMP, iv=IV)


def _naive() -> Callable[[dict[str, Any]], object]:
    return lambda payload: naive_seal(BUSINESS_CODE, SERIAL, payload, TIMESTAMP, IV)


IMPLEMENTATIONS = {"c": _c, "reference": _reference, "naive": _naive}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("implementation", list(IMPLEMENTATIONS))
def test_seal(benchmark: Any, implementation: str, size: int) -> None:
    payload = payload_of_size(size)
    assert len(canonical_json(payload)) == size
    seal = IMPLEMENTATIONS[implementation]()
    benchmark.group = f"seal {size} B"
    result = benchmark(seal, payload)
    assert result is not None
