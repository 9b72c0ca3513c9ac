"""The FAE's on-site screen: a guided keyboard form over ``SessionController``.

Eight steps, one pane each (``eqtune.tui.steps``): Session, Devices, Link, Baseline, Tune, Verify,
Save & push, Report. The first field of a step has the focus when it opens; Enter submits the form
(or presses the focused button); a step with results waits on a "Continue" button, it never moves on
by itself. Letter keys (step actions, ``n`` next, ``1``-``8`` steps, ``?`` help, ``q`` quit) act only
when no text field has the focus, so typing into a field never fires them; F1 (help), Ctrl+Q (quit)
and Ctrl+C work everywhere. Push, abort and quit ask first; quitting says what happens to the
module's codes. Long steps run in a worker thread; panes talk to the app with messages
(``eqtune.tui.messages``). Styles: ``app.tcss`` (focus is shown in reverse video, so it survives
NO_COLOR). Fits 80x24.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane

from eqtune.tui import messages
from eqtune.tui.controller import STEPS, SessionController
from eqtune.tui.dialogs import ConfirmScreen, HelpScreen
from eqtune.tui.steps import PANES
from eqtune.tui.steps.base import StepPane

GLOBAL_KEYS = [("F1 / ?", "this help"), ("Esc", "leave a text field (letter keys then act)"),
               ("1 .. 8", "go to a step (outside a field)"), ("n", "next step / continue (outside a field)"),
               ("Tab / Shift+Tab", "move between fields and buttons"),
               ("Ctrl+Q / q", "quit (asks; says what happens to the module's codes)"),
               ("Ctrl+C", "the same as Ctrl+Q"), ("d", "light/dark theme (outside a field)")]
#: global actions that are bare keys: inactive while a text field has the focus
_BARE = {"goto", "next_step", "help_bare", "quit_bare", "toggle_dark"}
# keys typed after Enter in a field wait for what Enter started (a status line, a step, a dialog, a
# worker's end); this is only the backstop that keeps a key from being held forever
HOLD_MAX_S = 30.0
PANE_OF = {p.STEP: p for p in PANES}


class EqtuneApp(App):
    """``eqtune tui``."""

    TITLE = "eqtune"
    SUB_TITLE = "on-site link tuning"
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))  # absolute: subclasses elsewhere find it too
    AUTO_FOCUS = "#meta-site"  # the first field has the focus before the first key arrives
    # the screen gets -narrow/-wide and -short/-tall classes: app.tcss lays out 80x24 and 120x40 differently
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    BINDINGS = [
        Binding("f1", "help", "Help", priority=True),
        # Tab moves the focus when the app reads the key, before the next key is routed: without priority
        # the Tab waits in the field's queue behind nothing and the keys typed after it (a burst over SSH,
        # a paste at terminal speed) were routed to the old field first ("Inc.s", "Site-OneCustTwo")
        Binding("tab", "focus_next", "Next field", show=False, priority=True),
        Binding("shift+tab", "focus_previous", "Previous field", show=False, priority=True),
        Binding("question_mark", "help_bare", "Help", show=False),
        Binding("ctrl+q", "quit_safely", "Quit", priority=True),
        Binding("ctrl+c", "quit_safely", "Quit", show=False, priority=True),
        Binding("q", "quit_bare", "Quit", show=False),
        *[Binding(str(i + 1), f"goto('{s}')", s, show=False) for i, s in enumerate(STEPS)],
        Binding("escape", "leave_input", "Leave field", show=False),
        Binding("d", "toggle_dark", "Theme", show=False),
    ]

    def __init__(self, sessions_dir: str | None = None, *, emulators: bool = False,
                 controller: SessionController | None = None) -> None:
        super().__init__()
        self.ctl = controller or SessionController(sessions_dir, on_event=self._event_from_worker)
        if controller is not None and controller.on_event is None:
            controller.on_event = self._event_from_worker
        self._start_with_emulators = emulators
        self.busy: str | None = None  # name of the running worker step
        self.last_error: str = ""
        self.status_text: str = ""
        self._keep_status = False
        self.terminated_by = ""  # SIGTERM / SIGHUP, when one ended the app
        # keys typed after Enter in a field, held until the step it submitted has moved the focus
        self._held: list[Any] | None = None

    # -- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with TabbedContent(id="steps", initial="session"):
            for i, pane in enumerate(PANES):
                with TabPane(pane.TITLE, id=pane.STEP):
                    if i == 0:  # the other steps mount when first opened (ensure_pane): a quick first screen
                        yield pane(id=f"pane-{pane.STEP}")
        yield Static("", id="status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.set_status(self.hint())
        self.call_after_refresh(self._focus_current_step)
        if not self.is_headless:
            self._install_signal_handlers()

    def _install_signal_handlers(self) -> None:
        """SIGTERM (``kill``) and SIGHUP (the SSH session dropped) end the app as Ctrl+Q + y would: a
        running tune is aborted first (original codes restored, read back), then the terminal is given
        back by Textual's own shutdown. SIGKILL cannot be caught: eqtune.tui.terminal restores the
        terminal from the supervising parent."""
        import asyncio
        import signal

        try:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self.on_terminate_signal, sig.name)
        except (RuntimeError, NotImplementedError, ValueError):  # not the main thread, or no POSIX signals
            pass

    def on_terminate_signal(self, name: str) -> None:
        """Stop safely on a terminate/hang-up signal (see :meth:`_install_signal_handlers`)."""
        self.terminated_by = name
        self.set_status(f"{name}: stopping (a running tune is aborted and the original codes restored)...",
                        error=True)
        self._quit_now()

    def get_system_commands(self, screen: Any) -> Any:
        """The command palette (Ctrl+P) lists the steps, the help and quitting, then Textual's own."""
        from textual.app import SystemCommand

        for pane in PANES:
            yield SystemCommand(f"Go to step {pane.TITLE}", pane.ABOUT,
                                lambda s=pane.STEP: self.call_later(self.goto, s))
        yield SystemCommand("Help: keys of this step", "the help overlay (F1)", self.action_help)
        yield SystemCommand("Quit eqtune", "asks first; says what happens to the module's codes",
                            self.action_quit_safely)
        yield from super().get_system_commands(screen)

    # -- type-ahead across Enter ------------------------------------------------------------------
    async def on_event(self, event: Any) -> None:
        """Keys typed after Enter in a field wait until what Enter started has moved the focus (the next
        step's first field, a dialog, the Continue button): they are then routed to it, in order. Without
        this, a burst like ``Ana<Enter>emu:...`` glued the next step's text onto the submitted field."""
        from textual import events

        if isinstance(event, events.Key) and not event.is_forwarded:
            if self._held is not None and event.key not in ("ctrl+c", "ctrl+q"):
                self._held.append(event)
                return
            if (event.key == "enter" and isinstance(self.focused, Input) and len(self.screen_stack) == 1):
                await super().on_event(event)
                self._held = []
                self.set_timer(HOLD_MAX_S, self._release_keys)  # never lost: at most this late
                return
        await super().on_event(event)

    def _release_keys(self) -> None:
        """Route the held keys to the widget that has the focus now (posted in order, after anything
        already queued)."""
        from textual import events

        held, self._held = self._held, None
        for ev in held or ():
            self.post_message(events.Key(ev.key, ev.character))

    def _release_later(self) -> None:
        if self._held is not None:
            self.call_later(self._release_keys)

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        result = super().push_screen(*args, **kwargs)
        self._release_later()  # a dialog opened: the held keys are its keys
        return result

    # -- helpers -------------------------------------------------------------------------------
    @property
    def step(self) -> str:
        return self.query_one("#steps", TabbedContent).active or "session"

    def pane(self, step: str | None = None) -> StepPane:
        """The pane of ``step`` (default: the current one); it must have been opened (:meth:`ensure_pane`)."""
        return self.query_one(f"#pane-{step or self.step}", StepPane)

    def has_pane(self, step: str) -> bool:
        return bool(self.query(f"#pane-{step}"))

    async def ensure_pane(self, step: str) -> StepPane:
        """Mount a step's pane on its first visit (and wait until its widgets exist)."""
        if not self.has_pane(step):
            cls = PANE_OF[step]
            await self.query_one(f"TabPane#{step}", TabPane).mount(cls(id=f"pane-{step}"))
        return self.pane(step)

    def hint(self) -> str:
        p = PANE_OF[self.step]
        return f"Step {p.TITLE}: {p.ABOUT}  (F1: keys)"

    def set_status(self, text: str, error: bool = False) -> None:
        self.status_text = text
        widget = self.query_one("#status", Static)
        widget.update(text)
        widget.set_class(error, "fail")
        if error:
            self.last_error = text

    async def goto(self, step: str, *, keep_status: bool = False) -> None:
        """Show ``step`` and focus its first field. ``keep_status``: the status line already says what
        just happened and what to do next (a pane moved on), so the step's hint does not replace it."""
        pane = await self.ensure_pane(step)
        self._keep_status = keep_status and step != self.step
        self.query_one("#steps", TabbedContent).active = step
        pane.first_focus()  # now, not after a refresh: the next typed key lands in the field
        self.refresh_bindings()
        self._release_later()

    def _focus_current_step(self) -> None:
        """Focus the first field of the step shown now, unless the focus is already in it: a step
        opened before the first refresh (``goto`` from a script, a key typed at start-up) keeps its focus."""
        pane = self.pane()
        if self.focused is None or pane not in self.focused.ancestors:
            pane.first_focus()

    def refresh_all(self) -> None:
        """Redraw the opened panes from the controller (the others draw from it when they open)."""
        for pane in self.query(StepPane):
            pane.refresh_view()

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if not self.busy and not self._keep_status:
            self.set_status(self.hint())
        self._keep_status = False
        pane = await self.ensure_pane(self.step)  # a tab clicked with the mouse
        if self.focused is None or pane not in self.focused.ancestors:
            self.call_after_refresh(pane.first_focus)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _BARE and isinstance(self.focused, Input):
            return False  # the key is a character of the field's text
        return True

    # -- messages from the panes ---------------------------------------------------------------
    def on_status(self, message: messages.Status) -> None:
        self.set_status(message.text, error=message.error)
        # the step answered (a refusal, or what it did): held keys follow after what it posted next
        self._release_later()
        if message.error:
            self.notify(message.text, title="problem", severity="error", timeout=8)

    async def on_advance(self, message: messages.Advance) -> None:
        i = STEPS.index(self.step)
        await self.goto(message.step or STEPS[min(i + 1, len(STEPS) - 1)], keep_status=message.step is not None)

    def on_confirm(self, message: messages.Confirm) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                message.action()
            else:
                self.set_status(f"{message.title} - cancelled, nothing changed")

        self.push_screen(ConfirmScreen(message.title, message.question), answered)

    def on_run_step(self, message: messages.RunStep) -> None:
        if self.busy:
            self.set_status(f"{self.busy} is still running: wait for it (or abort it on step 5)")
            return
        self.busy = message.name
        self.set_status(message.label)
        self.refresh_bindings()
        self._worker(message.name, message.fn, message.done)

    # -- worker plumbing -----------------------------------------------------------------------
    def _event_from_worker(self, event: Any) -> None:
        try:
            self.call_from_thread(self.on_live_event, event)
        except RuntimeError:  # called on the UI thread itself (e.g. during connect): handle directly
            self.on_live_event(event)

    def on_live_event(self, ev: Any) -> None:
        if self.has_pane("tune"):
            self.pane("tune").on_live_event(ev)  # type: ignore[attr-defined]
        from eqtune.tui.format import event_text

        text = event_text(ev).strip()
        if ev.kind == "paused":
            text = "PAUSED after the measurement in flight: p resumes"
        if text:
            self.set_status(text, error=ev.kind in ("error", "aborted"))

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
        try:
            if exc is not None:
                self.fail(exc)
                return
            try:
                done(result)
            except Exception as err:
                self.fail(err)
        finally:
            self._release_later()  # after what done() focuses or posts (an Advance is handled first)

    def fail(self, exc: BaseException) -> None:
        """Show a problem (device, input) without crashing: status line plus a notification."""
        from eqtune.errors import EqtuneError

        msg = str(exc) if isinstance(exc, EqtuneError) else f"{type(exc).__name__}: {exc}"
        self.on_status(messages.Status(msg, error=True))

    # -- global actions ------------------------------------------------------------------------
    async def action_goto(self, step: str) -> None:
        await self.goto(step)

    async def action_next_step(self) -> None:
        await self.on_advance(messages.Advance())

    def action_leave_input(self) -> None:
        """Esc in a field: focus the step's first button, where the letter keys act."""
        if isinstance(self.focused, Input):
            from textual.widgets import Button

            for b in self.pane().query(Button):
                if b.display and not b.disabled:
                    b.focus()
                    return
            self.set_focus(None)

    def action_help(self) -> None:
        p = PANE_OF[self.step]
        self.push_screen(HelpScreen(p.TITLE, p.KEYS, GLOBAL_KEYS, p.ABOUT))

    def action_help_bare(self) -> None:
        self.action_help()

    def action_toggle_dark(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def codes_fate(self) -> str:
        """What happens to the module's codes if the app quits now (for the quit confirmation)."""
        c = self.ctl
        if c.module is None:
            return "No module is connected: nothing is written."
        if self.busy == "tune":
            return ("Tuning is running: it is ABORTED first and the module gets its ORIGINAL codes back "
                    "(read back); the journal keeps every measurement, resume later from step 1.")
        if self.busy:
            return (f"'{self.busy}' is running: it finishes its current module access first. The module "
                    "keeps the codes it holds then.")
        results = c.lane_results()
        decided = {ln: r for ln, r in results.items() if r.decision}
        if decided:
            kept = [str(ln) for ln, r in decided.items() if r.decision == "keep"]
            pushed = c.push_report is not None and c.push_report.ok
            held = (f"the tuned codes on lane(s) {','.join(kept)} and the original codes elsewhere" if kept
                    else "its original codes on every lane (verify restored them)")
            return (f"The module keeps what it holds now: {held}. "
                    + ("The profile was pushed and read back." if pushed else "The profile was NOT pushed (step 7)."))
        if c.phase in ("aborted", "failed"):
            return "The module holds its ORIGINAL codes (restored after the abort)."
        if results:
            return ("The module holds the codes of the last measurement; the session is journaled: resume it "
                    "from step 1 to verify, or its original codes are in the journal.")
        return "The module keeps its current codes: eqtune has written nothing to it."

    def action_quit_bare(self) -> None:
        self.action_quit_safely()

    def action_quit_safely(self) -> None:
        if isinstance(self.screen, ConfirmScreen):
            return
        self.on_confirm(messages.Confirm("Quit eqtune?", self.codes_fate(), self._quit_now))

    def _quit_now(self) -> None:
        """Quit; a running tune is aborted first (original codes restored), the journal stays."""
        if self.busy and self.ctl.tuner is not None:
            self.ctl.abort()
            self.set_status("aborting the running step before quitting (original codes are restored)...")
            self.set_timer(0.2, self._quit_now)
            return
        sid = self.ctl.session_id
        self.ctl.close()
        self.exit(sid)


def run(sessions_dir: str | None = None, emulators: bool = False) -> Any:
    """Run the app in this terminal; returns the session id (or None)."""
    return EqtuneApp(sessions_dir, emulators=emulators).run()
