"""Measurements a live tune spends, and what they buy: the stop and warm-start rules side by side.

    python benchmarks/bench_live_stops.py [--seeds 10] [--lanes 8] [--screen off|auto] [--json out.json]

Every configuration tunes the same emulated modules (c2m-10in, Tx input EQ fixed at power-up, module
PRBS checker, the 1e-12 dwell on the emulator's virtual clock, measurement noise on) with the same seeds:

* ``budget 30``: the plain loop (the behaviour before patience existed);
* ``patience 6``: stop a lane group once every lane's recommendation held 6 evaluations;
* ``patience 6 + warm model``: the same, measuring the channel model's optimum first.

Reported per configuration, over seeds x lanes: evaluations used (median, mean) and the loss of the
verified codes against the best code of that lane, in dB of Q of the emulator's true BER (0 = the best
code; the truth is the emulator's own noise-free link quality). Ratios are against ``budget 30`` in the
same run. ``--screen off`` (the default here, as the figures in docs/tuning.md were measured) keeps every
search measurement at the full dwell; ``--screen auto`` runs what a session does by default at this
dwell (screened: eqtune.session.config.choose_screen). On real hardware each evaluation costs the dwell (about 28 s for a 1e-12 target at 106 Gb/s).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def q_db(ber: float) -> float:
    """Q factor (dB) of a BER: 20 log10(sqrt(2) erfcinv(2 BER)) (Gaussian tail)."""
    from scipy.special import erfcinv

    return 20 * math.log10(math.sqrt(2) * float(erfcinv(2 * min(max(ber, 1e-300), 0.49))))


CONFIGS = {
    "budget 30": {},
    "patience 6": {"patience": 6},
    "patience 6 + warm model": {"patience": 6, "warm": "model"},
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--lanes", type=int, default=8)
    ap.add_argument("--screen", choices=("off", "auto"), default="off",
                    help="off: unscreened, as the documented figures; auto: the session default (screened at this dwell)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    from eqtune.drivers.measurement import dwell_for
    from eqtune.drivers.transport import parse_resource
    from eqtune.emulate.registry import emulator_for, reset_emulators
    from eqtune.session.live import LiveConfig, LiveTuner, load_session

    dwell = dwell_for(1e-12, 106.25e9)
    lanes = list(range(1, args.lanes + 1))
    rows = {}
    tmp = Path(tempfile.mkdtemp(prefix="eqtune-bench-live-stops-"))
    for name, extra in CONFIGS.items():
        evals, loss = [], []
        for seed in range(args.seeds):
            reset_emulators()  # the same module state and noise stream for every configuration
            res = f"emu:c2m-10in?seed={100 + seed}&settle_ms=0&fast=1&adaptive=0"
            link = emulator_for(parse_resource(res)).link
            cfg = LiveConfig(module=res, lanes=lanes, dwell_s=dwell, budget=30, seed=seed, channel="c2m-10in",
                             screen=args.screen, **extra)
            tuner = LiveTuner.create(cfg, sessions_dir=tmp)
            result = tuner.run()
            view = load_session(tuner.session_id, tmp)
            n = len(view.measurements())
            for ln in lanes:
                truth = {t: q_db(link.ber(ln, "module_rx", {"tx_eq": t})) for t in range(11)}
                pick = (result.lanes[ln].recommended or result.lanes[ln].original)["tx_eq"]
                evals.append(n)
                loss.append(max(truth.values()) - truth[pick])
        rows[name] = {"evaluations_median": statistics.median(evals), "evaluations_mean": statistics.mean(evals),
                      "q_loss_db_median": statistics.median(loss), "q_loss_db_max": max(loss),
                      "lanes_within_0.5dB": sum(x <= 0.5 for x in loss), "lanes": len(loss)}
        print(name, rows[name], flush=True)
    base = rows["budget 30"]["evaluations_mean"]
    print(f"\nmodule checker, c2m-10in, {args.seeds} seeds x {len(lanes)} lanes (lanes measured together)")
    print("| configuration | evaluations (median / mean) | vs budget 30 | Q loss of the pick (median / max dB) | lanes within 0.5 dB |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['evaluations_median']:g} / {r['evaluations_mean']:.1f} | "
              f"{r['evaluations_mean'] / base:.2f}x | {r['q_loss_db_median']:.2f} / {r['q_loss_db_max']:.2f} | "
              f"{r['lanes_within_0.5dB']}/{r['lanes']} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seeds": args.seeds, "lanes": len(lanes)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
