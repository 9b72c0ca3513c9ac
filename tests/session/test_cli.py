"""The session / profile / demo command lines (click runner, in process, emulated hardware)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from eqtune.cli import main
from eqtune.session.live import LiveConfig, LiveTuner, load_session


def run(*args):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


def test_demo_then_session_and_profile_commands(tmp_path):
    code, out = run("demo", "--sessions", str(tmp_path), "--quiet", "--seed", "21")
    assert code == 0, out
    assert "baseline" in out and "tuned" in out and "report:" in out
    sid = next(p.name for p in tmp_path.iterdir() if p.is_dir())
    sdir = tmp_path / sid
    assert (sdir / "journal.jsonl").is_file() and (sdir / "profile.json").is_file()
    html = (sdir / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html
    assert "<script" not in html and "http://" not in html and "https://" not in html

    code, out = run("session", "list", "--sessions", str(tmp_path))
    assert code == 0 and sid in out and "done" in out
    code, out = run("session", "list", "--sessions", str(tmp_path), "--json")
    assert json.loads(out)[0]["id"] == sid
    code, out = run("session", "show", sid, "--sessions", str(tmp_path))
    assert code == 0 and "lane 1: baseline" in out
    code, out = run("session", "report", sid, "--sessions", str(tmp_path), "--out", str(tmp_path / "r.html"))
    assert code == 0 and (tmp_path / "r.html").is_file()
    code, out = run("session", "resume", sid, "--sessions", str(tmp_path))
    assert code == 2 and "complete" in out

    prof = tmp_path / "p.json"
    code, out = run("profile", "save", sid, "--out", str(prof), "--sessions", str(tmp_path))
    assert code == 0 and "sha256" in out
    code, out = run("profile", "show", str(prof))
    assert code == 0 and "integrity ok" in out and "lane 1:" in out
    res = "emu:c2m-10in?seed=21&settle_ms=0&fast=1&name=cli-push&adaptive=0"
    code, out = run("profile", "verify", str(prof), "--module", res)
    assert code == 0 and "differs" in out
    code, out = run("profile", "push", str(prof), "--module", res, "--dry-run")
    assert code == 0 and "dry-run" in out
    code, out = run("profile", "push", str(prof), "--module", res, "--json")
    assert code == 0 and json.loads(out)["counts"] == {"applied": 1}
    code, out = run("profile", "verify", str(prof), "--module", res)
    assert code == 0 and "holds the profile codes" in out

    text = prof.read_text()
    prof.write_text(text.replace('"tx_eq": ', '"tx_eq":  ', 1))
    code, out = run("profile", "push", str(prof), "--module", res)
    assert code == 2 and out.count("\n") == 1 and out.startswith("eqtune: error: ")


def test_bad_ids_and_missing_things_are_one_line_errors(tmp_path):
    for args in (["session", "show", "../etc"], ["session", "report", "a/b"], ["session", "resume", "nope"],
                 ["profile", "show", str(tmp_path / "missing.json")],
                 ["profile", "save", "nope", "--out", str(tmp_path / "x.json")]):
        code, out = run(*args, "--sessions", str(tmp_path)) if args[0] == "session" or args[1] == "save" else run(*args)
        assert code == 2 and out.startswith("eqtune: error: ") and out.count("\n") == 1, (args, out)


def test_resume_an_aborted_session_from_the_cli(tmp_path):
    res = "emu:c2m-10in?seed=22&settle_ms=0&fast=1&name=cli-resume&adaptive=0"
    holder = {}

    def on_event(ev):
        if ev.kind == "evaluation" and ev.data["n"] == 2:
            holder["t"].abort("closing the laptop")

    cfg = LiveConfig(module=res, lanes=[1], dwell_s=0.01, budget=6, seed=3)
    holder["t"] = t = LiveTuner.create(cfg, sessions_dir=tmp_path, on_event=on_event)
    assert t.run().status == "aborted"
    code, out = run("session", "resume", t.session_id, "--sessions", str(tmp_path), "--quiet")
    assert code == 0, out
    view = load_session(t.session_id, tmp_path)
    assert view.status() == "done"
    ms = view.measurements()  # no evaluation lost or repeated; the group ends by a journaled rule
    assert [m["n"] for m in ms] == list(range(len(ms))) and len(ms) > 3
    assert ms[-1]["stop_rule"] in ("budget", "settled", "exhausted") and (len(ms) == 6) == (ms[-1]["stop_rule"] == "budget")


def test_tune_live_entry_point(tmp_path):
    """`eqtune tune --live` (the tuning engineer's command) runs the journaled live tuner."""
    res = "emu:c2m-10in?seed=23&settle_ms=0&fast=1&name=cli-tune-live&adaptive=0"
    prof = tmp_path / "p.json"
    code, out = run("tune", "c2m-10in", "--live", "--module", res, "--lane", "1,2", "--module-ber",
                    "--dwell", "0.05", "--budget", "8", "--seed", "4", "--sessions", str(tmp_path),
                    "--session", "site-a", "--json", "--save-profile", str(prof))
    assert code == 0, out
    d = json.loads(out[out.index("{"):])
    assert d["session"] == "site-a" and d["status"] == "done" and set(d["lanes"]) == {"1", "2"}
    assert d["profile"] == str(prof) and prof.is_file()
    view = load_session("site-a", tmp_path)
    assert view.plan()["groups"] == [[1, 2]]
    # the budget of 8 evaluations, or fewer when a journaled stop rule ends the search early (settled)
    ms = view.measurements()
    rule = ms[-1].get("stop_rule") if ms[-1].get("stop") else None
    assert len(ms) == 8 or (2 <= len(ms) < 8 and rule in ("settled", "exhausted", "patience")), (len(ms), rule)


def test_tune_live_passes_patience_and_remeasure_through(tmp_path):
    """--patience and --remeasure reach the live loop (they were once accepted and silently ignored)."""
    res = "emu:c2m-10in?seed=25&settle_ms=0&fast=1&name=cli-tune-live-pat&adaptive=0"
    code, out = run("tune", "c2m-10in", "--live", "--module", res, "--lane", "1", "--module-ber",
                    "--dwell", "0.05", "--budget", "30", "--seed", "4", "--sessions", str(tmp_path),
                    "--session", "pat", "--patience", "3", "--remeasure", "2", "--json")
    assert code == 0, out
    view = load_session("pat", tmp_path)
    assert view.config.patience == 3 and view.config.remeasure_top_k == 2
    ms = view.measurements()
    assert len(ms) < 30 and "patience" in ms[-1]["stop"]
    code, out = run("tune", "c2m-10in", "--live", "--module", res, "--lane", "1", "--module-ber",
                    "--budget", "5", "--remeasure", "5", "--sessions", str(tmp_path))
    assert code == 2 and "--remeasure" in out and out.count("\n") == 1


def test_session_show_eye_draws_the_model_eye_of_the_held_codes(tmp_path):
    code, _ = run("demo", "--sessions", str(tmp_path), "--quiet", "--seed", "3")
    assert code == 0
    sid = next(p.name for p in tmp_path.iterdir() if p.is_dir())
    code, out = run("session", "show", sid, "--sessions", str(tmp_path), "--eye")
    assert code == 0, out
    lines = out.splitlines()
    cap = next(i for i, ln in enumerate(lines) if "model eye, lane 1" in ln)
    held = load_session(sid, tmp_path).lane_results()[1].final
    assert f"tx_eq={held['tx_eq']}" in lines[cap] and "module_rx" in lines[cap]
    pic = [ln[2:] for ln in lines[cap + 1: cap + 16]]
    assert len(pic) == 15 and all(len(row) == 64 for row in pic) and any(row[32] == "|" for row in pic)


def test_live_refuses_simulation_knobs_before_any_journal(tmp_path):
    """A knob the module cannot set (a host TX FFE tap, a CTLE code) is refused in one line, exit 2,
    before the module is opened or a session journal created (it used to leave a failed session)."""
    code, out = run("tune", "c2m-10in", "--live", "--module", "emu:c2m-10in?fast=1&settle_ms=0", "--lane", "1",
                    "--module-ber", "--budget", "5", "--knobs", "tx_cm3,rx_pre", "--sessions", str(tmp_path))
    assert code == 2, out
    assert out.startswith("eqtune: error: --knobs tx_cm3: live tuning sets module codes only") and out.count("\n") == 1
    assert "--sim" in out
    assert not any(tmp_path.iterdir()), "no session folder may be created for a refused configuration"
    # the same check guards the Python API
    import pytest

    from eqtune.errors import InputError
    with pytest.raises(InputError, match="ctle_gdc"):
        LiveTuner.create(LiveConfig(module="emu:c2m-10in", lanes=[1], knobs=["ctle_gdc"]), sessions_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_live_refuses_options_it_would_ignore(tmp_path):
    """A live session never drops an option silently: a direction its measurement does not see and the
    model-only options are refused in one line, exit 2, before any session folder exists."""
    base = ["tune", "c2m-10in", "--live", "--module", "emu:c2m-10in?fast=1&settle_ms=0", "--lane", "1",
            "--module-ber", "--budget", "3", "--sessions", str(tmp_path)]
    code, out = run(*base, "--direction", "host_rx")
    assert code == 2 and out.count("\n") == 1, out
    assert "--direction host_rx does not apply" in out and "module_rx" in out
    for opt in (["--corners", "25C,85C"], ["--fix", "tx_eq=3"], ["--start", "tx_eq=3"], ["--profile", "x"]):
        code, out = run(*base, *opt)
        assert code == 2 and out.count("\n") == 1 and opt[0] in out and "--sim" in out, (opt, out)
    assert not any(tmp_path.iterdir())
    # the direction the module's checker measures is accepted (the watch's re-tune command names it)
    code, out = run(*base, "--direction", "module_rx", "--dwell", "0.01")
    assert code == 0, out
