"""178A noise autocorrelations (eqtune.eye.dj_noise): closed forms, and PyChOpMarg 3.4.0's NoiseCalc
spectra on identical inputs (its folded PSDs turned into UI-lag autocorrelations by its own convention,
``irfft(S) / Tb``)."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.eye.dj_noise import (
    adc_quantization_step,
    best_aggressor_phase,
    linear_autocorrelation,
    noise_autocorrelation,
    quantization_autocorrelation,
    rx_noise_autocorrelation,
)
from eqtune.eye.mmse import mmse_best_phase, pam_symbol_variance

UI = 1 / 106.25e9
M = 16
N_UI = 128
VAR_X = pam_symbol_variance(4)


def test_white_rx_noise_is_uncorrelated_from_ui_to_ui() -> None:
    """|H|^2 = 1 over the whole record band: R(0) = eta_0/2 x 1e-9 x f_s, and 0 at every other UI lag
    (the sinc autocorrelation of band-limited white noise is 0 at multiples of 1/f_s)."""
    n = M * N_UI
    dt = UI / M
    r = rx_noise_autocorrelation(8e-9, np.ones(n // 2 + 1, complex), dt, M, 6)
    assert r[0] == pytest.approx(8e-9 / 2 * 1e-9 / dt, rel=1e-12)
    assert np.max(np.abs(r[1:])) < 1e-12 * r[0]


def test_linear_autocorrelation_and_aggressor_phase() -> None:
    assert linear_autocorrelation(np.array([1.0, 2.0, 3.0]), 5).tolist() == [14.0, 8.0, 3.0, 0.0, 0.0]
    pulse = np.zeros(M * 8)
    pulse[3 * M + 5] = 1.0
    pulse[4 * M + 5] = -0.5
    assert best_aggressor_phase(pulse, M) == 5


def _grid() -> tuple[np.ndarray, np.ndarray]:
    n = M * N_UI
    t = np.arange(n) * (UI / M)
    f = np.fft.rfftfreq(n, UI / M)
    return t, f


def _bump(t: np.ndarray, centre_ui: float, width_ui: float, amp: float) -> np.ndarray:
    x = (t / UI - centre_ui) / width_ui
    return amp * np.where(np.abs(x) < 1, np.cos(np.pi * x / 2) ** 2, 0.0)


def _case() -> dict:
    t, f = _grid()
    victim = _bump(t, 20.0, 2.2, 0.3) + _bump(t, 24.0, 3.0, 0.04)
    aggs = [_bump(t, 30.3, 0.7, 0.02) + _bump(t, 31.4, 1.3, 0.006), _bump(t, 41.6, 0.8, -0.015)]  # a clear best phase
    h_rx = 1 / (1 + 1j * f / 40e9) / (1 + 1j * f / 80e9)
    h_tn = np.exp(-((f / 45e9) ** 2)) * 0.4 * np.exp(-2j * np.pi * f * 20 * UI)   # path w/o TX FFE, x A_v
    tx_pulse = np.fft.irfft(M * np.sinc(f * UI) * h_tn, t.size)                     # 1-UI rectangle (178A-22)
    return dict(t=t, f=f, victim=victim, aggs=aggs, h_rx=h_rx, h_tn=h_tn, tx_pulse=tx_pulse)


def test_agrees_with_pychopmarg_noisecalc() -> None:
    pytest.importorskip("pychopmarg", minversion="3.4.0", reason="pychopmarg 3.4.0 not installed (bench extra)")
    noise = pytest.importorskip("pychopmarg.noise")
    c = _case()
    ts = int(np.argmax(c["victim"]))
    kw = dict(eta0=7.5e-9, snr_tx=33.5, Add=0.02, sigma_Rj=0.01)
    ones = np.ones(c["f"].size, complex)
    ref = noise.NoiseCalc(4, UI, ts, c["t"], c["victim"], c["aggs"], c["f"], c["h_tn"], ones, c["h_rx"], ones,
                          kw["eta0"], 1.0, kw["snr_tx"], kw["Add"], kw["sigma_Rj"])
    ours = noise_autocorrelation(victim_pulse_v=c["victim"], samples_per_ui=M, cursor_sample=ts, ui_s=UI,
                                 var_x=VAR_X, eta0_v2_per_ghz=kw["eta0"], h_rx=c["h_rx"],
                                 tx_noise_pulse_v=np.fft.irfft(M * np.sinc(c["f"] * UI) * c["h_tn"] * c["h_rx"],
                                                               c["t"].size),
                                 snr_tx_db=kw["snr_tx"], a_dd_ui=kw["Add"], sigma_rj_ui=kw["sigma_Rj"],
                                 aggressor_pulses_v=c["aggs"], n_lags=16)

    def lags(psd: np.ndarray) -> np.ndarray:
        return np.fft.irfft(psd)[:16] / UI

    np.testing.assert_allclose(ours.rx, lags(ref.Srn), rtol=1e-9, atol=1e-12 * ours.rx[0])
    np.testing.assert_allclose(ours.jitter, lags(ref.Sjn), rtol=1e-9, atol=1e-12 * ours.jitter[0])
    xt = sum(lags(ref.Sxn(a)) for a in c["aggs"])
    np.testing.assert_allclose(ours.crosstalk, xt, rtol=1e-9, atol=1e-12 * ours.crosstalk[0])
    np.testing.assert_allclose(ours.tx, lags(ref.Stn()), rtol=1e-6, atol=1e-9 * ours.tx[0])
    np.testing.assert_allclose(ours.total, ref.Rn()[:16], rtol=1e-6, atol=1e-9 * ours.total[0])


def test_noise_feeds_the_mmse_solver_end_to_end() -> None:
    """More noise, lower figure of merit; the FFE never does worse than no FFE (1 tap) on the same noise."""
    c = _case()
    ts = int(np.argmax(c["victim"]))
    figs = []
    for eta0 in (1e-9, 2e-8):
        rn = noise_autocorrelation(victim_pulse_v=c["victim"], samples_per_ui=M, cursor_sample=ts, ui_s=UI,
                                   var_x=VAR_X, eta0_v2_per_ghz=eta0, h_rx=c["h_rx"], tx_noise_pulse_v=c["tx_pulse"],
                                   snr_tx_db=33.5, a_dd_ui=0.02, sigma_rj_ui=0.01, aggressor_pulses_v=c["aggs"],
                                   n_lags=16).total
        kw = dict(samples_per_ui=M, n_dfe=1, var_x=VAR_X, b_min=np.zeros(1), b_max=np.full(1, 0.85), rlm=0.95)
        long_ffe = mmse_best_phase(c["victim"], rn, n_taps=12, n_pre=3, **kw)  # type: ignore[arg-type]
        no_ffe = mmse_best_phase(c["victim"], rn, n_taps=1, n_pre=0, **kw)  # type: ignore[arg-type]
        assert float(long_ffe.solution.fom_db) >= float(no_ffe.solution.fom_db) - 1e-9
        figs.append(float(long_ffe.solution.fom_db))
    assert figs[0] > figs[1]


def test_adc_step_closed_form_for_one_binary_sample() -> None:
    """One NRZ sample +-h plus Gaussian sigma: P(X < -V) = (Phi((-V + h)/sigma) + Phi((-V - h)/sigma)) / 2;
    V_qc solves P = P_qc / 2 (178A-30) and Delta = 2 V_qc / (2^N - 1) (178A-29)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    h, sigma, p_qc, bits = 0.2, 0.05, 1e-3, 6
    v_exact = brentq(lambda v: 0.5 * (norm.cdf((-v + h) / sigma) + norm.cdf((-v - h) / sigma)) - p_qc / 2, 0.0, 2.0)
    step = adc_quantization_step(np.array([h]), sigma**2, levels=2, bits=bits, clip_probability=p_qc, npts=8001)
    grid = 2 * (h + 10 * sigma) / 8000
    assert step * (2**bits - 1) / 2 == pytest.approx(v_exact, abs=2 * grid)
    assert adc_quantization_step(np.array([h]), sigma**2, levels=2, bits=0, clip_probability=p_qc) == 0.0
    np.testing.assert_allclose(quantization_autocorrelation(0.01, 3), [0.01**2 / 12, 0.0, 0.0])


def test_adc_step_agrees_with_pychopmarg_quant_step() -> None:
    pytest.importorskip("pychopmarg", minversion="3.4.0", reason="pychopmarg 3.4.0 not installed (bench extra)")
    noise = pytest.importorskip("pychopmarg.noise")
    c = _case()
    ts = int(np.argmax(c["victim"]))
    ones = np.ones(c["f"].size, complex)
    ref = noise.NoiseCalc(4, UI, ts, c["t"], c["victim"], [], c["f"], c["h_tn"], ones, c["h_rx"], ones,
                          7.5e-9, 1.0, 33.5, 0.02, 0.01, Nqb=6, Pqc=1e-7)
    var = 2e-5
    theirs = ref.quant_step(var, npts=4001)
    samples = c["victim"][ts % M::M]
    ours = adc_quantization_step(samples, var, levels=4, bits=6, clip_probability=1e-7, npts=4001)
    assert ours == pytest.approx(theirs, rel=1e-6)   # measured: equal to the last digit on this grid
