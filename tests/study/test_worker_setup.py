"""A dask worker's set-up: malloc thresholds set over dask's MALLOC_TRIM_THRESHOLD_, one BLAS thread,
and, as the load-independent proof, page faults per task like a plain process's (not 100x more)."""

from __future__ import annotations

import statistics

import pytest

from eqtune.study import run_study
from eqtune.study.compute import simulate
from eqtune.study.spec import parse_spec
from eqtune.study.worker import prepare_worker


def _spec(tmp_path):
    return parse_spec({"channels": [{"base": "c2m-4in", "sweep": {"length_in": [4, 5, 6, 7, 8, 9]}}],
                       "tune": {"knobs": ["rx_post", "rx_amp"]}, "study": {"ber_floor": [1e-12]}}, base_dir=tmp_path)


def _profiler_running(dask_worker) -> bool:
    return bool(dask_worker.periodic_callbacks["profile"].is_running())


def _faults(res) -> float:
    rows = res.rows[1:]  # the first task of a process also imports and builds caches
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    return statistics.median(int(r["page_faults"]) for r in rows)


@pytest.mark.slow
def test_dask_worker_tasks_fault_like_a_plain_process(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = _spec(tmp_path)
    # the baseline runs in fresh worker processes (a local pool), as a dask worker does: the pytest process
    # itself has a heap warmed by every earlier test, so its own page faults per task say nothing
    serial = _faults(run_study(spec, tmp_path / "serial", workers=2, compute=simulate, report=False))
    per_setting = {}
    for malloc in ("set", "leave"):
        env = {"EQTUNE_STUDY_MALLOC": "leave"} if malloc == "leave" else {}
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                                      env=env) as cluster, distributed.Client(cluster) as client:
            profiling: list[bool] = []

            def progress(row, done, total, client=client, profiling=profiling):
                profiling.extend(client.run(_profiler_running).values())

            res = run_study(spec, tmp_path / malloc, client=client, compute=simulate, report=False, progress=progress)
            settings = client.submit(prepare_worker, pure=False).result()
            # dask's profiler is paused while the study runs, and runs again after it
            assert profiling and not any(profiling)
            assert all(client.run(_profiler_running).values())
        per_setting[malloc] = (_faults(res), settings)
    (set_faults, set_info), (left_faults, left_info) = per_setting["set"], per_setting["leave"]
    assert set_info["env_trim_threshold"] == "65536"  # dask's nanny did set it
    assert set_info["malloc"] == "set" and set_info["blas_threads"] == 1
    assert left_info["malloc"].startswith("left")
    # as started by dask, malloc maps and zero-fills the engine's arrays on every allocation
    assert left_faults > 10 * serial, (left_faults, serial)
    # set up, a dask worker's task faults like a task of the serial study (within 2x)
    assert set_faults < 2 * serial, (set_faults, serial)
