"""ask+tell wall time (ms) at 50-70 observations with and without the stage-A screen (target:
<= 150 ms mean and p95 at 60 observations, refits included), same grids, seeds 0-2, same run.

Run:  nice python benchmarks/bench_tune_screen_overhead.py 14,1   (problem indices of bench_tune.py)
"""
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tune as bt  # noqa: E402

from eqtune.tune import TableSource
from eqtune.tune.optimizer import GPOptimizer
from eqtune.tune.screen import Screen
from eqtune.tune.space import IndexedSpace

for pi in [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "14,1").split(",")]:
    name, ch, d, knobs = bt.PROBLEMS[pi]
    src, grid, ms, _ = bt.grid_table(name, ch, d, knobs, bt.ROOT / "benchmarks" / ".cache")
    isp = IndexedSpace(src.space)
    sv, _ = bt.screen_table(name, src, knobs, d, bt.ROOT / "benchmarks" / ".cache", isp)
    table = TableSource(src.space, grid, ms, start=src.default_point(), units="mV")
    for screened in (True, False):
        times = []
        for seed in range(3):
            opt = GPOptimizer(src.space, seed=seed, ispace=isp, start=src.default_point(), noise_max=0.01, contenders=0, budget=150,
                              screen=screened)
            if screened:
                opt.set_screen(Screen(isp, sv))
            for i in range(70):
                t0 = time.perf_counter()
                p = opt.ask()
                y = table.measure(p).margin
                opt.tell(p, y)
                dt = time.perf_counter() - t0
                if i >= 50:
                    times.append(dt * 1e3)
        t = np.array(times)
        print(f"{name} screen={screened}: ask+tell 50-70 obs mean {t.mean():.1f} ms p95 {np.percentile(t,95):.1f} max {t.max():.1f} (load {os.getloadavg()[0]:.1f})", flush=True)
