"""Screening: a live session's search measures at a short dwell (a higher BER target), its contenders
and the verify at the full dwell; an early stop rule moves the group to its contenders first. Journaled
(``dwell``, ``contend_from``), so a resumed session dwells and closes exactly as a straight one."""

from __future__ import annotations

from typing import Any

import pytest

from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.errors import InputError
from eqtune.session.config import SCREEN_CONTENDERS
from eqtune.session.live import LiveConfig, LiveTuner, load_session
from eqtune.session.live_search import screen_looks
from eqtune.tune.plan import dwell_text

DWELL = 28.2  # s on the emulator's virtual clock: 3e12 bits at 106.25 Gb/s, a 1e-12 BER target
SCREEN = DWELL / 8


def test_a_screen_keeps_the_looks_of_the_full_dwell_that_fall_within_it():
    assert screen_looks(6, 1 / 8) == 3  # 1/32, 1/16, 1/8 of the dwell
    assert screen_looks(6, 1.0) == 6
    assert screen_looks(6, 0.3) == 4
    assert screen_looks(6, 1e-4) == 1


def test_bad_screen_dwells_are_refused_in_one_line():
    with pytest.raises(InputError, match="not shorter than --dwell"):
        LiveConfig(module="emu:x", dwell_s=1.0, screen_dwell_s=1.0).check()
    with pytest.raises(InputError, match="--screen-dwell"):
        LiveConfig(module="emu:x", dwell_s=1.0, screen_dwell_s=float("nan")).check()
    with pytest.raises(InputError, match="metric eye_height"):
        LiveConfig(module="emu:x", dwell_s=1.0, screen_dwell_s=0.1, metric="eye_height").check()
    assert LiveConfig(module="emu:x", screen_dwell_s=0.1).closing_evaluations == SCREEN_CONTENDERS
    assert LiveConfig(module="emu:x", screen_dwell_s=0.1, remeasure_top_k=3).closing_evaluations == 3
    assert LiveConfig(module="emu:x").closing_evaluations == 0
    assert "screen_dwell_s" not in LiveConfig(module="emu:x").to_dict()  # headers as before it


def _tuner(tmp_path, name: str, abort_at: int | None = None, **kw: Any) -> tuple[LiveTuner, list, Any]:
    res = f"emu:c2m-10in?seed=31&settle_ms=0&fast=1&adaptive=0&name={name}"
    events: list = []
    holder: dict[str, Any] = {}

    def on_event(ev: Any) -> None:
        events.append(ev)
        if abort_at is not None and ev.kind == "evaluation" and ev.data["n"] == abort_at:
            holder["t"].abort("closing the laptop")

    cfg = LiveConfig(module=res, lanes=list(range(1, 9)), dwell_s=DWELL, budget=30, seed=4, **kw)
    holder["t"] = t = LiveTuner.create(cfg, sessions_dir=tmp_path, on_event=on_event)
    return t, events, emulator_for(parse_resource(res)).link


def _dwell(m: dict[str, Any]) -> float:
    return max(float(r["counts"]["dwell_s"]) for r in m["lanes"].values())


def test_screened_search_dwells_short_closes_on_full_dwell_contenders_and_keeps_the_best_code(tmp_path):
    """The module checker sees tx_eq only (11 codes, 8 lanes at once): the settled space ends the
    screened search early, then each lane's two best codes get the full dwell, then the verify; every
    lane's pick is still its best code (or one below what the full dwell resolves). (On so small a space
    the unscreened session is as cheap: benchmarks/bench_live_sitetime.py measures where it saves.)"""
    t, events, link = _tuner(tmp_path, "screen-a", screen_dwell_s=SCREEN)
    result = t.run()
    assert result.status == "done"
    ms = load_session(t.session_id, tmp_path).measurements()
    cf = [m["contend_from"] for m in ms if "contend_from" in m]
    assert len(cf) == 1 and cf[0]["rule"] in ("settled", "exhausted", "patience")
    c0 = int(cf[0]["n"])
    assert len(ms) == c0 + SCREEN_CONTENDERS < 30
    assert [m["dwell"] for m in ms] == ["screen"] * c0 + ["full"] * SCREEN_CONTENDERS
    # the module checker's counted time includes its gates' overhead (0.4 s per gate in the emulator,
    # one gate per look), far under the full dwell
    assert all(_dwell(m) <= 1.5 * SCREEN for m in ms[:c0])
    # the contenders: the incumbent dwells the whole dwell (no reference: it is the reference)
    assert _dwell(ms[c0]) >= DWELL
    for m in ms[:c0]:
        for r in m["lanes"].values():
            assert r["counts"].get("dwell_full_s", SCREEN) == pytest.approx(SCREEN)
    last = ms[-1]
    assert last["stop_rule"] == cf[0]["rule"] and "contender dwells at the full dwell" in last["stop"]
    assert all("stop_rule" not in m for m in ms[:-1])
    stops = [e for e in events if e.kind == "stop"]
    assert len(stops) == 1 and stops[0].data["rule"] == last["stop_rule"]
    plan = next(e for e in events if e.kind == "plan")
    assert f"search screens at {dwell_text(SCREEN)}," in plan.text()
    floor = 3.0 / (link.bit_rate_bps * DWELL)
    for ln in range(1, 9):
        true = {tx: link.ber(ln, "module_rx", {"tx_eq": tx}) for tx in range(11)}
        pick = (result.lanes[ln].recommended or result.lanes[ln].original)["tx_eq"]
        assert true[pick] <= max(min(true.values()) * 10, floor), (ln, pick, true)


