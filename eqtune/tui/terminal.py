"""The terminal survives the TUI: a supervising parent restores it whatever ended the app.

``eqtune tui`` runs the app in a child process and waits. The parent keeps the terminal's line
discipline (termios) as it was before the app put it in raw mode; when the child ends abnormally (a
SIGKILL, an out-of-memory kill, a crash in the terminal driver) the parent puts the settings back and
writes the sequences that undo what the app switched on, so the shell is usable without ``reset``.
SIGTERM and SIGHUP reaching the parent (``kill``, an SSH session that drops) are passed to the child,
which aborts a running tune (the module gets its original codes back) and exits cleanly
(:meth:`eqtune.tui.app.EqtuneApp.on_terminate_signal`).

The sequences are the ones Textual's Linux driver writes when it stops application mode
(textual/drivers/linux_driver.py, ``stop_application_mode`` / ``_disable_mouse_support`` /
``_disable_bracketed_paste``): leave the alternate screen, show the cursor, mouse reporting off
(1000/1003/1015/1006), bracketed paste off (2004), focus events off (1004), in-band resize off (2048),
the kitty keyboard protocol popped (``CSI < u``), line wrap back on (7).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

#: undo what the app switched on (see the module docstring for the source)
RESTORE_SEQUENCE = ("\x1b[<u\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?1016l\x1b[?2004l\x1b[?2048l"
                    "\x1b[?1004l\x1b[?7h\x1b[?1049l\x1b[?25h\x1b[0m")
CHILD_ENV = "EQTUNE_TUI_CHILD"  # set in the child: it runs the app itself


def _tty_state(fd: int) -> Any:
    try:
        import termios

        return termios.tcgetattr(fd) if os.isatty(fd) else None
    except (ImportError, OSError):
        return None


def restore_terminal(fd: int, state: Any) -> bool:
    """Put ``state`` (termios attributes) back on ``fd`` and write :data:`RESTORE_SEQUENCE`; False when
    the terminal is gone (a dropped SSH session)."""
    try:
        import termios

        if state is not None:
            termios.tcsetattr(fd, termios.TCSANOW, state)
        os.write(fd, RESTORE_SEQUENCE.encode())
        return True
    except (ImportError, OSError):
        return False


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_supervised(args: Sequence[str]) -> int:
    """Run ``python -m eqtune tui ARGS`` as a child on this terminal; restore the terminal if the child
    did not; pass SIGTERM/SIGHUP on. Returns the child's exit code (128 + signal when it was killed)."""
    fd = sys.stdin.fileno() if sys.stdin is not None else 0
    state = _tty_state(fd)
    env = dict(os.environ, **{CHILD_ENV: "1"})
    child = subprocess.Popen([sys.executable, "-m", "eqtune", "tui", *args], env=env)

    def forward(signum: int, _frame: Any) -> None:
        try:
            child.send_signal(signum)
        except OSError:
            pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    old[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C belongs to the app (it asks)
    try:
        while True:
            try:
                code = child.wait()
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries, kept for clarity
                continue
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if code != 0:
        restored = restore_terminal(fd, state)
        if code < 0 and restored:
            sys.stderr.write(f"eqtune tui ended by {_signal_name(code)}; the terminal is restored. The session "
                             "journal keeps every measurement: `eqtune tui` resumes it (step 1).\n")
        return 128 - code if code < 0 else code
    return 0


def in_child() -> bool:
    return os.environ.get(CHILD_ENV) == "1"
