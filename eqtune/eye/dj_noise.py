"""802.3dj (Annex 178A) noise at the Rx FFE input, as UI-lag autocorrelations for :mod:`eqtune.eye.mmse`.

The MMSE receiver needs the autocorrelation ``rn[k]`` (V^2) of everything that is not the victim's own
ISI, at lags of whole UIs. 178A builds it from four terms (Healey & Hegde, Jan. 2024 [HH24]; P802.3dj
Annex 178A; the equation numbers are those PyChOpMarg 3.4.0 ``noise.py`` names next to its code, the
draft itself not being public):

* receiver noise: two-sided density eta_0 / 2 shaped by the AFE and CTLE, |H_r H_ctf|^2 ([HH24]); it is
  stationary, so its UI-lag autocorrelation is the continuous autocorrelation sampled at k T;
* crosstalk: each aggressor's pulse response sampled once per UI at the phase that maximizes the sum of
  its squared samples (178A-20), times the symbol variance: var_x sum_n a[n] a[n + k];
* transmitter noise: the pulse response of the path without the TX FFE (178A-22), sampled at the
  victim's phase, times 10^(-SNR_TX / 10) (178A-21; no var_x factor there);
* jitter: the central-difference slope of the victim pulse response at each UI sample (178A-23), h_J in
  V per UI, times var_x (A_DD^2 + sigma_RJ^2).

Deterministic autocorrelations are linear (not circular): a pulse response that has not decayed
within its window is not wrapped onto its own start. ADC quantization (178A-28..31) is
:func:`adc_quantization_step` + :func:`quantization_autocorrelation`, added by the caller (its Gaussian
variance is the other terms' with only the random jitter, 178A-31). The MLSE gain is not modelled here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from eqtune.eye.mmse import MmseInputError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class NoiseAutocorrelation:
    """UI-lag autocorrelations (V^2, lags 0..n_lags-1) of the 178A noise terms at the Rx FFE input."""

    rx: FloatArray
    tx: FloatArray
    jitter: FloatArray
    crosstalk: FloatArray

    @property
    def total(self) -> FloatArray:
        """The sum of the terms: the ``rn`` :func:`eqtune.eye.mmse.mmse_rx_ffe` takes."""
        return self.rx + self.tx + self.jitter + self.crosstalk


def linear_autocorrelation(x: FloatArray, n_lags: int) -> FloatArray:
    """sum_n x[n] x[n + k] for k = 0..n_lags-1 (zeros beyond the sequence)."""
    x = np.asarray(x, dtype=float)
    full = np.correlate(x, x, mode="full")[x.size - 1:]
    out = np.zeros(n_lags)
    out[:min(n_lags, full.size)] = full[:n_lags]
    return out


def ui_sampled(pulse: FloatArray, samples_per_ui: int, phase: int) -> FloatArray:
    """``pulse`` at samples phase, phase + M, ... over whole UIs of the window (M = samples per UI)."""
    n_ui = pulse.size // samples_per_ui
    return np.asarray(pulse[:n_ui * samples_per_ui][phase::samples_per_ui], dtype=float)


def best_aggressor_phase(pulse: FloatArray, samples_per_ui: int) -> int:
    """The sampling phase (0..M-1) maximizing the sum of the squared UI samples (178A-20)."""
    n_ui = pulse.size // samples_per_ui
    energy = (np.asarray(pulse[:n_ui * samples_per_ui]).reshape(n_ui, samples_per_ui) ** 2).sum(axis=0)
    return int(np.argmax(energy))


def rx_noise_autocorrelation(eta0_v2_per_ghz: float, h_rx: NDArray[np.complex128], dt_s: float,
                             samples_per_ui: int, n_lags: int) -> FloatArray:
    """Receiver noise: two-sided density eta_0/2 x |H_rx(f)|^2 ([HH24]) on the ``rfft`` grid of a record of
    n = 2 (len(h_rx) - 1) samples of ``dt_s``; R(t) = integral S(f) exp(j 2 pi f t) df, sampled at k T."""
    if eta0_v2_per_ghz < 0 or dt_s <= 0:
        raise MmseInputError("eta_0 must be >= 0 V^2/GHz and the time step > 0 s")
    n = 2 * (len(h_rx) - 1)
    density = eta0_v2_per_ghz / 2 * 1e-9 * np.abs(np.asarray(h_rx)) ** 2       # V^2/Hz, two-sided
    r = np.fft.irfft(density, n) / dt_s                                         # x n df = 1 / dt
    lags = r[::samples_per_ui]
    out = np.zeros(n_lags)
    out[:min(n_lags, lags.size)] = lags[:n_lags]
    return out


def jitter_slope_v_per_ui(pulse: FloatArray, samples_per_ui: int, phase: int) -> FloatArray:
    """h_J: central difference of the pulse at each UI sample of ``phase`` (178A-23), in V per UI."""
    padded = np.pad(np.asarray(pulse, dtype=float), 1)
    idx = phase + samples_per_ui * np.arange(pulse.size // samples_per_ui)
    return np.asarray((padded[idx + 2] - padded[idx]) / 2.0 * samples_per_ui, dtype=float)


def noise_autocorrelation(*, victim_pulse_v: FloatArray, samples_per_ui: int, cursor_sample: int, ui_s: float,
                          var_x: float, eta0_v2_per_ghz: float, h_rx: NDArray[np.complex128],
                          tx_noise_pulse_v: FloatArray, snr_tx_db: float, a_dd_ui: float, sigma_rj_ui: float,
                          aggressor_pulses_v: Sequence[FloatArray] = (), n_lags: int = 16) -> NoiseAutocorrelation:
    """All four 178A terms (module docstring) for the victim sampled at ``cursor_sample``.

    Pulses are oversampled (``samples_per_ui`` per UI of ``ui_s``) on one time grid starting at 0;
    ``h_rx`` (AFE x CTLE) is on that grid's ``rfft`` frequencies. ``tx_noise_pulse_v``: the pulse response
    of the path without TX FFE, including the TX amplitude (178A-22).
    """
    pulse = np.asarray(victim_pulse_v, dtype=float)
    if samples_per_ui < 1 or not 0 <= cursor_sample < pulse.size:
        raise MmseInputError(f"cursor sample {cursor_sample} is outside the {pulse.size}-sample pulse")
    phase = cursor_sample % samples_per_ui
    dt = ui_s / samples_per_ui
    rx = rx_noise_autocorrelation(eta0_v2_per_ghz, h_rx, dt, samples_per_ui, n_lags)
    tx = 10 ** (-snr_tx_db / 10) * linear_autocorrelation(
        ui_sampled(np.asarray(tx_noise_pulse_v, dtype=float), samples_per_ui, phase), n_lags)
    jit = var_x * (a_dd_ui**2 + sigma_rj_ui**2) * linear_autocorrelation(
        jitter_slope_v_per_ui(pulse, samples_per_ui, phase), n_lags)
    xt = np.zeros(n_lags)
    for agg in aggressor_pulses_v:
        a = np.asarray(agg, dtype=float)
        xt += var_x * linear_autocorrelation(ui_sampled(a, samples_per_ui, best_aggressor_phase(a, samples_per_ui)),
                                             n_lags)
    return NoiseAutocorrelation(rx=rx, tx=tx, jitter=jit, crosstalk=xt)


def adc_quantization_step(signal_samples_v: FloatArray, var_gauss_v2: float, *, levels: int, bits: int,
                          clip_probability: float, npts: int = 4001) -> float:
    """ADC step Delta = 2 V_qc / (2^bits - 1) (178A-29), V_qc such that the noisy signal at the quantizer
    falls below -V_qc with probability ``clip_probability`` / 2 (178A-30); 0 when ``bits`` is 0.

    The noisy signal is the sum of PAM-``levels`` symbols (levels equiprobable on [-1, 1]) times every UI
    sample of the victim pulse (``signal_samples_v``, V), plus Gaussian noise of variance ``var_gauss_v2``
    (V^2; 178A-31 takes every noise term but only the random part of the jitter). Its distribution is
    built on a voltage grid of ``npts`` points by convolving one delta set per sample (93A-40 form) and
    the Gaussian (93A-42).
    """
    if bits == 0:
        return 0.0
    if bits < 0 or levels < 2 or not 0 < clip_probability < 1 or var_gauss_v2 < 0:
        raise MmseInputError("ADC: need bits >= 0, levels >= 2, 0 < clip probability < 1 and noise variance >= 0")
    h = np.asarray(signal_samples_v, dtype=float)
    sigma = float(np.sqrt(var_gauss_v2))
    support = float(np.abs(h).sum()) + 10.0 * sigma
    npts |= 1
    step = 2.0 * support / (npts - 1)
    centre = npts // 2
    symbols = np.linspace(-1.0, 1.0, levels)
    pmf = np.zeros(npts)
    pmf[centre] = 1.0
    for sample in h[np.abs(h) > step / 2]:
        one = np.zeros(npts)
        np.add.at(one, centre + np.rint(symbols * sample / step).astype(int), 1.0 / levels)
        pmf = _convolve_same(pmf, one)
    if sigma > 0:
        y = (np.arange(npts) - centre) * step
        g = np.exp(-(y**2) / (2.0 * var_gauss_v2))
        pmf = _convolve_same(pmf, g / g.sum())
    cdf = np.cumsum(np.clip(pmf, 0.0, None))
    cdf /= cdf[-1]
    v_qc = -(int(np.argmax(cdf >= clip_probability / 2)) - centre) * step
    return float(2.0 * v_qc / (2**bits - 1))


def _convolve_same(a: FloatArray, b: FloatArray) -> FloatArray:
    """Linear convolution of two grids of equal odd length, centred (``mode='same'``), by FFT."""
    n = a.size + b.size - 1
    full = np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)
    start = (b.size - 1) // 2
    return np.asarray(full[start:start + a.size], dtype=float)


def quantization_autocorrelation(step_v: float, n_lags: int) -> FloatArray:
    """ADC quantization noise: white, variance Delta^2 / 12 (178A-28), at the UI lags."""
    out = np.zeros(n_lags)
    out[0] = step_v**2 / 12.0
    return out
