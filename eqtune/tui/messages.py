"""Textual messages between the step panes and the app (posting-style: widgets post, the app routes).

A step pane never calls another pane: it posts one of these and the app decides (run the blocking
controller call in a worker, move to another step, update the status line)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.message import Message


class RunStep(Message):
    """Run ``fn`` (a blocking controller call) in the worker thread, then ``done(result)`` on the UI thread.

    ``label`` is shown at once on the status line ("connecting to ...") so a slow step is never silent."""

    def __init__(self, name: str, label: str, fn: Callable[[], Any], done: Callable[[Any], None]) -> None:
        super().__init__()
        self.name, self.label, self.fn, self.done = name, label, fn, done


class Advance(Message):
    """Move to ``step`` (or the next step when None): posted by a pane once its results were read."""

    def __init__(self, step: str | None = None) -> None:
        super().__init__()
        self.step = step


class Status(Message):
    """A status-line text from a pane (``error`` also raises a notification)."""

    def __init__(self, text: str, *, error: bool = False) -> None:
        super().__init__()
        self.text, self.error = text, error


class Confirm(Message):
    """Ask the FAE before ``action`` runs (push, abort, quit): ``question`` says what will happen."""

    def __init__(self, title: str, question: str, action: Callable[[], None]) -> None:
        super().__init__()
        self.title, self.question, self.action = title, question, action
