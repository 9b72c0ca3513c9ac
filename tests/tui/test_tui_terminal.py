"""The terminal after the TUI is killed: a supervising parent restores it (SIGKILL cannot be caught),
SIGTERM and SIGHUP end the app cleanly. The app runs on a real pseudo-terminal; every wait is for an
event (the screen drawn, a process gone), never for a time.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from eqtune.tui.terminal import RESTORE_SEQUENCE

pytestmark = [pytest.mark.timeout(180), pytest.mark.skipif(sys.platform != "linux", reason="needs /proc and a pty")]
ROOT = Path(__file__).resolve().parents[2]


class Pty:
    """A child on a new pseudo-terminal, its output collected by a thread."""

    def __init__(self, args: list[str], tmp: Path) -> None:
        self.master, self.slave = pty.openpty()
        termios.tcsetattr(self.slave, termios.TCSANOW, termios.tcgetattr(self.slave))
        env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", COLUMNS="80", LINES="24",
                   EQTUNE_SESSIONS=str(tmp))
        env.pop("EQTUNE_TUI_CHILD", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "eqtune", "tui", "--sessions", str(tmp), *args],
                                     stdin=self.slave, stdout=self.slave, stderr=self.slave, env=env,
                                     start_new_session=True)
        self.out = bytearray()
        self.seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            if not data:
                return
            with self.seen:
                self.out += data
                self.seen.notify_all()

    def wait_for(self, text: bytes, timeout: float = 120.0) -> None:
        with self.seen:
            assert self.seen.wait_for(lambda: text in self.out, timeout), bytes(self.out[-400:])

    def app_pid(self) -> int:
        """The process drawing the screen: the supervisor's child, or the process itself unsupervised."""
        kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        return int(kids[0]) if kids else self.proc.pid

    def canonical(self) -> bool:
        lflag = termios.tcgetattr(self.slave)[3]
        return bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.slave)
        os.close(self.master)


def test_sigkill_of_the_app_leaves_a_usable_terminal(tmp_path: Path) -> None:
    t = Pty([], tmp_path)
    try:
        t.wait_for(b"Session")  # the first screen is drawn: the terminal is in raw mode now
        assert not t.canonical()
        os.kill(t.app_pid(), signal.SIGKILL)
        assert t.proc.wait(timeout=60) == 128 + signal.SIGKILL
        assert t.canonical()  # line editing and echo are back
        t.wait_for(RESTORE_SEQUENCE.encode())  # alternate screen left, cursor shown, mouse reporting off
        t.wait_for(b"ended by SIGKILL")
    finally:
        t.close()


def test_without_the_supervisor_a_sigkill_leaves_the_terminal_raw(tmp_path: Path) -> None:
    """The failure the supervisor exists for (the test above would see it too)."""
    t = Pty(["--no-supervise"], tmp_path)
    try:
        t.wait_for(b"Session")
        os.kill(t.app_pid(), signal.SIGKILL)
        t.proc.wait(timeout=60)
        assert not t.canonical()
    finally:
        t.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_app_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    t = Pty([], tmp_path)
    try:
        t.wait_for(b"Session")
        t.proc.send_signal(sig)  # to the supervisor, as `kill` or a dropped SSH session would
        assert t.proc.wait(timeout=60) == 0
        assert t.canonical()
    finally:
        t.close()
