"""benchmarks/sha512_overlap.c builds and runs as its header says (whether the canonical check and the decryption hide
in the gaps of the SHA-512, as seal's CBC encryption does), on payloads.py's files of both shapes: each interleaved run
gives the hash's digest, the check's verdict and the plaintext of the same work done apart, or the program stops (its
timings are never asserted: a benchmark's numbers belong in benchmarks/). Needs the source tree and a C compiler, as
test_open_parts. It interleaves x86-64 code (the AVX2 SHA-512 and check); elsewhere it says so and exits 2."""

from __future__ import annotations

import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARTS = ["SHA-512 of the signed text's Base64", "canonical check alone", "SHA-512 with the check at its hooks",
         "AES-256-CBC decrypt alone", "SHA-512 with the decryption at its hooks"]

X86_64 = platform.machine() in ("x86_64", "AMD64")


@pytest.fixture(scope="module")
def sha512_overlap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sha512_overlap") / "sha512_overlap"
    # sha512.c and json_checked.c are included by the benchmark itself
    core = sorted(str(path) for path in (ROOT / "csrc").glob("[a-z]*.c")
                  if path.name not in ("sha512.c", "json_checked.c"))
    subprocess.run(["cc", "-std=c99", "-O1", "-DPASARELA_VERSION=\"0.0.0\"", f"-I{ROOT / 'csrc'}",
                    str(ROOT / "benchmarks" / "sha512_overlap.c"), *core, "-o", str(out)], check=True)
    return out


def test_it_times_each_part_apart_and_interleaved(sha512_overlap: Path, tmp_path: Path) -> None:
    if not X86_64:
        run = subprocess.run([str(sha512_overlap)], capture_output=True, text=True)
        assert run.returncode == 2 and "needs x86-64" in run.stderr, (run.returncode, run.stderr)
        return
    for shape in ([], ["string-heavy"]):
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "payloads.py"), str(tmp_path), *shape], check=True)
    files = [tmp_path / "payload-256.json", tmp_path / "payload-string-heavy-1024.json"]
    run = subprocess.run([str(sha512_overlap), "--rounds", "1", *map(str, files)], capture_output=True, text=True,
                         check=True)
    rows = re.findall(r"^\| +(.+?) \| (\d+) \| (\d+) \|$", run.stdout, re.M)
    assert [name for name, _, _ in rows] == PARTS, run.stdout
    assert all(int(a) > 0 and int(b) > 0 for _, a, b in rows), run.stdout
    hidden = re.findall(r"^\| the (check|decryption): hidden \| (-?\d+)% \| (-?\d+)% \|$", run.stdout, re.M)
    assert [part for part, _, _ in hidden] == ["check", "decryption"], run.stdout


@pytest.mark.parametrize("text", [b"[1,2]", b'{"a":1,"a":2}', b'{"a":"\\n"}'])
def test_it_stops_on_text_the_check_declines(sha512_overlap: Path, tmp_path: Path, text: bytes) -> None:
    (tmp_path / "declined.json").write_bytes(text)
    run = subprocess.run([str(sha512_overlap), "--rounds", "1", str(tmp_path / "declined.json")],
                         capture_output=True, text=True)
    if X86_64:
        assert run.returncode == 1 and "declines" in run.stderr, (run.returncode, run.stderr)
    else:
        assert run.returncode == 2 and "needs x86-64" in run.stderr, (run.returncode, run.stderr)
