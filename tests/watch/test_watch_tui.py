"""The watch TUI view: lanes sorted by risk (the planted weak lanes first), n/a for what a module
does not advertise, evidence and action of the highlighted lane."""

from __future__ import annotations

import asyncio

from eqtune.tui.watch_screen import WatchApp, sparkline
from eqtune.watch.detect import DetectConfig
from eqtune.watch.fleet import FleetSpec, start_fleet
from eqtune.watch.poller import Watcher
from eqtune.watch.targets import WatchTarget


def test_sparkline_scales_min_to_max():
    assert sparkline([1.0, 2.0, 3.0]) == "▁▅█"
    assert sparkline([]) == "" and sparkline([5.0, 5.0]) == "▁▁"


def test_watch_view_sorts_planted_lanes_first():
    clock = [1.75e9]
    spec = FleetSpec(modules=4, planted=[(1, 3)], stable_marginal=[(2, 6)])
    with start_fleet(spec, clock=lambda: clock[0]) as fleet:
        watcher = Watcher([WatchTarget(r, channel="c2m-10in") for r in fleet.resources], interval_s=10.0,
                          cfg=DetectConfig(), clock=lambda: clock[0])

        async def run() -> None:
            app = WatchApp(watcher, autostart=False)
            async with app.run_test(size=(140, 40)) as pilot:
                for _ in range(25):
                    await app.poll_now()
                    clock[0] += 10.0
                await pilot.pause()
                table = app.query_one("#watch-table")
                assert table.row_count == 4 * 8
                top = table.get_row_at(0)
                assert (top[0], top[1]) == (fleet.resources[1], "3")
                assert "thermal" in top[7] and len(top[5]) > 5 and len(top[6]) > 5  # sparklines
                detail = str(app.query_one("#watch-detail").render())
                assert "thermal" in detail and "eqtune tune c2m-10in --live --module" in detail
                # the marginal but stable lane ranks next (closest to its threshold) with no finding
                second = table.get_row_at(1)
                assert (second[0], second[1], second[7]) == (fleet.resources[2], "6", "-")
                await pilot.press("p")
                assert app.paused

        try:
            asyncio.run(run())
        finally:
            watcher.close()
