"""``eqtune tune --live --prior-session ID|auto``: the next module starts from an earlier session's
measurements (emulated CMIS module, in process; exact error counts so runs can be compared)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from eqtune.cli import main
from eqtune.session.journal import Journal
from eqtune.session.live import LiveConfig, LiveTuner, load_session

CHANNEL = "c2m-10in"


def run(*args):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


def module(name: str, seed: int = 2) -> str:
    # fresh emulator per name (the registry keys on the whole string); fixed Tx input EQ far from the
    # optimum, virtual clock, exact counts (noise=0): a run is a pure function of its codes
    return f"emu:{CHANNEL}?seed={seed}&fast=1&adaptive=0&noise=0&settle_ms=0&name={name}"


def live(sessions, sid, res, *extra):
    return run("tune", CHANNEL, "--live", "--module", res, "--module-ber", "--dwell", "28", "--seed", "3",
               "--sessions", str(sessions), "--session", sid, "--json", *extra)


def measured(view):
    return [(m["n"], {ln: r["codes"] for ln, r in m["lanes"].items()}) for m in view.measurements()]


def test_prior_session_used_journaled_and_resumed_identically(tmp_path):
    code, out = live(tmp_path, "m1", module("p-m1", seed=1), "--lane", "1,2", "--budget", "8")
    assert code == 0, out
    first = load_session("m1", tmp_path)
    prior_obs = sum(len(m["lanes"]) for m in first.measurements())
    best_tx = max((r for m in first.measurements() for r in m["lanes"].values()), key=lambda r: r["margin"])
    best_tx = best_tx["codes"]["tx_eq"]

    # the next module, warm-started from m1: the plan journals which session and every observation
    code, out = live(tmp_path, "m2", module("p-m2"), "--lane", "1", "--budget", "6", "--prior-session", "m1")
    assert code == 0, out
    view = load_session("m2", tmp_path)
    prior = view.plan()["prior"]
    assert prior["session"] == "m1" and prior["how"] == "given"
    assert prior["knobs"] == ["tx_eq"] and len(prior["margins"]) == prior_obs
    # the first code measured is the prior's best, not the module's original tx_eq
    orig_tx = view.originals()[1]["tx_eq"]
    first_tx = view.measurements()[0]["lanes"]["1"]["codes"]["tx_eq"]
    assert first_tx != orig_tx and abs(first_tx - best_tx) <= 1, (first_tx, orig_tx, best_tx)
    # ... which a cold run of the same module does not do
    code, out = live(tmp_path, "cold", module("p-cold"), "--lane", "1", "--budget", "2")
    assert load_session("cold", tmp_path).measurements()[0]["lanes"]["1"]["codes"]["tx_eq"] == orig_tx

    # the same tune, interrupted after its first evaluation and resumed from the command line, after the
    # prior's journal is gone: the journaled prior alone gives the same proposals (and the same stop: with
    # the prior the group may settle within a few evaluations)
    cfg = LiveConfig(module=module("p-m3"), lanes=[1], dwell_s=28.0, budget=6, seed=3, channel=CHANNEL,
                     prior_session="m1")
    holder = {}

    def stop_after_one(ev):
        if ev.kind == "evaluation" and ev.data["n"] == 0:
            holder["t"].abort("unplugged")

    assert len(view.measurements()) >= 2
    holder["t"] = LiveTuner.create(cfg, sessions_dir=tmp_path, session_id="m3", on_event=stop_after_one)
    assert holder["t"].run().status == "aborted"
    (tmp_path / "m1" / "journal.jsonl").rename(tmp_path / "m1.moved")
    code, out = run("session", "resume", "m3", "--sessions", str(tmp_path), "--json")
    assert code == 0, out
    assert json.loads(out)["status"] == "done"
    resumed = load_session("m3", tmp_path)
    assert resumed.plan()["prior"] == prior
    assert measured(resumed) == measured(view)
    assert [m["lanes"]["1"]["margin"] for m in resumed.measurements()] == \
        [m["lanes"]["1"]["margin"] for m in view.measurements()]


def _fake_session(root, sid, *, pn="EMU-800G-OSFP", channel=CHANNEL, knobs=("tx_eq",), metric="ber",
                  status="done", tx_max=10):
    """A journal like a finished live session writes (the records the prior reads)."""
    cfg = LiveConfig(module=f"emu:{sid}", lanes=[1], channel=channel, metric=metric, seed=1)
    j = Journal.create(root, sid, config=cfg.to_dict())
    j.append("device", role="module", resource=cfg.module,
             identity={"vendor": "EQTUNE EMULATOR", "pn": pn, "sn": f"SN-{sid}"},
             capabilities={"lanes": 8, "knob_values": {"tx_eq": list(range(tx_max + 1)), "rx_pre": list(range(8)),
                                                       "rx_post": list(range(8)), "rx_amp": [0, 1, 2, 3]}})
    j.append("original", codes={"1": {"tx_eq": 3}}, tx_adaptive=[])
    j.append("plan", knobs=list(knobs), groups=[[1]], budget=3, metric=metric)
    for n, tx in enumerate((2, 6, 8)):
        j.append("measure", group=0, n=n, lanes={"1": {"lane": 1, "codes": {k: tx for k in knobs},
                                                       "margin": 5.0 + tx / 2, "counts": {}, "metrics": {}}})
    j.append("end", status=status, message="", lanes={})
    j.close()


def test_auto_picks_the_latest_completed_session_on_the_same_part_and_host(tmp_path):
    _fake_session(tmp_path, "a-old")  # matches, older
    _fake_session(tmp_path, "b-right")  # matches: the one to pick
    _fake_session(tmp_path, "c-other-part", pn="OTHER-PN")
    _fake_session(tmp_path, "d-other-host", channel="c2m-4in")
    _fake_session(tmp_path, "e-aborted", status="aborted")
    _fake_session(tmp_path, "f-other-knobs", knobs=("rx_pre",))
    _fake_session(tmp_path, "g-other-metric", metric="q_db")
    code, out = live(tmp_path, "new", module("p-auto"), "--lane", "1", "--budget", "2", "--prior-session", "auto")
    assert code == 0, out
    prior = load_session("new", tmp_path).plan()["prior"]
    assert (prior["session"], prior["how"]) == ("b-right", "auto")
    assert prior["codes"] == [[2], [6], [8]] and prior["margins"] == [6.0, 8.0, 9.0]

    # nothing matches on another host profile: said, journaled as none, and the run goes on cold
    r = CliRunner().invoke(main, ["tune", "c2m-16in", "--live", "--module", module("p-none"), "--module-ber",
                                  "--dwell", "28", "--seed", "3", "--budget", "2", "--sessions", str(tmp_path),
                                  "--session", "none", "--prior-session", "auto"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "prior session: none (no completed session on EQTUNE EMULATOR EMU-800G-OSFP with host profile " \
           "c2m-16in)" in r.output
    rec = load_session("none", tmp_path).plan()["prior"]
    assert rec["session"] is None and rec["margins"] == []


def test_prior_from_another_knob_space_is_refused(tmp_path):
    _fake_session(tmp_path, "rx-only", knobs=("rx_pre",))
    _fake_session(tmp_path, "tx-12", tx_max=12)
    _fake_session(tmp_path, "q-db", metric="q_db")
    for sid, what in (("rx-only", "it tuned rx_pre, this session tunes tx_eq"),
                      ("tx-12", "its module allows tx_eq 0..12, this one 0..10"),
                      ("q-db", "it measured q_db, this session measures ber")):
        code, out = live(tmp_path, f"x-{sid}", module(f"p-x-{sid}"), "--lane", "1", "--budget", "2",
                         "--prior-session", sid)
        assert code == 2, out
        msg = json.loads(out)["error"]["message"]
        assert "\n" not in msg and msg.startswith(f"--prior-session {sid}: {what}"), msg
        # refused before any write: the module keeps its codes, the session says it changed none
        assert load_session(f"x-{sid}", tmp_path).all("apply") == []
    # as a person reads it: the last line on stderr, no traceback
    r = CliRunner().invoke(main, ["tune", CHANNEL, "--live", "--module", module("p-x-rx"), "--module-ber",
                                  "--sessions", str(tmp_path), "--prior-session", "rx-only"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.strip().splitlines()[-1].startswith("eqtune: error: --prior-session rx-only: it tuned rx_pre")
    code, out = run("tune", CHANNEL, "--live", "--module", module("p-x-missing"), "--module-ber",
                    "--sessions", str(tmp_path), "--session", "x-missing", "--prior-session", "no-such")
    assert code == 2 and out.startswith("eqtune: error: --prior-session no-such: no session 'no-such'"), out
    assert not (tmp_path / "x-missing").exists()  # nothing journaled for a prior that is not there
