"""Modal screens: the help overlay of a step's keys and the yes/no confirmation."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class HelpScreen(ModalScreen[None]):
    """``?`` / F1: the keys of the current step and the global keys; any of Esc, q, ?, F1 closes it."""

    BINDINGS = [Binding("escape,q,question_mark,f1,enter", "dismiss", "Close help")]

    def __init__(self, step_title: str, step_keys: Sequence[tuple[str, str]], global_keys: Sequence[tuple[str, str]],
                 about: str = "") -> None:
        super().__init__()
        self.step_title, self.step_keys, self.global_keys, self.about = step_title, step_keys, global_keys, about

    def compose(self) -> ComposeResult:
        def table(rows: Sequence[tuple[str, str]]) -> str:
            return "\n".join(f"  {k:<16} {what}" for k, what in rows)

        text = (f"Help - step {self.step_title}    (Esc or ? closes)\n"
                + (f"{self.about}\n" if self.about else "")
                + f"Keys on this step:\n{table(self.step_keys)}\n"
                + f"Everywhere:\n{table(self.global_keys)}\n"
                + "Letter keys act only when no text field has the focus: Esc leaves a field.")
        with Vertical(id="help-box"):
            yield Static(text, id="help-text", markup=False)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question: y or Enter on Yes confirms; n or Esc cancels (the safe answer is the default)."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, title: str, question: str) -> None:
        super().__init__()
        self.title_text, self.question = title, question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.title_text, id="confirm-title", markup=False)
            yield Static(self.question, id="confirm-question", markup=False)
            yield Static("y: yes, do it    n / Esc: no, go back", id="confirm-keys", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class TrafficDownScreen(ModalScreen[str]):
    """Before the first write on a module whose every apply takes the data path down: the lanes, the
    expected number of outages and their advertised length, and the maintenance-window choice.

    The answer is a button pressed with Enter; the focus starts on "Stop", and letters do nothing, so
    keys typed ahead (a burst, an impatient ``t``) cannot consent. Esc is "stop". Dismisses with one of
    ``eqtune.session.consent.CHOICES``."""

    BINDINGS = [Binding("escape", "answer('stop')", "Stop")]

    def __init__(self, lines: Sequence[str], down_lanes: Sequence[int] | None) -> None:
        super().__init__()
        self.lines, self.down_lanes = list(lines), down_lanes

    def compose(self) -> ComposeResult:
        from eqtune.session.consent import DOWN_ONLY, STOP, TUNE

        down = list(self.down_lanes or [])
        with Vertical(id="traffic-box"):
            yield Static("Traffic goes down on every write", id="confirm-title", markup=False)
            yield Static("\n".join(self.lines), id="traffic-text", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Stop: write nothing", id=f"choice-{STOP}", compact=True, variant="primary")
                yield Button(f"Down lanes only ({','.join(map(str, down)) or 'none'})", id=f"choice-{DOWN_ONLY}",
                             compact=True, disabled=not down)
                yield Button("Tune (maint. window)", id=f"choice-{TUNE}", compact=True, variant="error")
            yield Static("Tab: next choice   Enter: choose   Esc: stop", id="confirm-keys", markup=False)

    def on_mount(self) -> None:
        self.query_one("#choice-stop", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss((event.button.id or "choice-stop").removeprefix("choice-"))

    def action_answer(self, choice: str) -> None:
        self.dismiss(choice)
