"""A data table that scrolls sideways by half its visible width per key.

Textual's ``DataTable`` with a row cursor scrolls one cell (one character) per Left/Right key, so on an
80-column terminal a wide table needs dozens of presses to reach its last column. ``PagedTable`` moves
half the visible width per key (at least one cell), so two presses bring the right half into view.
"""

from __future__ import annotations

from textual.widgets import DataTable


def half_page(visible_width: int) -> int:
    """Cells to scroll per sideways key: half the visible width, at least 1."""
    return max(1, visible_width // 2)


class PagedTable(DataTable):
    """``DataTable`` whose sideways scroll (row or no cursor) moves half the visible width per key."""

    def action_cursor_right(self) -> None:
        if self.show_cursor and self.cursor_type in ("cell", "column"):
            super().action_cursor_right()
            return
        self.scroll_to(x=self.scroll_x + half_page(self.scrollable_content_region.width), animate=False)

    def action_cursor_left(self) -> None:
        if self.show_cursor and self.cursor_type in ("cell", "column"):
            super().action_cursor_left()
            return
        self.scroll_to(x=self.scroll_x - half_page(self.scrollable_content_region.width), animate=False)
