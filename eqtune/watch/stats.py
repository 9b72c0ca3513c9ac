"""Streaming statistics for the watch detector, vectorized over many lane series at once.

:class:`EWRegression` keeps exponentially weighted least-squares sums of y on x per series (one array
element per series), so each poll costs O(1) per lane whatever the window: weights
``w_i = exp(-(t_now - t_i) / tau)`` (an exponentially weighted moving window of time constant
``tau`` seconds, the detector's ``--window``). Weighted least squares (Draper & Smith, Applied
Regression Analysis, 3rd ed., 9.2; equal weights: Montgomery & Runger, Applied Statistics, 11-4) gives

    slope = Cxy / Cxx,   Cxx = sum w (x - xbar)^2,  Cxy = sum w (x - xbar)(y - ybar)

and, with the residual variance s^2 = (Cyy - Cxy^2 / Cxx) / W * n / (n - 2) and the effective
sample count n = W^2 / sum w^2 (Kish, Survey Sampling, 1965: effective sample size), the slope's
standard error from the sandwich form Var(slope) = s^2 sum w^2 (x - xbar)^2 / Cxx^2 (the variance of
a weighted sum of independent errors; the sums of w^2 x and w^2 x^2 are kept for it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class FitArrays:
    """Per-series fit: ``slope``, ``level`` (fitted y at x = 0), ``se`` (slope standard error),
    ``n_eff`` (effective samples), ``sd_x`` (weighted standard deviation of x). NaN where undefined."""

    slope: np.ndarray
    level: np.ndarray
    se: np.ndarray
    n_eff: np.ndarray
    sd_x: np.ndarray

    @property
    def t_stat(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.slope / self.se


class EWRegression:
    """Exponentially weighted regression sums of y on x, shape ``shape`` (one element per series)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        z = np.zeros(shape)
        self.w, self.w2, self.sx, self.sy = z.copy(), z.copy(), z.copy(), z.copy()
        self.sxx, self.sxy, self.syy = z.copy(), z.copy(), z.copy()
        self.w2x, self.w2xx = z.copy(), z.copy()

    def decay(self, lam: np.ndarray, mask: np.ndarray) -> None:
        """Multiply the weights of the series in ``mask`` by ``lam`` (= exp(-dt / tau))."""
        lam = np.where(mask, lam, 1.0)
        for a in (self.w, self.sx, self.sy, self.sxx, self.sxy, self.syy):
            a *= lam
        for a in (self.w2, self.w2x, self.w2xx):
            a *= lam * lam

    def shift_x(self, d: np.ndarray, mask: np.ndarray) -> None:
        """Move the origin of x by ``d`` (x -> x - d) for the series in ``mask`` (time axes: keep x = 0 at now)."""
        d = np.where(mask, d, 0.0)
        self.w2xx += -2.0 * d * self.w2x + d * d * self.w2
        self.w2x -= d * self.w2
        self.sxx += -2.0 * d * self.sx + d * d * self.w
        self.sxy -= d * self.sy
        self.sx -= d * self.w

    def add(self, x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> None:
        """Add one sample (weight 1) to the series in ``mask``."""
        m = mask.astype(float)
        x = np.where(mask, x, 0.0)
        y = np.where(mask, y, 0.0)
        self.w += m
        self.w2 += m
        self.w2x += m * x
        self.w2xx += m * x * x
        self.sx += m * x
        self.sy += m * y
        self.sxx += m * x * x
        self.sxy += m * x * y
        self.syy += m * y * y

    def fit(self) -> FitArrays:
        with np.errstate(divide="ignore", invalid="ignore"):
            w = self.w
            xbar, ybar = self.sx / w, self.sy / w
            cxx = np.maximum(self.sxx - self.sx * xbar, 0.0)
            cxy = self.sxy - self.sx * ybar
            cyy = np.maximum(self.syy - self.sy * ybar, 0.0)
            slope = cxy / cxx
            level = ybar - slope * xbar
            n = w * w / self.w2
            resid = np.maximum(cyy - cxy * slope, 0.0) / w * n / np.maximum(n - 2.0, 1e-9)
            c2 = np.maximum(self.w2xx - 2.0 * xbar * self.w2x + xbar * xbar * self.w2, 0.0)
            se = np.sqrt(resid * c2) / cxx
            sd_x = np.sqrt(cxx / w)
        bad = ~(cxx > 0)
        slope[bad] = np.nan
        se[bad] = np.nan
        level = np.where(bad, ybar, level)
        return FitArrays(slope, level, se, n, sd_x)
