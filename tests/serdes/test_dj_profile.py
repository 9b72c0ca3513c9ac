"""802.3dj (178A) profiles: the shipped KR file loads, matches PyChOpMarg's D3.3 transcription value by
value, is refused with one clear line when malformed, and leaves the 802.3ck profile loader untouched."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from eqtune.errors import ConfigError
from eqtune.serdes import list_profiles
from eqtune.serdes.dj_profile import dj_profile_from_dict, dj_profiles_dir, list_dj_profiles, load_dj_profile


def test_kr_profile_loads() -> None:
    p = load_dj_profile("ieee-dj-kr")
    assert "ieee-dj-kr" in list_dj_profiles()
    assert p.baud_gbd == 106.25 and p.levels == 4
    assert (p.ffe.n_taps, p.ffe.n_pre) == (15, 6)
    lo, hi = p.ffe_limits()
    assert lo[6] == hi[6] == 1.0 and lo[0] == -0.7 and hi[-1] == 0.7
    assert p.b_max == (0.85,)


def test_ck_profile_loader_does_not_see_the_dj_file() -> None:
    assert "ieee-dj-kr" not in list_profiles()


def test_kr_values_match_pychopmarg_d3p3() -> None:
    """Second transcription of the same D3.3 tables: PyChOpMarg 3.4.0 ``com_params("KR")``."""
    pytest.importorskip("pychopmarg", minversion="3.4.0", reason="pychopmarg 3.4.0 not installed (bench extra)")
    d33 = pytest.importorskip("pychopmarg.config.ieee_8023dj_d3p3")
    ref = d33.com_params("KR")
    p = load_dj_profile("ieee-dj-kr")
    assert (p.baud_gbd, p.levels, p.samples_per_ui, p.der0, p.r0_ohm) == (ref.fb, ref.L, ref.M, ref.DER_0, ref.R_0)
    assert p.tx["rise_time_ps"] == pytest.approx(ref.T_r * 1000)
    assert (p.tx["amplitude_v"], p.tx["amplitude_fe_v"], p.tx["amplitude_ne_v"]) == (ref.A_v, ref.A_fe, ref.A_ne)
    assert p.tx["c0_min"] == ref.c0_min and p.fr_fb == ref.f_r
    order = ("tx_cm3", "tx_cm2", "tx_cm1", "tx_c1")
    for i, name in enumerate(order):
        assert p.tx["taps"][name] == [ref.tx_taps_min[i], ref.tx_taps_max[i], ref.tx_taps_step[i]]
    c = p.ctle
    assert (c["fz1_ghz"], c["fp1_ghz"], c["fp2_ghz"], c["fz2_ghz"], c["fp3_ghz"]) == pytest.approx(
        (ref.f_z, ref.f_p1, ref.f_p2, ref.f_LF, ref.f_p3))
    assert (c["gdc_db"][0], c["gdc_db"][1]) == (min(ref.g_DC), max(ref.g_DC))
    assert (c["gdc2_db"][0], c["gdc2_db"][1]) == (min(ref.g_DC2), max(ref.g_DC2))
    assert (p.ffe.n_pre, p.ffe.n_taps, p.ffe.float_groups, p.ffe.float_taps_per_group) == (
        ref.dw, ref.Nfix, ref.Nwg, ref.Nwf)
    lo, hi = p.ffe_limits()
    np.testing.assert_array_equal(lo, ref.rx_taps_min[:ref.Nfix])
    np.testing.assert_array_equal(hi, ref.rx_taps_max[:ref.Nfix])
    assert p.ffe.n_max == len(ref.rx_taps_max) and p.ffe.float_w_max == ref.rx_taps_max[-1]
    assert p.b_min == tuple(ref.dfe_min) and p.b_max == tuple(ref.dfe_max)
    n = p.noise
    assert (n["snr_tx_db"], n["eta0_v2_per_ghz"], n["sigma_rj_ui"], n["a_dd_ui"], n["rlm"]) == (
        ref.SNR_TX, ref.eta_0, ref.sigma_Rj, ref.A_DD, ref.RLM)
    assert (n["adc_bits"], n["adc_clip_probability"], n["mlsd"], n["dcom_an_db"]) == (
        ref.N_qb, ref.P_qc, ref.mlsd, ref.dCOM_an)
    assert tuple(p.package["test1_zp1_mm"]) == d33.ZP1_KR_C2C[("A", 1)]
    assert tuple(p.package["test2_zp1_mm"]) == d33.ZP1_KR_C2C[("A", 2)]


def _doc() -> dict:
    return tomllib.loads((dj_profiles_dir() / "ieee-dj-kr.toml").read_text(encoding="utf-8"))


def test_unknown_key_is_one_line_naming_the_path() -> None:
    doc = _doc()
    doc["rx"]["ffe"]["n_tap"] = 3
    with pytest.raises(ConfigError, match=r"x\.toml: rx\.ffe\.n_tap: unknown key") as err:
        dj_profile_from_dict(doc, "x.toml")
    assert "\n" not in str(err.value)


def test_pre_cursor_taps_must_fit() -> None:
    doc = _doc()
    doc["rx"]["ffe"]["n_pre"] = 15
    with pytest.raises(ConfigError, match="n_pre: must be < n_taps"):
        dj_profile_from_dict(doc, "x.toml")


def test_missing_profile_names_the_shipped_ones() -> None:
    with pytest.raises(ConfigError, match="ieee-dj-kr"):
        load_dj_profile("no-such-dj")
