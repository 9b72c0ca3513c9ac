"""Transfer benchmark: an emulated fleet (modules x 8 lanes with per-lane variation), evaluations per
lane to within 0.1 dB of that lane's own optimum, cold vs warm-started from earlier lanes.

Fleet: every lane is the channel with an extra trace loss proportional to frequency (normalized at
Nyquist), as eqtune's emulator varies its lanes (eqtune.emulate.link: sdd21 x
10^(-extra f / f_Nyquist / 20)): extra = module offset ~ N(0, ``--module-sd`` 1.0 dB) + lane offset ~
N(0, ``--lane-sd`` 0.6 dB, the emulator's default lane spread). Each lane's exhaustive grid (real engine,
cached in benchmarks/.cache under its content key) is its truth; margins are exact (simulation), so a
lane's score is the number of its own evaluations until the best is within 0.1 dB of its optimum.

Per seed: module 1 lane 1 runs cold (budget ``--first-budget``); every later lane (lanes 2-8 of module
1, then all lanes of module 2) runs ``--budget`` evaluations with

* ``cold``: nothing from earlier lanes;
* ``start``: starting at the earlier lanes' best code (no model transfer: what ``--warm`` with a profile
  does);
* ``prior``: the earlier lanes' observations as the GP's prior mean (eqtune.tune.transfer).

The knobs are the 4 host-Rx knobs (rx_pre, rx_post, rx_amp, ctle_gdc: 4,352 codes) to keep 16 grids a
channel cheap. Channel c2m-10in is a library channel (settings may be chosen there); the IEEE channels
are held out (report only).

Run:  nice python benchmarks/bench_tune_fleet.py [--seeds 5] [--channels c2m-10in,ieee-tracy-10in,ieee-gore]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tune as bt  # noqa: E402

from eqtune.tune import TableSource, first_within, tune  # noqa: E402

KNOBS = ["rx_pre", "rx_post", "rx_amp", "ctle_gdc"]
CHANNELS = {"c2m-10in": "c2m-10in"}
if bt._IEEE is not None:
    CHANNELS["ieee-tracy-10in"] = str(bt._IEEE / "tracy_3ck_02_0119_DPO_10in/DPO_10in_Meg7_THRU.s4p")
    CHANNELS["ieee-gore"] = str(bt._IEEE / "gore_3ck_02_0519_C2C_12dB/C2C_PCB_SYSVIA_12dB_thru.s4p")


def lane_channel(base, extra_db: float, tag: str):
    f = np.asarray(base.freqs_hz, dtype=float)
    scale = 10 ** (-(extra_db * f / base.nyquist_hz) / 20.0)
    return replace(base, sdd21=np.asarray(base.sdd21) * scale, name=f"{base.name}#{tag}")


def fleet_tables(name: str, path: str, modules: int, lanes: int, module_sd: float, lane_sd: float,
                 cache: Path, fleet_seed: int = 7):
    from eqtune.channel import load_channel

    base = load_channel(path)
    rng = np.random.default_rng(fleet_seed)
    out = []
    for m in range(modules):
        mo = float(rng.normal(0.0, module_sd))
        row = []
        for ln in range(lanes):
            extra = mo + float(rng.normal(0.0, lane_sd))
            ch = lane_channel(base, extra, f"m{m + 1}l{ln + 1}")
            src, grid, ms, _ = bt.grid_table(f"fleet {name} m{m + 1} l{ln + 1}", ch, "host_rx", KNOBS, cache)
            row.append((TableSource(src.space, grid, ms, start=src.default_point(), units="mV"), float(ms.max()), extra))
        out.append(row)
    return out


def score(r, opt: float) -> int | None:
    return first_within(r.best_so_far(), opt, tol_db=0.1, units="mV")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--modules", type=int, default=2)
    ap.add_argument("--lanes", type=int, default=8)
    ap.add_argument("--module-sd", type=float, default=1.0)
    ap.add_argument("--lane-sd", type=float, default=0.6)
    ap.add_argument("--first-budget", type=int, default=40)
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--channels", default=",".join(CHANNELS))
    ap.add_argument("--cache", type=Path, default=bt.ROOT / "benchmarks" / ".cache")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for cname in args.channels.split(","):
        fleet = fleet_tables(cname, CHANNELS[cname], args.modules, args.lanes, args.module_sd, args.lane_sd, args.cache)
        res = {"cold": {"lanes_2_8": [], "module_2": []}, "start": {"lanes_2_8": [], "module_2": []},
               "prior": {"lanes_2_8": [], "module_2": []}, "first_lane": []}
        for seed in range(args.seeds):
            t0, o0, _ = fleet[0][0]
            first = tune(t0, budget=args.first_budget, seed=seed)
            res["first_lane"].append(score(first, o0))
            earlier = {"start": [first], "prior": [first]}
            for m, mod in enumerate(fleet):
                for ln, (table, opt, _) in enumerate(mod):
                    if m == 0 and ln == 0:
                        continue
                    bucket = "lanes_2_8" if m == 0 else "module_2"
                    s = 100 * seed + 10 * m + ln
                    cold = tune(table, budget=args.budget, seed=s)
                    res["cold"][bucket].append(score(cold, opt))
                    best = max(earlier["start"], key=lambda r: r.tuned.margin)  # noqa: B023
                    st = dict(table.default_point())
                    st.update({k: float(v) for k, v in best.tuned.codes.items()})
                    rs = tune(table, budget=args.budget, seed=s, start=st)
                    res["start"][bucket].append(score(rs, opt))
                    earlier["start"].append(rs)
                    rp = tune(table, budget=args.budget, seed=s, prior=earlier["prior"])
                    res["prior"][bucket].append(score(rp, opt))
                    earlier["prior"].append(rp)
            print(f"{cname} seed {seed}: first lane {res['first_lane'][-1]}; prior lanes 2-8 "
                  f"{res['prior']['lanes_2_8'][-(args.lanes - 1):]}, module 2 {res['prior']['module_2'][-args.lanes:]}",
                  flush=True)
        out[cname] = res
    print(f"\nevaluations per lane to within 0.1 dB of the lane's optimum (medians over {args.seeds} seeds x lanes; "
          f"later lanes: budget {args.budget}, misses counted as misses)")
    print("| channel | first lane (cold) | lanes 2-8: cold / start / prior | module 2: cold / start / prior |")
    print("|---|---|---|---|")
    for cname, res in out.items():
        def cell(b, res=res):
            return " / ".join(bt.show_median(res[k][b], args.budget) for k in ("cold", "start", "prior"))
        print(f"| {cname} | {bt.show_median(res['first_lane'], args.first_budget)} | {cell('lanes_2_8')} | "
              f"{cell('module_2')} |")
    if args.json:
        args.json.write_text(json.dumps({"channels": out, "args": {k: (str(v) if isinstance(v, Path) else v)
                                                                   for k, v in vars(args).items()},
                                         "engine_version": bt.engine_version()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
