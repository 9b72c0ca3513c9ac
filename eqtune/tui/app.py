"""The FAE's on-site screen: a guided, keyboard-first Textual app over ``SessionController``.

Eight steps, each a tab reachable with its number key: Session, Devices, Link, Baseline, Tune,
Verify, Save & push, Report; ``n`` moves to the next step. Every action has a key shown in the
footer (only the keys of the current step are shown). Long steps run in a worker thread; the UI
thread only draws, so keys stay responsive while a tune runs. A device error is a notification
and a status line with what to do, never a crash. Fits 80x24; ``d`` toggles light/dark.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import (
    DataTable,
    Footer,
    Header,
    Input,
    Label,
    ProgressBar,
    Sparkline,
    Static,
    TabbedContent,
    TabPane,
    Tabs,
)

from eqtune.tui.controller import STEPS, LinkForm, SessionController, SessionForm

STEP_TITLES = {
    "session": "1 Session", "devices": "2 Devices", "link": "3 Link", "baseline": "4 Baseline",
    "tune": "5 Tune", "verify": "6 Verify", "save": "7 Save", "report": "8 Report",
}
STEP_HINTS = {
    "session": "Step 1: fill in the session details and press s, or pick a session and press r",
    "devices": "Step 2: type the module resource (or press e for the emulators), lanes, and press c",
    "link": "Step 3: choose channel, target BER, objective, knobs, budget; press l to open the journal",
    "baseline": "Step 4: press b to measure the current codes",
    "tune": "Step 5: press t to tune; p pauses, a aborts and restores the original codes",
    "verify": "Step 6: press v to verify the tuned codes against the baseline",
    "save": "Step 7: press w to save the profile, then u to push it",
    "report": "Step 8: press o to write the HTML report",
}
# action -> the step on which its key is live (others are hidden from the footer)
STEP_ACTIONS = {
    "start_session": "session", "resume_session": "session",
    "use_emulators": "devices", "connect": "devices",
    "confirm_link": "link",
    "baseline": "baseline",
    "tune": "tune", "pause": "tune", "abort": "tune",
    "verify": "verify",
    "save_profile": "save", "push": "save",
    "write_report": "report",
}


def _codes(c: dict[str, Any] | None) -> str:
    return " ".join(f"{k.replace('rx_', '')}={v}" for k, v in sorted((c or {}).items())) or "-"


def _num(x: Any, fmt: str = ".2f") -> str:
    return "-" if x is None else format(float(x), fmt)


def _lanes(text: str) -> list[int]:
    from eqtune.errors import InputError

    try:
        return [int(p) for p in text.replace(" ", "").split(",") if p]
    except ValueError:
        raise InputError(f"lanes {text!r}: give lane numbers separated by commas, e.g. 1,2") from None


class EqtuneApp(App):
    """``eqtune tui``."""

    TITLE = "eqtune"
    SUB_TITLE = "on-site link tuning"
    CSS = """
    Screen { layout: vertical; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0 1; }
    .row { height: 1; margin: 0 0; }
    .row Label { width: 14; }
    .row Input { width: 1fr; }
    Input { height: 1; border: none; padding: 0 1; background: $boost; }
    Input:focus { background: $accent 30%; }
    DataTable { height: 1fr; min-height: 3; }
    #status { height: 1; background: $panel; padding: 0 1; }
    .hint { color: $text-muted; height: auto; }
    .pass { color: $success; }
    .fail { color: $error; }
    Sparkline { height: 2; margin: 0 0; }
    ProgressBar { height: 1; }
    """
    BINDINGS = [
        Binding("n", "next_step", "Next"),
        *[Binding(str(i + 1), f"goto('{s}')", STEP_TITLES[s], show=False) for i, s in enumerate(STEPS)],
        Binding("s", "start_session", "Start"),
        Binding("r", "resume_session", "Resume"),
        Binding("e", "use_emulators", "Emulators"),
        Binding("c", "connect", "Connect"),
        Binding("l", "confirm_link", "Confirm link"),
        Binding("b", "baseline", "Measure"),
        Binding("t", "tune", "Tune"),
        Binding("p", "pause", "Pause/resume"),
        Binding("a", "abort", "Abort"),
        Binding("v", "verify", "Verify"),
        Binding("w", "save_profile", "Save"),
        Binding("u", "push", "Push"),
        Binding("o", "write_report", "Report"),
        Binding("d", "toggle_dark", "Theme", show=False),
        Binding("escape", "leave_input", "Leave field", show=False),
        Binding("q", "quit_safely", "Quit"),
    ]

    def __init__(self, sessions_dir: str | None = None, *, emulators: bool = False,
                 controller: SessionController | None = None) -> None:
        super().__init__()
        self.ctl = controller or SessionController(sessions_dir, on_event=self._event_from_worker)
        if controller is not None and controller.on_event is None:
            controller.on_event = self._event_from_worker
        self._start_with_emulators = emulators
        self.busy: str | None = None  # name of the running worker step
        self.best_history: list[float] = []
        self.evaluations = 0
        self.last_error: str = ""
        self._status_is_hint = True

    # -- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with TabbedContent(id="steps", initial="session"):
            with TabPane(STEP_TITLES["session"], id="session"):
                for key, label in (("site", "Site"), ("customer", "Customer"), ("link", "Link label"),
                                   ("operator", "Operator")):
                    with Horizontal(classes="row"):
                        yield Label(label)
                        yield Input(id=f"meta-{key}", placeholder=label.lower())
                yield Static("s: start a new session   r: resume the selected one", classes="hint")
                yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
            with TabPane(STEP_TITLES["devices"], id="devices"):
                with Horizontal(classes="row"):
                    yield Label("Module")
                    yield Input(id="module-res", placeholder="i2c:1@0x50, optoe:/sys/..., net:host:port, emu:c2m-10in")
                with Horizontal(classes="row"):
                    yield Label("Lanes")
                    yield Input("1", id="lanes", placeholder="1,2,...")
                with Horizontal(classes="row"):
                    yield Label("Measure with")
                    yield Input(id="instrument-res", placeholder="empty = module's own BER; or TCPIP::host::port::SOCKET")
                yield Static("e: use emulators   c: connect and read identity", classes="hint")
                yield DataTable(id="identity", cursor_type="none", show_header=False)
            with TabPane(STEP_TITLES["link"], id="link"):
                for key, label, default in (("channel", "Channel", "c2m-10in"), ("ber", "Target BER", "1e-6"),
                                            ("metric", "Objective", "ber"),
                                            ("knobs", "Knobs", "auto"),
                                            ("budget", "Budget", "30"), ("patience", "Patience", "6"),
                                            ("dwell", "Dwell (s)", "1.0")):
                    with Horizontal(classes="row"):
                        yield Label(label)
                        yield Input(default, id=f"link-{key}")
                yield Static("l: confirm and open the session journal   (channel: a library name, "
                             "or empty for pure live tuning; objective: ber | q_db | eye_height; knobs: auto = what "
                             "the measurement sees, or e.g. rx_pre,rx_post,rx_amp,tx_eq; patience: stop once the pick holds that many "
                             "evaluations, 0 = the whole budget)", classes="hint")
                yield Static("", id="link-info")
            with TabPane(STEP_TITLES["baseline"], id="baseline"):
                yield Static("b: measure the current codes on the chosen lanes (long dwell)", classes="hint")
                yield DataTable(id="baseline-table", cursor_type="row")
            with TabPane(STEP_TITLES["tune"], id="tune"):
                yield Static("t: tune   p: pause/resume   a: abort (restores the original codes)", classes="hint")
                yield ProgressBar(total=1, id="progress", show_eta=False)
                yield Label("best margin so far:", id="best-label")
                yield Sparkline([], id="convergence")
                yield DataTable(id="evals", cursor_type="row")
            with TabPane(STEP_TITLES["verify"], id="verify"):
                yield Static("v: long-dwell verification of tuned vs baseline; keep or restore per lane",
                             classes="hint")
                yield DataTable(id="verify-table", cursor_type="row")
            with TabPane(STEP_TITLES["save"], id="save"):
                with Horizontal(classes="row"):
                    yield Label("More modules")
                    yield Input(id="push-more", placeholder="other modules of the same PN, comma separated")
                yield Static("w: save the profile   u: push it to this module (and the ones above)", classes="hint")
                yield Static("", id="profile-info")
                yield DataTable(id="push-table", cursor_type="row")
                yield Static("", id="model-eye")
            with TabPane(STEP_TITLES["report"], id="report"):
                yield Static("o: write the HTML report for the customer", classes="hint")
                yield Static("", id="report-info")
        yield Static("ready", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#sessions", DataTable).add_columns("id", "status", "site", "link", "module", "meas")
        self.query_one("#baseline-table", DataTable).add_columns("lane", "codes", "BER", "margin", "verdict")
        self.query_one("#evals", DataTable).add_columns("#", "lane", "codes", "margin", "best")
        self.query_one("#verify-table", DataTable).add_columns("lane", "baseline", "tuned", "decision", "codes now")
        self.query_one("#push-table", DataTable).add_columns("module", "status", "message")
        self.query_one("#module-res", Input).value = self.ctl.module_resource if self._start_with_emulators else ""
        self.refresh_sessions()
        self.focus_tabs()
        self.set_status(STEP_HINTS["session"], hint=True)

    # -- helpers -------------------------------------------------------------------------------
    @property
    def step(self) -> str:
        return self.query_one("#steps", TabbedContent).active or "session"

    def set_status(self, text: str, error: bool = False, hint: bool = False) -> None:
        self._status_is_hint = hint
        widget = self.query_one("#status", Static)
        widget.update(text)
        widget.set_class(error, "fail")
        if error:
            self.last_error = text

    def fail(self, exc: BaseException) -> None:
        """Show a problem (device, input) without crashing: status line plus a notification."""
        from eqtune.errors import EqtuneError

        msg = str(exc) if isinstance(exc, EqtuneError) else f"{type(exc).__name__}: {exc}"
        self.set_status(msg, error=True)
        self.notify(msg, title="problem", severity="error", timeout=8)

    def value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

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

    def goto(self, step: str) -> None:
        self.query_one("#steps", TabbedContent).active = step
        if isinstance(self.focused, Input):
            self.focus_tabs()
        self.refresh_bindings()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if self._status_is_hint and not self.busy:
            self.set_status(STEP_HINTS.get(self.step, ""), hint=True)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        step = STEP_ACTIONS.get(action)
        if step is None:
            return True
        # Textual: False hides the key from the footer, None shows it dimmed (disabled)
        if step != self.step:
            return False
        if self.busy and action not in ("pause", "abort"):
            return None
        return True

    # -- worker plumbing -----------------------------------------------------------------------
    def _event_from_worker(self, event: Any) -> None:
        try:
            self.call_from_thread(self.on_live_event, event)
        except RuntimeError:  # called on the UI thread itself (e.g. during connect): handle directly
            self.on_live_event(event)

    def on_live_event(self, ev: Any) -> None:
        d = ev.data
        if ev.kind == "evaluation":
            self.evaluations += 1
            bar = self.query_one("#progress", ProgressBar)
            bar.update(total=d.get("budget", 1) * max(1, len(self.ctl.lanes)), progress=self.evaluations)
            self.best_history.append(float(d.get("best_margin", d.get("margin", 0.0))))
            self.query_one("#convergence", Sparkline).data = list(self.best_history)
            self.query_one("#best-label", Label).update(
                f"best margin so far: {self.best_history[-1]:.3f}  (lane {d.get('lane')}, "
                f"{self.evaluations} evaluations)")
            table = self.query_one("#evals", DataTable)
            table.add_row(str(d.get("n", 0) + 1), str(d.get("lane")), _codes(d.get("codes")),
                          _num(d.get("margin"), ".3f"), _num(d.get("best_margin"), ".3f"))
            table.move_cursor(row=table.row_count - 1)
        text = ev.text() if hasattr(ev, "text") else ""
        if text.strip():
            self.set_status(text.strip(), error=ev.kind in ("error", "aborted"))

    def run_step(self, name: str, fn: Any, done: Any) -> None:
        if self.busy:
            self.set_status(f"{self.busy} is still running: wait, or press a to abort")
            return
        self.busy = name
        self.refresh_bindings()
        self._worker(name, fn, done)

    @work(thread=True, exclusive=True, group="step")
    def _worker(self, name: str, fn: Any, done: Any) -> None:
        try:
            result = fn()
        except BaseException as exc:  # shown, never raised into the UI
            self.call_from_thread(self._finish_step, name, None, exc, done)
            return
        self.call_from_thread(self._finish_step, name, result, None, done)

    def _finish_step(self, name: str, result: Any, exc: BaseException | None, done: Any) -> None:
        self.busy = None
        self.refresh_bindings()
        if exc is not None:
            self.fail(exc)
            return
        try:
            done(result)
        except Exception as err:
            self.fail(err)

    # -- global actions ------------------------------------------------------------------------
    def action_goto(self, step: str) -> None:
        self.goto(step)

    def action_next_step(self) -> None:
        i = STEPS.index(self.step)
        self.goto(STEPS[min(i + 1, len(STEPS) - 1)])

    def action_leave_input(self) -> None:
        self.focus_tabs()

    def focus_tabs(self) -> None:
        """Put the focus on the step tabs, where every step key works."""
        self.query_one("#steps", TabbedContent).query_one(Tabs).focus()

    def action_toggle_dark(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def action_quit_safely(self) -> None:
        """Quit; a running tune is aborted first (original codes restored), the journal stays."""
        if self.busy and self.ctl.tuner is not None:
            self.ctl.abort()
            self.set_status("aborting the running step before quitting (original codes are restored)...")
            self.set_timer(0.2, self.action_quit_safely)
            return
        sid = self.ctl.session_id
        self.ctl.close()
        self.exit(sid)

    # -- step 1 --------------------------------------------------------------------------------
    def action_start_session(self) -> None:
        form = SessionForm(site=self.value("meta-site"), customer=self.value("meta-customer"),
                           link=self.value("meta-link"), operator=self.value("meta-operator"))
        self.ctl.new_session(form)
        self.set_status("Session details kept. Step 2: choose the module (e for emulators) and press c")
        self.goto("devices")

    def action_resume_session(self) -> None:
        table = self.query_one("#sessions", DataTable)
        if table.row_count == 0:
            self.fail(ValueError("no sessions to resume in " + str(self.ctl.sessions_dir)))
            return
        sid = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

        def done(view: Any) -> None:
            self._fill_from_controller()
            status = view.status()
            self.set_status(f"resumed {sid} ({status}, {len(view.measurements())} measurements done)")
            nxt = "verify" if self.ctl.lane_results() and all(
                r.recommended for r in self.ctl.lane_results().values()) else "tune"
            self.goto(nxt if view.readings("baseline") else "baseline")

        self.run_step("resume", lambda: self.ctl.resume_session(sid), done)

    def _fill_from_controller(self) -> None:
        c = self.ctl
        for key in ("site", "customer", "link", "operator"):
            self.query_one(f"#meta-{key}", Input).value = getattr(c.form, key)
        self.query_one("#module-res", Input).value = c.module_resource
        self.query_one("#lanes", Input).value = ",".join(map(str, c.lanes))
        self.query_one("#instrument-res", Input).value = c.instrument_resource or ""
        self.query_one("#link-channel", Input).value = c.link.channel or ""
        self.query_one("#link-metric", Input).value = c.link.metric
        self.query_one("#link-knobs", Input).value = ",".join(c.link.knobs) or "auto"
        self.query_one("#link-budget", Input).value = str(c.link.budget)
        self.query_one("#link-dwell", Input).value = f"{c.link.dwell_s:g}"
        self._show_identity()

    # -- step 2 --------------------------------------------------------------------------------
    def action_use_emulators(self) -> None:
        self.ctl.use_emulators()
        self.query_one("#module-res", Input).value = self.ctl.module_resource
        self.query_one("#instrument-res", Input).value = ""
        self.set_status("emulated module selected (its own PRBS checker measures BER); press c to connect")

    def action_connect(self) -> None:
        try:
            lanes = _lanes(self.value("lanes"))
        except Exception as exc:
            self.fail(exc)
            return
        res, inst = self.value("module-res"), self.value("instrument-res")

        def done(identity: dict[str, Any]) -> None:
            self._show_identity()
            self.set_status(f"connected {res}: {identity.get('vendor', '')} {identity.get('pn', '')} "
                            f"SN {identity.get('sn', '')}. Step 3: choose the link, press l")
            self.goto("link")

        self.run_step("connect", lambda: self.ctl.connect_module(res, lanes, inst or None), done)

    def _show_identity(self) -> None:
        table = self.query_one("#identity", DataTable)
        table.clear(columns=True)
        table.add_columns("field", "value")
        ident, caps = self.ctl.identity, self.ctl.capabilities
        for k in ("vendor", "pn", "sn", "rev", "firmware", "cmis_rev", "module_state"):
            if k in ident:
                table.add_row(k, str(ident[k]))
        for k in ("rx_pre_max", "rx_post_max", "rx_amp_codes", "tx_eq_max"):
            if k in caps:
                table.add_row(k, str(caps[k]))
        if self.ctl.module is not None:
            for ln, codes in self.ctl.active_codes().items():
                table.add_row(f"lane {ln} active", _codes(codes))

    # -- step 3 --------------------------------------------------------------------------------
    def action_confirm_link(self) -> None:
        from eqtune.errors import InputError

        try:
            link = LinkForm(channel=self.value("link-channel") or None, target_ber=float(self.value("link-ber")),
                            metric=self.value("link-metric"),
                            knobs=[k for k in self.value("link-knobs").replace(" ", "").split(",")
                                   if k and k != "auto"],
                            budget=int(self.value("link-budget")), dwell_s=float(self.value("link-dwell")),
                            patience=int(self.value("link-patience") or 0) or None)
        except ValueError as exc:
            self.fail(InputError(f"link settings: {exc}; BER, budget, patience and dwell must be numbers"))
            return

        def done(sid: str) -> None:
            cfg = self.ctl.tuner.config
            extra = []
            if cfg.warm == "model":
                warm = self.ctl.tuner.warm_codes
                first = next(iter(warm.values()), {})
                extra.append("first evaluation: the model optimum "
                             + (" ".join(f"{k}={v}" for k, v in first.items()) or "(no model knobs)"))
            if cfg.patience:
                extra.append(f"stops early once the pick holds {cfg.patience} evaluations")
            self.query_one("#link-info", Static).update(
                f"session {sid} opened in {self.ctl.sessions_dir / sid}" + "".join(f"\n{e}" for e in extra))
            self.set_status(f"session {sid} journaled. Step 4: press b to measure the baseline")
            self.goto("baseline")

        self.run_step("link", lambda: self.ctl.confirm_link(link), done)

    # -- step 4 --------------------------------------------------------------------------------
    def action_baseline(self) -> None:
        self.run_step("baseline", self.ctl.baseline, self._show_baseline)

    def _show_baseline(self, result: dict[int, dict[str, Any]]) -> None:
        table = self.query_one("#baseline-table", DataTable)
        table.clear()
        target = self.ctl.link.target_ber
        for ln, r in sorted((result or {}).items()):
            counts = r.get("counts") or {}
            ber = counts.get("ber_upper95", counts.get("ber"))
            ok = ber is not None and ber <= target
            verdict = "[green]PASS[/]" if ok else "[red]FAIL[/]"
            table.add_row(str(ln), _codes(r.get("codes")), _num(ber, ".2e"), _num(r.get("margin"), ".3f"), verdict)
        self.set_status("baseline measured. Step 5: press t to tune")
        self.goto("tune")

    # -- step 5 --------------------------------------------------------------------------------
    def action_tune(self) -> None:
        self.best_history.clear()
        self.evaluations = 0
        self.query_one("#evals", DataTable).clear()

        def done(rec: dict[int, dict[str, int]]) -> None:
            if self.ctl.phase in ("aborted", "failed"):
                self.set_status(f"tuning {self.ctl.phase}: original codes restored "
                                f"(session {self.ctl.session_id} keeps every measurement)", error=True)
                return
            self.set_status("tuned: " + "; ".join(f"lane {ln} {_codes(c)}" for ln, c in sorted(rec.items()))
                            + ". Step 6: press v to verify")
            self.goto("verify")

        self.run_step("tune", self.ctl.tune, done)

    def action_pause(self) -> None:
        if self.ctl.paused:
            self.ctl.unpause()
        else:
            self.ctl.pause()

    def action_abort(self) -> None:
        if self.ctl.tuner is None:
            return
        self.ctl.abort()
        self.set_status("aborting: the current measurement finishes, then the original codes are restored")

    # -- step 6 --------------------------------------------------------------------------------
    def action_verify(self) -> None:
        self.run_step("verify", self.ctl.verify, self._show_verify)

    def _show_verify(self, _result: Any) -> None:
        table = self.query_one("#verify-table", DataTable)
        table.clear()
        for ln, r in sorted(self.ctl.lane_results().items()):
            table.add_row(str(ln), _num(r.baseline_margin, ".3f"), _num(r.verified_margin, ".3f"),
                          r.decision or "-", _codes(r.final or r.original))
        from rich.text import Text

        self.query_one("#model-eye", Static).update(Text("\n".join(self.ctl.model_eye)))  # no markup
        self.set_status("verified. Step 7: press w to save the profile, u to push it")
        self.goto("save")

    # -- step 7 --------------------------------------------------------------------------------
    def action_save_profile(self) -> None:
        def done(path: Any) -> None:
            self.query_one("#profile-info", Static).update(f"profile saved: {path}")
            self.set_status(f"profile saved to {path}; press u to push it")

        self.run_step("save", self.ctl.save_profile, done)

    def action_push(self) -> None:
        extra = [r for r in self.value("push-more").split(",") if r.strip()]

        def done(report: Any) -> None:
            table = self.query_one("#push-table", DataTable)
            table.clear()
            for r in report.results:
                res = r.resource if isinstance(r.resource, str) else str(r.resource)
                table.add_row(res, r.status, r.message[:60])
            self.set_status(" / ".join(report.summary_lines()) + ". Step 8: press o for the report",
                            error=not report.ok)
            if report.ok:
                self.goto("report")

        self.run_step("push", lambda: self.ctl.push(extra), done)

    # -- step 8 --------------------------------------------------------------------------------
    def action_write_report(self) -> None:
        def done(path: Any) -> None:
            self.query_one("#report-info", Static).update(f"report written: {path}")
            self.set_status(f"report written: {path}")

        self.run_step("report", self.ctl.write_report, done)


def run(sessions_dir: str | None = None, emulators: bool = False) -> Any:
    """Run the app in this terminal; returns the session id (or None)."""
    return EqtuneApp(sessions_dir, emulators=emulators).run()
