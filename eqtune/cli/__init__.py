"""The ``eqtune`` command line: a thin front end over the Python API.

Sub-commands live in their own modules and are imported only when invoked, so that
``eqtune --help`` does not import numpy, scikit-rf or textual. Every ``EqtuneError`` becomes
one line on stderr (with ``--json``: a JSON error object on stdout) and exit code 2; every Python
warning a command raises (an ambiguous port order, a non-passive file) one ``eqtune: warning:`` line on
stderr; Ctrl-C exits with 130.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

import click

# command name -> "module:attribute" of a click command (each owned by one room's CLI module)
_COMMANDS: dict[str, tuple[str, str]] = {
    "channel": ("eqtune.cli.channel_cmd:channel", "Channel library: list, show."),
    "eye": ("eqtune.cli.eye_cmd:eye", "Statistical eye and margins of a channel at given EQ."),
    "com": ("eqtune.cli.com_cmd:com", "COM as the standard computes it (FOM search, both package cases)."),
    "tune": ("eqtune.cli.tune_cmd:tune", "Tune equalization codes (simulation or live)."),
    "drivers": ("eqtune.cli.drivers_cmd:drivers", "Instrument driver definitions: list, scan."),
    "module": ("eqtune.cli.module_cmd:module", "CMIS module: show identity/EQ, set codes."),
    "measure": ("eqtune.cli.measure_cmd:measure", "Measure BER/eye of a module lane."),
    "emulate": ("eqtune.cli.emulate_cmd:emulate", "Start the module and instrument emulators."),
    "session": ("eqtune.cli.session_cmd:session", "On-site session journals: list, show, resume, report."),
    "profile": ("eqtune.cli.profile_cmd:profile", "Tuning profiles: save, show, verify, push."),
    "study": ("eqtune.cli.study_cmd:study", "Offline channel studies over channels x corners x profiles."),
    "tui": ("eqtune.cli.tui_cmd:tui", "The guided on-site session (terminal UI)."),
    "demo": ("eqtune.cli.demo_cmd:demo", "Tune the default shipped channel on emulated hardware."),
    "watch": ("eqtune.cli.watch_cmd:watch", "Fleet link-health watch: VDM/temperature, trends, flags."),
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return _unavailable(cmd_name)
            raise
        return getattr(module, attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help text comes from the table above: listing commands must not import them.
        rows = [(name, _COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):  # noqa: D401 - click API
        from eqtune.errors import EqtuneError

        # the sub-command's own arguments (click clears them while invoking): --json there asks for a JSON
        # error object on stdout
        args = [str(a) for a in (*getattr(ctx, "_protected_args", ()), *ctx.args)]
        try:
            with warnings.catch_warnings():  # restores the caller's hook and filters afterwards
                warnings.showwarning = _show_warning
                return super().invoke(ctx)
        except EqtuneError as exc:
            from eqtune.cli._common import report_error

            ctx.exit(report_error(exc, args))
        except click.UsageError as exc:  # a bad option value: one line too, exit 2 (click's own code)
            from eqtune.cli._common import report_error

            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            ctx.exit(report_error(exc, args, message=exc.format_message() + where))
        except KeyboardInterrupt:
            click.echo("eqtune: interrupted", err=True)
            ctx.exit(130)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A warning a command raises (an ambiguous port order, a non-passive file, an unauthenticated
    bridge) as one line on stderr, ``eqtune: warning: ...``, instead of Python's two lines that name an
    eqtune source file and quote its code."""
    click.echo(f"eqtune: warning: {_one_line(str(message))}", err=True)


def _one_line(text: str) -> str:
    """Error text on one line (a message quoting a file's content may hold newlines), with control
    characters a device or file put there shown as escapes (see eqtune.textsafe)."""
    from eqtune.textsafe import printable

    return printable(" ".join(text.split()))


def _unavailable(name: str) -> click.Command:
    @click.command(name=name, help=_COMMANDS[name][1] + " (not available in this build)")
    def _cmd() -> None:
        click.echo(f"eqtune: error: '{name}' is not available in this build of eqtune", err=True)
        sys.exit(2)

    return _cmd


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="eqtune", message="eqtune %(version)s")
@click.pass_context
def main(ctx: click.Context) -> None:
    """eqtune: tune the equalization of high-speed module links for the best eye margin.

    Run ``eqtune COMMAND --help`` for each command. With no command in an interactive
    terminal, the guided session (``eqtune tui``) starts.
    """
    if ctx.invoked_subcommand is None:
        if sys.stdin.isatty() and sys.stdout.isatty():
            ctx.invoke(ctx.command.get_command(ctx, "tui"))
        else:
            click.echo(ctx.get_help())
