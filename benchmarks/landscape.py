"""How hard is a tuning problem? Landscape figures of bench_tune's exhaustive grids.

For each problem (bench_tune's indices; grids from its cache, computed with the real engine when absent):

* open: fraction of feasible codes with an open eye (margin > 0);
* within 0.1 / 0.5 dB: how many codes are that close to the grid optimum (eye height, mV);
* local maxima: codes no neighbour beats, under the integer moves of the optimizer's local search
  (``eqtune.tune.acquisition.move_offsets`` without the +-2 moves: one knob +-1, two knobs +-1 each);
  ``open`` = how many of them have an open eye;
* basin: the fraction of feasible (and of open) codes from which steepest ascent over those moves ends on
  the grid optimum, i.e. the chance that a pure hill climb from a random code finds it. Steepest ascent on
  a grid is the discrete analogue of gradient ascent; the basin of attraction is the usual measure of how
  "deceptive" a landscape is (e.g. Jones & Forrest, "Fitness distance correlation as a measure of problem
  difficulty for genetic algorithms", ICGA 1995; Ochoa et al., "A study of NK landscapes' basins and
  local optima networks", GECCO 2008).

A problem whose optimum has a basin of a few per cent and a single code within 0.1 dB cannot be solved
reliably in a few dozen evaluations by climbing; only a model that predicts where the far basin is can.

Run:  python benchmarks/landscape.py [--problems 11,12,13,14,16] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tune as bt  # noqa: E402

from eqtune.tune.acquisition import move_offsets  # noqa: E402
from eqtune.tune.space import IndexedSpace  # noqa: E402


def unit_moves(d: int) -> np.ndarray:
    """The local search's +-1 moves: one knob +-1, two knobs +-1 each (``move_offsets`` minus +-2)."""
    m = move_offsets(d)
    return m[np.abs(m).max(axis=1) == 1]


def landscape(idx: np.ndarray, n_levels: np.ndarray, margins: np.ndarray) -> dict[str, float]:
    """Landscape figures of margins at level-index rows ``idx`` (feasible codes only) in a box of
    ``n_levels`` levels per knob (see the module notes)."""
    shape = tuple(int(v) for v in n_levels)
    flat = np.full(int(np.prod(shape)), -np.inf)
    lin = np.ravel_multi_index(idx.T, shape)
    flat[lin] = margins
    n = flat.size
    coords = np.array(np.unravel_index(np.arange(n), shape)).T
    best_nb = np.arange(n)
    best_val = flat.copy()
    is_max = np.isfinite(flat)
    hi = np.asarray(shape) - 1
    for v in unit_moves(len(shape)):
        c2 = coords + v
        ok = np.all((c2 >= 0) & (c2 <= hi), axis=1)
        j = np.ravel_multi_index(np.clip(c2, 0, hi).T, shape)
        val = np.where(ok, flat[j], -np.inf)
        is_max &= flat >= val
        up = val > best_val
        best_nb[up], best_val[up] = j[up], val[up]
    ptr = best_nb.copy()
    for _ in range(64):  # pointer doubling: 2^64 steps of steepest ascent
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    g = int(np.argmax(flat))
    feas = np.isfinite(flat)
    opn = feas & (flat > 0)
    opt = float(flat[g])
    loss = 20.0 * np.log10(opt / np.maximum(margins, 1e-12)) if opt > 0 else np.full(len(margins), np.inf)
    return {"codes": int(feas.sum()), "optimum_mv": round(opt, 3), "open": float(opn.sum() / feas.sum()),
            "within_0.1dB": int(np.sum(loss <= 0.1)), "within_0.5dB": int(np.sum(loss <= 0.5)),
            "local_maxima": int(is_max.sum()), "local_maxima_open": int((is_max & opn).sum()),
            "basin": float(np.mean(ptr[feas] == g)), "basin_open": float(np.mean(ptr[opn] == g)) if opn.any() else 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", default="11,12,13,14,16")
    ap.add_argument("--cache", type=Path, default=bt.ROOT / "benchmarks" / ".cache")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    rows = []
    print("| problem | codes | open | within 0.1 dB | within 0.5 dB | local maxima (open) | basin of the optimum "
          "(of open codes) |")
    print("|---|---|---|---|---|---|---|")
    for i in (int(v) for v in args.problems.split(",")):
        name, ch, direction, knobs = bt.PROBLEMS[i]
        src, grid, ms, _ = bt.grid_table(name, ch, direction, knobs, args.cache)
        isp = IndexedSpace(src.space)
        idx = np.asarray(isp.grid, dtype=int)  # grid_table's rows are isp.values(isp.grid), in that order
        assert np.allclose(isp.values(idx), grid)
        r = {"problem": name, "index": i, **landscape(idx, np.asarray(isp.n_levels), np.asarray(ms, dtype=float))}
        rows.append(r)
        print(f"| {name} | {r['codes']} | {100 * r['open']:.1f} % | {r['within_0.1dB']} | {r['within_0.5dB']} | "
              f"{r['local_maxima']} ({r['local_maxima_open']}) | {100 * r['basin']:.1f} % ({100 * r['basin_open']:.1f} %) |",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
