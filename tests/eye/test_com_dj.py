"""802.3dj COM (eqtune.eye.com_dj and its search) against independent forms and PyChOpMarg 3.4.0.

Independent sources: the direct MMSE solve (eqtune.eye.mmse.mmse_rx_ffe on the explicitly built pulse,
itself checked against PyChOpMarg's ``optimize.mmse`` in test_mmse.py) and the direct noise terms
(eqtune.eye.dj_noise.noise_autocorrelation, checked against PyChOpMarg's NoiseCalc in test_dj_noise.py)
for the quadratic-form search; the CTLE evaluated directly for its basis decomposition; closed forms
for the PMFs; PyChOpMarg 3.4.0's ``COM`` (MMSE mode) for the whole procedure on a generated channel.
The channel files are written into a temp dir by benchmarks/dj_channels.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.channel.library import channel_from_definition
from eqtune.cli import main
from eqtune.eye import dj_pmf
from eqtune.eye import dj_search as S
from eqtune.eye.com_dj import compute_dj_com
from eqtune.eye.dj_link import ctle_dj, prepare_link, pulse
from eqtune.eye.dj_noise import noise_autocorrelation
from eqtune.eye.mmse import mmse_rx_ffe
from eqtune.serdes.dj_profile import is_dj_profile, load_dj_profile

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import dj_channels  # noqa: E402

CMP_PROFILE = ROOT / "benchmarks" / "dj_pychopmarg_kr.toml"


@pytest.fixture(scope="module")
def host4(tmp_path_factory: pytest.TempPathFactory) -> dj_channels.DjChannelSet:
    """host-4in with its 2 FEXT and 1 NEXT files (only this set: the generator's first)."""
    out = tmp_path_factory.mktemp("dj")
    f = dj_channels.FREQS_HZ
    sdd = dj_channels.host_thru_sdd(f, 4.0)
    thru = dj_channels._write(out, "host-4in", sdd)
    fext = tuple(dj_channels._write(out, f"host-4in-fext{k + 1}",
                                    dj_channels.crosstalk_sdd(f, sdd[:, 1, 0], "FEXT", 4.0, k_f_ps_per_in=kf))
                 for k, kf in enumerate(dj_channels.K_F_PS_PER_IN))
    nxt = (dj_channels._write(out, "host-4in-next1", dj_channels.crosstalk_sdd(f, sdd[:, 1, 0], "NEXT", 4.0)),)
    return dj_channels.DjChannelSet("host-4in", thru, fext, nxt, 4.0)


def _channel(cs: dj_channels.DjChannelSet):  # type: ignore[no-untyped-def]
    order = "1-2/3-4"
    doc = {"name": cs.name, "segments": [{"type": "touchstone", "file": str(cs.thru), "port_order": order}],
           "aggressors": [{"kind": k, "file": str(p), "port_order": order}
                          for k, ps in (("FEXT", cs.fext), ("NEXT", cs.next)) for p in ps]}
    return channel_from_definition(doc, base_dir=cs.thru.parent, name=cs.name)


def _small(prof, **ctle):  # type: ignore[no-untyped-def]
    """The comparison profile with a one-setting CTLE grid (the tests' budget)."""
    c = {**prof.ctle, "gdc_db": [-9.0, -9.0, 1.0], "gdc2_db": [-2.0, -2.0, 1.0], **ctle}
    return dataclasses.replace(prof, ctle=c)


def test_profile_family_is_detected() -> None:
    assert is_dj_profile("ieee-dj-kr")
    assert is_dj_profile(str(CMP_PROFILE))
    assert not is_dj_profile("ieee-3ck-kr")
    assert not is_dj_profile(None)
    # a host/802.3ck profile file with its own [rx.ffe] table (pre/post taps) stays on the 802.3ck path
    from eqtune.resources import serdes_profiles_dir

    for toml in serdes_profiles_dir().glob("*.toml"):
        assert not is_dj_profile(str(toml)), toml


def test_tx_grid_keeps_c0_min_and_the_sheet_order() -> None:
    prof = load_dj_profile("ieee-dj-kr")
    taps = S.tx_grid(prof)
    assert np.all(taps[:, 3] >= prof.tx["c0_min"] - 1e-12)
    assert np.allclose(taps[:, 3], 1 - np.abs(np.delete(taps, 3, axis=1)).sum(axis=1))
    # first tap slowest: c(-2) never decreases down the list
    assert np.all(np.diff(taps[:, 1]) >= -1e-12)
    assert S.grid_values(-20, 0, 1)[:2] == [0.0, -1.0] and len(S.grid_values(-20, 0, 1)) == 21


def test_ctle_basis_equals_the_ctle_evaluated_directly(host4: dj_channels.DjChannelSet) -> None:
    prof = load_dj_profile(CMP_PROFILE)
    link = prepare_link(_channel(host4), prof, 33.0, 33.0)
    basis = S.ctle_basis(link, prof, prof.ffe.n_taps)
    for gdc, gdc2 in ((0.0, 0.0), (-9.0, -2.0), (-12.0, -4.0)):
        direct = pulse(link, link.victim.h * ctle_dj(link.grid.freqs_hz, gdc, gdc2, prof), link.victim.amplitude_v)
        via = S.ctle_weights(gdc, gdc2) @ basis.victim
        assert np.max(np.abs(via - direct)) < 1e-12 * np.max(np.abs(direct))


def test_search_point_equals_the_direct_mmse(host4: dj_channels.DjChannelSet) -> None:
    """The quadratic-form solve of a TX point equals mmse_rx_ffe on the explicitly built pulse with the
    dj_noise terms from the explicit pulses (no shared intermediate but the link's pulses)."""
    prof = load_dj_profile(CMP_PROFILE)
    ch = _channel(host4)
    link = prepare_link(ch, prof, 33.0, 33.0)
    rx = S.RxConfig.from_profile(prof)
    m, gdc, gdc2 = link.grid.samples_per_ui, -9.0, -2.0
    cs = S.prepare_ctle(link, prof, rx, gdc, gdc2)
    taps = np.array([[0.0, 0.05, -0.1, 0.75, -0.1, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])
    ps = S.solve_points(cs, taps, prof, rx, m, m // 2)
    hctf = ctle_dj(link.grid.freqs_hz, gdc, gdc2, prof)
    p0 = pulse(link, link.victim.h * hctf, link.victim.amplitude_v)
    nz = prof.noise
    for b, c in enumerate(taps):
        vic = sum(ck * np.roll(p0, (k + rx.n_pre) * m) for k, ck in enumerate(c))
        aggs = []
        for a in link.aggressors:
            pa = pulse(link, a.h * hctf, a.amplitude_v)
            aggs.append(sum(ck * np.roll(pa, k * m) for k, ck in enumerate(c)) if a.kind == "FEXT" else pa)
        ts = int(ps.sample_index[b])
        rn = noise_autocorrelation(victim_pulse_v=vic, samples_per_ui=m, cursor_sample=ts, ui_s=link.grid.ui_s,
                                   var_x=rx.var_x, eta0_v2_per_ghz=nz["eta0_v2_per_ghz"], h_rx=link.h_r * hctf,
                                   tx_noise_pulse_v=p0, snr_tx_db=nz["snr_tx_db"], a_dd_ui=nz["a_dd_ui"],
                                   sigma_rj_ui=nz["sigma_rj_ui"], aggressor_pulses_v=aggs, n_lags=rx.n_taps).total
        h = vic[ts % m::m]
        sol = mmse_rx_ffe(h, rn, cursor=ts // m, n_taps=rx.n_taps, n_pre=rx.n_pre, n_dfe=rx.n_dfe, var_x=rx.var_x,
                          b_min=rx.b_min, b_max=rx.b_max, w_min=rx.w_min, w_max=rx.w_max, rlm=rx.rlm,
                          levels=rx.levels)
        assert float(ps.fom_db[b]) == pytest.approx(float(sol.fom_db), abs=1e-6)
        assert np.allclose(ps.ffe[b], sol.ffe, atol=1e-6)


def test_gaussian_pmf_gives_the_gaussian_tail() -> None:
    """A_ni of a pure Gaussian at DER_0 = Q^-1(DER_0) sigma (93A-42/45), within one bin."""
    sigma, ystep = 1e-3, 1e-6
    y = dj_pmf.voltage_grid(ystep, 8 * sigma)
    # Q^-1(1e-4) = 3.719016 (Abramowitz & Stegun 26.2.23 tables)
    assert dj_pmf.a_ni_at(y, dj_pmf.gaussian_pmf(y, sigma**2), 1e-4) == pytest.approx(3.719016 * sigma, abs=2 * ystep)


def test_delta_pmf_of_one_sample_is_equiprobable_levels() -> None:
    y = dj_pmf.voltage_grid(1e-3, 0.1)
    p = dj_pmf.delta_pmf(np.array([0.03]), 4, y)
    idx = np.nonzero(p)[0]
    assert np.allclose(y[idx], [-0.03, -0.01, 0.01, 0.03]) and np.allclose(p[idx], 0.25)


def test_mlse_needs_a_one_tap_dfe_and_adc_needs_adc_bits(host4: dj_channels.DjChannelSet) -> None:
    from eqtune.errors import InputError

    prof = _small(load_dj_profile(CMP_PROFILE))
    two_taps = dataclasses.replace(prof, b_min=(0.0, -0.1), b_max=(0.85, 0.2))
    with pytest.raises(InputError, match="1-tap DFE"):
        compute_dj_com(_channel(host4), two_taps, mlse=True)
    with pytest.raises(InputError, match="adc_bits"):
        compute_dj_com(_channel(host4), prof, adc=True)  # the comparison profile has N_qb = 0


def test_mlse_adds_the_mlsd_gain_and_keeps_the_plain_figure(host4: dj_channels.DjChannelSet) -> None:
    """MLSE on: COM = COM_DFE + gain (floored at COM_DFE), the search and the plain figure unchanged."""
    prof = _small(load_dj_profile(CMP_PROFILE))
    off = compute_dj_com(_channel(host4), prof, cases=(1,), adc=False, mlse=False).cases[0]
    on = compute_dj_com(_channel(host4), prof, cases=(1,), adc=False, mlse=True).cases[0]
    assert off.mlsd_gain_db is None and off.com_db == off.com_plain_db == off.com_dfe_db
    assert on.com_plain_db == off.com_db and on.com_dfe_db == off.com_db
    assert on.tx_taps == off.tx_taps and on.cursor_sample == off.cursor_sample
    assert on.mlsd_gain_db is not None and on.der_mlsd is not None
    assert on.com_db == pytest.approx(max(on.com_dfe_db, on.com_dfe_db + on.mlsd_gain_db))
    assert 0.0 < on.der_mlsd < prof.der0 and on.mlsd_gain_db > 0.0  # DER_MLSD below DER_0 is a gain


def test_cli_runs_dj_com_and_refuses_plot(host4: dj_channels.DjChannelSet, tmp_path: Path) -> None:
    text = CMP_PROFILE.read_text().replace("gdc_db = [-12, 0, 3]", "gdc_db = [-9, -9, 1]").replace(
        "gdc2_db = [-4, 0, 2]", "gdc2_db = [-2, -2, 1]")
    prof = tmp_path / "small-dj.toml"
    prof.write_text(text)
    args = ["com", str(host4.thru), "--fext", str(host4.fext[0]), "--next", str(host4.next[0]),
            "--port-order", "1-2/3-4", "--aggressor-port-order", "1-2/3-4", "--profile", str(prof), "--case", "1"]
    r = CliRunner().invoke(main, [*args, "--json", "-q"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["cases"][0]["package_case"] == 1 and d["aggressors"] == {"FEXT": 1, "NEXT": 1}
    assert math.isfinite(d["com_db"]) and d["settings"]["mlse"] == "off"  # the comparison profile's mlsd = false
    r = CliRunner().invoke(main, [*args, "--mlse", "-q"])
    assert r.exit_code == 0, r.output
    assert "MLSD (178A.1.10): COM_DFE" in r.output and "COM with ADC and MLSE off:" in r.output
    assert "MLSE on" in r.output
    r = CliRunner().invoke(main, ["com", str(host4.thru), "--port-order", "1-2/3-4", "--profile", "ieee-3ck-kr",
                                  "--mlse", "-q"])
    assert r.exit_code != 0 and "802.3dj" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, [*args, "--plot", str(tmp_path / "x.png"), "-q"])
    assert r.exit_code == 2 and "--plot" in r.output


@pytest.mark.slow
def test_agrees_with_pychopmarg_mmse_com(host4: dj_channels.DjChannelSet) -> None:
    """Whole procedure vs PyChOpMarg 3.4.0 COM (MMSE), one CTLE setting x 4 TX points, package case 1,
    identical listed settings (benchmarks/dj_pychopmarg_kr.toml = its IEEE_8023dj), nothing fitted."""
    pytest.importorskip("pychopmarg", reason="pychopmarg 3.4.0 (bench extra) is not installed")
    import warnings

    from pychopmarg.com import COM
    from pychopmarg.config.ieee_8023dj import IEEE_8023dj

    prof = dataclasses.replace(_small(load_dj_profile(CMP_PROFILE)),
                               tx={**load_dj_profile(CMP_PROFILE).tx,
                                   "taps": {"tx_cm1": [-0.1, 0.0, 0.1], "tx_c1": [-0.1, 0.0, 0.1]}})
    ours = compute_dj_com(_channel(host4), prof, cases=(1,), adc=False)
    p = dataclasses.replace(IEEE_8023dj, g_DC=[-9.0], g_DC2=[-2.0], tx_taps_min=[0, 0, -0.1, -0.1, 0, 0],
                            tx_taps_max=[0.0] * 6, tx_taps_step=[0, 0, 0.1, 0.1, 0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = COM(p, host4.as_pychopmarg())
        c.n_procs = 1
        theirs = float(c())
    assert ours.com_db == pytest.approx(theirs, abs=0.3)
    assert ours.cases[0].cursor_sample == c.cursor_ix


@pytest.mark.slow
def test_mlsd_agrees_with_pychopmarg_calc_mlsd(host4: dj_channels.DjChannelSet) -> None:
    """178A.1.10 at the same EQ as PyChOpMarg 3.4.0 (``mlsd=True``, dCOM_an 3 dB: its ``COM.calc_mlsd``),
    one CTLE setting x 1 TX point, package case 1, the listed comparison settings, nothing fitted."""
    pytest.importorskip("pychopmarg", reason="pychopmarg 3.4.0 (bench extra) is not installed")
    import warnings

    from pychopmarg.com import COM
    from pychopmarg.config.ieee_8023dj import IEEE_8023dj

    base = load_dj_profile(CMP_PROFILE)
    prof = dataclasses.replace(_small(base), tx={**base.tx, "taps": {}})
    ours = compute_dj_com(_channel(host4), prof, cases=(1,), adc=False, mlse=True).cases[0]
    p = dataclasses.replace(IEEE_8023dj, g_DC=[-9.0], g_DC2=[-2.0], tx_taps_min=[0.0] * 6, tx_taps_max=[0.0] * 6,
                            tx_taps_step=[0.0] * 6, mlsd=True, dCOM_an=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = COM(p, host4.as_pychopmarg())
        c.n_procs = 1
        theirs = float(c())
    r = c.com_rslts
    assert ours.mlsd_terms == r["mlsd_terms"]
    assert ours.g_an == pytest.approx(r["g_an"], rel=0.02)
    assert ours.der_mlsd == pytest.approx(r["DER_MLSD"], rel=0.05)
    assert ours.mlsd_gain_db == pytest.approx(r["delta_COM_mlsd"], abs=0.05)
    assert ours.com_db == pytest.approx(theirs, abs=0.3)
