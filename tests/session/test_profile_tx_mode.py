"""A profile records each lane's Tx input EQ mode, and push restores it: a profile whose decision was
"restore to adaptive Tx EQ" pushed to a module left at a fixed tx_eq with adaptive EQ off switches
adaptive EQ back on (read back), instead of reporting that the module holds the profile."""

from __future__ import annotations

from eqtune.drivers.cmis import open_module
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.session.live import LiveConfig, LiveTuner, session_profile
from eqtune.session.profile import Profile
from eqtune.session.push import push_to_module


def test_restore_to_adaptive_profile_switches_adaptive_back_on(tmp_path):
    res = "emu:c2m-10in?seed=31&settle_ms=0&fast=1&name=t-profile-txmode"
    emu = emulator_for(parse_resource(res))
    cfg = LiveConfig(module=res, lanes=[1, 2], dwell_s=0.01, budget=6, seed=2)
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path)
    result = tuner.run()
    assert all(result.lanes[ln].decision == "restore" and result.lanes[ln].tx_adaptive for ln in (1, 2))
    prof = session_profile(tuner.session_id, tmp_path)
    assert prof.tx_adaptive == {1: True, 2: True}
    from eqtune.session.report import render_report
    from eqtune.session.view import load_session

    html = render_report(load_session(tuner.session_id, tmp_path), session_id=tuner.session_id)
    assert "tx_adaptive: ;" not in html  # the restore of adaptive EQ is said in words, with its lanes
    assert "Tx input adaptive EQ switched back on, lane(s) 1,2; read back: yes" in html
    path = prof.save(tmp_path / "p.json")
    loaded = Profile.load(path)  # the mode survives the file and its digest
    assert loaded.tx_adaptive == {1: True, 2: True} and loaded.digest == prof.digest

    mod = open_module(res)
    try:
        mod.apply_eq({1: {"tx_eq": 6}})  # someone left lane 1 at a fixed code: adaptive EQ goes off
        assert not emu.link.tx_adaptive(1) and emu.link.tx_adaptive(2)
        r = push_to_module(loaded, mod)
        assert r.status == "applied", r.message
        assert "adaptive EQ switched on, lane(s) 1" in r.message
        assert emu.link.tx_adaptive(1) and emu.link.tx_adaptive(2)
        again = push_to_module(loaded, mod)  # now it does hold the profile
        assert again.status == "unchanged", again.message
    finally:
        mod.close()


def test_profile_without_a_mode_keeps_its_old_digest(tmp_path):
    """A profile that says nothing about the mode is the same document (and digest) as before."""
    p = Profile.from_identity({"vendor": "V", "pn": "P"}, {1: {"rx_pre": 1}})
    doc = p.to_document()
    assert "tx_adaptive" not in doc
