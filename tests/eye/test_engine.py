"""The eye engine: physics sanity (lossless, monotonicity), API contract, bad input."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from eqtune.channel.model import Channel
from eqtune.errors import EqRangeError, InputError
from eqtune.eye import EyeEngine, evaluate_link
from eqtune.serdes.profile import load_profile, profile_from_dict

FB_GBD = 53.125


def _ideal_profile(**noise):
    """A SerDes with a flat CTLE, no DFE, no rise-time or Butterworth filtering, and (by default) no noise."""
    nz = {"snr_tx_db": 300.0, "eta0_v2_per_ghz": 0.0, "sigma_rj_ui": 0.0, "a_dd_ui": 0.0, "rlm": 1.0}
    nz.update(noise)
    return profile_from_dict({
        "name": "ideal", "baud_gbd": FB_GBD, "modulation": "PAM4",
        "tx": {"c0_min": 0.5, "amplitude_v": 0.4, "rise_time_ps": 0.0,
               "taps": {"tx_cm1": [-0.2, 0.0, 0.02, 0.0], "tx_c1": [-0.2, 0.0, 0.02, 0.0]}},
        "rx": {"fr_fb": 1e6, "ctle": {"gdc_db": [0, 0, 0, 0], "fz_ghz": 1e9, "fp1_ghz": 1e9, "fp2_ghz": 1e9},
               "dfe": {"b_max": []}},
        "noise": nz, "package": {"case": 0},
    })


def _lossless(samples_per_ui=32, modulation="PAM4"):
    # a flat channel over the whole simulated band (0 .. M f_b / 2), so the pulse is an ideal 1-UI box
    n = 2 ** 12
    df = FB_GBD * 1e9 * samples_per_ui / n
    f = np.arange(n // 2 + 1) * df
    return Channel("lossless", f, np.ones_like(f, dtype=complex), modulation=modulation, serdes_profile="ideal")


def _lossy(loss_db_nyq=18.0, name="lossy"):
    # sqrt(f) skin-effect + f dielectric loss with a delay of 1 ns (an analytic lossy line)
    f = np.arange(0, 60e9 + 1, 10e6)
    fn = FB_GBD * 1e9 / 2
    a_db = loss_db_nyq * (0.3 * np.sqrt(f / fn) + 0.7 * f / fn)
    h = 10 ** (-a_db / 20) * np.exp(-2j * np.pi * f * 1e-9)
    return Channel(name, f, h, serdes_profile="host-lr-112g")


@pytest.fixture(scope="module")
def lossy_engine():
    return EyeEngine(_lossy(), "host-lr-112g", direction="serdes")


@pytest.mark.parametrize("modulation,levels", [("PAM4", 4), ("NRZ", 2), ("PAM6", 6)])
def test_lossless_noise_free_eye_is_fully_open(modulation, levels):
    eng = EyeEngine(_lossless(modulation=modulation), _ideal_profile(), direction="serdes")
    r = eng.evaluate({"tx_cm1": 0.0, "tx_c1": 0.0})
    spacing_mv = 2 * 400.0 / (levels - 1)  # outer levels at +-A_v = +-400 mV
    assert len(r.eye_height_mv) == levels - 1
    for eh in r.eye_height_mv:
        assert eh == pytest.approx(spacing_mv, rel=1e-3)
    assert r.eye_width_ui == pytest.approx(1.0)
    assert r.eye_width_ps == pytest.approx(1e3 / FB_GBD)
    assert not r.closed and r.ber_estimate < 1e-15


def test_lossless_with_noise_matches_gaussian_formula():
    # TX noise only, on an ideal channel: in COM mode sigma_TX = h(0) 10^(-SNR/20) = A 10^(-SNR/20) (93A-30 as
    # MATLAB COM applies it); with tx_noise="spectrum" sigma_TX^2 = sigma_X^2 10^(-SNR/10) A^2
    sigma_v = 0.004
    spectrum = EyeEngine(_lossless(), _ideal_profile(snr_tx_db=20 * math.log10(0.4 * math.sqrt(5 / 9) / sigma_v)),
                         direction="serdes", tx_noise="spectrum")
    assert spectrum.noise_sigma_v({}).sigma_tx_v == pytest.approx(sigma_v, rel=1e-6)
    snr_db = 20 * math.log10(0.4 / sigma_v)
    eng = EyeEngine(_lossless(), _ideal_profile(snr_tx_db=snr_db), direction="serdes")
    assert eng.noise_sigma_v({}).sigma_tx_v == pytest.approx(sigma_v, rel=1e-6)
    r = eng.evaluate({}, ber=1e-6)
    from scipy.stats import norm

    expect_mv = (2 * 400 / 3) - 2 * norm.isf(1e-6) * sigma_v * 1e3
    assert r.eye_height_min_mv == pytest.approx(expect_mv, rel=2e-3)
    # COM = 20 log10(A_s / A_ni) with A_s = A/3 and A_ni = Q^-1(DER_0) sigma (93A.1.7: COM mode takes A_ni
    # at the profile's DER_0, not at the eye's target BER)
    assert eng.der0 == 1e-5 and r.com_probability == 1e-5
    assert r.com_db == pytest.approx(20 * math.log10((0.4 / 3) / (norm.isf(1e-5) * sigma_v)), abs=0.02)
    # symbol error probability: 2 (L-1)/L Q(d/2 sigma)
    assert r.ber_estimate == pytest.approx(2 * 3 / 4 * norm.sf((0.4 / 3) / sigma_v), rel=0.05)


def test_lower_target_ber_never_gives_a_larger_eye(lossy_engine):
    pt = {"tx_cm1": -0.1, "tx_c1": -0.04}
    bers = (1e-3, 1e-6, 1e-9, 1e-12, 1e-15, 1e-16, 1e-18, 1e-25)  # below 1e-15: the Gaussian asymptote
    ehs = [lossy_engine.evaluate(pt, ber=b).eye_height_min_mv for b in bers]
    assert all(a >= b for a, b in zip(ehs, ehs[1:])), ehs
    assert ehs[0] > ehs[-1]


def test_adding_noise_never_opens_the_eye():
    ch = _lossy(14.0)
    base = load_profile("host-lr-112g")
    pt = {"tx_cm1": -0.1, "ctle_gdc": -6.0, "ctle_gdc2": 0.0}
    prev = None
    for eta0, rj in [(0.0, 0.0), (1e-8, 0.005), (4e-8, 0.01), (1.6e-7, 0.02)]:
        prof = replace(base, noise=replace(base.noise, eta0_v2_per_ghz=eta0, sigma_rj_ui=rj))
        eh = EyeEngine(ch, prof, direction="serdes").evaluate(pt).eye_height_min_mv
        if prev is not None:
            assert eh <= prev + 1e-9
        prev = eh


def test_batch_equals_single(lossy_engine):
    sp = lossy_engine.knob_space(["tx_cm1", "tx_c1", "ctle_gdc"], fixed={"ctle_gdc2": 0.0})
    rng = np.random.default_rng(1)
    g = sp.grid()
    rows = g[rng.choice(len(g), 12, replace=False)]
    pts = [sp.to_point(r) for r in rows]
    br = lossy_engine.evaluate_batch(pts)
    br2 = lossy_engine.evaluate_batch(rows, sp.names)  # matrix form (fixed knobs take defaults: gdc2 = 0)
    for i, p in enumerate(pts):
        r = lossy_engine.evaluate(p)
        assert br.eye_height_min_mv[i] == pytest.approx(r.eye_height_min_mv, abs=1e-9)
        assert br.com_db[i] == pytest.approx(r.com_db, abs=1e-9)
        assert br.eye_width_ui[i] == pytest.approx(r.eye_width_ui, abs=1e-9)
        assert br.ber_estimate[i] == pytest.approx(r.ber_estimate, rel=1e-9, abs=1e-300)
        assert br2.eye_height_min_mv[i] == pytest.approx(r.eye_height_min_mv, abs=1e-9)


def test_knob_space_constraint_and_defaults(lossy_engine):
    sp = lossy_engine.knob_space(["tx_cm3", "tx_cm2", "tx_cm1", "tx_c1"])
    g = sp.grid()
    assert len(g) > 0
    assert np.all(np.abs(g).sum(axis=1) <= 1 - lossy_engine.profile.tx.c0_min + 1e-9)
    assert sp.size() > len(g)  # the constraint removed some combinations
    dp = lossy_engine.default_point()
    assert set(dp) == {"tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2"}


def test_host_rx_adapts_ctle_and_uses_module_knobs():
    eng = EyeEngine(_lossy(16.0), "host-lr-112g", direction="host_rx")
    assert eng.knob_space().names == ("rx_pre", "rx_post", "rx_amp")
    r = eng.evaluate({"rx_pre": 0, "rx_post": 2, "rx_amp": 2})
    assert "ctle_gdc" in r.eq and "ctle_gdc2" in r.eq
    # the adapted CTLE is no worse than any fixed CTLE setting at that point
    fixed = [eng.evaluate({"rx_pre": 0, "rx_post": 2, "rx_amp": 2, "ctle_gdc": g, "ctle_gdc2": 0}).eye_height_min_mv
             for g in (-16, -12, -8, -4, 0)]
    assert r.eye_height_min_mv >= max(fixed) - 0.5
    # more swing: proportionally larger cursor (amplitude code -> mid-range swing)
    r0 = eng.evaluate({"rx_amp": 0, "ctle_gdc": -8, "ctle_gdc2": 0})
    r3 = eng.evaluate({"rx_amp": 3, "ctle_gdc": -8, "ctle_gdc2": 0})
    assert r3.cursor_mv / r0.cursor_mv == pytest.approx(900 / 250, rel=1e-6)


def test_closed_eye_is_negative_not_nan():
    eng = EyeEngine(_lossy(45.0), "host-sr-112g", direction="module_rx")
    r = eng.evaluate({"tx_eq": 0})
    assert r.closed and r.eye_height_min_mv < 0 and math.isfinite(r.eye_height_min_mv)
    d = r.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["eye_width_ui"] == 0.0


def test_to_dict_json_keys(lossy_engine):
    d = lossy_engine.evaluate({}).to_dict()
    s = json.dumps(d, allow_nan=False)
    for k in ("eye_height_mv", "eye_height_min_mv", "eye_width_ui", "vec_db", "com_db", "ber_target",
              "sample_phase_ui", "modulation", "baud_gbd", "eq", "ber_estimate"):
        assert k in d, k
    assert "NaN" not in s


@pytest.mark.parametrize("point", [{"tx_cm1": -0.5}, {"ctle_gdc": 3.0}, {"tx_cm1": -0.013}, {"bogus": 1.0},
                                   {"tx_cm1": float("nan")}])
def test_bad_eq_raises_eqrange(lossy_engine, point):
    with pytest.raises(EqRangeError) as ei:
        lossy_engine.evaluate(point)
    assert str(ei.value)


def test_tx_sum_above_limit_raises(lossy_engine):
    # each tap in range, but sum |c| > 1 - c0_min
    with pytest.raises(EqRangeError, match="c0_min"):
        lossy_engine.evaluate({"tx_cm3": -0.06, "tx_cm2": 0.12, "tx_cm1": -0.3, "tx_c1": -0.2})


@pytest.mark.parametrize("ber", [0.0, 0.5, -1e-6, 2.0, float("nan"), "x"])
def test_bad_ber_raises_input_error(lossy_engine, ber):
    with pytest.raises(InputError):
        lossy_engine.evaluate({}, ber=ber)
    with pytest.raises(InputError):
        EyeEngine(_lossy(), direction="serdes", ber=ber)


def test_bad_direction():
    with pytest.raises(InputError, match="direction"):
        EyeEngine(_lossy(), direction="sideways")


def test_evaluate_link_reports_worst_direction():
    ch = _lossy(14.0)
    lr = evaluate_link(ch, {"rx_post": 2, "tx_cm1": -0.1, "tx_eq": 4})
    assert set(lr.results) == {"host_rx", "module_rx"}
    assert lr.margin_mv == min(r.eye_height_min_mv for r in lr.results.values())
    json.dumps(lr.to_dict(), allow_nan=False)


def test_pulse_response_and_noise_api(lossy_engine):
    pr = lossy_engine.pulse_response({"tx_cm1": -0.1})
    t, v, ci, m = pr
    assert m == 32 and len(t) == len(v) and 0 <= ci < len(v)
    assert v[ci] == pytest.approx(lossy_engine.evaluate({"tx_cm1": -0.1}).cursor_mv / 1e3)
    nb = lossy_engine.noise_sigma_v({"tx_cm1": -0.1})
    assert nb.sigma_gauss_v == pytest.approx(math.sqrt(nb.sigma_tx_v**2 + nb.sigma_rj_v**2 + nb.sigma_rx_v**2))


def test_bathtubs_and_contour(lossy_engine):
    r = lossy_engine.evaluate({"tx_cm1": -0.1})
    bt = r.bathtubs()
    assert len(bt["horizontal_ser"]) == 32 and min(bt["horizontal_ser"]) <= r.ber_estimate * 1.5 + 1e-300
    c = r.contour()
    assert len(c["lower_mv"]) == 32
    j = int(round(r.sample_phase_ui * 32)) + 16
    # the contour at the sampling phase reproduces the eye heights
    got = np.array(c["upper_mv"][j]) - np.array(c["lower_mv"][j])
    np.testing.assert_allclose(got, r.eye_height_mv, rtol=1e-6, atol=1e-6)


def test_crosstalk_closes_the_eye_and_scales_with_amplitude():
    from eqtune.channel.model import Aggressor

    ch = _lossy(14.0)
    f = ch.freqs_hz
    fext = 10 ** (-(40 - 20 * np.minimum(f / 26.5625e9, 1.0)) / 20) * np.exp(-2j * np.pi * f * 1.1e-9)
    pt = {"tx_cm1": -0.1, "ctle_gdc": -6.0, "ctle_gdc2": 0.0}
    clean = EyeEngine(ch, "host-lr-112g", direction="serdes").evaluate(pt)
    one = replace(ch, aggressors=(Aggressor("f1", "FEXT", fext),))
    two = replace(ch, aggressors=(Aggressor("f1", "FEXT", fext), Aggressor("n1", "NEXT", fext, amplitude_v=0.6)))
    r1 = EyeEngine(one, "host-lr-112g", direction="serdes").evaluate(pt)
    r2 = EyeEngine(two, "host-lr-112g", direction="serdes").evaluate(pt)
    assert clean.eye_height_min_mv > r1.eye_height_min_mv > r2.eye_height_min_mv
    assert clean.com_db > r1.com_db > r2.com_db


def test_batch_fixed_knobs(lossy_engine):
    rows = np.array([[-0.1], [-0.2]])
    br = lossy_engine.evaluate_batch(rows, ["tx_cm1"], fixed={"ctle_gdc": -8.0, "ctle_gdc2": 0.0})
    assert br.ctle_gdc.tolist() == [-8.0, -8.0]
    r = lossy_engine.evaluate({"tx_cm1": -0.2, "ctle_gdc": -8.0, "ctle_gdc2": 0.0})
    assert br.eye_height_min_mv[1] == pytest.approx(r.eye_height_min_mv, abs=1e-9)


def test_profile_sets_the_baud_for_224g():
    f = np.arange(0, 120e9 + 1, 20e6)
    ch = Channel("short", f, 10 ** (-(6.0 * f / 53.125e9) / 20) * np.exp(-2j * np.pi * f * 0.5e-9))
    eng = EyeEngine(ch, "host-lr-224g", direction="serdes")
    r = eng.evaluate({})
    assert r.baud_gbd == 106.25 and r.eye_width_ps == pytest.approx(r.eye_width_ui * 1e3 / 106.25)
    assert r.eye_height_min_mv > 0


def test_module_driver_codes_are_the_documented_ffe():
    # ideal channel and receiver, host_rx: the sampled pulse is the module driver's FFE x swing/2
    prof = _ideal_profile()
    prof = replace(prof, module=replace(prof.module, driver_rise_time_ps=0.0, driver_snr_db=300.0))
    eng = EyeEngine(_lossless(), prof, direction="host_rx")
    pr = eng.pulse_response({"rx_pre": 3, "rx_post": 5, "rx_amp": 2, "ctle_gdc": 0.0})
    c = pr.cursor_index
    taps = pr.pulse_v[[c - 32, c, c + 32]] / 0.3  # rx_amp 2: 400-800 mV ppd -> 600 mV ppd -> 0.3 V peak
    v_ss = taps.sum()
    assert 20 * np.log10((taps[1] + taps[2] - taps[0]) / v_ss) == pytest.approx(1.5)  # 3 x 0.5 dB
    assert 20 * np.log10((taps[1] + taps[0] - taps[2]) / v_ss) == pytest.approx(5.0)  # 5 x 1 dB
    assert np.abs(taps).sum() == pytest.approx(1.0)


def test_eye_width_close_to_the_exact_horizontal_profile(lossy_engine):
    for pt in ({"tx_cm1": -0.1}, {"tx_cm1": -0.2, "tx_c1": -0.06, "ctle_gdc": -10.0, "ctle_gdc2": 0.0}):
        r = lossy_engine.evaluate(pt)
        c = r.contour()
        eh = (np.array(c["upper_mv"]) - np.array(c["lower_mv"])).min(axis=1)
        j = int(round(r.sample_phase_ui * 32)) + 16
        assert eh[j] == pytest.approx(r.eye_height_min_mv, abs=1e-6)
        open_phases = np.count_nonzero(eh > 0) / 32  # the eye is one open run here
        assert abs(r.eye_width_ui - open_phases) <= 0.05, (r.eye_width_ui, open_phases)


def test_optional_rx_ffe_opens_an_undfe_receiver():
    base = load_profile("host-sr-112g")  # no DFE
    ch = _lossy(16.0)
    pt = {"tx_cm1": 0.0, "tx_c1": 0.0, "ctle_gdc": -8.0, "ctle_gdc2": 0.0}
    plain = EyeEngine(ch, base, direction="serdes").evaluate(pt)
    ffe = replace(base, rx=replace(base.rx, ffe_pre=1, ffe_post=4))
    eng = EyeEngine(ch, ffe, direction="serdes")
    r = eng.evaluate(pt)
    assert r.eye_height_min_mv > plain.eye_height_min_mv + 5.0
    w = eng._rx_ffe_w[0]
    assert len(w) == 6 and w[1] > 0.5  # main tap; the cursor is kept at its pre-FFE value


def test_eye_result_pickles_without_its_per_phase_detail(lossy_engine):
    import pickle

    r = lossy_engine.evaluate({})
    blob = pickle.dumps(r)
    assert len(blob) < 20_000
    r2 = pickle.loads(blob)  # noqa: S301 - our own bytes, just produced
    assert r2.eye_height_mv == r.eye_height_mv and r2._detail is None  # the per-phase context stays behind too


def test_result_does_not_depend_much_on_the_channel_grid():
    fn = FB_GBD * 1e9 / 2
    out = []
    for df in (10e6, 100e6):
        f = np.arange(0, 60e9 + 1, df)
        h = 10 ** (-(14 * (0.3 * np.sqrt(f / fn) + 0.7 * f / fn)) / 20) * np.exp(-2j * np.pi * f * 1e-9)
        out.append(EyeEngine(Channel("x", f, h), "host-lr-112g", direction="serdes").evaluate({}).eye_height_min_mv)
    assert out[0] == pytest.approx(out[1], abs=0.3)
