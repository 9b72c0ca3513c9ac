"""``eqtune tui``: the guided on-site session in the terminal."""

from __future__ import annotations

import click


@click.command(name="tui")
@click.option("--sessions", "sessions_dir", type=click.Path(file_okay=False), default=None,
              help="Session folder (default: $EQTUNE_SESSIONS or ./sessions).")
@click.option("--emulators", is_flag=True, help="Start with the emulated module selected (demos, training).")
def tui(sessions_dir: str | None, emulators: bool) -> None:
    """The guided on-site session: devices, baseline, tune, verify, save, push, report."""
    from eqtune.tui.app import run

    sid = run(sessions_dir, emulators=emulators)
    if sid:
        click.echo(f"session {sid}: resume with `eqtune session resume {sid}` or `eqtune tui`")
