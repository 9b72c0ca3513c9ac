"""Live tuning of tx_eq on modules that run Tx input adaptive EQ (as shipped): adaptive EQ is switched
off for tuning, journaled as the restore point, and switched back on when the originals are restored
(decision or abort); a tuned fixed code that verifiably beats the adaptive equalizer stays fixed."""

from __future__ import annotations

import pytest

from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.session.journal import read_journal
from eqtune.session.live import LiveConfig, LiveTuner, load_session, session_profile

DWELL = 0.01


def records(tmp_path, tuner):
    return read_journal(tmp_path / tuner.session_id / "journal.jsonl").records


def test_restore_decision_switches_adaptive_back_on(tmp_path):
    """The adaptive equalizer already sits at the best code: no fixed code beats it verifiably, so the
    decision is restore, and the lane runs adaptive EQ again with its original fixed code staged."""
    res = "emu:c2m-10in?seed=31&settle_ms=0&fast=1&name=t-adapt-restore"
    emu = emulator_for(parse_resource(res))
    before = {ln: emu.link.active_codes(ln) for ln in (1, 2)}
    assert all(emu.link.tx_adaptive(ln) for ln in (1, 2))
    cfg = LiveConfig(module=res, lanes=[1, 2], dwell_s=DWELL, budget=6, seed=2)
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path)
    result = tuner.run()
    assert result.status == "done"
    recs = records(tmp_path, tuner)
    orig = next(r for r in recs if r["type"] == "original")
    assert orig["tx_adaptive"] == [1, 2]
    plan = next(r for r in recs if r["type"] == "plan")
    assert plan["knobs"] == ["tx_eq"]
    # tuning ran with fixed codes (adaptive off), written through apply_eq
    assert any(r["type"] == "apply" and r["phase"] == "tune" for r in recs)
    for ln in (1, 2):
        r = result.lanes[ln]
        assert r.decision == "restore" and r.tx_adaptive is True and "adaptive EQ back on" in \
            load_session(tuner.session_id, tmp_path).decisions()[ln]["reason"]
        assert emu.link.tx_adaptive(ln) and emu.link.active_codes(ln) == before[ln]
    dec_apply = [r for r in recs if r["type"] == "apply" and r["phase"] == "decision"]
    assert dec_apply and dec_apply[-1]["tx_adaptive"] == [1, 2]  # journaled before the write
    back = [r for r in recs if r["type"] == "restore" and r["reason"] == "tx_adaptive"]
    assert back and back[-1]["lanes"] == [1, 2] and back[-1]["verified"] is True
    assert recs.index(dec_apply[-1]) < recs.index(back[-1])
    assert "with Tx input adaptive EQ on" in "\n".join(result.summary_lines())
    # a profile of this session leaves tx_eq alone (pushing it must not switch adaptive EQ off)
    prof = session_profile(tuner.session_id, tmp_path)
    assert all("tx_eq" not in c and c for c in prof.lanes.values())


def test_tuned_fixed_code_that_beats_adaptive_stays_fixed(tmp_path, monkeypatch):
    """A module whose adaptive equalizer mis-converges (to code 0): the tuned fixed code wins, is kept,
    and adaptive EQ stays off."""
    res = "emu:c2m-10in?seed=32&settle_ms=0&fast=1&name=t-adapt-keep"
    emu = emulator_for(parse_resource(res))
    monkeypatch.setattr(emu.link, "_adapted_tx_eq", lambda lane: 0)
    from eqtune.drivers.measurement import dwell_for

    cfg = LiveConfig(module=res, lanes=[1], dwell_s=dwell_for(1e-12, emu.link.bit_rate_bps), budget=12, seed=4)
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path)
    result = tuner.run()
    r = result.lanes[1]
    assert result.status == "done" and r.decision == "keep" and r.tx_adaptive is False
    assert r.baseline_margin < 3 and r.verified_margin > 9  # ~5e-2 -> ~1e-10 or better
    assert not emu.link.tx_adaptive(1) and emu.link.active_codes(1)["tx_eq"] == r.final["tx_eq"]
    assert not [x for x in records(tmp_path, tuner) if x["type"] == "restore" and x["reason"] == "tx_adaptive"]
    assert session_profile(tuner.session_id, tmp_path).lanes[1]["tx_eq"] == r.final["tx_eq"]


@pytest.mark.parametrize("at", [0, 2])
def test_abort_switches_adaptive_back_on(tmp_path, at):
    """Abort after the first evaluation (which writes the original fixed code: the codes already match,
    only adaptive EQ differs) or later: the originals and adaptive EQ come back, verified."""
    res = f"emu:c2m-10in?seed=33&settle_ms=0&fast=1&name=t-adapt-abort-{at}"
    emu = emulator_for(parse_resource(res))
    before = emu.link.active_codes(3)
    holder = {}

    def on_event(ev):
        if ev.kind == "evaluation" and ev.data["n"] == at:
            holder["t"].abort("test abort")

    cfg = LiveConfig(module=res, lanes=[3], dwell_s=DWELL, budget=10, seed=1)
    holder["t"] = tuner = LiveTuner.create(cfg, sessions_dir=tmp_path, on_event=on_event)
    result = tuner.run()
    assert result.status == "aborted" and "adaptive EQ back on lane(s) 3" in result.message
    assert emu.link.tx_adaptive(3) and emu.link.active_codes(3) == before
    recs = records(tmp_path, tuner)
    assert [r for r in recs if r["type"] == "restore" and r["reason"] == "abort"][-1]["verified"] is True
    assert [r for r in recs if r["type"] == "restore" and r["reason"] == "tx_adaptive"][-1]["lanes"] == [3]
