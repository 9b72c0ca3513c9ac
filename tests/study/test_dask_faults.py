"""A dask worker killed mid-study (SIGKILL by PID, on a LocalCluster of worker processes) loses
nothing and duplicates nothing.

The kill window is made, not hoped for: the study's progress callback, which runs after a row is
stored, kills a worker the scheduler reports as processing a task, once the first results are in.
Each synthetic combination lasts 0.2 s, so the victim is inside a task when it dies; with 4
combinations a task it dies inside a chunk whose first rows it has computed but not delivered.
"""

from __future__ import annotations

import os
import signal

import pytest

from eqtune.study import load_spec, run_study
from eqtune.study.store import ResultStore
from eqtune.study.synthetic import synthetic


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [None, 4])  # automatic chunks (2 here), and 4 combinations a task
def test_a_killed_dask_worker_loses_and_duplicates_nothing(chunk, synth_spec_path, tmp_path):
    distributed = pytest.importorskip("distributed")
    log = tmp_path / "computed.log"
    spec = load_spec(synth_spec_path)
    all_ids = {c.id for c in spec.combinations}
    env = {"EQTUNE_STUDY_TEST_DELAY": "0.2", "EQTUNE_STUDY_TEST_LOG": str(log)}
    killed: dict[str, int] = {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  env=env) as cluster, distributed.Client(cluster) as client:
        pids = client.run(os.getpid)  # worker address -> PID

        delivered: set[int] = set()

        def progress(row, done: int, total: int) -> None:
            delivered.add(int(row["worker"].rsplit(":", 1)[1]))
            if killed or done < 3:
                return
            # a worker that has delivered rows and is inside a task now
            busy = [pids[a] for a, keys in client.processing().items() if keys and pids.get(a) in delivered]
            if busy:
                killed["pid"] = busy[0]
                killed["at"] = done
                os.kill(killed["pid"], signal.SIGKILL)

        res = run_study(spec, tmp_path / "out", client=client, compute=synthetic, progress=progress, report=False,
                        chunk=chunk)
    assert killed and killed["at"] < len(all_ids) - 4, f"the worker was not killed mid-study: {killed}"
    with pytest.raises(ProcessLookupError):
        os.kill(killed["pid"], 0)  # it is gone
    rows = ResultStore(tmp_path / "out").rows()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == len(all_ids) and set(ids) == all_ids  # nothing lost, nothing twice
    assert res.summary["complete"] and res.summary["duplicates_refused"] == 0
    assert all(r["status"] == "ok" for r in rows)
    workers = {r["worker"].rsplit(":", 1)[1] for r in rows}
    assert str(killed["pid"]) in workers, "the killed worker had delivered rows before it died"
    assert len(workers) >= 2
    # the CSV export holds the same rows, once each
    lines = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert len(lines) == len(all_ids) + 1
    computed = log.read_text().splitlines()
    assert set(computed) == all_ids and len(computed) >= len(all_ids)
