"""benchmarks/open_parts.c builds and runs as its header says (where Terminal.open_bytes's C time goes, part by part),
on payloads.py's files of both shapes, and stops on text the C core refuses (its timings are never asserted: a
benchmark's numbers belong in benchmarks/). Needs the source tree and a C compiler, as test_benchmark_tools."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARTS = ["pasarela_seal_json (SHORTEST_DIGITS)", "pasarela_open_request (whole)", "hex decode of the ciphertext",
         "AES-256-CBC decrypt", "canonicalize (flags 0)", "sign: Base64 + SHA-512 + hex", "Base64 alone",
         "SHA-512 alone", "Base64, then SHA-512", "UTF-8 pass (refusals only)", "seal: SHA-512 with AES-CBC",
         "seal: hex encode of the ciphertext"]


@pytest.fixture(scope="module")
def open_parts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("open_parts") / "open_parts"
    core = sorted(str(path) for path in (ROOT / "csrc").glob("[a-z]*.c"))
    subprocess.run(["cc", "-std=c99", "-O1", "-DPASARELA_VERSION=\"0.0.0\"", f"-I{ROOT / 'csrc'}",
                    str(ROOT / "benchmarks" / "open_parts.c"), *core, "-o", str(out)], check=True)
    return out


@pytest.mark.parametrize("flags", [[], ["--no-avx512"]])
def test_it_times_every_part_of_both_shapes(open_parts: Path, tmp_path: Path, flags: list[str]) -> None:
    for shape in ([], ["string-heavy"]):
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "payloads.py"), str(tmp_path), *shape], check=True)
    files = [tmp_path / "payload-256.json", tmp_path / "payload-string-heavy-1024.json"]
    assert [path.stat().st_size for path in files] == [256, 1024]
    run = subprocess.run([str(open_parts), "--rounds", "1", *flags, *map(str, files)], capture_output=True, text=True,
                         check=True)
    assert re.search(r"^\| ns per call, fastest of 1 rounds(?: \(--no-avx512\))? \| payload-256.json \(256 B\) "
                     r"\| payload-string-heavy-1024.json \(1024 B\) \|$", run.stdout, re.M), run.stdout
    rows = re.findall(r"^\| +(.+?) \| (\d+) \| (\d+) \|$", run.stdout, re.M)
    assert [name for name, _, _ in rows] == PARTS, run.stdout
    assert all(int(a) > 0 and int(b) > 0 for _, a, b in rows), run.stdout


@pytest.mark.parametrize("text", [b"[1,2]", b'{"key":"x"}', b"{"])
def test_it_stops_on_text_the_c_core_refuses(open_parts: Path, tmp_path: Path, text: bytes) -> None:
    (tmp_path / "refused.json").write_bytes(text)
    run = subprocess.run([str(open_parts), "--rounds", "1", str(tmp_path / "refused.json")], capture_output=True,
                         text=True)
    assert run.returncode == 1 and "refused" in run.stderr, (run.returncode, run.stderr)
