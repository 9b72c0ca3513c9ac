"""SerDes equalizers: module FFE dB mapping, TX FFE normalization, DFE limits, floating taps, CTLEs."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.errors import EqRangeError
from eqtune.serdes import equalizers as eqz
from eqtune.serdes.filters import ctle_com, peaking_ctle_gdc_db


@pytest.mark.parametrize("pre_db,post_db", [(0, 0), (0, 7), (3.5, 0), (2.0, 5.0), (3.5, 7.0), (0.5, 1.0)])
def test_module_ffe_taps_reproduce_the_emphasis(pre_db, post_db):
    cm1, c0, c1 = eqz.module_ffe_taps(pre_db, post_db)
    assert abs(cm1) + abs(c0) + abs(c1) == pytest.approx(1.0)
    assert cm1 <= 1e-12 and c1 <= 1e-12 and c0 > 0
    # IEEE 802.3 72.7.1.11 voltages of the 3-tap FFE step response (independent of the closed form):
    # steady state v_ss = sum c; pre-cursor ratio (c0 + c1 - c-1)/v_ss; post-cursor (c0 + c-1 - c1)/v_ss
    v_ss = cm1 + c0 + c1
    assert 20 * np.log10((c0 + c1 - cm1) / v_ss) == pytest.approx(pre_db, abs=1e-9)
    assert 20 * np.log10((c0 + cm1 - c1) / v_ss) == pytest.approx(post_db, abs=1e-9)


def test_post_cursor_only_is_classic_de_emphasis():
    # 2-tap de-emphasis: 20 log10((c0 + |c1|)/(c0 - |c1|)) = post dB (e.g. 6 dB -> c1 ~ -0.25)
    cm1, c0, c1 = eqz.module_ffe_taps(0.0, 6.0)
    assert cm1 == pytest.approx(0.0, abs=1e-12)
    assert 20 * np.log10((c0 - c1) / (c0 + c1)) == pytest.approx(6.0)
    assert c1 == pytest.approx(-(1 - 10 ** (-6 / 20)) / 2)


def test_ffe_main_tap_and_c0_min():
    taps = np.array([[-0.04, 0.1, -0.28, -0.04], [0.0, 0.0, -0.1, 0.0]])
    np.testing.assert_allclose(eqz.ffe_main_tap(taps), [0.54, 0.9])
    eqz.check_ffe(taps, 0.54)
    with pytest.raises(EqRangeError, match="c0_min"):
        eqz.check_ffe([[-0.04, 0.1, -0.28, -0.06]], 0.54, ("a", "b", "c", "d"))


def test_apply_ffe_rows_is_a_shifted_sum():
    p = np.zeros((1, 10, 2))
    p[0, 4] = [1.0, 2.0]
    out = eqz.apply_ffe_rows(p, np.array([-0.1, 0.8, -0.1]), np.array([-1, 0, 1]))
    np.testing.assert_allclose(out[0, 3], [-0.1, -0.2])
    np.testing.assert_allclose(out[0, 4], [0.8, 1.6])
    np.testing.assert_allclose(out[0, 5], [-0.1, -0.2])


def test_dfe_zero_forcing_within_limits():
    h0 = np.array([0.1])
    post = np.array([[0.08, 0.02, -0.01, 0.03]])
    b_max = np.array([0.65, 0.15, 0.1, 0.1])
    b_min = np.array([0.3, 0.05, -0.04, -0.04])
    res = eqz.dfe_zero_forcing(h0, post, b_min, b_max)
    # tap 1: 0.8 > 0.65 -> 0.08 - 0.065; tap 2: 0.2 > 0.15; tap 3: -0.1 < b_min -0.04 -> -0.01 + 0.004;
    # tap 4: 0.3 > 0.1 -> 0.03 - 0.01
    np.testing.assert_allclose(res, [[0.015, 0.005, -0.006, 0.02]], atol=1e-15)


def test_floating_dfe_finds_the_reflection_groups():
    tail = np.zeros((1, 34))
    tail[0, 10:13] = [0.004, -0.0045, 0.003]  # a reflection at 10..12
    tail[0, 25:28] = [0.002, 0.002, 0.002]
    tail[0, 3] = 0.0005
    res = eqz.floating_dfe_residual(np.array([0.1]), tail, groups=2, taps_per_group=3, b_max=0.05)
    np.testing.assert_allclose(res[0, 10:13], 0.0, atol=1e-15)
    np.testing.assert_allclose(res[0, 25:28], 0.0, atol=1e-15)
    assert res[0, 3] == pytest.approx(0.0005)  # outside the groups: untouched


@pytest.mark.parametrize("code", range(0, 11))
def test_peaking_ctle_code_is_db_at_nyquist(code):
    fn = 26.5625e9
    g = peaking_ctle_gdc_db(np.array([float(code)]), fn, fz_hz=21.25e9, fp1_hz=21.25e9, fp2_hz=53.125e9)
    h = ctle_com(np.array([0.0, fn]), g, fz_hz=21.25e9, fp1_hz=21.25e9, fp2_hz=53.125e9)
    assert 20 * np.log10(abs(h[0, 1]) / abs(h[0, 0])) == pytest.approx(code, abs=1e-9)
