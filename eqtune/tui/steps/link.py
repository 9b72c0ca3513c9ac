"""Step 3: what to tune and how; Enter opens the journaled session and moves to the baseline."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, Static

from eqtune.tui.controller import LinkForm
from eqtune.tui.messages import Advance
from eqtune.tui.steps.base import Field, StepPane

LINK_FIELDS = (
    ("channel", "Channel", "c2m-10in", "library name, or empty for pure live tuning"),
    ("ber", "Target BER", "1e-6", "pre-FEC, e.g. 1e-6 (802.3ck KP4: 2.4e-4 max)"),
    ("metric", "Objective", "ber", "ber | q_db | eye_height"),
    ("knobs", "Knobs", "auto", "auto, or e.g. rx_pre,rx_post,rx_amp,tx_eq"),
    ("budget", "Budget", "30", "evaluations per lane"),
    ("patience", "Patience", "6", "stop once the pick holds N evaluations; 0 = whole budget"),
    ("dwell", "Dwell (s)", "1.0", "seconds of PRBS count per evaluation"),
    ("screen", "Screen", "auto", "auto | off | seconds: the search's shorter dwell (contenders, verify: the dwell)"),
    ("prior", "Prior session", "", "earlier session id, auto (same module part + channel), or empty"),
)


class LinkPane(StepPane):
    STEP, TITLE = "link", "3 Link"
    ABOUT = "Choose the channel, target BER, objective, knobs and budget; Enter opens the session journal."
    BINDINGS = [Binding("l", "confirm", "Confirm link")]
    KEYS = [("Enter", "in a field: confirm, open the journal and go to the baseline"),
            ("Tab / Shift+Tab", "next / previous field"),
            ("l", "confirm (outside a field)")]

    def compose(self) -> ComposeResult:
        for key, label, default, help_ in LINK_FIELDS:
            with Horizontal(classes="row"):
                yield Label(label)
                yield Field(default, id=f"link-{key}", placeholder=help_)
                yield Static(help_, classes="field-help")
        yield Static("", id="field-help-line", classes="hint")
        with Horizontal(classes="buttons"):
            yield Button("Confirm and open the journal", id="confirm", compact=True, variant="primary")
        yield Static("", id="link-info")

    def on_descendant_focus(self, event: object) -> None:
        """The focused field's help under the form (at 80 columns the help column is hidden)."""
        super().on_descendant_focus(event)
        w = self.app.focused
        if isinstance(w, Input) and (w.id or "").startswith("link-"):
            key = (w.id or "")[5:]
            for k, label, _, help_ in LINK_FIELDS:
                if k == key:
                    self.query_one("#field-help-line", Static).update(
                        f"{label}: {help_}. Enter confirms the whole form")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.when_typed(lambda: self.action_confirm())  # read the form once every typed key is in its field

    def form(self) -> LinkForm:
        from eqtune.errors import InputError

        def number(key: str, kind: type, what: str) -> float:
            text = self.value(f"link-{key}")
            try:
                return kind(text)
            except ValueError:
                raise InputError(f"{what} {text!r} is not a number: type e.g. "
                                 f"{dict((k, d) for k, _, d, _ in LINK_FIELDS)[key]}") from None

        return LinkForm(channel=self.value("link-channel") or None,
                        target_ber=number("ber", float, "target BER"), metric=self.value("link-metric"),
                        knobs=[k for k in self.value("link-knobs").replace(" ", "").split(",") if k and k != "auto"],
                        budget=int(number("budget", int, "budget")), dwell_s=number("dwell", float, "dwell"),
                        patience=int(number("patience", int, "patience")) or None,
                        prior_session=self.value("link-prior") or None,
                        screen=self.value("link-screen") or "auto")

    def action_confirm(self) -> None:
        try:
            link = self.form()
            notice = self.ctl.traffic_down_notice(link.budget)
        except Exception as exc:
            self.fail(exc)
            return
        if notice is None:
            self._open(link, None)
            return
        from eqtune.tui.dialogs import TrafficDownScreen

        def answered(choice: str | None) -> None:
            if choice in (None, "stop"):
                self.status("stopped before any write: nothing was written to the module (its traffic "
                            "stayed up)", error=True)
                return
            self._open(link, choice)

        self.app.push_screen(TrafficDownScreen(notice.lines(), notice.down_lanes), answered)

    def _open(self, link: LinkForm, consent: str | None) -> None:
        """Open the journaled session (the consent, if any, is journaled before the first write)."""
        def done(sid: str) -> None:
            cfg = self.ctl.tuner.config
            lines = [f"session {sid} journaled in {self.ctl.sessions_dir / sid}"]
            if cfg.warm == "model":
                first = next(iter(self.ctl.tuner.warm_codes.values()), {})
                lines.append("first evaluation: the model optimum "
                             + (" ".join(f"{k}={v}" for k, v in first.items()) or "(no model knobs)"))
            if self.ctl.tuner.prior is not None:
                lines.append(self.ctl.tuner.prior.describe())
            if cfg.patience:
                lines.append(f"stops early once the pick holds {cfg.patience} evaluations")
            if cfg.screen_why:
                lines.append(cfg.screen_why)
            self.query_one("#link-info", Static).update("\n".join(lines))
            self.status(f"session {sid} journaled. Step 4: Enter measures the baseline")
            self.post_message(Advance("baseline"))

        self.run("link", "opening the session journal and reading the module's original codes...",
                 lambda: self.ctl.confirm_link(link, consent), done)

    def refresh_view(self) -> None:
        c = self.ctl.link
        for key, value in (("channel", c.channel or ""), ("ber", f"{c.target_ber:g}"), ("metric", c.metric),
                           ("knobs", ",".join(c.knobs) or "auto"), ("budget", str(c.budget)),
                           ("patience", str(c.patience or 0)), ("dwell", f"{c.dwell_s:g}"),
                           ("prior", c.prior_session or ""), ("screen", c.screen or "auto")):
            self.query_one(f"#link-{key}", Input).value = value
