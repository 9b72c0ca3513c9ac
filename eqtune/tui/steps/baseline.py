"""Step 4: a long-dwell measurement of the codes the module holds now (the reference for verify)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Static

from eqtune.tui.format import fmt_ber, fmt_codes, fmt_margin, margin_unit
from eqtune.tui.steps.base import StepPane


def meets_target(counts: dict[str, Any] | None, target: float) -> str:
    """``meets`` when the BER (its 95 % upper bound at 0 errors) is at or below ``target``, else ``misses``."""
    c = counts or {}
    ber = c.get("ber_upper95") if not c.get("errors") else c.get("ber")
    if ber is None:
        ber = c.get("ber")
    if ber is None:
        return "-"
    return "meets" if float(ber) <= target else "misses"


class BaselinePane(StepPane):
    STEP, TITLE = "baseline", "4 Baseline"
    ABOUT = "Measure the codes the module holds now, on every chosen lane (long dwell); read them, then Continue."
    BINDINGS = [Binding("b", "measure", "Measure"), Binding("n", "continue", "Continue")]
    KEYS = [("Enter / b", "measure the current codes on the chosen lanes"),
            ("n / Enter on Continue", "go to step 5 (Tune) once you have read the results")]

    def compose(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Button("Measure baseline", id="measure", compact=True, variant="primary")
            yield Button("Continue to Tune >", id="continue", compact=True, classes="continue")
        yield Static("", id="baseline-info", classes="hint")
        yield DataTable(id="baseline-table", cursor_type="row")

    def on_mount(self) -> None:
        self.query_one("#continue", Button).display = False

    def action_measure(self) -> None:
        self.run("baseline", "measuring the baseline (long dwell on the current codes)...", self.ctl.baseline,
                 lambda _r: self.show())

    def show(self) -> None:
        readings = self.ctl.readings("baseline")
        target = self.ctl.link.target_ber
        metric = self.ctl.link.metric
        table = self.query_one("#baseline-table", DataTable)
        table.clear(columns=True)
        table.add_columns("lane", "codes now", "BER (errors in bits)", f"margin ({margin_unit(metric)})",
                          f"vs {target:g}")
        for ln, r in sorted(readings.items()):
            table.add_row(str(ln), fmt_codes(r.get("codes")), fmt_ber(r.get("counts")),
                          fmt_margin(r.get("margin"), metric, unit=False), meets_target(r.get("counts"), target))
        if readings:
            self.query_one("#baseline-info", Static).update(
                f"baseline of {len(readings)} lane(s); BER '< x (0 errors in N bits)' is the 95 % upper bound. "
                "Enter: continue to Tune")
            self.status("baseline measured: read the table, then Enter (or n) for Step 5 Tune")
            self.focus_button("continue")

    def refresh_view(self) -> None:
        if self.ctl.tuner is not None:
            self.show()
