"""Step 1: who, where, which link; or pick an interrupted session to resume."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Input, Label, Static

from eqtune.tui.controller import SessionForm
from eqtune.tui.messages import Advance
from eqtune.tui.steps.base import Field, StepPane
from eqtune.tui.tables import PagedTable

FIELDS = (("site", "Site", "e.g. DC-Ashburn hall B"), ("customer", "Customer", "e.g. Acme"),
          ("link", "Link label", "e.g. spine3/Eth1 - leaf7/Eth49"), ("operator", "Operator", "e.g. your name"))


class SessionPane(StepPane):
    STEP, TITLE = "session", "1 Session"
    ABOUT = "Fill in the session details (all optional) and press Enter, or resume an interrupted session."
    BINDINGS = [Binding("s", "start", "Start new"), Binding("r", "resume", "Resume selected")]
    KEYS = [("Enter", "in a field: start a new session with these details"),
            ("Tab / Shift+Tab", "next / previous field"),
            ("s", "start a new session (outside a field)"),
            ("r", "resume the session selected in the table")]

    def compose(self) -> ComposeResult:
        for key, label, example in FIELDS:
            with Horizontal(classes="row"):
                yield Label(label)
                yield Field(id=f"meta-{key}", placeholder=example)
        with Horizontal(classes="buttons"):
            yield Button("Start new session", id="start", compact=True, variant="primary")
            yield Button("Resume selected", id="resume", compact=True)
        yield Static("Interrupted and finished sessions (resume: select a row, press r):", classes="hint")
        yield PagedTable(id="sessions", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#sessions", DataTable).add_columns("id", "status", "site", "link", "module", "meas")
        self.refresh_sessions()

    def refresh_sessions(self) -> None:
        table = self.query_one("#sessions", DataTable)
        table.clear()
        try:
            infos = self.ctl.list_sessions()
        except Exception as exc:  # an unreadable folder must not stop the app
            self.fail(exc)
            return
        for info in sorted(infos, key=lambda i: i.created, reverse=True):
            meta = info.metadata or {}
            table.add_row(info.id, info.status, meta.get("site", ""), meta.get("link", ""), info.module,
                          str(info.measurements), key=info.id)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.when_typed(lambda: self.action_start())  # read the form once every typed key is in its field

    def action_start(self) -> None:
        form = SessionForm(**{key: self.value(f"meta-{key}") for key, _, _ in FIELDS})
        self.ctl.new_session(form)
        self.status("Session details kept. Step 2: type the module resource (or e for the emulators), Enter")
        self.post_message(Advance("devices"))

    def action_resume(self) -> None:
        table = self.query_one("#sessions", DataTable)
        if table.row_count == 0:
            self.fail(ValueError(f"no sessions to resume in {self.ctl.sessions_dir}: start a new one"))
            return
        sid = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

        def done(view: Any) -> None:
            from eqtune.tui.controller import journal_progress

            self.app.refresh_all()  # type: ignore[attr-defined]
            prog = journal_progress(view)  # the step the journal says, not a guess from what exists
            self.status(f"resumed {sid}: {prog.text()}; continuing at {prog.step}")
            self.post_message(Advance(prog.step))

        self.run("resume", f"resuming {sid}: reconnecting its module", lambda: self.ctl.resume_session(sid), done)

    def refresh_view(self) -> None:
        for key, _, _ in FIELDS:
            self.query_one(f"#meta-{key}", Input).value = getattr(self.ctl.form, key)
