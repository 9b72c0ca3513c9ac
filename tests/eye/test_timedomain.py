"""Bit-by-bit time-domain simulator: patterns, closed-form eyes, counted BER vs the Q-function."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from eqtune.errors import InputError
from eqtune.eye import timedomain as td

M = 32


def box_pulse(cursors: list[float], pre: int = 3, n_ui: int = 12) -> tuple[np.ndarray, int]:
    """A pulse of one sample-and-hold level per UI (lossless, noise-free); cursor UI index ``pre``."""
    p = np.zeros(n_ui * M)
    for i, v in enumerate(cursors):
        p[(pre + i) * M : (pre + i + 1) * M] = v
    return p, pre * M + M // 2


# ---------------------------------------------------------------- patterns


@pytest.mark.parametrize("order", [7, 9, 13, 15])
def test_prbs_period_and_balance(order):
    n = (1 << order) - 1
    b = td.prbs_bits(order, 3 * n)
    one = b[:n]
    assert one.sum() == 1 << (order - 1)  # m-sequence: 2^(n-1) ones, 2^(n-1) - 1 zeros
    assert np.array_equal(b[n : 2 * n], one) and np.array_equal(b[2 * n :], one)  # period 2^n - 1
    # no shorter period: the sequence differs from every proper shift of itself
    for d in (1, 2, n // 3, n // 2):
        assert not np.array_equal(np.roll(one, d), one)
    # window property: every non-zero order-bit word appears exactly once per period
    words = np.zeros(n, dtype=np.int64)
    ext = np.concatenate([one, one[:order]])
    for i in range(order):
        words = (words << 1) | ext[i : i + n]
    assert np.unique(words).size == n and 0 not in words
    # longest run of ones is exactly `order`
    runs = np.diff(np.flatnonzero(np.diff(np.concatenate([[0], ext, [0]])) != 0))[::2]
    assert runs.max() == order


def test_prbs31_recurrence_and_balance():
    b = td.prbs_bits(31, 1 << 20).astype(np.int64)
    # x^31 + x^28 + 1: a[n] = a[n-28] ^ a[n-31]
    assert np.array_equal(b[31:], b[3:-28] ^ b[:-31])
    # the trinomial's local statistics are known to be uneven (windows of 2^16 bits reach 0.47):
    # balance only over long stretches
    assert abs(b.mean() - 0.5) < 1e-2


def test_prbs13_polynomial():
    b = td.prbs_bits(13).astype(np.int64)
    # 1 + x + x^2 + x^12 + x^13 (IEEE 802.3 94.2.9.1)
    assert np.array_equal(b[13:], b[12:-1] ^ b[11:-2] ^ b[1:-12] ^ b[:-13])


def test_prbs13q_period_and_level_counts():
    q = td.prbs_q(13, 3 * 8191)
    one = q[:8191]
    assert np.array_equal(q[8191 : 2 * 8191], one)  # period 8191 symbols (two PRBS13 periods)
    # each symbol = one 2-bit window of the m-sequence: 00 appears 2^11 - 1 times, the rest 2^11
    assert sorted(np.bincount(one, minlength=4)) == [2047, 2048, 2048, 2048]
    assert np.bincount(one, minlength=4)[0] == 2047  # {0,0} -> level 0 (Gray, 120.5.7.1)


def test_prbs31q_gray_mapping_and_balance():
    q = td.prbs_q(31, 1 << 16)
    b = td.prbs_bits(31, 1 << 17)
    pairs = 2 * b[0::2] + b[1::2]
    assert np.array_equal(q, np.array([0, 1, 3, 2])[pairs])
    c = np.bincount(q, minlength=4) / q.size
    assert np.all(np.abs(c - 0.25) < 0.01)


def test_pam6_mapping_uses_all_levels():
    s = td.pattern_symbols("PRBS15", "PAM6", 30000)
    c = np.bincount(s, minlength=6) / s.size
    # outer levels 1/8, inner 3/16 by construction (4 corner pairs of 36 dropped)
    assert np.allclose(c, [1 / 8, 3 / 16, 3 / 16, 3 / 16, 3 / 16, 1 / 8], atol=0.01)


def test_levels():
    assert np.allclose(td.pam_levels("PAM4", 0.95), [-1, -0.95 / 3, 0.95 / 3, 1])
    assert np.allclose(td.pam_levels("NRZ"), [-1, 1])
    assert np.allclose(td.pam_levels("PAM6"), [-1, -0.6, -0.2, 0.2, 0.6, 1])


def test_bad_input():
    p, c = box_pulse([0.5])
    with pytest.raises(InputError):
        td.simulate(p, M, cursor_index=c, ber_target=0.7)
    with pytest.raises(InputError):
        td.simulate(p, M, modulation="PAM8")
    with pytest.raises(InputError):
        td.pattern_symbols("PRBS13Q", "NRZ", 100)
    with pytest.raises(InputError):
        td.prbs_bits(12)
    with pytest.raises(InputError):
        td.simulate(np.full(4 * M, np.nan), M)


# ---------------------------------------------------------------- closed-form eyes


@pytest.mark.parametrize("mod,spacing", [("NRZ", 2.0), ("PAM4", 2 / 3), ("PAM6", 2 / 5)])
def test_lossless_single_cursor_fully_open(mod, spacing):
    p, c = box_pulse([0.3])
    r = td.simulate(p, M, cursor_index=c, modulation=mod, n_symbols=20000)
    assert np.allclose(r.eye_height_v, 0.3 * spacing, rtol=1e-4)
    assert r.eye_width_ui == pytest.approx(1.0)
    assert r.symbol_errors == 0 and r.ser_counted == 0.0
    assert r.best_phase == 0


def test_rlm_shrinks_outer_eyes_by_the_formula():
    p, c = box_pulse([0.3])
    r = td.simulate(p, M, cursor_index=c, modulation="PAM4", rlm=0.9, n_symbols=20000)
    # levels -1, -R/3, R/3, 1: outer eyes 1 - R/3, inner eye 2R/3
    assert np.allclose(r.eye_height_v, 0.3 * np.array([1 - 0.3, 0.6, 1 - 0.3]), rtol=1e-6)


def test_two_tap_isi_known_eye_height():
    h0, h1 = 0.4, 0.1
    p, c = box_pulse([h0, h1])
    r = td.simulate(p, M, cursor_index=c, modulation="PAM4", n_symbols=30000)
    # worst case (every ISI combination appears in PRBS31Q): EH = h0 * 2/3 - 2 |h1|
    assert np.allclose(r.eye_height_v, h0 * 2 / 3 - 2 * h1, rtol=1e-4)
    # NRZ: 2 h0 - 2 |h1|
    r = td.simulate(p, M, cursor_index=c, modulation="NRZ", n_symbols=30000)
    assert np.allclose(r.eye_height_v, 2 * h0 - 2 * h1, rtol=1e-4)


def test_pre_cursor_isi():
    p, c = box_pulse([-0.05, 0.4], pre=3)
    r = td.simulate(p, M, cursor_index=c + M, modulation="PAM4", n_symbols=30000)
    assert np.allclose(r.eye_height_v, 0.4 * 2 / 3 - 2 * 0.05, rtol=1e-4)


def test_ideal_dfe_removes_post_cursor():
    p, c = box_pulse([0.4, 0.1, -0.05])
    r0 = td.simulate(p, M, cursor_index=c, modulation="PAM4", n_symbols=30000)
    r1 = td.simulate(p, M, cursor_index=c, modulation="PAM4", n_symbols=30000, dfe_taps_v=[0.1, -0.05])
    assert np.allclose(r0.eye_height_v, 0.4 * 2 / 3 - 2 * 0.15, rtol=1e-4)
    assert np.allclose(r1.eye_height_v, 0.4 * 2 / 3, rtol=1e-4)
    # a partial tap leaves the remainder
    r2 = td.simulate(p, M, cursor_index=c, modulation="PAM4", n_symbols=30000, dfe_taps_v=[0.06])
    assert np.allclose(r2.eye_height_v, 0.4 * 2 / 3 - 2 * (0.04 + 0.05), rtol=1e-4)


def test_eye_width_of_a_ramp_pulse():
    # a triangle pulse over two UIs (peak at the cursor): NRZ, no noise
    t = np.arange(-M, M + 1) / M
    p = np.zeros(10 * M)
    p[3 * M : 5 * M + 1] = 0.5 * (1 - np.abs(t))
    r = td.simulate(p, M, cursor_index=4 * M, modulation="NRZ", n_symbols=20000)
    # sample at offset u (UI): the cursor is 0.5(1-|u|), one neighbour 0.5|u|; EH = 2*0.5(1-|u|) - 2*0.5|u|
    # > 0 for |u| < 0.5 -> EW = 1 UI (just), EH at u = 0 is 1.0
    assert r.eye_height_min_v == pytest.approx(1.0, rel=1e-4)
    assert r.best_phase == 0
    assert 0.9 <= r.eye_width_ui <= 1.0
    r4 = td.simulate(p, M, cursor_index=4 * M, modulation="PAM4", n_symbols=20000)
    # PAM4: EH(u) = (2/3)(0.5)(1-|u|) - 2 (0.5)|u| > 0 for |u| < 0.25 -> EW = 0.5 UI
    assert r4.eye_width_ui == pytest.approx(0.5, abs=1.5 / M)


# ---------------------------------------------------------------- noise and jitter


def test_gaussian_noise_eye_height_matches_q_function():
    p, c = box_pulse([0.25])
    s = 0.01
    for ber in (1e-3, 1e-4):
        r = td.simulate(p, M, cursor_index=c, modulation="PAM4", sigma_noise_v=s, ber_target=ber,
                        n_symbols=20000)
        # each edge moves in by sigma Q^-1(ber)
        expect = 0.25 * 2 / 3 - 2 * s * ndtri(1 - ber)
        assert np.allclose(r.eye_height_v, expect, rtol=2e-3)


def test_counted_ser_vs_q_function_within_statistical_tolerance():
    p, c = box_pulse([0.25])
    s = 0.03
    r = td.simulate(p, M, cursor_index=c, modulation="PAM4", sigma_noise_v=s, n_symbols=1 << 17, seed=7)
    # thresholds midway: inner levels err on both sides, outer on one -> SER = 1.5 Q(d / 2 sigma)
    d = 0.25 * 2 / 3
    p_exp = 1.5 * ndtr(-(d / 2) / s)
    # thresholds come from the binned 1e-3 edges: a tiny offset from the exact midpoint
    assert r.ser_analytic == pytest.approx(p_exp, rel=5e-3)
    n = r.n_symbols
    sd = np.sqrt(p_exp * (1 - p_exp) / n)
    assert abs(r.ser_counted - p_exp) < 4 * sd  # a 4-sigma binomial bound
    # Gray coding: adjacent-level errors cost one of two bits
    assert r.ber_counted == pytest.approx(r.ser_counted / 2, rel=0.02)


def test_seed_makes_it_deterministic_and_changes_the_count():
    p, c = box_pulse([0.25])
    kw = dict(cursor_index=c, modulation="PAM4", sigma_noise_v=0.03, n_symbols=40000)
    a = td.simulate(p, M, seed=3, **kw)
    b = td.simulate(p, M, seed=3, **kw)
    e = td.simulate(p, M, seed=4, **kw)
    assert a.symbol_errors == b.symbol_errors and np.array_equal(a.eye_height_v, b.eye_height_v)
    assert a.symbol_errors != e.symbol_errors


def test_more_noise_or_lower_ber_never_opens_the_eye():
    p, c = box_pulse([0.3, 0.08, -0.03])
    ehs = [td.simulate(p, M, cursor_index=c, sigma_noise_v=s, n_symbols=20000).eye_height_min_v
           for s in (0.0, 0.005, 0.01)]
    assert ehs[0] > ehs[1] > ehs[2]
    ehb = [td.simulate(p, M, cursor_index=c, sigma_noise_v=0.005, ber_target=b, n_symbols=20000).eye_height_min_v
           for b in (1e-2, 1e-3, 1e-5)]
    assert ehb[0] > ehb[1] > ehb[2]


def test_jitter_through_slope_matches_resampling_for_small_jitter():
    # a smooth (raised-cosine-ish) pulse: first order slope jitter ~ exact resampling
    t = np.arange(12 * M) / M - 4.0
    p = 0.3 * np.exp(-0.5 * (t / 0.3) ** 2)
    c = int(np.argmax(p))
    kw = dict(cursor_index=c, modulation="PAM4", sigma_noise_v=0.002, a_dd_ui=0.02, sigma_rj_ui=0.01,
              n_symbols=40000, seed=1)
    a = td.simulate(p, M, jitter="slope", **kw)
    b = td.simulate(p, M, jitter="sampling", **kw)
    n = td.simulate(p, M, cursor_index=c, modulation="PAM4", sigma_noise_v=0.002, n_symbols=40000, seed=1)
    assert a.eye_height_min_v < n.eye_height_min_v  # jitter closes the eye
    assert a.eye_height_min_v == pytest.approx(b.eye_height_min_v, rel=0.02)
    assert a.eye_width_ui < n.eye_width_ui


def test_closed_eye_reports_negative_height_not_nan():
    p, c = box_pulse([0.2, 0.15, 0.1])
    r = td.simulate(p, M, cursor_index=c, modulation="PAM4", sigma_noise_v=0.01, n_symbols=20000)
    assert r.eye_height_min_v < 0 and np.all(np.isfinite(r.eye_height_v))
    assert r.eye_width_ui == 0.0
    d = r.to_dict()
    assert d["eye_height_min_mv"] < 0 and d["eye_width_ui"] == 0.0


@pytest.mark.parametrize("jitter", ["tx", "slope"])
def test_random_jitter_closes_the_eye_by_q_times_slope_sigma(jitter):
    # NRZ, smooth isolated pulse sampled off-peak: one dominant slope term, so the jitter error
    # x_n delta_n h_J(0) is exactly Gaussian with sigma = sigma_RJ |h_J(0)| (93A-28 slope, V/UI)
    t = np.arange(12 * M) / M - 4.0
    p = 0.3 * np.exp(-0.5 * (t / 0.25) ** 2)
    c = int(np.argmax(p))
    off = 4  # sample offset from the peak: 0.125 UI
    hj = (p[c + off + 1] - p[c + off - 1]) * M / 2
    rj = 0.01
    kw = dict(cursor_index=c, modulation="NRZ", n_symbols=1 << 17, phase=off, seed=5)
    a = td.simulate(p, M, **kw)
    b = td.simulate(p, M, sigma_rj_ui=rj, jitter=jitter, **kw)
    closing = a.eye_height_min_v - b.eye_height_min_v
    assert closing == pytest.approx(2 * ndtri(1 - 1e-3) * rj * abs(hj), rel=0.05)
