"""What pasarela's OpenTelemetry instrumentation costs Terminal.seal and Terminal.open (issue 40).

Two worker processes: "api" has opentelemetry-api and no SDK configured (the API's no-op proxies), "sdk" has the
SDK's MeterProvider with an InMemoryMetricReader, collected after every measurement (as a scrape would). In each,
the same loop runs with the instrumentation off (Terminal's methods as they are before
``pasarela.terminal.counting`` wraps them, and ``pasarela._fastcall.set_counting(False)``: the very path taken when
opentelemetry is not installed, or PASARELA_OTEL=off) and on, one after the other in every round (who
goes first alternates), so each ratio compares two runs of the same process seconds apart. Two processes differ
by a few percent on this machine whatever they run (memory layout), more than the 2% to be measured: comparing
across processes would measure that.

    python3 benchmarks/otel_overhead.py [--rounds 5] [--pairs 40] [--calls 2000]

Off and on alternate in blocks of a few thousand calls (who goes first alternates too). Prints, for seal and open at
256 B and 1 KiB, each setting's lowest block time off and on (the least disturbed by other processes: the machine
is shared) and their ratio, and the median and quartiles of the per-pair ratios. The goals: api within 2% (x1.02),
sdk within 10%.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

SETTINGS = ("api", "sdk")
CASES = (("seal", 256), ("open", 256), ("seal", 1024), ("open", 1024), ("seal_text", 256), ("open_get", 256))
"""seal of a dict and open of a POST's bytes (the fast paths, counted by their C call), and two of the ways counted by
pasarela.terminal.counting's wrappers: seal of JSON text (bytes) and open of a GET (its data in the query)."""

WORKER = r"""
import json, sys, time
setting = sys.argv[1]
sys.path.insert(0, sys.argv[2])
reader = None
if setting == "sdk":
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
import pasarela._telemetry
from pasarela import Terminal, _fastcall
from payloads import payload_of_size
assert pasarela._telemetry.ENABLED, "opentelemetry-api is not installed"
assert pasarela._telemetry.FAST_PATHS_COUNTED, "pasarela._fastcall is not in use (PASARELA_NO_FASTCALL=1?)"
COUNTED = {name: method for name, method in vars(Terminal).items() if hasattr(method, "__wrapped__")}
assert COUNTED, "pasarela.terminal.counting installed nothing"


def counting(on):
    for name, method in COUNTED.items():
        setattr(Terminal, name, method if on else method.__wrapped__)
    _fastcall.set_counting(on)


terminal = Terminal("bench-business-code", "BENCH-0001")
payloads = {size: payload_of_size(size) for size in (256, 1024)}
sealed = {size: terminal.seal(payload) for size, payload in payloads.items()}
texts = {size: json.dumps(payload, separators=(",", ":")).encode() for size, payload in payloads.items()}
gets = {size: terminal.seal(payload, method="GET") for size, payload in payloads.items()}
perf = time.perf_counter_ns


def block(kind, size, calls):
    if kind.startswith("seal"):
        payload, seal = (texts if kind == "seal_text" else payloads)[size], terminal.seal
        start = perf()
        for _ in range(calls):
            seal(payload)
        return (perf() - start) / calls
    one = (gets if kind == "open_get" else sealed)[size]
    method, headers, body, params, now, opener = (one.method, one.headers, one.body, one.params, one.timestamp + 1.0,
                                                  terminal.open)
    start = perf()
    for _ in range(calls):
        opener(method, headers, body, params, now=now)
    return (perf() - start) / calls


for line in sys.stdin:
    kind, size, calls, pairs = line.split()
    size, calls, pairs = int(size), int(calls), int(pairs)
    times = {"off": [], "on": []}
    for pair in range(pairs):  # off and on alternate, who goes first too
        for state in ("off", "on") if pair % 2 else ("on", "off"):
            counting(state == "on")
            times[state].append(block(kind, size, calls))
    counting(True)
    if reader is not None:
        reader.get_metrics_data()  # a collection, as a scrape would make (outside the timed blocks)
    print(json.dumps(times), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    workers = {setting: subprocess.Popen([sys.executable, "-c", WORKER, setting, str(here)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True) for setting in SETTINGS}
    times: dict[tuple[str, int, str, str], list[float]] = {}
    try:
        for _ in range(args.rounds):
            for kind, size in CASES:
                for setting in SETTINGS:
                    worker = workers[setting]
                    assert worker.stdin is not None and worker.stdout is not None
                    worker.stdin.write(f"{kind} {size} {args.calls} {args.pairs}\n")
                    worker.stdin.flush()
                    for state, measured in json.loads(worker.stdout.readline()).items():
                        times.setdefault((kind, size, setting, state), []).extend(measured)
    finally:
        for worker in workers.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(30)
    print(f"{args.rounds} rounds of {args.pairs} off/on pairs of {args.calls} calls; ns per call (the lowest block: "
          "the least disturbed), off -> on, the ratio of the lowest, and the median and quartiles of the pairs' ratios")
    for kind, size in CASES:
        cells = [f"{kind} {size:>4} B:"]
        for setting in SETTINGS:
            off, on = times[(kind, size, setting, "off")], times[(kind, size, setting, "on")]
            ratios = sorted(b / a for a, b in zip(off, on))
            quartiles = statistics.quantiles(ratios, n=4)
            cells.append(f"{setting} {min(off):6.0f} -> {min(on):6.0f} x{min(on) / min(off):.3f} "
                         f"pairs x{statistics.median(ratios):.3f} [{quartiles[0]:.3f}, {quartiles[2]:.3f}]")
        print("  ".join(cells))


if __name__ == "__main__":
    main()
