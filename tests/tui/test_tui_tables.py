"""Sideways scrolling at 80 columns: Left/Right move half the visible width of a table, not one cell,
in every table of the wizard."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from eqtune.tui.app import EqtuneApp
from eqtune.tui.controller import STEPS
from eqtune.tui.tables import PagedTable, half_page


def test_half_page_is_at_least_one_cell() -> None:
    assert half_page(78) == 39 and half_page(1) == 1 and half_page(0) == 1


class _Wide(App):
    def compose(self) -> ComposeResult:
        yield PagedTable(id="wide", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(PagedTable)
        table.add_columns(*(f"column {i:02d}" for i in range(20)))  # about 240 cells wide
        table.add_row(*(f"value {i:02d}" for i in range(20)))


def test_left_right_page_by_half_the_width() -> None:
    async def run() -> None:
        app = _Wide()
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.query_one(PagedTable)
            table.focus()
            await pilot.pause()
            half = table.scrollable_content_region.width // 2
            assert table.max_scroll_x > 2 * half
            await pilot.press("right")
            await pilot.pause()
            assert table.scroll_x == half
            await pilot.press("right")
            await pilot.pause()
            assert table.scroll_x == 2 * half
            await pilot.press("left")
            await pilot.pause()
            assert table.scroll_x == half

    asyncio.run(run())


def test_every_wizard_table_pages(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            for step in STEPS:  # panes open lazily
                await app.ensure_pane(step)
            await pilot.pause()
            tables = list(app.query(DataTable))
            ids = {t.id for t in tables}
            assert {"sessions", "lane-codes", "baseline-table", "tune-lanes", "evals", "verify-table",
                    "push-table"} <= ids, ids
            assert [t.id for t in tables if not isinstance(t, PagedTable)] == []

    asyncio.run(run())
