"""Progress on stderr: a rich bar in a terminal, whole plain lines otherwise.

When stderr is not a terminal (a pipe, a CI log, ``2> file``) a live bar cannot redraw: rich then
prints it once at a fixed width and cuts it ("0:00:…"). There each update that crosses a step of
``every`` (10 % by default) and the last one become one complete line instead."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class PlainProgress:
    """``with PlainProgress("tuning c2m-10in", total) as p: p.update(done, "best 4.9 dB")``."""

    def __init__(self, label: str, total: int, *, every: float = 0.1, stream: TextIO | None = None) -> None:
        self.label, self.total = label, max(1, int(total))
        self.step = max(1, int(round(self.total * every)))
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()
        self._last = 0
        self._next = self.step

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def line(self, done: int, note: str = "") -> str:
        elapsed = time.monotonic() - self.t0
        return f"{self.label}: {done}/{self.total} ({100 * done / self.total:.0f} %) {elapsed:.1f} s" + (
            f"  {note}" if note else "")

    def update(self, done: int, note: str = "") -> None:
        if done <= self._last or not (done >= self._next or done >= self.total):
            return
        self._last = done
        self._next = (done // self.step + 1) * self.step
        print(self.line(done, note), file=self.stream, flush=True)


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
