"""Before/after: seal, seal_many and open of two source trees, measured alternately in one run.

    python scripts/compare_trees.py BEFORE_DIR AFTER_DIR [--rounds 3] [--sizes 64,256] [--only seal_many]

Each round runs this script once per tree in a child process (PYTHONPATH=<tree>/python, or the installed
pasarela when the tree has no built module), the trees' order swapped every other round, then the primitives'
floor (`openssl speed`, report.py); prints a Markdown table of medians, per tree the ratios taken within each
round, and after / before per operation: the median over rounds of the two trees' ratio in that round (the
measure of a change smaller than this machine's swings: use many short rounds, e.g. --rounds 100 --only
seal_many --sizes 64,256,1024; two copies of one tree gave 1.003-1.010x in 30 rounds).
Sizes: 64 B, 256 B, 1 KiB, 16 KiB and 1 MiB; batches of 256, 64 and 8 requests. "seal, kept": seal() in a loop
over the batch, keeping the requests (seal alone drops each request before the next). Payloads: payloads.py's
items-heavy shape, and for the ", string-heavy" operations its string-heavy one (open_bytes / seal of each shape: issue
42's goal 2). A developer's tool, not an instrument of the gate: it times with the gate's own calibrated loop and the
floor of report.py, imported from benchmarks/ (this checkout's, whichever trees it compares).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))  # gate, payloads, report

SIZES = [64, 256, 1024, 16384, 1 << 20]
OPERATIONS = ["seal", "seal, kept", "seal_many", "open", "open_bytes", "seal, string-heavy", "open_bytes, string-heavy"]
TIMESTAMP = 1763812800
HERE = Path(__file__).resolve()  # the child runs this file with the other tree as its working directory


def _payload(size: int, shape: str = "items-heavy") -> dict[str, Any]:
    from pasarela import canonical_json
    from payloads import SHAPES

    if size <= 16384:
        return SHAPES[shape](size)
    payload = SHAPES[shape](16384)
    payload["ref"] += "x" * (size - len(canonical_json(payload)))
    return payload


def _calls(terminal: Any, size: int) -> dict[str, tuple[Callable[[], object], int]]:
    """operation -> (call, requests per call)."""
    payload = _payload(size)
    batch = [payload] * (256 if size <= 1024 else 64 if size <= 16384 else 8)
    sealed = terminal.seal(payload, timestamp=TIMESTAMP)
    headers, body = sealed.headers, sealed.body
    strings = _payload(size, "string-heavy")
    strings_sealed = terminal.seal(strings, timestamp=TIMESTAMP)
    strings_headers, strings_body = strings_sealed.headers, strings_sealed.body  # (each access makes a new one)
    return {"seal": (lambda: terminal.seal(payload), 1),
            # what a caller without seal_many writes: a loop that keeps its requests (as a batch's caller does;
            # a request of 1 MiB is 3 MiB: keeping 8 of them costs page faults that dropping each does not)
            "seal, kept": (lambda: [terminal.seal(p, timestamp=TIMESTAMP) for p in batch], len(batch)),
            "seal_many": (lambda: terminal.seal_many(batch, timestamp=TIMESTAMP), len(batch)),
            "open": (lambda: terminal.open("POST", headers, body, now=TIMESTAMP), 1),
            "open_bytes": (lambda: terminal.open_bytes("POST", headers, body, now=TIMESTAMP), 1),
            # payloads.SHAPES' other shape: a few members, one a long string
            "seal, string-heavy": (lambda: terminal.seal(strings), 1),
            "open_bytes, string-heavy": (lambda: terminal.open_bytes("POST", strings_headers, strings_body,
                                                                     now=TIMESTAMP), 1)}


def child(sizes: list[int], operations: list[str]) -> None:
    """Measures the pasarela this interpreter imports; prints {size: {operation: ns per request}}."""
    import pasarela
    from gate import _calibrated, _ns_per_request

    terminal = pasarela.Terminal("bc-7f3a1c2e9d", "SN-0042")
    out = {size: {name: _ns_per_request(call, _calibrated(call, 0.2), items)
                  for name, (call, items) in _calls(terminal, size).items() if name in operations} for size in sizes}
    print(json.dumps(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=lambda text: [int(size) for size in text.split(",")], default=SIZES,
                        help="payload sizes in bytes, comma-separated (default: all five)")
    parser.add_argument("--only", choices=OPERATIONS, action="append",
                        help="measure only this operation (repeatable; default: all)")
    args = parser.parse_args()
    from report import primitives_sum_ns

    operations = args.only or OPERATIONS
    trees = {f"before ({args.before})": args.before, f"after ({args.after})": args.after}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    floor: list[dict[str, float]] = []
    for r in range(args.rounds):
        for name, tree in list(trees.items())[::1 if r % 2 == 0 else -1]:
            env = dict(os.environ)
            if list((tree / "python" / "pasarela").glob("_native*")):
                env["PYTHONPATH"] = str(tree / "python")
            result = subprocess.run([sys.executable, str(HERE), "--child", json.dumps([args.sizes, operations])],
                                    cwd=tree, env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(result.stdout))
        floor.append({str(size): primitives_sum_ns(size) for size in args.sizes})
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    sizes = [str(size) for size in args.sizes]
    median = statistics.median
    print("| ns per request (median) | " + " | ".join(f"{size:,} B" for size in args.sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name in trees:
        for op in operations:
            cells = [median(x[s][op] for x in runs[name]) for s in sizes]
            print(f"| {op}, {name} | " + " | ".join(f"{c:,.0f}" for c in cells) + " |")
    print("| primitives' floor (openssl speed) | " + " | ".join(f"{median(f[s] for f in floor):,.0f}" for s in sizes)
          + " |")
    for name in trees:
        for label, top, bottom in (("seal_many / floor", "seal_many", None), ("seal_many / seal", "seal_many", "seal"),
                                   ("seal_many / seal, kept", "seal_many", "seal, kept"),
                                   ("seal / floor", "seal", None), ("open / seal", "open", "seal"),
                                   ("open_bytes / seal", "open_bytes", "seal"),
                                   ("open_bytes / seal, string-heavy", "open_bytes, string-heavy",
                                    "seal, string-heavy")):
            if top in operations and (bottom is None or bottom in operations):
                cells = [median(x[s][top] / (x[s][bottom] if bottom else f[s]) for x, f in zip(runs[name], floor))
                         for s in sizes]
                print(f"| {label}, {name} | " + " | ".join(f"{c:.2f}x" for c in cells) + " |")
    before, after = runs.values()
    for op in operations:
        cells = [median(a[s][op] / b[s][op] for b, a in zip(before, after)) for s in sizes]
        print(f"| {op}, after / before (paired by round) | " + " | ".join(f"{c:.3f}x" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
