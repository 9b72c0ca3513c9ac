"""Frequency-domain filters of the COM link model (IEEE 802.3 Annex 93A, 802.3ck 120F).

All functions are vectorized over ``freqs_hz`` (and, where noted, over settings) and return complex
transfer functions. Each was checked against MATLAB COM 3.70 figures (``../shared/com-golden/README.md``).
"""

from __future__ import annotations

import numpy as np


def tx_rise_time_filter(freqs_hz: np.ndarray, tr_ps: float, *, delay: bool = True) -> np.ndarray:
    """Gaussian TX rise-time filter, 93A-46: H_t(f) = exp(-2 (pi f T_r / 1.6832)^2).

    With ``delay`` the 3 T_r delay that MATLAB COM applies (``exp(-j 2 pi f 3 T_r)``) is included so the
    response is causal in the time domain.
    """
    f = np.asarray(freqs_hz, dtype=float)
    tr_s = tr_ps * 1e-12
    h = np.exp(-2.0 * (np.pi * f * tr_s / 1.6832) ** 2)
    if delay:
        h = h * np.exp(-2j * np.pi * f * 3.0 * tr_s)
    return h


def butterworth4(freqs_hz: np.ndarray, fr_hz: float) -> np.ndarray:
    """RX noise filter: 4th-order Butterworth, 93A-20.

    H_r(f) = 1 / (1 - 3.414214 (f/f_r)^2 + (f/f_r)^4 + j 2.613126 (f/f_r - (f/f_r)^3)).
    """
    x = np.asarray(freqs_hz, dtype=float) / fr_hz
    return 1.0 / (1.0 - 3.414214 * x**2 + x**4 + 2.613126j * (x - x**3))


def ctle_com(freqs_hz: np.ndarray, gdc_db: float | np.ndarray, gdc2_db: float | np.ndarray = 0.0, *,
             fz_hz: float, fp1_hz: float, fp2_hz: float, flf_hz: float | None = None) -> np.ndarray:
    """802.3ck COM CTLE (93A-22 as amended by 802.3ck, 120F.3.1.1 / 163A):

    H(f) = (10^(g_DC/20) + j f/f_z) / ((1 + j f/f_p1)(1 + j f/f_p2)) * (10^(g_DC2/20) + j f/f_LF) / (1 + j f/f_LF)

    ``gdc_db``/``gdc2_db`` may be arrays of shape (n_settings,); the result is then (n_settings, n_freqs).
    ``flf_hz=None`` gives the single-stage 93A-22 CTLE (g_DC2 ignored).
    """
    f = np.asarray(freqs_hz, dtype=float)
    g1 = 10.0 ** (np.asarray(gdc_db, dtype=float)[..., None] / 20.0)
    h = (g1 + 1j * f / fz_hz) / ((1 + 1j * f / fp1_hz) * (1 + 1j * f / fp2_hz))
    if flf_hz is not None:
        g2 = 10.0 ** (np.asarray(gdc2_db, dtype=float)[..., None] / 20.0)
        h = h * (g2 + 1j * f / flf_hz) / (1 + 1j * f / flf_hz)
    return h if h.shape[0] != 1 or np.ndim(gdc_db) else h[0]


def peaking_ctle_gdc_db(peaking_db: np.ndarray, f_nyq_hz: float, *, fz_hz: float, fp1_hz: float,
                        fp2_hz: float) -> np.ndarray:
    """DC gain g_DC (dB) of a 93A-22 CTLE whose peaking |H(f_nyq)|/|H(0)| equals ``peaking_db``.

    Closed form: with H(0) = g and x = |(1 + j f/fp1)(1 + j f/fp2)| at f_nyq,
    |H(f_nyq)|^2 = (g^2 + (f/f_z)^2)/x^2 = P^2 g^2  ->  g = (f/f_z) / sqrt(P^2 x^2 - 1).
    Peaking above the pole-zero limit is capped (g -> 1e-6).
    """
    p = 10.0 ** (np.asarray(peaking_db, dtype=float) / 20.0)
    x2 = abs((1 + 1j * f_nyq_hz / fp1_hz) * (1 + 1j * f_nyq_hz / fp2_hz)) ** 2
    den = np.maximum(p**2 * x2 - 1.0, 1e-12)
    g = (f_nyq_hz / fz_hz) / np.sqrt(den)
    g = np.where(p <= 1.0 / np.sqrt(x2) + 1e-12, 1.0, np.minimum(g, 1.0))
    return 20.0 * np.log10(np.maximum(g, 1e-6))
