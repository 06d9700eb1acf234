"""Threads (issue 42, goal 3): requests per second with 2 threads against 1 thread, in the same run.

    python benchmarks/threads.py [--rounds 7] [--seconds 0.2] [--sizes 256,1024,16384] [--calls seal,open]

For seal, seal_many (per request), open and open_bytes, at each size and for both shapes of benchmarks/payloads.py
(string-heavy, items-heavy): one thread makes the calls for about --seconds, then two threads each make as many at
once (started together by a barrier); the ratio of their requests per second is taken within each round, the order
of the two alternating from round to round, and its median over --rounds is printed with its range. 2.00x is the
most two cores can give; 1.00x means the second thread bought nothing. On a machine where other work runs the
ratios are distorted (two threads need two idle cores): run it on a quiet one.

Two controls that never touch pasarela go through the same harness (shape "control"): python, a pure-Python loop of
size / 16 additions, which never releases the GIL: what two threads taking turns cost CPython itself, the bound of
"never slower than one thread" for a call that keeps the GIL; and sha512, hashlib.sha512 of size bytes, which
CPython releases the GIL around from 2,048 bytes (its own policy, for comparison).

--gil-share prints instead s, the share of each call that holds the GIL, and the bound it sets: s = 1 - (the time
pasarela._fastcall let the GIL go during the calls, its released_ns(), with the GIL released around every C call) /
(their whole time), single-threaded, on each call's own path (seal_many's chunks and the first item it seals alone
included), median of 5; with a share s under the GIL, two threads give at most 1 / (s + (1 - s) / 2) (Amdahl). It
also prints the share of a large open under the GIL as pasarela._fastcall learns it from the calls it times (the
one its release is decided on), after 32 opens of each payload.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pasarela
from payloads import SHAPES

BUSINESS_CODE, SERIAL, TIMESTAMP = "bc-threads", "SN-THREADS", 1764072000
BATCH = 16
OPEN_KEEP_SHARE = 0.5  # csrc/cpython/fastcall.c's: a large open keeps the GIL from this learned share on
CONTROLS = ["python", "sha512"]
CALLS = ["seal", "seal_many", "open", "open_bytes", *CONTROLS]
SIZES = [256, 1024, 16384]

Call = tuple[Callable[[], object], int]  # (the call, requests per call)


def calls(size: int, shape: str, terminal: pasarela.Terminal) -> dict[str, Call]:
    """name -> (call, requests per call) for a payload of that size and shape."""
    payload = SHAPES[shape](size)
    batch = [payload] * BATCH
    sealed = terminal.seal(payload, timestamp=TIMESTAMP)
    headers, body = dict(sealed.headers), sealed.body or b""
    return {
        "seal": (lambda: terminal.seal(payload, timestamp=TIMESTAMP), 1),
        "seal_many": (lambda: terminal.seal_many(batch, timestamp=TIMESTAMP), BATCH),
        "open": (lambda: terminal.open("POST", headers, body, now=TIMESTAMP), 1),
        "open_bytes": (lambda: terminal.open_bytes("POST", headers, body, now=TIMESTAMP), 1),
    }


def controls(size: int) -> dict[str, Call]:
    """name -> (call, 1) for the controls at that size (module docstring)."""
    data, n = bytes(size), size // 16

    def python() -> int:
        total = 0
        for i in range(n):
            total += i
        return total

    return {"python": (python, 1), "sha512": (lambda: hashlib.sha512(data).digest(), 1)}


def _loop(call: Callable[[], object], number: int) -> None:
    for _ in range(number):
        call()


def requests_per_second(call: Call, number: int, threads: int) -> float:
    """Requests per second of `threads` threads each making `number` calls at once, from a common start."""
    function, per_call = call
    barrier = threading.Barrier(threads + 1)

    def worker() -> None:
        barrier.wait()
        _loop(function, number)

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for worker_thread in workers:
        worker_thread.start()
    barrier.wait()
    start = time.perf_counter()
    for worker_thread in workers:
        worker_thread.join()
    return threads * number * per_call / (time.perf_counter() - start)


def calibrated(call: Call, seconds: float) -> int:
    """Calls one thread makes in about `seconds`."""
    function = call[0]
    number = 1
    while True:
        start = time.perf_counter()
        _loop(function, number)
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 4 or number >= 1 << 22:
            return max(1, int(number * seconds / elapsed))
        number *= 2


def ratios(names: list[str], sizes: list[int], rounds: int, seconds: float) -> dict[tuple[str, str, int], list[float]]:
    """(call, shape, size) -> the 2-thread / 1-thread ratio of each round, the configurations interleaved within a
    round and the order of 1 and 2 threads alternating between rounds."""
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    table = {(name, shape, size): call for shape in SHAPES for size in sizes
             for name, call in calls(size, shape, terminal).items() if name in names}
    table.update({(name, "control", size): call for size in sizes for name, call in controls(size).items()
                  if name in names})
    numbers = {key: calibrated(call, seconds) for key, call in table.items()}
    out: dict[tuple[str, str, int], list[float]] = {key: [] for key in table}
    for r in range(rounds):
        for key, call in table.items():
            order = (1, 2) if r % 2 == 0 else (2, 1)
            rps = {threads: requests_per_second(call, numbers[key], threads) for threads in order}
            out[key].append(rps[2] / rps[1])
        print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return out


def markdown(results: dict[tuple[str, str, int], list[float]], sizes: list[int], command: str) -> str:
    lines = [f"`{command}`: requests per second of 2 threads / 1 thread (median over rounds, [min-max])", "",
             "| call | shape | " + " | ".join(f"{size:,} B" for size in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    keys = sorted({(name, shape) for name, shape, _ in results}, key=lambda k: (CALLS.index(k[0]), k[1]))
    for name, shape in keys:
        cells = []
        for size in sizes:
            values = results[name, shape, size]
            cells.append(f"{statistics.median(values):.2f}x [{min(values):.2f}-{max(values):.2f}]")
        lines.append(f"| {name} | {shape} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def gil_shares(sizes: list[int], seconds: float, command: str) -> str:
    """The --gil-share table (module docstring)."""
    from pasarela import _fastcall

    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    lines = [f"`{command}`: share s of a call under the GIL (1 - time with the GIL released / whole call) and "
             "Amdahl's bound 1 / (s + (1 - s) / 2) on 2 threads", "",
             "| call | shape | " + " | ".join(f"{size:,} B" for size in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    rows: dict[tuple[str, str], list[str]] = {}
    learned: dict[str, list[str]] = {}
    previous = _fastcall.set_gil_release_bytes(0)  # every C call released: what each would keep without its C work
    try:
        for shape in SHAPES:
            for size in sizes:
                table = calls(size, shape, terminal)
                for name in ("seal", "seal_many", "open", "open_bytes"):
                    share = _share_under_gil(table[name][0], seconds)
                    rows.setdefault((name, shape), []).append(f"s = {share:.2f}, {1 / (share + (1 - share) / 2):.2f}x")
                _fastcall.set_gil_release_bytes(previous)
                learned.setdefault(shape, []).append(_learned_open_share(table["open"][0]) if size >= previous
                                                     else "none learned: GIL kept (size)")
                _fastcall.set_gil_release_bytes(0)
    finally:
        _fastcall.set_gil_release_bytes(previous)
    lines += [f"| {name} | {shape} | " + " | ".join(cells) + " |" for (name, shape), cells in rows.items()]
    lines += [f"| open, as learned | {shape} | " + " | ".join(cells) + " |" for shape, cells in learned.items()]
    return "\n".join(lines) + "\n"


def _share_under_gil(call: Callable[[], object], seconds: float) -> float:
    """1 - the time pasarela._fastcall let the GIL go during the calls (released_ns) / their time, single-threaded,
    the median of 5 runs of about `seconds` (open's learned share held at 0, so that it releases the GIL too)."""
    from pasarela import _fastcall

    def released_call() -> object:
        _fastcall.set_open_gil_share(0.0)
        return call()

    number = calibrated((released_call, 1), seconds)
    shares = []
    for _ in range(5):
        released, start = _fastcall.released_ns(), time.perf_counter_ns()
        _loop(released_call, number)
        shares.append(1 - (_fastcall.released_ns() - released) / (time.perf_counter_ns() - start))
    return max(0.0, statistics.median(shares))


def _learned_open_share(open_call: Callable[[], object]) -> str:
    """The share of open under the GIL that pasarela._fastcall decides its release on, after 32 calls from 0 (only
    opens of release_bytes or more are timed and learned from)."""
    from pasarela import _fastcall

    _fastcall.set_open_gil_share(0.0)
    for _ in range(32):
        open_call()
    share = _fastcall.open_gil_share()
    return f"s = {share:.2f}, {'GIL kept' if share >= OPEN_KEEP_SHARE else 'released'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.2, help="one thread's time per measurement")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--calls", default=",".join(CALLS))
    parser.add_argument("--gil-share", action="store_true", help="the share of each call under the GIL instead")
    parser.add_argument("--release-bytes", type=int, default=None,
                        help="release the GIL around C work on at least this many bytes (0: always; default: the "
                             "C core's RELEASE_BYTES; pasarela._fastcall only, cffi releases it around every call)")
    args = parser.parse_args(argv)
    if args.release_bytes is not None:
        from pasarela import _fastcall

        _fastcall.set_gil_release_bytes(args.release_bytes)
    sizes = [int(size) for size in args.sizes.split(",")]
    names = [name for name in args.calls.split(",") if name]
    unknown = set(names) - set(CALLS)
    if unknown:
        parser.error(f"unknown calls: {', '.join(sorted(unknown))} (known: {', '.join(CALLS)})")
    command = " ".join(["python benchmarks/threads.py", *(argv if argv is not None else sys.argv[1:])])
    if args.gil_share:
        print(gil_shares(sizes, args.seconds, command))
        return 0
    print(markdown(ratios(names, sizes, args.rounds, args.seconds), sizes, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
