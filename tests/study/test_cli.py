"""``eqtune study``: one-line errors (exit 2), bad rows named after the rest of the study ran."""

from __future__ import annotations

import json

from click.testing import CliRunner

from eqtune.cli import main


def test_study_cli_synthetic_runs_and_resumes(synth_spec_path, tmp_path):
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(out), "--backend", "synthetic",
                                  "--workers", "1", "-q"])
    assert r.exit_code == 0, r.output
    assert "24/24 combinations (24 computed now, 0 from earlier runs)" in r.output
    assert (out / "report.html").exists() and (out / "summary.json").exists()
    r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(out), "--backend", "synthetic",
                                  "--workers", "1", "-q"])
    assert r.exit_code == 2 and "--resume" in r.output
    r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(out), "--backend", "synthetic",
                                  "--workers", "1", "-q", "--resume", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["computed_this_run"] == 0


def test_malformed_spec_is_one_line_exit_2(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('[[channels]]\nbase = "c2m-10in"\nsweep.length_in = [4, "long"]\n')
    r = CliRunner().invoke(main, ["study", str(p), "--out", str(tmp_path / "o"), "--backend", "synthetic"])
    assert r.exit_code == 2
    assert r.output.strip().count("\n") == 0
    assert "channels[0].sweep.length_in[1]" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "o").exists()


def test_bad_fleet_row_is_named_and_the_rest_is_studied(tmp_path):
    csv = tmp_path / "links.csv"
    csv.write_text("server,port,lane,host_trace_in,module_pn,module_vendor\n"
                   "s1,p1,1,5,PN,V\ns1,p1,2,five,PN,V\ns1,p1,3,6,PN,V\n")
    r = CliRunner().invoke(main, ["study", str(csv), "--out", str(tmp_path / "o"), "--backend", "synthetic",
                                  "--workers", "1", "-q"])
    assert r.exit_code == 2
    assert "links.csv row 2 (line 3) field 'host_trace_in'" in r.output
    rows = (tmp_path / "o" / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 2
    assert (tmp_path / "o" / "profiles" / "s1_p1_PN.json").exists()


def test_study_cli_on_a_dask_scheduler(synth_spec_path, tmp_path):
    distributed = __import__("pytest").importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  ) as cluster:
        r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(tmp_path / "o"), "--backend",
                                      "synthetic", "--scheduler", cluster.scheduler_address, "-q", "--no-report"])
    assert r.exit_code == 0, r.output
    assert f"on dask {cluster.scheduler_address}" in r.output


def test_unreachable_scheduler_is_one_line(synth_spec_path, tmp_path):
    r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(tmp_path / "o"), "--backend",
                                  "synthetic", "--scheduler", "tcp://127.0.0.1:9", "-q"])
    assert r.exit_code == 2, r.output
    assert "cannot reach the dask scheduler 'tcp://127.0.0.1:9'" in r.output


def test_spec_broken_between_runs_keeps_results(synth_spec_path, tmp_path):
    from eqtune.study import load_spec, run_study
    from eqtune.study.store import ResultStore
    from eqtune.study.synthetic import synthetic

    out = tmp_path / "o"
    spec = load_spec(synth_spec_path)
    spec.combinations = spec.combinations[:10]  # as if interrupted after 10
    run_study(spec, out, compute=synthetic, report=False)
    before = (out / "results.csv").read_text()
    good = synth_spec_path.read_text()
    synth_spec_path.write_text(good.replace('["megtron6", "fr4"]', '["megtron6", 4]'))
    r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(out), "--backend", "synthetic",
                                  "--resume", "-q"])
    assert r.exit_code == 2 and "channels[0].sweep.material[1]" in r.output
    assert (out / "results.csv").read_text() == before
    synth_spec_path.write_text(good)
    r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(out), "--backend", "synthetic",
                                  "--resume", "-q", "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "24/24 combinations (14 computed now, 10 from earlier runs)" in r.output
    assert len(ResultStore(out).rows()) == 24


