"""Stress: threads sharing Terminals seal and open concurrently, every output checked.

The C core has no mutable global state and runs with the GIL released; the binding keeps one
workspace per thread, grown on demand. Four threads share two Terminals for about ten seconds
(PASARELA_STRESS_SECONDS), each sealing payloads of its own, of sizes that make the workspaces
grow at different moments, over the C fast path (dict, JSON text) and the Python fallback
(Decimal, duplicate keys). Every sealed request must be byte-identical to what pasarela.reference
seals from the same payload, timestamp and IV; opening it on the same shared Terminal must give
the payload back, and opening it with one ciphertext digit changed must be refused. Anything that
bled from another thread's call (buffer, credentials, IV) shows up as a difference. This is a
correctness test, not a timing one.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from decimal import Decimal
from typing import Any, Optional, Union

import pytest

import pasarela
from pasarela import reference

THREADS = 4
SECONDS = float(os.environ.get("PASARELA_STRESS_SECONDS", "10"))
CREDENTIALS = [("demo-business-code", "DEMO-0001"), ("c\u00f3digo-\u00f1-\U0001f600", "SN-0042")]

Payload = Union[dict[str, Any], bytes, str, None]


def _payload(rng: random.Random, thread: int, count: int) -> Payload:
    """A payload tagged with its thread and sequence number, in one of the shapes seal takes."""
    tag = {"thread": thread, "seq": count}
    items = [{"sku": f"T{thread}-{i}", "qty": rng.randrange(1, 9), "price": rng.randrange(1, 10**6) / 100}
             for i in range(rng.choice([0, 1, 5, 50, 400]))]  # up to ~20 KB: the workspaces grow
    shape = rng.randrange(6)
    if shape == 0:
        return None
    if shape == 1:
        return {**tag, "amount": Decimal("100.10"), "items": items}  # Decimal: the reference serializer
    if shape == 2:
        return json.dumps({**tag, "items": items}, indent=rng.choice([None, 1]))  # JSON text, C canonicalizer
    if shape == 3:
        return b'{"seq": %d, "thread": %d, "seq": %d}' % (count, thread, count + 1)  # duplicate keys: Python path
    return {**tag, "10": "integer-like keys first", "amount": 100.0, "items": items}


def _tampered(sealed: pasarela.Sealed, rng: random.Random) -> tuple[Optional[bytes], Optional[dict[str, str]]]:
    """The request's body and params with one hex digit of its ciphertext changed."""
    data = sealed.data
    at = rng.randrange(33, len(data))
    data = data[:at] + ("0" if data[at] != "0" else "1") + data[at + 1:]
    if sealed.params is not None:
        return None, {"data": data}
    return b'{"data":"' + data.encode("ascii") + b'"}', None


def _seal_and_check(terminals: list[pasarela.Terminal], references: list[reference.Terminal], thread: int,
                    stop_at: float, counts: list[int]) -> None:
    rng = random.Random(thread)  # noqa: S311 - reproducible payload shapes, not secrets
    count = 0
    while time.monotonic() < stop_at:
        which = rng.randrange(len(terminals))
        payload = _payload(rng, thread, count)
        method = rng.choice(["POST", "GET", "PUT"])
        timestamp = 1_000_000_000 + rng.randrange(9_000_000_000)
        sealed = terminals[which].seal(payload, method=method, timestamp=timestamp)  # IV from the shared pool
        expected = references[which].seal(payload, method=method, timestamp=timestamp, iv=sealed.iv)
        assert (sealed.plaintext, sealed.headers, sealed.body, sealed.params) == (
            expected.plaintext, expected.headers, expected.body, expected.params), (thread, count, payload)
        opened = terminals[which].open(method, sealed.headers, sealed.body, sealed.params, now=timestamp)
        assert opened == json.loads(sealed.plaintext), (thread, count, payload)
        body, params = _tampered(sealed, rng)
        with pytest.raises(pasarela.AuthError):
            terminals[which].open(method, sealed.headers, body, params, now=timestamp)
        count += 1
    counts[thread] = count


def test_threads_sealing_concurrently_match_the_reference() -> None:
    terminals = [pasarela.Terminal(business_code=code, terminal_serial=serial) for code, serial in CREDENTIALS]
    references = [reference.Terminal(business_code=code, terminal_serial=serial) for code, serial in CREDENTIALS]
    counts = [0] * THREADS
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(thread: int) -> None:
        try:
            start.wait()
            _seal_and_check(terminals, references, thread, time.monotonic() + SECONDS, counts)
        except BaseException as exc:  # re-raised in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"sealer-{i}") for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 120)
    assert not any(t.is_alive() for t in threads), "a sealing thread hung"
    if errors:
        raise errors[0]
    assert all(count > 0 for count in counts), counts
