"""Duplicate-key check of the C canonicalizer on keys made to collide (issue 11, item 3).

Run: python3 benchmarks/json_colliding_keys.py [--doublings 13]

Times pasarela's C canonicalization of an object of 2**doublings distinct keys that all share one 32-bit
FNV-1a hash (csrc/fuzz/seeds.py makes them) against an object of as many random keys of the same length,
interleaved, and prints the medians and their ratio. json.c once grouped keys by that hash alone, so the
colliding object took quadratic time; now keys with one hash are ordered by their bytes. Not a test.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "csrc" / "fuzz"))

import seeds

from pasarela import _binding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--doublings", type=int, default=13)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    keys = seeds.fnv1a_colliding_keys(args.doublings)
    rng = random.Random(1)  # noqa: S311 - random key bytes for a timing baseline, not a secret
    texts = {
        "colliding": b"{" + b",".join(b'"' + key + b'":0' for key in keys) + b"}",
        "random": b"{" + b",".join(b'"' + bytes(rng.choice(seeds._ALNUM) for _ in key) + b'":0' for key in keys)
                  + b"}",
    }
    samples: dict[str, list[float]] = {name: [] for name in texts}
    for _ in range(args.rounds):
        for name, text in texts.items():
            start = time.perf_counter()
            canonical = _binding.canonicalize(text)
            samples[name].append(time.perf_counter() - start)
            assert canonical is not None and canonical.text == text  # distinct keys: accepted, unchanged
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{len(keys)} keys, {len(texts['colliding'])} bytes, pasarela from {Path(_binding.__file__).parent}")
    print(f"colliding keys {medians['colliding'] * 1e3:.2f} ms, random keys {medians['random'] * 1e3:.2f} ms, "
          f"ratio {medians['colliding'] / medians['random']:.2f}")


if __name__ == "__main__":
    main()
