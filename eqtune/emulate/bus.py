"""What a two-wire target lives with: its clock and its bus errors (the module emulator's).

:class:`RealClock` / :class:`VirtualClock` meet :class:`eqtune.drivers.protocols.Clock`; a virtual
clock moves only when someone sleeps on it (the driver sleeps through the transport), so emulated
waits cost nothing. :class:`EmuNack` / :class:`EmuTimeout` are what the emulated module raises where
a real bus would not acknowledge or time out; transports turn them into ``TransportError``.
"""

from __future__ import annotations

import threading
import time


class EmuNack(OSError):
    """The emulated module did not acknowledge the transaction."""


class EmuTimeout(TimeoutError):
    """The emulated transaction timed out (clock stretched / no answer)."""


class RealClock:
    def __call__(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class VirtualClock:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self.now += seconds

    advance = sleep
