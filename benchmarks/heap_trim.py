"""Batches against glibc's heap trimming: seal_many with glibc's default malloc settings, and in a process tuned
to keep the memory it frees.

    python benchmarks/heap_trim.py [--pairs 6] [--rounds 7] [--case NAME ...] [--tunables TUNABLES]

A batch's requests are bytes objects of their own from 1 KiB payloads up (3.3 KB each at 1 KiB, 49 KB at 16 KiB:
plaintext, signature and the hex body), which the C allocator takes from the top of the heap. When the batch is
dropped that memory is free again, and glibc gives what exceeds its trim threshold (128 KiB) back to the kernel: the
next batch takes those pages again, each a page fault and a page the kernel zeroes. A single seal frees less than
that at once and does not fault. glibc raises the threshold itself once the process frees a block of 128 KiB or
more that it had mapped (to twice that block), so whether a batch faults depends on what the process did before:
after a 1 MiB string was freed, seal_many of 1 KiB payloads stopped faulting, while a batch of 16 KiB ones (12.5 MB)
still did. pasarela leaves the allocator of the process alone (it is the application's); GLIBC_TUNABLES at the
start of the process, or mallopt, keeps the memory.

The tuned process raises the trim threshold and the mmap threshold together: the trim threshold alone also stops
glibc from raising its mmap threshold, and allocations from 128 KiB up (a 1 MiB payload's buffers) are then mapped
afresh on every call, which made seal of 1 MiB about 1.5x slower here.

Each case runs in processes of its own, which make nothing but the case's objects (see above: what else a process
frees moves the threshold). Each pair runs it in one child process per setting, in alternating order (the machine's
speed swings between runs); each child reports the median of its timings and the page faults per call. Printed:
medians over the pairs, and the tuned process's time over the default one's, taken within each pair.
Linux with glibc only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

TUNED = "glibc.malloc.trim_threshold=67108864:glibc.malloc.mmap_threshold=33554432"
"""Keep up to 64 MiB free at the heap's top (a batch of 256 requests of 16 KiB payloads is 12.5 MB), and serve
allocations below 32 MiB (glibc's largest mmap threshold) from the heap."""

BATCH = 256
CASES = ["seal_many 256 B", "seal_many 1 KiB", "seal_many 256 B, then 1 KiB", "seal_many 16 KiB", "seal 1 MiB",
         "seal_many 1 MiB (8)"]


def _case(name: str) -> tuple[Callable[[], object], int, int]:
    """The case's (call, requests per call, calls per timing)."""
    import pasarela
    from payloads import payload_of_size
    from report import BUSINESS_CODE, SERIAL, TIMESTAMP

    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)

    def many(*sizes: int) -> Callable[[], object]:
        batches = [[payload_of_size(size)] * BATCH for size in sizes]
        return lambda: [terminal.seal_many(batch, timestamp=TIMESTAMP) for batch in batches]

    def large() -> dict[str, str]:
        return {"ref": "x" * (1 << 20)}

    # only the case's own objects are made (what else the process frees moves glibc's thresholds)
    if name == "seal 1 MiB":
        payload = large()
        return lambda: terminal.seal(payload, timestamp=TIMESTAMP), 1, 8
    if name == "seal_many 1 MiB (8)":
        batch = [large()] * 8
        return lambda: terminal.seal_many(batch, timestamp=TIMESTAMP), 8, 1
    sizes = {"seal_many 256 B": (256,), "seal_many 1 KiB": (1024,), "seal_many 256 B, then 1 KiB": (256, 1024),
             "seal_many 16 KiB": (16384,)}[name]
    return many(*sizes), BATCH * len(sizes), {256: 20, 1024: 8, 16384: 2}[max(sizes)]


def child(name: str, rounds: int) -> None:
    """Prints [median ns per request, median page faults per call] of the case as JSON."""
    import resource  # (POSIX)

    call, requests, calls = _case(name)
    for _ in range(3):  # warm up: the keys derived, the workspace grown (on the cffi path a later call can still
        call()  # grow it: where the IV pool's refills cut a batch into chunks moves from call to call)
    times: list[float] = []
    faults: list[float] = []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter_ns()
        for _ in range(calls):
            call()
        times.append((time.perf_counter_ns() - start) / (calls * requests))
        faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls)
    print(json.dumps([statistics.median(times), statistics.median(faults)]))


def run_child(name: str, tunables: str | None, rounds: int) -> list[float]:
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    if tunables is not None:
        env["GLIBC_TUNABLES"] = tunables
    out = subprocess.run([sys.executable, __file__, "--child", name, "--rounds", str(rounds)], env=env, check=True,
                         capture_output=True, text=True).stdout
    result: list[float] = json.loads(out)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=7, help="timings in each child")
    parser.add_argument("--tunables", default=TUNED, help="GLIBC_TUNABLES of the tuned process")
    parser.add_argument("--case", action="append", choices=CASES, help="measure only these (default: all)")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.rounds)
        return 0
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        print("heap_trim.py measures glibc's allocator: this is not Linux with glibc")
        return 0
    cases = args.case or CASES
    default: dict[str, list[list[float]]] = {name: [] for name in cases}
    tuned: dict[str, list[list[float]]] = {name: [] for name in cases}
    for pair in range(args.pairs):
        print(f"pair {pair + 1}/{args.pairs}", file=sys.stderr, flush=True)
        for name in cases:
            for setting in ((None, args.tunables) if pair % 2 == 0 else (args.tunables, None)):
                (default if setting is None else tuned)[name].append(run_child(name, setting, args.rounds))
    print(f"GLIBC_TUNABLES={args.tunables}; {args.pairs} pairs of processes, medians\n")
    print("| | default: ns per request | faults per call | tuned: ns per request | faults per call | tuned / default |")
    print("|---|---|---|---|---|---|")
    for name in cases:
        d_ns, d_faults = (statistics.median(run[k] for run in default[name]) for k in (0, 1))
        t_ns, t_faults = (statistics.median(run[k] for run in tuned[name]) for k in (0, 1))
        ratio = statistics.median(t[0] / d[0] for d, t in zip(default[name], tuned[name]))
        print(f"| {name} | {d_ns:,.0f} | {d_faults:,.0f} | {t_ns:,.0f} | {t_faults:,.0f} | {ratio:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
