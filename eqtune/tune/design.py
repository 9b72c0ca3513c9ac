"""The GP's initial design: the start point, box corners, a scrambled Sobol set, or the best screened codes.

Pure functions of the index space, the seed and (for ``screened_design``) the screen: the optimizer's
JSON state and the seed determine every design.

* ``sobol_design``: the start point (default codes / profile / warm start), then ``corners`` box corners
  (``candidates.corner_keys``), then a scrambled Sobol sequence (scipy.stats.qmc, Owen scrambling; Owen,
  "Scrambling Sobol' and Niederreiter-Xing points", J. Complexity 14, 1998) mapped to the nearest unused
  feasible point.
* ``screened_design``: with the simulation's screen (``eqtune.tune.screen``), the start point and then the
  best screened codes instead of the space-filling points.
"""

from __future__ import annotations

import warnings

import numpy as np

from eqtune.tune.base import rng_for
from eqtune.tune.candidates import corner_keys
from eqtune.tune.screen import Screen
from eqtune.tune.space import IndexedSpace, Key


def sobol_design(isp: IndexedSpace, start_key: Key | None, n_initial: int, seed: int, corners: int = 0) -> list[Key]:
    """Start point, ``corners`` box corners, then ``n_initial + 2`` Sobol points (a few spares: warm points
    may already cover some), each moved to the nearest feasible, unused code."""
    from scipy.stats import qmc

    design: list[Key] = []
    if start_key is not None:
        design.append(start_key)
    n_sobol = n_initial + 2
    m = int(np.ceil(np.log2(max(n_sobol, 2))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # balance-property warning for non powers of two
        u = qmc.Sobol(isp.d, scramble=True, seed=seed).random_base2(m)[:n_sobol]
    rng = rng_for(seed, 0, 7)
    for corner in corner_keys(isp, corners, rng_for(seed, 0, 8)):
        if corner not in design:
            design.append(corner)
    for row in u:
        target = np.minimum(np.floor(row * isp.n_levels), isp.n_levels - 1).astype(float)
        key: Key | None = tuple(int(v) for v in target)
        if key is None or key in design or not isp.is_feasible(key):
            key = isp.nearest_feasible(target, set(design), rng)
            if key is None:
                break
        design.append(key)
    return design


def screened_design(design: list[Key], start_key: Key | None, n_initial: int, n_top: int | None,
                    screen: Screen) -> list[Key]:
    """``design`` with the best ``n_top`` screened codes (None: the whole design) right after the start
    point; the rest of ``design`` fills up to ``n_initial``."""
    head = design[:1] if start_key is not None else []
    n = n_top if n_top is not None else max(0, n_initial - len(head))
    tops = [k for k in (tuple(int(v) for v in r) for r in screen.top(n + len(head))) if k not in head][:n]
    rest = [k for k in design if k not in head and k not in tops]
    return (head + tops + rest)[: max(n_initial, len(head) + len(tops))]
