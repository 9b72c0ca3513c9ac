"""Port order of the shared IEEE 802.3ck channels and their FEXT/NEXT aggressors, in both conventions.

The files in ../shared/channels-ieee are 1-2/3-4 (legs 1->2 and 3->4; the folder's README). The 1-3/2-4
variants are made here by permuting the ports of the real files (new port 2 = old port 3 and vice versa)
and writing them as Touchstone, as another tool would hand them over. A crosstalk file read in the wrong
order has an SDD21 some 35-55 dB stronger than its real coupling (the + to - coupling inside a pair), which
sank COM from about +4.9 dB to -33 dB before the fix.
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import numpy as np
import pytest

from eqtune.channel import load_channel
from eqtune.channel.mixedmode import (
    PORT_ORDERS,
    crosstalk_order_by_delay,
    detect_crosstalk_port_order,
    detect_thru_port_order,
    sdd_from_se,
)
from eqtune.channel.touchstone import load_sdd, read_network
from eqtune.errors import ChannelError

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
    # a channel TOML with the aggressors in the thru's convention (given / swapped): every file detected and
    # read alike; a set that mixes conventions is refused in one line unless port_order names the odd ones
    swapped = {p.name: _write_swapped(p, tmp_path / p.name) for p in aggs}

    def rows(use_swapped, explicit=()):
        out = []
        for p in aggs:
            f = swapped[p.name] if use_swapped(p) else p
            extra = f'port_order = "{"1-3/2-4" if use_swapped(p) else "1-2/3-4"}"\n' if p.name in explicit else ""
            out.append(f'[[aggressors]]\nname = "{p.stem}"\nkind = "{_kind(p)}"\nfile = "{f}"\n{extra}')
        return "\n".join(out)

    def toml(thru_file, body, tag):
        t = tmp_path / f"{name}-{tag}.toml"
        t.write_text(f'serdes_profile = "ieee-3ck-c2c"\n[[segments]]\ntype = "touchstone"\nfile = "{thru_file}"\n\n'
                     + body)
        return t

    for thru_file, tag, conv in ((thru, "given", "1-2/3-4"), (sw, "swapped", "1-3/2-4")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # no ambiguity warning on these files
            ch = load_channel(toml(thru_file, rows(lambda p, t=tag: t == "swapped"), tag))
        got = {r["name"]: (r["port_order"], r["detected"]) for r in ch.meta["aggressor_port_orders"]}
        assert got == {p.stem: (conv, True) for p in aggs}
    odd = {p.name for p in aggs[::2]}
    with pytest.raises(ChannelError, match=r"pair as 1-3/2-4 but the thru's as 1-2/3-4.*set port_order"):
        load_channel(toml(thru, rows(lambda p: p.name in odd), "mixed"))
    ch = load_channel(toml(thru, rows(lambda p: p.name in odd, explicit=odd), "mixed-named"))
    assert {r["name"]: r["port_order"] for r in ch.meta["aggressor_port_orders"]} == \
        {p.stem: "1-3/2-4" if p.name in odd else "1-2/3-4" for p in aggs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for tag in ("given", "swapped"):
            ch = load_channel(tmp_path / f"{name}-{tag}.toml")
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
    assert crosstalk_order_by_delay(f, s, thru_delay_s=0.5e-9)[0] == "1-2/3-4"
    assert crosstalk_order_by_delay(f, s, thru_delay_s=4e-9)[0] is None
    # the in-pair coupling (S31, S42: 0.02, twice S21, S43) decides the pairs whatever the thru's delay
    assert detect_crosstalk_port_order(f, s, thru_delay_s=4e-9)[0] == "1-2/3-4"


PERMS = list(itertools.permutations(range(4)))


def _files(shared_dir: Path) -> list[Path]:
    files = [p for n in SETS for p in sorted((shared_dir / "channels-ieee" / n).glob("*.s4p"))]
    if not files:
        pytest.skip("no shared channel files")
    return files


def test_every_renumbered_reversed_and_pn_swapped_copy_is_read_right(shared_dir):
    """All 24 numberings of the four ports of every shared thru and aggressor file (renumbered, reversed,
    P/N swapped at one or both ends): the thru's SDD21 and its reflections (SDD11/SDD22, swapped for a
    reversed copy) are read as from the original; an aggressor's coupling |SDD21| likewise. Nothing here is
    refused: a refusal would be allowed, a different reading is not."""
    for p in _files(shared_dir):
        net = read_network(p)
        f, s0 = np.asarray(net.f), np.asarray(net.s)
        ref = sdd_from_se(s0, PORT_ORDERS["1-2/3-4"])
        scale = float(np.abs(ref).max())
        thru = "thru" in p.stem.lower()
        for perm in PERMS:
            s = s0[:, perm][:, :, perm]  # new port k = old port perm[k]
            if thru:
                order = detect_thru_port_order(f, s).order
            else:
                order = detect_crosstalk_port_order(f, s)[0]
            assert order is not None, (p.name, perm)
            got = sdd_from_se(s, PORT_ORDERS[order])
            tol = 1e-6 * scale  # the files are reciprocal to ~1e-7: SDD12 of a reversed copy = SDD21
            if thru:
                same = np.abs(got[:, 1, 0] - ref[:, 1, 0]).max() < tol
                refl = (np.abs(got[:, 0, 0] - ref[:, 0, 0]).max() < tol and np.abs(got[:, 1, 1] - ref[:, 1, 1]).max() < tol) \
                    or (np.abs(got[:, 0, 0] - ref[:, 1, 1]).max() < tol and np.abs(got[:, 1, 1] - ref[:, 0, 0]).max() < tol)
                assert same and refl, (p.name, perm, order)
                assert got[0, 1, 0].real > 0.5  # DC gain +1, never the -1 of a P/N swap
            else:
                assert np.abs(np.abs(got[:, 1, 0]) - np.abs(ref[:, 1, 0])).max() < tol, (p.name, perm, order)


def test_a_pn_swapped_thru_is_read_right_or_refused_when_forced(shared_dir, tmp_path):
    """RX P/N swapped (ports 2 <-> 4): detected as 1-4/3-2 with IL and DC gain of the original; forcing the
    file's nominal 1-2/3-4 is refused in one line (SDD21 = -1 at DC), not read as a -1 gain channel."""
    import skrf

    thru, _ = _set_files(shared_dir, "tracy_3ck_02_0119_DPO_10in")
    net = read_network(thru)
    perm = [0, 3, 2, 1]
    dst = tmp_path / "pn.s4p"
    skrf.Network(frequency=net.frequency, s=net.s[:, perm][:, :, perm], z0=net.z0[:, perm]).write_touchstone(
        str(dst.with_suffix("")), form="ri")
    d = load_sdd(dst, cache=False)
    ref = load_sdd(thru, cache=False)
    assert (d.port_order, d.port_order_detected) == ("1-4/3-2", True)
    assert np.allclose(d.s, ref.s, atol=1e-9)
    with pytest.raises(ChannelError, match=r"SDD21 = -[01]\.\d+ at DC.*1-4/3-2"):
        load_sdd(dst, port_order="1-2/3-4", cache=False)



