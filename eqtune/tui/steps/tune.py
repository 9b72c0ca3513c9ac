"""Step 5: the live tuning loop, with progress, ETA, PAUSED, and the best codes of every lane."""

from __future__ import annotations

import time
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, ProgressBar, Static

from eqtune.textsafe import printable
from eqtune.tui.format import eta_s, fmt_codes, fmt_duration, fmt_margin, margin_unit
from eqtune.tui.steps.base import StepPane
from eqtune.tui.tables import PagedTable


class TunePane(StepPane):
    STEP, TITLE = "tune", "5 Tune"
    ABOUT = ("Tune the chosen lanes against the module. Pause holds the loop after the measurement in flight; "
             "abort (asks first) restores the original codes.")
    BINDINGS = [Binding("t", "tune", "Tune"), Binding("p", "pause", "Pause/resume"),
                Binding("a", "abort", "Abort"), Binding("n", "continue", "Continue")]
    KEYS = [("Enter / t", "start tuning"), ("p", "pause / resume (after the measurement in flight)"),
            ("a", "abort: asks, then restores the original codes"),
            ("n / Enter on Continue", "go to step 6 (Verify) when tuning is done")]
    BUSY_OK = ("pause", "abort")

    def compose(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Button("Start tuning", id="tune", compact=True, variant="primary")
            yield Button("Pause/resume", id="pause", compact=True)
            yield Button("Abort", id="abort", compact=True, variant="error")
            yield Button("Continue to Verify >", id="continue", compact=True, classes="continue")
        yield ProgressBar(total=1, id="progress", show_eta=False)
        yield Static("not started", id="tune-state")
        yield PagedTable(id="tune-lanes", cursor_type="row")
        yield PagedTable(id="evals", cursor_type="row")

    def on_mount(self) -> None:
        self.query_one("#continue", Button).display = False
        self.evaluations = 0
        self.started = 0.0
        self.paused = False
        self.best: dict[int, tuple[float, dict[str, int]]] = {}
        self.lane_evals: dict[int, int] = {}
        self.stops: list[str] = []  # the stop rules that ended lane groups early, as the event says them
        self.start_count = 0  # evaluations already journaled when this run started (the ETA counts the rest)

    def _columns(self) -> None:
        unit = margin_unit(self.ctl.link.metric)
        dwell = self.ctl.tuner.config.dwell_s if self.ctl.tuner is not None else self.ctl.link.dwell_s
        lanes = self.query_one("#tune-lanes", DataTable)
        lanes.clear(columns=True)
        # the tune's dwell is in the label: its margins are not the baseline's (a longer dwell); Verify
        # compares the two at the same dwell
        lanes.add_columns("lane", "evals", f"best ({unit}, {dwell:g} s)", "best codes so far")
        for ln in self.ctl.lanes:
            lanes.add_row(str(ln), "0", "-", "-", key=str(ln))
        evals = self.query_one("#evals", DataTable)
        evals.clear(columns=True)
        evals.add_columns("#", "lane", "codes", f"margin ({unit}, {dwell:g} s dwell)")

    def replay(self) -> None:
        """Draw the journaled evaluations (a resumed session, or a second press of t): the table, the
        best so far and the counts are the journal's, the same records the report counts."""
        prog = self.ctl.progress()
        self._columns()
        self.evaluations, self.best, self.lane_evals = 0, {}, {}
        if prog is None or self.ctl.tuner is None:
            self._state()
            return
        metric = self.ctl.link.metric
        evals = self.query_one("#evals", DataTable)
        for gi, _g in enumerate((self.ctl.tuner.view.plan() or {}).get("groups") or []):
            for m in self.ctl.tuner.view.measurements(gi):
                for key, r in sorted((m.get("lanes") or {}).items(), key=lambda kv: int(kv[0])):
                    self.evaluations += 1
                    evals.add_row(str(self.evaluations), str(int(key)), fmt_codes(r.get("codes")),
                                  fmt_margin(r.get("margin"), metric, unit=False))
        self.lane_evals = {ln: n for ln, n in prog.evaluations.items()}
        self.best = dict(prog.best)
        lanes = self.query_one("#tune-lanes", DataTable)
        cols = [c.key for c in lanes.ordered_columns]
        for ln in self.ctl.lanes:
            if str(ln) in lanes.rows:
                lanes.update_cell(str(ln), cols[1], str(self.lane_evals.get(ln, 0)), update_width=True)
                if ln in self.best:
                    lanes.update_cell(str(ln), cols[2], fmt_margin(self.best[ln][0], metric, unit=False),
                                      update_width=True)
                    lanes.update_cell(str(ln), cols[3], fmt_codes(self.best[ln][1]), update_width=True)
        if evals.row_count:
            evals.move_cursor(row=evals.row_count - 1)
        self._state()
        if prog.tuned:
            # why each group stopped, from the journal (a resumed session saw no stop event)
            stops = "".join(f"; lanes {','.join(map(str, s['lanes']))} stopped ({s['rule']}): {s['reason']}"
                            for s in self.ctl.tuner.result().stops())
            self.query_one("#tune-state", Static).update(
                f"DONE: {self.evaluations} evaluations journaled; Verify measures the best codes against the "
                f"baseline{printable(stops)}")
            self.query_one("#continue", Button).display = True

    def refresh_view(self) -> None:
        if self.ctl.tuner is not None and self.busy != "tune":
            self.replay()

    def action_tune(self) -> None:
        if self.ctl.phase in ("aborted", "failed"):
            self.fail(RuntimeError(f"this session was {self.ctl.phase} and its original codes restored: "
                                   "to tune again, confirm the link on step 3 (opens a new session)"))
            return
        prog = self.ctl.progress()
        if prog is not None and prog.step == "baseline":  # the tune would measure it unseen: show it
            from eqtune.tui.messages import Advance

            self.status("the baseline is not measured yet: measure it on step 4 first", error=True)
            self.post_message(Advance("baseline"))
            return
        self.replay()  # continue the journal's counts, never from 0
        self.started, self.paused, self.start_count = time.monotonic(), False, self.evaluations
        self.stops = []
        self.query_one("#continue", Button).display = False
        self._state()

        def done(rec: dict[int, dict[str, int]]) -> None:
            if self.ctl.phase in ("aborted", "failed"):
                self.query_one("#tune-state", Static).update(
                    f"{self.ctl.phase.upper()}: original codes restored on the module "
                    f"(session {self.ctl.session_id} keeps every measurement)")
                self.status(f"tuning {self.ctl.phase}: original codes restored", error=True)
                return
            early = "".join(f"; {t}" for t in self.stops)
            self.query_one("#tune-state", Static).update(
                f"DONE in {fmt_duration(time.monotonic() - self.started)}, {self.evaluations} evaluations: "
                f"the best codes of {len(rec)} lane(s) are in the table (margins at the tune dwell); Verify "
                f"measures them and the baseline at the same dwell{early}")
            self.status("tuned: read the best codes per lane, then Enter (or n) for Step 6 Verify")
            self.focus_button("continue")

        self.run("tune", "tuning: the first write and measurement are on their way...", self.ctl.tune, done)

    def action_pause(self) -> None:
        if self.ctl.paused:
            self.ctl.unpause()
        else:
            self.ctl.pause()

    def action_abort(self) -> None:
        if self.ctl.tuner is None or self.busy != "tune":
            self.status("nothing to abort: tuning is not running")
            return
        self.confirm("Abort tuning?",
                     "The measurement in flight finishes, then the module gets its ORIGINAL codes back "
                     "(read back to check). The journal keeps every measurement.", self._abort)

    def _abort(self) -> None:
        self.ctl.abort()
        self.status("aborting: the current measurement finishes, then the original codes are restored")

    # -- live events (UI thread) -----------------------------------------------------------------
    def on_live_event(self, ev: Any) -> None:
        d = ev.data
        if ev.kind in ("paused", "resumed"):
            self.paused = ev.kind == "paused"
            self._state()
        if ev.kind == "stop":  # a lane group ended early by a stop rule: say which and why
            self.stops.append(ev.text().strip())
            self.status(self.stops[-1])
        if ev.kind != "evaluation":
            return
        self.evaluations += 1
        metric = self.ctl.link.metric
        ln, margin = int(d.get("lane", 0)), d.get("margin")
        self.lane_evals[ln] = self.lane_evals.get(ln, 0) + 1
        if margin is not None and (ln not in self.best or float(margin) > self.best[ln][0]):
            self.best[ln] = (float(margin), dict(d.get("codes") or {}))
        lanes = self.query_one("#tune-lanes", DataTable)
        if str(ln) in lanes.rows:
            cols = [c.key for c in lanes.ordered_columns]
            lanes.update_cell(str(ln), cols[1], str(self.lane_evals[ln]), update_width=True)
            if ln in self.best:
                lanes.update_cell(str(ln), cols[2], fmt_margin(self.best[ln][0], metric, unit=False),
                                  update_width=True)
                lanes.update_cell(str(ln), cols[3], fmt_codes(self.best[ln][1]), update_width=True)
        evals = self.query_one("#evals", DataTable)
        evals.add_row(str(self.evaluations), str(ln), fmt_codes(d.get("codes")), fmt_margin(margin, metric, unit=False))
        evals.move_cursor(row=evals.row_count - 1)
        self._state(int(d.get("budget", 1)))

    def _state(self, budget: int | None = None) -> None:
        total = (budget or self.ctl.link.budget) * max(1, len(self.ctl.lanes))
        self.query_one("#progress", ProgressBar).update(total=total, progress=self.evaluations)
        elapsed = time.monotonic() - self.started if self.started else 0.0
        text = (f"{'PAUSED - press p to resume.  ' if self.paused else ''}"
                f"evaluation {self.evaluations}/{total} (budget {budget or self.ctl.link.budget} per lane; "
                f"may stop early)  elapsed {fmt_duration(elapsed)}  "
                f"ETA {'paused' if self.paused else fmt_duration(eta_s(self.evaluations - self.start_count, total - self.start_count, elapsed))}")
        self.query_one("#tune-state", Static).update(text)
