"""Screening by default: a live session that does not say screens its search when a screen can save
site time (a BER metric, a dwell of 8 s or more, a target of 1e-9 or less, a budget above 8), journals
the choice in its header and plan, and a session journaled before screening was the default resumes
unscreened and says so. ``--no-screen`` / ``--screen-dwell 0`` and the TUI's Screen field turn it off."""

from __future__ import annotations

from typing import Any

import pytest

from eqtune.errors import InputError
from eqtune.session.config import SCREEN_CONTENDERS, SCREEN_SHARE, LiveConfig, choose_screen
from eqtune.session.live import LiveTuner, load_session

DWELL = 28.2  # s on the emulator's virtual clock: 3e12 bits at 106.25 Gb/s, a 1e-12 BER target


@pytest.mark.parametrize(("metric", "dwell", "target", "budget", "why"), [
    ("eye_height", DWELL, None, 30, "counts no bit errors"),
    ("ber", 1.0, None, 30, "under 8 s"),
    ("ber", DWELL, 1e-6, 30, "above 1e-09"),
    ("ber", DWELL, 1e-12, 8, "budget of 8"),
])
def test_the_screen_is_left_off_where_it_cannot_save_time(metric, dwell, target, budget, why):
    screen, text = choose_screen(metric, dwell, target, budget)
    assert screen is None and why in text and text.startswith("no screen")


def test_a_long_dwell_at_a_low_target_screens_at_an_eighth_of_it():
    for metric, target in (("ber", 1e-12), ("q_db", None), ("ber", 1e-9)):
        screen, text = choose_screen(metric, DWELL, target, 30)
        assert screen == pytest.approx(DWELL / SCREEN_SHARE) and "screen by default" in text


def test_resolve_screen_keeps_an_explicit_choice_and_refuses_an_unknown_mode():
    auto = LiveConfig(module="emu:x", dwell_s=DWELL, budget=30)
    auto.resolve_screen()
    assert auto.screening and auto.screen_dwell_s == pytest.approx(DWELL / 8)
    assert auto.closing_evaluations == SCREEN_CONTENDERS
    off = LiveConfig(module="emu:x", dwell_s=DWELL, budget=30, screen="off", screen_dwell_s=2.0)
    off.resolve_screen()
    assert not off.screening and off.closing_evaluations == 0 and "--no-screen" in off.screen_why
    given = LiveConfig(module="emu:x", dwell_s=DWELL, budget=30, screen_dwell_s=2.0)
    given.resolve_screen()
    assert given.screen == "given" and given.screen_dwell_s == 2.0
    short = LiveConfig(module="emu:x", dwell_s=1.0, budget=30)
    short.resolve_screen()
    assert not short.screening and "under 8 s" in short.screen_why
    with pytest.raises(InputError, match="screen 'sometimes'"):
        LiveConfig(module="emu:x", screen="sometimes").check()


def test_a_header_from_before_the_default_reads_as_legacy_or_given():
    old = LiveConfig.from_dict({"module": "emu:x", "dwell_s": DWELL, "budget": 30})
    assert old.screen == "legacy" and not old.screening and "before screening was the default" in old.screen_why
    old.check()
    given = LiveConfig.from_dict({"module": "emu:x", "dwell_s": DWELL, "budget": 30, "screen_dwell_s": 3.0})
    assert given.screen == "given" and given.screening
    new = LiveConfig(module="emu:x", dwell_s=DWELL, budget=30)
    new.resolve_screen()
    back = LiveConfig.from_dict(new.to_dict())
    assert (back.screen, back.screen_dwell_s, back.screen_why) == (new.screen, new.screen_dwell_s, new.screen_why)


def _cfg(name: str, **kw: Any) -> LiveConfig:
    res = f"emu:c2m-10in?seed=33&settle_ms=0&fast=1&adaptive=0&name={name}"
    return LiveConfig(module=res, lanes=list(range(1, 9)), dwell_s=DWELL, budget=30, seed=5, **kw)


