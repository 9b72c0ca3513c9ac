"""Touchstone 2.0 files under any name ([Version], [Number of Ports], [Mixed-Mode Order] honoured) and
`--lane K` for multi-lane files on `channel show`, `eye` and `tune`.

References: the library's version-1 connector file (channels/osfp-connector.s4p) read by the same loader,
and hand-built mixed-mode data whose differential block is known.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.channel.library import load_channel
from eqtune.channel.touchstone import clear_cache, load_sdd, read_network
from eqtune.cli import main
from eqtune.errors import TouchstoneError
from eqtune.resources import channels_dir

CONN = channels_dir() / "osfp-connector.s4p"


def _v2_text(f_hz: np.ndarray, s: np.ndarray, extra: str = "", ref: str = "") -> str:
    n = s.shape[1]
    rows = [f"{f:.6g} " + " ".join(f"{v.real:.9g} {v.imag:.9g}" for v in s[i].ravel()) for i, f in enumerate(f_hz)]
    return ("! written by the eqtune tests\n[Version] 2.0\n# Hz S RI R 50\n"
            f"[Number of Ports] {n}\n[Number of Frequencies] {len(f_hz)}\n{extra}{ref}[Network Data]\n"
            + "\n".join(rows) + "\n[End]\n")


@pytest.fixture(scope="module")
def conn():
    net = read_network(CONN)
    return np.asarray(net.f), np.asarray(net.s)


@pytest.mark.parametrize("name", ["conn.ts", "conn.dat", "conn_v2.txt", "conn.s2p"])
def test_a_version_2_file_is_read_under_any_name(tmp_path, conn, name):
    f, s = conn
    p = tmp_path / name
    p.write_text(_v2_text(f, s))  # conn.s2p: the name says 2 ports, [Number of Ports] says 4 and wins
    clear_cache()
    got, want = load_sdd(p), load_sdd(CONN)
    assert got.nports == 4 and np.allclose(got.s, want.s) and got.port_order == want.port_order


def test_a_file_that_is_not_touchstone_by_name_or_keywords_is_refused(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("# Hz S RI R 50\n1e9 0.1 0 0.9 0 0.9 0 0.1 0\n")
    with pytest.raises(TouchstoneError, match=r"\[Version\] and \[Number of Ports\]"):
        load_sdd(p)


def test_mixed_mode_order_gives_the_differential_block_renormalised(tmp_path):
    f = np.linspace(1e9, 60e9, 60)
    s = np.zeros((f.size, 4, 4), complex)
    s[:, 1, 0] = s[:, 0, 1] = 0.5 * np.exp(-2j * np.pi * f * 100e-12)  # D2,1 -> D4,3 transmission
    s[:, 3, 2] = s[:, 2, 3] = 0.1  # common mode
    p = tmp_path / "mm.ts"
    p.write_text(_v2_text(f, s, extra="[Mixed-Mode Order] D2,1 D4,3 C2,1 C4,3\n"))
    d = load_sdd(p)
    assert d.s.shape == (f.size, 2, 2)
    assert np.allclose(d.s[:, 1, 0], s[:, 1, 0])  # 50 ohm single-ended reference: D is 100 ohm already
    with pytest.raises(TouchstoneError, match="already differential"):
        load_sdd(p, ports=(1, 2, 3, 4))


def _two_lane_file(tmp_path: Path, conn) -> str:
    """An 8-port file: lane 1 = the connector, lane 2 = the connector with half its transmission."""
    import skrf

    f, s = conn
    big = np.zeros((f.size, 8, 8), complex)
    big[:, :4, :4] = s
    lane2 = s.copy()
    thru = [(0, 1), (1, 0), (2, 3), (3, 2), (0, 2), (2, 0), (1, 3), (3, 1)]
    for i, j in thru:
        lane2[:, i, j] *= 0.5
    big[:, 4:, 4:] = lane2
    p = tmp_path / "two-lane.s8p"
    skrf.Network(f=f, s=big, f_unit="Hz").write_touchstone(str(p))
    return str(p)


def test_lane_option_on_channel_show_eye_and_tune(tmp_path, conn):
    p = _two_lane_file(tmp_path, conn)
    r = CliRunner().invoke(main, ["channel", "show", p])
    assert r.exit_code == 2 and "K = 1..2" in r.output and "--lane K" in r.output, r.output
    il = []
    for k in ("1", "2"):
        r = CliRunner().invoke(main, ["channel", "show", p, "--lane", k, "--json"])
        assert r.exit_code == 0, r.output
        il.append(json.loads(r.output)["il_nyquist_db"])
    assert il[1] - il[0] == pytest.approx(20 * np.log10(2), abs=0.5)  # half the transmission: +6 dB
    r = CliRunner().invoke(main, ["channel", "show", p, "--lane", "3"])
    assert r.exit_code == 2 and "lanes 1..2" in r.output
    r = CliRunner().invoke(main, ["eye", p, "--lane", "2", "--json"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["tune", p, "--lane", "2", "--budget", "6", "--seed", "1", "--json"])
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)
    r = CliRunner().invoke(main, ["tune", p, "--lane", "1,2", "--budget", "6"])
    assert r.exit_code == 2 and "one lane" in r.output


def test_lane_argument_of_load_channel_matches_a_toml_lane(tmp_path, conn):
    p = _two_lane_file(tmp_path, conn)
    toml = tmp_path / "ch.toml"
    toml.write_text(f'[[segments]]\ntype = "touchstone"\nfile = "{p}"\nlane = 2\n')
    a, b = load_channel(p, lane=2), load_channel(toml)
    assert np.allclose(a.sdd21, b.sdd21)


def test_lane_option_on_com(tmp_path, conn):
    """`eqtune com FILE --lane K` reads lane K of a multi-lane thru: lane 2 (half the transmission) gives
    a smaller available signal A_s than lane 1; without --lane the file is refused in one line."""
    p = _two_lane_file(tmp_path, conn)
    r = CliRunner().invoke(main, ["com", p, "--profile", "ieee-3ck-c2c", "--case", "1", "-q"])
    assert r.exit_code == 2 and "--lane K" in r.output and "Traceback" not in r.output, r.output
    a_s = []
    for k in ("1", "2"):
        r = CliRunner().invoke(main, ["com", p, "--lane", k, "--profile", "ieee-3ck-c2c", "--case", "1", "-q",
                                      "--json"])
        assert r.exit_code == 0, r.output
        a_s.append(json.loads(r.stdout)["cases"][0]["a_s_mv"])
    assert a_s[1] < a_s[0]
