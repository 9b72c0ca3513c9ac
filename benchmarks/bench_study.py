"""Benchmark: a 1,000-combination study (module code space 8 x 8 x 4 = 256 points, exhaustive).

Study: host trace 3.0 .. 15.4 in (125 lengths) x 4 laminates x crosstalk on/off on the library channel
``c2m-10in-xtalk``, SerDes profile host-lr-112g, target BER 1e-6, BER floor 1e-12 / 1e-15, one corner.

    python benchmarks/bench_study.py                    # 50-combination subset, 1 and 2 workers, projected
    python benchmarks/bench_study.py --combos 200       # a larger subset
    python benchmarks/bench_study.py --full             # the real 1,000 combinations (1 and 2 workers)
    python benchmarks/bench_study.py --full --workers 2 # the real 1,000 on 2 workers only
    python benchmarks/bench_study.py --backend synthetic

Targets (issue 8): the full study <= 10 minutes on this 2-core machine; speed-up 1 -> 2 workers >= 1.8x.
Every worker count runs the same combinations in the same invocation. A subset is a seeded random
sample of the 1,000 combinations, so its per-combination cost is representative; a 1,000-combination
time computed from a subset is labelled PROJECTED, one from --full MEASURED.

Figures: wall clock (what the targets are about; polluted when the machine is shared) and task CPU
time (each task's own thread CPU, summed: the cost of the work itself, including a worker's first-task
imports and file parsing, independent of other processes on the cores). The load average before/after
each run says how shared the machine was; run it when idle (or under nice).
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
    """``n`` combinations drawn at random (fixed seed, in study order). Not every k-th one: the study
    varies crosstalk on/off fastest, so an even stride would pick only one of the two (biased cost)."""
    import random

    if n >= len(spec.combinations):
        return spec
    picked = sorted(random.Random(20261129).sample(range(len(spec.combinations)), n))
    spec.combinations = [spec.combinations[i] for i in picked]
    return spec


def run(spec, workers: int, backend: str) -> tuple[float, float, dict]:
    from eqtune.study import run_study
    from eqtune.study.compute import BACKENDS

    with tempfile.TemporaryDirectory(prefix="bench-study-") as out:
        t0 = time.perf_counter()
        res = run_study(spec, out, workers=workers, compute=BACKENDS[backend], report=False)
        wall = time.perf_counter() - t0
        # task CPU: each task measures its own thread's CPU time; what the study costs on an idle
        # machine, independent of how many other processes share the cores
        return wall, res.summary["cpu_s"], res.summary


def _worker_blas_threads() -> int | None:
    try:
        from eqtune.study.executors import blas_threads, open_executor

        with open_executor(2) as (ex, _info):
            return ex.submit(blas_threads).result()
    except Exception:  # noqa: BLE001 - diagnostic only
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--combos", type=int, default=50, help="combinations to run (default 50)")
    ap.add_argument("--full", action="store_true", help="run the real 1,000-combination study")
    ap.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--backend", default="sim", choices=["sim", "synthetic"])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--save", type=Path, help="also write the JSON results to this file")
    args = ap.parse_args(argv)
    n_req = FULL if args.full else args.combos
    workers = [int(w) for w in args.workers.split(",")]
    results = {}
    for w in workers:
        spec = subset(bench_spec(Path.cwd()), n_req)
        n = len(spec.combinations)
        load0 = os.getloadavg()[0]
        wall, cpu, summary = run(spec, w, args.backend)
        errors = len(summary["errors"])
        measured = n == FULL
        results[w] = {
            "combinations": n, "wall_s": round(wall, 2), "wall_per_combination_s": round(wall / n, 4),
            "task_cpu_s": round(cpu, 2), "cpu_per_combination_s": round(cpu / n, 4),
            "cores_busy_in_tasks": round(cpu / wall, 2),
            "loadavg_1min_before": round(load0, 2), "loadavg_1min_after": round(os.getloadavg()[0], 2),
            "time_1000_s": round(wall / n * FULL, 1),
            "time_1000_label": "MEASURED" if measured else f"PROJECTED from {n} measured combinations",
            "idle_projection_1000_s": round(cpu / n * FULL / w, 1), "errors": errors}
        if errors:
            print(f"warning: {errors} combinations failed, first: {summary['errors'][0]['error']}", file=sys.stderr)
    out = {"backend": args.backend, "cpu_count": os.cpu_count(), "worker_blas_threads": _worker_blas_threads(),
           "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "results": results}
    if 1 in results and 2 in results:
        out["speedup_1_to_2"] = round(results[1]["wall_s"] / results[2]["wall_s"], 2)
        # task CPU per combination with 2 workers vs 1: above 1 means the two workers slow each other
        # down (memory bandwidth, caches, or other processes on the cores)
        out["cpu_inflation_2_workers"] = round(results[2]["cpu_per_combination_s"]
                                               / results[1]["cpu_per_combination_s"], 2)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"backend {args.backend}, {os.cpu_count()} cores, BLAS threads per worker: {out['worker_blas_threads']}")
    print(f"{'workers':>7} {'combos':>6} {'wall s':>8} {'wall/combo':>10} {'CPU/combo':>10} {'busy':>5} "
          f"{'load before/after':>17}  1,000-combination time")
    for w, r in results.items():
        print(f"{w:>7} {r['combinations']:>6} {r['wall_s']:>8.1f} {r['wall_per_combination_s'] * 1000:>8.0f}ms "
              f"{r['cpu_per_combination_s'] * 1000:>8.0f}ms {r['cores_busy_in_tasks']:>5.2f} "
              f"{r['loadavg_1min_before']:>8.2f}/{r['loadavg_1min_after']:<8.2f} {r['time_1000_s']:.0f} s "
              f"[{r['time_1000_label']}] (idle-machine CPU projection {r['idle_projection_1000_s']:.0f} s)")
    if "speedup_1_to_2" in out:
        print(f"speed-up 1 -> 2 workers: {out['speedup_1_to_2']:.2f}x wall clock (target >= 1.8x); "
              f"task CPU per combination with 2 workers / with 1: {out['cpu_inflation_2_workers']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
