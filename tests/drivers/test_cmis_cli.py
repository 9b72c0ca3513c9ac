"""``eqtune module show/set`` through click's CliRunner against in-process emulators."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.drivers import cmis_map as M
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for, reset_emulators

RES = "emu:c2m-10in?seed=7&settle_ms=0&fast=1"


@pytest.fixture()
def emu():
    reset_emulators()
    mod = emulator_for(parse_resource(RES))
    yield mod
    reset_emulators()


def run(*args):
    result = CliRunner().invoke(main, list(args))
    return result


def err_lines(result) -> list[str]:
    text = getattr(result, "stderr", None) or result.output
    return [ln for ln in text.splitlines() if ln.strip()]


def test_show_text(emu):
    r = run("module", "show", RES)
    assert r.exit_code == 0, r.output
    assert "EQTUNE EMULATOR" in r.output and "CMIS 5.2" in r.output
    assert "rx_pre 0..7" in r.output and "tx_eq 0..10" in r.output
    rows = [ln for ln in r.output.splitlines() if ln.strip().split()[:1] and ln.strip().split()[0].isdigit()]
    assert len(rows) == 8 and all("DPActivated" in ln for ln in rows)


def test_show_json_one_lane(emu):
    r = run("module", "show", RES, "--lane", "3", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["identity"]["pn"] == "EMU-800G-OSFP"
    assert data["capabilities"]["knob_values"]["rx_amp"] == [0, 1, 2, 3]
    assert [row["lane"] for row in data["lanes"]] == [3]
    assert set(data["lanes"][0]) >= {"rx_pre", "rx_post", "rx_amp", "tx_eq", "dp_state", "tx_adaptive"}


def test_set_then_show(emu):
    r = run("module", "set", RES, "--lane", "2", "--rx-post", "5", "--tx-eq", "8")
    assert r.exit_code == 0, r.output
    assert "lane 2 rx_post" in r.output and "read back 5" in r.output and "applied and verified" in r.output
    r = run("module", "show", RES, "--lane", "2", "--json")
    row = json.loads(r.output)["lanes"][0]
    assert row["rx_post"] == 5 and row["tx_eq"] == 8 and row["tx_adaptive"] is False


def test_set_several_lanes_json(emu):
    r = run("module", "set", RES, "--lane", "1", "--lane", "8", "--rx-amp", "3", "--json")
    assert r.exit_code == 0, r.output
    changes = json.loads(r.output)["changes"]
    assert [(c["lane"], c["knob"], c["new"], c["read_back"]) for c in changes] == [(1, "rx_amp", 3, 3), (8, "rx_amp", 3, 3)]


def test_dry_run_writes_nothing(emu):
    emu.writes.clear()
    staged = emu.peek(0x10, M.SCS0_FIRST, 29)
    r = run("module", "set", RES, "--lane", "4", "--rx-pre", "6", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "lane 4 rx_pre" in r.output and "-> 6" in r.output and "nothing written" in r.output
    assert emu.writes == [] and emu.peek(0x10, M.SCS0_FIRST, 29) == staged


@pytest.mark.parametrize("args, match", [
    (("--lane", "1", "--rx-post", "9"), "rx_post=9 is outside"),
    (("--lane", "1", "--dry-run", "--tx-eq", "11"), "tx_eq=11 is outside"),
    (("--lane", "1"), "nothing to set"),
    (("--lane", "1", "--tx-eq", "3", "--tx-adaptive", "on"), "give one of them"),
])
def test_set_refused_one_line_exit_2(emu, args, match):
    emu.writes.clear()
    r = run("module", "set", RES, *args)
    assert r.exit_code == 2
    lines = err_lines(r)
    assert len(lines) == 1 and lines[0].startswith("eqtune: error:") and match in lines[0]
    assert emu.writes == []


def test_tx_adaptive_off_and_back_on_from_the_command_line(emu):
    """`--tx-adaptive on` undoes a fixed --tx-eq (the module's own adaptation again), verified by read-back;
    the fixed code stays staged underneath, dormant."""
    r = run("module", "set", RES, "--lane", "3", "--tx-eq", "6")
    assert r.exit_code == 0, r.output
    show = lambda: json.loads(run("module", "show", RES, "--lane", "3", "--json").output)["lanes"][0]  # noqa: E731
    assert show()["tx_adaptive"] is False
    emu.writes.clear()
    r = run("module", "set", RES, "--lane", "3", "--tx-adaptive", "on", "--dry-run")
    assert r.exit_code == 0 and "tx_adaptive off -> on" in r.output and emu.writes == []
    r = run("module", "set", RES, "--lane", "3", "--tx-adaptive", "on", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["changes"] == [
        {"lane": 3, "knob": "tx_adaptive", "current": "off", "new": "on", "read_back": "on"}]
    row = show()
    assert row["tx_adaptive"] is True and row["tx_eq"] == 6
    r = run("module", "set", RES, "--lane", "3", "--tx-adaptive", "off")
    assert r.exit_code == 0 and "read back off" in r.output and show()["tx_adaptive"] is False


def test_tx_adaptive_on_is_refused_when_not_advertised(emu):
    emu.writes.clear()
    res = "emu:c2m-10in?seed=7&settle_ms=0&fast=1&name=no-adapt&adaptive_cap=0"
    r = run("module", "set", res, "--lane", "1", "--tx-adaptive", "on")
    assert r.exit_code == 2, r.output
    lines = err_lines(r)
    assert len(lines) == 1 and "does not advertise Tx input adaptive EQ" in lines[0]


def test_bad_lane_is_usage_error(emu):
    r = run("module", "set", RES, "--lane", "9", "--rx-pre", "1")
    assert r.exit_code == 2


@pytest.mark.parametrize("resource, match", [
    ("bogus", "unknown module resource"),
    ("i2c:x", "is not a number"),
    ("net:127.0.0.1:1", "cannot connect to the register bridge"),
    ("optoe:/nonexistent/eeprom", "cannot open the optoe eeprom file"),
])
def test_unreachable_resources(resource, match):
    r = run("module", "show", resource)
    assert r.exit_code == 2
    lines = err_lines(r)
    assert len(lines) == 1 and match in lines[0]


def test_nack_wrong_state_and_rejected(emu):
    emu.inject("nack", count=50)
    r = run("module", "show", RES)
    assert r.exit_code == 2 and "NACK" in err_lines(r)[0] and len(err_lines(r)) == 1
    emu.clear_faults()
    emu.inject("reject")
    r = run("module", "set", RES, "--lane", "1", "--rx-pre", "2")
    assert r.exit_code == 2 and "rejected" in err_lines(r)[0] and "restored" in err_lines(r)[0]
    emu.poke(0, 3, bytes([M.ModuleState.LOW_PWR << 1]))
    r = run("module", "set", RES, "--lane", "1", "--rx-pre", "2")
    assert r.exit_code == 2 and "ModuleLowPwr" in err_lines(r)[0]
