"""The MMSE Rx FFE + DFE solution (eqtune.eye.mmse) against closed forms, brute force and PyChOpMarg.

Independent sources: the 2-tap Wiener solution worked by hand (docstring of each test), a brute-force
scan of the constrained quadratic, and PyChOpMarg 3.4.0 ``optimize.mmse`` (capn-freako/PyChOpMarg,
after Healey & Hegde, Jan. 2024) on the same pulse response and noise autocorrelation.
"""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.eye.mmse import (
    MmseInputError,
    autocorrelation_from_psd,
    mmse_best_phase,
    mmse_rx_ffe,
    pam_symbol_variance,
)

VAR_X = pam_symbol_variance(4)   # 5/9


def test_pam4_symbol_variance_is_five_ninths() -> None:
    assert VAR_X == pytest.approx(5.0 / 9.0)
    assert pam_symbol_variance(2) == pytest.approx(1.0)


def test_white_psd_gives_a_delta_autocorrelation() -> None:
    """S(f) = sigma^2 / f_b over (-f_b/2, f_b/2) is white UI-sampled noise of variance sigma^2."""
    fb = 106.25e9
    n = 64
    sigma2 = 3e-4
    rn = autocorrelation_from_psd(np.full(n + 1, sigma2 / fb), fb / 2 / n, 8)
    assert rn[0] == pytest.approx(sigma2, rel=1e-12)
    assert np.max(np.abs(rn[1:])) < 1e-12 * sigma2


def test_cosine_psd_gives_its_first_lag() -> None:
    """S(f) = (s0 + 2 s1 cos(2 pi f T)) / f_b has R[0] = s0, R[1] = s1, R[k>1] = 0 (Fourier series)."""
    fb, n, s0, s1 = 1.0e11, 32, 2e-4, 5e-5
    f = np.linspace(0.0, fb / 2, n + 1)
    psd = (s0 + 2 * s1 * np.cos(2 * np.pi * f / fb)) / fb
    rn = autocorrelation_from_psd(psd, fb / 2 / n, 4)
    np.testing.assert_allclose(rn, [s0, s1, 0.0, 0.0], atol=1e-12 * s0)


def test_two_tap_wiener_closed_form() -> None:
    """h = [1, a], 2-tap FFE (no pre-cursor tap), no DFE, white noise sigma^2; s = sigma^2 / var_x.

    By hand: Q = [[a^2 + s, a], [a, 1 + a^2 + s]], w = [1, -a / (1 + a^2 + s)],
    MSE = var_x ((a^2 + s)(1 + a^2 + s) - a^2) / (1 + a^2 + s).
    """
    a, sigma2 = 0.4, 0.01
    s = sigma2 / VAR_X
    sol = mmse_rx_ffe(np.array([1.0, a]), np.array([sigma2, 0.0]), cursor=0, n_taps=2, n_pre=0, n_dfe=0,
                      var_x=VAR_X, b_min=np.zeros(0), b_max=np.zeros(0))
    np.testing.assert_allclose(sol.ffe, [1.0, -a / (1 + a * a + s)], rtol=1e-12)
    want = VAR_X * ((a * a + s) * (1 + a * a + s) - a * a) / (1 + a * a + s)
    assert float(sol.mse) == pytest.approx(want, rel=1e-12)
    assert not bool(sol.dfe_limited) and not bool(sol.ffe_limited)


def test_one_precursor_tap_closed_form() -> None:
    """h = [p, 1], 2-tap FFE with one pre-cursor tap, no noise, no DFE: the mirror of the case above.

    Output cursor row d = 1 + 1; by symmetry w = [-p / (1 + p^2), 1], MSE = var_x p^4 / (1 + p^2).
    """
    p = 0.3
    sol = mmse_rx_ffe(np.array([p, 1.0]), np.zeros(2), cursor=1, n_taps=2, n_pre=1, n_dfe=0,
                      var_x=VAR_X, b_min=np.zeros(0), b_max=np.zeros(0))
    np.testing.assert_allclose(sol.ffe, [-p / (1 + p * p), 1.0], rtol=1e-12)
    assert float(sol.mse) == pytest.approx(VAR_X * p**4 / (1 + p * p), rel=1e-10)


