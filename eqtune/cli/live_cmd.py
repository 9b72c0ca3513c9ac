"""``eqtune tune --live`` and ``eqtune session resume``: click options -> :class:`LiveConfig` -> the
journaled live tuner (:class:`eqtune.session.live.LiveTuner`), progress on stderr, result on stdout.

Every number is checked here, before any I/O: 0, NaN and inf are not defaults (``--budget 0`` once
became 30, ``--dwell nan`` passed a ``> 0`` test). Errors name the option (``--lane``, ``--warm``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from eqtune.errors import InputError

DEFAULT_BIT_RATE_GBPS = 106.25  # 8 x 100G PAM4 lane: 53.125 GBd x 2 bit/symbol (IEEE 802.3ck)

def parse_lanes(raw: Any) -> list[int]:
    """``--lane`` values (repeated and/or comma lists, ranges ``a-b``, ``all``) -> sorted lanes.

    ``[]`` means every lane of the module and comes only from an explicit ``all``; nothing given
    means lane 1. A selection that names no lane (``""``, ``4-1``, ``,``) or a lane outside 1..8
    is an :class:`~eqtune.errors.InputError`: a tune must never fall back to all lanes by accident.
    The parser is :func:`eqtune.validate.parse_lanes`, shared by every command.
    """
    from eqtune.validate import parse_lanes as _parse

    return _parse(raw, "--lane")


def live_config(*, module: str | None, lanes: Sequence[str] | str | int | None = None, instrument: str | None = None,
                module_ber: bool = False, dwell: float | None = None, verify_dwell: float | None = None,
                settle: float | None = None, budget: int | None = None, seed: int | None = None,
                knobs: str | Sequence[str] | None = None, metric: str | None = None, target_ber: float | None = None,
                channel: str | None = None, optimizer: str | None = None, optimizer_options: Sequence[str] = (),
                target: float | None = None, time_budget: float | None = None, patience: int | None = None,
                remeasure: int | None = None, warm: str | dict | None = None, site: str | None = None,
                customer: str | None = None, link: str | None = None, operator: str | None = None,
                bit_rate_gbps: float = DEFAULT_BIT_RATE_GBPS, prior_session: str | None = None,
                fixed_dwell: bool = False, screen_dwell: float | None = None, no_screen: bool = False,
                allow_traffic_down: bool = False):
    """The :class:`~eqtune.session.live.LiveConfig` of ``eqtune tune --live`` (one keyword per option;
    ``lanes`` as given to ``--lane``; dwell from ``--target-ber`` when ``--dwell`` is not given; the screen
    from ``--screen-dwell S`` (0: none) or ``--no-screen``, else chosen when the session starts:
    :func:`eqtune.session.config.choose_screen`)."""
    from eqtune.session.config import LiveConfig
    from eqtune.tune.base import parse_optimizer_options
    from eqtune.validate import finite, integer

    if not module:
        raise InputError("--live needs --module RESOURCE (e.g. emu:c2m-10in or i2c:1@0x50)")
    if module_ber and instrument:
        raise InputError("give either --instrument RESOURCE or --module-ber, not both")
    if isinstance(knobs, str):
        knobs = [k.strip() for k in knobs.split(",") if k.strip()]

    def num(value: float | None, what: str, **bounds: float) -> float | None:
        return None if value is None else finite(value, what, **bounds)

    target_ber = num(target_ber, "--target-ber", gt=0.0, le=0.5)  # a BER above 0.5 is a coin toss
    if dwell is not None:
        dwell_s = num(dwell, "--dwell (s)", gt=0.0)
    elif target_ber is not None:
        # the dwell the BER target needs: zero errors in N = -ln(0.05)/target bits (95 % confidence)
        from eqtune.drivers.measurement import dwell_for

        dwell_s = dwell_for(target_ber, finite(bit_rate_gbps, "bit rate (Gb/s)", gt=0.0) * 1e9)
    else:
        dwell_s = 1.0
    screen_dwell = num(screen_dwell, "--screen-dwell (s)", ge=0.0)
    if no_screen and screen_dwell:
        raise InputError(f"give either --screen-dwell {screen_dwell:g} or --no-screen, not both")
    screen = "off" if no_screen or screen_dwell == 0.0 else ("given" if screen_dwell else "auto")
    metadata = {"site": site, "customer": customer, "link": link, "operator": operator}
    return LiveConfig(
        module=str(module),
        lanes=parse_lanes(lanes),
        instrument=None if module_ber or not instrument else str(instrument),
        dwell_s=dwell_s,
        verify_dwell_s=num(verify_dwell, "--verify-dwell (s)", gt=0.0),
        settle_s=num(settle, "--settle (s)", ge=0.0) or 0.0,
        budget=30 if budget is None else integer(budget, "--budget", ge=1),
        seed=None if seed is None else int(seed),
        knobs=list(knobs) if knobs else None,
        metric=str(metric or "ber"),
        target_ber=target_ber,
        channel=channel or None,
        optimizer=str(optimizer or "gp"),
        optimizer_options=parse_optimizer_options(str(optimizer or "gp"), list(optimizer_options or [])),
        target_margin=num(target, "--target"),
        time_budget_s=num(time_budget, "--time-budget (s)", gt=0.0),
        patience=None if patience is None else integer(patience, "--patience", ge=1),
        remeasure_top_k=integer(remeasure or 0, "--remeasure", ge=0),
        warm=warm_from_option(warm),
        prior_session=prior_session or None,
        sequential=not fixed_dwell,
        screen_dwell_s=screen_dwell or None,
        screen=screen,
        metadata={k: str(v) for k, v in metadata.items() if v},
        allow_traffic_down=bool(allow_traffic_down),
    )


def warm_from_option(warm: Any) -> str | dict[str, dict[str, int]] | None:
    """``--warm`` for a live tune: "model" (the channel model's optimum), or a file: a tuning profile (its
    lanes' codes; digest checked), a ``tune --json`` result (its tuned codes, for every lane) or a JSON
    object of codes (``{"rx_pre": 2, ...}`` for every lane, or ``{"1": {...}, "2": {...}}`` per lane)."""
    if warm is None or isinstance(warm, dict):
        return warm
    text = str(warm)
    if text == "model":
        return "model"
    import json

    try:
        with open(text, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise InputError(f"--warm {text}: cannot read ({exc.strerror}); give 'model' or a profile / tune --json file") from None
    except ValueError as exc:
        raise InputError(f"--warm {text}: not JSON ({exc})") from None

    def codes(d: Any) -> dict[str, int]:
        if not isinstance(d, dict) or not d or not all(isinstance(v, int | float) for v in d.values()):
            raise InputError(f"--warm {text}: expected codes like {{\"rx_pre\": 2, \"tx_eq\": 5}}")
        return {str(k): int(v) for k, v in d.items()}

    if isinstance(doc, dict) and "lanes" in doc and "digest" in doc:  # a tuning profile: verify it first
        from eqtune.session.profile import Profile

        prof = Profile.load(text)
        return {str(ln): dict(c) for ln, c in prof.lanes.items()}
    if isinstance(doc, dict) and isinstance(doc.get("tuned"), dict) and "codes" in doc["tuned"]:
        return {"*": codes(doc["tuned"]["codes"])}
    if isinstance(doc, dict) and doc and all(isinstance(v, dict) for v in doc.values()):
        return {str(k): codes(v) for k, v in doc.items()}
    return {"*": codes(doc)}


def _progress(quiet: bool):
    def on_event(ev) -> None:
        if quiet:
            return
        line = ev.text()
        if line:
            click.echo(line, err=True)

    return on_event


def terminal_consent(as_json: bool = False):
    """The consent question for a traffic-down module, asked on the terminal (stderr) when stdin is one;
    None for a non-interactive run (then only ``--allow-traffic-down`` lets a write happen)."""
    import sys

    if as_json or not sys.stdin.isatty():
        return None

    def ask(notice) -> str:
        from eqtune.session.consent import CHOICE_TEXT, DOWN_ONLY, STOP, TUNE

        for line in notice.lines():
            click.echo(line, err=True)
        keys = {"t": TUNE, "d": DOWN_ONLY, "s": STOP}
        for k, c in keys.items():
            click.echo(f"  {k}: {CHOICE_TEXT[c]}", err=True)
        answer = click.prompt("Write to the module?", type=click.Choice(list(keys)), default="s", err=True,
                              show_choices=True)
        return keys[answer]

    return ask


def _say_link_warning(module: str, quiet: bool) -> None:
    """The one line of an ``emu:`` module whose link is the closed-form surrogate (a broken install), on
    stderr (``eqtune.emulate.registry.emulated_link_warning``); nothing for any other module."""
    from eqtune.emulate.registry import emulated_link_warning

    warning = emulated_link_warning(module)
    if warning and not quiet:
        click.echo(warning, err=True)


def run_live(cfg, *, sessions: str | None = None, session: str | None = None, as_json: bool = False,
             quiet: bool = False, save_profile: str | None = None) -> dict[str, Any]:
    """Run a new journaled live tune of ``cfg``; progress lines on stderr (none with ``as_json`` or
    ``quiet``), the summary (or one JSON object) on stdout. Returns the result summary dict."""
    from eqtune.session.live import LiveTuner

    _say_link_warning(cfg.module, as_json or quiet)
    tuner = LiveTuner.create(cfg, sessions_dir=sessions, session_id=session, on_event=_progress(as_json or quiet),
                             consent=terminal_consent(as_json))
    if cfg.instrument is None and not (as_json or quiet):
        # The module's host-side checker counts the host's PRBS31Q (CMIS 5.2 page 13h, Host Side Checker): the
        # lanes carry a test pattern, not traffic, for the whole session.
        click.echo(f"BER from the module's own PRBS checker: the host must send PRBS31Q on lane(s) "
                   f"{','.join(map(str, cfg.lanes))}, so they carry no customer traffic while this session runs.",
                   err=True)
    return _finish(tuner, sessions=sessions, as_json=as_json, save_profile=save_profile)


def resume_live(session_id: str, *, sessions: str | None = None, as_json: bool = False,
                quiet: bool = False, allow_traffic_down: bool = False, trusted_keys: list[Any] | None = None,
                require_signed: bool = False) -> dict[str, Any]:
    """Continue an interrupted live tune (``eqtune session resume``); output as :func:`run_live`. A
    consent to traffic-down writes journaled by the session holds; without one the terminal asks (or
    ``allow_traffic_down``). The journal must pass the integrity rule (and its signature, with
    ``require_signed``) before anything is resumed."""
    from eqtune.session.live import LiveTuner

    tuner = LiveTuner.resume(str(session_id), sessions_dir=sessions, on_event=_progress(as_json or quiet),
                             consent=terminal_consent(as_json), trusted_keys=trusted_keys,
                             require_signed=require_signed)
    if allow_traffic_down:
        tuner.config.allow_traffic_down = True
    _say_link_warning(tuner.config.module, as_json or quiet)
    return _finish(tuner, sessions=sessions, as_json=as_json, save_profile=None)


def _finish(tuner, *, sessions: str | None, as_json: bool, save_profile: str | None) -> dict[str, Any]:
    result = tuner.run()
    out = result.to_dict()
    if save_profile:
        from eqtune.session.export import save_session_profile

        out["profile"] = str(save_session_profile(tuner.journal.id, save_profile, sessions_dir=sessions))
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json(out)
    else:
        for line in result.summary_lines():
            click.echo(line)
    return out
