"""Interrupt a study running in a subprocess (SIGINT, SIGKILL) and resume it.

Checks: every combination is in the store exactly once after the resume, none is missing, and
no combination whose row was written before the interruption is computed again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eqtune.study import load_spec
from eqtune.study.store import ResultStore


def _start(spec: Path, out: Path, log: Path, workers: int, *extra: str, gate: Path | None = None) -> subprocess.Popen:
    env = dict(os.environ, EQTUNE_STUDY_TEST_DELAY="0.12", EQTUNE_STUDY_TEST_LOG=str(log), PYTHONUNBUFFERED="1")
    if gate is not None:  # computations after the 6th wait for the gate file: the study cannot finish first
        env["EQTUNE_STUDY_TEST_GATE"] = f"6:{gate}"
    cmd = [sys.executable, "-m", "eqtune", "study", str(spec), "--out", str(out), "--backend", "synthetic",
           "--workers", str(workers), "--no-report", "-q", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.mark.parametrize("sig, workers", [(signal.SIGINT, 1), (signal.SIGKILL, 1), (signal.SIGINT, 2),
                                          (signal.SIGKILL, 2)])
def test_interrupt_and_resume(sig, workers, synth_spec_path, tmp_path):
    spec = load_spec(synth_spec_path)
    all_ids = {c.id for c in spec.combinations}
    out, log = tmp_path / "out", tmp_path / "computed.log"
    # two combinations per task with 2 workers: chunked tasks are interrupted and resumed too
    chunk = ("--chunk", "2") if workers > 1 else ()
    gate = tmp_path / "gate.open"
    proc = _start(synth_spec_path, out, log, workers, *chunk, gate=gate)
    deadline = time.time() + 60
    # Six computations finished: every later one now waits at the gate, so the study is held part-way
    # (the signal cannot come too late, however loaded the machine is).
    while not log.exists() or len(log.read_text().splitlines()) < 6:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "study did not start"
        time.sleep(0.02)
    os.killpg(proc.pid, sig)  # the whole process group, as a terminal's Ctrl-C / an OOM kill would
    gate.touch()  # after Ctrl-C the running tasks may finish; no new one starts
    stdout, stderr = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert "--resume" in stderr
    else:
        assert proc.returncode == -signal.SIGKILL
    before = ResultStore(out).done_ids()
    # Ctrl-C saves every finished computation; a SIGKILL loses the rows not yet committed (they are
    # computed again on resume, checked below)
    assert len(before) < len(all_ids)
    if sig == signal.SIGINT:
        assert len(before) >= 6
    n_log_before = len(log.read_text().splitlines())

    proc = _start(synth_spec_path, out, log, workers, "--resume", *chunk)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    rows = ResultStore(out).rows()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == len(all_ids), "a combination is missing or written twice"
    assert set(ids) == all_ids
    recomputed = log.read_text().splitlines()[n_log_before:]
    assert not set(recomputed) & before, "a finished combination was computed again"
    assert set(recomputed) == all_ids - before
    if sig == signal.SIGINT:
        # Ctrl-C lets running tasks finish and saves them: nothing at all is computed twice
        lines = log.read_text().splitlines()
        assert len(lines) == len(set(lines)) == len(all_ids)
    assert f"{len(all_ids) - len(before)} computed now, {len(before)} from earlier runs" in stdout
