"""Band-limited Touchstone data: refused with the band they have and need, or extrapolated on request.

The reference is the same channel measured over the full band: the library channel c2m-10in written as
a 2-port to 60 GHz, and cut at 20 GHz (a 20 GHz VNA) and 30 GHz. The extrapolations are compared with
the full-band figures, never with themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.channel.band import needed_hz
from eqtune.channel.library import load_channel
from eqtune.channel.metrics import summary
from eqtune.cli import main
from eqtune.errors import ChannelError, InputError


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import skrf

    root = tmp_path_factory.mktemp("band")
    ch = load_channel("c2m-10in", aggressors=False)
    f = ch.freqs_hz
    out = {}
    for top, name in ((60e9, "full"), (20e9, "vna20"), (30e9, "vna30")):
        sel = (f > 0) & (f <= top)
        s = np.zeros((int(sel.sum()), 2, 2), complex)
        s[:, 0, 0], s[:, 1, 1] = ch.sdd11[sel], ch.sdd22[sel]
        s[:, 1, 0] = s[:, 0, 1] = ch.sdd21[sel]
        path = root / f"{name}.s2p"
        skrf.Network(f=f[sel], s=s, f_unit="Hz").write_touchstone(str(path))
        out[name] = str(path)
    return out


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_the_needed_band_is_the_com_receiver_bandwidth():
    assert needed_hz(53.125) == pytest.approx(0.75 * 53.125e9)  # f_r = 0.75 f_b, IEEE 802.3 93A.1.4.1


@pytest.mark.parametrize("name,end", [("vna20", "20 GHz"), ("vna30", "30 GHz")])
def test_a_band_limited_file_is_refused_with_both_bands(files, name, end):
    with pytest.raises(ChannelError, match=f"data end at {end} .* needs data up to 39.84 GHz"):
        load_channel(files[name])
    for args in (["channel", "show", files[name]], ["eye", files[name]], ["tune", files[name], "--budget", "6"],
                 ["com", files[name], "--profile", "ieee-3ck-c2c", "-q"]):
        r = _run(*args)
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert r.exit_code == 2 and len(lines) == 1 and "39.84 GHz" in lines[0] and "--extrapolate" in lines[0], \
            (args, r.output)
        assert "600" not in r.output


def test_loss_fit_is_close_to_the_full_band_and_hold_is_optimistic(files):
    truth = summary(load_channel(files["full"]))["il_nyquist_db"]
    fit = load_channel(files["vna20"], extrapolate="loss-fit")
    hold = load_channel(files["vna20"], extrapolate="hold")
    assert fit.meta["extrapolated"][0]["method"] == "loss-fit"
    il_fit, il_hold = summary(fit)["il_nyquist_db"], summary(hold)["il_nyquist_db"]
    # measured: truth 15.51 dB, loss-fit 16.24 dB, hold 12.41 dB (20 GHz of data, Nyquist 26.56 GHz)
    assert abs(il_fit - truth) < 1.5
    assert il_hold < truth - 2.0  # holding |S21| flat above the data understates the loss


def test_extrapolation_is_said_on_every_output(files):
    r = _run("channel", "show", files["vna20"], "--extrapolate", "loss-fit")
    assert r.exit_code == 0 and "EXTRAPOLATED" in r.output and "20 GHz" in r.output, r.output
    r = _run("eye", files["vna20"], "--extrapolate", "loss-fit", "--json")
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.output)
    assert d["extrapolated"][0]["needed_ghz"] == pytest.approx(39.84375)


def test_a_channel_toml_asks_for_extrapolation_by_key(files, tmp_path):
    toml = tmp_path / "ch.toml"
    toml.write_text(f'[[segments]]\ntype = "touchstone"\nfile = "{files["vna20"]}"\n')
    with pytest.raises(ChannelError, match="segments\\[0\\]"):
        load_channel(toml)
    toml.write_text('extrapolate = "loss-fit"\n' + toml.read_text())
    assert load_channel(toml).meta["extrapolated"][0]["file"] == "vna20.s2p"


def test_a_faster_profile_than_the_channel_is_checked_by_the_eye_engine(files, tmp_path):
    from eqtune.eye import EyeEngine

    toml = tmp_path / "slow.toml"
    toml.write_text(f'baud_gbd = 26.5625\n[[segments]]\ntype = "touchstone"\nfile = "{files["vna30"]}"\n')
    slow = load_channel(toml)  # 30 GHz covers 0.75 x 26.5625 GBd
    with pytest.raises(InputError, match="needs data up to 39.84 GHz"):
        EyeEngine(slow, "host-lr-112g")  # a 53.125 GBd profile on it
