"""Resident memory over many seals: python benchmarks/rss.py [count]  (prints RSS every 10 % of the run)."""

from __future__ import annotations

import resource
import sys

import pasarela


def rss_mib() -> float:
    with open("/proc/self/status") as status:  # current, not peak (Linux)
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(count: int) -> None:
    terminal = pasarela.Terminal("bc-7f3a1c2e9d", "SN-0042")
    payload = {"amount": 125.5, "currency": "COP", "ref": "ord-1", "items": [{"sku": "A-1", "qty": 2}]}
    batch = [payload] * 1000
    step = count // 10
    print(f"start: {rss_mib():.1f} MiB")
    for done in range(0, count, len(batch)):
        terminal.seal_many(batch)
        if (done + len(batch)) % step == 0:
            print(f"{done + len(batch):>10} seals: {rss_mib():.1f} MiB", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
