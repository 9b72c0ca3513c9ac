"""Live-like tuning benchmark: noisy BER counts with a finite dwell, scored on the TRUE margin of the
recommendation after N measurements (not on the luckiest measurement).

Each problem's exhaustive grid (bench_tune's cached eye heights, real engine) is the truth. A
measurement reads it the way a live tune does: through a bit-error count. The link is taken as
Gaussian-noise limited (below), stressed so that the grid optimum reads BER = ``--ber-opt`` (1e-6: a
noise-loaded measurement, what an FAE does so that a dwell of milliseconds counts errors at all; at
nominal noise the top codes of these links are at 1e-15..1e-25 and any dwell counts zero). Errors ~ Poisson(BER x bits) as the emulators count them
(eqtune.emulate.link.EmulatedLink.count_errors), with ``--bits`` per measurement (1e8, about
1 ms at 106 Gb/s: ~100 errors at the optimum). The measured margin is sigma x Qinv(BER counted), the BER
floored at 2.996 errors (eqtune.tune.live.ber_floor, the 95 % zero-count bound), mapped back to mV
(below). The true margin is the
grid's eye height; the score of a recommendation is its loss 20 log10(optimum / true eh) in dB.

Link model (Gaussian noise): the eye height at the target BER is eh = A - 2 sigma Qinv(BER target), so the
slicer's BER is Q(eh / (2 sigma) + Qinv(target)): linear in Q. The stress (noise loading) sets the two
ends: a code with eh = 0 counts ``--ber-closed`` (1e-3: a closed 1e-6 eye still counts pre-FEC errors,
not 0.5) and the grid optimum counts ``--ber-opt`` (1e-6). BER = Q(a eh + c) with c = Qinv(ber_closed),
a = (Qinv(ber_opt) - c) / optimum; the measured margin maps the counted BER back, (Qinv(BER) - c) / a
(mV). Far-closed eyes still read BER ~0.5: flat, as on a real link.

Optimizers, same seeds and the same cap (``--cap``), scored at ``--at`` (15, 25, 40, 60 measurements):
eqtune's GP with the counts' own noise (``margin_var`` from ``eqtune.tune.recommend.margin_variance``: the
noise-aware recommendation and the confirm repeats, which count as measurements), ``gp_norepeat`` (the same
without repeats), ``gp_fitted`` (the variance withheld: one fitted white noise, best posterior mean, the rule
before the noise-aware recommendation), random search and Optuna TPE / GPSampler (their recommendation: the best measured trial,
``study.best_trial``). Also scored, per run: how far (dB) the final pick's true eye height is below the
truly best code the run had measured (``final_below_measured_db``; > 0.1 dB is a pick the measurements
should have kept). Optuna/torch only in the benchmark's own venv. ``--set NAME=VALUE`` overrides a
``eqtune.tune.recommend`` constant (choose them on the library channels only).

Run:  nice python benchmarks/bench_tune_noisy.py [--seeds 8] [--problems 0,1,8,9,10] [--kinds gp,random,tpe] [--json out.json]
Problems are bench_tune's indices: 0-1 library channels (settings may be chosen there), 8-10 IEEE
802.3ck held-out channels (report only).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tune as bt  # noqa: E402

from eqtune.tune import TableSource, recommend, tune  # noqa: E402
from eqtune.tune.live import ber_floor  # noqa: E402
from eqtune.tune.recommend import VARIANCE_KEY, margin_variance  # noqa: E402
from eqtune.tune.source import Measurement  # noqa: E402
from eqtune.tune.space import IndexedSpace  # noqa: E402


def _qinv(ber: float) -> float:
    from scipy.special import erfcinv

    return math.sqrt(2.0) * float(erfcinv(2.0 * min(max(ber, 1e-300), 0.5)))


def _q(x: np.ndarray) -> np.ndarray:
    from scipy.special import erfc

    return 0.5 * erfc(np.asarray(x, dtype=float) / math.sqrt(2.0))


class CountingSource:
    """A grid of true eye heights (mV) read through Poisson bit-error counts (see the module notes)."""

    def __init__(self, table: TableSource, a: float, c: float, bits: float, seed: int,
                 known_noise: bool = True) -> None:
        self.table = table
        self.space = table.space
        self.a, self.c = float(a), float(c)
        self.bits = int(bits)
        self.rng = np.random.default_rng(seed)
        self.deterministic = False
        self.units = "mV"
        self.objective = "eye_height (counted)"
        self.known_noise = known_noise  # report each margin's variance from its count (tune.recommend)

    def default_point(self):
        return self.table.default_point()

    def true_margin(self, point) -> float:
        return float(self.table.measure(point).margin)

    def measure(self, point) -> Measurement:
        eh = self.true_margin(point)
        ber = float(_q(self.a * eh + self.c))
        errors = int(self.rng.poisson(ber * self.bits))
        counted = ber_floor(self.bits, min(errors, self.bits))
        metrics: dict = {"errors": errors, "bits": self.bits}
        if self.known_noise:  # delta method on the binomial count, margin = (Qinv(BER) - c) / a
            metrics[VARIANCE_KEY] = margin_variance(min(errors, self.bits), self.bits, "q_linear", q_per_unit=self.a)
        return Measurement((_qinv(counted) - self.c) / self.a, metrics, 0.0)


def loss_db(opt: float, eh: float) -> float:
    return 20.0 * math.log10(opt / eh) if eh > 0 else math.inf


class Curve(list):
    """True margin (mV) of the recommendation after each measurement, and ``below_db``: how far (dB) the
    final pick is below the truly best code the run had measured (0 when it is that code)."""

    below_db: float = 0.0


def _below(src: CountingSource, final: float, measured: list[dict]) -> float:
    best = max([src.true_margin(_point(src, c)) for c in measured] or [final])
    return max(0.0, loss_db(best, final))


def _point(src: CountingSource, codes: dict) -> dict:
    pt = dict(src.table.default_point())
    pt.update({k: float(v) for k, v in codes.items()})
    return pt


def run_ours(src: CountingSource, isp: IndexedSpace, seed: int, cap: int, remeasure: int,
             options: dict | None = None) -> Curve:
    """True margin of the recommendation after each measurement (GP: best posterior mean; during the
    initial design the best measured)."""
    recs = Curve()

    def cb(p) -> None:
        codes = p.recommended if p.recommended is not None else p.best_codes
        recs.append(src.true_margin(_point(src, codes)))

    r = tune(src, budget=cap, seed=seed, optimizer="gp", callback=cb, remeasure_top_k=remeasure,
             optimizer_options=options or None)
    final = src.true_margin(r.tuned.point)
    recs[-1] = final  # the run's own final pick (its recommendation rule at the end)
    recs.below_db = _below(src, final, [e.codes for e in r.history])
    return recs


def run_random(src: CountingSource, isp: IndexedSpace, seed: int, cap: int) -> Curve:
    r = tune(src, budget=cap, seed=seed, optimizer="random")
    best, out = -math.inf, Curve()
    for e in r.history:  # the best MEASURED point so far is its pick
        if e.margin > best:
            best, pick = e.margin, e.codes
        out.append(src.true_margin(_point(src, pick)))
    out.below_db = _below(src, out[-1], [e.codes for e in r.history])
    return out


def run_optuna(src: CountingSource, isp: IndexedSpace, seed: int, cap: int, sampler: str) -> Curve:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    smp = optuna.samplers.GPSampler(seed=seed) if sampler == "gp" else optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="maximize", sampler=smp)
    study.enqueue_trial({n: int(i) for n, i in zip(isp.names, isp.key_of(src.default_point()))})
    rng = np.random.default_rng(seed)
    out = Curve()
    best = [-math.inf, None]
    seen: list[float] = []

    def objective(trial):
        key = tuple(trial.suggest_int(n, 0, int(m) - 1) for n, m in zip(isp.names, isp.n_levels))
        if not isp.is_feasible(key):
            key = isp.nearest_feasible(np.asarray(key, dtype=float), set(), rng)
        y = src.measure(isp.point(key)).margin
        seen.append(src.true_margin(isp.point(key)))
        if y > best[0]:
            best[:] = [y, key]
        out.append(src.true_margin(isp.point(best[1])))
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(objective, n_trials=cap)
    out.below_db = max(0.0, loss_db(max(seen), out[-1])) if seen else 0.0
    return out


# eqtune variants: (known per-observation noise, settings of eqtune.tune.recommend, GP options)
GP_VARIANTS: dict[str, tuple[bool, dict, dict]] = {
    # the optimizer as it is: count-derived noise, LCB pick, confirm repeats, the endgame, and the measured
    # sources' local steps (eqtune.tune.base.MEASURED_GP_OPTIONS)
    "gp": (True, {}, {}),
    # the loop before the endgame and the measured sources' local steps (same run, same seeds)
    "gp_before": (True, {"ENDGAME_SHARE": 0.0, "GUARD_Z": math.inf}, {"axis_first": False, "local_acq": "ucb"}),
    "gp_noguard": (True, {"GUARD_Z": math.inf}, {}),  # ablation: tune()'s final pick without the guard
    "gp_no_endgame": (True, {"ENDGAME_SHARE": 0.0, "GUARD_Z": math.inf}, {}),  # ablation: the local steps only
    "gp_ucb_local": (True, {"GUARD_Z": math.inf}, {"axis_first": False, "local_acq": "ucb"}),  # ablation: the endgame only
    "gp_norepeat": (True, {"CLOSE_Z": 0.0, "ENDGAME_SHARE": 0.0}, {}),  # count-derived noise, no repeats
    "gp_fitted": (False, {}, {}),  # one fitted white noise, best posterior mean, no repeats (the rule before count-derived noise)
}


def _with_settings(settings: dict, fn, *a):
    old = {k: getattr(recommend, k) for k in settings}
    try:
        for k, v in settings.items():
            setattr(recommend, k, v)
        return fn(*a)
    finally:
        for k, v in old.items():
            setattr(recommend, k, v)


def _load() -> str:
    import os

    try:
        return " / ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--seed0", type=int, default=0, help="first seed")
    ap.add_argument("--cap", type=int, default=60, help="measurements per run, every optimizer")
    ap.add_argument("--at", default="15,25,40,60", help="score the recommendation after these many measurements")
    ap.add_argument("--bits", type=float, default=1e8, help="bits counted per measurement (finite dwell)")
    ap.add_argument("--ber-opt", type=float, default=1e-6, help="BER the grid optimum reads (noise loading)")
    ap.add_argument("--ber-closed", type=float, default=1e-3, help="BER a code with eye height 0 reads")
    ap.add_argument("--problems", default="0,1,8,9,10")
    ap.add_argument("--kinds", default="gp,gp_norepeat,gp_fitted,random,tpe,gpsampler",
                    help=f"optimizers: {', '.join(GP_VARIANTS)}, random, tpe, gpsampler")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override an eqtune.tune.recommend constant for the gp variants (choose on library channels)")
    ap.add_argument("--options", default="", help="GP options for the gp variants, NAME=VALUE comma list")
    ap.add_argument("--gps-seeds", type=int, default=None, help="GPSampler on the first N seeds only (slow)")
    ap.add_argument("--cache", type=Path, default=bt.ROOT / "benchmarks" / ".cache")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    seeds = list(range(args.seed0, args.seed0 + args.seeds))
    ats = [int(x) for x in args.at.split(",")]
    overrides = {k: float(v) for k, v in (item.split("=", 1) for item in args.set)}
    kinds = [k for k in args.kinds.split(",") if k]
    options: dict = {}
    if args.options:
        from eqtune.tune.base import parse_optimizer_options

        options = parse_optimizer_options("gp", args.options.split(","))
    if any(k in ("tpe", "gpsampler") for k in kinds):
        try:
            import optuna  # noqa: F401

            if "gpsampler" in kinds:
                import torch  # noqa: F401
        except ImportError:
            print("optuna/torch not installed (benchmark venv only): tpe/gpsampler are skipped", file=sys.stderr)
            kinds = [k for k in kinds if k not in ("tpe", "gpsampler")]
    rows = []
    load_before = _load()
    t_all = time.perf_counter()
    for i in (int(x) for x in args.problems.split(",")):
        name, ch, d, knobs = bt.PROBLEMS[i]
        s, grid, ms, _ = bt.grid_table(name, ch, d, knobs, args.cache)
        table = TableSource(s.space, grid, ms, start=s.default_point(), units="mV")
        isp = IndexedSpace(s.space)
        opt = float(ms.max())
        q0 = _qinv(args.ber_closed)
        qa = (_qinv(args.ber_opt) - q0) / opt
        row = {"problem": name, "index": i, "held_out": name.startswith("ieee"), "optimum_mv": opt, "q_per_mv": qa, "q_at_0mv": q0}
        for kind in kinds:
            t0 = time.perf_counter()
            curves = []
            for sd in (seeds[: args.gps_seeds] if kind == "gpsampler" and args.gps_seeds else seeds):
                known, settings, gp_opts = GP_VARIANTS.get(kind, (True, {}, {}))
                src = CountingSource(table, qa, q0, args.bits, seed=10_000 + sd, known_noise=known)
                if kind in GP_VARIANTS:
                    c = _with_settings({**settings, **overrides}, run_ours, src, isp, sd, args.cap, 0,
                                       {**gp_opts, **options})
                elif kind == "random":
                    c = run_random(src, isp, sd, args.cap)
                else:
                    c = run_optuna(src, isp, sd, args.cap, "gp" if kind == "gpsampler" else "tpe")
                curves.append(c)
            loss = {n: [round(loss_db(opt, c[min(n, len(c)) - 1]), 3) for c in curves] for n in ats}
            first = [next((n for n, v in enumerate(c, 1) if loss_db(opt, v) <= 0.1), None) for c in curves]
            below = [round(float(getattr(c, "below_db", 0.0)), 3) for c in curves]
            row[kind] = {"loss_db": {str(n): v for n, v in loss.items()}, "first_within_0.1dB": first,
                         "final_below_measured_db": below,
                         "s_per_run": round((time.perf_counter() - t0) / len(curves), 2)}
            print(f"{name} {kind}: " + "; ".join(
                f"@{n} median {np.median(v):.3f} dB ({sum(x <= 0.1 for x in v)}/{len(v)}) {v}" for n, v in loss.items())
                + f"; first within 0.1 dB {first}; final pick > 0.1 dB below a measured code "
                f"{sum(b > 0.1 for b in below)}/{len(below)} {below}; {row[kind]['s_per_run']} s/run", flush=True)
        rows.append(row)
    print(f"\nlive-like (Poisson counts, {args.bits:.0e} bits a measurement, optimum at BER {args.ber_opt:g}): "
          f"loss of the recommendation's TRUE eye height after {'/'.join(map(str, ats))} measurements, dB "
          f"(median of {len(seeds)} seeds {seeds[0]}-{seeds[-1]}; k/n = runs within 0.1 dB); "
          f"load average before {load_before}, after {_load()}; {time.perf_counter() - t_all:.0f} s")
    if overrides:
        print(f"recommend settings overridden: {overrides}")
    print("| problem | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for r in rows:
        cells = []
        for k in kinds:
            cells.append(" / ".join(f"{np.median(v):.2f} ({sum(x <= 0.1 for x in v)}/{len(v)})"
                                    for v in r[k]["loss_db"].values()))
        print(f"| {r['problem']}{'' if r['held_out'] else ' (library)'} | " + " | ".join(cells) + " |")
    print("\nfinal picks > 0.1 dB below the truly best code the run had measured (worst dB), per optimizer:")
    for r in rows:
        print(f"  {r['problem']}{'' if r['held_out'] else ' (library)'}: " + "; ".join(
            f"{k} {sum(b > 0.1 for b in r[k]['final_below_measured_db'])}/{len(r[k]['final_below_measured_db'])} "
            f"({max(r[k]['final_below_measured_db']):.2f})" for k in kinds))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seeds": seeds, "cap": args.cap, "at": ats,
                                         "bits": args.bits, "ber_opt": args.ber_opt, "ber_closed": args.ber_closed,
                                         "overrides": overrides, "load_before": load_before, "load_after": _load(),
                                         "engine_version": bt.engine_version()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
