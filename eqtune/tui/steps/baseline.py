"""Step 4: a long-dwell measurement of the codes the module holds now (the reference for verify)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Static

from eqtune.serdes.knobs import BER_METRICS
from eqtune.tui.format import fmt_ber, fmt_codes, fmt_margin, margin_unit
from eqtune.tui.steps.base import StepPane
from eqtune.tui.tables import PagedTable


def meets_target(counts: dict[str, Any] | None, target: float) -> str:
    """``meets`` when the BER (its 95 % upper bound at 0 errors) is at or below ``target``, else ``misses``."""
    c = counts or {}
    ber = c.get("ber_upper95") if not c.get("errors") else c.get("ber")
    if ber is None:
        ber = c.get("ber")
    if ber is None:
        return "-"
    return "meets" if float(ber) <= target else "misses"


FIRST_LOOK_MARGIN = 10.0  # "with margin": the BER (or its 95 % bound) a decade below the target


def first_look(readings: dict[int, dict[str, Any]], target: float) -> str:
    """The verdict after the baseline when every lane already meets ``target`` with a decade of margin
    (the measured BER, or its 95 % upper bound at 0 errors, <= target / 10); "" otherwise."""
    worst = 0.0
    for r in readings.values():
        c = r.get("counts") or {}
        ber = c.get("ber_upper95") if not c.get("errors") else c.get("ber")
        if ber is None:
            return ""
        worst = max(worst, float(ber))
    if not readings or worst > target / FIRST_LOOK_MARGIN:
        return ""
    return (f"FIRST LOOK: every lane already meets the target BER {target:g} with margin (worst {worst:.1e}, "
            f"at most a tenth of the target). Tuning can at best confirm it.")


class BaselinePane(StepPane):
    STEP, TITLE = "baseline", "4 Baseline"
    ABOUT = "Measure the codes the module holds now, on every chosen lane (long dwell); read them, then Continue."
    BINDINGS = [Binding("b", "measure", "Measure"), Binding("n", "continue", "Continue"),
                Binding("x", "stop_here", "Stop here")]
    KEYS = [("Enter / b", "measure the current codes on the chosen lanes"),
            ("x", "when every lane already meets the target: stop here, the module keeps its codes"),
            ("n / Enter on Continue", "go to step 5 (Tune) once you have read the results")]

    def compose(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Button("Measure baseline", id="measure", compact=True, variant="primary")
            yield Button("Continue to Tune >", id="continue", compact=True, classes="continue")
            yield Button("Stop here (keep codes)", id="stop_here", compact=True)
        yield Static("", id="baseline-info", classes="hint")
        yield PagedTable(id="baseline-table", cursor_type="row")

    def on_mount(self) -> None:
        self.query_one("#continue", Button).display = False
        self.query_one("#stop_here", Button).display = False

    def action_measure(self) -> None:
        self.run("baseline", "measuring the baseline (long dwell on the current codes)...", self.ctl.baseline,
                 lambda _r: self.show())

    def show(self) -> None:
        readings = self.ctl.readings("baseline")
        target = self.ctl.link.target_ber
        metric = self.ctl.link.metric
        ber = metric in BER_METRICS  # a scope's eye height (mV) has no bit counts and no BER target
        table = self.query_one("#baseline-table", DataTable)
        table.clear(columns=True)  # a scope's eye height (mV) has no bit counts and no BER target
        table.add_columns("lane", f"margin ({margin_unit(metric)})", *((f"vs {target:g}", "BER (errors/bits)")
                                                                      if ber else ()), "codes now")
        for ln, r in sorted(readings.items()):
            table.add_row(str(ln), fmt_margin(r.get("margin"), metric, unit=False),
                          *((meets_target(r.get("counts"), target), fmt_ber(r.get("counts"), short=True)) if ber else ()),
                          fmt_codes(r.get("codes")))
        if readings:
            verdict = first_look(readings, target) if ber else ""
            self.query_one("#baseline-info", Static).update(
                verdict or f"baseline of {len(readings)} lane(s); BER '< x (0 errors in N bits)' is the 95 % upper "
                           "bound. Enter: continue to Tune")
            self.query_one("#stop_here", Button).display = bool(verdict)
            self.app.refresh_bindings()
            self.status("baseline: every lane already meets the target with margin; x stops here, Enter tunes"
                        if verdict else "baseline measured: read the table, then Enter (or n) for Step 5 Tune")
            self.focus_button("continue")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_here" and not self.query_one("#stop_here", Button).display:
            return False  # offered only after a first-look verdict
        return super().check_action(action, parameters)

    def action_stop_here(self) -> None:
        readings = self.ctl.readings("baseline")
        verdict = first_look(readings, self.ctl.link.target_ber) if readings else ""
        if not verdict:
            self.status("stop here is offered only when every lane already meets the target with margin")
            return
        self.confirm("Stop after the baseline?",
                     verdict + " The session ends now; the module keeps the codes it holds (nothing more is "
                     "written). Save and report stay available.", lambda: self._stop_here(verdict))

    def _stop_here(self, verdict: str) -> None:
        from eqtune.tui.messages import Advance

        self.ctl.stop_after_baseline(verdict)
        self.status("stopped after the baseline: the module keeps its codes. Step 8 writes the report")
        self.post_message(Advance("report"))

    def refresh_view(self) -> None:
        if self.ctl.tuner is not None:
            self.show()
