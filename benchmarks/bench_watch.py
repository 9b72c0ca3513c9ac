"""``eqtune watch`` polling cost: per module per interval, and modules one machine can watch at 1 s.

    nice -n 10 python benchmarks/bench_watch.py [--modules 8,32,64] [--intervals 10] [--json]

The emulated fleet (net: bridges on 127.0.0.1, thermal ramps, 3 planted lanes) runs in a *separate
process*, so the watcher's measured CPU is only its own: TCP register reads, the VDM freeze/read/
unfreeze sequence and the temperature read, the detector, the SQLite commit (WAL, synchronous=FULL)
and the Prometheus update. Measured per fleet size:

* wall time of one interval (all modules polled in parallel threads, detected, committed, exported);
* the watcher process's CPU seconds per module per interval (``time.process_time``): what limits
  how many modules one machine can watch; the detector runs on a full default window (300 samples
  per lane, pre-filled) as in a long watch;
* baseline in the same run: one 128-byte lower-page read per module through the same transport
  (one round trip), so the poll cost is also given as a ratio to it;
* modules per machine at 1 s intervals: 1 s x cores / CPU per module-interval, and whether the
  measured interval at the largest fleet fits in 1 s.

Real I2C buses are slower than TCP on localhost (400 kHz: ~25 us per byte); the VDM poll moves
~600 bytes, ~15 ms per module per bus, so on hardware the bus count, not the CPU, bounds the fleet.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FLEET_CHILD = """
import sys, time
from eqtune.watch.fleet import FleetSpec, start_fleet
n = int(sys.argv[1])
spec = FleetSpec(modules=n, time_scale=30.0, planted=[(0, 2), (n // 2, 5), (n - 1, 8)], stable_marginal=[])
fleet = start_fleet(spec)
print(" ".join(fleet.resources), flush=True)
sys.stdin.readline()
fleet.stop()
"""


def start_fleet_process(n: int) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-c", FLEET_CHILD, str(n)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=str(ROOT))
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("fleet process did not start")
    return proc, line.split()


def bench(n: int, intervals: int) -> dict:
    from eqtune.drivers.cmis import open_module
    from eqtune.watch.detect import DetectConfig
    from eqtune.watch.poller import Watcher
    from eqtune.watch.prom import PrometheusExporter
    from eqtune.watch.store import WatchStore
    from eqtune.watch.targets import WatchTarget

    proc, resources = start_fleet_process(n)
    try:
        # baseline: one lower-page read (1 round trip) per module, same transport, same thread pool size
        from concurrent.futures import ThreadPoolExecutor

        mods = [open_module(r) for r in resources]
        pool = ThreadPoolExecutor(max_workers=min(32, n))
        base_wall, base_cpu = [], []
        for _ in range(intervals):
            c0, t0 = time.process_time(), time.perf_counter()
            list(pool.map(lambda m: m.regs.read(0, 0, 128), mods))
            base_wall.append(time.perf_counter() - t0)
            base_cpu.append(time.process_time() - c0)
        for m in mods:
            m.close()
        pool.shutdown()
        with tempfile.TemporaryDirectory() as tmp:
            store = WatchStore(Path(tmp) / "watch.sqlite")
            store.start_run(["bench"])
            exp = PrometheusExporter("127.0.0.1", 0).start()
            w = Watcher([WatchTarget(r, channel="c2m-10in") for r in resources], interval_s=1.0, store=store,
                        exporter=exp, cfg=DetectConfig(window_s=300.0))
            w.poll_interval()  # open the modules (not part of the steady state)
            # steady state of a long watch: a full default window (300 s at 1 s = 300 samples) per lane
            import numpy as np

            now = time.time()
            for h in w.history.values():
                last = h.array()[-1]
                rows = np.tile(last, (300, 1))
                rows[:, 0] = now - 300.0 + np.arange(300)
                h.extend_before(rows)
            wall, cpu = [], []
            for _ in range(intervals):
                c0, t0 = time.process_time(), time.perf_counter()
                w.poll_interval()
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            w.close()
            exp.stop()
            store.close()
    finally:
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=60)
    cpu_mod = statistics.median(cpu) / n
    base_cpu_mod = statistics.median(base_cpu) / n
    return {
        "modules": n, "lanes": 8 * n, "intervals": intervals,
        "interval_wall_s": statistics.median(wall),
        "cpu_per_module_interval_ms": 1e3 * cpu_mod,
        "baseline_page_read_wall_s": statistics.median(base_wall),
        "baseline_cpu_per_module_ms": 1e3 * base_cpu_mod,
        "poll_vs_one_page_read_cpu": cpu_mod / base_cpu_mod if base_cpu_mod > 0 else None,
        "poll_vs_one_page_read_wall": statistics.median(wall) / statistics.median(base_wall),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", default="8,32,64")
    ap.add_argument("--intervals", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    rows = [bench(int(n), args.intervals) for n in args.modules.split(",")]
    worst = max(r["cpu_per_module_interval_ms"] for r in rows)
    largest = rows[-1]
    out = {"cores": cores, "rows": rows,
           "modules_per_machine_at_1s_cpu_bound": int(1000.0 * cores / worst),
           "modules_per_core_at_1s": int(1000.0 / worst),
           "largest_fleet_fits_1s": largest["interval_wall_s"] < 1.0}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"cores {cores}; fleet in a separate process; medians over {args.intervals} intervals")
    print(f"{'modules':>8} {'interval s':>11} {'CPU/module ms':>14} {'1-page read ms':>15} {'x page read':>12}")
    for r in rows:
        print(f"{r['modules']:>8} {r['interval_wall_s']:>11.3f} {r['cpu_per_module_interval_ms']:>14.2f} "
              f"{r['baseline_cpu_per_module_ms']:>15.3f} {r['poll_vs_one_page_read_cpu']:>12.1f}")
    print(f"modules per core at 1 s (CPU-bound, worst row): {out['modules_per_core_at_1s']}; "
          f"per machine ({cores} cores): {out['modules_per_machine_at_1s_cpu_bound']}; "
          f"{largest['modules']} modules poll in {largest['interval_wall_s']:.2f} s")


if __name__ == "__main__":
    main()
