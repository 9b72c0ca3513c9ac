"""The ieee-3ck-kr / ieee-3ck-c2c profiles against the 802.3ck COM config sheets as transcribed publicly.

Sources (values typed in here from them, not from the profiles):
* KR: config_com_ieee8023_93a=3ck_d3p1_KR_11_30_21.xlsx as transcribed in cortalo/serdeskit
  examples/compute_com_kr_backplane.py (commit 8d518078).
* C2C: config_com_ieee8023_93a=3ck_d3p1_120F_C2C_11_30_21.xlsx as transcribed in cortalo/serdeskit
  examples/compute_com_c2c.py (commit 1db5f26a) and ../shared/com-golden/README.md.
* CR: config_com_ieee8023_93a=3ck_SA_CR_CA_08_17_2022.xlsx, sheet COM_Settings, read from the workbook in
  github.com/Omer-Sella/COM (commit e51902a7, config_sheets_100G/): cells noted per value.
"""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.channel.model import Aggressor, Channel
from eqtune.channel.package import (
    HostBoard,
    PackageParams,
    cascade,
    flip_ports,
    host_board_sparams,
    line_gamma_per_mm,
    package_block_sparams,
)
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
    # B24 f_r, G36 eta_0, G13 DER_0, G37 SNR_TX, G34 sigma_RJ, G35 A_DD, G38 R_LM, B25 c(0), B17..B19 A_v/A_fe/A_ne,
    # B35 g_DC, B39 g_DC_HP, B36..B38 f_z/f_p1/f_p2, B40 f_HP_PZ, B26..B29 c(-1), c(-2), c(-3), c(1), B31..B34 b_max/b_min,
    # B10..B13 z_p, K20..K22 N_bg/N_bf/N_f
    "ieee-3ck-cr": dict(
        fr=0.75, eta0=9e-9, der0=1e-4, snr_tx=32.5, sigma_rj=0.01, a_dd=0.02, rlm=0.95, c0_min=0.54,
        a_v=0.413, a_fe=0.413, a_ne=0.608, gdc=(-20, 0), gdc2=(-6, 0), fz=21.25e9, fp1=21.25e9, fp2=53.125e9,
        flf=0.6640625e9, taps={"tx_cm3": (-0.06, 0.0), "tx_cm2": (0.0, 0.12), "tx_cm1": (-0.34, 0.0), "tx_c1": (-0.2, 0.0)},
        b_max=[0.85, 0.3, 0.2, 0.2, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1],
        b_min=[0.3, 0.05] + [-0.03] * 10, zp1={"tx": 12.0, "rx": 12.0, "fext": 12.0, "next": 12.0}, floating=(3, 3, 40)),
}
# the CR sheet's host board ("Include PCB" K18 = 1): K12..K15 z_bp 110.3 mm, K11 board_Z_c 100, K16 C_0 0.29e-4 nF,
# K17 C_1 0.19e-4 nF, K10 board_tl_tau 5.79e-3 ns/mm, K9 board_tl_gamma0_a1_a2 [0 3.8206e-04 9.5909e-05]
CR_BOARD = HostBoard(zp_mm=110.3, zc_ohm=100.0, c0_f=0.29e-13, c1_f=0.19e-13, tau_ns_per_mm=5.79e-3,
                     gamma0_per_mm=0.0, a1=3.8206e-4, a2=9.5909e-5)


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
    # T_r 7.5e-3 ns in all three 802.3ck sheets (the SA KR, CR and C2C workbooks, cell G14 of COM_Settings)
    assert p.tx.rise_time_ps == 7.5
    if name == "ieee-3ck-cr":
        assert p.rx.dfe.float_b_max == 0.03  # K23 bmaxg
        assert {r: p.package_zp1_mm(r, 2) for r in ("tx", "rx", "fext", "next")} == \
            {"tx": 31.0, "rx": 29.0, "fext": 31.0, "next": 29.0}  # B10..B13, second column
        b = p.host_board
        assert b is not None and b.zp_mm == CR_BOARD.zp_mm and b.zc_ohm == CR_BOARD.zc_ohm
        np.testing.assert_allclose([b.c0_f, b.c1_f, b.tau_ns_per_mm, b.gamma0_per_mm, b.a1, b.a2],
                                   [CR_BOARD.c0_f, CR_BOARD.c1_f, CR_BOARD.tau_ns_per_mm, 0.0, CR_BOARD.a1,
                                    CR_BOARD.a2], rtol=1e-12)
    else:
        assert p.host_board is None  # K18 "Include PCB" 0 in the KR and C2C sheets


