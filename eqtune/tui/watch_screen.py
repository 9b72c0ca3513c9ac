"""The watch view (``eqtune watch --tui``): a standalone Textual app.

A table of lanes sorted by risk (findings first, then the lanes closest to their eSNR threshold)
with the newest temperature, eSNR and pre-FEC BER and sparklines of BER and temperature; the row
under the cursor shows its evidence and the suggested action below the table. Polling runs in a
worker thread on the watch interval; ``p`` pauses, ``q`` quits. Values a module does not advertise
are shown as "n/a" (never 0).
"""

from __future__ import annotations

import math
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from eqtune.tui.tables import PagedTable

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 16) -> str:
    """Unicode block sparkline of the last ``width`` values (min..max of those values)."""
    vals = [v for v in values[-width:] if v is not None and math.isfinite(v)]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    span = hi - lo
    return "".join(BARS[0 if span <= 0 else min(len(BARS) - 1, int((v - lo) / span * (len(BARS) - 1) + 0.5))]
                   for v in vals)


def _ber_log(values: list[float]) -> list[float]:
    return [math.log10(v) for v in values if v and v > 0]


# Column order: what to look at first (lane, finding) leads, so an 80-column terminal shows it unscrolled.
COLUMNS = ("lane", "findings", "module", "eSNR dB", "pre-FEC BER", "T C", "BER (log)", "temperature")


def lane_row(st: Any) -> tuple[str, ...]:
    """One table row in ``COLUMNS`` order."""
    kinds = ",".join(sorted({f.kind for f in st.findings})) or "-"
    return (str(st.lane), kinds, st.resource,
            "n/a" if st.esnr_db is None else f"{st.esnr_db:.2f}",
            "n/a" if st.prefec_ber is None else f"{st.prefec_ber:.1e}",
            "n/a" if st.temperature_c is None else f"{st.temperature_c:.1f}",
            sparkline(_ber_log(st.ber_hist)), sparkline(st.temp_hist))


def lane_detail(st: Any) -> str:
    """The highlighted lane: lane and finding, then the action, then the evidence (which may be cut
    off at the bottom on a small terminal; the action never is)."""
    if not st.findings:
        return f"lane {st.lane} of {st.resource}: no finding"
    from eqtune.watch.actions import evidence_line

    kinds = ", ".join(sorted({f.kind for f in st.findings}))
    lines = [f"lane {st.lane} of {st.resource}: {kinds}", f"action: {st.action or '-'}"]
    fl = getattr(st, "frame_loss", None)
    if fl:
        rng = f" ({fl['range'][0]:.1e}..{fl['range'][1]:.1e}, {fl['assumes']})" if "range" in fl else ""
        lines.append(f"  frame loss {fl['ratio']:.1e} {fl['source']}{rng}")
    for f in st.findings:
        lines.append(f"  {f.kind} ({f.metric}): {evidence_line(f)}")
    return "\n".join(lines)


class WatchApp(App):
    """``WatchApp(watcher, count=None, duration_s=None)``; the watcher's sinks (store, exporter)
    receive every interval as with the plain command."""

    CSS = """
    #watch-summary { height: 1; }
    #watch-table { height: 1fr; min-height: 4; }
    #watch-detail { height: auto; max-height: 60%; border-top: solid $accent; }
    """
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("p", "pause", "Pause/resume")]

    def __init__(self, watcher: Any, *, count: int | None = None, duration_s: float | None = None,
                 autostart: bool = True) -> None:
        super().__init__()
        self.watcher = watcher
        self.count = count
        self.duration_s = duration_s
        self.autostart = autostart
        self.paused = False
        self.lanes: list[Any] = []
        self.intervals = 0
        self._busy = False
        self._t0 = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("waiting for the first poll...", id="watch-summary")
        yield PagedTable(id="watch-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="watch-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "eqtune watch"
        table = self.query_one("#watch-table", DataTable)
        table.add_columns(*COLUMNS)
        if self.autostart:
            import time

            self._t0 = time.monotonic()
            self.set_interval(self.watcher.interval_s, self._tick)
            self._tick()

    def _tick(self) -> None:
        if self.paused or self._busy:
            return
        self._busy = True
        self.run_worker(self._poll_thread, thread=True, group="poll")

    def _poll_thread(self) -> None:
        try:
            rep = self.watcher.poll_interval()
            self.call_from_thread(self.show_report, rep)
        finally:
            self._busy = False

    async def poll_now(self) -> Any:
        """Poll one interval in the app's thread (tests)."""
        rep = self.watcher.poll_interval()
        self.show_report(rep)
        return rep

    def show_report(self, rep: Any) -> None:
        import time

        self.intervals = rep.interval
        self.lanes = rep.lanes
        table = self.query_one("#watch-table", DataTable)
        table.clear()
        for st in rep.lanes:
            table.add_row(*lane_row(st), key=f"{st.resource}#{st.lane}")
        failed = sum(not s.ok for s in rep.samples)
        flagged = len({(r, ln) for r, ln, _ in rep.active})
        self.query_one("#watch-summary", Static).update(
            f"interval {rep.interval}: {len(rep.samples) - failed}/{len(rep.samples)} modules, "
            f"{flagged} lane(s) flagged, poll {rep.duration_s:.2f} s" + ("  [paused]" if self.paused else ""))
        self._show_detail(0)
        done = self.count is not None and rep.interval >= self.count
        if self.duration_s is not None and self._t0 is not None:
            done = done or time.monotonic() - self._t0 >= self.duration_s
        if done:
            self.exit()

    def _show_detail(self, row: int) -> None:
        if 0 <= row < len(self.lanes):
            self.query_one("#watch-detail", Static).update(lane_detail(self.lanes[row]))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def action_pause(self) -> None:
        self.paused = not self.paused


def run_watch_tui(targets: list, *, interval_s: float, store: Any = None, exporter: Any = None, cfg: Any = None,
                  count: int | None = None, duration_s: float | None = None, **watcher_options: Any) -> None:
    """``watcher_options``: further :class:`~eqtune.watch.poller.Watcher` settings (``consent_flag``,
    ``sessions_dir``: the re-tune command and its verification, as in the line-mode watch)."""
    from eqtune.watch.poller import Watcher

    watcher = Watcher(targets, interval_s=interval_s, store=store, exporter=exporter, cfg=cfg, **watcher_options)
    try:
        WatchApp(watcher, count=count, duration_s=duration_s).run()
    finally:
        watcher.close()
