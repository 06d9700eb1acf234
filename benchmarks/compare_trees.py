"""Before/after: seal, seal_many and open of two source trees, measured alternately in one run.

    python benchmarks/compare_trees.py BEFORE_DIR AFTER_DIR [--rounds 3]

Each round runs this script once per tree in a child process (PYTHONPATH=<tree>/python, or the installed
pasarela when the tree has no built module), then the primitives' floor (`openssl speed`, report.py);
prints a Markdown table of medians and, per tree, ratios taken within each round (median over rounds).
Sizes: 64 B, 256 B, 1 KiB, 16 KiB and 1 MiB; batches of 256, 64 and 8 requests. "seal, kept": seal() in a loop
over the batch, keeping the requests (seal alone drops each request before the next).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

SIZES = [64, 256, 1024, 16384, 1 << 20]
TIMESTAMP = 1763812800


def _payload(size: int) -> dict[str, Any]:
    from pasarela import canonical_json
    from payloads import payload_of_size

    if size <= 16384:
        return payload_of_size(size)
    payload = payload_of_size(16384)
    payload["ref"] += "x" * (size - len(canonical_json(payload)))
    return payload


def _calls(terminal: Any, size: int) -> dict[str, tuple[Callable[[], object], int]]:
    """operation -> (call, requests per call)."""
    payload = _payload(size)
    batch = [payload] * (256 if size <= 1024 else 64 if size <= 16384 else 8)
    sealed = terminal.seal(payload, timestamp=TIMESTAMP)
    headers, body = sealed.headers, sealed.body
    return {"seal": (lambda: terminal.seal(payload), 1),
            # what a caller without seal_many writes: a loop that keeps its requests (as a batch's caller does;
            # a request of 1 MiB is 3 MiB: keeping 8 of them costs page faults that dropping each does not)
            "seal, kept": (lambda: [terminal.seal(p, timestamp=TIMESTAMP) for p in batch], len(batch)),
            "seal_many": (lambda: terminal.seal_many(batch, timestamp=TIMESTAMP), len(batch)),
            "open": (lambda: terminal.open("POST", headers, body, now=TIMESTAMP), 1)}


def child() -> None:
    """Measures the pasarela this interpreter imports; prints {size: {operation: ns per request}}."""
    import pasarela
    from gate import _calibrated, _ns_per_request

    terminal = pasarela.Terminal("bc-7f3a1c2e9d", "SN-0042")
    out = {size: {name: _ns_per_request(call, _calibrated(call, 0.2), items)
                  for name, (call, items) in _calls(terminal, size).items()} for size in SIZES}
    print(json.dumps(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from report import primitives_sum_ns

    trees = {f"before ({args.before})": args.before, f"after ({args.after})": args.after}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    floor: list[dict[str, float]] = []
    for r in range(args.rounds):
        for name, tree in trees.items():
            env = dict(os.environ)
            if list((tree / "python" / "pasarela").glob("_native*")):
                env["PYTHONPATH"] = str(tree / "python")
            result = subprocess.run([sys.executable, __file__, "--child"], cwd=tree, env=env, capture_output=True,
                                    text=True, check=True)
            runs[name].append(json.loads(result.stdout))
        floor.append({str(size): primitives_sum_ns(size) for size in SIZES})
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    sizes = [str(size) for size in SIZES]
    median = statistics.median
    print("| ns per request (median) | " + " | ".join(f"{size:,} B" for size in SIZES) + " |")
    print("|---|" + "---|" * len(SIZES))
    for name in trees:
        for op in ("seal", "seal, kept", "seal_many", "open"):
            cells = [median(x[s][op] for x in runs[name]) for s in sizes]
            print(f"| {op}, {name} | " + " | ".join(f"{c:,.0f}" for c in cells) + " |")
    print("| primitives' floor (openssl speed) | " + " | ".join(f"{median(f[s] for f in floor):,.0f}" for s in sizes)
          + " |")
    for name in trees:
        for label, top, bottom in (("seal_many / floor", "seal_many", None), ("seal_many / seal", "seal_many", "seal"),
                                   ("seal_many / seal, kept", "seal_many", "seal, kept"),
                                   ("seal / floor", "seal", None), ("open / seal", "open", "seal")):
            cells = [median(x[s][top] / (x[s][bottom] if bottom else f[s]) for x, f in zip(runs[name], floor))
                     for s in sizes]
            print(f"| {label}, {name} | " + " | ".join(f"{c:.2f}x" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        child()
    else:
        sys.exit(main())
