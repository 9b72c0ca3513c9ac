"""``eqtune tune``: simulation runs, JSON, profile, plot, errors, live delegation."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eqtune.cli import main


def _run(*args: str):
    return CliRunner().invoke(main, ["tune", *args])


def test_sim_json(tmp_path):
    prof = tmp_path / "p.json"
    r = _run("c2m-10in", "--sim", "--optimizer", "gp", "--budget", "12", "--seed", "3", "--json", "--save-profile",
             str(prof))
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert set(d) >= {"baseline", "tuned", "evaluations", "history"}
    assert d["evaluations"] == 12 == len(d["history"])
    assert d["tuned"]["margin"] >= d["baseline"]["margin"]
    assert set(d["tuned"]["codes"]) == {"rx_pre", "rx_post", "rx_amp"}
    assert d["seed"] == 3 and d["knobs"] == ["rx_pre", "rx_post", "rx_amp"]
    # module codes: a session profile (digest-checked by its own loader)
    from eqtune.session.profile import Profile

    loaded = Profile.load(prof)
    assert loaded.lanes[1] == d["tuned"]["codes"]


def test_sim_text_corners_and_plot(tmp_path):
    png = tmp_path / "t.png"
    r = _run("c2m-10in", "--knobs", "rx_pre,rx_post", "--corners", "25C,85C", "--budget", "10", "--seed", "1",
             "--plot", str(png))
    assert r.exit_code == 0, r.output
    for word in ("baseline", "tuned", "evaluations", "worst corner", "85C"):
        assert word in r.output
    assert png.stat().st_size > 10_000


def test_tx_ffe_alias_writes_plain_json(tmp_path):
    out = tmp_path / "codes.json"
    r = _run("c2m-4in", "--knobs", "tx_ffe", "--fix", "tx_eq=4", "--budget", "8", "--seed", "0", "--json",
             "--save-profile", str(out))
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["schema"] == "eqtune.tuned-codes" and set(doc["codes"]) == {"tx_cm1", "tx_c1"}


def test_errors_name_the_option():
    cases = [
        (["c2m-10in", "--knobs", "rx_pre,foo"], "--knobs"),
        # the GP named: without --optimizer a budget below its design measures the (small) grid instead
        (["c2m-10in", "--optimizer", "gp", "--budget", "2"], "--budget"),
        (["c2m-10in", "--corners", "25C,hot"], "--corners"),
        (["c2m-10in", "--objective", "snr"], "--objective"),
        (["c2m-10in", "--module", "emu:c2m-10in"], "--live"),
        (["c2m-10in", "--start", "rx_pre"], "--start"),
        ([], "CHANNEL"),
    ]
    for args, word in cases:
        r = _run(*args)
        assert r.exit_code == 2, (args, r.output)
        assert word in r.output and "Traceback" not in r.output, (args, r.output)


def _capture_live(monkeypatch) -> dict:
    """Replace the live run (not the option handling) and keep what `eqtune tune --live` built."""
    import eqtune.cli.live_cmd as live_cmd

    got: dict = {}
    monkeypatch.setattr(live_cmd, "run_live", lambda cfg, **kw: got.update(cfg=cfg, **kw) or {})
    return got


def test_live_is_delegated(monkeypatch):
    got = _capture_live(monkeypatch)
    r = _run("c2m-10in", "--live", "--module", "emu:c2m-10in", "--lane", "1,2", "--lane", "4", "--module-ber",
             "--dwell", "0.5", "--session", "s1", "--sessions", "/tmp/x", "--budget", "20")
    assert r.exit_code == 0, r.output
    cfg = got["cfg"]
    assert cfg.module == "emu:c2m-10in" and cfg.lanes == [1, 2, 4] and cfg.instrument is None  # module BER
    assert cfg.dwell_s == 0.5 and got["session"] == "s1" and got["sessions"] == "/tmp/x" and cfg.budget == 20
    assert cfg.channel == "c2m-10in" and got["as_json"] is False


def test_live_forwards_journal_options_and_budget_default(monkeypatch):
    got = _capture_live(monkeypatch)
    r = _run("--live", "--module", "emu:c2m-10in", "--lane", "1", "--module-ber", "--site", "S", "--customer", "C",
             "--link", "L", "--operator", "O", "--verify-dwell", "2", "--metric", "q_db", "--target-ber", "1e-9",
             "--settle", "0.1")
    assert r.exit_code == 0, r.output
    cfg = got["cfg"]
    assert cfg.metadata == {"site": "S", "customer": "C", "link": "L", "operator": "O"}
    assert cfg.verify_dwell_s == 2.0 and cfg.metric == "q_db" and cfg.target_ber == 1e-9
    assert cfg.settle_s == 0.1 and cfg.budget == 30  # live default budget
    # no --dwell: zero errors in -ln(0.05)/BER bits (95 %) at 106.25 Gb/s: 2.9957e9 / 106.25e9 = 0.0282 s
    assert cfg.dwell_s == pytest.approx(2.9957 / 106.25, rel=1e-3)
    r = _run("c2m-10in", "--sim", "--site", "S")
    assert r.exit_code == 2 and "--site" in r.output
    help_text = _run("--help").output
    assert "60 with --sim" in help_text and "30 with --live" in help_text and "[live] Site" in help_text


def test_sim_budget_default_is_60(monkeypatch):
    import eqtune.tune as tune_pkg

    got = {}

    def fake_tune(src, **kw):
        got.update(kw)
        raise SystemExit(0)

    monkeypatch.setattr(tune_pkg, "tune", fake_tune)
    r = _run("c2m-10in", "--sim", "--optimizer", "gp")  # (automatic: the grid when it costs less, see below)
    assert r.exit_code == 0, r.output
    assert got["budget"] == 60


def test_live_emulated_run_journals_site(tmp_path):
    from eqtune.session.live import load_session

    r = _run("--live", "--module", "emu:c2m-10in?fast=1&adaptive=0&settle_ms=0", "--lane", "1", "--module-ber",
             "--budget", "4", "--site", "X", "--seed", "2", "--dwell", "0.05", "--sessions", str(tmp_path),
             "--session", "cli-site", "--json")
    assert r.exit_code == 0, r.output
    view = load_session("cli-site", tmp_path)
    assert view.header["metadata"]["site"] == "X"
    assert len(view.measurements()) == 4


def test_optimizer_options_reach_the_optimizer():
    """--optimizer-option is typed, passed to the GP and recorded: n_initial=4 gives 4 design points
    (baseline included) where the 3-knob default is 5."""
    def design(*extra):
        r = _run("c2m-10in", "--sim", "--optimizer", "gp", "--budget", "8", "--seed", "5", "--json", *extra)
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        return d, sum(1 for h in d["history"] if h["phase"] in ("baseline", "initial"))

    d0, n0 = design()
    d1, n1 = design("--optimizer-option", "n_initial=4", "--optimizer-option", "noise=false,ls_prior=0")
    assert (n0, n1) == (5, 4)
    assert "optimizer_options" not in d0
    assert d1["optimizer_options"] == {"n_initial": 4, "noise": False, "ls_prior": 0.0}


def test_optimizer_option_errors_name_the_option():
    cases = [
        (["--optimizer-option", "foo=1"], "no such option (options: acq,"),
        (["--optimizer-option", "ls_prior=abc"], "ls_prior=abc: expected a finite number"),
        (["--optimizer-option", "noise=maybe"], "noise=maybe: expected true or false"),
        (["--optimizer-option", "n_candidates=-1"], "n_candidates=-1: must be >= 0"),
        (["--optimizer-option", "ls_prior"], "give name=value"),
        (["--optimizer", "random", "--optimizer-option", "xi=1"], "'random' optimizer has no such option"),
    ]
    for args, text in cases:
        r = _run("c2m-10in", "--sim", "--budget", "8", *args)
        assert r.exit_code == 2, (args, r.output)
        assert "--optimizer-option" in r.output and text in r.output and "Traceback" not in r.output, (args, r.output)


def test_live_run_journals_optimizer_options(tmp_path):
    """A live session records its optimizer options, so a resumed session rebuilds the same optimizer;
    an unknown option in a config is refused before any I/O."""
    import pytest

    from eqtune.errors import InputError
    from eqtune.session.live import LiveConfig, load_session

    r = _run("--live", "--module", "emu:c2m-10in?fast=1&adaptive=0&settle_ms=0", "--lane", "1", "--module-ber",
             "--budget", "4", "--seed", "2", "--dwell", "0.05", "--sessions", str(tmp_path), "--session", "opt",
             "--optimizer-option", "n_initial=3", "--json")
    assert r.exit_code == 0, r.output
    view = load_session("opt", tmp_path)
    assert LiveConfig.from_dict(view.header["config"]).optimizer_options == {"n_initial": 3}
    assert view.plan()["optimizer_options"] == {"n_initial": 3}
    with pytest.raises(InputError, match="bogus"):
        LiveConfig(module="emu:c2m-10in", optimizer_options={"bogus": 1}).check()


def test_sim_search_is_exhaustive_when_the_grid_costs_less_and_says_so(monkeypatch):
    """--sim without --optimizer: the whole grid in one batch when it costs no more time than the
    budgeted GP run, else the GP; the JSON and the text say which, and why."""
    import eqtune.tune.plan as plan

    monkeypatch.setattr(plan, "GP_STEP_S", 10.0)  # GP steps made expensive: the 256-code grid wins
    r = _run("c2m-10in", "--sim", "--budget", "20", "--seed", "1", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["search"]["mode"] == "exhaustive" and d["search"]["feasible"] == 256
    assert d["optimizer"] == "grid" and d["evaluations"] == 256 and d["stop_reason"] == "exhausted"
    assert d["tuned"]["margin"] == max(h["margin"] for h in d["history"])  # the grid optimum
    monkeypatch.setattr(plan, "GP_STEP_S", 0.0)
    monkeypatch.setattr(plan, "LOOP_S", 1.0)  # grid points made expensive: the GP wins
    r = _run("c2m-10in", "--sim", "--budget", "20", "--seed", "1")
    assert r.exit_code == 0, r.output
    assert "search       gp:" in r.output and "cost less than the whole grid (256 codes" in r.output
    # ... and how to get the exact optimum anyway (multi-modal 6-knob spaces: docs/tuning.md)
    assert "for the exact optimum: --optimizer grid --budget 256" in " ".join(r.output.split())
    assert "evaluations  20 of 20" in r.output
    r = _run("c2m-10in", "--sim", "--budget", "20", "--seed", "1", "--patience", "3", "--json")
    assert json.loads(r.stdout)["search"]["reason"] == "--patience given: the GP"
