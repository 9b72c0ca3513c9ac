"""A study's exhaustive code-grid search: one dict per code point against the grid as arrays.

``solve`` measures a combination's whole code grid at each corner through ``measure_grid``; a model
without it (here the analytic model behind a wrapper that hides it, ``tests/study/test_batched.py``'s
``PerPoint``) is measured one dict per point. Both give the same rows (that test); this times them:
thread CPU a combination, interleaved rounds, one process, the combinations of
docs/study-screen-100k.toml (every 250th, 256 codes x 2 corners each).

Run:  nice python benchmarks/bench_study_grid.py [--rounds 3] [--combos 400]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--combos", type=int, default=400)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "study"))
    from test_batched import PerPoint

    from eqtune.study.compute import solve
    from eqtune.study.spec import load_spec
    from eqtune.study.synthetic import SyntheticModel

    combos = load_spec(ROOT / "docs" / "study-screen-100k.toml").combinations[::250][: args.combos]
    cpu = {"one dict per point": 0.0, "grid as arrays": 0.0}
    load0 = os.getloadavg()[0]
    for _round in range(args.rounds):
        for mode in cpu:
            t = time.thread_time()
            for c in combos:
                m = SyntheticModel(c)
                solve(c, PerPoint(m) if mode == "one dict per point" else m)
            cpu[mode] += time.thread_time() - t
    n = args.rounds * len(combos)
    for mode, v in cpu.items():
        print(f"{mode}: {1000 * v / n:.2f} ms CPU a combination")
    print(f"ratio {cpu['one dict per point'] / cpu['grid as arrays']:.2f}x; {n} combinations a mode, "
          f"{args.rounds} interleaved rounds; load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
