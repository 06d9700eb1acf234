"""benchmarks/seal_speed.c builds and runs as its header says, and refuses text the C core refuses (its timings
are never asserted: a benchmark's numbers belong in benchmarks/, not in tests). Needs the source tree, a C
compiler and the OpenSSL headers (scripts/setup installs libssl-dev), as scripts/hardening does. The developer's
tools in scripts/ that time with benchmarks/' instruments (compare_trees.py, padding_oracle.py) run from there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