def test_a_screened_session_aborted_in_its_contenders_resumes_to_the_same_dwells_and_codes(tmp_path):
    straight, _, _ = _tuner(tmp_path / "a", "screen-straight", screen_dwell_s=SCREEN)
    assert straight.run().status == "done"
    ms = load_session(straight.session_id, tmp_path / "a").measurements()
    c0 = next(int(m["contend_from"]["n"]) for m in ms if "contend_from" in m)
    cut, _, _ = _tuner(tmp_path / "b", "screen-cut", abort_at=c0, screen_dwell_s=SCREEN)
    assert cut.run().status == "aborted"
    resumed = LiveTuner.resume(cut.session_id, sessions_dir=tmp_path / "b")
    assert resumed.run().status == "done"
    ms_b = load_session(cut.session_id, tmp_path / "b").measurements()

    def rows(v):
        return [({k: r["codes"] for k, r in m["lanes"].items()}, m["dwell"], round(_dwell(m), 6),
                 m.get("stop_rule")) for m in v]

    assert rows(ms_b) == rows(ms)


def test_the_plan_prices_a_screened_search_and_its_contenders():
    from eqtune.serdes.knobs import Knob, KnobSpace
    from eqtune.tune.plan import live_plan

    sp = KnobSpace((Knob("a", tuple(range(40)), 0), Knob("b", tuple(range(40)), 0)))
    p = live_plan(sp, groups=1, budget=30, dwell_s=28.0, verify_dwell_s=28.0, write_s=0.5, remeasure=4,
                  screen_dwell_s=3.5)
    # 26 screens + 4 full dwells + baseline + verify
    assert p.expected_s == pytest.approx(26 * 4.0 + 4 * 28.5 + 28 + 28)
    assert "search screens at 3.5 s, the last 4 at the full dwell" in p.text()
    q = live_plan(sp, groups=1, budget=30, dwell_s=28.0, verify_dwell_s=28.0, write_s=0.5)
    assert q.expected_s == pytest.approx(30 * 28.5 + 28 + 28) and "screens" not in q.text()


def test_tune_live_passes_screen_dwell_through_and_session_show_says_it(tmp_path):
    from click.testing import CliRunner

    from eqtune.cli import main

    res = "emu:c2m-10in?seed=25&settle_ms=0&fast=1&name=cli-tune-live-screen&adaptive=0"
    r = CliRunner().invoke(main, ["tune", "c2m-10in", "--live", "--module", res, "--lane", "1", "--module-ber",
                                  "--dwell", "0.4", "--screen-dwell", "0.05", "--budget", "8", "--seed", "4",
                                  "--sessions", str(tmp_path), "--session", "scr"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    view = load_session("scr", tmp_path)
    assert view.config.screen_dwell_s == 0.05 and view.config.closing_evaluations == SCREEN_CONTENDERS
    ms = view.measurements()
    assert ms[-1]["dwell"] == "full" and ms[0]["dwell"] == "screen"
    r = CliRunner().invoke(main, ["session", "show", "scr", "--sessions", str(tmp_path)], catch_exceptions=False)
    assert "screen 0.05 s" in r.output, r.output
