"""SIGKILL a live tune at 20 seeded moments: every resume continues, nothing is lost or repeated.

The moments are journal records, not wall-clock delays: the worker (live_worker.py) stops in front of
the K-th record it would write and waits to be killed, every fourth time after writing half of that
record's line (a crash mid-write). The kill points, and so the outcome, depend on the seed only: the
test holds on a loaded machine, where a random delay once let every kill land after the end.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eqtune.session.journal import read_journal
from eqtune.session.live import SessionView

WORKER = Path(__file__).with_name("live_worker.py")
ROOT = Path(__file__).resolve().parents[2]
BUDGET = 10


def spawn(sessions: Path, action: str, sid: str, pause_at: int = -1, torn: bool = False) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               EQTUNE_TEST_PAUSE_AT=str(pause_at), EQTUNE_TEST_TORN="1" if torn else "0")
    return subprocess.Popen([sys.executable, str(WORKER), str(sessions), action, sid], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def check(path: Path, before: list[dict]) -> list[dict]:
    contents = read_journal(path)  # must always parse (a torn last line is tolerated)
    recs = contents.records
    assert recs[: len(before)] == before, "a completed record was lost or changed"
    for g in {r["group"] for r in recs if r["type"] == "measure"}:
        ns = [r["n"] for r in recs if r["type"] == "measure" and r["group"] == g]
        assert ns == list(range(len(ns))), f"measurements repeated or lost: {ns}"
        assert len(ns) <= BUDGET
    # an evaluation interrupted between its 'apply' and its 'measure' is re-proposed identically
    intents: dict[tuple, dict] = {}
    for r in recs:
        if r["type"] == "apply" and r["phase"] == "tune":
            key, codes = (r["group"], r["n"]), r["codes"]
        elif r["type"] == "measure" and r.get("next"):
            key, codes = (r["group"], r["next"]["n"]), r["next"]["codes"]
        else:
            continue
        if key in intents:
            assert intents[key] == codes, f"resume proposed other codes for evaluation {key}"
        intents[key] = codes
    for r in recs:
        if r["type"] == "measure":
            assert {k: v["codes"] for k, v in r["lanes"].items()} == intents[(r["group"], r["n"])]
    return recs


@pytest.mark.slow
def test_sigkill_twenty_times(tmp_path):
    rng = random.Random(20261129)
    kills = 0
    sessions_done = 0
    sid_n = 0
    sid = None
    before: list[dict] = []
    stats: list[tuple] = []
    spawns = 0
    while kills < 20:
        spawns += 1
        assert spawns < 200, "the seeded kill points never reached 20 kills"
        pause_at = rng.randint(0, 30)  # a session writes ~35 records; a resume fewer
        torn = kills % 4 == 3  # every fourth kill in the middle of a record's write
        if sid is None:
            sid_n += 1
            sid = f"kill{sid_n:02d}"
            before = []
            p = spawn(tmp_path, "start", sid, pause_at, torn)
        else:
            p = spawn(tmp_path, "resume", sid, pause_at, torn)
        line = p.stdout.readline()
        assert line.strip() == "ready", p.stderr.read()
        line = p.stdout.readline()  # "paused" (waiting to be killed) or "status ..." (finished first)
        if line.strip() == "paused":
            p.send_signal(signal.SIGKILL)
            kills += 1
        out, err = p.communicate(timeout=300)
        out = line + out
        path = tmp_path / sid / "journal.jsonl"
        if not path.exists():  # killed before the session record: start that session again
            sid_n -= 1
            sid = None
            continue
        before = check(path, before)
        if not before:  # killed while the very first record was being written: nothing to resume
            with pytest.raises(Exception, match="no complete record"):
                from eqtune.session.journal import Journal

                Journal.open(sid, tmp_path)
            sid = None
            continue
        stats.append((sid, len([r for r in before if r["type"] == "measure"]), before[-1]["type"],
                      read_journal(path).torn is not None))
        assert p.returncode in (0, -signal.SIGKILL), err
        if p.returncode == 0:
            assert "status done" in out, err
        if SessionView(before).status() == "done":
            sessions_done += 1
            sid = None
    print("kill points (session, measurements, last record, torn):", stats)
    assert kills == 20
    # the kills landed in different phases (not all before the first measurement)
    assert len({s[1] for s in stats}) >= 3
    # finish the last interrupted session without a kill
    if sid is not None:
        p = spawn(tmp_path, "resume", sid)
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and "status done" in out, err
        before = check(tmp_path / sid / "journal.jsonl", before)
    assert sum(s[3] for s in stats) >= 4, "the torn kills did not leave torn lines"
    assert list(tmp_path.glob("kill*/journal.torn-*")), "no torn line was set aside on resume"
    for path in tmp_path.glob("kill*/journal.jsonl"):
        view = SessionView(read_journal(path).records)
        if view.status() != "done":
            continue
        recs = view.records
        assert len([r for r in recs if r["type"] == "measure"]) == BUDGET
        assert len(view.decisions()) == 2
        resumes = [r for r in recs if r["type"] == "resume"]
        assert all(r["measurements"] <= BUDGET for r in resumes)