def test_a_session_that_does_not_say_screens_and_journals_why(tmp_path):
    events: list = []
    t = LiveTuner.create(_cfg("screen-default"), sessions_dir=tmp_path, on_event=events.append)
    assert t.run().status == "done"
    view = load_session(t.session_id, tmp_path)
    assert view.header["config"]["screen"] == "auto"
    plan = view.plan()
    assert plan is not None and plan["screen"]["mode"] == "auto"
    assert plan["screen"]["dwell_s"] == pytest.approx(DWELL / 8)
    ms = view.measurements()
    assert ms[0]["dwell"] == "screen" and ms[-1]["dwell"] == "full"
    assert any(ev.kind == "log" and "screen by default" in ev.text() for ev in events)
    # an unscreened twin, the same seed: every measurement may take the whole dwell
    u = LiveTuner.create(_cfg("screen-off", screen="off"), sessions_dir=tmp_path / "off")
    assert u.run().status == "done"
    vu = load_session(u.session_id, tmp_path / "off")
    assert (vu.plan() or {})["screen"] == {"mode": "off", "dwell_s": None, "why": "no screen: turned off (--no-screen)"}
    assert all("dwell" not in m for m in vu.measurements())


def test_a_session_journaled_before_the_default_resumes_unscreened_and_says_so(tmp_path, monkeypatch):
    """The journal an older eqtune wrote: no screen keys in its header, none in its plan. Resumed by
    this one, it searches as it ran (no screen) and the operator is told why."""
    old_to_dict = LiveConfig.to_dict

    def as_before(self: LiveConfig) -> dict[str, Any]:
        d = old_to_dict(self)
        d.pop("screen", None)
        d.pop("screen_why", None)
        return d

    events: list = []
    holder: dict[str, Any] = {}

    def abort_early(ev: Any) -> None:
        if ev.kind == "evaluation" and ev.data["n"] == 2:
            holder["t"].abort("closing the laptop")

    monkeypatch.setattr(LiveConfig, "to_dict", as_before)
    monkeypatch.setattr("eqtune.session.live_connect.TunerConnect._screen_choice", lambda self: None)
    monkeypatch.setattr("eqtune.session.live_connect.TunerConnect._announce_plan", lambda self: None)
    holder["t"] = t = LiveTuner.create(_cfg("screen-legacy", screen="off"), sessions_dir=tmp_path, on_event=abort_early)
    assert t.run().status == "aborted"
    monkeypatch.undo()
    view = load_session(t.session_id, tmp_path)
    assert "screen" not in view.header["config"] and (view.plan() or {}).get("screen") is None
    r = LiveTuner.resume(t.session_id, sessions_dir=tmp_path, on_event=events.append)
    assert r.config.screen == "legacy" and not r.config.screening
    assert r.run().status == "done"
    assert any(ev.kind == "log" and "before screening was the default" in ev.text() for ev in events)
    assert all("dwell" not in m for m in load_session(t.session_id, tmp_path).measurements())


def test_no_screen_and_screen_dwell_zero_turn_it_off_on_the_command_line():
    from eqtune.cli.live_cmd import live_config

    assert live_config(module="emu:x", dwell=DWELL).screen == "auto"
    assert live_config(module="emu:x", dwell=DWELL, no_screen=True).screen == "off"
    cfg = live_config(module="emu:x", dwell=DWELL, screen_dwell=0.0)
    assert cfg.screen == "off" and cfg.screen_dwell_s is None
    assert live_config(module="emu:x", dwell=DWELL, screen_dwell=2.0).screen == "given"
    with pytest.raises(InputError, match="not both"):
        live_config(module="emu:x", dwell=DWELL, screen_dwell=2.0, no_screen=True)


