"""BER-floor view: extrapolate an eye opening from its bathtub to BER 1e-12 / 1e-15 on the Q scale.

Method (Q-scale bathtub extrapolation). Where the tail of the eye-closure distribution is Gaussian
(random noise and random jitter dominate the deep tail, bounded ISI and dual-Dirac jitter only shift
it), the opening at a BER ``p`` is linear in the Gaussian quantile ``Q(p)``::

    opening(p) = opening_0 - (sigma_upper + sigma_lower) * Q(p),   Q(p) = sqrt(2) * erfcinv(2 p)

so fitting a straight line to the deepest well-resolved bathtub points (opening vs Q) and evaluating
it at ``Q(1e-12) = 7.03`` and ``Q(1e-15) = 7.94`` gives the margin at BERs far below what a field
measurement can count. Sources:

* INCITS T11 "Fibre Channel - Methodologies for Jitter and Signal Quality Specification" (FC-MJSQ,
  T11/04-101v5, 2004), the Q-scale and tail-fit bathtub extrapolation (clause on BER contours and the
  dual-Dirac model);
* R. Stephens, "Jitter analysis: the dual-Dirac model, RJ/DJ, and Q-scale", Agilent Technologies
  white paper 5989-3206EN (2004) — the linear-in-Q bathtub and its extrapolation to 1e-12;
* IEEE Std 802.3 Annex 93A (COM: Gaussian noise terms convolved with the ISI distribution) and
  802.3ck Annex 120G (C2M eye height / VEC at a target probability): the statistical eye whose
  tail this fit continues.

Because the statistical eye is computed from distributions rather than counted, the engine can also
evaluate directly at 1e-12/1e-15; the study reports both and their difference as a cross-check. The
two differ where the tail is not Gaussian (bounded ISI and dual-Dirac jitter bend the bathtub on the
Q scale), so the direct value is the one used for ``floor_eh_mv``; a large difference says that a
field extrapolation from counted errors would misjudge that link's floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import erfcinv


def q_of_ber(ber: float | np.ndarray) -> np.ndarray:
    """Gaussian quantile Q(p) = sqrt(2) erfcinv(2p): the one-sided tail at ``p`` is Q sigma from the mean."""
    return np.sqrt(2.0) * erfcinv(2.0 * np.asarray(ber, dtype=float))


@dataclass(frozen=True)
class FloorFit:
    """Straight line opening = intercept + slope * Q fitted to bathtub points."""

    intercept: float
    slope: float  # per unit of Q (negative: the eye closes as the BER falls)
    r2: float
    n_points: int
    ber_range: tuple[float, float]

    def at(self, ber: float) -> float:
        return float(self.intercept + self.slope * float(q_of_ber(ber)))


def fit_bathtub(ber: Sequence[float], opening: Sequence[float], *, ber_max: float = 1e-3,
                min_points: int = 3, max_points: int = 12) -> FloorFit | None:
    """Fit the deep tail of a bathtub (opening vs BER) on the Q scale.

    Uses points with 0 < BER <= ``ber_max`` and a positive opening, keeping the ``max_points``
    deepest (lowest BER), where the Gaussian part of the tail dominates. Returns None when fewer
    than ``min_points`` usable points remain (a closed or unresolved eye).
    """
    b = np.asarray(ber, dtype=float)
    y = np.asarray(opening, dtype=float)
    ok = np.isfinite(b) & np.isfinite(y) & (b > 0) & (b <= ber_max) & (y > 0)
    b, y = b[ok], y[ok]
    if len(b) < min_points:
        return None
    order = np.argsort(b)[:max_points]  # deepest first
    b, y = b[order], y[order]
    q = q_of_ber(b)
    if np.ptp(q) < 1e-9:
        return None
    slope, intercept = np.polyfit(q, y, 1)
    pred = intercept + slope * q
    ss_res = float(np.sum((y - pred) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return FloorFit(float(intercept), float(slope), r2, int(len(b)), (float(b.min()), float(b.max())))


def extrapolate(ber: Sequence[float], opening: Sequence[float], targets: Sequence[float],
                **fit_kw) -> dict[str, dict[str, float | None]]:
    """Opening extrapolated to each target BER: ``{"1e-12": {"extrapolated": mV, "r2": ..}, ...}``.

    A target inside the measured range is interpolated on the Q scale instead (no extrapolation
    needed). ``None`` when the bathtub cannot be fitted.
    """
    fit = fit_bathtub(ber, opening, **fit_kw)
    out: dict[str, dict[str, float | None]] = {}
    b = np.asarray(ber, dtype=float)
    y = np.asarray(opening, dtype=float)
    for t in targets:
        key = ber_key(t)
        inside = b.size and np.nanmin(b) <= t <= np.nanmax(b)
        if inside:
            q, order = q_of_ber(b), None
            order = np.argsort(q)
            val = float(np.interp(float(q_of_ber(t)), q[order], y[order]))
            out[key] = {"extrapolated": val, "r2": None, "method": "interpolated"}
        elif fit is None:
            out[key] = {"extrapolated": None, "r2": None, "method": "none"}
        else:
            out[key] = {"extrapolated": fit.at(t), "r2": fit.r2, "method": "q-scale fit"}
    return out


def ber_key(ber: float) -> str:
    """1e-12 -> "1e-12" (stable dictionary key for a BER)."""
    mant, exp = f"{ber:.0e}".split("e")
    return f"{mant}e{int(exp)}"
