"""Honest labels on screen: a scope session is eye height in mV on every step (never a BER label);
Verify gives the reason of each decision and says both sides were measured at the same dwell; the
first look after the baseline offers to stop when every lane already meets the target."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from eqtune.drivers.definition import find_definition
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.emulate.scpi import ScpiEmulator
from eqtune.tui.app import EqtuneApp

pytestmark = pytest.mark.timeout(400)


def _headers(app: EqtuneApp, table: str) -> list[str]:
    return [str(c.label) for c in app.query_one(f"#{table}").ordered_columns]


async def _run_step(app: EqtuneApp, pilot, step: str, action: str) -> None:
    await app.goto(step)
    await pilot.pause()
    getattr(app.pane(step), f"action_{action}")()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert app.last_error == "", app.last_error


def test_scope_session_shows_mv_throughout(tmp_path: Path) -> None:
    res = "emu:c2m-10in?seed=5&settle_ms=0&fast=1&name=tui-scope-mv"
    emu = ScpiEmulator(find_definition("keysight-flexdca"), emulator_for(parse_resource(res)).link, seed=5).start()

    async def go() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await app.goto("devices")
            await pilot.pause()
            app.query_one("#module-res").value = res
            app.query_one("#instrument-res").value = emu.resource
            await _run_step(app, pilot, "devices", "connect")
            assert app.ctl.link.metric == "eye_height"
            await app.goto("link")
            await pilot.pause()
            app.query_one("#link-budget").value = "2"
            app.query_one("#link-patience").value = "0"
            app.query_one("#link-dwell").value = "0.01"
            await _run_step(app, pilot, "link", "confirm")
            await _run_step(app, pilot, "baseline", "measure")
            await _run_step(app, pilot, "tune", "tune")
            await _run_step(app, pilot, "verify", "verify")
            shown = {t: _headers(app, t) for t in ("baseline-table", "tune-lanes", "evals", "verify-table")}
            for table, cols in shown.items():
                text = " ".join(cols)
                assert "mV" in text, (table, cols)
                assert "BER" not in text and "log10" not in text, (table, cols)
            app.ctl.close()

    try:
        asyncio.run(go())
    finally:
        emu.stop()


def test_verify_shows_why_and_equal_dwell(tmp_path: Path) -> None:
    async def go() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.goto("devices")
            await pilot.pause()
            app.query_one("#module-res").value = "emu:c2m-10in?seed=3&settle_ms=0&fast=1&name=tui-why"
            await _run_step(app, pilot, "devices", "connect")
            await app.goto("link")
            await pilot.pause()
            app.query_one("#link-budget").value = "3"
            app.query_one("#link-dwell").value = "0.01"
            await _run_step(app, pilot, "link", "confirm")
            await _run_step(app, pilot, "baseline", "measure")
            await _run_step(app, pilot, "tune", "tune")
            assert any("0.01 s" in h for h in _headers(app, "tune-lanes"))  # the tune's dwell is in the label
            await _run_step(app, pilot, "verify", "verify")
            cols = _headers(app, "verify-table")
            assert cols[:4] == ["lane", "decision", "why", "codes held"]
            table = app.query_one("#verify-table")
            why = str(table.get_row_at(0)[2])
            assert why and why != "-"
            # at 80 columns the row shows, unscrolled and whole, what happens to the module: the
            # decision, its reason and the codes the lane now holds
            lane, decision, _why, held = (str(c) for c in table.get_row_at(0)[:4])
            screen = [strip.text for strip in app.screen._compositor.render_strips()]
            row = next(ln for ln in screen if ln.split()[:2] == [lane, decision])
            assert why in row and held in row, (row, held)
            # sideways keys page by half the table's width, not one cell
            table.focus()
            await pilot.pause()
            assert table.max_scroll_x > 0, "the BER columns make the table wider than 80 columns"
            await pilot.press("right")
            await pilot.pause()
            assert table.scroll_x >= min(table.max_scroll_x, table.scrollable_content_region.width // 2)
            vd = app.ctl.tuner.config.verify_dwell
            assert f"both at {vd:g} s dwell" in app.status_text
            app.ctl.close()

    asyncio.run(go())


def test_first_look_offers_to_stop_when_the_baseline_meets_the_target() -> None:
    from eqtune.tui.steps.baseline import first_look

    clean = {1: {"counts": {"bits": 1e12, "errors": 0, "ber": 0.0, "ber_upper95": 3.0e-12}}}
    assert "FIRST LOOK" in first_look(clean, 1e-6)
    marginal = {1: {"counts": {"bits": 1e9, "errors": 500, "ber": 5e-7, "ber_upper95": 5.5e-7}}}
    assert first_look(marginal, 1e-6) == ""  # meets, but not by a decade: tuning may help
    assert first_look({**clean, 2: {"counts": {}}}, 1e-6) == ""  # a lane without counts: no verdict
