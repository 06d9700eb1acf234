"""The glibc tunables docs/performance.md (Batches and glibc's heap) gives a gateway that seals large batches do what
the page says: page faults counted, never times."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, resource, sys
import pasarela

terminal = pasarela.Terminal("bc-7f3a1c2e9d", "SN-0042")
items = [{"sku": f"SKU-{n:05d}", "qty": n % 7 + 1, "price": 1999.99 + n} for n in range(320)]
batch = [{"amount": 125.5, "currency": "COP", "ref": "ord-1", "items": items}] * 256  # 16 KiB payloads
for _ in range(3):  # the keys derived, the workspace grown
    terminal.seal_many(batch, timestamp=1763812800)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    terminal.seal_many(batch, timestamp=1763812800)  # each batch dropped before the next
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 4))
"""


def _faults_per_batch(tunables: str | None) -> float:
    env = {name: value for name, value in os.environ.items()
           if name not in ("GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")}
    if tunables is not None:
        env["GLIBC_TUNABLES"] = tunables
    run = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return float(run.stdout)


def test_the_documented_glibc_tunables_keep_a_batchs_memory() -> None:
    """What docs/performance.md (Batches and glibc's heap) says of glibc: a batch of 256 requests of 16 KiB payloads
    dropped, the next one faults its pages in again (about 2,900 per batch); started with the GLIBC_TUNABLES line the
    page gives, the process keeps that memory and does not. Page faults are counted, never times. Linux with glibc,
    as CI and scripts/hardening."""
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("the page's advice is for glibc's allocator")
    [tunables] = re.findall(r"^ +GLIBC_TUNABLES=(\S+)$", (ROOT / "docs" / "performance.md").read_text("utf-8"), re.M)
    default, tuned = _faults_per_batch(None), _faults_per_batch(tunables)
    assert default > 1000 and tuned < default / 100, (default, tuned)