def test_progress_and_eta_count_this_runs_rows_on_every_executor(synth_spec_path, tmp_path):
    """Progress lines (stderr not a terminal) carry an ETA; on a resumed study it is based on the rows of
    this run, not on the rows stored earlier; on a dask cluster the same lines appear."""
    distributed = __import__("pytest").importorskip("distributed")
    from eqtune.study import load_spec, run_study
    from eqtune.study.synthetic import synthetic

    out = tmp_path / "o"
    spec = load_spec(synth_spec_path)
    spec.combinations = spec.combinations[:12]  # as if interrupted after 12 of 24
    run_study(spec, out, compute=synthetic, report=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  ) as cluster:
        r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(out), "--backend", "synthetic",
                                      "--scheduler", cluster.scheduler_address, "--resume", "--no-report"])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("study: ")]
    assert lines and lines[-1].startswith("study: 24/24 (100 %)") and " done " in lines[-1]
    assert any("eta " in x for x in lines[:-1]), lines


def test_eta_ignores_rows_of_earlier_runs():
    from eqtune.study.progress import StudyEta

    now = [100.0]
    eta = StudyEta(1000, window=10, clock=lambda: now[0])
    eta.update(900)  # the first row of a resumed study: 899 were stored earlier
    assert eta.seconds_left() is None and eta.text() == "eta --"
    for done in range(901, 911):
        now[0] += 2.0  # one row every 2 s
        eta.update(done)
    assert eta.rate() == __import__("pytest").approx(0.5)
    assert eta.seconds_left() == __import__("pytest").approx(90 * 2.0)
    assert eta.text().startswith("eta 3m00s")
    eta.update(910)  # the same count again changes nothing
    assert eta.computed == 11


def test_eta_of_rows_arriving_in_bursts_uses_the_time_span():
    from eqtune.study.progress import StudyEta

    now = [0.0]
    eta = StudyEta(100_000, window=50, span_s=30.0, clock=lambda: now[0])
    done = 0
    for _burst in range(40):  # a chunk of 200 rows every 2 s: 100 rows/s
        now[0] += 2.0
        for _ in range(200):
            done += 1
            eta.update(done)
    # the last 50 rows came in one burst (a zero span); the rate is the one of the last 30 s
    assert eta.rate() == __import__("pytest").approx(100.0, rel=0.01)
    assert eta.seconds_left() == __import__("pytest").approx((100_000 - done) / 100.0, rel=0.01)


def test_study_query_ranks_by_corner_from_the_store(synth_spec_path, tmp_path):
    from eqtune.study.store import ResultStore

    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["study", str(synth_spec_path), "--out", str(out), "--backend", "synthetic",
                                  "--workers", "1", "-q", "--no-report"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["study", "query", str(out), "--worst", "5", "--corner", "85C", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)  # one JSON document
    rows = ResultStore(out).rows()
    at85 = sorted((json.loads(x["corner_margins"])["85C"]["robust"], x["id"]) for x in rows)[:5]
    assert [w["id"] for w in doc["worst"]] == [i for _m, i in at85]
    assert [w["robust_margin"] for w in doc["worst"]] == [m for m, _i in at85]
    assert doc["rows_in_store"] == 24 and all(w["corner"] == "85C" for w in doc["worst"])
    r = CliRunner().invoke(main, ["study", "query", str(out), "--worst", "3", "--csv", str(tmp_path / "x.csv")])
    assert r.exit_code == 0 and r.output.startswith("3 worst of 24 combinations")
    assert (tmp_path / "x.csv").read_text() == (out / "results.csv").read_text()
    r = CliRunner().invoke(main, ["study", "query", str(out), "--corner", "105C"])
    assert r.exit_code == 2 and r.output.strip().count("\n") == 0
    assert "corner '105C' is not in this study; its corners: 25C, 85C" in r.output
    r = CliRunner().invoke(main, ["study", "query", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "holds no study results" in r.output