def test_host_board_is_a_matched_line_between_two_shunt_caps():
    """Closed forms: Z_c = 2 R_0 = 100 ohm makes the line reflection-free (93A-14 rho = 0), so without the caps
    S21 = exp(-gamma z_bp) and S11 = 0; a shunt C alone has S21 = 2 / (2 + j w C R_0) (93A-8)."""
    f = np.linspace(0.0, 60e9, 601)
    bare = HostBoard(zp_mm=110.3, zc_ohm=100.0, c0_f=0.0, c1_f=0.0, tau_ns_per_mm=5.79e-3, gamma0_per_mm=0.0,
                     a1=3.8206e-4, a2=9.5909e-5)
    s = host_board_sparams(f, bare)
    line = PackageParams(tau_ns_per_mm=5.79e-3, gamma0_per_mm=0.0, a1=3.8206e-4, a2=9.5909e-5)
    np.testing.assert_allclose(s[:, 1, 0], np.exp(-line_gamma_per_mm(f, line) * 110.3), rtol=1e-12)
    np.testing.assert_allclose(np.abs(s[:, 0, 0]), 0.0, atol=1e-15)
    # lossless (a1 = a2 = 0): a pure delay of 110.3 mm at 5.79 ps/mm
    lossless = host_board_sparams(f, HostBoard(zp_mm=110.3, zc_ohm=100.0, c0_f=0.0, c1_f=0.0, tau_ns_per_mm=5.79e-3,
                                               gamma0_per_mm=0.0, a1=0.0, a2=0.0))
    np.testing.assert_allclose(lossless[:, 1, 0], np.exp(-2j * np.pi * f * 110.3 * 5.79e-12), rtol=1e-9)
    caps_only = host_board_sparams(f, HostBoard(zp_mm=0.0, zc_ohm=100.0, c0_f=CR_BOARD.c0_f, c1_f=0.0,
                                                tau_ns_per_mm=1e-3, gamma0_per_mm=0.0, a1=0.0, a2=0.0))
    np.testing.assert_allclose(caps_only[:, 1, 0], 2 / (2 + 2j * np.pi * f * CR_BOARD.c0_f * 50.0), rtol=1e-12)


def test_cr_packages_include_the_host_boards():
    """The CR victim goes TX package -> board -> cable -> board -> RX package (MATLAB COM add_brd then the
    packages), every aggressor likewise; built here by hand from the blocks."""
    ch = _flat_channel({"FEXT": 1e-9, "NEXT": 0.5e-9})
    eng = EyeEngine(ch, "ieee-3ck-cr", direction="serdes")
    f = ch.freqs_hz
    board = host_board_sparams(f, CR_BOARD)

    def by_hand(x, role):
        s = np.zeros((len(f), 2, 2), dtype=complex)
        s[:, 1, 0] = s[:, 0, 1] = x
        tx = cascade(package_block_sparams(f, PackageParams(zp_mm=(12.0, 1.8))), board)
        rx = flip_ports(cascade(package_block_sparams(f, PackageParams(zp_mm=(12.0, 1.8))), board))
        return cascade(cascade(tx, s), rx)[:, 1, 0]

    np.testing.assert_allclose(eng._packaged_s21(ch.sdd21, None, None, "tx"), by_hand(ch.sdd21, "tx"), rtol=1e-12)
    for ag in ch.aggressors:
        np.testing.assert_allclose(eng._packaged_s21(ag.sdd21, None, None, ag.kind.lower()),
                                   by_hand(ag.sdd21, ag.kind.lower()), rtol=1e-12)
    # the boards add loss: 2 x 110.3 mm of board line, about 2 x 0.9 dB at 26.56 GHz on top of the KR packages
    kr = EyeEngine(ch, "ieee-3ck-kr", direction="serdes")
    k = int(np.argmin(np.abs(f - 26.5625e9)))
    extra_db = 20 * np.log10(abs(kr._packaged_s21(ch.sdd21, None, None, "tx")[k])
                             / abs(eng._packaged_s21(ch.sdd21, None, None, "tx")[k]))
    one_board_db = -20 * np.log10(abs(np.exp(-line_gamma_per_mm(f[k:k + 1], PackageParams(
        tau_ns_per_mm=5.79e-3, a1=3.8206e-4, a2=9.5909e-5)) * 110.3))[0])
    assert 1.5 * one_board_db < extra_db < 2.6 * one_board_db


def _flat_channel(kind_delays: dict[str, float]) -> Channel:
    f = np.arange(0, 6001) * 10e6
    loss = np.exp(-f / 40e9)
    thru = loss * np.exp(-2j * np.pi * f * 1e-9)
    aggs = tuple(Aggressor(name=k, kind=k, sdd21=0.01 * loss * np.exp(-2j * np.pi * f * d)) for k, d in kind_delays.items())
    return Channel(name="flat", freqs_hz=f, sdd21=thru, baud_gbd=53.125, modulation="PAM4",
                   serdes_profile="ieee-3ck-kr", aggressors=aggs)


@pytest.mark.parametrize("name", ["ieee-3ck-c2c", "ieee-3ck-kr"])  # CR (host boards): the test below
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


def test_host_board_equals_pychopmarg_partial_host():
    """Second source: PyChOpMarg 3.4.0's partial host channel (``devmodel.s_partial_host``: C0, line, C1, the
    same network MATLAB COM's ``add_brd`` builds) with the CR sheet's board values."""
    pytest.importorskip("pychopmarg", reason="pychopmarg (the bench extra) is not installed")
    from pychopmarg.devmodel import PartialHost, TlineStage, s_partial_host

    f = np.linspace(10e6, 60e9, 600)
    host = PartialHost(C0=0.29e-4, C1=0.19e-4, tline=TlineStage(zc=100.0, zp=110.3, gamma0=0.0, a1=3.8206e-4,
                                                                a2=9.5909e-5, tau=5.79e-3))
    theirs = s_partial_host(f, host, 50.0).s
    ours = host_board_sparams(f, CR_BOARD)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
