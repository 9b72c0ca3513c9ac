"""Step 7: save the session's profile, then push it (after a confirmation) to this module and others."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Input, Label, Static

from eqtune.tui.messages import Advance
from eqtune.tui.steps.base import Field, StepPane
from eqtune.tui.tables import PagedTable


class SavePane(StepPane):
    STEP, TITLE = "save", "7 Save"
    ABOUT = ("Save the profile (the codes each lane holds), then push it: every write is validated first, "
             "read back, and rolled back on a mismatch. Push asks first.")
    BINDINGS = [Binding("w", "save", "Save profile"), Binding("u", "push", "Push"),
                Binding("n", "continue", "Continue")]
    KEYS = [("Enter / w", "save the profile (in the field: save, then push)"),
            ("u", "push the saved profile (asks first)"),
            ("n", "go to step 8 (Report)")]

    def compose(self) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Label("More modules")
            yield Field(id="push-more", placeholder="optional: other modules of the same PN, comma separated")
        with Horizontal(classes="buttons"):
            yield Button("Save profile", id="save", compact=True, variant="primary")
            yield Button("Push...", id="push", compact=True, variant="warning")
            yield Button("Continue to Report >", id="continue", compact=True, classes="continue")
        yield Static("", id="profile-info")
        yield PagedTable(id="push-table", cursor_type="row")

    def on_mount(self) -> None:
        self.query_one("#push-table", DataTable).add_columns("module", "status", "outages", "message")
        self.query_one("#continue", Button).display = False

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.when_typed(self.action_save if self.ctl.profile_path is None else self.action_push)

    def action_save(self) -> None:
        def done(path: Any) -> None:
            self.query_one("#profile-info", Static).update(f"profile saved: {path}")
            self.status(f"profile saved to {path}; u (or Push) writes it to the module after a confirmation")
            self.query_one("#push", Button).focus()

        self.run("save", "saving the profile...", self.ctl.save_profile, done)

    def action_push(self) -> None:
        if self.ctl.profile_path is None:
            self.status("no profile saved yet: press w (Save profile) first", error=True)
            return
        extra = [r.strip() for r in self.value("push-more").split(",") if r.strip()]
        targets = [self.ctl.module_resource] + extra
        try:
            notice = self.ctl.push_notice()
        except Exception as exc:
            self.fail(exc)
            return
        down = ""
        if notice is not None:
            down = (f"\nTRAFFIC GOES DOWN: {notice.trigger} re-initializes the data path of lane(s) "
                    f"{','.join(map(str, notice.lanes))} on {self.ctl.module_resource}: 1 outage per module, "
                    f"{notice.length_text()}. y accepts the outage(s) (a maintenance window).")
        self.confirm("Push the profile?" + (" Traffic goes down" if notice is not None else ""),
                     f"Write {self.ctl.profile_path.name} to {len(targets)} module(s): {', '.join(targets)}. "
                     "Each write is checked before any I/O, read back, and rolled back on a mismatch. "
                     "Module codes are volatile: a reset or reboot restores the module's defaults; to keep "
                     f"them, export the profile to the NOS (eqtune profile export {self.ctl.profile_path.name} "
                     "--format sonic-optics-si|fboss)." + down,
                     lambda: self._push(extra, allow_traffic_down=notice is not None))

    def _push(self, extra: list[str], *, allow_traffic_down: bool = False) -> None:
        def done(report: Any) -> None:
            table = self.query_one("#push-table", DataTable)
            table.clear()
            for r in report.results:
                table.add_row(str(r.resource), r.status, str(len(r.outages)), r.message)
            self.status(" / ".join(report.summary_lines()) + (". Enter: continue to the report" if report.ok else ""),
                        error=not report.ok)
            if report.ok:
                self.focus_button("continue")

        self.run("push", "pushing the profile (write, read back)...",
                 lambda: self.ctl.push(extra, allow_traffic_down=allow_traffic_down), done)

    def action_continue(self) -> None:
        self.post_message(Advance("report"))
