"""Where the GP looks besides its sampled candidates, and what it re-measures in exhaustive mode.

Pure functions of the index space and the observations (no state: the optimizer's JSON state and the
seed determine every result):

* ``limit_moves``: the incumbent with one or two knobs moved to a range limit. Every open optimum of
  the benchmark problems sits on a range limit (rx_pre = 7, rx_amp = 3, ctle_gdc = 0, tx_eq = 10, issue
  20), and a Chebyshev step of one code needs several steps to get there.
* ``corner_keys``: box corners for an initial design (off by default: not measured to pay).
* ``close_contender``: once every code has been measured (space no larger than the budget), the close
  contender to re-measure next: the best few by observed mean, each measured twice, then only those
  within two standard errors of the best (a two-sample z test at about 95 %, noise sd pooled from the
  repeats; e.g. Montgomery, *Design and Analysis of Experiments*, 8th ed., Wiley 2013, sec. 2.4).
"""

from __future__ import annotations

import numpy as np

from eqtune.tune.space import IndexedSpace, Key


def corner_keys(isp: IndexedSpace, n: int, rng: np.random.Generator) -> list[Key]:
    """``n`` feasible corners of the level box (each knob at one of its range limits), in a seeded
    order; an infeasible corner is replaced by the nearest feasible point."""
    if n <= 0:
        return []
    out: list[Key] = []
    for _ in range(4 * n):
        bits = rng.integers(0, 2, size=isp.d)
        target = (bits * (isp.n_levels - 1)).astype(float)
        key: Key | None = tuple(int(v) for v in target)
        if key is None or not isp.is_feasible(key):
            key = isp.nearest_feasible(target, set(out), rng)
        if key is not None and key not in out:
            out.append(key)
        if len(out) >= n:
            break
    return out


def close_contender(keys: list[Key], ys: list[float], contenders: int) -> Key | None:
    """The close contender with the fewest measurements, or None when no other point can still be told
    apart from the best. Contenders: the ``contenders`` best points by observed mean (each measured
    twice first: the repeats give the noise estimate) whose mean is within two standard errors of the
    best's (noise sd pooled over every point measured more than once)."""
    if contenders <= 0 or not keys:
        return None
    by_point: dict[Key, list[float]] = {}
    for k, y in zip(keys, ys):
        by_point.setdefault(k, []).append(float(y))
    ranked = sorted(by_point, key=lambda k: -float(np.mean(by_point[k])))[:contenders]
    once = [k for k in ranked if len(by_point[k]) < 2]
    if once:
        return once[0]
    dof = sum(len(v) - 1 for v in by_point.values() if len(v) > 1)
    ss = sum(float(np.var(v)) * len(v) for v in by_point.values() if len(v) > 1)
    sd = float(np.sqrt(ss / max(dof, 1)))
    best = ranked[0]
    mb, nb = float(np.mean(by_point[best])), len(by_point[best])
    close = [k for k in ranked
             if float(np.mean(by_point[k])) >= mb - 2.0 * sd * np.sqrt(1.0 / len(by_point[k]) + 1.0 / nb)]
    if len(close) < 2:
        return None
    return min(close, key=lambda k: (len(by_point[k]), -float(np.mean(by_point[k]))))


def limit_moves(isp: IndexedSpace, keys: list[Key]) -> np.ndarray:
    """Range-limit neighbours of ``keys``: each knob, and each pair of knobs, moved to its lowest or
    highest code, the others held; feasible rows only (level indices)."""
    rows = []
    hi = isp.n_levels - 1
    for k in keys:
        c = np.asarray(k, dtype=np.int32)
        for i in range(isp.d):
            for v in (0, hi[i]):
                r = c.copy()
                r[i] = v
                rows.append(r)
                for j in range(i + 1, isp.d):
                    for w in (0, hi[j]):
                        r2 = r.copy()
                        r2[j] = w
                        rows.append(r2)
    if not rows:
        return np.zeros((0, isp.d), dtype=np.int32)
    arr = np.unique(np.asarray(rows, dtype=np.int32), axis=0)
    feasible: np.ndarray = arr[isp.space.feasible(isp.values(arr))]
    return feasible
