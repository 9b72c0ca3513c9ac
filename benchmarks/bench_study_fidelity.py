"""Screened against full-fidelity study rows (``[tune] fidelity = "screen"``, eqtune.study.screened) on a
random sample of a study's combinations: CPU per combination of each (same process, interleaved, so the
ratio holds under load) and how far the screened figures are from the full ones: the robust margin at
each corner and at the worst corner (mV), the verdict, and whether the same robust codes were picked.

The sample is drawn with ``--seed`` from the spec's combinations (docs/study-screen-100k.toml by
default); the screen's settings (8 samples a UI, screen_keep 8) were chosen before any of these rows
were computed, so every sample reports, none chose.

Run:  nice python benchmarks/bench_study_fidelity.py --sample 60 --seed 1 [--spec SPEC] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

from eqtune.study.compute import simulate
from eqtune.study.screened import refine_combination
from eqtune.study.spec import load_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="docs/study-screen-100k.toml")
    ap.add_argument("--sample", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    spec = load_spec(a.spec)
    base_seed = int(spec.settings["seed"])
    combos = random.Random(a.seed).sample(list(spec.combinations), a.sample)
    simulate(combos[0])  # imports and first-call set-up outside the figures
    rows = []
    for i, c in enumerate(combos):
        full_c = refine_combination(c, base_seed)
        pair = {}
        for name, cc in (("screen", c), ("full", full_c)) if i % 2 == 0 else (("full", full_c), ("screen", c)):
            t0 = time.process_time()
            pair[name] = simulate(cc)
            pair[name + "_cpu"] = time.process_time() - t0
        s, f = pair["screen"], pair["full"]
        d = {"label": c.channel.label,
             "cpu_screen_s": pair["screen_cpu"], "cpu_full_s": pair["full_cpu"],
             "robust_full": f["robust_margin"], "robust_screen": s["robust_margin"],
             "d_robust": s["robust_margin"] - f["robust_margin"],
             "d_corner": {k: s["corner_margins"][k]["robust"] - f["corner_margins"][k]["robust"]
                          for k in f["corner_margins"]},
             "same_codes": s["robust_codes"] == f["robust_codes"],
             "verdict_full": f["verdict"], "verdict_screen": s["verdict"]}
        rows.append(d)
        print(f"{i:3d} {d['label']:32s} full {f['robust_margin']:7.2f} screen {s['robust_margin']:7.2f} "
              f"d {d['d_robust']:+6.2f} mV codes {'same' if d['same_codes'] else 'differ'} "
              f"{f['verdict']}/{s['verdict']} cpu {d['cpu_full_s']:.3f}/{d['cpu_screen_s']:.3f} s", flush=True)
    dr = [r["d_robust"] for r in rows]
    d85 = [r["d_corner"].get("85C") for r in rows if "85C" in r["d_corner"]]
    cpu_f = sum(r["cpu_full_s"] for r in rows)
    cpu_s = sum(r["cpu_screen_s"] for r in rows)
    summary = {
        "spec": a.spec, "sample": a.sample, "seed": a.seed, "load_avg": os.getloadavg(),
        "cpu_full_s_per_combo": cpu_f / len(rows), "cpu_screen_s_per_combo": cpu_s / len(rows),
        "cpu_ratio_full_over_screen": cpu_f / cpu_s,
        "d_robust_mv": {"median": statistics.median(dr), "min": min(dr), "max": max(dr),
                        "mean_abs": statistics.fmean(abs(x) for x in dr)},
        "d_85C_mv": {"median": statistics.median(d85), "min": min(d85), "max": max(d85)} if d85 else None,
        "same_robust_codes": sum(r["same_codes"] for r in rows),
        "verdict_agree": sum(r["verdict_full"] == r["verdict_screen"] for r in rows),
        "n": len(rows),
    }
    print(json.dumps(summary, indent=1))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"summary": summary, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
