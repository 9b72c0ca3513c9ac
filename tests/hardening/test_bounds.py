"""Sizes and finiteness are validated before anything is allocated (SerDes profile
ranges and noise, a Touchstone file whose option line says GHz but holds Hz values)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.errors import ChannelError, ConfigError
from eqtune.resources import serdes_profiles_dir


def _profile_text(**replace: str) -> str:
    text = (serdes_profiles_dir() / "host-lr-112g.toml").read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(("old", "new", "word"), [
    ("tx_c1 = [-0.2, 0.0, 0.02, 0.0]", "tx_c1 = [-1e6, 0.0, 0.02, 0.0]", "tx_c1"),
    ("tx_c1 = [-0.2, 0.0, 0.02, 0.0]", "tx_c1 = [-0.2, 0.0, 1e-9, 0.0]", "values"),
    ("tx_c1 = [-0.2, 0.0, 0.02, 0.0]", "tx_c1 = [-0.2, nan, 0.02, 0.0]", "finite"),
    ("gdc_db = [-16, 0, 1, -6]", "gdc_db = [-16, inf, 1, -6]", "finite"),
    ("fz_ghz = 21.25", "fz_ghz = 0", "fz_ghz"),
    ("fz_ghz = 21.25", "fz_ghz = inf", "fz_ghz"),
    ("baud_gbd = 53.125", "baud_gbd = 1e12", "baud_gbd"),
])
def test_serdes_profile_out_of_range_is_refused_quickly(tmp_path, old, new, word):
    p = tmp_path / "bad.toml"
    p.write_text(_profile_text(**{old: new}))
    from eqtune.serdes.profile import load_profile

    tracemalloc.start()
    with pytest.raises(ConfigError, match=word):
        load_profile(str(p))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20e6  # refused before allocating (the unchecked range asked for 5e7 values)


@pytest.mark.parametrize(("key", "value"), [("sigma_rj_ui", "inf"), ("sigma_rj_ui", "nan"), ("a_dd_ui", "-0.1"),
                                            ("rlm", "0"), ("eta0_v2_per_ghz", "1e300")])
def test_serdes_noise_must_be_finite_and_plausible(tmp_path, key, value):
    from eqtune.serdes.profile import load_profile

    text = _profile_text() + f"\n[noise]\n{key} = {value}\n" if "[noise]" not in _profile_text() else None
    if text is None:  # the shipped profile has a [noise] table: put the key right under it
        text = _profile_text(**{"[noise]": f"[noise]\n{key} = {value}"})
        text = "\n".join(ln for i, ln in enumerate(text.splitlines())
                         if not (ln.startswith(f"{key} =") and ln != f"{key} = {value}"))
    p = tmp_path / "noise.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=key):
        load_profile(str(p))


def test_serdes_profile_not_utf8(tmp_path):
    from eqtune.serdes.profile import load_profile

    p = tmp_path / "latin1.toml"
    p.write_bytes('name = "h\xf4te"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match="UTF-8"):
        load_profile(str(p))


def _s2p(path, unit: str, freqs) -> None:
    lines = [f"# {unit} S RI R 50"]
    for f in freqs:
        lines.append(f"{f:.6g} 0.01 0 0.9 0 0.9 0 0.01 0")
    path.write_text("\n".join(lines) + "\n")


def test_touchstone_ghz_holding_hz_is_a_clear_error(tmp_path):
    """'# GHz' over values in Hz: 60e9 'GHz' = 6e19 Hz would be a 6e12-point grid (MemoryError before)."""
    from eqtune.channel.library import load_channel

    p = tmp_path / "mixup.s2p"
    _s2p(p, "GHz", np.linspace(10e6, 60e9, 50))
    with pytest.raises(ChannelError, match="option line"):
        load_channel(p)
    r = CliRunner().invoke(main, ["channel", "show", str(p)])
    assert r.exit_code == 2 and "option line" in r.output and "Traceback" not in r.output
    good = tmp_path / "ok.s2p"
    _s2p(good, "Hz", np.linspace(10e6, 60e9, 50))
    assert load_channel(good).freqs_hz[-1] >= 60e9


def test_grid_size_checked_before_allocation():
    from eqtune.channel.grid import default_grid

    with pytest.raises(ChannelError, match="points"):
        default_grid(6e19, 53.125)
    with pytest.raises(ChannelError, match="finite"):
        default_grid(float("inf"), 53.125)
    assert default_grid(60e9, 53.125).size == 10_626  # 0..106.25 GHz in 10 MHz steps
