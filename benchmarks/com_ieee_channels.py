"""COM of the shared IEEE 802.3ck channels with their aggressors, KR and C2C profiles, standard (MM) phase.

For each channel (tracy DPO 4 / 10 / 12 in from ../shared/channels-ieee, with every FEXT/NEXT file of its
folder; a 14 in variant = the 12 in thru + 2 in of Megtron 7 stripline, eqtune's trace model) and each
profile (``ieee-3ck-kr``, ``ieee-3ck-c2c``): an exhaustive search of the profile's TX FFE x CTLE grid
(every feasible point, ``KnobSpace.grid()``) for the best COM with the Mueller-Muller phase (93A.1.6), COM
at DER_0 of the profile; then, at that EQ, COM with the "best phase" option for comparison. Package case 1
of the profile (KR: 12 mm everywhere; C2C: TX/FEXT 13 mm, RX/NEXT 11 mm). 10 MHz frequency step (the files').

Usage: ``nice -n 10 python benchmarks/com_ieee_channels.py [--coarse | --refine]`` (``--coarse``: TX taps in
0.04 steps, for a quick look; ``--refine``: the 0.04-step search, then every 0.02-step point within +-0.06 of
each tap and +-2 dB of each CTLE gain around its best, a local search, not exhaustive). Writes
``benchmarks/results/com_ieee_channels[_coarse|_refined].json`` (``--out`` to name another file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def shared() -> Path:
    for c in (os.environ.get("EQTUNE_SHARED"), HERE.parent.parent / "shared", HERE.parent.parent.parent / "shared"):
        if c and (Path(c) / "channels-ieee").is_dir():
            return Path(c)
    sys.exit("../shared/channels-ieee not found (set EQTUNE_SHARED)")


def channel_toml(tmp: Path, n_in: int, profile: str) -> Path:
    base = 12 if n_in == 14 else n_in
    d = shared() / "channels-ieee" / f"tracy_3ck_02_0119_DPO_{base}in"
    lines = [f'name = "tracy-{n_in}in"', f'serdes_profile = "{profile}"', "[[segments]]", 'type = "touchstone"',
             f'file = "{d / f"DPO_{base}in_Meg7_THRU.s4p"}"']
    if n_in == 14:
        lines += ["[[segments]]", 'type = "trace"', "length_in = 2", 'material = "megtron7"']
    for f in sorted(d.glob("*_FE*.s4p")):
        lines += ["[[aggressors]]", 'kind = "FEXT"', f'file = "{f}"']
    for f in sorted(d.glob("*_NE*.s4p")):
        lines += ["[[aggressors]]", 'kind = "NEXT"', f'file = "{f}"']
    p = tmp / f"tracy{n_in}_{profile}.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def run_one(path: Path, profile: str, coarse: bool, refine: bool = False) -> dict:
    from eqtune.channel import load_channel
    from eqtune.eye.engine import EyeEngine

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ch = load_channel(path)
    t0 = time.perf_counter()
    eng = EyeEngine(ch, profile, direction="serdes")
    ks = eng.knob_space()
    grid = ks.grid()
    full = grid
    tap_cols = [i for i, n in enumerate(ks.names) if n.startswith("tx_")]
    if coarse or refine:
        keep = np.all(np.isclose(np.round(grid[:, tap_cols] / 0.04) * 0.04, grid[:, tap_cols]), axis=1)
        grid = grid[keep]

    def search(g):
        best = None
        for s in range(0, len(g), 20000):
            b = eng.evaluate_batch(g[s:s + 20000], ks.names)
            i = int(np.argmax(b.com_db))
            if best is None or b.com_db[i] > best[0]:
                best = (float(b.com_db[i]), b.points[i])
        return best

    best = search(grid)
    n_points = len(grid)
    if refine:
        c = np.array([best[1][n] for n in ks.names])
        lim = np.array([0.06 + 1e-9 if i in tap_cols else 2.0 + 1e-9 for i in range(len(ks.names))])
        near = full[np.all(np.abs(full - c) <= lim, axis=1)]
        b2 = search(near)
        n_points += len(near)
        if b2[0] > best[0]:
            best = b2
    t_search = time.perf_counter() - t0
    r_mm = eng.evaluate(best[1])
    r_best = EyeEngine(ch, profile, direction="serdes", sampling="best").evaluate(best[1])
    f = ch.freqs_hz
    k = int(np.argmin(np.abs(f - 26.5625e9)))
    il_pkg = float(-20 * np.log10(abs(eng._packaged_s21(ch.sdd21, ch.sdd11, ch.sdd22, "tx")[k])))
    return {"channel": ch.name, "profile": profile, "aggressors": [a.kind for a in ch.aggressors],
            "il_db_26g56": float(-20 * np.log10(abs(ch.sdd21[k]))), "il_db_26g56_with_packages": il_pkg,
            "points_searched": int(n_points), "search": "refined" if refine else ("coarse" if coarse else "exhaustive"), "search_s": round(t_search, 1), "com_db_mm": r_mm.com_db,
            "eq": {kk: v for kk, v in r_mm.eq.items()}, "phase_ui_mm": r_mm.sample_phase_ui,
            "eh_min_mv_at_1e-6": r_mm.eye_height_min_mv, "com_db_best_phase_same_eq": r_best.com_db,
            "phase_ui_best": r_best.sample_phase_ui, "der0": r_mm.com_probability}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coarse", action="store_true")
    ap.add_argument("--refine", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--channels", default="4,10,12,14")
    ap.add_argument("--profiles", default="ieee-3ck-kr,ieee-3ck-c2c")
    a = ap.parse_args(argv)
    out = []
    with tempfile.TemporaryDirectory() as td:
        for n in (int(x) for x in a.channels.split(",")):
            for prof in a.profiles.split(","):
                r = run_one(channel_toml(Path(td), n, prof), prof, a.coarse, a.refine)
                out.append(r)
                print(json.dumps(r), flush=True)
    RESULTS.mkdir(exist_ok=True)
    name = a.out or ("com_ieee_channels_coarse.json" if a.coarse else
                     "com_ieee_channels_refined.json" if a.refine else "com_ieee_channels.json")
    (RESULTS / name).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
