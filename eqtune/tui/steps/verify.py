"""Step 6: long-dwell verification of the tuned codes against the baseline, a keep/restore decision
per lane, and the model eye of the codes each lane now holds (with its legend)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Static

from eqtune.serdes.knobs import BER_METRICS
from eqtune.tui.format import fmt_ber, fmt_codes, margin_unit, short_reason
from eqtune.tui.steps.base import StepPane
from eqtune.tui.tables import PagedTable

#: shown beside the eye (22 columns: fits next to a 56-column eye at 80 columns)
EYE_LEGEND = "\n".join((
    "legend",
    "@%*+=-:. density,",
    "  high to low (log10,",
    "  6 decades)",
    "blank: open at the",
    "  target BER",
    "| : sampling instant",
    "width: 1 UI",
    "height: voltage"))


class VerifyPane(StepPane):
    STEP, TITLE = "verify", "6 Verify"
    ABOUT = ("Measure the tuned codes with the baseline's long dwell; per lane the better is kept "
             "(restore = original codes back). Up/Down picks the lane whose eye is shown.")
    BINDINGS = [Binding("v", "verify", "Verify"), Binding("n", "continue", "Continue")]
    KEYS = [("Enter / v", "verify tuned vs baseline on every lane and decide keep/restore"),
            ("Up / Down", "choose the lane whose model eye is shown"),
            ("n / Enter on Continue", "go to step 7 (Save & push) once you have read the results")]

    def compose(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Button("Verify", id="verify", compact=True, variant="primary")
            yield Button("Continue to Save >", id="continue", compact=True, classes="continue")
        yield PagedTable(id="verify-table", cursor_type="row")
        yield Static("", id="verify-note", classes="hint")
        yield Static("", id="eye-caption")
        with Horizontal(id="eye-row"):
            yield Static("", id="model-eye")
            yield Static("", id="eye-legend", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#continue", Button).display = False

    def action_verify(self) -> None:
        from eqtune.tui.messages import Advance

        prog = self.ctl.progress()
        if prog is not None and prog.step in ("baseline", "tune"):  # verify would run them unseen: show them
            self.status(f"not yet: {prog.text()}. Continue on step {prog.step} first", error=True)
            self.post_message(Advance(prog.step))
            return
        self.run("verify", "verifying: long dwell on the tuned codes of every lane...", self.ctl.verify,
                 lambda _r: self.show())

    def show(self, *, quiet: bool = False) -> None:
        """Draw the journal's verification and decisions; ``quiet``: a redraw (a resume), the status line
        keeps what it says."""
        c = self.ctl
        metric = c.link.metric
        base, ver = c.readings("baseline"), c.readings("verify")
        table = self.query_one("#verify-table", DataTable)
        table.clear(columns=True)
        # 80 columns: what happens to the module first (decision, why, the codes it now holds), then the
        # numbers behind it; sideways keys page by half the width (PagedTable)
        ber = metric in BER_METRICS
        table.add_columns("lane", "decision", "why", "codes held", f"{margin_unit(metric)} base->verify",
                          *(("BER before", "BER after") if ber else ()))
        results = c.lane_results()
        reasons = {ln: str(d.get("reason") or "") for ln, d in (c.tuner.view.decisions() if c.tuner else {}).items()}
        for ln, r in sorted(results.items()):
            before = "-" if r.baseline_margin is None else f"{r.baseline_margin:.2f}"
            after = "-" if r.verified_margin is None else f"{r.verified_margin:.2f}"
            table.add_row(str(ln), r.decision or "-", short_reason(reasons.get(ln, "")) if r.decision else "-",
                          fmt_codes(r.final or r.original), f"{before}->{after}",
                          *((fmt_ber((base.get(ln) or {}).get("counts"), short=True),
                             fmt_ber((ver.get(ln) or {}).get("counts"), short=True)) if ber else ()),
                          key=str(ln))
        if not ver:
            return
        vd = c.tuner.config.verify_dwell if c.tuner is not None else None
        self.query_one("#verify-note", Static).update(
            (f"baseline and verify both at {vd:g} s dwell (equal confidence). " if vd else "")
            + "keep = tuned codes held; restore = original codes back"
            + ("; BER as errors/bits, '< x' = 95 % upper bound at 0 errors" if ber else ""))
        self.show_eye(sorted(results)[0] if results else None)
        if not all(r.decision for r in results.values()):  # a resume between verification and decision
            if not quiet:
                self.status("verification journaled, keep/restore not decided yet: v decides (no new measurement)")
            return
        if not quiet:
            self.status((f"verified (baseline and tuned both at {vd:g} s dwell)" if vd else "verified")
                        + ": read the table and the eye, then Enter (or n) for Step 7 Save & push")
        self.focus_button("continue")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "verify-table" and event.row_key is not None and self.ctl.readings("verify"):
            self.show_eye(int(str(event.row_key.value)))

    def show_eye(self, lane: int | None) -> None:
        from rich.text import Text

        lines = self.ctl.model_eye_for(lane) if lane is not None else []
        caption = lines[0] if lines else "no model eye (no channel named, or the model closes the eye)"
        self.query_one("#eye-caption", Static).update(Text(caption))
        self.query_one("#model-eye", Static).update(Text("\n".join(lines[1:])))  # no markup
        self.query_one("#eye-legend", Static).update(EYE_LEGEND if lines else "")

    def refresh_view(self) -> None:
        if self.ctl.tuner is not None and self.ctl.readings("verify"):
            self.show(quiet=True)
