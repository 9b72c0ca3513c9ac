"""The full hostile-input fuzz: deep nesting, huge integers, thousands of segments, NUL bytes and long
names, wrong-format keys and byte damage, across every reader and command (tests/fuzz/hostile.py).

    nice -n 10 python benchmarks/fuzz_hostile.py --count 5000 [--seed 34]

Prints the per-kind table (inputs, accepted, refused with one line, tracebacks, hangs, seconds) and every
traceback or hang found; exit 1 if there is any. CI runs a 200-input subset (tests/fuzz/test_fuzz_hostile.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tests.fuzz.hostile import run, table  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=34)
    args = ap.parse_args()
    t0 = time.perf_counter()
    tallies = run(args.count, seed=args.seed, log=lambda s: print("  " + s, flush=True))
    print(table(tallies))
    print(f"seed {args.seed}, {args.count} inputs, {time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.1f}")
    return 1 if any(t.tracebacks or t.hangs for t in tallies.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
