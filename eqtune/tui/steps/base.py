"""What every step pane shares: its keys (for the footer and the help overlay), first-field focus,
and the rule that bare-letter keys act only when no text field has the focus."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual import events
from textual.containers import VerticalScroll
from textual.widgets import Button, DataTable, Input

from eqtune.tui.messages import Advance, Confirm, RunStep, Status


class Field(Input):
    """A one-line text field: pasted text goes into this field only, its tabs and line breaks as spaces
    (a pasted ``Site-One<Tab>CustTwo`` does not spill into, or silently glue onto, the next field)."""

    def _on_paste(self, event: events.Paste) -> None:
        text = " ".join(part for part in event.text.replace("\t", " ").splitlines()).strip("\r\n")
        if text:
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)
        event.prevent_default()  # not Input's own paste handler as well
        event.stop()


def after_fields(fields: list[Input], then: Callable[[], None]) -> None:
    """Run ``then`` once each of ``fields`` has handled every key already routed to it.

    A key is routed to a field's own message queue; under load a field may not have handled its keys
    when Enter in another field submits the form. A callback queued on each field in turn runs after
    those keys, so the form is read only when every typed character is in its field."""
    def step(i: int) -> None:
        if i >= len(fields) or not fields[i].call_later(step, i + 1):
            then()

    step(0)


class StepPane(VerticalScroll):
    """One step of the wizard; subclasses set ``STEP``, ``TITLE``, ``ABOUT``, ``BINDINGS`` and ``KEYS``.

    ``KEYS`` is what the help overlay lists: (key, what it does) pairs, Enter first. Actions named in
    ``BUSY_OK`` stay live while a worker runs (pause, abort); the others are dimmed."""

    STEP: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    ABOUT: ClassVar[str] = ""
    KEYS: ClassVar[list[tuple[str, str]]] = []
    BUSY_OK: ClassVar[tuple[str, ...]] = ()
    can_focus = False

    @property
    def ctl(self) -> Any:
        return self.app.ctl  # type: ignore[attr-defined]

    @property
    def busy(self) -> str | None:
        return self.app.busy  # type: ignore[attr-defined]

    def on_mount(self) -> None:
        """A pane opened after a connect or a resume shows the controller's state at once."""
        if self.app.is_headless:  # tests and snapshots: a steady cursor (a blinking one makes SVGs differ)
            for field in self.query(Input):
                field.cursor_blink = False
        if self.ctl.module is not None or self.ctl.tuner is not None:
            self.call_after_refresh(self.refresh_view)

    # -- focus ---------------------------------------------------------------------------------
    def first_focus(self) -> None:
        """Focus the first text field, else the first enabled button, else the first table."""
        for kind in (Input, Button, DataTable):
            for w in self.query(kind):
                if w.display and not w.disabled and w.can_focus:
                    w.focus()
                    return

    def focus_button(self, button_id: str) -> None:
        b = self.query_one(f"#{button_id}", Button)
        b.display = True
        b.focus()

    def on_descendant_focus(self, event: Any) -> None:
        """Mark the row of the focused field (its label turns reverse video: visible under NO_COLOR)."""
        for row in self.query(".row"):
            row.set_class(self.app.focused in row.children, "-current")

    def on_descendant_blur(self, event: Any) -> None:
        for row in self.query(".row.-current"):
            row.set_class(self.app.focused in row.children, "-current")

    # -- keys ----------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if isinstance(self.app.focused, Input):
            return False  # letters go into the field; Enter submits (on_input_submitted)
        if self.busy and action not in self.BUSY_OK:
            return None
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        action = event.button.id or ""
        if action == "continue":
            self.post_message(Advance())
            return
        if self.busy and action not in self.BUSY_OK:
            self.status(f"{self.busy} is still running: wait for it (or abort it on step 5)")
            return
        getattr(self, f"action_{action}")()

    def action_continue(self) -> None:
        self.post_message(Advance())

    # -- posting -------------------------------------------------------------------------------
    def status(self, text: str, *, error: bool = False) -> None:
        self.post_message(Status(text, error=error))

    def fail(self, exc: BaseException) -> None:
        from eqtune.errors import EqtuneError

        msg = str(exc) if isinstance(exc, EqtuneError) else f"{type(exc).__name__}: {exc}"
        self.status(msg, error=True)

    def run(self, name: str, label: str, fn: Any, done: Any) -> None:
        self.post_message(RunStep(name, label, fn, done))

    def confirm(self, title: str, question: str, action: Any) -> None:
        self.post_message(Confirm(title, question, action))

    def when_typed(self, then: Callable[[], None]) -> None:
        """Run ``then`` once every field of this pane holds the keys typed into it (:func:`after_fields`)."""
        after_fields(list(self.query(Input)), then)

    def value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

    def refresh_view(self) -> None:
        """Redraw from the controller (after a resume); subclasses override."""
