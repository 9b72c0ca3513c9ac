"""Step 8: the HTML report for the customer."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, Static

from eqtune.tui.steps.base import StepPane


class ReportPane(StepPane):
    STEP, TITLE = "report", "8 Report"
    ABOUT = "Write the session's HTML report (baseline, tuning, verify, decision, push) for the customer."
    BINDINGS = [Binding("o", "report", "Write report")]
    KEYS = [("Enter / o", "write the HTML report")]

    def compose(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Button("Write report", id="report", compact=True, variant="primary")
        yield Static("", id="report-info")

    def action_report(self) -> None:
        def done(path: Any) -> None:
            self.query_one("#report-info", Static).update(f"report written: {path}\nq quits (asks first).")
            self.status(f"report written: {path}")

        self.run("report", "writing the report...", self.ctl.write_report, done)