def test_dfe_cancels_first_post_cursor_within_limits() -> None:
    """h = [1, 0.6, 0.2], 1-tap FFE, 1-tap DFE: b = 0.6 (inside [0, 0.85]); MSE = var_x (0.2^2 + s)."""
    sigma2 = 0.002
    sol = mmse_rx_ffe(np.array([1.0, 0.6, 0.2]), np.array([sigma2]), cursor=0, n_taps=1, n_pre=0, n_dfe=1,
                      var_x=VAR_X, b_min=np.array([0.0]), b_max=np.array([0.85]))
    assert sol.dfe == pytest.approx([0.6])
    assert float(sol.mse) == pytest.approx(VAR_X * 0.04 + sigma2, rel=1e-12)


def test_dfe_limit_clamps_and_leaves_the_rest_as_isi() -> None:
    """Same channel with b_max = 0.5: b = 0.5, the 0.1 left over is ISI; MSE = var_x (0.1^2 + 0.2^2) + sigma^2."""
    sigma2 = 0.002
    sol = mmse_rx_ffe(np.array([1.0, 0.6, 0.2]), np.array([sigma2]), cursor=0, n_taps=1, n_pre=0, n_dfe=1,
                      var_x=VAR_X, b_min=np.array([0.0]), b_max=np.array([0.5]))
    assert bool(sol.dfe_limited)
    assert sol.dfe == pytest.approx([0.5])
    assert float(sol.mse) == pytest.approx(VAR_X * (0.01 + 0.04) + sigma2, rel=1e-12)
    np.testing.assert_allclose(sol.isi, [0.0, 0.1, 0.2], atol=1e-12)


def _brute_force_mse(h: np.ndarray, sigma2: float, b: float, t: np.ndarray) -> np.ndarray:
    """MSE of w = [1, t] (cursor first, so h0' w = 1 with h[0] = 1), DFE tap fixed at b, white noise."""
    out = []
    for ti in t:
        y = np.convolve(h, [1.0, ti])
        isi = y.copy()
        isi[0] -= 1.0
        isi[1] -= b
        out.append(VAR_X * np.sum(isi**2) + sigma2 * (1 + ti * ti))
    return np.asarray(out)


def test_dfe_limited_ffe_is_the_constrained_optimum() -> None:
    """With the DFE clamped, the 2-tap FFE minimizes the MSE over w with b fixed (checked by a fine scan)."""
    h = np.array([1.0, 0.9, 0.45, 0.1])
    sigma2 = 0.003
    sol = mmse_rx_ffe(h, np.array([sigma2, 0.0]), cursor=0, n_taps=2, n_pre=0, n_dfe=1, var_x=VAR_X,
                      b_min=np.array([0.0]), b_max=np.array([0.3]))
    assert bool(sol.dfe_limited)
    t = np.linspace(-1.0, 1.0, 200001)
    scan = _brute_force_mse(h, sigma2, 0.3, t)
    assert float(sol.ffe[1]) == pytest.approx(t[np.argmin(scan)], abs=2e-5)
    assert float(sol.mse) <= float(scan.min()) * (1 + 1e-9)
    assert 0.0 <= float(sol.dfe[0]) <= 0.3


