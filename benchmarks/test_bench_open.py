"""Terminal.open and open_bytes: the C core against the pure-Python reference and the naive implementation.

Run: python3 -m pytest benchmarks/test_bench_open.py --benchmark-enable
The naive opener uses json.dumps where the server uses JSON.stringify, so payloads here have no
integral floats (where the two differ) and all three accept the same requests.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

import pasarela
from naive import naive_open
from pasarela import reference
from payloads import SIZES, payload_of_size

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
TIMESTAMP = 1763812800

Opener = Callable[[dict[str, str], bytes], object]


def _c() -> Opener:
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    return lambda headers, body: terminal.open("POST", headers, body, now=TIMESTAMP)


def _reference() -> Opener:
    terminal = reference.Terminal(BUSINESS_CODE, SERIAL)
    return lambda headers, body: terminal.open("POST", headers, body, now=TIMESTAMP)


def _naive() -> Opener:
    return lambda headers, body: naive_open(BUSINESS_CODE, SERIAL, headers, body)


IMPLEMENTATIONS = {"c": _c, "reference": _reference, "naive": _naive}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("implementation", list(IMPLEMENTATIONS))
def test_open(benchmark: Any, implementation: str, size: int) -> None:
    payload = payload_of_size(size)
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=TIMESTAMP)
    assert sealed.body is not None
    open_ = IMPLEMENTATIONS[implementation]()
    benchmark.group = f"open {size} B"
    assert benchmark(open_, sealed.headers, sealed.body) == payload


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("implementation", ["c", "reference"])
def test_open_bytes(benchmark: Any, implementation: str, size: int) -> None:
    """Terminal.open_bytes beside open: the verified text, no payload built (issue 42, goal 2)."""
    payload = payload_of_size(size)
    sealed = pasarela.Terminal(BUSINESS_CODE, SERIAL).seal(payload, timestamp=TIMESTAMP)
    impl = pasarela.Terminal if implementation == "c" else reference.Terminal
    terminal = impl(BUSINESS_CODE, SERIAL)
    benchmark.group = f"open {size} B"
    assert benchmark(terminal.open_bytes, "POST", sealed.headers, sealed.body, now=TIMESTAMP) == sealed.plaintext
