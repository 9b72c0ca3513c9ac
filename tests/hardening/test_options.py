"""CLI: lane selections that name no lane and numeric options that are NaN,
infinite, zero or out of range are one-line errors (exit 2) before any module is opened."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.cli.live_cmd import live_config, parse_lanes
from eqtune.errors import InputError


@pytest.mark.parametrize("raw", ["4-1", "", " , ", "-1", "0", "9", "1-9", "x", "1-", "all,3"])
def test_bad_lane_selections_are_errors(raw):
    with pytest.raises(InputError) as ei:
        parse_lanes([raw])
    assert "--lane" in str(ei.value)


def test_good_lane_selections():
    assert parse_lanes(None) == [1]
    assert parse_lanes(["1-3", "5"]) == [1, 2, 3, 5]
    assert parse_lanes(["2,2,1"]) == [1, 2]
    assert parse_lanes(["all"]) == []  # every lane only when asked for by name
    assert parse_lanes(" 8 ") == [8]


def _live(*extra: str, sessions: str) -> object:
    from eqtune.emulate.registry import reset_emulators

    reset_emulators()
    args = ["tune", "c2m-10in", "--live", "--module", "emu:c2m-10in?fast=1&settle_ms=0&name=opt",
            "--module-ber", "--sessions", sessions, *extra]
    return CliRunner().invoke(main, args)


BAD_LIVE = [
    (["--lane", "4-1"], "backwards"),
    (["--lane", ""], "names no lane"),
    (["--lane", "-1"], "does not exist"),
    (["--lane", "1", "--dwell", "nan"], "finite"),
    (["--lane", "1", "--dwell", "inf"], "finite"),
    (["--lane", "1", "--dwell", "0"], "--dwell"),
    (["--lane", "1", "--budget", "0"], "--budget"),
    (["--lane", "1", "--target-ber", "2"], "--target-ber"),
    (["--lane", "1", "--target-ber", "0"], "--target-ber"),
    (["--lane", "1", "--time-budget", "-1"], "--time-budget"),
    (["--lane", "1", "--target", "nan"], "finite"),
    (["--lane", "1", "--settle", "-inf"], "--settle"),
    (["--lane", "1", "--verify-dwell", "nan"], "finite"),
]


@pytest.mark.parametrize(("extra", "word"), BAD_LIVE)
def test_bad_live_options_exit_2_one_line_nothing_written(tmp_path, extra, word):
    from eqtune.emulate.registry import _EMULATORS

    r = _live(*extra, sessions=str(tmp_path))
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("eqtune: error:"), r.output
    assert word in lines[0] and "Traceback" not in r.output
    # nothing opened, nothing journaled
    assert not any(m.writes for m in _EMULATORS.values())
    assert not list(tmp_path.iterdir())


def test_live_config_refuses_what_the_api_gets_wrong():
    base = {"module": "emu:c2m-10in", "lanes": ["1"], "module_ber": True}
    for extra, word in [({"budget": 0}, "--budget"), ({"dwell": float("nan")}, "--dwell"),
                        ({"dwell": 0.0}, "--dwell"), ({"target_ber": 2.0}, "--target-ber"),
                        ({"time_budget": -1.0}, "--time-budget"), ({"target": float("inf")}, "--target"),
                        ({"remeasure": -1}, "--remeasure")]:
        with pytest.raises(InputError, match=word.replace("-", r"\-")):
            live_config(**base, **extra)
    assert live_config(**base, budget=5).budget == 5


@pytest.mark.parametrize("resource", ["emu:c2m-10in?settle_ms=-5", "emu:c2m-10in?settle_ms=nan",
                                      "emu:nonexistent", "emu:c2m-10in?lanes=0", "emu:c2m-10in?seed=x"])
def test_bad_emulator_resources(resource):
    from eqtune.emulate.registry import reset_emulators

    reset_emulators()
    r = CliRunner().invoke(main, ["module", "show", resource])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "emu:" in lines[0], r.output


@pytest.mark.parametrize("args", [
    ["measure", "--module", "emu:c2m-10in", "--lane", "1", "--dwell", "nan"],
    ["measure", "--module", "emu:c2m-10in", "--lane", "1", "--bit-rate-gbps", "inf"],
    ["demo", "--dwell", "nan"],
    ["eye", "c2m-10in", "--ber", "nan"],
    ["eye", "c2m-10in", "--samples-per-ui", "100000000"],
    ["channel", "show", "c2m-10in", "--temperature", "nan"],
    ["tune", "c2m-10in", "--sim", "--budget", "0"],
    ["tune", "c2m-10in", "--sim", "--time-budget", "-1"],
])
def test_other_numeric_options_refused_in_one_line(args):
    r = CliRunner().invoke(main, args)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("eqtune: error:"), r.output


@pytest.mark.parametrize("raw", ["1,,2", "\uff11", "1-99999999999", "1_0", "4-1", "2-", "-", "all,1", "x" * 300])
def test_the_shared_lane_parser_refuses_before_building_anything(raw):
    from eqtune.validate import parse_lanes as shared

    with pytest.raises(InputError, match="--lanes"):
        shared(raw, "--lanes")


def test_the_shared_lane_parser_reads_what_every_command_gives():
    from eqtune.validate import parse_file_lane
    from eqtune.validate import parse_lanes as shared

    assert shared("1-3,8", "--lanes") == [1, 2, 3, 8] and shared(("2", "1"), "--lanes") == [1, 2]
    assert shared(None, "--lanes", default=()) == [] and shared("all") == []
    assert parse_file_lane(("12",)) == 12 and parse_file_lane(()) is None
    with pytest.raises(InputError, match="one lane"):
        parse_file_lane(("1,2",))
