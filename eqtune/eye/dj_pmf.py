"""Probability mass functions of COM's interference and noise on a voltage grid (93A.1.7, 178A.1.9).

* :func:`delta_pmf`: the PMF of one set of pulse samples times equiprobable PAM-L symbols (93A-39/93A-40):
  each sample h contributes L deltas at h a_l, a_l = -1 .. 1, binned to the nearest grid point and
  convolved into the running PMF. As MATLAB COM does it (and PyChOpMarg 3.4.0 ``delta_pmf``), a delta
  that rounds to the zero bin is left out of that sample's set and the rest renormalized.
* :func:`gaussian_pmf`: 93A-42 as a PMF on the grid (density times the bin width).
* :func:`convolve_pmfs`: linear convolution on the same zero-centred grid ("same" part), clipped at 0 and
  renormalized (93A-43/93A-45).
* :func:`uniform_pmf`: the ADC quantization error (Delta / 2 either side) through one FFE tap (178A-43/46).
* :func:`a_ni_at`: A_ni, the noise + interference amplitude exceeded with probability DER_0 (93A-1, 93A-45).
"""

from __future__ import annotations

import numpy as np

from eqtune.arrays import FloatArray


def voltage_grid(ystep: float, ymax: float) -> FloatArray:
    """An odd-length grid (n - n//2) ystep with n = 2 ceil(ymax / ystep) + 1 (0 at the centre)."""
    npts = 2 * int(np.ceil(ymax / ystep)) + 1
    out: FloatArray = (np.arange(npts) - npts // 2).astype(float) * float(ystep)
    return out


def delta_pmf(samples: FloatArray, levels: int, y: FloatArray) -> FloatArray:
    """PMF of sum_n h[n] a_n on grid ``y`` (module docstring)."""
    npts = y.size
    ystep = float(y[1] - y[0])
    centre = npts // 2
    amps = np.linspace(-1.0, 1.0, levels)
    shifts = np.rint(np.outer(np.asarray(samples, dtype=float), amps) / ystep).astype(int)
    pmf = np.zeros(npts)
    pmf[centre] = 1.0
    lo, hi = centre, centre + 1
    for row in shifts:
        row = row[row != 0]
        if row.size == 0:
            continue
        new_lo, new_hi = lo + min(int(row.min()), 0), hi + max(int(row.max()), 0)
        if new_lo < 0 or new_hi > npts:
            raise ValueError("the samples' extent exceeds the voltage grid")
        acc = np.zeros(new_hi - new_lo)
        src = pmf[lo:hi]
        for sh in row:
            acc[lo + sh - new_lo:hi + sh - new_lo] += src
        pmf[new_lo:new_hi] = acc / acc.sum()
        lo, hi = new_lo, new_hi
    return pmf


def gaussian_pmf(y: FloatArray, variance: float) -> FloatArray:
    """93A-42 on the grid: exp(-y^2 / 2 var) / sqrt(2 pi var) x ystep (a delta at 0 when var is 0)."""
    if variance <= 0:
        out = np.zeros(y.size)
        out[y.size // 2] = 1.0
        return out
    g: FloatArray = np.exp(-(y**2) / (2 * variance)) / np.sqrt(2 * np.pi * variance) * float(y[1] - y[0])
    return g


def convolve_pmfs(a: FloatArray, b: FloatArray) -> FloatArray:
    """Linear convolution of two PMFs on one zero-centred odd grid, the centred part, >= 0, summing to 1."""
    n = a.size + b.size - 1
    nfft = 1 << (n - 1).bit_length()
    full = np.fft.irfft(np.fft.rfft(a, nfft) * np.fft.rfft(b, nfft), nfft)[:n]
    start = (b.size - 1) // 2
    out = np.maximum(full[start:start + a.size], 0.0)
    res: FloatArray = out / out.sum()
    return res


def uniform_pmf(y: FloatArray, half_width_v: float) -> FloatArray:
    """Uniform on [-half_width, half_width] on the grid (2 n + 1 bins, n = round(half_width / ystep))."""
    n = int(round(half_width_v / float(y[1] - y[0])))
    out = np.zeros(y.size)
    c = y.size // 2
    out[c - n:c + n + 1] = 1.0 / (2 * n + 1)
    return out


def a_ni_at(y: FloatArray, pmf: FloatArray, der0: float) -> float:
    """-y at the first grid point where the cumulative probability reaches DER_0 (93A-45 / 93A-1)."""
    cdf = np.cumsum(pmf)
    cdf /= cdf[-1]
    return float(-y[int(np.argmax(cdf >= der0))])
