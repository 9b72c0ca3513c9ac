"""Benchmark: a 1,000-combination study (module code space 8 x 8 x 4 = 256 points, exhaustive).

Study: host trace 3.0 .. 15.4 in (125 lengths) x 4 laminates x crosstalk on/off on the library channel
``c2m-10in-xtalk``, SerDes profile host-lr-112g, target BER 1e-6, BER floor 1e-12 / 1e-15, one corner.

    python benchmarks/bench_study.py                    # 50-combination subset, 1 and 2 workers, extrapolated
    python benchmarks/bench_study.py --combos 1000      # the full study
    python benchmarks/bench_study.py --backend synthetic

Targets (issue 8): the full study <= 10 minutes on this 2-core machine; speed-up 1 -> 2 workers >= 1.8x.
A subset is an evenly spaced sample of the 1,000 combinations, so its per-combination cost is
representative; the extrapolated figure is labelled as such. The machine is shared: run it when idle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

FULL = 1000


def bench_spec(base_dir: Path):
    from eqtune.study.spec import parse_spec

    lengths = [round(3.0 + 0.1 * i, 1) for i in range(125)]
    data = {
        "study": {"name": "bench-1000", "seed": 1, "target_ber": 1e-6, "ber_floor": [1e-12, 1e-15]},
        "profiles": ["host-lr-112g"],
        "channels": [{"base": "c2m-10in-xtalk", "label": "host",
                      "sweep": {"length_in": lengths, "material": ["megtron6", "megtron7", "tachyon100g", "fr4"],
                                "crosstalk": [True, False]}}],
        "tune": {"knobs": ["rx_pre", "rx_post", "rx_amp"], "method": "auto", "exhaustive_max": 600},
        "pass": [{"eye_height_min_mv": 15, "vec_max_db": 12}],
    }
    spec = parse_spec(data, base_dir=base_dir, source="bench_study.py")
    assert len(spec.combinations) == FULL, len(spec.combinations)
    return spec


def subset(spec, n: int):
    if n >= len(spec.combinations):
        return spec
    step = len(spec.combinations) / n
    picked = [spec.combinations[int(i * step)] for i in range(n)]
    spec.combinations = picked
    return spec


def run(spec, workers: int, backend: str) -> tuple[float, dict]:
    from eqtune.study import run_study
    from eqtune.study.compute import BACKENDS

    with tempfile.TemporaryDirectory(prefix="bench-study-") as out:
        t0 = time.perf_counter()
        res = run_study(spec, out, workers=workers, compute=BACKENDS[backend], report=False)
        wall = time.perf_counter() - t0
        # CPU time spent in the tasks (each task measures its own thread's CPU time): what the study
        # costs on an idle machine, independent of how many other processes share the cores
        return wall, res.summary["cpu_s"], res.summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--combos", type=int, default=50, help="combinations to run (default 50; 1000 = full)")
    ap.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--backend", default="sim", choices=["sim", "synthetic"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    workers = [int(w) for w in args.workers.split(",")]
    results = {}
    for w in workers:
        spec = subset(bench_spec(Path.cwd()), args.combos)
        n = len(spec.combinations)
        load0 = os.getloadavg()[0]
        wall, cpu, summary = run(spec, w, args.backend)
        errors = len(summary["errors"])
        results[w] = {"combinations": n, "wall_s": round(wall, 2), "per_combination_s": round(wall / n, 4),
                      "cpu_s": round(cpu, 1), "cpu_per_combination_s": round(cpu / n, 4),
                      "cores_busy_in_tasks": round(cpu / wall, 2), "loadavg_1min_before": round(load0, 2),
                      "idle_machine_projection_1000_s": round(cpu / n * FULL / w, 1), "errors": errors,
                      "extrapolated_1000_s": round(wall / n * FULL, 1),
                      "label": "measured" if n == FULL else f"EXTRAPOLATED from {n} combinations"}
        if errors:
            print(f"warning: {errors} combinations failed, first: {summary['errors'][0]['error']}", file=sys.stderr)
    out = {"backend": args.backend, "cpu_count": os.cpu_count(), "results": results}
    if 1 in results and 2 in results:
        out["speedup_1_to_2"] = round(results[1]["wall_s"] / results[2]["wall_s"], 2)
        # idle-machine view: if both workers had a core each, wall = CPU work / workers; the ratio says
        # whether a task costs more CPU when two run side by side (memory bandwidth, cache)
        out["cpu_projected_speedup_1_to_2"] = round(results[1]["cpu_s"] / (results[2]["cpu_s"] / 2), 2)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"backend {args.backend}, {os.cpu_count()} cores (shared machine)")
        for w, r in results.items():
            print(f"  {w} worker(s): {r['combinations']} combinations in {r['wall_s']:.1f} s "
                  f"({r['per_combination_s'] * 1000:.0f} ms each) -> 1,000 combinations: "
                  f"{r['extrapolated_1000_s']:.0f} s [{r['label']}]; CPU {r['cpu_per_combination_s'] * 1000:.0f} ms "
                  f"each, {r['cores_busy_in_tasks']:.2f} cores busy (load before {r['loadavg_1min_before']}) -> "
                  f"idle-machine projection {r['idle_machine_projection_1000_s']:.0f} s")
        if "speedup_1_to_2" in out:
            print(f"  speed-up 1 -> 2 workers: {out['speedup_1_to_2']:.2f}x wall clock on this shared machine, "
                  f"{out['cpu_projected_speedup_1_to_2']:.2f}x projected from task CPU time (target >= 1.8x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