def test_channel_show_role_reads_a_bare_aggressor_file_as_one(shared_dir):
    import json

    from click.testing import CliRunner

    from eqtune.cli import main

    d = shared_dir / "channels-ieee" / "tracy_3ck_02_0119_DPO_4in"
    if not d.is_dir():
        pytest.skip(f"{d} not found")
    f = str(d / "DPO_4in_Meg7_NENF89.s4p")
    r = CliRunner().invoke(main, ["channel", "show", f, "--role", "next", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["port_order"] == "1-2/3-4" and out["port_order_detected"] and out["pair_coupling_ratio"] > 10
    assert out["coupling_db_26g5625"] < -40  # crosstalk-sized, not the in-pair coupling of a wrong reading
    r = CliRunner().invoke(main, ["channel", "show", f])  # as a thru: the user is told it looks like crosstalk
    assert "a crosstalk file?" in r.output and "assumed" in r.output


def _idealised_coupling_file(order: str) -> tuple[np.ndarray, np.ndarray]:
    """A crosstalk 4-port as a model writes it: the coupling c(f) from each aggressor port to the victim port
    of the same polarity (legs TX+ -> RX+, TX- -> RX-), nothing inside either pair, in ``order``."""
    f = np.linspace(0, 60e9, 1201)
    tau = 1.2e-9
    c = 2e-3 * (f / 26.5625e9) * np.exp(-2j * np.pi * f * tau)  # FEXT-like: grows with f, delayed
    s = np.zeros((f.size, 4, 4), complex)
    tp, tn, rp, rn = PORT_ORDERS[order]
    for a, b in ((tp, rp), (tn, rn)):
        s[:, a, b] = s[:, b, a] = c
    return f, s


@pytest.mark.parametrize("order", ["1-2/3-4", "1-3/2-4"])
def test_an_idealised_coupling_file_is_read_with_its_coupling(order):
    """Files with no coupling inside either pair fooled the in-pair rule: their strongest "in-pair"
    coupling is the crosstalk itself, so they were read in the order where SDD21 vanishes (-404 dB) and a
    set generated by eqtune's own models was refused as inconsistent with its thru. The order that holds
    the coupling is read instead, with the same |SDD21| as the model's."""
    f, s = _idealised_coupling_file(order)
    got, info = detect_crosstalk_port_order(f, s)
    assert got == order and info["pair_rule_void"] == 1.0
    sdd = sdd_from_se(s, PORT_ORDERS[got])[:, 1, 0]
    assert np.allclose(np.abs(sdd), np.abs(s[:, PORT_ORDERS[order][2], PORT_ORDERS[order][0]]), rtol=1e-12)

