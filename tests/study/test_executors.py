"""One code path, three executors: identical results serially, on 2 local processes and on dask."""

from __future__ import annotations

import pytest

from eqtune.study import load_spec, run_study
from eqtune.study.store import ResultStore, comparable
from eqtune.study.synthetic import synthetic, synthetic_detail


def _run(spec, out, **kw):
    return run_study(spec, out, compute=synthetic, detail=synthetic_detail, **kw)


def test_serial_processes_and_dask_give_identical_rows(synth_spec_path, tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = load_spec(synth_spec_path)
    assert len(spec.combinations) >= 20
    serial = _run(spec, tmp_path / "serial", workers=1)
    procs = _run(spec, tmp_path / "procs", workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  ) as cluster, distributed.Client(cluster) as client:
        dask = _run(spec, tmp_path / "dask", client=client)
    assert serial.summary["executor"].startswith("serial")
    assert procs.summary["executor"] == "2 local processes"
    assert dask.summary["executor"].startswith("dask")
    rows = [ResultStore(r.out_dir).rows() for r in (serial, procs, dask)]
    assert all(len(r) == len(spec.combinations) for r in rows)
    assert comparable(rows[0]) == comparable(rows[1]) == comparable(rows[2])
    assert all(r["status"] == "ok" for r in rows[0])
    assert (tmp_path / "dask" / "report.html").read_text().count("<img") >= 2


def test_existing_results_need_resume(synth_spec_path, tmp_path):
    from eqtune.errors import InputError

    spec = load_spec(synth_spec_path)
    _run(spec, tmp_path / "o", workers=1, report=False)
    with pytest.raises(InputError, match="--resume"):
        _run(spec, tmp_path / "o", workers=1)
    again = _run(spec, tmp_path / "o", workers=1, resume=True, report=False)
    assert again.computed == 0 and again.skipped == len(spec.combinations)


def test_a_failing_combination_does_not_lose_the_study(tmp_path):
    from eqtune.study.spec import parse_spec

    spec = parse_spec({"channels": [{"base": "c2m-10in", "sweep": {"length_in": [4, 8], "material": ["megtron6",
                                                                                                  "unobtainium"]}}]},
                      base_dir=tmp_path)
    res = _run(spec, tmp_path / "o", workers=1)
    status = {r["channel"]: r["status"] for r in res.rows}
    assert list(status.values()).count("error") == 2 and list(status.values()).count("ok") == 2
    err = next(r["error"] for r in res.rows if r["status"] == "error")
    assert "unobtainium" in err and "c2m-10in 4in unobtainium" in err
    assert res.summary["complete"] and len(res.summary["errors"]) == 2
