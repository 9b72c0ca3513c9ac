"""Port order of the shared IEEE 802.3ck channels and their FEXT/NEXT aggressors, in both conventions.

The files in ../shared/channels-ieee are 1-2/3-4 (legs 1->2 and 3->4; the folder's README). The 1-3/2-4
variants are made here by permuting the ports of the real files (new port 2 = old port 3 and vice versa)
and writing them as Touchstone, as another tool would hand them over. A crosstalk file read in the wrong
order has an SDD21 some 35-55 dB stronger than its real coupling (the + to - coupling inside a pair), which
sank COM from about +4.9 dB to -33 dB before the fix (eqtune issue 16).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from eqtune.channel import load_channel
from eqtune.channel.mixedmode import PORT_ORDERS, detect_crosstalk_port_order, sdd_from_se
from eqtune.channel.touchstone import load_sdd, read_network

SETS = ["tracy_3ck_02_0119_DPO_4in", "tracy_3ck_02_0119_DPO_10in", "tracy_3ck_02_0119_DPO_12in",
        "gore_3ck_02_0519_C2C_12dB", "pychopmarg_example2"]
SWAP = [0, 2, 1, 3]  # 1-2/3-4 <-> 1-3/2-4


def _set_files(shared_dir: Path, name: str) -> tuple[Path, list[Path]]:
    d = shared_dir / "channels-ieee" / name
    if not d.is_dir():
        pytest.skip(f"{d} not found")
    files = sorted(d.glob("*.s4p"))
    thru = [p for p in files if "thru" in p.stem.lower()]
    aggs = [p for p in files if p not in thru]
    assert len(thru) == 1
    return thru[0], aggs


def _kind(p: Path) -> str:
    s = p.stem.upper()
    return "NEXT" if ("NEXT" in s or "_NEN" in s) else "FEXT"


def _write_swapped(src: Path, dst: Path) -> Path:
    import skrf

    net = read_network(src)
    out = skrf.Network(frequency=net.frequency, s=net.s[:, SWAP][:, :, SWAP], z0=net.z0[:, SWAP])
    out.write_touchstone(str(dst.with_suffix("")), form="ri")
    return dst


@pytest.mark.parametrize("name", SETS)
def test_thru_and_aggressor_order_detected_in_both_conventions(shared_dir, tmp_path, name):
    thru, aggs = _set_files(shared_dir, name)
    # thru alone, as given (1-2/3-4) and swapped (1-3/2-4)
    d = load_sdd(thru, cache=False)
    assert (d.port_order, d.port_order_detected) == ("1-2/3-4", True)
    sw = _write_swapped(thru, tmp_path / "thru_swapped.s4p")
    d2 = load_sdd(sw, cache=False)
    assert (d2.port_order, d2.port_order_detected) == ("1-3/2-4", True)
    assert np.allclose(d2.s, d.s, atol=1e-9)
    if not aggs:
        return
    # a channel TOML with the aggressors: every other one swapped (mixed conventions in one set), and the
    # thru in the other convention in a second definition
    swapped = {p.name: _write_swapped(p, tmp_path / p.name) for p in aggs[::2]}
    rows = []
    for p in aggs:
        f = swapped.get(p.name, p)
        rows.append(f'[[aggressors]]\nname = "{p.stem}"\nkind = "{_kind(p)}"\nfile = "{f}"\n')
    for thru_file, tag in ((thru, "given"), (sw, "swapped")):
        toml = tmp_path / f"{name}-{tag}.toml"
        toml.write_text(f'serdes_profile = "ieee-3ck-c2c"\n[[segments]]\ntype = "touchstone"\nfile = "{thru_file}"\n\n'
                        + "\n".join(rows))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # no ambiguity warning on these files
            ch = load_channel(toml)
        got = {r["name"]: (r["port_order"], r["detected"]) for r in ch.meta["aggressor_port_orders"]}
        want = {p.stem: ("1-3/2-4" if p.name in swapped else "1-2/3-4", True) for p in aggs}
        assert got == want
        # the coupling read through either file is the same, and it is crosstalk-sized (< -30 dB at 1 GHz
        # and at Nyquist), not the -20..-26 dB in-pair coupling a wrong order gives
        for ag in ch.aggressors:
            k1, kn = np.searchsorted(ch.freqs_hz, [1e9, 26.5625e9])
            assert 20 * np.log10(abs(ag.sdd21[k1])) < -30 and 20 * np.log10(abs(ag.sdd21[kn])) < -30, ag.name
    ref = load_channel(tmp_path / f"{name}-given.toml")
    alt = load_channel(tmp_path / f"{name}-swapped.toml")
    for a, b in zip(ref.aggressors, alt.aggressors):
        assert np.allclose(a.sdd21, b.sdd21, atol=1e-9)


def test_crosstalk_order_ambiguous_warns_and_takes_the_thru_order(tmp_path):
    """Couplings that arrive at the same time in both readings: no basis to choose, so the thru's order
    is used with a warning naming the delays and what to set."""
    import skrf

    f = np.arange(0, 401) * 1e8
    s = np.zeros((len(f), 4, 4), dtype=complex)
    delay = np.exp(-2j * np.pi * f * 1e-9)
    for i, j in ((1, 0), (3, 2), (2, 0), (3, 1)):  # equal coupling, equal 1 ns delay, both readings
        s[:, i, j] = s[:, j, i] = 0.01 * delay
    order, delays = detect_crosstalk_port_order(f, s)
    assert order is None and abs(delays["1-2/3-4"] - delays["1-3/2-4"]) < 50e-12
    p = tmp_path / "xt.s4p"
    skrf.Network(frequency=skrf.Frequency.from_f(f, unit="hz"), s=s, z0=50).write_touchstone(str(p.with_suffix("")))
    with pytest.warns(UserWarning, match=r"crosstalk port order is ambiguous.*assuming 1-3/2-4 \(the thru's order\)"):
        d = load_sdd(p, crosstalk=True, fallback_order="1-3/2-4", cache=False)
    assert (d.port_order, d.port_order_detected) == ("1-3/2-4", False)


def test_crosstalk_delay_rule_scales_with_the_thru():
    """A coupling 0.3 ns later than the other reading is decisive for a short thru (50 ps floor) but not
    for a 4 ns thru (a quarter of it, 1 ns, is required)."""
    f = np.arange(0, 601) * 1e8
    s = np.zeros((len(f), 4, 4), dtype=complex)
    s[:, 1, 0] = s[:, 0, 1] = s[:, 3, 2] = s[:, 2, 3] = 0.01 * np.exp(-2j * np.pi * f * 0.4e-9)  # 1-2/3-4 legs
    s[:, 2, 0] = s[:, 0, 2] = s[:, 3, 1] = s[:, 1, 3] = 0.02 * np.exp(-2j * np.pi * f * 0.1e-9)
    sdd = {o: sdd_from_se(s, p)[:, 1, 0] for o, p in PORT_ORDERS.items()}
    assert np.abs(sdd["1-3/2-4"]).max() > np.abs(sdd["1-2/3-4"]).max()  # the LF rule would pick 1-3/2-4
    assert detect_crosstalk_port_order(f, s, thru_delay_s=0.5e-9)[0] == "1-2/3-4"
    assert detect_crosstalk_port_order(f, s, thru_delay_s=4e-9)[0] is None
