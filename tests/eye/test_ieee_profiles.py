"""The ieee-3ck-kr / ieee-3ck-c2c profiles against the 802.3ck COM config sheets as transcribed publicly.

Sources (values typed in here from them, not from the profiles):
* KR: config_com_ieee8023_93a=3ck_d3p1_KR_11_30_21.xlsx as transcribed in cortalo/serdeskit
  examples/compute_com_kr_backplane.py (commit 8d518078).
* C2C: config_com_ieee8023_93a=3ck_d3p1_120F_C2C_11_30_21.xlsx as transcribed in cortalo/serdeskit
  examples/compute_com_c2c.py (commit 1db5f26a) and ../shared/com-golden/README.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.channel.model import Aggressor, Channel
from eqtune.channel.package import PackageParams, cascade, flip_ports, package_block_sparams
from eqtune.eye.engine import EyeEngine
from eqtune.serdes.profile import load_profile

FB = 53.125e9

SHEETS = {
    "ieee-3ck-kr": dict(
        fr=0.75, eta0=8.2e-9, der0=1e-4, snr_tx=33.0, sigma_rj=0.01, a_dd=0.02, rlm=0.95, c0_min=0.54,
        a_v=0.413, a_fe=0.413, a_ne=0.608, gdc=(-20, 0), gdc2=(-6, 0), fz=21.25e9, fp1=21.25e9, fp2=53.125e9,
        flf=0.6640625e9, taps={"tx_cm3": (-0.06, 0.0), "tx_cm2": (0.0, 0.12), "tx_cm1": (-0.34, 0.0), "tx_c1": (-0.2, 0.0)},
        b_max=[0.85, 0.3, 0.2, 0.2, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1],
        b_min=[0.3, 0.05] + [-0.03] * 10, zp1={"tx": 12.0, "rx": 12.0, "fext": 12.0, "next": 12.0}, floating=(3, 3, 40)),
    "ieee-3ck-c2c": dict(
        fr=0.75, eta0=2e-8, der0=1e-5, snr_tx=33.0, sigma_rj=0.01, a_dd=0.02, rlm=0.95, c0_min=0.54,
        a_v=0.413, a_fe=0.413, a_ne=0.608, gdc=(-20, 0), gdc2=(-4, 0), fz=21.25e9, fp1=21.25e9, fp2=53.125e9,
        flf=0.6640625e9, taps={"tx_cm3": (-0.04, 0.0), "tx_cm2": (0.0, 0.1), "tx_cm1": (-0.28, 0.0), "tx_c1": (-0.1, 0.0)},
        b_max=[0.65, 0.15, 0.1, 0.1, 0.1, 0.1], b_min=[0.3, 0.05, -0.04, -0.04, -0.04, -0.04],
        zp1={"tx": 13.0, "rx": 11.0, "fext": 13.0, "next": 11.0}, floating=(0, None, None)),
}


@pytest.mark.parametrize("name", sorted(SHEETS))
def test_profile_matches_the_config_sheet(name):
    s, p = SHEETS[name], load_profile(name)
    assert p.rx.fr_fb == s["fr"]
    n = p.noise
    assert (n.eta0_v2_per_ghz, n.der0, n.snr_tx_db, n.sigma_rj_ui, n.a_dd_ui, n.rlm) == \
        (s["eta0"], s["der0"], s["snr_tx"], s["sigma_rj"], s["a_dd"], s["rlm"])
    assert (p.tx.c0_min, p.tx.amplitude_v, p.tx.amplitude_fe_v, p.tx.amplitude_ne_v) == \
        (s["c0_min"], s["a_v"], s["a_fe"], s["a_ne"])
    c = p.rx.ctle
    assert (c.gdc_db.min, c.gdc_db.max, c.gdc_db.step) == (*s["gdc"], 1.0)
    assert (c.gdc2_db.min, c.gdc2_db.max, c.gdc2_db.step) == (*s["gdc2"], 1.0)
    assert (c.fz_ghz * 1e9, c.fp1_ghz * 1e9, c.fp2_ghz * 1e9, c.flf_ghz * 1e9) == (s["fz"], s["fp1"], s["fp2"], s["flf"])
    assert {k: (r.min, r.max) for k, r in p.tx.taps.items()} == s["taps"]
    assert all(r.step == 0.02 for r in p.tx.taps.values())
    assert list(p.rx.dfe.b_max) == s["b_max"] and list(p.rx.dfe.b_min) == s["b_min"]
    groups, per, span = s["floating"]
    assert p.rx.dfe.float_groups == groups
    if groups:
        assert (p.rx.dfe.float_taps_per_group, p.rx.dfe.float_span_ui) == (per, span)
    assert p.package_case == 1
    assert {r: p.package_zp1_mm(r, 1) for r in ("tx", "rx", "fext", "next")} == s["zp1"]


def _flat_channel(kind_delays: dict[str, float]) -> Channel:
    f = np.arange(0, 6001) * 10e6
    loss = np.exp(-f / 40e9)
    thru = loss * np.exp(-2j * np.pi * f * 1e-9)
    aggs = tuple(Aggressor(name=k, kind=k, sdd21=0.01 * loss * np.exp(-2j * np.pi * f * d)) for k, d in kind_delays.items())
    return Channel(name="flat", freqs_hz=f, sdd21=thru, baud_gbd=53.125, modulation="PAM4",
                   serdes_profile="ieee-3ck-kr", aggressors=aggs)


@pytest.mark.parametrize("name", sorted(SHEETS))
def test_victim_and_aggressors_pass_through_their_sheet_packages(name):
    """93A.1.2: victim through TX + RX package, FEXT through the FEXT + RX package, NEXT through the NEXT +
    RX package (lengths of the sheet), built here by hand from the package blocks."""
    ch = _flat_channel({"FEXT": 1e-9, "NEXT": 0.5e-9})
    eng = EyeEngine(ch, name, direction="serdes")
    f = ch.freqs_hz
    zp = SHEETS[name]["zp1"]

    def by_hand(x, role):
        s = np.zeros((len(f), 2, 2), dtype=complex)
        s[:, 1, 0] = s[:, 0, 1] = x
        tx = package_block_sparams(f, PackageParams(zp_mm=(zp[role], 1.8)))
        rx = flip_ports(package_block_sparams(f, PackageParams(zp_mm=(zp["rx"], 1.8))))
        return cascade(cascade(tx, s), rx)[:, 1, 0]

    np.testing.assert_allclose(eng._packaged_s21(ch.sdd21, None, None, "tx"), by_hand(ch.sdd21, "tx"), rtol=1e-12)
    for ag in ch.aggressors:
        role = ag.kind.lower()
        got = eng._aggressor_h(ag, f[f <= 50e9])
        np.testing.assert_allclose(got, by_hand(ag.sdd21, role)[f <= 50e9], rtol=1e-9, atol=1e-12)
    # and without packages (package_case=0) the aggressors are the bare couplings
    bare = EyeEngine(ch, name, direction="serdes", package_case=0)
    np.testing.assert_allclose(bare._aggressor_h(ch.aggressors[0], f[f <= 50e9]), ch.aggressors[0].sdd21[f <= 50e9],
                               rtol=1e-9)
