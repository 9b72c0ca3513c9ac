"""SIGKILL a live session at 10 random points in tune and verify, then resume it in the TUI: the screen
lands on the step the journal says and its counts are the journal's, every time.

The kill point is exact (kill_worker.py blocks right after its K-th journaled reading, then the parent
kills it); the expected state is computed here from the journal records, independently of the TUI.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eqtune.tui.app import EqtuneApp

pytestmark = pytest.mark.timeout(900)
WORKER = Path(__file__).with_name("kill_worker.py")
ROOT = Path(__file__).resolve().parents[2]
BUDGET = 8  # kill_worker.BUDGET
LANES = (1, 2)


def _kill_at(sessions: Path, sid: str, k: int) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, str(WORKER), str(sessions), sid, str(k)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()  # blocks until the worker holds at its K-th reading
    assert line.startswith("at "), (line, p.stderr.read())
    p.send_signal(signal.SIGKILL)
    p.wait()
    return line.split()[2]


def _expected(sessions: Path, sid: str) -> tuple[str, dict[int, int], dict[int, float], int]:
    recs = [json.loads(x) for x in (sessions / sid / "journal.jsonl").read_text().splitlines() if x.strip()]
    measures = [r for r in recs if r["type"] == "measure"]
    counts = {ln: sum(1 for m in measures if str(ln) in m["lanes"]) for ln in LANES}
    best = {ln: max(float(m["lanes"][str(ln)]["margin"]) for m in measures) for ln in LANES if counts[ln]}
    stopped = bool(measures and measures[-1].get("stop"))
    verified = {int(k) for r in recs if r["type"] == "verify" for k in r["lanes"]}
    if len(measures) < BUDGET and not stopped:
        step = "tune"
    elif not all(ln in verified for ln in LANES) or len({r["lane"] for r in recs if r["type"] == "decision"}) < 2:
        step = "verify"
    else:
        step = "save"
    return step, counts, best, len(measures) * len(LANES)


async def _resume_in_tui(sessions: Path, sid: str):
    app = EqtuneApp(str(sessions))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.query_one("#sessions").focus()
        await pilot.press("r")
        await app.workers.wait_for_complete()
        for _ in range(3):
            await pilot.pause()
        assert app.last_error == "", app.last_error
        step, status = app.step, app.status_text
        await app.goto("tune")
        await pilot.pause()
        await pilot.pause()
        pane = app.pane("tune")
        table = app.query_one("#tune-lanes")
        rows = {int(str(table.get_row_at(i)[0])): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}
        evals = app.query_one("#evals").row_count
        state = str(app.query_one("#tune-state").render())
        app.ctl.close()
        return step, rows, evals, pane.evaluations, state, status


def test_kill_anywhere_then_tui_resume_shows_the_journal(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    total_events = BUDGET * len(LANES) + len(LANES)  # tuning readings, then the verification readings
    points = sorted(rng.sample(range(1, total_events + 1), 10))
    assert any(p > BUDGET * len(LANES) for p in points) or points.append(total_events) is None
    for i, k in enumerate(points):
        sessions = tmp_path / f"kill{i}"
        sid = f"20261201-2300{i:02d}"
        kind = _kill_at(sessions, sid, k)
        step, counts, best, readings = _expected(sessions, sid)
        got_step, rows, evals, pane_count, state, status = asyncio.run(_resume_in_tui(sessions, sid))
        where = f"kill {i} after reading {k} ({kind})"
        assert got_step == step, (where, status)
        assert evals == readings == pane_count, where  # one row per journaled lane reading
        for ln in LANES:
            assert rows[ln][1] == str(counts[ln]), (where, rows)
            if ln in best:
                assert rows[ln][2] == f"{best[ln]:.2f}", (where, rows)
        assert "not started" not in state, where
        assert f"{sum(counts.values())} of {BUDGET * len(LANES)} lane evaluations journaled" in status, (where, status)


def test_a_resumed_session_shows_why_its_tuning_stopped(tmp_path: Path) -> None:
    """A session whose tuning ended by a stop rule, then interrupted before the verify: the TUI resumed
    from the journal never saw the stop event, yet its Tune step says which rule ended each lane group
    and why (from the journal's last measure record)."""
    from eqtune.session.live import LiveConfig, LiveTuner, load_session

    res = "emu:c2m-10in?seed=23&settle_ms=0&fast=1&adaptive=0&name=tui-resume-stops"
    cfg = LiveConfig(module=res, lanes=[1], dwell_s=0.05, budget=30, seed=4, knobs=["tx_eq"], patience=3)
    t = LiveTuner.create(cfg, sessions_dir=tmp_path)
    t.connect()
    t.baseline()
    t.tune()
    t.close()  # the laptop closed before the verify
    ms = load_session(t.session_id, tmp_path).measurements()
    rule = ms[-1]["stop_rule"]
    assert len(ms) < 30 and rule in ("patience", "settled", "exhausted"), (len(ms), rule)
    step, _rows, _evals, _n, state, _status = asyncio.run(_resume_in_tui(tmp_path, t.session_id))
    assert step == "verify"
    assert f"lanes 1 stopped ({rule})" in " ".join(state.split()), state