def test_cursor_is_unity_and_ffe_limits_hold_relative_to_it() -> None:
    """Random channels: the equalized cursor is 1; FFE taps stay in [w_min, w_max] x cursor tap (178A-26)."""
    rng = np.random.default_rng(7)
    n_taps, n_pre, n_dfe = 8, 2, 2
    h = np.zeros((20, 14))
    h[:, 3] = 1.0
    h[:, :3] = rng.uniform(-0.3, 0.3, (20, 3))
    h[:, 4:] = rng.uniform(-0.2, 0.8, (20, 10)) * np.exp(-np.arange(10) / 3.0)
    w_min = np.full(n_taps, -0.3)
    w_max = np.full(n_taps, 0.3)
    w_min[n_pre] = w_max[n_pre] = 1.0
    sol = mmse_rx_ffe(h, np.array([1e-3, 2e-4] + [0.0] * 6), cursor=3, n_taps=n_taps, n_pre=n_pre,
                      n_dfe=n_dfe, var_x=VAR_X, b_min=np.array([-0.2, -0.2]), b_max=np.array([0.7, 0.2]),
                      w_min=w_min, w_max=w_max)
    assert np.any(sol.ffe_limited), "the case must exercise the FFE limits"
    cursor_out = np.array([np.convolve(h[i], sol.ffe[i])[3 + n_pre] for i in range(20)])
    np.testing.assert_allclose(cursor_out, 1.0, rtol=1e-10)
    c = sol.ffe[:, n_pre:n_pre + 1]
    others = np.delete(sol.ffe / c, n_pre, axis=1)
    assert np.all(np.abs(others) <= 0.3 + 1e-12)
    assert np.all(sol.dfe >= [-0.2, -0.2]) and np.all(sol.dfe <= [0.7, 0.2])


def test_batch_equals_one_by_one() -> None:
    rng = np.random.default_rng(3)
    h = rng.normal(0.0, 0.2, (5, 12))
    h[:, 2] = 1.0
    kw = dict(cursor=2, n_taps=6, n_pre=1, n_dfe=1, var_x=VAR_X, b_min=np.array([-0.5]), b_max=np.array([0.5]))
    rn = np.array([2e-3, 1e-4, 0, 0, 0, 0])
    batch = mmse_rx_ffe(h, rn, **kw)  # type: ignore[arg-type]
    for i in range(5):
        one = mmse_rx_ffe(h[i], rn, **kw)  # type: ignore[arg-type]
        np.testing.assert_allclose(batch.ffe[i], one.ffe, rtol=1e-10, atol=1e-14)
        assert float(batch.mse[i]) == pytest.approx(float(one.mse), rel=1e-10)


@pytest.mark.parametrize("bad, match", [
    (dict(n_pre=4), "n_pre < n_taps"),
    (dict(cursor=40), "outside"),
    (dict(b_max=np.array([0.1, 0.2])), "DFE limits"),
    (dict(var_x=0.0), "symbol variance"),
])
def test_bad_inputs_are_one_clear_error(bad: dict[str, object], match: str) -> None:
    kw: dict[str, object] = dict(cursor=1, n_taps=4, n_pre=1, n_dfe=1, var_x=VAR_X,
                                 b_min=np.array([0.0]), b_max=np.array([0.5]))
    kw.update(bad)
    with pytest.raises(MmseInputError, match=match):
        mmse_rx_ffe(np.array([0.1, 1.0, 0.4, 0.1]), np.array([1e-3, 0, 0, 0]), **kw)  # type: ignore[arg-type]


# --- PyChOpMarg agreement -------------------------------------------------------------------------------

def _pulse(samples_per_ui: int, n_ui: int, peak_ui: int) -> np.ndarray:
    """A smooth, asymmetric test pulse; samples below 0.2 % of the peak are set to exactly 0 so that
    PyChOpMarg's 0.1 % threshold on the sampled pulse (optimize.py, ``h_thresh``) changes nothing."""
    t = np.arange(n_ui * samples_per_ui) / samples_per_ui - peak_ui
    p = np.where(t > -1.5, np.exp(-np.maximum(t + 1.5, 0) / 1.4) * (1 - np.exp(-3.0 * np.maximum(t + 1.5, 0))),
                 0.0)
    p += 0.05 * np.exp(-((t - 4.0) / 1.2) ** 2)   # a reflection
    p /= p.max()
    p[np.abs(p) < 2e-3] = 0.0
    return p * 0.3


