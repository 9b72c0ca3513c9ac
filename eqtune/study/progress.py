"""Progress and ETA of a study, the same for every executor (serial, local processes, dask).

Rows reach the coordinator as they finish, wherever they were computed, so progress is counted
where they are stored. The ETA uses this run's completions only: a resumed study starts at the rows
already stored, and counting those as if done in the first second would promise a finish far too
early. The rate is the throughput over the last ``window`` completions, and over at least the
last ``span_s`` seconds when more completions than that arrived in them: parallel workers finish in
bursts, and a task of several combinations (``eqtune.study.runner.TaskChunk``) delivers its rows
together, so 50 rows of one burst would span a few milliseconds and promise a finish far too early
(a 100,000-combination study showed "eta 3m02s (5e+02/s)" while it ran at ~115/s). The window follows a
cluster that grows, shrinks or loses a worker.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class StudyEta:
    """``eta = StudyEta(total); eta.update(done); eta.seconds_left()`` (None until two completions)."""

    def __init__(self, total: int, *, window: int = 50, span_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total = int(total)
        self.clock = clock
        self.window = max(2, int(window))
        self.span_s = float(span_s)
        self._times: deque[float] = deque()
        self._done = 0
        self.computed = 0  # completions counted in this run

    def update(self, done: int) -> None:
        """``done``: combinations finished in the study so far (stored earlier + this run)."""
        if done <= self._done:
            return
        self.computed += 1
        t = self._times
        t.append(self.clock())
        # drop the oldest while the rest still holds `window` completions spanning `span_s`
        while len(t) > self.window and t[-1] - t[1] >= self.span_s:
            t.popleft()
        self._done = done

    def rate(self) -> float | None:
        """Combinations per second over the window; None before two completions."""
        if len(self._times) < 2:
            return None
        span = self._times[-1] - self._times[0]
        return (len(self._times) - 1) / span if span > 0 else None

    def seconds_left(self) -> float | None:
        r = self.rate()
        if r is None:
            return None
        return max(0.0, (self.total - self._done) / r)

    def text(self) -> str:
        """``eta 3m12s (1.4/s)``, ``eta --`` before a rate is known, ``done`` at the end."""
        if self._done >= self.total:
            return "done"
        left, r = self.seconds_left(), self.rate()
        if left is None or r is None:
            return "eta --"
        return f"eta {format_duration(left)} ({r:.2g}/s)"


def format_duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
