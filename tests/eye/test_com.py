"""COM as the standard computes it: the 93A-36 FOM search, both package cases, MATLAB COM's TX noise.

Independent checks: the FOM terms from the Gram matrices against the explicit cursor sums of the engine's
stage B path; the TX noise against the closed form of MATLAB COM 3.70 (sigma_TX = h(0) 10^(-SNR_TX/20));
the FOM search against MATLAB's optimum EQ on the gore C2C channel (../shared/com-golden/README.md).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

OPT = {"tx_cm3": -0.02, "tx_cm2": 0.06, "tx_cm1": -0.2, "tx_c1": -0.04, "ctle_gdc": -3.0, "ctle_gdc2": -2.0}
NAMES = ("tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2")


@pytest.fixture(scope="module")
def gore(gore_c2c_file):
    from eqtune.channel import load_channel

    return load_channel(str(gore_c2c_file))


@pytest.fixture(scope="module")
def tracy4(shared_dir):
    from eqtune.cli.com_cmd import build_channel

    d = shared_dir / "channels-ieee" / "tracy_3ck_02_0119_DPO_4in"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_channel(str(d / "DPO_4in_Meg7_THRU.s4p"), (str(d / "*_FEN*.s4p"),), (str(d / "*_NEN*.s4p"),),
                             None, None)


def test_tx_noise_is_matlab_cursor_form_by_default(gore):
    from eqtune.eye import EyeEngine

    e = EyeEngine(gore, "ieee-3ck-c2c", direction="serdes")
    nb = e.noise_sigma_v(OPT)
    r = e.evaluate(OPT)
    # MATLAB COM 3.70: sigma_TX = (L-1) A_s / R_LM 10^(-SNR_TX/20) = h(0) 10^(-33/20)
    assert nb.sigma_tx_v == pytest.approx(r.cursor_mv * 1e-3 * 10 ** (-33 / 20), rel=1e-9)
    s = EyeEngine(gore, "ieee-3ck-c2c", direction="serdes", tx_noise="spectrum")
    assert s.noise_sigma_v(OPT).sigma_tx_v < nb.sigma_tx_v  # sigma_X^2 sum h^2 < h0^2 on this pulse
    with pytest.raises(Exception, match="tx_noise"):
        EyeEngine(gore, "ieee-3ck-c2c", direction="serdes", tx_noise="psd")


def test_fom_terms_from_grams_equal_explicit_cursor_sums(tracy4):
    from eqtune.eye import EyeEngine

    e = EyeEngine(tracy4, "ieee-3ck-kr", direction="serdes")
    ks = e.knob_space()
    g = ks.grid()[::4001]
    taps, amp, idx = e.grid_rows(g, ks.names)
    t = e.fom_terms(taps, amp, idx)
    v = e._cursors(taps, amp, idx, t.phase)
    h0, res = e._residual(v)  # the stage-B path: every cursor formed, DFE + floating taps applied
    sx2 = e.sigma_x2
    np.testing.assert_allclose(t.h0, h0, rtol=1e-12)
    np.testing.assert_allclose(t.sigma_isi**2, sx2 * np.sum(res**2, axis=-1), rtol=1e-9, atol=1e-14)
    hj = e._slope_cursors(taps, amp, idx, t.phase)
    np.testing.assert_allclose(t.sigma_j**2, (0.02**2 + 0.01**2) * sx2 * np.sum(hj**2, axis=-1), rtol=1e-9)
    xt = e._xtalk(taps, amp, idx)
    np.testing.assert_allclose(t.sigma_xt**2, sx2 * np.sum(xt**2, axis=-1), rtol=1e-9)
    assert np.all(t.sigma_xt > 0)


def test_fom_search_finds_matlabs_optimum_region(gore):
    from eqtune.eye import EyeEngine

    e = EyeEngine(gore, "ieee-3ck-c2c", direction="serdes")
    ks = e.knob_space()
    g = ks.grid()
    fom = e.fom_grid(g, ks.names)
    at_opt = e.fom_terms(*e.grid_rows(np.array([[OPT[n] for n in NAMES]]), NAMES)).fom_db[0]
    # MATLAB COM 3.70's optimum EQ (thru + 10 aggressors) is within 0.01 dB of the thru-only best FOM, among
    # the top 5 of 168,525 points
    assert fom.max() - at_opt < 0.01
    assert int(np.sum(fom > at_opt)) < 5


def test_compute_com_reports_both_cases_and_the_worse(gore):
    from eqtune.eye.com import compute_com

    rep = compute_com(gore, "ieee-3ck-c2c")
    assert [c.package_case for c in rep.cases] == [1, 2]
    assert rep.com_db == min(c.com_db for c in rep.cases)
    c1, c2 = rep.cases
    assert c2.il_db_nyquist_with_packages > c1.il_db_nyquist_with_packages + 2  # longer package
    assert rep.worst_case == 2 and c2.com_db < c1.com_db
    assert rep.passed == (rep.com_db >= 3.0)
    # 93A-1: COM = 20 log10(A_s / A_ni)
    assert c1.com_db == pytest.approx(20 * np.log10(c1.a_s_mv / c1.a_ni_mv), abs=1e-9)
    assert rep.settings["tx_noise"] == "cursor" and rep.il_db_nyquist == pytest.approx(12.17, abs=0.01)


def test_cli_com_json_and_plot(gore_c2c_file, tmp_path):
    from eqtune.cli import main

    png = tmp_path / "com.png"
    r = CliRunner().invoke(main, ["com", str(gore_c2c_file), "--profile", "ieee-3ck-c2c", "--case", "1",
                                  "--json", "-q", "--plot", str(png)])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert [c["package_case"] for c in d["cases"]] == [1] and d["profile"] == "ieee-3ck-c2c"
    assert png.stat().st_size > 10_000
    r = CliRunner().invoke(main, ["com", str(gore_c2c_file), "--profile", "ieee-3ck-c2c", "--case", "1", "-q"])
    assert r.exit_code == 0 and "A_s" in r.output and "package case 1: COM" in r.output


def test_cli_com_refuses_a_glob_matching_nothing(gore_c2c_file, tmp_path):
    from eqtune.cli import main

    r = CliRunner().invoke(main, ["com", str(gore_c2c_file), "--profile", "ieee-3ck-c2c",
                                  "--fext", str(tmp_path / "*_FEXT*.s4p")])
    assert r.exit_code == 2 and "no such file" in r.output and "Traceback" not in r.output


def test_cli_com_refuses_a_set_whose_aggressor_pairs_differently_unless_named(shared_dir, tmp_path):
    import skrf

    from eqtune.channel.touchstone import read_network
    from eqtune.cli import main

    d = shared_dir / "channels-ieee" / "tracy_3ck_02_0119_DPO_4in"
    src = d / "DPO_4in_Meg7_FENG89.s4p"
    net = read_network(src)
    sw = [0, 2, 1, 3]  # the same file exported 1-3/2-4
    dst = tmp_path / "fext_13_24.s4p"
    skrf.Network(frequency=net.frequency, s=net.s[:, sw][:, :, sw], z0=net.z0[:, sw]).write_touchstone(
        str(dst.with_suffix("")), form="ri")
    thru = str(d / "DPO_4in_Meg7_THRU.s4p")
    r = CliRunner().invoke(main, ["com", thru, "--fext", str(dst), "--profile", "ieee-3ck-c2c", "--case", "1", "-q"])
    assert r.exit_code == 2 and "pair as 1-3/2-4 but the thru's as 1-2/3-4" in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    ok = CliRunner().invoke(main, ["com", thru, "--fext", str(dst), "--profile", "ieee-3ck-c2c", "--case", "1",
                                   "-q", "--json", "--aggressor-port-order", "1-3/2-4"])
    assert ok.exit_code == 0, ok.output
    ref = CliRunner().invoke(main, ["com", thru, "--fext", str(src), "--profile", "ieee-3ck-c2c", "--case", "1",
                                    "-q", "--json"])
    assert json.loads(ok.output)["com_db"] == pytest.approx(json.loads(ref.output)["com_db"], abs=1e-6)