class _FixedNoise:
    """What PyChOpMarg's ``mmse`` reads from its ``NoiseCalc``: the pulse, the symbol variance and Rn.

    The noise autocorrelation is given (the same array eqtune receives), so the comparison is of the
    optimizer alone, at identical inputs; the spectral terms it reports as diagnostics are zero.
    """

    def __init__(self, pulse: np.ndarray, samples_per_ui: int, rn: np.ndarray) -> None:
        self.nspui = samples_per_ui
        self.vic_pulse_resp = pulse
        self.varX = VAR_X
        self.ts_ix = 0
        self._rn = rn
        self.Tb = 1 / 106.25e9
        self.f = np.linspace(0.0, 53.125e9, 65)
        self.fN = 53.125e9
        self.Sjn = np.zeros(65)
        self.Srn = np.zeros(65)
        self.agg_pulse_resps: list[np.ndarray] = []
        self.quant_step_size = 0.0   # ADC quantization off on both sides

    def Rn(self) -> np.ndarray:  # noqa: N802 - PyChOpMarg's name
        return self._rn

    def Stn(self, *_args: object) -> np.ndarray:  # noqa: N802
        return np.zeros(65)

    def Sxn(self, *_args: object) -> np.ndarray:  # noqa: N802
        return np.zeros(65)


@pytest.mark.parametrize("n_dfe, b_max, w_lim, limited", [
    (1, 0.85, 0.7, "none"),
    (1, 0.05, 0.7, "dfe"),
    (1, 0.85, 0.1, "ffe"),
    (2, 0.05, 0.05, "both"),
])
def test_agrees_with_pychopmarg_mmse(n_dfe: int, b_max: float, w_lim: float, limited: str) -> None:
    """Identical inputs (pulse, Rn, var_X, limits, 16-tap FFE with 5 pre-cursor taps, +-UI/2 phase search).

    Measured residual (PyChOpMarg 3.4.0): FOM within 1e-10 dB, taps within 1e-12, same phase in all four cases.
    """
    pytest.importorskip("pychopmarg", minversion="3.4.0", reason="pychopmarg 3.4.0 not installed (bench extra)")
    optimize = pytest.importorskip("pychopmarg.optimize")
    from pychopmarg.common import NormMode

    spui, n_taps, n_pre = 16, 16, 5
    pulse = _pulse(spui, 40, 8)
    fb = 106.25e9
    f = np.linspace(0.0, fb / 2, 65)
    psd = (2e-5 * (1 + 0.6 * np.cos(2 * np.pi * f / fb))) / fb   # coloured noise, V^2/Hz
    rn = autocorrelation_from_psd(psd, fb / 2 / 64, 40)
    b_min = np.full(n_dfe, -0.1)
    b_maxs = np.full(n_dfe, b_max)
    w_max = np.array([w_lim] * n_pre + [1.0] + [w_lim] * (n_taps - n_pre - 1))
    w_min = -w_max
    w_min[n_pre] = 1.0

    ref = optimize.mmse(_FixedNoise(pulse, spui, rn), n_taps, n_pre, n_dfe, 0.95, 4, b_min, b_maxs,
                        w_min, w_max, norm_mode=NormMode.P8023dj, noise_vars=False)
    ours = mmse_best_phase(pulse, rn, samples_per_ui=spui, n_taps=n_taps, n_pre=n_pre, n_dfe=n_dfe,
                           var_x=VAR_X, b_min=b_min, b_max=b_maxs, w_min=w_min, w_max=w_max,
                           rlm=0.95, levels=4)
    sol = ours.solution
    assert bool(sol.dfe_limited) == (limited in ("dfe", "both")) == bool(ref["hit_b_limit"])
    assert bool(sol.ffe_limited) == (limited in ("ffe", "both"))
    assert ours.sample_index == int(ref["cursor_ix"])
    np.testing.assert_allclose(sol.ffe, ref["rx_taps"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(sol.dfe, ref["dfe_tap_weights"], rtol=1e-8, atol=1e-10)
    assert float(sol.fom_db) == pytest.approx(float(ref["fom"]), abs=1e-8)
    assert float(sol.mse) == pytest.approx(float(ref["mse"]), rel=1e-8)
