"""The shipped library, load_channel options, metrics, pulse response and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.channel import list_channels, load_channel, pulse_response, summary
from eqtune.channel.metrics import icn_mv, ild
from eqtune.channel.model import Aggressor, Channel
from eqtune.cli import main

SHIPPED = ["c2m-4in", "c2m-10in", "c2m-16in", "c2m-224g-6in", "c2m-10in-xtalk"]


def test_library_lists_the_shipped_channels():
    assert set(SHIPPED) <= set(list_channels())


@pytest.mark.parametrize("name", SHIPPED)
def test_library_channel_is_well_formed(name):
    ch = load_channel(name)
    assert ch.name == name
    f = ch.freqs_hz
    assert f[0] == 0 and np.allclose(np.diff(f), 10e6)
    assert f[-1] >= 2 * ch.baud_gbd * 1e9 - 10e6
    assert ch.sdd21.shape == f.shape and ch.sdd11.shape == f.shape
    assert np.linalg.norm(np.stack([[ch.sdd11, ch.sdd21], [ch.sdd21, ch.sdd22]]).transpose(2, 0, 1),
                          ord=2, axis=(1, 2)).max() <= 1 + 1e-6
    assert ch.port_order == "1-3/2-4" and ch.meta["port_order_detected"]  # generated connector file
    assert ch.modulation == "PAM4"


def test_library_losses_order_and_rates():
    il = {n: load_channel(n).insertion_loss_db(load_channel(n).nyquist_hz) for n in SHIPPED[:3]}
    assert 5 < il["c2m-4in"] < il["c2m-10in"] < il["c2m-16in"] < 26
    ch224 = load_channel("c2m-224g-6in")
    assert ch224.baud_gbd == 106.25 and ch224.serdes_profile == "host-lr-224g"
    assert load_channel("c2m-10in").serdes_profile == "host-lr-112g"


def test_xtalk_channel_aggressors_and_icn():
    ch = load_channel("c2m-10in-xtalk")
    assert [a.kind for a in ch.aggressors] == ["FEXT", "FEXT", "NEXT"]
    assert all(a.sdd21.shape == ch.freqs_hz.shape for a in ch.aggressors)
    icn = icn_mv(ch)
    assert 0.5 < icn < 10
    assert load_channel("c2m-10in-xtalk", aggressors=False).aggressors == ()


def test_icn_closed_form_flat_crosstalk():
    # |H_xt| = x flat: sigma = A x sqrt(2 df sum W/A^2) -> compare with direct numeric integral of W
    f = np.arange(20001) * 10e6
    x = 1e-2
    ch = Channel("c", f, np.ones_like(f, dtype=complex), aggressors=(Aggressor("a", "FEXT", np.full(f.size, x + 0j), 0.5),))
    fb = 53.125e9
    ft = 0.2365 / 9.6e-12
    fine = np.linspace(1e3, f[-1], 2_000_001)
    w = 0.25 / fb * np.sinc(fine / fb) ** 2 / (1 + (fine / ft) ** 4) / (1 + (fine / (0.75 * fb)) ** 8)
    expect = np.sqrt(2 * np.trapezoid(w, fine)) * x * 1e3
    assert icn_mv(ch) == pytest.approx(expect, rel=2e-3)


def test_temperature_raises_loss_and_port_order_override():
    base = load_channel("c2m-10in")
    hot = load_channel("c2m-10in", temperature_c=85)
    assert hot.temperature_c == 85
    assert hot.insertion_loss_db(base.nyquist_hz) > base.insertion_loss_db(base.nyquist_hz) + 0.3
    wrong = load_channel("c2m-10in", port_order="1-2/3-4")
    assert abs(wrong.sdd21[5]) < 0.2 and wrong.port_order == "1-2/3-4"


def test_pulse_response_ideal_channel_is_the_boxcar():
    f = np.arange(85001) * 10e6  # H = 1 up to fs/2 = 32 x 53.125 GHz / 2: nothing band-limits the pulse
    ch = Channel("ideal", f, np.ones(f.size, dtype=complex))
    pr = pulse_response(ch, samples_per_ui=32)
    assert pr.v[:32] == pytest.approx(np.ones(32), abs=1e-9)
    assert np.abs(pr.v[32:]).max() < 1e-9
    assert pr.t_s[1] == pytest.approx(1 / (32 * 53.125e9))


def test_pulse_response_lossy_channel_area_and_peak():
    ch = load_channel("c2m-10in")
    pr = pulse_response(ch, 32)
    assert 0.2 < pr.peak_v < 0.7
    assert pr.v.sum() / 32 == pytest.approx(ch.sdd21[0].real, rel=1e-6)  # area = H(0) x UI


def test_ild_of_smooth_trace_is_small_and_fit_band():
    ch = load_channel("c2m-4in")
    f, il, dev = ild(ch)
    assert f[0] >= 50e6 and f[-1] <= 0.75 * ch.baud_gbd * 1e9
    assert np.sqrt(np.mean(dev**2)) < 1.0


def test_com_package_segment(tmp_path):
    pytest.importorskip("eqtune.channel.package", reason="COM package model (eye engineer) not present yet")
    p = tmp_path / "pkg.toml"
    p.write_text('[[segments]]\ntype = "com_package"\ncase = 1\nside = "tx"\n'
                 '[[segments]]\ntype = "trace"\nlength_in = 4\n'
                 '[[segments]]\ntype = "com_package"\ncase = 1\nside = "rx"\n')
    ch = load_channel(p)
    from eqtune.channel.package import com_package_sparams

    pk = com_package_sparams(np.array([26.5625e9]), case=1, side="tx")
    bare = load_channel(_write_trace_only(tmp_path))
    assert ch.insertion_loss_db(26.5625e9) > bare.insertion_loss_db(26.5625e9) - 20 * np.log10(abs(pk[0, 1, 0]))


def _write_trace_only(tmp_path):
    p = tmp_path / "trace.toml"
    p.write_text('[[segments]]\ntype = "trace"\nlength_in = 4\n')
    return p


def test_cli_list_and_show_json(tmp_path):
    r = CliRunner().invoke(main, ["channel", "list"])
    assert r.exit_code == 0, r.output
    assert "c2m-10in" in r.output and "53.125" in r.output
    r = CliRunner().invoke(main, ["channel", "show", "c2m-10in-xtalk", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for key in ("il_nyquist_db", "port_order", "baud_gbd", "modulation", "rl_nyquist_db", "ild_rms_db",
                "icn_mv", "delay_ns"):
        assert key in d
    assert d["il_nyquist_db"] == pytest.approx(summary(load_channel("c2m-10in-xtalk"))["il_nyquist_db"])


def test_cli_show_text_plot_and_options(tmp_path):
    png = tmp_path / "c.png"
    r = CliRunner().invoke(main, ["channel", "show", "c2m-4in", "--plot", str(png), "--temperature", "70",
                                  "--port-order", "1-3/2-4"])
    assert r.exit_code == 0, r.output
    assert "IL @ Nyquist" in r.output and "port order    1-3/2-4 given" in r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_bare_touchstone_with_shared_file(gore_c2c_file):
    r = CliRunner().invoke(main, ["channel", "show", str(gore_c2c_file), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["port_order"] == "1-2/3-4" and d["port_order_detected"]
    assert d["il_nyquist_db"] == pytest.approx(12.17, abs=0.1)
    assert d["baud_gbd"] == 53.125 and d["serdes_profile"] == "host-lr-112g"


def test_termination_renormalization_matches_skrf(tmp_path):
    import skrf

    from eqtune.channel import elements

    f = np.arange(1, 2001) * 10e6
    line = elements.short_line(f, delay_s=100e-12, zdiff_ohm=85.0, loss_db=1.0)
    # closed form: a line re-referenced to its own impedance is reflectionless
    np.testing.assert_allclose(elements.renormalize(line, 85.0)[:, 0, 0], 0.0, atol=1e-12)
    net = skrf.Network(frequency=skrf.Frequency.from_f(f, unit="Hz"), s=line, z0=100.0)
    net.renormalize(80.0)
    np.testing.assert_allclose(elements.renormalize(line, 80.0), net.s, rtol=1e-9, atol=1e-12)
    p = tmp_path / "term.toml"
    p.write_text('termination_ohm = 85\n[[segments]]\ntype = "line"\ndelay_ps = 100\nzdiff_ohm = 85\n')
    assert np.abs(load_channel(p).sdd11).max() < 1e-9


def test_reversed_touchstone_segment(tmp_path):
    from eqtune.resources import channels_dir

    conn = channels_dir() / "osfp-connector.s4p"
    fwd = tmp_path / "fwd.toml"
    rev = tmp_path / "rev.toml"
    fwd.write_text(f'[[segments]]\ntype = "touchstone"\nfile = "{conn}"\n')
    rev.write_text(f'[[segments]]\ntype = "touchstone"\nfile = "{conn}"\nreverse = true\n')
    a, b = load_channel(fwd), load_channel(rev)
    np.testing.assert_allclose(a.sdd11, b.sdd22)
    np.testing.assert_allclose(a.sdd21, b.sdd21)


def test_shipped_touchstone_files_are_reproduced_by_the_generator(tmp_path):
    import skrf

    from eqtune.channel.generate import generate
    from eqtune.resources import channels_dir

    for new in generate(tmp_path):
        shipped = channels_dir() / new.name
        assert shipped.is_file(), f"{shipped.name} missing: run python -m eqtune.channel.generate"
        a, b = skrf.Network(str(new)), skrf.Network(str(shipped))
        np.testing.assert_allclose(a.f, b.f)
        np.testing.assert_allclose(a.s, b.s, rtol=1e-6, atol=1e-9)


def test_cli_module_imports_no_numpy():
    import subprocess
    import sys

    code = "import sys, eqtune.cli, eqtune.cli.channel_cmd; print('numpy' in sys.modules, 'skrf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_ild_closed_form():
    # IL exactly of the 69B.4.2 fit form -> ILD = 0; plus a known ripple -> its RMS comes back
    f = np.arange(10626) * 10e6
    fg = f / 1e9
    il = 0.2 + 0.5 * np.sqrt(fg) + 0.3 * fg + 0.002 * fg**2
    ch = Channel("fit", f, 10 ** (-il / 20) + 0j)
    _, _, dev = ild(ch)
    assert np.abs(dev).max() < 1e-9
    ripple = 0.3 * np.sin(2 * np.pi * fg / 1.37)
    fb, _, dev = ild(Channel("r", f, 10 ** (-(il + ripple) / 20) + 0j))
    band = (f >= fb[0]) & (f <= fb[-1])
    assert np.sqrt(np.mean(dev**2)) == pytest.approx(np.sqrt(np.mean(ripple[band] ** 2)), rel=0.02)


def test_dc_point_agrees_with_skrf_extrapolate_to_dc(gore_c2c_file):
    import skrf

    net = skrf.Network(str(gore_c2c_file))  # starts at 10 MHz
    ext = net.extrapolate_to_dc(kind="linear")
    ext.renumber([1, 2], [2, 1])
    ext.se2gmm(p=2)
    ch = load_channel(gore_c2c_file)
    assert ch.sdd21[0].imag == 0
    assert ch.sdd21[0].real == pytest.approx(ext.s[0, 1, 0].real, abs=5e-3)
