"""The two policies for 512-bit vectors in short work on this CPU (PASARELA_CPU_AVX512_SHORT, csrc/pasarela.h).

    python benchmarks/avx512_short.py [--rounds 7]

On an AVX-512 CPU, Base64 and the JSON block check of one request can run on 512-bit or on 256-bit vectors; the C
core takes 512 bits except on Intel's CPUs, where a few 512-bit instructions made the whole request slower (its
Python included: the core's clock after them). This measures both policies in one process, one terminal each
whose credentials carry the CPU bits with and without PASARELA_CPU_AVX512_SHORT, interleaved (each policy first
in half the rounds): seal, open and
open_bytes of one request at 248 B, 1 KiB and 16 KiB, and seal_many of 256 at 256 B, 1 KiB and 16 KiB. Prints the
fastest time of each and, per row, the median (min-max) over rounds of AVX2's time over AVX-512's taken within
each round. Prints why it measures nothing on a CPU without AVX-512.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "python"), str(Path(__file__).resolve().parent)]

import pasarela  # noqa: E402
from pasarela import _binding  # noqa: E402
from payloads import payload_of_size  # noqa: E402
from report import BUSINESS_CODE, SERIAL  # noqa: E402

POLICIES = ["avx2", "avx512"]  # short work on 256-bit vectors (Intel's policy), on 512-bit ones (the others')


def terminal(short: bool) -> pasarela.Terminal:
    """A terminal whose credentials carry this CPU's bits, with PASARELA_CPU_AVX512_SHORT set or cleared."""
    made = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    struct = made._native.struct
    bit = _binding.lib.PASARELA_CPU_AVX512_SHORT
    struct.cpu = (struct.cpu | bit) if short else (struct.cpu & ~bit)
    return made


def cases(terminals: dict[str, pasarela.Terminal]) -> list[tuple[str, int, dict[str, Callable[[], object]]]]:
    """(row, calls per timing, one call per policy)."""
    rows: list[tuple[str, int, dict[str, Callable[[], object]]]] = []
    for size, calls in ((248, 3000), (1024, 1500), (16384, 150)):
        payload = payload_of_size(size)
        sealed = terminals["avx2"].seal(payload)
        rows += [(f"{kind} {size:,} B", calls, {name: one_request(kind, t, payload, sealed.headers, sealed.body or b"")
                                                for name, t in terminals.items()})
                 for kind in ("seal", "open", "open_bytes")]
    for size, calls in ((256, 8), (1024, 4), (16384, 1)):
        batch = [payload_of_size(size)] * 256
        rows.append((f"seal_many 256 x {size:,} B", calls,
                     {name: functools.partial(t.seal_many, batch) for name, t in terminals.items()}))
    return rows


def one_request(kind: str, made: pasarela.Terminal, payload: dict[str, object], headers: dict[str, str],
                body: bytes) -> Callable[[], object]:
    if kind == "seal":
        return functools.partial(made.seal, payload)
    return functools.partial(made.open if kind == "open" else made.open_bytes, "POST", headers, body)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    if not _binding.CPU_FEATURES & _binding.lib.PASARELA_CPU_AVX512:
        print("avx512_short.py: this CPU has no AVX-512 (or PASARELA_NO_AVX512=1): one policy only, nothing to compare")
        return 0
    terminals = {name: terminal(name == "avx512") for name in POLICIES}
    rows = cases(terminals)
    times: dict[tuple[str, str], list[float]] = {}
    for round_number in range(args.rounds):
        for row, calls, policy_calls in rows:
            for name in POLICIES if round_number % 2 == 0 else POLICIES[::-1]:  # each first in half the rounds
                call = policy_calls[name]
                start = time.perf_counter_ns()
                for _ in range(calls):
                    call()
                times.setdefault((row, name), []).append((time.perf_counter_ns() - start) / calls / 1000)
    detected = "sets" if _binding.lib.pasarela_cpu_features() & _binding.lib.PASARELA_CPU_AVX512_SHORT else "clears"
    print(f"This CPU {detected} PASARELA_CPU_AVX512_SHORT (the C core's default); {args.rounds} interleaved rounds\n")
    print("| call | AVX2 short work, us | AVX-512 short work, us | AVX2 / AVX-512 (median, min-max) |")
    print("|---|---|---|---|")
    for row, _, _ in rows:
        avx2, avx512 = times[(row, "avx2")], times[(row, "avx512")]
        ratios = [a / b for a, b in zip(avx2, avx512)]
        print(f"| {row} | {min(avx2):.2f} | {min(avx512):.2f} | {statistics.median(ratios):.3f}x "
              f"({min(ratios):.3f}-{max(ratios):.3f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
