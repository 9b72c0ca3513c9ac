"""The watch against emulated fleets on a simulated clock: the shipped rehearsal scenario and seeded
variants of it, through the CMIS driver and the emulated modules' registers (eqtune.watch.rehearse).

    nice -n 10 python benchmarks/bench_watch_rehearsal.py [--cadences 60,10] [--hours 4] [--trials 5]
                                                          [--modules 8] [--no-shipped]

* **shipped**: ``planted-faults`` (32 modules x 8 lanes, eqtune/emulate/scenarios/) at each cadence;
* **trials**: the same five faults (x10 step after a 2 s flap at a random time 2-3 h in, between
  polls; 0.20 and 0.06 dB/C excess loss; a noisy-healthy and a marginal-stable lane) on random lanes
  of ``--modules``-module fleets, seeds 70000+ (never used while choosing the detector's settings,
  which were fixed on eqtune.watch.simulate fleets, seeds 1-20).

Per run: what was flagged and when against the deadline (step: within 2 polls of the first poll
after the flap and held to the end; thermal: before the end of the module's first swing after the
warm-up; noisy, marginal and every healthy lane: never), the lane-hours, and the CPU per poll of
the whole fleet (modules emulated in this process: the emulator's CPU is in the figure).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

import numpy as np

from eqtune.emulate.scenario import Fault, load_scenario
from eqtune.watch.rehearse import rehearse


def trial(base, seed: int, modules: int):
    r = np.random.default_rng(seed)
    picks = r.choice(modules * base.lanes, size=5, replace=False)
    where = [(int(p) // base.lanes + 1, int(p) % base.lanes + 1) for p in picks]
    at = float(r.uniform(2 * 3600, 3 * 3600))
    at = at + 7.0 if abs(at % 60.0) < 3.0 else at  # between polls at every cadence used here
    faults = (Fault("step", *where[0], at_s=at, factor=10.0, ber=1e-7),
              Fault("thermal", *where[1], excess_db_per_c=0.20), Fault("thermal", *where[2], excess_db_per_c=0.06),
              Fault("noisy", *where[3], ber=4e-9), Fault("marginal", *where[4], ber=3e-6))
    return replace(base, name=f"trial{seed}", modules=modules, seed=seed, faults=faults,
                   first_swing_s=float(r.uniform(1800, 3600)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cadences", default="60,10")
    ap.add_argument("--hours", type=float, default=4.0)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--modules", type=int, default=8)
    ap.add_argument("--no-shipped", action="store_true")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.1f} (1-min) on {os.cpu_count()} cores")
    base = load_scenario("planted-faults")
    for cadence in (float(c) for c in args.cadences.split(",")):
        runs = ([] if args.no_shipped else [base]) + [trial(base, 70000 + i, args.modules) for i in range(args.trials)]
        ok = 0
        for sc in runs:
            t0 = time.perf_counter()
            rep = rehearse(sc, interval_s=cadence, duration_s=args.hours * 3600.0)
            wall = time.perf_counter() - t0
            ok += rep.ok
            print(f"[{cadence:g} s] " + "\n    ".join(rep.lines()))
            print(f"    {rep.lanes * args.hours:.0f} lane-hours; {rep.poll_cpu_s / rep.polls * 1e3:.0f} ms CPU per poll "
                  f"of {sc.modules} modules (emulator included), {wall:.0f} s wall")
        print(f"[{cadence:g} s] {ok}/{len(runs)} runs met every expectation")


if __name__ == "__main__":
    main()
