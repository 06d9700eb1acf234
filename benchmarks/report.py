"""Speed report: ns per request for every implementation at every payload size, in one run.

    python benchmarks/report.py [--quick] [--plot benchmarks/report.png | --no-plot]

Prints the table of medians and the ratios the performance targets are stated in (against the naive
implementation, and against the primitives' own speed: `openssl speed -evp` for MD5 + SHA-512 over the
Base64 text + AES-256-CBC at the exact sizes one request needs, measured in the same run), measures
two-thread scaling of batch sealing, and writes a PNG plot (log scale). This machine is noisy: read
ratios, which are taken in the same run, rather than absolute numbers.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import timeit
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pasarela
from naive import naive_open, naive_seal
from pasarela import canonical_json, reference
from payloads import SIZES, payload_of_size

BUSINESS_CODE = "bc-7f3a1c2e9d"
SERIAL = "SN-0042"
TIMESTAMP = 1763812800
BATCH = 256


def _progress(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # a plain counter when tqdm is not installed
        class Counter:
            def __init__(self) -> None:
                self.done = 0

            def update(self, n: int = 1) -> None:
                self.done += n
                print(f"\r{self.done}/{total}", end="", file=sys.stderr, flush=True)

            def close(self) -> None:
                print(file=sys.stderr)

        return Counter()
    return tqdm(total=total, unit="measurement")


def median_ns(call: Callable[[], object], per_call_items: int, budget: float) -> float:
    """Median over repeats of the time per item, each repeat about budget/7 seconds long."""
    number = 1
    while True:
        elapsed = timeit.timeit(call, number=number)
        if elapsed > budget / 14 or number > 10**7:
            break
        number *= 2
    runs = [timeit.timeit(call, number=number) / number / per_call_items * 1e9 for _ in range(7)]
    return statistics.median(runs)


def openssl_rate(algorithm: str, size: int, processes: int = 1) -> float:
    """Bytes per second of `openssl speed -evp algorithm` on size-byte inputs, summed over processes."""
    multi = ["-multi", str(processes)] if processes > 1 else []
    result = subprocess.run(
        ["openssl", "speed", "-elapsed", "-mr", "-seconds", "1", *multi, "-evp", algorithm, "-bytes", str(size)],
        capture_output=True, text=True, check=True,
    )
    return float(re.findall(r"^\+F:\d+:[^:]+:([0-9.]+)", result.stdout, re.MULTILINE)[-1])


def openssl_ns(algorithm: str, size: int) -> float:
    """ns per operation of `openssl speed -evp algorithm` on size-byte inputs."""
    return size / openssl_rate(algorithm, size) * 1e9


def signed_base64_len(plaintext_size: int) -> int:
    """Bytes of the Base64 of the signed text (the plaintext with ,"key":"<encodedKey>", 65 bytes, before its final
    brace): what SHA-512 hashes for a request of that plaintext size, on both sides."""
    return 4 * -(-(plaintext_size + 65) // 3)


def primitives_sum_ns(plaintext_size: int) -> float:
    """MD5 of the key + SHA-512 of the Base64 of the signed text + AES-256-CBC of the padded plaintext."""
    key = len(BUSINESS_CODE) + len(SERIAL) + 16
    padded = (plaintext_size // 16 + 1) * 16
    return (openssl_ns("md5", max(key, 32)) + openssl_ns("sha512", signed_base64_len(plaintext_size))
            + openssl_ns("aes-256-cbc", padded))


Calls = dict[str, tuple[Callable[[], object], int]]


def _calls(size: int, terminal: pasarela.Terminal, others: list[pasarela.Terminal], ref: reference.Terminal) -> Calls:
    """name -> (call, requests per call) for one payload size."""
    payload = payload_of_size(size)
    assert len(canonical_json(payload)) == size
    iv = bytes(range(16))
    batch = [payload] * BATCH
    pairs = [(others[i % 4], payload) for i in range(BATCH)]
    text = canonical_json(payload)  # the payload given as JSON text (bytes)
    sealed = terminal.seal(payload, timestamp=TIMESTAMP)
    headers, body = sealed.headers, sealed.body or b""
    return {
        "naive seal": (lambda: naive_seal(BUSINESS_CODE, SERIAL, payload, TIMESTAMP, iv), 1),
        "reference seal": (lambda: ref.seal(payload, timestamp=TIMESTAMP, iv=iv), 1),
        "seal": (lambda: terminal.seal(payload), 1),
        "seal (bytes)": (lambda: terminal.seal(text), 1),
        "seal_many": (lambda: terminal.seal_many(batch, timestamp=TIMESTAMP), BATCH),
        "seal_batch": (lambda: pasarela.seal_batch(pairs, timestamp=TIMESTAMP), BATCH),
        "naive open": (lambda: naive_open(BUSINESS_CODE, SERIAL, headers, body), 1),
        "reference open": (lambda: ref.open("POST", headers, body, now=TIMESTAMP), 1),
        "open": (lambda: terminal.open("POST", headers, body, now=TIMESTAMP), 1),
    }


def measure(quick: bool) -> dict[str, dict[int, float]]:
    budget = 0.3 if quick else 1.5
    terminal = pasarela.Terminal(BUSINESS_CODE, SERIAL)
    others = [pasarela.Terminal(f"bc-{i}", f"SN-{i}") for i in range(4)]
    ref = reference.Terminal(BUSINESS_CODE, SERIAL)
    rows: dict[str, dict[int, float]] = {name: {} for name in (
        "naive seal", "reference seal", "seal", "seal (bytes)", "seal_many", "seal_batch", "primitives sum",
        "naive open", "reference open", "open")}
    progress = _progress(len(rows) * len(SIZES))
    for size in SIZES:
        calls = _calls(size, terminal, others, ref)
        for name, (call, items) in calls.items():
            rows[name][size] = median_ns(call, items, budget)
            progress.update()
        rows["primitives sum"][size] = primitives_sum_ns(size)
        progress.update()
    progress.close()
    return rows


def thread_scaling(size: int, seconds: float) -> float:
    """Throughput of seal_many with 2 threads over 1 thread (each thread its own terminal)."""
    payload = payload_of_size(size)

    def run(threads: int) -> float:
        stop = time.perf_counter() + seconds
        counts = [0] * threads

        def work(i: int) -> None:
            terminal = pasarela.Terminal(f"bc-{i}", f"SN-{i}")
            batch = [payload] * BATCH
            while time.perf_counter() < stop:
                terminal.seal_many(batch, timestamp=TIMESTAMP)
                counts[i] += BATCH

        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return sum(counts) / seconds

    return run(2) / run(1)


def plot(rows: dict[str, dict[int, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    for name, by_size in rows.items():
        axis.plot(list(by_size), list(by_size.values()), marker="o", label=name,
                  linestyle="--" if name == "primitives sum" else "-")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("payload (bytes of JSON.stringify output)")
    axis.set_ylabel("ns per request (median)")
    axis.set_title(f"pasarela {pasarela.__version__}: seal and open, per request")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="shorter measurements (a smoke run)")
    parser.add_argument("--plot", type=Path, default=Path(__file__).resolve().parent / "report.png")
    parser.add_argument("--no-plot", action="store_true", help="print the tables only (no matplotlib needed)")
    args = parser.parse_args(argv)
    if not args.no_plot:
        try:  # say so before minutes of measuring
            import matplotlib  # noqa: F401
        except ModuleNotFoundError:
            parser.error('the plot needs matplotlib: run scripts/setup (or pip install "pasarela[bench]"), '
                         "or pass --no-plot")
    rows = measure(args.quick)
    print(f"\nns per request (median), {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"{'':16}" + "".join(f"{size:>12}" for size in SIZES))
    for name, by_size in rows.items():
        print(f"{name:16}" + "".join(f"{by_size[size]:>12,.0f}" for size in SIZES))
    print("\nratios")
    ratios = {
        "naive seal / seal": ("naive seal", "seal"),
        "naive open / open": ("naive open", "open"),
        "seal / primitives": ("seal", "primitives sum"),
        "seal (bytes) / prim.": ("seal (bytes)", "primitives sum"),
        "seal_many / prim.": ("seal_many", "primitives sum"),
        "seal_batch / prim.": ("seal_batch", "primitives sum"),
    }
    for label, (top, bottom) in ratios.items():
        print(f"{label:20}" + "".join(f"{rows[top][size] / rows[bottom][size]:>12.2f}" for size in SIZES))
    for size in (256, 1024):
        print(f"2 threads / 1 thread, seal_many at {size} B: {thread_scaling(size, 1.0 if args.quick else 3.0):.2f}x")
    # what this machine's cores give at all: two openssl processes against one (no GIL, no Python)
    machine = openssl_rate("sha512", 16384, processes=2) / openssl_rate("sha512", 16384)
    print(f"2 processes / 1 process, openssl speed sha512 (the machine's own ceiling): {machine:.2f}x")
    if not args.no_plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
