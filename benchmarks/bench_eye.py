"""Eye-engine speed: one new EQ point on a prepared channel, batch throughput, and a naive baseline.

Measured in the same run:

* ``evaluate``: ``EyeEngine.evaluate(point)`` for new TX FFE points at a fixed CTLE (pulse response via
  the cached FFE stack, DFE, PAM4 statistical eye at 1e-6, EH/EW/COM). Target <= 2 ms median.
* ``evaluate (CTLE adapts)``: the same with the CTLE chosen by the engine (best of the profile's grid).
* ``evaluate_batch``: points per second over a slice of the 802.3ck C2C TX FFE x CTLE grid, and the
  extrapolated time of the whole grid.
* ``naive``: what one evaluation costs without the engine's caches: a new engine prepared for that
  single point (channel x FFE x CTLE -> inverse FFT -> pulse -> cursor matrices) and then evaluated.

Channel: the 802.3ck C2C 12 dB channel from ../shared/channels-ieee when present, else the library's
default channel; ``--channel``/``--profile`` pick another (e.g. a TOML with the tracy FEXT/NEXT files and
``ieee-3ck-kr``). Run from the repository root::

    nice -n 10 /work/venv/bin/python benchmarks/bench_eye.py [--n 200] [--batch 4096] [--json FILE]

Before/after in one run: the same script against another checkout's code (public API only), e.g.
``PYTHONPATH=/work/main python benchmarks/bench_eye.py`` then ``PYTHONPATH=. python benchmarks/bench_eye.py``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_GORE_REL = Path("channels-ieee") / "gore_3ck_02_0519_C2C_12dB" / "C2C_PCB_SYSVIA_12dB_thru.s4p"
# ../shared beside the checkout, or two levels up for a worktree (/work/wt/iNN -> /work/shared)
GORE = next((d / _GORE_REL for d in (ROOT.parent / "shared", ROOT.parent.parent / "shared")
             if (d / _GORE_REL).exists()), ROOT.parent / "shared" / _GORE_REL)


def _timeit(fn, items) -> list[float]:
    out = []
    for it in items:
        t = time.perf_counter()
        fn(it)
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="single evaluations timed")
    ap.add_argument("--naive", type=int, default=10, help="naive evaluations timed")
    ap.add_argument("--batch", type=int, default=4096, help="points in the batch slice")
    ap.add_argument("--json", default=None, help="write the figures to this JSON file")
    ap.add_argument("--channel", default=None, help="channel (library name, .toml, .sNp); default gore C2C")
    ap.add_argument("--profile", default="ieee-3ck-c2c", help="SerDes profile (default ieee-3ck-c2c)")
    args = ap.parse_args(argv)

    import warnings

    import numpy as np

    from eqtune.channel import load_channel
    from eqtune.eye import EyeEngine
    from eqtune.serdes import load_profile
    from eqtune.serdes.profile import Range

    src = args.channel or (str(GORE) if GORE.exists() else "c2m-10in")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # port-order / passivity notes are not the subject here
        ch = load_channel(src)
    prof = load_profile(args.profile)
    t0 = time.perf_counter()
    eng = EyeEngine(ch, prof, direction="serdes", ber=1e-6)
    prep_s = time.perf_counter() - t0

    space = eng.knob_space()  # TX FFE x CTLE, sum |c| <= 1 - c0_min
    grid = space.grid()
    rng = np.random.default_rng(0)
    rows = grid[rng.choice(len(grid), args.n, replace=False)]
    pts = [space.to_point(r) for r in rows]
    eng.evaluate(pts[0])  # warm-up
    single = _timeit(eng.evaluate, pts)

    tx_only = [{k: v for k, v in p.items() if not k.startswith("ctle")} for p in pts[: max(args.n // 4, 10)]]
    adapt = _timeit(eng.evaluate, tx_only)

    sl = grid[rng.choice(len(grid), min(args.batch, len(grid)), replace=False)]
    t = time.perf_counter()
    br = eng.evaluate_batch(sl, space.names)
    batch_s = time.perf_counter() - t
    per_pt = batch_s / len(sl)

    def naive(p):
        # no caches: a one-setting profile for this CTLE, pulse response and cursor matrices rebuilt
        c = prof.rx.ctle
        one = replace(prof, rx=replace(prof.rx, ctle=replace(
            c, gdc_db=Range(p["ctle_gdc"], p["ctle_gdc"], 0, p["ctle_gdc"]),
            gdc2_db=Range(p["ctle_gdc2"], p["ctle_gdc2"], 0, p["ctle_gdc2"]))))
        return EyeEngine(ch, one, direction="serdes", ber=1e-6).evaluate(p)

    naive_t = _timeit(naive, pts[: args.naive])
    # sanity: the naive path gives the same eye
    same = abs(naive(pts[0]).eye_height_min_mv - eng.evaluate(pts[0]).eye_height_min_mv) < 1e-6

    med = statistics.median(single)
    out = {
        "channel": ch.name, "profile": prof.name, "direction": "serdes", "modulation": eng.modulation,
        "samples_per_ui": eng.M, "ber": 1e-6, "grid_points": int(len(grid)),
        "prepare_s": prep_s,
        "evaluate_median_ms": med * 1e3, "evaluate_p90_ms": float(np.percentile(single, 90)) * 1e3,
        "evaluate_adaptive_ctle_median_ms": statistics.median(adapt) * 1e3,
        "batch_points": len(sl), "batch_ms_per_point": per_pt * 1e3, "batch_points_per_s": 1.0 / per_pt,
        "grid_extrapolated_s": per_pt * len(grid),
        "naive_median_ms": statistics.median(naive_t) * 1e3,
        "speedup_single_vs_naive": statistics.median(naive_t) / med,
        "speedup_batch_vs_naive": statistics.median(naive_t) / per_pt,
        "naive_matches_cached": bool(same),
        "best_com_db_in_slice": float(np.max(br.com_db)),
        "python": sys.version.split()[0], "machine": platform.machine(),
        "pychopmarg_reference": "PyChOpMarg 3.4.0 exhaustive C2C grid, 50 MHz step: 386 s "
                                "(~2.3 ms/point); see benchmarks/bench_exhaustive.py for a side-by-side run",
    }
    out["aggressors"] = len(ch.aggressors)
    print(f"channel {out['channel']} ({out['grid_points']} grid points, {len(ch.aggressors)} aggressors, "
          f"profile {prof.name}), engine prepared in {prep_s:.2f} s")
    print(f"evaluate (new TX FFE point, fixed CTLE): median {out['evaluate_median_ms']:.3f} ms, "
          f"p90 {out['evaluate_p90_ms']:.3f} ms   (target <= 2 ms)")
    n_ctle = len(prof.rx.ctle.gdc_db.values()) * (len(prof.rx.ctle.gdc2_db.values()) if prof.rx.ctle.gdc2_db else 1)
    print(f"evaluate (CTLE adapts over {n_ctle} settings): "
          f"median {out['evaluate_adaptive_ctle_median_ms']:.3f} ms")
    print(f"evaluate_batch: {out['batch_ms_per_point']:.4f} ms/point ({out['batch_points_per_s']:.0f} points/s); "
          f"whole grid ~{out['grid_extrapolated_s']:.1f} s (PyChOpMarg 3.4.0 exhaustive search: 386 s, docs/pychopmarg-comparison.md)")
    print(f"naive (no caches): median {out['naive_median_ms']:.1f} ms -> single x{out['speedup_single_vs_naive']:.0f}, "
          f"batch x{out['speedup_batch_vs_naive']:.0f}; same result: {same}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
