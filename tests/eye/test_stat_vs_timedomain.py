"""The statistical eye against the bit-by-bit simulator (EH at BER 1e-3 within 5 % on >= 3 channels).

Both see the same inputs: the engine's equalized pulse response (``EyeEngine.pulse_response``), its
DFE taps and sampling phase, its Gaussian noise (TX noise 93A-30 and RX noise 93A-35; jitter excluded)
and the profile's jitter in UI, which the simulator applies itself as transmitter jitter (each symbol's
pulse displaced by its own dual-Dirac + Gaussian offset, ``jitter="tx"``). Aggressors are left out:
the simulator has no crosstalk sources. The ISI distribution of the statistical eye (per-cursor PDFs
convolved, IEEE 802.3 93A.1.7) is then checked against the empirical distribution of PRBS31Q samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from eqtune.eye import timedomain as td

engine_mod = pytest.importorskip("eqtune.eye.engine", reason="eqtune.eye.engine (the EyeEngine) is not there yet")

BER = 1e-3
TOL = 0.05
EW_TOL = 0.06  # eye width: measured 1-4 % apart on these channels


def _compare(channel, profile, direction, point, *, jitter="tx", n_symbols=1 << 17, seed=1):
    eng = engine_mod.EyeEngine(channel, profile, direction=direction, ber=BER)
    r = eng.evaluate(point)
    pr = eng.pulse_response(point)
    assert pr.pulse_v[pr.cursor_index] == pytest.approx(r.cursor_mv / 1e3, rel=1e-9)  # same cursor both sides
    s = td.simulate_point(eng, point, ber_target=BER, jitter=jitter, n_symbols=n_symbols, seed=seed)
    return np.asarray(r.eye_height_mv), np.asarray(s.eye_height_mv), r, s


LIBRARY_CASES = [
    ("c2m-4in", "host_rx"),
    ("c2m-10in", "host_rx"),
    ("c2m-16in", "host_rx"),
    ("c2m-16in", "serdes"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,direction", LIBRARY_CASES)
def test_stat_eye_matches_time_domain_library(name, direction):
    from eqtune.channel import load_channel

    ch = load_channel(name, aggressors=False)
    stat, tdm, r, s = _compare(ch, None, direction, {})
    assert r.eye_height_min_mv > 0, f"{name}: pick a channel whose eye is open at 1e-3"
    assert np.all(np.abs(tdm / stat - 1.0) < TOL), f"{name}: stat {stat} mV vs time domain {tdm} mV"
    assert abs(s.eye_height_min_v * 1e3 / r.eye_height_min_mv - 1.0) < TOL
    # eye width: the DFE holds the taps it adapted at the sampling phase in both (it once re-adapted per
    # phase in the statistical eye, 25-65 % too wide on these DFE links)
    assert r.eye_width_ui == pytest.approx(s.eye_width_ui, rel=EW_TOL), (name, r.eye_width_ui, s.eye_width_ui)


@pytest.mark.slow
@pytest.mark.shared
def test_stat_eye_matches_time_domain_gore_c2c(gore_c2c_file):
    from eqtune.channel import load_channel

    ch = load_channel(gore_c2c_file, aggressors=False)
    # MATLAB COM 3.70's optimum EQ for this channel (../shared/com-golden/README.md)
    pt = {"tx_cm3": -0.02, "tx_cm2": 0.06, "tx_cm1": -0.20, "tx_c1": -0.04, "ctle_gdc": -3.0, "ctle_gdc2": -2.0}
    stat, tdm, r, s = _compare(ch, "ieee-3ck-c2c", "serdes", pt)
    assert np.all(np.abs(tdm / stat - 1.0) < TOL), f"stat {stat} mV vs time domain {tdm} mV"
    assert r.eye_width_ui == pytest.approx(s.eye_width_ui, rel=EW_TOL), (r.eye_width_ui, s.eye_width_ui)


@pytest.mark.slow
def test_time_domain_without_jitter_agrees_closely():
    """With jitter off on both sides, only the ISI statistics differ: a tighter 2 % bound on the min EH."""
    import dataclasses

    from eqtune.channel import load_channel
    from eqtune.serdes.profile import load_profile

    ch = load_channel("c2m-10in", aggressors=False)
    p = load_profile(ch.serdes_profile)
    p0 = dataclasses.replace(p, noise=dataclasses.replace(p.noise, a_dd_ui=0.0, sigma_rj_ui=0.0))
    stat, tdm, r, s = _compare(ch, p0, "host_rx", {})
    assert s.eye_height_min_v * 1e3 == pytest.approx(r.eye_height_min_mv, rel=0.02)


@pytest.mark.slow
def test_counted_ser_matches_the_stat_eye_estimate():
    """A noisy receiver (eta_0 x 16) so that errors are countable at the sampling point: the engine's SER
    estimate (mid-level thresholds), the simulator's analytic SER and its counted SER agree."""
    import dataclasses

    from eqtune.channel import load_channel
    from eqtune.serdes.profile import load_profile

    ch = load_channel("c2m-16in", aggressors=False)
    p = load_profile(ch.serdes_profile)
    noisy = dataclasses.replace(p, noise=dataclasses.replace(p.noise, eta0_v2_per_ghz=16 * p.noise.eta0_v2_per_ghz))
    stat, tdm, r, s = _compare(ch, noisy, "host_rx", {})
    n = s.n_symbols
    assert s.symbol_errors > 300  # countable
    sd = math.sqrt(s.ser_analytic * (1 - s.ser_analytic) / n)
    assert abs(s.ser_counted - s.ser_analytic) < 4 * sd  # binomial scatter only
    assert s.ser_counted == pytest.approx(r.ber_estimate, rel=0.15)
    # the closed eyes agree too (negative EH, same 5 % of the level spacing criterion)
    spacing_mv = (2 / 3) * r.cursor_mv
    assert np.all(np.abs(tdm - stat) < TOL * spacing_mv)


