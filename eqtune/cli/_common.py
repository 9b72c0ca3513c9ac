"""Small helpers shared by the CLI modules (output of JSON, consistent error text)."""

from __future__ import annotations

from typing import Any

import click

from eqtune.jsonutil import dumps


def echo_json(obj: Any) -> None:
    """Print one strict-JSON object on stdout (numpy values converted, NaN/inf -> null)."""
    click.echo(dumps(obj, indent=2))


class FiniteFloat(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN and +/-inf (``float("nan")`` passes every ``<`` test,
    so a plain range check lets ``--dwell nan`` through)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        rv = super().convert(value, param, ctx)
        if rv is not None and not math.isfinite(float(rv)):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


def report_error(exc: Exception, args: list[str] | None = None, *, message: str | None = None) -> int:
    """Report an ``EqtuneError`` the way the user asked for output; returns the exit code (2).

    With ``--json`` among the command's arguments the error is one JSON object on stdout,
    ``{"error": {"type", "message", "exit_code"}}``, and nothing goes to stderr (a script reading
    stdout gets valid JSON either way); otherwise one line ``eqtune: error: ...`` on stderr."""
    from eqtune.textsafe import printable

    code = int(getattr(exc, "exit_code", 2))
    # one line (a message quoting a file may hold newlines), device/file control characters escaped
    text = printable(" ".join((str(exc) if message is None else message).split()))
    if "--json" in (args or []):
        echo_json({"error": {"type": type(exc).__name__, "message": text, "exit_code": code}})
    else:
        click.echo(f"eqtune: error: {text}", err=True)
    return code


def module_code_options(*, metavar: str | None = None, prefix: str = "",
                        extra_help: dict[str, str] | None = None) -> Any:
    """Click options ``--rx-pre/--rx-post/--rx-amp/--tx-eq`` (int, default None), one per module code,
    with names, option strings and help taken from the knob registry (``eqtune.serdes.knobs``)."""
    from eqtune.serdes.knobs import KNOB_DEFS, MODULE_KNOBS

    extra = extra_help or {}

    def decorate(f: Any) -> Any:
        for name in reversed(MODULE_KNOBS):  # click applies decorators bottom-up: keep the registry order
            d = KNOB_DEFS[name]
            f = click.option(d.cli_option, name, type=int, default=None, metavar=metavar,
                             help=f"{prefix}{d.description}{extra.get(name, '')}.")(f)
        return f

    return decorate