def test_tune_live_json_carries_the_stop_rules_and_session_show_the_screen(tmp_path):
    import json

    from click.testing import CliRunner

    from eqtune.cli import main

    res = "emu:c2m-10in?seed=25&settle_ms=0&fast=1&name=cli-screen-default&adaptive=0"
    r = CliRunner().invoke(main, ["tune", "c2m-10in", "--live", "--module", res, "--lane", "1", "--module-ber",
                                  "--target-ber", "1e-12", "--budget", "20", "--seed", "4", "--json",
                                  "--sessions", str(tmp_path), "--session", "dflt"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["stops"] and out["stops"][0]["lanes"] == [1]
    assert out["stops"][0]["rule"] == out["lanes"]["1"]["stop_rule"] and out["stops"][0]["reason"]
    shown = CliRunner().invoke(main, ["session", "show", "dflt", "--sessions", str(tmp_path)], catch_exceptions=False)
    assert "screen by default" in shown.output and f"stopped ({out['stops'][0]['rule']})" in shown.output
    r = CliRunner().invoke(main, ["tune", "c2m-10in", "--sim", "--screen-dwell", "0"])
    assert r.exit_code == 2 and "only apply with --live" in r.output


def test_the_tui_screen_field_reads_auto_off_or_seconds():
    from eqtune.tui.controller import LinkForm

    assert LinkForm(dwell_s=DWELL).screen_config() == {"screen": "auto", "screen_dwell_s": None}
    assert LinkForm(dwell_s=DWELL, screen="off").screen_config()["screen"] == "off"
    assert LinkForm(dwell_s=DWELL, screen="3.5").screen_config() == {"screen": "given", "screen_dwell_s": 3.5}
    with pytest.raises(InputError, match="auto, off or a screen dwell"):
        LinkForm(dwell_s=DWELL, screen="often").check()
    with pytest.raises(InputError, match="shorter than the dwell"):
        LinkForm(dwell_s=1.0, screen="2").check()


def test_a_screened_tie_of_error_free_codes_settles_and_the_contenders_decide(tmp_path):
    """A short channel (c2m-4in) through a 4-channel BERT, 4 module knobs: most codes count no errors
    at the screen (3.75e11 bits), so more screening cannot rank them. The search settles on that tie
    before its budget, the 4 contenders get the full dwell, and every lane's pick is a code whose true
    BER the full dwell cannot tell from the best (zero expected errors, or within 10x of the best)."""
    import itertools

    from eqtune.drivers.transport import parse_resource
    from eqtune.emulate.registry import emulator_for
    from tests.session.test_live_stops import _MultiBert

    res = "emu:c2m-4in?seed=31&settle_ms=0&fast=1&adaptive=0&name=screen-tie"
    link = emulator_for(parse_resource(res)).link
    cfg = LiveConfig(module=res, lanes=[1, 2, 3, 4], instrument="bert:test", dwell_s=DWELL, budget=30, seed=4,
                     knobs=["tx_eq", "rx_pre", "rx_post", "rx_amp"])
    t = LiveTuner.create(cfg, sessions_dir=tmp_path, instrument=_MultiBert(link))
    result = t.run()
    assert result.status == "done"
    ms = load_session(t.session_id, tmp_path).measurements()
    cf = [m["contend_from"] for m in ms if "contend_from" in m]
    assert len(cf) == 1 and cf[0]["rule"] == "settled" and "counted no errors" in cf[0]["reason"], cf
    assert len(ms) == int(cf[0]["n"]) + SCREEN_CONTENDERS < 30
    assert [m["dwell"] for m in ms[int(cf[0]["n"]):]] == ["full"] * SCREEN_CONTENDERS
    full_bits = link.bit_rate_bps * DWELL
    for ln in (1, 2, 3, 4):
        tx = {t_: float(link.quality(ln, "module_rx", {"tx_eq": t_})["ber_estimate"]) for t_ in range(11)}
        rx = {(p, q, r): float(link.quality(ln, "host_rx", {"rx_pre": p, "rx_post": q, "rx_amp": r})["ber_estimate"])
              for p, q, r in itertools.product(range(8), range(8), range(4))}
        best = min(tx.values()) + min(rx.values())
        c = result.lanes[ln].recommended or result.lanes[ln].original
        got = tx[c["tx_eq"]] + rx[(c["rx_pre"], c["rx_post"], c["rx_amp"])]
        assert got <= max(10 * best, 1.0 / full_bits), (ln, c, got, best)
