"""Pilot-driven tests of the on-site TUI against the emulated module (issue 7).

Each test walks the screens with key presses, as an FAE would, and asserts the state behind them:
journal records, codes in the emulated module, files written.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from eqtune.tui.app import EqtuneApp

pytestmark = pytest.mark.timeout(300)


def _records(sessions: Path, sid: str) -> list[dict]:
    lines = (sessions / sid / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def _settle(app: EqtuneApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def _to_baseline(app: EqtuneApp, pilot, *, budget: int, dwell: float, patience: int = 0) -> str:
    """Session -> devices -> link, as keys; returns the new session id."""
    await pilot.press("tab", *"Acme DC3", "escape")  # site field, then back to the step tabs
    await pilot.press("s")
    assert app.step == "devices"
    await pilot.press("e", "c")
    await _settle(app, pilot)
    assert app.last_error == ""
    assert app.step == "link"
    assert app.ctl.identity["pn"]  # identity read from page 00h of the emulated module
    app.query_one("#link-budget").value = str(budget)
    app.query_one("#link-patience").value = str(patience)  # 0: the whole budget
    app.query_one("#link-dwell").value = str(dwell)
    await pilot.press("l")
    await _settle(app, pilot)
    assert app.last_error == ""
    assert app.step == "baseline"
    return app.ctl.session_id


def test_full_flow_new_session_to_report(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            sid = await _to_baseline(app, pilot, budget=6, dwell=0.02, patience=5)
            assert app.ctl.tuner.config.patience == 5  # the form's patience reaches the live loop
            recs = _records(tmp_path, sid)
            assert recs[0]["type"] == "session"
            assert recs[0]["metadata"]["site"] == "Acme DC3"
            assert any(r["type"] == "device" for r in recs)
            originals = next(r for r in recs if r["type"] == "original")

            await pilot.press("b")
            await _settle(app, pilot)
            assert app.step == "tune", app.last_error
            assert any(r["type"] == "baseline" for r in _records(tmp_path, sid))
            assert app.query_one("#baseline-table").row_count == 1

            await pilot.press("t")
            await _settle(app, pilot)
            assert app.step == "verify", app.last_error
            measures = [r for r in _records(tmp_path, sid) if r["type"] == "measure"]
            assert len(measures) == 6  # the budget, each evaluation journaled once
            # with a library channel the first evaluation is the channel model's optimum (warm start)
            plan = next(r for r in _records(tmp_path, sid) if r["type"] == "plan")
            assert plan["warm"] and measures[0]["lanes"]["1"]["codes"].items() >= plan["warm"]["1"].items()
            assert "model optimum" in str(app.query_one("#link-info").render())
            assert app.evaluations == 6
            assert app.query_one("#evals").row_count == 6

            await pilot.press("v")
            await _settle(app, pilot)
            assert app.step == "save", app.last_error
            decision = next(r for r in _records(tmp_path, sid) if r["type"] == "decision")
            held = decision["codes"]
            assert app.ctl.module.active_eq(1) == {k: held[k] for k in app.ctl.module.active_eq(1)}
            # the model eye of the kept codes, as text on the save step (SSH terminals: no graphics)
            eye = app.ctl.model_eye
            assert eye and eye[0].startswith("model eye, lane 1")
            words = eye[0].split("(")[1].split(",")[0].split()
            shown = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in words if "=" in kv}
            assert shown
            if "adaptive" in words:  # adaptive Tx input EQ back on: the fixed tx_eq code is dormant
                assert decision["tx_adaptive"] is True
                shown.pop("tx_eq")
            assert all(held[k] == v for k, v in shown.items()), (shown, held)
            assert len(eye) == 1 + 9 and all(len(row) == 56 for row in eye[1:])
            assert any("|" in row for row in eye[1:]), "no open eye at the sampling phase"
            assert "model eye" in str(app.query_one("#model-eye").render())

            await pilot.press("w")
            await _settle(app, pilot)
            profile_path = app.ctl.profile_path
            assert profile_path is not None and profile_path.exists()
            from eqtune.session.profile import Profile

            prof = Profile.load(profile_path)  # schema + digest check
            assert prof.digest

            await pilot.press("u")
            await _settle(app, pilot)
            assert app.ctl.push_report is not None and app.ctl.push_report.ok, app.last_error
            assert app.step == "report"

            await pilot.press("o")
            await _settle(app, pilot)
            report = app.ctl.report_path
            assert report is not None and report.exists()
            assert sid in report.read_text()
            types = [r["type"] for r in _records(tmp_path, sid)]
            for expected in ("baseline", "measure", "verify", "decision", "profile", "push", "report"):
                assert expected in types, expected
            assert originals["type"] == "original"
            await pilot.press("q")

    asyncio.run(run())


def test_abort_during_tuning_restores_original_codes(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            sid = await _to_baseline(app, pilot, budget=200, dwell=0.05)
            original = app.ctl.module.active_eq(1)
            await pilot.press("b")
            await _settle(app, pilot)
            await pilot.press("t")
            t0 = time.monotonic()
            while app.evaluations < 3 and time.monotonic() - t0 < 120:
                await pilot.pause(0.05)
            assert app.evaluations >= 3
            assert app.busy == "tune"
            await pilot.press("a")
            await _settle(app, pilot)
            assert app.busy is None
            assert app.ctl.phase == "aborted"
            assert app.ctl.module.active_eq(1) == original
            types = [r["type"] for r in _records(tmp_path, sid)]
            assert "abort" in types and "restore" in types
            assert types.count("measure") < 200

    asyncio.run(run())


def test_device_error_is_a_message_not_a_crash(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("2")
            app.query_one("#module-res").value = "net:127.0.0.1:1"  # nothing listens there
            await pilot.press("c")
            await _settle(app, pilot)
            assert app.step == "devices"
            assert "127.0.0.1:1" in app.last_error
            app.query_one("#lanes").value = "9"
            await pilot.press("c")
            await _settle(app, pilot)
            assert "1..8" in app.last_error
            await pilot.press("3", "l")  # confirming a link with no module connected
            await _settle(app, pilot)
            assert "Devices" in app.last_error
            assert app.is_running

    asyncio.run(run())


def test_keys_are_handled_while_tuning(tmp_path: Path) -> None:
    """The tune runs in a worker thread: step keys work while it runs (timing: benchmarks/bench_tui.py)."""

    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await _to_baseline(app, pilot, budget=200, dwell=0.05)
            await pilot.press("b")
            await _settle(app, pilot)
            await pilot.press("t")
            while app.evaluations < 1:
                await pilot.pause(0.05)
            await pilot.press("1")
            assert app.step == "session" and app.busy == "tune"
            await pilot.press("5", "p")  # pause from the tune screen
            await pilot.pause(0.3)
            assert app.ctl.paused
            n = app.evaluations
            await pilot.pause(0.5)
            assert app.evaluations <= n + 1  # at most the measurement in flight completes
            await pilot.press("p")
            assert not app.ctl.paused
            await pilot.press("a")
            await _settle(app, pilot)
            assert app.ctl.phase == "aborted"

    asyncio.run(run())
