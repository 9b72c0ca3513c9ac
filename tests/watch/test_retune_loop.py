"""The re-tune loop end to end: an emulated fleet -> the watch flags lane K of module M -> the command the
watch printed, run as printed -> the watch confirms the improvement, in the store, in its output and in
the tuning session's journal and report.

The planted fault is one a re-tune can fix: lane K's Tx input EQ knocked off its best code (a fixed code
for another channel written to the module through the driver, as a wrong optics_si_settings entry would
be: AdaptiveInputEqEnableTx off, tx_eq fixed). The watch polls at SONiC's 60 s cadence on an emulated
clock (the tuning subprocess runs on the real one; the watch's clock jumps over it, as a watch that kept
polling would).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eqtune.drivers.cmis import open_module
from eqtune.watch.actions import LaneState, suggest
from eqtune.watch.detect import Finding
from eqtune.watch.fleet import FleetSpec, start_fleet
from eqtune.watch.poller import Watcher
from eqtune.watch.store import WatchStore, connect_readonly, flagged_lanes
from eqtune.watch.targets import WatchTarget

M, K = 2, 5  # the module slot and lane the fault is planted on
POLL_S = 60.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _run_as_printed(command: str, *extra: str) -> subprocess.CompletedProcess:
    """The printed command line, word for word (the program name is this interpreter's eqtune)."""
    argv = shlex.split(command)
    assert argv[:2] == ["eqtune", "tune"]
    return subprocess.run([sys.executable, "-m", "eqtune", *argv[1:], *extra], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture()
def loop(tmp_path):
    sessions = tmp_path / "sessions"
    # the watch's clock starts 40 polls in the past, so the flag comes before the real-time tuning session
    clock = Clock(time.time() - 40 * POLL_S)
    spec = FleetSpec(modules=4, lanes=8, planted=[], stable_marginal=[], swing_c=0.0)
    fleet = start_fleet(spec, clock=clock)
    store = WatchStore(tmp_path / "watch.sqlite")
    store.start_run(["test"])
    watcher = Watcher([WatchTarget(r, channel=spec.channel) for r in fleet.resources], interval_s=POLL_S,
                      clock=clock, store=store, consent_flag="--allow-traffic-down", sessions_dir=str(sessions))
    watcher.verifier.index.min_scan_s = 0.0  # list the sessions folder at every poll (emulated time runs fast)
    reports: list = []

    def poll(n: int) -> list:
        got = []
        for _ in range(n):
            rep = watcher.poll_interval()
            clock.t += POLL_S
            reports.append(rep)
            got += rep.new_flags
        return got

    try:
        yield {"fleet": fleet, "watcher": watcher, "poll": poll, "clock": clock, "store": store,
               "sessions": sessions, "db": tmp_path / "watch.sqlite", "reports": reports}
    finally:
        watcher.close()
        store.close()
        fleet.stop()


def _knock_off(fleet) -> int:
    """Write a fixed Tx input EQ code that leaves lane K between the module's BER warning and alarm."""
    link = fleet.links[M]
    code = max(c for c in range(11) if 1e-5 < link.ber(K, "module_rx", {"tx_eq": c}) < 2.4e-4)
    with open_module(fleet.resources[M]) as mod:
        mod.apply_eq({K: {"tx_eq": code}})
    assert not link.tx_adaptive(K) and link.active_codes(K)["tx_eq"] == code
    return code


def test_the_printed_retune_restores_the_flagged_lane_and_the_watch_verifies_it(loop):
    fleet, poll = loop["fleet"], loop["poll"]
    res = fleet.resources[M]
    assert not poll(15)  # healthy fleet, warm-up included: nothing flagged
    code = _knock_off(fleet)
    flags = poll(3)
    mine = [f for f in flags if (f["resource"], f["lane"]) == (res, K)]
    assert mine and {(f["resource"], f["lane"]) for f in flags} == {(res, K)}  # the one lane, no other
    step = next(f for f in mine if f["kind"] == "step" and f["metric"] == "log10_prefec_ber")
    assert step["evidence"]["after"] > 1e-5 > step["evidence"]["before"]
    assert step["action_level"] == "retune"
    # specific: the module, the lane, the direction, the knob, the code it holds, the apply method
    text, cmd = step["action"], step["command"]
    assert f"re-tune lane {K} of module {res}" in text
    assert f"fixed Tx input EQ code tx_eq={code} of 0..10" in text
    assert "direction module_rx" in text and "ApplyImmediate, traffic stays up" in text
    assert cmd == (f"eqtune tune c2m-10in --live --module {res} --lane {K} --direction module_rx --knobs tx_eq "
                   f"--module-ber --sessions {loop['sessions']}")  # traffic stays up: no consent flag asked
    ber_flagged = [r.lanes for r in loop["reports"][-1:]][0]
    flagged = next(x for x in ber_flagged if (x.resource, x.lane) == (res, K))
    assert flagged.prefec_ber > 1e-5

    p = _run_as_printed(cmd)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "keep" in p.stdout
    loop["clock"].t = max(loop["clock"].t, time.time() + 1.0)
    link = fleet.links[M]
    assert link.active_codes(K)["tx_eq"] != code  # the module holds the tuned code
    after = poll(4)
    ver = [f for f in after if f["kind"].startswith("retune_")]
    assert len(ver) == 1 and ver[0]["kind"] == "retune_verified", after
    ev = ver[0]["evidence"]
    assert ev["verdict"] == "restored" and ev["session_decision"] == "keep"
    assert ev["session_codes"]["tx_eq"] == link.active_codes(K)["tx_eq"]
    assert ev["prefec_ber_before"] > 1e-5 > 1e-7 > ev["prefec_ber_after"]  # past warning -> well under it
    assert ev["ber_decades_better"] >= 2.0 and ev["esnr_gain_db"] >= 1.0
    session_id = ev["session"]
    # in the store, with both levels and the session
    stored = flagged_lanes(connect_readonly(loop["db"]))[(res, K)]
    row = next(f for f in stored if f["kind"] == "retune_verified")
    assert row["evidence"]["session"] == session_id and row["evidence"]["prefec_ber_before"] == ev["prefec_ber_before"]
    # ... and as an operator reads it back: the lane's history lists its findings and the verdict
    from click.testing import CliRunner

    from eqtune.cli import main

    hist = CliRunner().invoke(main, ["watch", "history", res, "--lane", str(K), "--db", str(loop["db"])])
    assert hist.exit_code == 0, hist.output
    assert f"RESTORED {res} lane {K} after tuning session {session_id}" in hist.output and " step " in hist.output
    # in the tuning session's journal, and its report
    journal = [json.loads(x) for x in (loop["sessions"] / session_id / "journal.jsonl").read_text().splitlines()]
    wv = [r for r in journal if r["type"] == "watch_verify"]
    assert len(wv) == 1 and wv[0]["resource"] == res and wv[0]["lane"] == K and wv[0]["verdict"] == "restored"
    from eqtune.session.journal import list_sessions
    from eqtune.session.report import write_report

    assert [s.status for s in list_sessions(loop["sessions"]) if s.id == session_id] == ["done"]
    html = Path(write_report(session_id, sessions_dir=loop["sessions"])).read_text()
    assert f"fleet watch, lane {K}: restored" in html
    # the verdict ends the held step (the lane is back at its level before it) and the lane stays healthy
    assert not [f for f in poll(3) if (f["resource"], f["lane"]) == (res, K)]
    now = next(x for x in loop["reports"][-1].lanes if (x.resource, x.lane) == (res, K))
    assert not now.findings and now.action_level == "none"
    assert not {k for k in loop["watcher"].active if k[:2] == (res, K)}
    from eqtune.watch.retune import verdict_line

    assert verdict_line(ver[0]).startswith(f"RESTORED {res} lane {K} after tuning session {session_id} (keep: ")


def test_a_retune_that_does_not_restore_the_lane_turns_the_action_to_swap(loop):
    """The same fault, but the tuning session is cut to its baseline (``--budget 1``): nothing changes,
    the watch says so and the lane's action becomes a swap."""
    fleet, poll = loop["fleet"], loop["poll"]
    res = fleet.resources[M]
    poll(15)
    _knock_off(fleet)
    flags = poll(3)
    cmd = next(f["command"] for f in flags if (f["resource"], f["lane"]) == (res, K) and f["command"])
    p = _run_as_printed(cmd, "--budget", "1")
    assert p.returncode == 0, p.stderr[-2000:]
    loop["clock"].t = max(loop["clock"].t, time.time() + 1.0)
    after = poll(4)
    ver = [f for f in after if f["kind"].startswith("retune_")]
    assert [f["kind"] for f in ver] == ["retune_not_restored"]
    assert ver[0]["evidence"]["verdict"] == "not restored"
    last = next(x for x in loop["reports"][-1].lanes if (x.resource, x.lane) == (res, K))
    assert last.action_level == "swap" and "did not restore it" in last.action


def test_a_journal_that_fails_its_check_verifies_nothing(loop):
    """A tuning journal edited after the fact (a record whose CRC no longer matches) is not trusted: the
    watch keeps waiting for a session it can trust."""
    fleet, poll = loop["fleet"], loop["poll"]
    res = fleet.resources[M]
    poll(15)
    _knock_off(fleet)
    cmd = next(f["command"] for f in poll(3) if (f["resource"], f["lane"]) == (res, K) and f["command"])
    # a session journal on this module and lane that says "keep", with one record's text edited
    from eqtune.session.journal import Journal

    with Journal.create(loop["sessions"], config={"module": res, "lanes": [K]}) as j:
        j.append("decision", lane=K, group=0, action="keep", codes={"tx_eq": 9}, reason="edited")
        j.append("end", status="done")
    path = next(loop["sessions"].glob("*/journal.jsonl"))
    from eqtune.watch.retune import _read_session

    assert _read_session(path.parent) is not None  # as written, the index would take it
    path.write_text(path.read_text().replace('"edited"', '"EDITED"'))
    assert _read_session(path.parent) is None
    loop["clock"].t = max(loop["clock"].t, time.time() + 1.0)
    assert not [f for f in poll(4) if f["kind"].startswith("retune_")]
    assert cmd  # the lane still waits for a trusted session


def _finding(kind: str = "step") -> Finding:
    return Finding(kind, "log10_prefec_ber", {"after": 3e-5, "warning": 1e-5, "before": 1e-9})


def test_the_action_follows_what_the_module_holds():
    fixed_down = LaneState(active={"tx_eq": 2}, tx_adaptive=False, tx_eq_max=10, apply_trigger="ApplyDPInit",
                           apply_deinit=True, traffic_down=True, max_duration_s=0.2)
    a = suggest([_finding()], resource="net:h:1", lane=3, channel="c2m-10in", lane_state=fixed_down,
                consent_flag="--allow-traffic-down")
    assert a.level == "retune" and a.command is not None and a.command.endswith("--allow-traffic-down")
    assert "ApplyDPInit after DPDeinit" in a.text and "up to 0.2 s each" in a.text
    fixed_up = LaneState(active={"tx_eq": 2}, tx_adaptive=False, tx_eq_max=10, apply_trigger="ApplyImmediate")
    a = suggest([_finding()], resource="net:h:1", lane=3, channel="c2m-10in", lane_state=fixed_up,
                consent_flag="--allow-traffic-down")
    assert a.level == "retune" and "--allow-traffic-down" not in (a.command or "")
    adaptive = LaneState(active={"tx_eq": 3}, tx_adaptive=True, tx_eq_max=10, apply_trigger="ApplyImmediate")
    hot = Finding("thermal", "esnr_db", {"projected_past_warning": True})
    a = suggest([hot], resource="net:h:1", lane=3, lane_state=adaptive)
    assert a.level == "reseat" and a.command is None and "adapts already" in a.text
    a = suggest([_finding()], resource="net:h:1", lane=3, lane_state=LaneState(tx_eq_max=None))
    assert a.level == "reseat" and "no fixed Tx input EQ" in a.text
    # a profile that says otherwise is named, and a path with a space is quoted
    prof = LaneState(active={"tx_eq": 2}, tx_adaptive=False, tx_eq_max=10, apply_trigger="ApplyImmediate",
                     profile="p.json", profile_codes={"tx_eq": 8})
    a = suggest([_finding()], resource="net:h:1", lane=3, channel="my channel.s4p", lane_state=prof)
    assert "its profile p.json sets tx_eq=8, not 2" in a.text
    assert shlex.split(a.command or "")[2] == "my channel.s4p"
    # not harmful: no re-tune whatever the module holds
    calm = Finding("step", "log10_prefec_ber", {"after": 1e-7, "warning": 1e-5, "before": 1e-9})
    assert suggest([calm], resource="net:h:1", lane=3, lane_state=fixed_up).level == "watch"


def test_on_a_module_whose_apply_takes_traffic_down_the_command_carries_the_consent(tmp_path):
    """A QSFP-DD module that supports only the step-by-step procedure (SteppedConfigOnly 1, CMIS 5.2:
    DPDeinit -> ApplyDPInit, eqtune.drivers.cmis_policy): the action says traffic goes down, the command
    carries --allow-traffic-down; without it the tune writes nothing (exit 2); run as printed it journals
    the consent and every outage, and the watch verifies the lane."""
    from eqtune.emulate.bridge import NetBridgeServer
    from eqtune.emulate.link import EmulatedLink, surrogate_quality
    from eqtune.emulate.module import EmulatedModule, VirtualClock

    links, servers = [], []
    try:
        for i in range(3):
            link = EmulatedLink("c2m-10in", lanes=8, seed=40 + i, quality=surrogate_quality(15.5))
            mod = EmulatedModule(link, image="qsfpdd8-stepped", settle_s=0.0, clock=VirtualClock(), name=f"dd{i}")
            links.append(link)
            servers.append(NetBridgeServer(mod).start())
        resources = [s.resource for s in servers]
        sessions = tmp_path / "sessions"
        clock = Clock(time.time() - 40 * POLL_S)
        w = Watcher([WatchTarget(r, channel="c2m-10in") for r in resources], interval_s=POLL_S, clock=clock,
                    consent_flag="--allow-traffic-down", sessions_dir=str(sessions))
        w.verifier.index.min_scan_s = 0.0

        def poll(n: int) -> list:
            got = []
            for _ in range(n):
                got += w.poll_interval().new_flags
                clock.t += POLL_S
            return got

        try:
            poll(15)
            res, link = resources[1], links[1]
            code = max(c for c in range(11) if 1e-5 < link.ber(K, "module_rx", {"tx_eq": c}) < 2.4e-4)
            with open_module(res) as mod:
                assert mod.apply_method().traffic_down
                mod.apply_eq({K: {"tx_eq": code}})
            step = next(f for f in poll(3) if (f["resource"], f["lane"], f["kind"]) == (res, K, "step"))
            assert step["action_level"] == "retune"
            assert "ApplyDPInit after DPDeinit: every write takes the lane's data path down" in step["action"]
            cmd = step["command"]
            assert cmd.endswith(f"--module-ber --allow-traffic-down --sessions {sessions}")
            refused = _run_as_printed(cmd.replace(" --allow-traffic-down", ""))
            assert refused.returncode == 2 and "Nothing was written" in refused.stderr
            assert link.active_codes(K)["tx_eq"] == code
            p = _run_as_printed(cmd)
            assert p.returncode == 0, p.stderr[-2000:]
            clock.t = max(clock.t, time.time() + 1.0)
            ver = [f for f in poll(4) if f["kind"].startswith("retune_")]
            assert [f["kind"] for f in ver] == ["retune_verified"] and ver[0]["evidence"]["verdict"] == "restored"
            sid = ver[0]["evidence"]["session"]
            journal = [json.loads(x) for x in (sessions / sid / "journal.jsonl").read_text().splitlines()]
            consent = [r for r in journal if r["type"] == "consent"]
            assert consent and consent[0]["choice"] == "tune"
            assert len([r for r in journal if r["type"] == "outage"]) >= 3  # baseline, evaluations, decision
        finally:
            w.close()
    finally:
        for s in servers:
            s.stop()
