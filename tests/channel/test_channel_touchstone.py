"""Touchstone loading: port order, mixed mode vs scikit-rf, the IEEE reference channels, the grid."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import skrf

from eqtune.channel import load_channel
from eqtune.channel.grid import default_grid, resample
from eqtune.channel.mixedmode import detect_port_order, sdd_from_se
from eqtune.channel.touchstone import load_sdd
from eqtune.errors import TouchstoneError

F = np.arange(1, 401) * 100e6  # 0.1 .. 40 GHz, no DC point


def _synthetic_4port(seed: int = 1) -> np.ndarray:
    """Reciprocal 4-port, order 1-2/3-4 (legs 1->2, 3->4), with skew/imbalance (mode conversion)."""
    rng = np.random.default_rng(seed)
    n = F.size
    s = np.zeros((n, 4, 4), dtype=complex)
    loss = np.exp(-np.sqrt(F / 1e9) * 0.08)
    s[:, 1, 0] = loss * np.exp(-2j * np.pi * F * 500e-12)
    s[:, 3, 2] = 0.97 * loss * np.exp(-2j * np.pi * F * 503e-12)  # skewed leg -> mode conversion
    for i in range(4):
        s[:, i, i] = 0.05 * rng.standard_normal() * np.exp(-2j * np.pi * F * 20e-12 * (i + 1))
    for a, b in [(2, 0), (3, 1), (3, 0), (2, 1)]:  # coupling between legs
        s[:, a, b] = 0.02 * (1 + 0.1 * rng.standard_normal()) * np.exp(-2j * np.pi * F * 300e-12 * (a - b + 1))
    return 0.97 * (s + np.swapaxes(s, 1, 2) * (1 - np.eye(4)))  # passive


def _write(tmp: Path, name: str, s: np.ndarray, f: np.ndarray = F) -> Path:
    net = skrf.Network(frequency=skrf.Frequency.from_f(f, unit="Hz"), s=s, z0=50.0)
    net.write_touchstone(str(tmp / name), skrf_comment=False, form="ri")
    return tmp / f"{name}.s{s.shape[1]}p"


@pytest.mark.filterwarnings("ignore:.*not passive")
def test_port_order_detected_both_orderings_and_matches_skrf_mixed_mode(tmp_path):
    s = _synthetic_4port()
    p12 = _write(tmp_path, "order12", s)
    net = skrf.Network(str(p12))
    net13 = net.copy()
    net13.renumber([1, 2], [2, 1])  # skrf, 0-based: swap ports 2 and 3 -> legs 1->3, 2->4
    p13 = tmp_path / "order13.s4p"
    net13.write_touchstone(str(p13.with_suffix("")), skrf_comment=False, form="ri")

    a = load_sdd(p12)
    b = load_sdd(p13)
    assert (a.port_order, a.port_order_detected) == ("1-2/3-4", True)
    assert (b.port_order, b.port_order_detected) == ("1-3/2-4", True)

    ref = net13.copy()
    ref.se2gmm(p=2)  # scikit-rf's convention is 1-3/2-4 (pairs (1,2), (3,4)); result order D1 D2 C1 C2
    np.testing.assert_allclose(a.s[:, 1, 0], ref.s[:, 1, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.s[:, 1, 0], ref.s[:, 1, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.s[:, 0, 0], ref.s[:, 0, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.s[:, 1, 1], ref.s[:, 1, 1], rtol=1e-9, atol=1e-12)
    # the wrong order gives a very different (mostly common-mode/crosstalk) answer
    wrong = load_sdd(p12, port_order="1-3/2-4")
    assert np.abs(wrong.s[:3, 1, 0]).max() < 0.2


def test_shared_file_port_order_and_skrf_mixed_mode(gore_c2c_file, tmp_path):
    net = skrf.Network(str(gore_c2c_file))  # README: legs 1->2, 3->4
    ref = net.copy()
    ref.renumber([1, 2], [2, 1])  # to scikit-rf's 1-3/2-4 convention
    ref.se2gmm(p=2)
    d = load_sdd(gore_c2c_file)
    assert d.port_order == "1-2/3-4" and d.port_order_detected
    np.testing.assert_allclose(d.s[:, 1, 0], ref.s[:, 1, 0], rtol=1e-9, atol=1e-12)
    ren = net.copy()
    ren.renumber([1, 2], [2, 1])
    p = tmp_path / "gore13.s4p"
    ren.write_touchstone(str(p.with_suffix("")), skrf_comment=False, form="ri")
    d13 = load_sdd(p)
    assert d13.port_order == "1-3/2-4" and d13.port_order_detected
    np.testing.assert_allclose(d13.s[:, 1, 0], ref.s[:, 1, 0], rtol=1e-6, atol=1e-9)


# ../shared/channels-ieee/README.md: IL = |SDD21| in dB of each THRU (PyChOpMarg 3.4.0 sdd_21())
IEEE_TABLE = [
    ("tracy_3ck_02_0119_DPO_4in/DPO_4in_Meg7_THRU.s4p", -7.03, -12.17),
    ("tracy_3ck_02_0119_DPO_10in/DPO_10in_Meg7_THRU.s4p", -14.64, -24.24),
    ("tracy_3ck_02_0119_DPO_12in/DPO_12in_Meg7_THRU.s4p", -17.17, -28.25),
    ("gore_3ck_02_0519_C2C_12dB/C2C_PCB_SYSVIA_12dB_thru.s4p", -6.93, -12.17),
    ("pychopmarg_example2/example2_THRU.s4p", -24.2, -59.7),
]


@pytest.mark.shared
@pytest.mark.parametrize("rel, il13, il26", IEEE_TABLE, ids=[r[0].split("/")[0] for r in IEEE_TABLE])
def test_ieee_channels_match_readme_table(shared_dir, rel, il13, il26):
    path = shared_dir / "channels-ieee" / rel
    if not path.exists():
        pytest.skip(f"{path} not found")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some measured files are a hair non-passive
        ch = load_channel(path)
    assert ch.port_order == "1-2/3-4"  # README: legs 1->2 and 3->4 in every file
    assert -ch.insertion_loss_db(13.28e9) == pytest.approx(il13, abs=0.1)
    assert -ch.insertion_loss_db(26.5625e9) == pytest.approx(il26, abs=0.1)


def test_dc_extrapolation_and_default_grid(tmp_path):
    s = _synthetic_4port()
    ch = load_channel(_write(tmp_path, "x", s))
    assert ch.freqs_hz[0] == 0.0 and ch.df_hz == pytest.approx(10e6)
    assert ch.freqs_hz[-1] == pytest.approx(2 * 53.125e9)  # max(data fmax 40 GHz, 2 x baud)
    assert ch.sdd21[0].imag == 0.0
    sdd = sdd_from_se(s, (0, 2, 1, 3))
    # DC magnitude continues the first two points linearly
    m0, m1 = abs(sdd[0, 1, 0]), abs(sdd[1, 1, 0])
    assert ch.sdd21[0].real == pytest.approx(m0 - (m1 - m0), rel=1e-9)
    # on the data points (a multiple of the grid step) the data is reproduced exactly
    i = np.searchsorted(ch.freqs_hz, F[5])
    assert ch.sdd21[i] == pytest.approx(sdd[5, 1, 0], rel=1e-9)


def test_rolloff_above_data_is_smooth_and_reaches_zero():
    f = np.arange(0, 4001) * 10e6  # data to 40 GHz
    h = np.exp(-f / 40e9) * np.exp(-2j * np.pi * f * 1e-9)
    grid = default_grid(f[-1], 53.125)
    out = resample(f, h[:, None, None], grid)[:, 0, 0]
    fmax = f[-1]
    j = np.searchsorted(grid, fmax)
    assert abs(out[j + 1]) == pytest.approx(abs(h[-1]), rel=1e-3)  # continuous magnitude
    assert np.all(np.abs(out[grid >= fmax + 8e9]) == 0.0)  # taper over max(0.2 fmax, 5 GHz) = 8 GHz
    # phase continues with the data's group delay (1 ns)
    ph = np.unwrap(np.angle(out[j:j + 50]))
    assert np.diff(ph).mean() == pytest.approx(-2 * np.pi * 10e6 * 1e-9, rel=1e-3)


def test_channel_resampled_to_other_uniform_grid():
    ch = load_channel("c2m-10in")
    fine = np.arange(2 * ch.freqs_hz.size + 500) * 5e6
    ch2 = ch.resampled(fine)
    assert ch2.freqs_hz is not ch.freqs_hz and ch2.sdd21.shape == fine.shape
    np.testing.assert_allclose(ch2.sdd21[::2][: ch.freqs_hz.size], ch.sdd21, rtol=1e-9, atol=1e-12)
    assert ch2.insertion_loss_db(ch.nyquist_hz) == pytest.approx(ch.insertion_loss_db(ch.nyquist_hz), abs=1e-6)


def test_multilane_file_lane_selection(tmp_path):
    s4 = _synthetic_4port()
    s8 = np.zeros((F.size, 8, 8), dtype=complex)
    s8[:, :4, :4] = s4
    s8[:, 4:, 4:] = s4 * 0.5
    p = _write(tmp_path, "two_lanes", s8)
    lane2 = load_sdd(p, lane=2)
    np.testing.assert_allclose(lane2.s[:, 1, 0], 0.5 * sdd_from_se(s4, (0, 2, 1, 3))[:, 1, 0], rtol=1e-9)
    # explicit ports: lane 2 given as TX+ = 5, TX- = 7, RX+ = 6, RX- = 8 (1-2/3-4 within the group)
    np.testing.assert_allclose(load_sdd(p, ports=(5, 7, 6, 8)).s, lane2.s)
    with pytest.raises(TouchstoneError, match=r"ports \[1, 1, 2, 3\] must be 4 distinct"):
        load_sdd(p, ports=(1, 1, 2, 3))
    with pytest.raises(TouchstoneError, match="K = 1..2"):
        load_sdd(p)
    with pytest.raises(TouchstoneError, match="lane 3 does not exist"):
        load_sdd(p, lane=3)


def test_touchstone_v2_and_two_port(tmp_path):
    p = tmp_path / "v2.s2p"
    p.write_text("! v2\n[Version] 2.0\n# GHz S MA R 50\n[Number of Ports] 2\n[Two-Port Data Order] 12_21\n"
                 "[Number of Frequencies] 3\n[Network Data]\n1 0.1 0 0.9 -10 0.9 -10 0.1 0\n"
                 "2 0.1 0 0.8 -20 0.8 -20 0.1 0\n3 0.1 0 0.7 -30 0.7 -30 0.1 0\n[End]\n")
    d = load_sdd(p)
    np.testing.assert_allclose(np.abs(d.s[:, 1, 0]), [0.9, 0.8, 0.7])
    assert d.port_order is None


def test_non_passive_file_warns_by_how_much(tmp_path):
    p = tmp_path / "gain.s2p"
    p.write_text("# GHz S RI R 50\n1 0.1 0 1.2 0 1.2 0 0.1 0\n2 0.1 0 0.8 0 0.8 0 0.1 0\n")
    with pytest.warns(UserWarning, match=r"not passive: max singular value of S is 1\.3.*exceeds 1 by 3\.0"):
        load_sdd(p)


def test_detect_port_order_ambiguous_for_crosstalk_uses_fallback():
    s = np.zeros((10, 4, 4), dtype=complex)
    s[:, 1, 0] = s[:, 3, 2] = s[:, 2, 0] = s[:, 3, 1] = 0.01
    order, ratio = detect_port_order(np.arange(10) * 1e7, s)
    assert ratio == pytest.approx(1.0)
