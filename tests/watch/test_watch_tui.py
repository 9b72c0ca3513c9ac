"""The watch TUI view: lanes sorted by risk (the planted weak lanes first), n/a for what a module
does not advertise, evidence and action of the highlighted lane."""

from __future__ import annotations

import asyncio

from eqtune.tui.watch_screen import COLUMNS, WatchApp, sparkline
from eqtune.watch.detect import DetectConfig
from eqtune.watch.fleet import FleetSpec, start_fleet
from eqtune.watch.poller import Watcher
from eqtune.watch.targets import WatchTarget


def test_sparkline_scales_min_to_max():
    assert sparkline([1.0, 2.0, 3.0]) == "▁▅█"
    assert sparkline([]) == "" and sparkline([5.0, 5.0]) == "▁▁"


def _screen_lines(app: WatchApp) -> list[str]:
    """The screen as rendered, one string per terminal row (what a user sees)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def _fleet_watcher(fleet, clock: list[float]) -> Watcher:
    # the planted lane runs a fixed Tx input EQ code (its best one, as a fleet's optics_si_settings would
    # set it), so a re-tune is what the watch suggests there (an adaptive lane gets a reseat)
    from eqtune.drivers.cmis import open_module

    for m, lane in fleet.spec.planted:
        with open_module(fleet.resources[m]) as mod:
            mod.apply_eq({lane: {"tx_eq": 10}})
    return Watcher([WatchTarget(r, channel="c2m-10in") for r in fleet.resources], interval_s=10.0,
                   cfg=DetectConfig(), clock=lambda: clock[0])


def test_watch_view_at_80x24_shows_lane_finding_and_action_unclipped():
    """On an 80x24 terminal the flagged lane's number, its finding and the whole suggested command are
    on screen without scrolling; sideways keys move half the table's width, not one cell."""
    clock = [1.75e9]
    spec = FleetSpec(modules=4, planted=[(1, 3)], stable_marginal=[(2, 6)])
    with start_fleet(spec, clock=lambda: clock[0]) as fleet:
        watcher = _fleet_watcher(fleet, clock)

        async def run() -> None:
            app = WatchApp(watcher, autostart=False)
            async with app.run_test(size=(80, 24)) as pilot:
                for _ in range(25):
                    await app.poll_now()
                    clock[0] += 10.0
                await pilot.pause()
                lines = _screen_lines(app)
                assert len(lines) == 24 and all(len(ln) <= 80 for ln in lines)
                # the top table row: lane and finding visible
                row = next(ln for ln in lines if fleet.resources[1] in ln and "thermal" in ln)
                assert row.split()[:2] == ["3", "thermal"]
                # the detail: lane and finding first, then the complete action command
                screen = " ".join(ln.strip() for ln in lines)
                assert f"lane 3 of {fleet.resources[1]}: thermal" in screen
                assert (f"eqtune tune c2m-10in --live --module {fleet.resources[1]} --lane 3 "
                        "--direction module_rx --knobs tx_eq --module-ber") in screen
                # sideways: one key moves at least half the visible width (or to the end)
                table = app.query_one("#watch-table")
                table.focus()
                await pilot.pause()
                assert table.max_scroll_x > 0, "the table should be wider than 80 columns here"
                await pilot.press("right")
                await pilot.pause()
                want = min(table.max_scroll_x, table.scrollable_content_region.width // 2)
                assert table.scroll_x >= want
                await pilot.press("left")
                await pilot.pause()
                assert table.scroll_x == 0

        try:
            asyncio.run(run())
        finally:
            watcher.close()


def test_watch_view_sorts_planted_lanes_first():
    clock = [1.75e9]
    spec = FleetSpec(modules=4, planted=[(1, 3)], stable_marginal=[(2, 6)])
    with start_fleet(spec, clock=lambda: clock[0]) as fleet:
        watcher = _fleet_watcher(fleet, clock)

        async def run() -> None:
            app = WatchApp(watcher, autostart=False)
            async with app.run_test(size=(140, 40)) as pilot:
                for _ in range(25):
                    await app.poll_now()
                    clock[0] += 10.0
                await pilot.pause()
                table = app.query_one("#watch-table")
                assert table.row_count == 4 * 8
                top = dict(zip(COLUMNS, table.get_row_at(0)))
                assert (top["module"], top["lane"]) == (fleet.resources[1], "3")
                assert "thermal" in top["findings"]
                assert len(top["BER (log)"]) > 5 and len(top["temperature"]) > 5  # sparklines
                detail = str(app.query_one("#watch-detail").render())
                assert "thermal" in detail and "eqtune tune c2m-10in --live --module" in detail
                # the marginal but stable lane ranks next (closest to its threshold) with no finding
                second = dict(zip(COLUMNS, table.get_row_at(1)))
                assert (second["module"], second["lane"], second["findings"]) == (fleet.resources[2], "6", "-")
                await pilot.press("p")
                assert app.paused

        try:
            asyncio.run(run())
        finally:
            watcher.close()
