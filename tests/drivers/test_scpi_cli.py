"""`eqtune drivers list|show|scan`, `eqtune measure` and `eqtune emulate` through click's CliRunner,
against the SCPI emulators (real pyvisa-py over loopback) and the module net bridge."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.drivers.instrument import open_instrument
from eqtune.emulate.link import EmulatedLink
from eqtune.emulate.scpi import ScpiEmulator

pytestmark = pytest.mark.timeout(120)


def fake_quality(direction, codes, lane):
    """Fake link-quality model (injected instead of the eye engine): better codes -> lower BER."""
    if direction == "module_rx":
        good = 8 - abs(8 - codes.get("tx_eq", 0))
        ber = 10.0 ** (-4 - 0.5 * good)
        eh = 10.0 + 4.0 * good
    else:
        good = 4 - abs(4 - codes.get("rx_post", 0))
        ber = 10.0 ** (-4 - 1.0 * good)
        eh = 10.0 + 5.0 * good
    return {"ber_estimate": ber, "eye_height_mv": [eh * 0.97, eh, eh * 0.98], "eye_height_min_mv": eh * 0.97,
            "eye_width_ui": 0.3}


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _free_port_pair() -> int:
    """A port P with P and P + 1 both free."""
    for _ in range(50):
        p = _free_port()
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no two consecutive free ports")


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def rig():
    """One EmulatedLink shared by an emulated module (net bridge), a BERT and a scope emulator."""
    from eqtune.emulate.bridge import NetBridgeServer
    from eqtune.emulate.module import EmulatedModule

    link = EmulatedLink(quality=fake_quality, seed=5)
    module = EmulatedModule(link, settle_s=0.0, seed=5)
    bridge = NetBridgeServer(module, "127.0.0.1", 0).start()
    bert = ScpiEmulator("keysight-m8040a", link, seed=5).start()
    scope = ScpiEmulator("keysight-flexdca", link, seed=5).start()
    yield {"link": link, "module": bridge.resource, "bert": bert, "scope": scope}
    bert.stop()
    scope.stop()
    bridge.stop()


def test_drivers_list(runner):
    r = runner.invoke(main, ["drivers", "list"])
    assert r.exit_code == 0, r.output
    for name in ("keysight-m8040a", "anritsu-mp1900a", "keysight-flexdca", "generic-scpi-bert"):
        assert name in r.output
    r = runner.invoke(main, ["drivers", "list", "--json"])
    data = json.loads(r.output)
    kinds = {d["name"]: d["kind"] for d in data["definitions"]}
    assert kinds["keysight-flexdca"] == "scope" and kinds["anritsu-mp1900a"] == "bert"


def test_drivers_show(runner):
    r = runner.invoke(main, ["drivers", "show", "keysight-m8040a"])
    assert r.exit_code == 0, r.output
    assert ":FETCh:BCO?" in r.output and "procedure measure_ber" in r.output
    r = runner.invoke(main, ["drivers", "show", "nope"])
    assert r.exit_code == 2 and "no instrument definition named 'nope'" in r.output


def test_drivers_scan_matches_definitions(runner, rig):
    closed = f"TCPIP::127.0.0.1::{_free_port()}::SOCKET"
    args = ["drivers", "scan", "--no-discover", "--timeout-ms", "1000", "--resource", rig["bert"].resource,
            "--resource", rig["scope"].resource, "--resource", closed]
    r = runner.invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["resource"]: row for row in json.loads(r.output)["resources"]}
    assert rows[rig["bert"].resource]["definition"] == "keysight-m8040a"
    assert rows[rig["scope"].resource]["kind"] == "scope"
    assert rows[closed]["definition"] is None and "refused" in rows[closed]["error"]
    # commands no public source confirms are named, so the FAE checks them on the instrument first
    assert {"gate", "bit_counters"} <= set(rows[rig["bert"].resource]["unverified"])
    r = runner.invoke(main, args)
    assert "keysight-m8040a (bert)" in r.output and "unreachable" in r.output
    assert "unverified command(s): analyzer_pattern, bit_counters, gate, pattern" in r.output


def test_drivers_scan_unknown_idn(runner, rig):
    rig["bert"].faults.idn = "Tektronix,DSA8300,1,1"
    r = runner.invoke(main, ["drivers", "scan", "--no-discover", "--resource", rig["bert"].resource])
    assert r.exit_code == 0 and "(no definition)" in r.output and "Tektronix" in r.output


def test_measure_with_bert_and_scope(runner, rig):
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--instrument", rig["bert"].resource,
                             "--instrument", rig["scope"].resource, "--lane", "2", "--dwell", "0.02",
                             "--acquire", "0", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["ber_source"]["definition"] == "keysight-m8040a"
    b = rep["ber"]
    assert b["bits"] > 1e8 and b["errors"] >= 0 and b["ber_upper95"] >= b["ber"]
    assert rep["eye"]["instrument"] == "keysight-flexdca" and len(rep["eye"]["eye_height_mv"]) == 3
    assert set(rep["active_eq"]) >= {"rx_pre", "rx_post", "rx_amp", "tx_eq"}
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--instrument", rig["bert"].resource,
                             "--lane", "2", "--dwell", "0.02"])
    assert r.exit_code == 0, r.output
    assert "95% upper bound" in r.output and "keysight-m8040a" in r.output


def test_measure_dwell_follows_ber_target(runner, rig):
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--instrument", rig["bert"].resource,
                             "--lane", "1", "--ber-target", "1e-9", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["dwell_from_target"] is True
    assert rep["bits_needed_95"] == pytest.approx(2.9957e9, rel=1e-3)  # -ln(0.05)/1e-9 ~ 3/BER
    assert rep["dwell_s"] == pytest.approx(max(0.1, 2.9957e9 / 106.25e9), rel=1e-3)


def test_measure_with_the_module_checker(runner, rig):
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--lane", "3", "--dwell", "0.05", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["ber_source"]["kind"] == "module"
    assert rep["ber"]["bits"] > 0


def test_measure_ber_follows_module_codes(runner, rig):
    from eqtune.drivers.cmis import open_module

    def ber_at(codes):
        with open_module(rig["module"]) as m:
            m.apply_eq({1: codes})
        r = runner.invoke(main, ["measure", "--module", rig["module"], "--instrument", rig["bert"].resource,
                                 "--lane", "1", "--dwell", "0.02", "--json"])
        assert r.exit_code == 0, r.output
        return json.loads(r.output)["ber"]

    bad = ber_at({"tx_eq": 0, "rx_post": 0})
    good = ber_at({"tx_eq": 8, "rx_post": 4})
    assert good["ber"] < bad["ber"] / 10


def test_measure_faults_are_one_line_errors(runner, rig):
    closed = f"TCPIP::127.0.0.1::{_free_port()}::SOCKET"
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--instrument", closed, "--lane", "1",
                             "--dwell", "0.01", "--timeout-ms", "500"])
    assert r.exit_code == 2 and "eqtune: error: instrument " + closed in r.output and "Traceback" not in r.output
    rig["bert"].faults.error_match = r"DATA:SEQ"  # the pattern write during setup raises an error
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--instrument", rig["bert"].resource,
                             "--lane", "1", "--dwell", "0.01"])
    assert r.exit_code == 2 and "Hardware missing" in r.output
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--lane", "9"])
    assert r.exit_code == 2
    r = runner.invoke(main, ["measure", "--module", rig["module"], "--instrument", rig["bert"].resource,
                             "--definition", "anritsu-mp1900a", "--lane", "1", "--dwell", "0.01"])
    assert r.exit_code == 2 and "not as Anritsu" in r.output


def test_emulate_serves_module_and_instruments(runner):
    base = _free_port_pair()  # the BERT listens on --port, the scope on --port + 1
    p_mod = _free_port()
    while p_mod in (base, base + 1):
        p_mod = _free_port()
    out: dict = {}

    def run():
        out["r"] = runner.invoke(main, ["emulate", "c2m-10in", "--port", str(base), "--module-port", str(p_mod),
                                        "--seed", "1", "--duration", "6"])

    th = threading.Thread(target=run)
    th.start()
    try:
        deadline = time.monotonic() + 30
        inst = None
        while inst is None and time.monotonic() < deadline:
            try:
                inst = open_instrument(f"TCPIP::127.0.0.1::{base}::SOCKET", timeout_ms=5000)
            except Exception:  # noqa: BLE001 - not listening yet
                time.sleep(0.1)
        assert inst is not None, "BERT emulator did not come up"
        with inst:
            assert inst.name == "keysight-m8040a"
            assert inst.measure_ber(1, 0.01).bits > 0
        with open_instrument(f"TCPIP::127.0.0.1::{base + 1}::SOCKET", timeout_ms=5000) as scope:
            assert scope.name == "keysight-flexdca"
        from eqtune.drivers.cmis import open_module

        with open_module(f"net:127.0.0.1:{p_mod}") as m:
            assert m.identity().vendor
    finally:
        th.join(timeout=60)
    r = out["r"]
    assert r.exit_code == 0, r.output
    assert f"net:127.0.0.1:{p_mod}" in r.output
    assert f"TCPIP::127.0.0.1::{base}::SOCKET" in r.output and f"TCPIP::127.0.0.1::{base + 1}::SOCKET" in r.output


def test_emulate_rejects_unknown_instrument(runner):
    r = runner.invoke(main, ["emulate", "--instrument", "nope", "--duration", "0"])
    assert r.exit_code == 2 and "no instrument definition named 'nope'" in r.output
