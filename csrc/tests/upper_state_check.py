"""No function of a built x86-64 library leaves the upper halves of the vector registers in use.

    python3 csrc/tests/upper_state_check.py LIBRARY...        (OBJDUMP=x86_64-w64-mingw32-objdump for a DLL)

A function that writes a YMM or ZMM register must run VZEROUPPER (or VZEROALL) before it returns, calls or
tail-calls (jumps to another function): otherwise the upper halves stay "in use" and the next SSE (non-VEX)
instruction pays for them. On the Zen 3 VM of issue 14 that made the canonical text check after each batch
item's Base64, with the function around it, take about three times as long (by perf's samples): gcc 12 -O3
turned b64_avx2's final `return b64_table(...)` into a jump without the VZEROUPPER it puts before calls and
returns.

For each function that names a YMM or ZMM register, the instructions are walked from its entry with the
upper state clean, along every branch (a function's .cold part is followed as part of it): an instruction
naming %ymm or %zmm leaves the state in use, VZEROUPPER and VZEROALL clean it, and a return, a call, a jump
to another function found with the state possibly in use is reported with its address (and so is any
indirect jump, which the walk cannot follow).
The disassembly is objdump's (binutils; $OBJDUMP when set). Exits 1 on any finding, 2 when a library has no disassembly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

_FUNCTION = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_INSTRUCTION = re.compile(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$")
_DIRECT_TARGET = re.compile(r"^([0-9a-f]+) <([^>+]+)(?:\+0x[0-9a-f]+)?>")
_VECTOR_UPPER = re.compile(r"%[yz]mm\d")


@dataclass(frozen=True)
class Instruction:
    address: int
    function: str
    mnemonic: str
    operands: str


def objdump_listing(path: str) -> str:
    """objdump's listing of path's executable sections ($OBJDUMP, else objdump)."""
    objdump = os.environ.get("OBJDUMP") or "objdump"
    return subprocess.run([objdump, "-d", "-w", "--no-show-raw-insn", path], check=True, capture_output=True,
                          text=True).stdout


def parse(text: str) -> list[Instruction]:
    """The instructions of an objdump listing, in address order."""
    function, out = "", []
    for line in text.splitlines():
        if (m := _FUNCTION.match(line)) is not None:
            function = m.group(2)
        elif (m := _INSTRUCTION.match(line)) is not None and function:
            operands = m.group(3).split("#")[0].strip()  # objdump's comment (a rip-relative address) is not one
            out.append(Instruction(int(m.group(1), 16), function, m.group(2), operands))
    return out


def _base(function: str) -> str:
    """The function a part belongs to: foo for foo.cold, foo.cold.1, foo.part.0.cold (gcc's split-off code)."""
    return function.split(".cold")[0]


def findings(instructions: list[Instruction]) -> list[str]:
    """Each exit (return, call, jump out) that a path reaches with the upper halves possibly in use."""
    at = {ins.address: i for i, ins in enumerate(instructions)}
    vector_functions = {_base(ins.function) for ins in instructions if _VECTOR_UPPER.search(ins.operands)}
    entries = [i for i, ins in enumerate(instructions)
               if ins.function in vector_functions and (i == 0 or instructions[i - 1].function != ins.function)]
    reported: list[str] = []
    seen: set[tuple[int, bool]] = set()
    work = [(i, False) for i in entries]
    while work:
        i, dirty = work.pop()
        if (i, dirty) in seen:
            continue
        seen.add((i, dirty))
        ins = instructions[i]
        if ins.mnemonic in ("vzeroupper", "vzeroall"):
            dirty = False
        elif _VECTOR_UPPER.search(ins.operands):
            dirty = True
        mnemonic = ins.mnemonic.removeprefix("bnd ").removeprefix("notrack ")
        successors: list[int] = []
        exit_kind = ""
        if mnemonic.startswith("ret"):
            exit_kind = "returns"
        elif mnemonic.startswith("call"):
            exit_kind = "calls " + ins.operands
            successors.append(i + 1)  # the callee returns with the upper halves clean (this check, for ours)
        elif mnemonic.startswith("jmp") and ins.operands.startswith("*"):
            reported.append(f"{ins.function} at {ins.address:#x} jumps to {ins.operands}, which this check cannot"
                            " follow")
        elif mnemonic.startswith("j"):
            target = _DIRECT_TARGET.match(ins.operands)
            within = (target is not None and int(target.group(1), 16) in at
                      and _base(instructions[at[int(target.group(1), 16)]].function) == _base(ins.function))
            if within:
                assert target is not None
                successors.append(at[int(target.group(1), 16)])
            else:
                exit_kind = "jumps to " + ins.operands
            if not mnemonic.startswith("jmp"):
                successors.append(i + 1)  # a conditional jump also falls through
        elif mnemonic in ("ud2", "hlt", "int3"):
            pass
        else:
            successors.append(i + 1)
        if exit_kind and dirty:
            reported.append(f"{ins.function} at {ins.address:#x} {exit_kind} with the upper halves in use")
        for j in successors:
            if j < len(instructions) and _base(instructions[j].function) == _base(ins.function):
                work.append((j, dirty))
    return sorted(set(reported))


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        instructions = parse(objdump_listing(path))
        if not instructions:
            print(f"{path}: no disassembly", file=sys.stderr)
            return 2
        found = findings(instructions)
        functions = len({_base(ins.function) for ins in instructions if _VECTOR_UPPER.search(ins.operands)})
        for line in found:
            print(f"{path}: {line}")
        print(f"{path}: {functions} functions use YMM/ZMM registers, {len(found)} exits with the upper halves in use")
        status = status or (1 if found else 0)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
