"""benchmarks/seal_speed.c builds and runs as its header says, and refuses text the C core refuses (its timings
are never asserted: a benchmark's numbers belong in benchmarks/, not in tests). Needs the source tree, a C
compiler and the OpenSSL headers (scripts/setup installs libssl-dev), as scripts/hardening does."""

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


def test_heap_trim_shows_the_batch_faulting_its_memory_in_again_unless_the_process_keeps_it() -> None:
    """What docs/performance.md (Batches and glibc's heap) says of glibc: a batch of 16 KiB payloads dropped, the next
    one faults its pages in again (about 2,900 per batch of 256); with the tunables the script sets, it does not. Linux
    with glibc, as CI and scripts/hardening."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "heap_trim.py"), "--pairs", "1", "--rounds", "1",
                          "--case", "seal_many 16 KiB"], capture_output=True, text=True, check=True)
    row = re.search(r"^\| seal_many 16 KiB \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| ([\d.]+)x \|$",
                    run.stdout, re.M)
    assert row is not None, run.stdout
    default_ns, default_faults, tuned_ns, tuned_faults = (int(cell.replace(",", "")) for cell in row.groups()[:4])
    assert min(default_ns, tuned_ns) > 0 and float(row.group(5)) > 0
    assert default_faults > 1000 and tuned_faults < default_faults // 100, run.stdout


def test_avx512_short_compares_the_two_policies_on_credentials_that_carry_them() -> None:
    """benchmarks/avx512_short.py (the reason for PASARELA_CPU_AVX512_SHORT) times each call under both policies,
    which it sets on the credentials it seals with: on an AVX-512 CPU a row per call with two times and their ratio,
    and the terminals really differ in that bit; elsewhere it says why it measures nothing."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import avx512_short
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from pasarela import _binding

    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "avx512_short.py"), "--rounds", "1"],
                         capture_output=True, text=True, check=True)
    if not _binding.CPU_FEATURES & _binding.lib.PASARELA_CPU_AVX512:
        assert "has no AVX-512" in run.stdout, run.stdout
        return
    bit = _binding.lib.PASARELA_CPU_AVX512_SHORT
    cpus = [avx512_short.terminal(short)._native.struct.cpu for short in (False, True)]
    assert not cpus[0] & bit and cpus[1] & bit and cpus[0] | bit == cpus[1]
    rows = re.findall(r"^\| ((?:seal|open|open_bytes|seal_many)[^|]*) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)x ",
                      run.stdout, re.M)
    assert len(rows) == 12, run.stdout
    assert all(min(float(a), float(b), float(r)) > 0 for _, a, b, r in rows)
