"""``eqtune tui``: the guided on-site session in the terminal."""

from __future__ import annotations

import click


@click.command(name="tui")
@click.option("--sessions", "sessions_dir", type=click.Path(file_okay=False), default=None,
              help="Session folder (default: $EQTUNE_SESSIONS or ./sessions).")
@click.option("--emulators", is_flag=True, help="Start with the emulated module selected (demos, training).")
@click.option("--no-supervise", is_flag=True,
              help="Run the app in this process (no supervising parent restoring the terminal after a kill).")
def tui(sessions_dir: str | None, emulators: bool, no_supervise: bool = False) -> None:
    """The guided on-site session: devices, baseline, tune, verify, save, push, report."""
    import sys

    from eqtune.tui.terminal import in_child, run_supervised

    if not no_supervise and not in_child() and sys.stdin is not None and sys.stdin.isatty():
        # a parent that restores the terminal whatever ends the app (eqtune.tui.terminal)
        args = (["--sessions", sessions_dir] if sessions_dir else []) + (["--emulators"] if emulators else [])
        code = run_supervised(args)
        if code:
            raise SystemExit(code)
        return
    from eqtune.tui.app import run

    sid = run(sessions_dir, emulators=emulators)
    if sid:
        click.echo(f"session {sid}: resume with `eqtune session resume {sid}` or `eqtune tui`")
