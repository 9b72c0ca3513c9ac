"""Tuning benchmark: sample efficiency of the GP optimizer vs Optuna TPE and random search.

For each problem (library channel x link direction x 4-5 knobs, 10^3..10^5 grid points) the exhaustive
grid is evaluated once with the real eye engine (cached in ``--cache``); every optimizer then reads the
same table (``TableSource``), so all are measured on identical, deterministic margins in the same run.

Figure of merit: evaluations until the best margin measured so far is within 0.1 dB of the grid
optimum (eye height in mV: 20 log10(opt / best) <= 0.1 dB, i.e. within about 1.1 %), median over
``--seeds`` seeds; runs that never get there count as cap + 1 (reported as ">cap"). The same curves are
also scored at 0.5 dB (about 5.6 %), which tells plateau landscapes (many near-optimal codes) apart.
"GP before" is the optimizer as it was before the length-scale prior was added (``BEFORE``: the
hyperparameters by plain maximum likelihood, ``ls_prior=0``), same seeds, same run: the before/after of
that change. (The previous change, diagonal directions, is measured the same way with
``BEFORE = {"directions": "axes", "local_on_success": True, "ls_prior": 0.0}``.)
Also: optimizer overhead per ask/tell at 60 observations, and a 60-evaluation 5-knob simulated tune
end to end (real engine, no table).

Problems 0-7 are library channels; 8-10 are IEEE 802.3ck public channels from ../shared/channels-ieee
(skipped with a message when that folder is absent). With 20 or more seeds the target is also scored on
each block of 10 consecutive seeds (is a 10-seed pass robust?).

Run:  nice python benchmarks/bench_tune.py [--seeds 10] [--quick] [--json out.json]
      nice python benchmarks/bench_tune.py --seeds 30 --problems 0,1,3,4,8,9,10   (robustness, 30 seeds)
      nice python benchmarks/bench_tune.py --gp-only --seeds 60 --problems 0,1,2,3,4,5,6   (before/after, 60 seeds)
Optuna is optional (``pip install optuna``); without it the TPE column is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from eqtune.tune import SimulationSource, TableSource, first_within, threshold, tune
from eqtune.tune.optimizer import GPOptimizer
from eqtune.tune.space import IndexedSpace

# (name, channel, direction, knobs)
PROBLEMS = [
    ("c2m-4in host_rx 5 knobs", "c2m-4in", "host_rx", ["rx_pre", "rx_post", "rx_amp", "ctle_gdc", "ctle_gdc2"]),
    ("c2m-10in host_rx 5 knobs", "c2m-10in", "host_rx", ["rx_pre", "rx_post", "rx_amp", "ctle_gdc", "ctle_gdc2"]),
    ("c2m-16in serdes 4 knobs", "c2m-16in", "serdes", ["tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2"]),
    ("c2m-10in-xtalk host_rx 4 knobs", "c2m-10in-xtalk", "host_rx", ["rx_pre", "rx_post", "rx_amp", "ctle_gdc"]),
    # added after the optimizer's settings were chosen on the four above (held out: no setting was tuned
    # on them): plateau ridges where several codes sit within a few tenths of a dB of the optimum
    ("c2m-16in host_rx 5 knobs", "c2m-16in", "host_rx", ["rx_pre", "rx_post", "rx_amp", "ctle_gdc", "ctle_gdc2"]),
    ("c2m-224g-6in host_rx 5 knobs", "c2m-224g-6in", "host_rx", ["rx_pre", "rx_post", "rx_amp", "ctle_gdc", "ctle_gdc2"]),
    ("c2m-10in serdes 4 knobs", "c2m-10in", "serdes", ["tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2"]),
    # a hard case: TX FFE into the module's fixed peaking on a long trace, mostly closed eyes
    ("c2m-10in module_rx 5 knobs", "c2m-10in", "module_rx", ["tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "tx_eq"]),
]
ROOT = Path(__file__).resolve().parents[1]
_HOST5 = ["rx_pre", "rx_post", "rx_amp", "ctle_gdc", "ctle_gdc2"]
# Third-party channels: IEEE 802.3ck public contributions in ../shared/channels-ieee (provenance in its
# README), each a bare Touchstone THRU, i.e. a 53.125 GBd PAM4 link with the default SerDes profile. Added
# in session 5 with the optimizer unchanged: no optimizer setting was ever chosen on them (held out). Left
# out: tracy 12 in (28 dB at Nyquist: no code opens the eye of this link, best -0.96 mV, so "within
# 0.1 dB of the optimum" means nothing) and pychopmarg example2 (a 25G-class channel, 60 dB at 26.6 GHz).
IEEE_PROBLEMS = [
    ("ieee tracy-4in host_rx 5 knobs", "tracy_3ck_02_0119_DPO_4in/DPO_4in_Meg7_THRU.s4p", "host_rx", _HOST5),
    ("ieee tracy-10in host_rx 5 knobs", "tracy_3ck_02_0119_DPO_10in/DPO_10in_Meg7_THRU.s4p", "host_rx", _HOST5),
    ("ieee gore-c2c-12dB host_rx 5 knobs", "gore_3ck_02_0519_C2C_12dB/C2C_PCB_SYSVIA_12dB_thru.s4p", "host_rx", _HOST5),
]


def ieee_dir() -> Path | None:
    """``../shared/channels-ieee`` beside the project (or under ``$EQTUNE_SHARED``), None when absent."""
    env = os.environ.get("EQTUNE_SHARED")
    for c in ([Path(env)] if env else []) + [ROOT.parent / "shared", ROOT.parent.parent / "shared"]:
        if (c / "channels-ieee").is_dir():
            return c / "channels-ieee"
    return None


_IEEE = ieee_dir()
if _IEEE is not None:
    PROBLEMS += [(n, str(_IEEE / rel), d, k) for n, rel, d, k in IEEE_PROBLEMS]


def grid_table(name: str, channel: str, direction: str, knobs: list[str], cache: Path):
    src = SimulationSource(channel, knobs, direction=direction)
    path = cache / (name.replace(" ", "_") + ".npz")
    isp = IndexedSpace(src.space)
    grid = isp.values(isp.grid)
    if path.exists():
        z = np.load(path)
        if z["grid"].shape == grid.shape and np.allclose(z["grid"], grid):
            return src, grid, z["margins"], 0.0
    t0 = time.perf_counter()
    ms = np.array([m.margin for m in src.measure_batch([src.space.to_point(r) for r in grid])])
    dt = time.perf_counter() - t0
    np.savez(path, grid=grid, margins=ms)
    return src, grid, ms, dt


def evals_to_target(curve: list[float], opt: float) -> int | None:
    return first_within(curve, opt, tol_db=0.1, units="mV")


# the optimizer's settings before the length-scale prior was added (the "before" column, same run)
BEFORE = {"ls_prior": 0.0}


def run_ours(table: TableSource, kind: str, seed: int, cap: int, options: dict | None = None,
             stop_at: float | None = None) -> list[float]:
    """Best-so-far curve; ``stop_at``: end the run at that margin (deterministic table: the curve up to
    there is the same as a full run's, and every score below is read off that part)."""
    r = tune(table, budget=cap, seed=seed, optimizer=kind, optimizer_options=options, target_margin=stop_at)
    return r.best_so_far()


def run_optuna(table: TableSource, isp: IndexedSpace, seed: int, cap: int) -> list[float]:
    """Optuna's default sampler (TPESampler) over knob level indices. Optuna cannot propose only
    feasible points: an infeasible proposal is measured at the nearest feasible point (projection)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    start = isp.key_of(table.default_point())
    study.enqueue_trial({n: int(i) for n, i in zip(isp.names, start)})  # same start point as ours
    curve: list[float] = []
    rng = np.random.default_rng(seed)

    def objective(trial):
        key = tuple(trial.suggest_int(n, 0, int(m) - 1) for n, m in zip(isp.names, isp.n_levels))
        if not isp.is_feasible(key):
            key = isp.nearest_feasible(np.asarray(key, dtype=float), set(), rng)
        y = table.measure(isp.point(key)).margin
        curve.append(max(curve[-1], y) if curve else y)
        return y

    study.optimize(objective, n_trials=cap)
    return curve


def overhead_ms(table: TableSource, grid: np.ndarray, n_obs: int = 60, steps: int = 10,
                **options) -> tuple[float, float]:
    """Wall time of one ask() + tell() from ``n_obs`` observations on (``steps`` consecutive steps of a
    run: model fit, hyperparameter warm start or restart, acquisition): (median, mean) in ms."""
    isp = IndexedSpace(table.space)
    opt = GPOptimizer(table.space, seed=0, ispace=isp, **options)
    rng = np.random.default_rng(0)
    for row in grid[rng.choice(len(grid), n_obs, replace=False)]:
        p = table.space.to_point(row)
        opt.tell(p, table.measure(p).margin)
    opt.ask()  # first fit at n_obs (its predecessor would have been fitted in a real run)
    opt.pending.clear()
    opt._pending_set.clear()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        p = opt.ask()
        opt.tell(p, table.measure(p).margin)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), 1e3 * statistics.mean(times)


def end_to_end(seed: int = 0) -> tuple[float, int, float, float]:
    t0 = time.perf_counter()
    src = SimulationSource("c2m-10in", ["tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "tx_eq"])
    r = tune(src, budget=60, seed=seed)
    return time.perf_counter() - t0, r.evaluations, r.baseline.margin, r.tuned.margin


def med_num(vals: list[int | None], cap: int) -> float:
    return float(statistics.median([cap + 1 if x is None else x for x in vals]))


def target_met(gp: float | None, tpe: float | None, rnd: float | None) -> str:
    """The issue's speed target for one problem: GP median <= 30 evaluations and <= 1/3 of the TPE and
    the random-search medians ("-" when a baseline was not run)."""
    if gp is None or tpe is None or rnd is None:
        return "-"
    return "yes" if gp <= 30 and 3 * gp <= tpe and 3 * gp <= rnd else "no"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--seed-offset", type=int, default=0, help="first seed (robustness: 10-seed blocks 10-19, ...)")
    ap.add_argument("--cap-gp", type=int, default=100, help="evaluation cap of the GP runs")
    ap.add_argument("--cap", type=int, default=300, help="evaluation cap of the TPE and random runs")
    ap.add_argument("--quick", action="store_true", help="first two problems, 3 seeds")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "eqtune-bench-cache")
    ap.add_argument("--json", type=Path, default=None, help="write the figures as JSON")
    ap.add_argument("--problems", default=None, help="comma list of problem indices (0-based)")
    ap.add_argument("--gp-only", action="store_true",
                    help="GP now vs GP before only (no TPE / random runs): many seeds in minutes")
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    probs = PROBLEMS[:2] if args.quick else PROBLEMS
    if args.problems:
        probs = [PROBLEMS[int(i)] for i in args.problems.split(",")]
    seeds = [args.seed_offset + i for i in range(3 if args.quick else args.seeds)]
    if _IEEE is None:
        print("../shared/channels-ieee not found (set EQTUNE_SHARED): the IEEE 802.3ck channel problems are "
              "skipped", file=sys.stderr)
    try:
        import optuna  # noqa: F401

        have_optuna = True
    except ImportError:
        have_optuna = False
        print("optuna not installed: TPE column skipped (pip install optuna)", file=sys.stderr)

    rows = []
    caps = {"gp": args.cap_gp, "gp_before": args.cap_gp, "random": args.cap, "tpe": args.cap}
    for name, ch, direction, knobs in probs:
        src, grid, ms, dt = grid_table(name, ch, direction, knobs, args.cache)
        table = TableSource(src.space, grid, ms, start=src.default_point(), units="mV")
        isp = IndexedSpace(src.space)
        opt_v = float(ms.max())
        base_v = table.measure(table.default_point()).margin
        curves: dict[str, list[list[float]]] = {"gp": [], "gp_before": [], "random": [], "tpe": []}
        t_gp = time.perf_counter()
        stop = threshold(opt_v, tol_db=0.1, units="mV")  # the strictest score
        for s in seeds:
            curves["gp"].append(run_ours(table, "gp", s, args.cap_gp, stop_at=stop))
        t_gp = (time.perf_counter() - t_gp) / len(seeds)
        for s in seeds:  # the optimizer before the length-scale prior (same run, same seeds)
            curves["gp_before"].append(run_ours(table, "gp", s, args.cap_gp, BEFORE, stop_at=stop))
        for s in seeds if not args.gp_only else []:
            curves["random"].append(run_ours(table, "random", s, args.cap))
            if have_optuna:
                curves["tpe"].append(run_optuna(table, isp, s, args.cap))
        ovh, ovh_mean = overhead_ms(table, grid)
        ovh_before, _ = overhead_ms(table, grid, **BEFORE)  # the model fit is what changed
        row = {
            "problem": name, "grid_points": int(len(grid)), "knobs": len(knobs), "grid_eval_s": round(dt, 1),
            "baseline_mv": round(base_v, 2), "optimum_mv": round(opt_v, 2),
            "gp_run_s": round(t_gp, 2), "overhead_ms_at_60": round(ovh, 1), "overhead_ms_at_60_mean": round(ovh_mean, 1),
            "overhead_ms_at_60_before": round(ovh_before, 1),
        }
        for tol in (0.1, 0.5):
            tag = f"{tol:g}dB"
            for kind in ("gp", "gp_before", "random", "tpe"):
                if (kind == "tpe" and not have_optuna) or (args.gp_only and kind in ("tpe", "random")):
                    row[f"{kind}_{tag}"], row[f"{kind}_{tag}_median"] = None, None
                    continue
                ev = [first_within(c, opt_v, tol_db=tol, units="mV") for c in curves[kind]]
                row[f"{kind}_{tag}"] = ev
                row[f"{kind}_{tag}_median"] = med_num(ev, caps[kind])
            row[f"gp_{tag}_hits_within_60"] = sum(1 for x in row[f"gp_{tag}"] if x is not None and x <= 60)
        rows.append(row)
        print(f"{name}: grid {len(grid)} pts (opt {opt_v:.2f} mV, start {base_v:.2f} mV)  "
              f"0.1 dB: GP {row['gp_0.1dB']} GP-before {row['gp_before_0.1dB']} TPE {row['tpe_0.1dB']} random med {row['random_0.1dB_median']}  "
              f"ask+tell @60 median {ovh:.0f} ms (mean {ovh_mean:.0f})", flush=True)

    e2e_s, e2e_n, e2e_b, e2e_t = end_to_end()
    for tag in ("0.1dB", "0.5dB"):
        print(f"\nevaluations to within {tag[:-2]} dB of the grid optimum (median of {len(seeds)} seeds; "
              f"'>N' = not reached within the cap)")
        print("| problem | grid pts | optimum (mV) | GP | GP before | TPE | random | TPE/GP | "
              "random/GP | GP within 60 | target |")
        print("|" + "---|" * 11)
        for r in rows:
            gp, tpe, rnd = r[f"gp_{tag}_median"], r[f"tpe_{tag}_median"], r[f"random_{tag}_median"]
            gpa = r[f"gp_before_{tag}_median"]

            def show(v, cap):
                return "-" if v is None else (f">{cap}" if v > cap else f"{v:g}")

            print(f"| {r['problem']} | {r['grid_points']} | {r['optimum_mv']} | {show(gp, args.cap_gp)} | "
                  f"{show(gpa, args.cap_gp)} | {show(tpe, args.cap)} | {show(rnd, args.cap)} | "
                  f"{'-' if tpe is None else f'{tpe / gp:.1f}'} | {'-' if rnd is None else f'{rnd / gp:.1f}'} | "
                  f"{r[f'gp_{tag}_hits_within_60']}/{len(seeds)} | {target_met(gp, tpe, rnd)} |")
        if len(seeds) >= 20:  # the same figure on each block of 10 consecutive seeds
            blocks = [(i, min(i + 10, len(seeds))) for i in range(0, len(seeds), 10)]
            print(f"\nper block of 10 seeds, {tag[:-2]} dB: GP / TPE / random medians, target met")
            print("| problem | " + " | ".join(f"seeds {seeds[a]}-{seeds[b - 1]}" for a, b in blocks) + " |")
            print("|---|" + "---|" * len(blocks))
            for r in rows:
                cells = []
                for a, b in blocks:
                    m = {k: (None if r[f"{k}_{tag}"] is None else med_num(r[f"{k}_{tag}"][a:b], caps[k]))
                         for k in ("gp", "tpe", "random")}
                    cells.append(" / ".join("-" if v is None else f"{v:g}" for v in m.values())
                                 + f" {target_met(m['gp'], m['tpe'], m['random'])}")
                print(f"| {r['problem']} | " + " | ".join(cells) + " |")
    print("\n| problem | ask+tell @60 obs median (ms) | mean (ms) | before (ls_prior 0), median (ms) | GP run to 0.1 dB or the cap (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['problem']} | {r['overhead_ms_at_60']} | {r['overhead_ms_at_60_mean']} | "
              f"{r['overhead_ms_at_60_before']} | {r['gp_run_s']} |")
    print(f"\nend to end: 60-evaluation 5-knob simulated tune (c2m-10in module_rx): {e2e_s:.2f} s, "
          f"{e2e_n} evaluations, {e2e_b:.2f} -> {e2e_t:.2f} mV")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "end_to_end_s": e2e_s, "seeds": len(seeds),
                                         "cap_gp": args.cap_gp, "cap": args.cap}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
