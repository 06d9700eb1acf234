"""benchmarks/seal_speed.c builds and runs as its header says, and refuses text the C core refuses (its timings
are never asserted: a benchmark's numbers belong in benchmarks/, not in tests). Needs the source tree, a C
compiler and the OpenSSL headers (scripts/setup installs libssl-dev), as scripts/hardening does. The glibc
tunables docs/performance.md gives for batches do what it says (page faults counted, not times), and the developer's
tools in scripts/ that time with benchmarks/' instruments (compare_trees.py, padding_oracle.py) run from there."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def seal_speed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("seal_speed") / "seal_speed"
    core = sorted(str(path) for path in (ROOT / "csrc").glob("[a-z]*.c"))
    subprocess.run(["cc", "-std=c99", "-O1", "-DPASARELA_VERSION=\"0.0.0\"", f"-I{ROOT / 'csrc'}",
                    str(ROOT / "benchmarks" / "seal_speed.c"), *core, "-lcrypto", "-o", str(out)], check=True)
    return out


def test_it_times_the_single_seal_and_the_batch_against_the_floor(seal_speed: Path, tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "payloads.py"), str(tmp_path)], check=True)
    assert (tmp_path / "payload-256.json").stat().st_size == 256
    run = subprocess.run([str(seal_speed), "--rounds", "1", str(tmp_path / "payload-64.json"),
                          str(tmp_path / "payload-256.json")], capture_output=True, text=True, check=True)
    rows = re.findall(r"^\| (\d+) B \| (\d+) / ([\d.]+)x \| (\d+) / ([\d.]+)x \| (\d+) \|$", run.stdout, re.M)
    assert [row[0] for row in rows] == ["64", "256"], run.stdout
    for _, one, one_ratio, batch, batch_ratio, floor in rows:
        assert min(int(one), int(batch), int(floor)) > 0 and min(float(one_ratio), float(batch_ratio)) > 0


@pytest.mark.parametrize("text", [b"[1,2]", b'{"key":"x"}', b"{"])
def test_it_stops_on_text_the_c_core_refuses(seal_speed: Path, tmp_path: Path, text: bytes) -> None:
    (tmp_path / "refused.json").write_bytes(text)
    run = subprocess.run([str(seal_speed), "--rounds", "1", str(tmp_path / "refused.json")], capture_output=True,
                         text=True)
    assert run.returncode == 1 and "refused" in run.stderr, (run.returncode, run.stderr)


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


def test_compare_trees_runs_from_scripts_and_pairs_the_trees_by_round() -> None:
    """scripts/compare_trees.py (a developer's tool; it times with benchmarks/gate.py's loop): one tree against itself,
    the after / before row of each operation asked for (its figures are never asserted, only that they are numbers)."""
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_trees.py"), str(ROOT), str(ROOT),
                          "--rounds", "1", "--sizes", "64", "--only", "seal", "--only", "open"],
                         capture_output=True, text=True, check=True)
    rows = re.findall(r"^\| (\w+), after / before \(paired by round\) \| ([\d.]+)x \|$", run.stdout, re.M)
    assert [name for name, _ in rows] == ["seal", "open"], run.stdout
    assert all(float(ratio) > 0 for _, ratio in rows), run.stdout


def test_padding_oracle_runs_from_scripts_with_a_verdict_per_size_and_its_exit_status() -> None:
    """scripts/padding_oracle.py runs benchmarks/padding_timing.py's measurement alone: a line per entry and size, and
    exit status 1 exactly when a line is out of bounds (4 rounds: either can happen; neither is asserted)."""
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "padding_oracle.py"), "--rounds", "4",
                          "--entry", "C call"], capture_output=True, text=True)
    lines = re.findall(r"^C call +(\d+) B: bad padding .+ median ratio [\d.]+, bad slower in +\d+% of 4 rounds(.*)$",
                       run.stdout, re.M)
    assert [size for size, _ in lines] == ["256", "65536"], run.stdout + run.stderr
    assert run.returncode == (1 if any("OUT OF BOUNDS" in rest for _, rest in lines) else 0), run.stderr
