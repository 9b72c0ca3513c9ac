"""Output warping of the GP's targets: margins below a quantile compressed logarithmically.

Closed eyes reach hundreds of mV below zero; left linear, that tail sets the GP's output scale and
flattens the top, where 0.1 dB is decided. The warp is monotone (rankings and the argmax are unchanged)
and invertible (``warp_inverse`` maps posterior means back to margin units, with the derivative for the
standard deviation). Parameters ``(median, scale)``; scale 0 is the identity. An output transform of
the kind used in "warped GPs" (Snelson, Rasmussen & Ghahramani, NeurIPS 2004), here fixed, not learned.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

Warp = tuple[float, float]  # (median, scale); scale 0 = identity
IDENTITY: Warp = (0.0, 0.0)
#: the most the warp may compress the lower tail: its scale is at least (median - minimum) / this. Why: the
#: scale is the top's spread (maximum - median), and on a plateau of equal readings (a live loopback whose
#: errors all come from one direction, every error-free code at the same counting floor) that spread is
#: the counting noise, ~0: the whole tail is then squeezed into a few noise widths of the plateau, the
#: GP's output scale collapses with it, and nothing can be predicted above the plateau (measured on an
#: emulated c2m-10in module, lane 3: after 12 measurements on a tx_eq = 10 plateau the GP put tx_eq = 8,
#: truly 4.3 decades better, at 5.85 +- 0.02 against the plateau's 5.87, and never measured it; with this
#: floor, 5.72 +- 0.11). 100: a tail under 100 times the top's spread is warped as before.
MAX_COMPRESSION = 100.0


def warp_params(y: NDArray[Any], *, mode: str, q: float, scale: float, gate: float) -> Warp:
    """The warp for margins ``y``: identity unless ``mode`` is "log", there are 3 or more values and the
    lower tail (median to minimum) is more than ``gate`` times the spread of the top (``q`` quantile to
    maximum, times ``scale``; at least the tail over ``MAX_COMPRESSION``)."""
    if mode != "log" or len(y) < 3:
        return IDENTITY
    med = float(np.quantile(y, q))
    tail = med - float(np.min(y))
    s = max(scale * (float(np.max(y)) - med), tail / MAX_COMPRESSION)
    if not np.isfinite(s) or s <= 1e-12:
        return IDENTITY
    if tail < gate * s:
        return IDENTITY  # the lower tail does not dominate the output scale: leave it linear
    return (med, s)


def warp_apply(y: NDArray[Any], warp: Warp) -> NDArray[np.float64]:
    """Warped values: below the median, med - scale * log(1 + (med - y) / scale)."""
    med, scale = warp
    out = np.array(y, dtype=float)
    if scale <= 0.0:
        return out
    below = out < med
    out[below] = med - scale * np.log1p((med - out[below]) / scale)
    return out


def warp_inverse(t: NDArray[Any], warp: Warp) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Original-unit values of warped values ``t``, and the derivative dy/dt (for the sd)."""
    med, scale = warp
    t = np.asarray(t, dtype=float)
    if scale <= 0.0:
        return t, np.ones_like(t)
    below = t < med
    y, dy = t.copy(), np.ones_like(t)
    e = np.exp(np.minimum((med - t[below]) / scale, 700.0))
    y[below] = med - scale * (e - 1.0)
    dy[below] = e
    return y, dy
