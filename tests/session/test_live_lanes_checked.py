"""A lane the module does not have is refused in one line before a session journal exists (a bad
``--lane`` must not leave a "failed" session behind); ``all`` means the module's own lanes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.drivers.cmis import open_module
from eqtune.errors import InputError
from eqtune.session.live import LiveConfig, LiveTuner

FOUR_LANES = "emu:c2m-10in?image=qsfp4-regular&seed=2&settle_ms=0&fast=1&adaptive=0&name={name}"


def _sessions(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.is_dir()] if folder.exists() else []


def _args(res: str, lanes: str, sessions: Path) -> list[str]:
    return ["tune", "c2m-10in", "--live", "--module", res, "--lane", lanes, "--module-ber", "--budget", "2",
            "--dwell", "0.01", "--sessions", str(sessions), "--allow-traffic-down"]


def test_cli_lane_outside_the_module_is_one_line_and_no_session(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, _args(FOUR_LANES.format(name="lanes-bad"), "5-8", tmp_path))
    assert out.exit_code == 2, out.output
    errors = [ln for ln in out.output.splitlines() if "error" in ln]
    assert len(errors) == 1 and "--lane 5" in errors[0] and "1..4" in errors[0], out.output
    assert "Traceback" not in out.output
    assert _sessions(tmp_path) == [], "a refused --lane must leave no session journal"


def test_cli_all_lanes_are_the_modules_four(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, _args(FOUR_LANES.format(name="lanes-all"), "all", tmp_path))
    assert out.exit_code == 0, out.output
    (sid,) = _sessions(tmp_path)
    recs = [json.loads(x) for x in (sid / "journal.jsonl").read_text().splitlines() if x.strip()]
    (orig,) = [r for r in recs if r["type"] == "original"]
    assert sorted(int(k) for k in orig["codes"]) == [1, 2, 3, 4]


def test_api_refuses_before_the_journal_and_leaves_the_callers_module_open(tmp_path: Path) -> None:
    res = FOUR_LANES.format(name="lanes-api")
    with pytest.raises(InputError, match=r"--lane 6: .* has lanes 1\.\.4"):
        LiveTuner.create(LiveConfig(module=res, lanes=[2, 6], dwell_s=0.01, budget=2), sessions_dir=tmp_path)
    assert _sessions(tmp_path) == []
    mod = open_module(res)
    try:
        with pytest.raises(InputError):
            LiveTuner.create(LiveConfig(module=res, lanes=[8], dwell_s=0.01, budget=2), sessions_dir=tmp_path,
                             module=mod)
        assert _sessions(tmp_path) == []
        assert mod.active_eq(1)  # still the caller's, still open: it reads
    finally:
        mod.close()
