"""Is padding validity visible in the time a refusal takes? The CBC padding-oracle forgery timed through every public
entry, each with its verdict (a developer's security check; the benchmark gate runs the same measurement).

    python scripts/padding_oracle.py [--short] [--rounds N] [--entry NAME ...]

The measurement, its probes, entries and bounds are benchmarks/padding_timing.py's (the instrument benchmarks/gate.py
holds to those bounds): the ratio of the bad padding's median time to the valid one's within 1.05 either way, and
the bad padding the slower in 25% to 75% of the interleaved rounds. Prints a line per entry and size; exits 1 when
any is out of bounds. Times depend on the machine: only the ratios taken within the run are compared.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))  # the instrument

import padding_timing
import pasarela


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true", help="150 rounds (what the gate runs; about 5 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 400, --short 150)")
    parser.add_argument("--entry", action="append", choices=padding_timing.ENTRIES,
                        help="only this entry (repeatable)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (150 if args.short else 400)
    print(f"pasarela {pasarela.__version__} from {Path(pasarela.__file__).parent}: the padding-oracle forgery, "
          f"{rounds} interleaved rounds; bounds: ratio within {padding_timing.MAX_RATIO}, bad slower in "
          f"{padding_timing.SHARE_BOUNDS[0]:.0%}-{padding_timing.SHARE_BOUNDS[1]:.0%} of rounds")
    results = padding_timing.run(tuple(args.entry or padding_timing.ENTRIES), padding_timing.SIZES, rounds)
    return 0 if all(result.ok() for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
