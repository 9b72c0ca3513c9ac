"""The MLSD reference receiver of 802.3dj COM (eqtune.eye.dj_mlsd, 178A.1.10) against closed forms and
PyChOpMarg 3.4.0's ``mlsd`` module (its transcription of P802.3dj/D3.3 178A-49..56).

Closed forms: with Gaussian noise only, p_an is Gaussian, so g_an = var_G (10^(dCOM_an/10) - 1) / var_rn
(178A-53), every P_j is Gaussian of variance sigma_an^2 u'u (178A-54/55) and, with white noise (rho = delta),
x_j = A_s u'u, so each 178A-50 term is ((L-1)/L)^(j-1) Q(A_s sqrt(u'u) / sigma_an).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from eqtune.eye import dj_mlsd as M
from eqtune.eye import dj_pmf

YSTEP = 1e-5


def _q(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def _gauss(n_half: int, sigma: float) -> np.ndarray:
    y = (np.arange(2 * n_half + 1) - n_half) * YSTEP
    return dj_pmf.gaussian_pmf(y, sigma**2) / dj_pmf.gaussian_pmf(y, sigma**2).sum()


def test_error_event_is_178a_51() -> None:
    b = 0.3
    assert np.allclose(M.error_event(1, b), [1.0, b])
    assert np.allclose(M.error_event(2, b), [1.0, -(1 - b), -b])
    assert np.allclose(M.error_event(4, b), [1.0, -(1 - b), (1 - b), -(1 - b), -b])


def test_scaled_pmf_scales_the_standard_deviation() -> None:
    p = _gauss(3000, 2e-3)
    y = (np.arange(p.size) - p.size // 2) * YSTEP
    for a in (0.3, 0.7, -0.5, 1.0):
        q = M.scaled(p, a)
        assert q.sum() == pytest.approx(1.0)
        assert math.sqrt(float((y**2 * q).sum())) == pytest.approx(abs(a) * 2e-3, rel=2e-3)


def test_added_noise_scale_is_the_gaussian_closed_form() -> None:
    var_g, var_rn = (1.2e-3) ** 2, (0.5e-3) ** 2
    rest = np.zeros(4001)
    rest[2000] = 1.0
    g, p_an = M.added_noise(rest, YSTEP, var_g, var_rn, 1e-4, 3.0)
    want = var_g * (10 ** 0.3 - 1) / var_rn
    assert g == pytest.approx(want, rel=0.01)  # the quantile moves in 10 uV bins
    y = (np.arange(p_an.size) - p_an.size // 2) * YSTEP
    assert float((y**2 * p_an).sum()) == pytest.approx(var_g + g * var_rn, rel=1e-3)


def test_der_mlsd_is_the_gaussian_white_noise_sum() -> None:
    sigma, a_s, b, levels = 2e-3, 8e-3, 0.35, 4
    p_an = _gauss(4000, sigma)
    rho = np.zeros(64)
    rho[0] = 1.0
    der, terms = M.der_mlsd(p_an, YSTEP, a_s, b, rho, levels)
    want = sum(((levels - 1) / levels) ** (j - 1) * _q(a_s * math.sqrt(float(M.error_event(j, b) @ M.error_event(j, b)))
                                                        / sigma) for j in range(1, terms + 1))
    assert 2 <= terms < 63
    assert der == pytest.approx(want, rel=0.03)  # 10 uV bins on a sigma of 2 mV
    # the correlation enters through x_j only: correlated noise (rho(1) > 0) changes DER
    rho[1] = 0.3
    assert M.der_mlsd(p_an, YSTEP, a_s, b, rho, levels)[0] != pytest.approx(der, rel=1e-3)


def test_output_correlation_is_the_filtered_autocorrelation() -> None:
    rng = np.random.default_rng(7)
    w = np.array([-0.1, 1.0, -0.3, 0.05])
    r_in = np.array([1.0, 0.4, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0])
    isi = rng.normal(size=12) * 0.01
    got = M.output_correlation(r_in, w, isi, 0.5, 6)
    # direct: R_out(k) = sum_ij w_i w_j R_in(k + j - i) + var_x sum_n isi(n) isi(n + k)
    r = lambda k: r_in[abs(k)] if abs(k) < r_in.size else 0.0  # noqa: E731
    direct = np.array([sum(w[i] * w[j] * r(k + j - i) for i in range(4) for j in range(4))
                       + 0.5 * float(isi[:isi.size - k] @ isi[k:]) for k in range(6)])
    assert np.allclose(got, direct / direct[0])


def test_agrees_with_pychopmarg_mlsd_functions() -> None:
    """The same inputs to PyChOpMarg 3.4.0's ``solve_g_an`` and ``der_mlsd``: a non-Gaussian PMF (PAM4 ISI
    deltas) and a correlated rho."""
    pytest.importorskip("pychopmarg", reason="pychopmarg 3.4.0 (bench extra) is not installed")
    from pychopmarg import mlsd as P

    y = (np.arange(6001) - 3000) * YSTEP
    rest = dj_pmf.delta_pmf(np.array([3e-3, -1.5e-3, 0.8e-3]), 4, y)
    var_g, var_rn = (1.1e-3) ** 2, (0.45e-3) ** 2
    g, p_an = M.added_noise(rest, YSTEP, var_g, var_rn, 2e-4, 3.0)
    g_ref, p_ref = P.solve_g_an(rest, YSTEP, var_g, var_rn, 2e-4, 3.0)
    assert g == pytest.approx(g_ref, rel=1e-4)
    rho = np.array([1.0, 0.25, -0.05, 0.02] + [0.0] * 60)
    der, n = M.der_mlsd(p_an, YSTEP, 9e-3, 0.32, rho, 4)
    der_ref, n_ref = P.der_mlsd(p_ref, YSTEP, 9e-3, 0.32, rho, 4)
    assert n == n_ref
    assert der == pytest.approx(der_ref, rel=1e-3)
    assert M.quantile(p_an, YSTEP, der) == pytest.approx(P.inv_cdf(p_ref, YSTEP, der_ref), abs=YSTEP)


def test_no_gain_is_claimed_when_noise_swamps_the_signal() -> None:
    """A_s far below the noise: the 178A-50 sum exceeds 1, so the gain is -inf and COM stays COM_DFE."""
    rest = np.zeros(4001)
    rest[2000] = 1.0
    r = M.mlsd_com(com_dfe_db=-12.0, a_s=0.5e-3, a_ni=2e-3, ystep=YSTEP, p_rest=rest, var_g=(1e-3) ** 2,
                   var_rn=(0.5e-3) ** 2, r_noise_in=np.array([1e-6] + [0.0] * 31), r_rx_in=np.array([2.5e-7] + [0.0] * 31),
                   w=np.array([1.0]), isi=np.zeros(8), b=0.5, var_x=5 / 9, levels=4, der0=2e-4, dcom_an_db=3.0)
    assert r.der_mlsd >= 1.0 and r.gain_db == -math.inf and r.com_db == -12.0