def test_simulator_runs_with_the_floating_taps_the_engine_chose(shared_dir):
    """KR receiver (12 fixed + 3 floating groups of 3 taps within 40 UI) on the 10 in 802.3ck backplane thru:
    the simulator gets the engine's feedback (fixed and floating, ``point_detail().fixed``) and its eye height
    at BER 1e-3 matches the statistical eye within 5 %; dropping the floating groups (what the simulator
    did before) changes the simulated eye, so the check covers them."""
    from eqtune.channel import load_channel

    p = shared_dir / "channels-ieee" / "tracy_3ck_02_0119_DPO_10in" / "DPO_10in_Meg7_THRU.s4p"
    if not p.exists():
        pytest.skip(f"{p} not found")
    ch = load_channel(str(p))
    pt = {"tx_cm3": -0.02, "tx_cm2": 0.06, "tx_cm1": -0.24, "tx_c1": -0.1, "ctle_gdc": -11.0, "ctle_gdc2": -3.0}
    eh, sim, r, s = _compare(ch, "ieee-3ck-kr", "serdes", pt)
    eng = engine_mod.EyeEngine(ch, "ieee-3ck-kr", direction="serdes", ber=BER)
    fixed = eng.point_detail(pt, ber=BER).fixed
    nb = len(eng.profile.rx.dfe.b_max)
    assert fixed is not None and len(fixed) == 40 and np.count_nonzero(fixed[nb:]) == 9  # 3 groups of 3
    assert np.min(sim) == pytest.approx(np.min(eh), rel=TOL)
    nbud = eng.noise_sigma_v(pt)
    pr = eng.pulse_response(pt)
    lv = np.asarray(nbud.levels)
    without = td.simulate(pr.pulse_v, pr.samples_per_ui, cursor_index=pr.cursor_index, modulation="PAM4",
                          rlm=float(lv[-2] * 3), n_symbols=1 << 17, dfe_taps_v=np.asarray(fixed[:nb]),
                          sigma_noise_v=float(np.hypot(nbud.sigma_tx_v, nbud.sigma_rx_v)), a_dd_ui=nbud.a_dd_ui,
                          sigma_rj_ui=nbud.sigma_rj_ui, jitter="tx", ber_target=BER, phase=0, seed=1)
    assert np.min(without.eye_height_mv) < np.min(sim) - 0.02 * abs(np.min(sim))
