"""csrc/tests/upper_state_check.py finds every exit that a path reaches with the upper halves of the vector
registers in use, and nothing else, on hand-written x86-64 functions (tests/vectors/upper_state_cases.s), read
from binutils objdump's listing of them (tests/vectors/upper_state_cases.objdump, made as tests/vectors/README.md
says): the listing is stored so that the test needs no assembler nor objdump and runs on any machine (Windows
too). scripts/hardening runs the check with the real objdump on the C core as the release builds compile it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors"
CHECK = ROOT / "csrc" / "tests" / "upper_state_check.py"
sys.path.insert(0, str(CHECK.parent))

import upper_state_check  # noqa: E402

# function: the exits the check must report, each as words of its message (None: not a function it walks)
EXPECTED: dict[str, list[str] | None] = {
    "scalar": None,
    "clean_return": [],
    "dirty_return": ["returns"],
    "zmm_return": ["returns"],
    "xmm_only": None,
    "dirty_tail_call": ["jumps to 1000 <scalar>"],
    "dirty_call": ["calls 1000 <scalar>"],
    "early_tail_call": [],  # b64_avx2's shape: a short input jumps to the scalar code before any YMM write
    "dirty_on_one_branch": ["returns"],
    "clean_on_both_branches": [],
    "cleaned_by_vzeroall": [],
    "dirty_in_a_loop": ["returns"],
    "indirect_jump": ["jumps to *%rdi, which this check cannot follow"],
    "split": [],  # its .cold part, reached by a jump, runs the VZEROUPPER: followed as part of it
}


LISTING = (VECTORS / "upper_state_cases.objdump").read_text()


def test_the_listing_is_of_the_stored_source() -> None:
    source = (VECTORS / "upper_state_cases.s").read_text()
    for name in [*EXPECTED, "split.cold"]:
        assert f"\n{name}:\n" in source and f" <{name}>:\n" in LISTING, name


def test_each_function_gets_exactly_its_findings() -> None:
    instructions = upper_state_check.parse(LISTING)
    assert {ins.function for ins in instructions} == {*EXPECTED, "split.cold"}
    by_function: dict[str, list[str]] = {}
    for line in upper_state_check.findings(instructions):
        by_function.setdefault(line.split(" at ")[0], []).append(line)
    for name, expected in EXPECTED.items():
        lines = by_function.pop(name, [])
        assert len(lines) == len(expected or []), (name, lines)
        for line, what in zip(lines, expected or []):
            assert f"{name} at 0x" in line and what in line, (name, line)
    assert by_function == {}, by_function


def test_the_command_fails_on_a_finding_and_names_it(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(upper_state_check, "objdump_listing", lambda path: LISTING)  # objdump's, for any library
    status = upper_state_check.main(["cases.so"])
    out = capsys.readouterr().out
    assert status == 1, out
    assert "cases.so: dirty_return at 0x100f returns with the upper halves in use" in out.splitlines()
    assert out.splitlines()[-1] == "cases.so: 12 functions use YMM/ZMM registers, 7 exits with the upper halves in use"


def test_the_command_needs_a_library() -> None:
    run = subprocess.run([sys.executable, str(CHECK)], capture_output=True, text=True)
    assert run.returncode == 2 and "LIBRARY" in run.stderr
