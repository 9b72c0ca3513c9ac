"""Rehearsal scenarios (eqtune.emulate.scenario) and the watch run against them on a simulated clock
(eqtune.watch.rehearse): the file format's one-line errors, the emulated faults as the CMIS driver
reads them, and what the watch flags at SONiC's 60 s cadence against what was planted."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.emulate.scenario import (
    EPOCH_S,
    Fault,
    Scenario,
    ScenarioClock,
    build_fleet,
    load_scenario,
    loss_for_ber,
)
from eqtune.errors import ConfigError
from eqtune.watch.observe import read_module
from eqtune.watch.rehearse import rehearse

# a fleet the detector was not tuned on (its settings were chosen on eqtune.watch.simulate fleets):
# six modules, every planted fault of the shipped scenario, the step between two polls
SMALL = """
[fleet]
name = "small"
modules = 6
seed = 3
[temperature]
first_swing_s = 3000.0
[[fault]]
kind = "step"
module = 1
lane = 3
at_s = 5410.0
[[fault]]
kind = "thermal"
module = 2
lane = 6
excess_db_per_c = 0.20
[[fault]]
kind = "thermal"
module = 3
lane = 2
excess_db_per_c = 0.06
[[fault]]
kind = "noisy"
module = 4
lane = 7
[[fault]]
kind = "marginal"
module = 5
lane = 4
"""


@pytest.fixture()
def small(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(SMALL, encoding="utf-8")
    return load_scenario(p)


def test_shipped_scenario_plants_the_five_faults():
    sc = load_scenario("planted-faults")
    assert (sc.modules, sc.lanes) == (32, 8)
    kinds = sorted(f.kind for f in sc.faults)
    assert kinds == ["marginal", "noisy", "step", "thermal", "thermal"]
    assert sorted(f.excess_db_per_c for f in sc.faults if f.kind == "thermal") == [0.06, 0.20]
    step = next(f for f in sc.faults if f.kind == "step")
    assert step.factor == 10.0 and step.flap_s > 0


@pytest.mark.parametrize("body, says", [
    ("[[fault]]\nkind = 'drift'\nmodule = 1\nlane = 1\n", "fault[0].kind"),
    ("[fleet]\nmodules = 4\n[[fault]]\nkind = 'step'\nmodule = 5\nlane = 1\n", "fleet has 4 modules"),
    ("[[fault]]\nkind = 'step'\nmodule = 1\nlane = 9\n", "fault[0].lane"),
    ("[[fault]]\nkind = 'thermal'\nmodule = 1\nlane = 1\n", "excess_db_per_c"),
    ("[[fault]]\nkind = 'noisy'\nmodule = 1\nlane = 1\n[[fault]]\nkind = 'marginal'\nmodule = 1\nlane = 1\n",
     "already has fault[0]"),
    ("[fleet]\nmodulez = 3\n", "modulez"),
    ("[fleet]\nber_min = 1e-6\nber_max = 1e-8\n", "ber_min"),
    ("[fleet]\nimage = 'nope'\n", "unknown module image"),
    ("[temperature]\nramp_s = 0\n", "ramp_s"),
    ("[fleet\n", "not valid TOML"),
])
def test_bad_scenarios_get_one_line_naming_the_key(tmp_path, body, says):
    p = tmp_path / "bad.toml"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_scenario(p)
    msg = str(err.value)
    assert says in msg and "\n" not in msg and str(p) in msg
    res = CliRunner().invoke(main, ["watch", "--scenario", str(p), "--no-store"])
    assert res.exit_code == 2 and "Traceback" not in res.output and says in res.output


def test_missing_scenario_names_the_shipped_ones(tmp_path):
    with pytest.raises(ConfigError, match="planted-faults"):
        load_scenario(tmp_path / "nope.toml")


def test_lanes_start_at_their_ber_and_follow_the_script(small):
    """Through the CMIS driver: each planted lane's VDM pre-FEC BER at its scripted level, the module
    temperature on its swing, the step (lock lost in the flap, then x10) at scenario time."""
    fleet = build_fleet(small)
    mods = [fleet.opener(r) for r in fleet.resources]

    def ber(m: int, lane: int) -> float:
        s = read_module(mods[m - 1], fleet.resources[m - 1], clock=fleet.clock.unix)
        assert s.ok, s.error
        return float(s.lanes[lane]["prefec_ber"])

    marginal = [ber(5, 4) for _ in range(5)]
    assert math.isclose(sum(marginal) / 5, 3e-6, rel_tol=0.05)  # ~3,200 errors per 0.1 s reading
    assert ber(1, 3) == pytest.approx(1e-7, rel=0.15)  # ~106 errors per reading: Poisson +/-10 %
    fleet.clock.advance(5411.0)
    assert ber(1, 3) == pytest.approx(0.5, rel=0.01)  # in the flap: lock lost
    fleet.clock.advance(10.0)
    assert ber(1, 3) == pytest.approx(1e-6, rel=0.1)
    # module 2's first swing: 3000 + 60 s stagger, 300 s up; +10 C at the top
    fleet.clock.advance(3060.0 + 300.0 + 100.0 - fleet.clock())
    s = read_module(mods[1], fleet.resources[1], clock=fleet.clock.unix)
    assert s.temperature_c == pytest.approx(40.0, abs=0.01)
    assert s.ts == pytest.approx(EPOCH_S + fleet.clock())


def test_loss_for_ber_inverts_the_surrogate():
    from eqtune.emulate.scenario import _module_rx_ber

    for ber in (1e-9, 1e-7, 3e-6):
        assert _module_rx_ber(loss_for_ber(ber)) == pytest.approx(ber, rel=0.01)


def test_rehearsal_at_60s_flags_what_was_planted_and_nothing_else(small):
    """The done-when of a fleet watch at SONiC's cadence, on a fleet the detector was not tuned on:
    the x10 step within 2 polls of the flap and still flagged at the end; both thermal lanes within
    the module's first swing; the noisy and the marginal lane, and every healthy lane, never."""
    rep = rehearse(small, interval_s=60.0, duration_s=3 * 3600.0)
    by = {o.fault_kind + (f"{o.lane}" if o.fault_kind == "thermal" else ""): o for o in rep.planted}
    step = by["step"]
    assert "step" in step.kinds and step.polls_after is not None and step.polls_after <= 2 and step.held_at_end
    for k in ("thermal6", "thermal2"):
        assert "thermal" in by[k].kinds and by[k].first_s is not None and by[k].first_s <= by[k].deadline_s
    assert by["noisy"].first_s is None and by["marginal"].first_s is None
    assert rep.unexpected == []
    assert rep.ok


