"""SerDes profiles: every shipped profile loads; the IEEE C2C values are those of the MATLAB config."""

from __future__ import annotations

import pytest

from eqtune.errors import ConfigError
from eqtune.serdes import list_profiles, load_profile
from eqtune.serdes.profile import profile_from_dict


def test_shipped_profiles_load():
    names = list_profiles()
    for n in ("host-lr-112g", "host-sr-112g", "host-lr-224g", "ieee-3ck-c2c", "ieee-3ck-kr", "ieee-3ck-cr"):
        assert n in names
        p = load_profile(n)
        assert p.name == n
        k = p.knobs()
        for name in ("ctle_gdc", "rx_pre", "rx_post", "rx_amp", "tx_eq"):
            assert name in k
    assert load_profile(None).name == "host-lr-112g"
    assert load_profile("host-lr-224g").baud_gbd == 106.25
    assert load_profile("host-sr-112g").rx.dfe.n_taps == 0
    assert load_profile("host-lr-112g").rx.dfe.n_taps == 12
    assert load_profile("ieee-3ck-kr").rx.dfe.float_groups == 3


def test_c2c_profile_matches_matlab_config():
    # ../shared/com-golden/README.md, config_com_ieee8023_93a=3ck_d3p1_120F_C2C_11_30_21
    p = load_profile("ieee-3ck-c2c")
    assert p.tx.amplitude_v == 0.413 and p.tx.c0_min == 0.54 and p.tx.rise_time_ps == 7.5
    assert p.noise.snr_tx_db == 33 and p.noise.eta0_v2_per_ghz == 2e-8
    assert p.noise.sigma_rj_ui == 0.01 and p.noise.a_dd_ui == 0.02 and p.noise.rlm == 0.95
    assert p.rx.dfe.b_max == (0.65, 0.15, 0.1, 0.1, 0.1, 0.1)
    assert p.rx.dfe.b_min == (0.3, 0.05, -0.04, -0.04, -0.04, -0.04)
    k = p.knobs()
    assert k["ctle_gdc"].values[0] == -20 and k["ctle_gdc"].values[-1] == 0 and len(k["ctle_gdc"].values) == 21
    assert k["tx_cm1"].values[0] == -0.28 and len(k["tx_cm1"].values) == 15
    assert p.package_case == 1


def test_module_knob_ranges():
    k = load_profile("host-lr-112g").knobs()
    assert k["rx_pre"].values == tuple(float(i) for i in range(8))
    assert k["rx_amp"].values == (0.0, 1.0, 2.0, 3.0)
    assert load_profile("host-lr-112g").module.rx_amp_swing_mv_ppd(3) == 900.0


def test_unknown_profile_and_bad_fields(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_profile("no-such-serdes")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\n[tx.taps]\ntx_cm9 = [0, 0, 0, 0]\n")
    with pytest.raises(ConfigError, match="tx_cm9"):
        load_profile(str(bad))
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_profile(str(broken))
    with pytest.raises(ConfigError, match="default"):
        profile_from_dict({"tx": {"taps": {"tx_c1": [-0.1, 0, 0.02, 0.5]}}})
    with pytest.raises(ConfigError, match="modulation"):
        profile_from_dict({"modulation": "QAM16"})
    board = {"zp_mm": 110.3, "zc_ohm": 100.0, "c0_pf": 0.029, "c1_pf": 0.019, "tau_ns_per_mm": 5.79e-3,
             "gamma0_a1_a2": [0.0, 3.8206e-4, 9.5909e-5]}
    assert profile_from_dict({"package": {"case": 1, "board": board}}).host_board is not None
    with pytest.raises(ConfigError, match=r"package\.board\.zc_ohm"):
        profile_from_dict({"package": {"case": 1, "board": board | {"zc_ohm": 0.0}}})
    with pytest.raises(ConfigError, match=r"package\.board\.gamma0_a1_a2"):
        profile_from_dict({"package": {"case": 1, "board": board | {"gamma0_a1_a2": [0.0, 1e-4]}}})
    with pytest.raises(ConfigError, match=r"package\.board"):
        profile_from_dict({"package": {"case": 1, "board": {k: v for k, v in board.items() if k != "c1_pf"}}})


def test_rx_ffe_section_parses():
    p = profile_from_dict({"rx": {"ffe": {"pre": 1, "post": 3}}, "module": {"tx_input_ffe_post": 2}})
    assert (p.rx.ffe_pre, p.rx.ffe_post) == (1, 3)
    assert p.module.tx_input_ffe_post == 2 and isinstance(p.module.tx_input_ffe_post, int)


def test_an_edited_profile_file_is_read_again(tmp_path):
    """Profiles are cached per process by file, size and modification time: an unchanged file is parsed
    once, an edited one (a long-running TUI, a study) is read again instead of the stale copy."""
    import os

    from eqtune.serdes.profile import load_profile, serdes_profiles_dir

    p = tmp_path / "mine.toml"
    text = (serdes_profiles_dir() / "host-lr-112g.toml").read_text()
    assert "gdc_db = [-16, 0, 1, -6]" in text
    p.write_text(text)
    first = load_profile(str(p))
    assert load_profile(str(p)) is first  # unchanged: the cached object
    p.write_text(text.replace("gdc_db = [-16, 0, 1, -6]", "gdc_db = [-16, 0, 1, -5]"))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a later mtime even on coarse clocks
    edited = load_profile(str(p))
    assert edited is not first
    assert edited.knobs()["ctle_gdc"].default == -5.0 and first.knobs()["ctle_gdc"].default == -6.0
    assert load_profile("host-lr-112g") is load_profile("host-lr-112g")
