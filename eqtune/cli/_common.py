"""Small helpers shared by the CLI modules (output of JSON, consistent error text)."""

from __future__ import annotations

from typing import Any

import click

from eqtune.jsonutil import iter_dumps


def echo_json(obj: Any) -> None:
    """Print one strict-JSON object on stdout (numpy values converted, NaN/inf -> null). A
    ``jsonutil.LazyList`` in it (a tune's history) is written element by element, in blocks of about 1 MB,
    so that the document is never held as text (the same characters as one ``dumps``)."""
    buf: list[str] = []
    size = 0
    for piece in iter_dumps(obj, indent=2):
        buf.append(piece)
        size += len(piece)
        if size >= 1 << 20:
            click.echo("".join(buf), nl=False)
            buf, size = [], 0
    click.echo("".join(buf))


def echo_json_outcome(doc: dict[str, Any], failure: Exception | None) -> None:
    """``--json`` output of a command that can fail part-way (a push to several modules, a study): exactly
    one JSON document on stdout in every outcome. On failure the document carries ``error`` ({type,
    message, exit_code}, as :func:`report_error` writes it) and the command exits 2 with nothing more
    printed, so a script (e.g. ``watch --from-push``) reads the report of the push that failed somewhere."""
    if failure is None:
        echo_json(doc)
        return
    from eqtune.textsafe import printable

    code = int(getattr(failure, "exit_code", 2))
    echo_json({**doc, "error": {"type": type(failure).__name__, "message": printable(" ".join(str(failure).split())),
                                "exit_code": code}})
    raise click.exceptions.Exit(code)


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


MAX_FILE_LANES = 64  # a 256-port Touchstone file: far above any cable or backplane file


class FileLane(click.ParamType):
    """A lane of a multi-lane Touchstone file, 1..64, in ASCII digits (click's IntRange takes '１' and '1_0'
    through ``int``); parsed by :func:`eqtune.validate.parse_file_lane`."""

    name = "lane"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value is None or isinstance(value, int):
            return value
        from eqtune.errors import InputError
        from eqtune.validate import parse_file_lane

        try:
            return parse_file_lane(str(value), "--lane", max_lane=MAX_FILE_LANES)
        except InputError as exc:
            self.fail(str(exc), param, ctx)


def extrapolate_option(f: Any) -> Any:
    """``--extrapolate METHOD`` (data ending below 0.75 x baud: ``loss-fit`` or ``hold``, eqtune.channel.band)."""
    return click.option("--extrapolate", "extrapolate", type=click.Choice(("none", "loss-fit", "hold")), default="none",
                     show_default=True,
                     help="Data that end below 0.75 x baud are refused; loss-fit continues the fitted insertion "
                          "loss (802.3 69B.4.2 form), hold keeps the last value (optimistic).")(f)


def channel_file_options(f: Any) -> Any:
    """``--lane K`` (lane K of a multi-lane Touchstone file: ports 4K-3..4K) and ``--extrapolate METHOD``
    for every command that loads a channel file; pass the values to :func:`channel_file_kwargs`."""
    f = extrapolate_option(f)
    return click.option("--lane", "file_lane", type=FileLane(), default=None, metavar="K",
                        help="Lane K of a multi-lane Touchstone file (.s8p, .s16p, ...: ports 4K-3..4K).")(f)


def channel_file_kwargs(file_lane: int | str | None, extrapolate: str) -> dict[str, Any]:
    """Keyword arguments ``lane``/``extrapolate`` for ``eqtune.channel.load_channel`` (``file_lane`` as an
    int, or the text of an option that means a file lane where it is not a click.IntRange)."""
    if isinstance(file_lane, str):
        from eqtune.validate import parse_file_lane

        file_lane = parse_file_lane(file_lane)
    return {"lane": file_lane, "extrapolate": None if extrapolate == "none" else extrapolate}


def journal_trust_options(f: Any) -> Any:
    """``--require-signed`` and ``--trusted-key FILE`` for commands that derive something from a journal
    (``eqtune.session.integrity``); pass the values to :func:`journal_trust`."""
    f = click.option("--trusted-key", "trusted_key", multiple=True, metavar="FILE",
                     help="Key that may have signed the journal (Ed25519 .pub or the HMAC site key); repeatable; "
                          "also $EQTUNE_TRUSTED_KEYS.")(f)
    return click.option("--require-signed", "require_signed", is_flag=True,
                        help="Refuse a journal that is not signed (`eqtune session sign`) by a trusted key, "
                             "or has records after its signature (also $EQTUNE_REQUIRE_SIGNED_JOURNALS=1).")(f)


def journal_trust(require_signed: bool, trusted_key: tuple[str, ...]) -> dict[str, Any]:
    """Keyword arguments ``trusted_keys``/``require_signed`` for the session readers."""
    from eqtune.session.signing import trusted_keys

    return {"trusted_keys": trusted_keys(trusted_key) if trusted_key else None, "require_signed": require_signed}


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


def split_numbers(text: str, option: str) -> list[float]:
    """``"-0.1,0.8"`` -> [-0.1, 0.8]; one clear line naming ``option`` otherwise."""
    from eqtune.errors import InputError

    try:
        return [float(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise InputError(f"{option} {text!r}: give comma-separated numbers, e.g. -0.1,0.8,-0.1") from None


def parse_rx_ffe(text: str, direction: str | None) -> Any:
    """``--rx-ffe TAPS,PRE`` -> the DSP receiver ``eqtune.eye.ffe_eye.RxFfe`` (the DFE and tap limits: the
    802.3dj KR reference's); ``direction`` None is the serdes one (``eqtune tune`` implies it)."""
    from eqtune.errors import InputError
    from eqtune.eye.ffe_eye import RxFfe

    if direction not in (None, "serdes", "module_rx"):
        raise InputError(f"--rx-ffe models the receiver after a host TX: use --direction serdes or module_rx, "
                         f"not {direction}")
    v = split_numbers(text, "--rx-ffe")
    if len(v) != 2 or any(x != int(x) for x in v):
        raise InputError(f"--rx-ffe {text!r}: give TAPS,PRE as two integers, e.g. 15,6")
    return RxFfe(n_taps=int(v[0]), n_pre=int(v[1]))