def test_rehearsal_fails_a_missed_deadline(small):
    """The report is a judgement, not a replay: a step the run ends before is reported as missed."""
    rep = rehearse(replace(small, faults=(Fault("step", 1, 3, at_s=5410.0),)), interval_s=60.0, polls=60)
    assert not rep.ok and not rep.planted[0].met


def test_watch_polls_a_served_scenario_over_tcp(small):
    """`eqtune emulate --scenario` serves every module on its own register bridge in one process; the
    watch opens them as net: resources (here with the scenario clock simulated)."""
    from eqtune.drivers.cmis import open_module

    fleet = build_fleet(replace(small, modules=2, faults=small.faults[:2]), ScenarioClock())
    try:
        res = fleet.serve("127.0.0.1", 0)
        assert all(r.startswith("net:127.0.0.1:") for r in res)
        csv = fleet.fleet_csv().splitlines()
        assert csv[0].startswith("resource,server,port") and len(csv) == 3
        mod = open_module(res[0])
        try:
            assert mod.identity().sn == fleet.labels[0]["serial"]
            fleet.clock.advance(5500.0)
            s = read_module(mod, res[0], clock=fleet.clock.unix)
            assert s.ok and s.lanes[3]["prefec_ber"] == pytest.approx(1e-6, rel=0.1)
        finally:
            mod.close()
    finally:
        fleet.stop()


def test_cli_rehearsal_reports_flags_with_scenario_time(small, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SMALL.replace("modules = 6", "modules = 2").replace("module = 3", "module = 2")
                 .split("[[fault]]\nkind = \"thermal\"\nmodule = 2\nlane = 2")[0], encoding="utf-8")
    res = CliRunner().invoke(main, ["watch", "--scenario", str(p), "--interval", "60", "--duration", "6000",
                                    "--db", str(tmp_path / "w.sqlite")])
    assert res.exit_code == 0, res.output
    assert "FLAG scenario:small/1 lane 3 step" in res.output and "t=   5520 s" in res.output
    assert "ok   module 1 lane 3" in res.output
    res = CliRunner().invoke(main, ["watch", "worst", "--db", str(tmp_path / "w.sqlite"), "-n", "1"])
    assert res.exit_code == 0 and "scenario:small/1 lane 3" in res.output


def test_scenario_options_refused_together(tmp_path):
    res = CliRunner().invoke(main, ["watch", "--scenario", "planted-faults", "--demo-fleet", "2"])
    assert res.exit_code == 2 and "--scenario" in res.output
    res = CliRunner().invoke(main, ["emulate", "--fleet-out", str(tmp_path / "f.csv"), "--duration", "0"])
    assert res.exit_code == 2 and "--scenario" in res.output


def test_scenario_dataclass_defaults_match_the_schema():
    from eqtune.emulate.scenario import parse_scenario

    assert replace(parse_scenario({}, "x"), source="<scenario>") == Scenario()


def test_emulate_scenario_serves_every_module_and_writes_the_fleet_csv(tmp_path):
    from eqtune.watch.targets import from_csv

    p = tmp_path / "s.toml"
    p.write_text(SMALL.replace("modules = 6", "modules = 5"), encoding="utf-8")
    out = tmp_path / "fleet.csv"
    res = CliRunner().invoke(main, ["emulate", "--scenario", str(p), "--module-port", "0", "--fleet-out", str(out),
                                    "--duration", "0"])
    assert res.exit_code == 0, res.output
    assert res.output.count("net:127.0.0.1:") == 5 and "fault    module 1 lane 3" in res.output
    targets = from_csv(out)
    assert len(targets) == 5 and targets[0].labels["server"] == "rack01" and targets[0].channel == "c2m-10in"
    res = CliRunner().invoke(main, ["emulate", "--scenario", str(p), "--module-port", "65534", "--duration", "0"])
    assert res.exit_code == 2 and "65538" in res.output
