"""Screening: the simulation's own fast approximation of the margin as the GP's prior mean.

In simulation the margin comes from the eye engine, whose stage A is a closed-form Gaussian
approximation of the eye height at every sampling phase (the signal-to-noise form of IEEE 802.3
Annex 93A: main cursor against the ISI, noise and jitter variances, 93A-30 to 93A-35; the same kind of
figure COM's figure of merit uses to choose the TX FFE and CTLE, 93A.1.6 step c). Stage B, the exact
interference distribution at the chosen phase, is what costs. Over a 6-knob TX FFE + CTLE space the
stage-A eye of every code costs 1/16-1/20 of the exact grid (7-9 s against 140 s) (``eqtune.eye.engine.EyeEngine.screen``).

The optimizer then models only what stage A gets wrong: the prior mean is m(x) = b s(x), s the screened
eye height, b fitted by least squares on the measured codes (stage A is biased low, by 10-75 % near the top of
the benchmark grids: its Gaussian tail is wider than the bounded ISI's), and the GP is fitted to y - m(x). This is
the "prior mean function" form of GP regression (Rasmussen & Williams, *Gaussian Processes for Machine
Learning*, MIT Press 2006, sec. 2.7, eq. 2.38) with a low-fidelity model as the mean, the simplest
multi-fidelity scheme (Kennedy & O'Hagan, "Predicting the output from a complex computer code when fast
approximations are available", Biometrika 87(1), 2000: y_high = rho y_low + delta, delta a GP).
``GPOptimizer.set_screen`` also takes the initial design from the best screened codes and scores each
step's acquisition on the best ``screen_pool`` of them (plus the best points' neighbours), so a narrow
basin the screen sees (3 % of the codes on IEEE tracy 10 in, docs/tuning.md) is not left to chance.
Those settings were chosen on the library channels (docs/tuning.md, "Figures with the stage-A screen",
with its one disclosure).

Measured evaluations are still counted in full (the screen is not a measurement); its wall time is
reported with every run (``TuneResult.screen_s``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eqtune.tune.space import IndexedSpace, Key

#: least-squares scale b of the prior mean b s(x), clipped to this range (a few points can give any slope)
SCALE_RANGE = (0.5, 2.0)


class Screen:
    """Screened margins of every feasible code of an enumerated ``IndexedSpace`` (rows of ``ispace.grid``),
    in the margin's units (mV of eye height); looked up by level-index key."""

    def __init__(self, ispace: IndexedSpace, values: np.ndarray, seconds: float = 0.0) -> None:
        if ispace.grid is None:
            raise ValueError("screening needs an enumerated space (ispace.grid)")
        values = np.asarray(values, dtype=float)
        if values.shape != (len(ispace.grid),):
            raise ValueError(f"{values.shape[0] if values.ndim else 0} screened values for {len(ispace.grid)} codes")
        self.ispace = ispace
        self._grid: np.ndarray = ispace.grid
        self.values = np.where(np.isfinite(values), values, np.nanmin(values[np.isfinite(values)]) if
                               np.isfinite(values).any() else 0.0)
        self.seconds = float(seconds)
        self._shape = tuple(int(n) for n in ispace.n_levels)
        # the grid is enumerated in C order: its flat indices are ascending (searchsorted lookup)
        self._flat = np.ravel_multi_index(tuple(self._grid.T.astype(np.int64)), self._shape)
        self._top: dict[int, np.ndarray] = {}

    def __call__(self, keys: np.ndarray | Sequence[Key]) -> np.ndarray:
        """Screened margins of ``keys`` (n, d); infeasible keys get the lowest screened value."""
        k = np.atleast_2d(np.asarray(keys, dtype=np.int64))
        flat = np.ravel_multi_index(tuple(k.T), self._shape)
        pos = np.clip(np.searchsorted(self._flat, flat), 0, len(self._flat) - 1)
        ok = self._flat[pos] == flat
        out: np.ndarray = np.where(ok, self.values[pos], float(self.values.min()))
        return out

    def top(self, n: int) -> np.ndarray:
        """The ``n`` best screened keys (n, d), best first."""
        n = max(0, min(int(n), len(self.values)))
        if n == 0:
            return np.zeros((0, self.ispace.d), dtype=np.int64)
        if n not in self._top:
            part = np.argpartition(-self.values, n - 1)[:n]
            order = part[np.argsort(-self.values[part], kind="stable")]
            self._top[n] = np.asarray(self._grid[order], dtype=np.int64)
        return self._top[n].copy()


def prior_scale(y: np.ndarray, s: np.ndarray) -> float:
    """Least-squares b of y ~ a + b s over the measured codes, clipped to ``SCALE_RANGE``; 1 with fewer
    than 3 codes or no spread in s."""
    if len(y) < 3 or float(np.std(s)) <= 1e-12:
        return 1.0
    b = float(np.cov(s, y, bias=True)[0, 1] / np.var(s))
    if not np.isfinite(b):
        return 1.0
    return float(np.clip(b, *SCALE_RANGE))
