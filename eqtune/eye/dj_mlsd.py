"""The MLSD reference receiver of 802.3dj COM (P802.3dj 178A.1.10): COM_DFE plus the MLSD's advantage.

Sources. The draft is not public; the procedure and its equation numbers are those of P802.3dj/D3.3
178A.1.10 as PyChOpMarg 3.4.0 (PyPI, ``pychopmarg/mlsd.py`` and ``COM.calc_mlsd``) transcribes them, its
docstrings naming each equation; this module is written from those equations, not from its code. The
error-event form goes back to H. Shakiba, "MLSE gain in COM" (IEEE 802.3dj shakiba_3dj_01_230116 /
OIF2022.580.00), whose earlier variant MATLAB COM's ``MLSE()`` function implements (``OP.MLSE``).

With a 1-tap DFE reference receiver (first tap b = b(1)) at the COM_DFE operating point:

1. **Added receiver noise (178A.1.10.1, 178A-53).** p_an is COM_DFE's noise and interference PMF with
   the Gaussian variance raised to sigma_G^2 + g_an sigma_rn^2 (sigma_rn^2: the receiver noise at the
   Rx FFE output), g_an chosen so that 20 log10(P_an^-1(DER_0) / P^-1(DER_0)) = dCOM_an (3 dB in D3.3).
   :func:`added_noise` finds g_an by bisection (relative tolerance 1e-6).
2. **Error events (178A-51).** For an error sequence of length j: u = (1, -(1-b), +(1-b), ..., (-1)^(j+1) b),
   i.e. u_1 = 1, u_i = (-1)^(i-1) (1 - b) for i = 2..j, u_(j+1) = (-1)^(j+1) b (:func:`error_event`).
3. **Correlation (178A.1.10.3, 178A-56).** rho(n) = R_ni(n) / R_ni(0), R_ni the autocorrelation (UI lags)
   of the noise and residual ISI at the Rx FFE output: the FFE input noise (178A-17, with g_an times the
   receiver noise added) through the FFE, plus sigma_X^2 times the autocorrelation of the residual ISI
   (:func:`output_correlation`).
4. **DER_MLSD (178A-50).** DER = sum_j ((L-1)/L)^(j-1) P_j(-x_j) with x_j = A_s (u'u)^(3/2) / sqrt(u' V u),
   V = toeplitz(rho(0..j)); P_j the cumulative distribution of the PMF p_1 = p_an * p_an(./b) / |b|
   (178A-54) and p_j = p_(j-1) * p_an(./(1-b)) / |1-b| (178A-55), p(y / a) / |a| being the PMF of a Y
   (the note in 178A.1.10.2). The sum stops (as MATLAB COM's does) once a term adds less than 1e-4 of
   the sum so far (:func:`der_mlsd`).
5. **COM (178A-49).** COM = COM_DFE + 20 log10(-P_an^-1(DER_MLSD) / A_s). Reported as the larger of that
   and COM_DFE, as PyChOpMarg 3.4.0 does (whether D3.3 states the floor could not be checked: the text is
   not public); the raw gain is reported too (-inf when the 178A-50 sum reaches 1: no error ratio, no gain).

PMFs live on uniform zero-centred odd grids of step ``ystep`` (V), as :mod:`eqtune.eye.dj_pmf`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from eqtune.arrays import FloatArray
from eqtune.eye import dj_pmf

TRIM_TAIL = 1e-30       # PMF tails holding less than this are dropped (each side) between convolutions
DER_REL_TOL = 1e-4      # 178A-50's sum stops when a term adds less than this fraction of the sum
G_AN_REL_TOL = 1e-6     # bisection tolerance on g_an (178A-53)


def _grid(n: int, ystep: float) -> FloatArray:
    out: FloatArray = (np.arange(n) - n // 2).astype(float) * ystep
    return out


def cdf_at(p: FloatArray, ystep: float, y: float) -> float:
    """P(Y <= y) of the zero-centred PMF ``p``, read at the first grid point at or above ``y`` (as MATLAB
    COM's ``CDF_ev``); 0 below the grid, 1 above it."""
    n = p.size
    k = int(math.ceil(y / ystep - 1e-9)) + n // 2
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return float(np.cumsum(p)[k] / p.sum())


def quantile(p: FloatArray, ystep: float, prob: float) -> float:
    """P^-1(prob): the grid value where the cumulative distribution of ``p`` first reaches ``prob`` (V)."""
    return -dj_pmf.a_ni_at(_grid(p.size, ystep), p, prob)


def scaled(p: FloatArray, a: float) -> FloatArray:
    """The PMF of a Y on the grid of ``p`` (the PMF of Y): p(y / a) / |a| (178A.1.10.2 note), the mass rebinned
    through the cumulative distribution interpolated linearly between bin edges."""
    n = p.size
    if a == 0.0:
        out = np.zeros(n)
        out[n // 2] = 1.0
        return out
    if a < 0.0:
        return scaled(p[::-1].copy(), -a)
    edges = np.arange(n + 1) - n / 2.0                    # bin edges, in bins, zero-centred
    cum = np.concatenate(([0.0], np.cumsum(p)))
    res: FloatArray = np.diff(np.interp(edges / a, edges, cum, left=0.0, right=float(cum[-1])))
    res /= res.sum()
    return res


def convolve_full(a: FloatArray, b: FloatArray) -> FloatArray:
    """Full linear convolution of two zero-centred odd PMFs (zero-centred, odd), >= 0, summing to 1."""
    n = a.size + b.size - 1
    nfft = 1 << (n - 1).bit_length()
    full = np.maximum(np.fft.irfft(np.fft.rfft(a, nfft) * np.fft.rfft(b, nfft), nfft)[:n], 0.0)
    out: FloatArray = full / full.sum()
    return out


def trimmed(p: FloatArray, tail: float = TRIM_TAIL) -> FloatArray:
    """``p`` with the same number of bins dropped at each end, as many as hold less than ``tail`` on both
    sides (so it stays zero-centred)."""
    c = np.cumsum(p)
    lo = int(np.searchsorted(c, tail))
    hi = int(np.searchsorted((c[-1] - c)[::-1], tail))
    k = min(lo, hi, (p.size - 1) // 2)
    out: FloatArray = p[k:p.size - k] if k else p
    return out


def added_noise(p_rest: FloatArray, ystep: float, var_g: float, var_rn: float, der0: float,
                dcom_an_db: float) -> tuple[float, FloatArray]:
    """178A-53: the scale g_an of the receiver noise variance ``var_rn`` (V^2) whose addition to COM_DFE's
    Gaussian variance ``var_g`` (V^2) lowers COM by ``dcom_an_db``, and the PMF p_an it gives. ``p_rest``:
    every non-Gaussian term of COM_DFE convolved (ISI, dual-Dirac jitter, crosstalk, quantization), on a
    grid wide enough for the larger noise. Raises ValueError when no added noise reaches the penalty."""
    y = _grid(p_rest.size, ystep)

    def p_an(g: float) -> FloatArray:
        return dj_pmf.convolve_pmfs(p_rest, dj_pmf.gaussian_pmf(y, var_g + g * var_rn))

    if var_rn <= 0.0:
        raise ValueError("no receiver noise at the Rx FFE output to add (178A-53)")
    target = dj_pmf.a_ni_at(y, p_an(0.0), der0) * 10 ** (dcom_an_db / 20.0)   # A_ni raised by dCOM_an
    lo, hi = 0.0, 1.0
    while dj_pmf.a_ni_at(y, p_an(hi), der0) < target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e12:
            raise ValueError(f"no added receiver noise lowers COM by {dcom_an_db:g} dB (178A-53)")
    while hi - lo > G_AN_REL_TOL * hi:
        mid = 0.5 * (lo + hi)
        if dj_pmf.a_ni_at(y, p_an(mid), der0) >= target:
            hi = mid
        else:
            lo = mid
    return hi, p_an(hi)


def error_event(j: int, b: float) -> FloatArray:
    """178A-51: u of the length-j error event, j + 1 entries."""
    u = np.empty(j + 1)
    u[0] = 1.0
    u[1:j] = (1.0 - b) * (-1.0) ** np.arange(1, j)       # i = 2..j: (-1)^(i-1) (1 - b)
    u[j] = (-1.0) ** (j + 1) * b
    return u


def event_threshold(a_s: float, u: FloatArray, rho: FloatArray) -> float:
    """x_j = A_s (u'u)^(3/2) / sqrt(u' V u), V = toeplitz(rho(0..j)) (178A-50)."""
    k = np.abs(np.arange(u.size)[:, None] - np.arange(u.size)[None, :])
    uu = float(u @ u)
    return float(a_s * uu**1.5 / math.sqrt(float(u @ rho[k] @ u)))


def der_mlsd(p_an: FloatArray, ystep: float, a_s: float, b: float, rho: FloatArray, levels: int,
             rel_tol: float = DER_REL_TOL) -> tuple[float, int]:
    """178A-50..55: DER_MLSD and the number of terms summed (at most len(rho) - 1)."""
    p_b = trimmed(scaled(p_an, b))
    p_1mb = trimmed(scaled(p_an, 1.0 - b))
    p_j = trimmed(convolve_full(p_an, p_b))                                  # 178A-54
    der, j = 0.0, 0
    for j in range(1, rho.size):
        term = ((levels - 1) / levels) ** (j - 1) * cdf_at(p_j, ystep, -event_threshold(a_s, error_event(j, b), rho))
        der += term
        if term <= rel_tol * der:
            break
        p_j = trimmed(convolve_full(p_j, p_1mb))                             # 178A-55
    return der, j


def output_correlation(r_in: FloatArray, w: FloatArray, isi: FloatArray, var_x: float, n_lags: int) -> FloatArray:
    """178A-56: rho(0..n_lags-1), the normalized autocorrelation at the Rx FFE output of the input noise
    (``r_in``: its autocorrelation at UI lags 0.., V^2) through the FFE ``w``, plus var_x times the
    autocorrelation of the residual ISI samples ``isi`` (V)."""
    k = r_in.size
    two_sided = np.concatenate([r_in[:0:-1], r_in])                          # lags -(k-1)..k-1
    r_w = np.correlate(w, w, mode="full")                                    # lags -(n-1)..n-1
    r_out = np.convolve(two_sided, r_w)[k - 1 + w.size - 1:]                 # lags 0..
    r_isi = np.correlate(isi, isi, mode="full")[isi.size - 1:]
    out = np.zeros(n_lags)
    m = min(n_lags, r_out.size)
    out[:m] += r_out[:m]
    m = min(n_lags, r_isi.size)
    out[:m] += var_x * r_isi[:m]
    res: FloatArray = out / out[0]
    return res


@dataclass(frozen=True)
class MlsdResult:
    """178A.1.10 at one package case: the added-noise scale, DER_MLSD, the MLSD gain and COM (dB)."""

    g_an: float
    der_mlsd: float
    terms: int
    gain_db: float          # 20 log10(-P_an^-1(DER_MLSD) / A_s), may be negative
    com_dfe_db: float
    com_db: float           # max(COM_DFE, COM_DFE + gain)


def mlsd_com(*, com_dfe_db: float, a_s: float, a_ni: float, ystep: float, p_rest: FloatArray, var_g: float,
             var_rn: float, r_noise_in: FloatArray, r_rx_in: FloatArray, w: FloatArray, isi: FloatArray, b: float,
             var_x: float, levels: int, der0: float, dcom_an_db: float) -> MlsdResult:
    """The module docstring's steps 1-5 at a COM_DFE operating point. Voltages in V, variances in V^2:
    ``p_rest`` on the COM grid of ``ystep``; ``r_noise_in`` / ``r_rx_in``: the whole FFE-input noise and its
    receiver-noise part at UI lags 0..; ``w`` the Rx FFE (cursor 1), ``isi`` the residual ISI (DFE removed)."""
    pad = int(math.ceil(4.0 * a_ni * 10 ** (dcom_an_db / 20.0) / ystep))
    g_an, p_an = added_noise(np.pad(p_rest, pad), ystep, var_g, var_rn, der0, dcom_an_db)
    rho = output_correlation(r_noise_in + g_an * r_rx_in, w, isi, var_x, r_noise_in.size)
    der, terms = der_mlsd(p_an, ystep, a_s, b, rho, levels)
    # a sum of 1 or more is no error ratio (noise swamps the signal): no MLSD advantage is claimed, as MATLAB
    # COM's MLSE() skips the adjustment when A_s < A_ni
    gain = 20.0 * math.log10(-quantile(p_an, ystep, der) / a_s) if der < 1.0 else -math.inf
    return MlsdResult(g_an=g_an, der_mlsd=der, terms=terms, gain_db=gain, com_dfe_db=com_dfe_db,
                      com_db=max(com_dfe_db, com_dfe_db + gain))
