"""csrc/tests/upper_state_check.py finds every exit that a path reaches with the upper halves of the vector
registers in use, and nothing else: hand-written x86-64 functions, linked into a shared library by cc, one per
case (scripts/hardening runs the check on the C core as the release builds compile it). Needs the source tree,
cc and objdump (binutils), as scripts/hardening does."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "csrc" / "tests"))

import upper_state_check  # noqa: E402

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 instructions")

# name: (body, the exits the check must report, as "<mnemonic> <what>" words of its message)
CASES = {
    "clean_return": ("vpxor %ymm0, %ymm0, %ymm0\n vzeroupper\n ret", []),
    "dirty_return": ("vpxor %ymm0, %ymm0, %ymm0\n ret", ["returns"]),
    "zmm_return": ("vpxord %zmm1, %zmm1, %zmm1\n ret", ["returns"]),
    "xmm_only": ("vpxor %xmm0, %xmm0, %xmm0\n ret", None),  # not a function the check walks
    "dirty_tail_call": ("vpcmpeqb %ymm1, %ymm1, %ymm1\n jmp scalar", ["jumps to"]),
    "dirty_call": ("vpxor %ymm0, %ymm0, %ymm0\n call scalar\n vzeroupper\n ret", ["calls"]),
    # b64_avx2's shape: a short input jumps to the scalar code before any YMM register is written
    "early_tail_call": ("test %rdi, %rdi\n jne 1f\n jmp scalar\n1: vpxor %ymm0, %ymm0, %ymm0\n vzeroupper\n"
                        " jmp scalar", []),
    "dirty_on_one_branch": ("test %rdi, %rdi\n je 1f\n vpxor %ymm0, %ymm0, %ymm0\n1: ret", ["returns"]),
    "clean_on_both_branches": ("test %rdi, %rdi\n je 1f\n vpxor %ymm0, %ymm0, %ymm0\n vzeroupper\n1: ret", []),
    "cleaned_by_vzeroall": ("vpxor %ymm0, %ymm0, %ymm0\n vzeroall\n ret", []),
    "dirty_in_a_loop": ("1: vpxor %ymm0, %ymm0, %ymm0\n dec %rdi\n jne 1b\n ret", ["returns"]),
    "indirect_jump": ("vpxor %ymm0, %ymm0, %ymm0\n vzeroupper\n jmp *%rdi", ["cannot follow"]),
}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("upper_state")
    source = [".text", ".hidden scalar", ".type scalar, @function", "scalar:", " xor %eax, %eax", " ret"]
    for name, (body, _) in CASES.items():
        source += [f".globl {name}", f".type {name}, @function", f"{name}:", f" {body}"]
    # a function whose tail gcc moved to a .cold part: followed as part of it, not as a call
    source += [".globl split", ".type split, @function", "split:", " vpxor %ymm0, %ymm0, %ymm0", " jmp split.cold",
               ".type split.cold, @function", "split.cold:", " vzeroupper", " ret"]
    (directory / "cases.s").write_text("\n".join(source) + "\n")
    out = directory / "cases.so"
    subprocess.run(["cc", "-shared", "-nostdlib", str(directory / "cases.s"), "-o", str(out)], check=True)
    return out


def test_each_case_gets_exactly_its_findings(library: Path) -> None:
    found = upper_state_check.findings(upper_state_check.disassembly(str(library)))
    by_function: dict[str, list[str]] = {}
    for line in found:
        by_function.setdefault(line.split(" at ")[0], []).append(line)
    for name, (_, expected) in CASES.items():
        lines = by_function.pop(name, [])
        assert len(lines) == len(expected or []), (name, lines)
        for line, what in zip(lines, expected or []):
            assert what in line and "at 0x" in line, (name, line)
    assert by_function == {}, by_function  # neither scalar nor split (nor split.cold) is reported


def test_the_command_fails_on_a_finding_and_names_it(library: Path) -> None:
    run = subprocess.run([sys.executable, str(ROOT / "csrc" / "tests" / "upper_state_check.py"), str(library)],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "dirty_return at 0x" in run.stdout and "returns with the upper halves in use" in run.stdout
    assert run.stdout.splitlines()[-1].endswith("12 functions use YMM/ZMM registers, 7 exits with "
                                                "the upper halves in use"), run.stdout


def test_the_command_needs_a_library() -> None:
    run = subprocess.run([sys.executable, str(ROOT / "csrc" / "tests" / "upper_state_check.py")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "LIBRARY" in run.stderr
