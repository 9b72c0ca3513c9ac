"""``eqtune tune CHANNEL``: tune equalization codes in simulation (``--sim``) or live (``--live``).

Heavy modules (numpy, skopt, the eye engine, rich, matplotlib) are imported inside the command only.
"""

from __future__ import annotations

from typing import Any

import click

from eqtune.cli._common import FiniteFloat, channel_file_kwargs, extrapolate_option
from eqtune.serdes.knobs import DIRECTIONS, LIVE_METRICS
from eqtune.validate import parse_file_lane


def _split(values: tuple[str, ...] | str | None) -> list[str]:
    if not values:
        return []
    if isinstance(values, str):
        values = (values,)
    return [p.strip() for v in values for p in str(v).split(",") if p.strip()]


def _assignments(text: str | None, option: str) -> dict[str, float]:
    """``"rx_pre=1,rx_post=2"`` -> {"rx_pre": 1.0, "rx_post": 2.0}."""
    from eqtune.errors import TuneError

    out: dict[str, float] = {}
    for part in _split(text):
        name, eq, val = part.partition("=")
        try:
            if not eq:
                raise ValueError
            out[name.strip()] = float(val)
        except ValueError:
            raise TuneError(f"{option} {part!r}: give knob=value pairs, e.g. rx_pre=1,rx_post=3") from None
    return out


def _load_json(path: str, option: str) -> Any:
    import json

    from eqtune.errors import TuneError

    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise TuneError(f"{option} {path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise TuneError(f"{option} {path}: not JSON ({exc})") from None


@click.command("tune")
@click.argument("channel", required=False)
@click.option("--sim", "mode", flag_value="sim", default=True, help="Tune in simulation (eye engine; default).")
@click.option("--live", "mode", flag_value="live", help="Tune a real or emulated module (see --module).")
@click.option("--knobs", default=None, metavar="K1,K2",
              help="Knobs to tune: rx_pre,rx_post,rx_amp,tx_eq,tx_cm3..tx_c2,ctle_gdc,ctle_gdc2, with --rx-ffe also "
                   "rx_ffe_pre1,rx_ffe_post1,rx_ffe_post2; aliases tx_ffe, ctle, rx_ffe. "
                   "Default: the module Rx-output codes rx_pre,rx_post,rx_amp.")
@click.option("--fix", "fix", default=None, metavar="K=V,...", help="Fix other knobs at these values.")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Measurements allowed (baseline included). Default: 60 with --sim, 30 with --live.")
@click.option("--objective", default="eye_height", show_default=True,
              help="eye_height (mV), com (dB), eye_width (UI), fec (decades of KP4 codeword error ratio below the 6.2e-11 frame-loss target), or a weighted sum like eye_height:1,com:10.")
@click.option("--corners", default=None, metavar="C1,C2",
              help="Tune the worst case over corners: 25C,85C (trace temperature), xtalk-on,xtalk-off, 85C+xtalk-on. "
                   "A corner sets what it names: crosstalk only where it says xtalk-on (needs a channel with "
                   "aggressors, e.g. c2m-10in-xtalk).")
@click.option("--seed", type=int, default=None, help="Random seed (reproducible runs); drawn and reported if omitted.")
@click.option("--ber", type=FiniteFloat(min=0.0, max=0.5, min_open=True), default=1e-6, show_default=True, help="Target BER of the eye margins.")
@click.option("--direction", type=click.Choice(DIRECTIONS), default=None,
              help="Link direction (default: from the knobs).")
@click.option("--profile", "serdes_profile", default=None, help="SerDes profile name or TOML (default: the channel's).")
@click.option("--optimizer", type=click.Choice(["gp", "random", "grid"]), default=None,
              help="Bayesian (gp) or a baseline. Default: gp; with --sim the whole grid in one batch instead "
                   "when that costs no more time than the budgeted GP run (the output says which).")
@click.option("--optimizer-option", "optimizer_option", multiple=True, metavar="NAME=VALUE",
              help="Optimizer setting (repeat or comma list), e.g. ls_prior=0,directions=axes: the GP's "
                   "options are listed in docs/tuning.md. Recorded in the --json output and the session.")
@click.option("--start", default=None, metavar="K=V,...", help="Start (baseline) codes; default: the profile defaults.")
@click.option("--warm", default=None, metavar="FILE",
              help="Warm start: a previous --json result (its history) or a profile (its codes). "
                   "[live] also 'model': measure the channel model's optimum first.")
@click.option("--time-budget", type=FiniteFloat(min=0.0, min_open=True), default=None, metavar="S", help="Stop after S seconds.")
@click.option("--target", "target_margin", type=FiniteFloat(), default=None, help="Stop once this margin is reached.")
@click.option("--patience", type=click.IntRange(min=1), default=None, metavar="K", help="Stop when the recommendation is unchanged for K evaluations.")
@click.option("--remeasure", type=click.IntRange(min=0), default=0, metavar="K", help="Re-measure the K best points at the end (noisy sources).")
@click.option("--fixed-dwell", is_flag=True, help="[live] Every BER measurement dwells the whole --dwell (default: it ends once its count decides against the incumbent).")
@click.option("--screen-dwell", type=FiniteFloat(min=0.0), default=None, metavar="S",
              help="[live] Screen: search measurements dwell at most S s (a higher BER target, e.g. --dwell / 8); "
                   "each lane's best codes (the last --remeasure evaluations, default 4) and the verify dwell "
                   "the whole --dwell. A stop rule moves the group to those first. Default: chosen when the "
                   "session starts (--dwell / 8 for BER with a dwell of 8 s or more, a target of 1e-9 or "
                   "less and a budget above 8; the plan says which); 0 = no screen.")
@click.option("--no-screen", is_flag=True, help="[live] No screen: every search measurement may dwell the whole --dwell.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (progress goes to stderr).")
@click.option("--save-profile", default=None, metavar="FILE", help="Write the tuned codes as a profile / JSON file.")
@click.option("--plot", default=None, metavar="FILE.png", help="Convergence curve and tuned eye.")
@click.option("--text-eye", is_flag=True, help="[sim] Draw the tuned statistical eye in the terminal (ASCII).")
@click.option("--rx-ffe", "rx_ffe", default=None, metavar="TAPS,PRE",
              help="[sim] Tune the eye of a DSP host receiver: CTLE, MMSE-adapted Rx FFE of TAPS taps (PRE before the "
                   "cursor), 1-tap DFE, e.g. 15,6; direction serdes. Its tap overrides rx_ffe_pre1, rx_ffe_post1, "
                   "rx_ffe_post2 (codes -32..32, 1/64 of the cursor tap) may then be in --knobs or --fix.")
# live tuning (eqtune.cli.live_cmd: these options -> LiveConfig -> the journaled live tuner)
@click.option("--module", default=None, metavar="RESOURCE", help="[live] Module: i2c:1@0x50, optoe:..., emu:CHANNEL.")
@click.option("--lane", "lane", multiple=True, metavar="N",
              help="[live] Lane(s) 1..8 (repeat or comma list). [sim] Lane K of a multi-lane Touchstone file "
                   "(.s8p, .s16p: ports 4K-3..4K).")
@extrapolate_option
@click.option("--instrument", default=None, metavar="RESOURCE", help="[live] BERT / scope measuring the margin.")
@click.option("--module-ber", is_flag=True, help="[live] Use the module's own PRBS checker for BER.")
@click.option("--dwell", type=FiniteFloat(min=0.0, min_open=True), default=None, metavar="S", help="[live] Measurement dwell time per point (s).")
@click.option("--session", default=None, metavar="ID", help="[live] Session id (journal name).")
@click.option("--sessions", default=None, metavar="DIR", help="[live] Sessions folder.")
@click.option("--site", default=None, help="[live] Site name recorded in the journal.")
@click.option("--customer", default=None, help="[live] Customer recorded in the journal.")
@click.option("--link", default=None, help="[live] Link name / id recorded in the journal.")
@click.option("--operator", default=None, help="[live] Operator recorded in the journal.")
@click.option("--verify-dwell", type=FiniteFloat(min=0.0, min_open=True), default=None, metavar="S",
              help="[live] Dwell time of the final verify measurements (s; default: as --dwell).")
@click.option("--metric", type=click.Choice(LIVE_METRICS), default=None,
              help="[live] Measured margin: ber, q_db or eye_height (default: ber).")
@click.option("--target-ber", "--ber-target", "target_ber", type=FiniteFloat(min=0.0, max=0.5, min_open=True),
              default=None, metavar="BER",
              help="[live] BER target; sets the dwell when --dwell is not given (--ber-target: the same).")
@click.option("--settle", type=FiniteFloat(min=0.0), default=None, metavar="S",
              help="[live] Wait after writing codes before measuring (s; default 0).")
@click.option("--prior-session", default=None, metavar="ID|auto",
              help="[live] Start from an earlier session's measurements (the next module of a platform): its id, "
                   "or 'auto' for the last completed session on the same module part and CHANNEL.")
@click.option("--allow-traffic-down", is_flag=True,
              help="[live] Accept, without asking, that every write takes the data path (traffic) down on a "
                   "module whose Apply re-initializes it (a maintenance window). Without it a terminal asks "
                   "first and a non-interactive run writes nothing.")
def tune(channel: str | None, mode: str, knobs: str | None, fix: str | None, budget: int | None, objective: str,
         corners: str | None, seed: int | None, ber: float, direction: str | None, serdes_profile: str | None,
         optimizer: str | None, optimizer_option: tuple[str, ...], start: str | None, warm: str | None,
         time_budget: float | None, target_margin: float | None, patience: int | None, remeasure: int, as_json: bool,
         save_profile: str | None, plot: str | None, text_eye: bool, module: str | None, lane: tuple[str, ...],
         instrument: str | None, module_ber: bool, dwell: float | None, session: str | None,
         sessions: str | None, site: str | None, customer: str | None, link: str | None,
         operator: str | None, verify_dwell: float | None, metric: str | None, target_ber: float | None,
         settle: float | None, prior_session: str | None, fixed_dwell: bool, screen_dwell: float | None,
         no_screen: bool, allow_traffic_down: bool, extrapolate: str = "none", rx_ffe: str | None = None) -> None:
    """Tune the equalization codes of CHANNEL for the largest eye margin.

    \b
    Simulation:  eqtune tune c2m-10in --sim --knobs rx_pre,rx_post,rx_amp --corners 25C,85C
    Live:        eqtune tune c2m-10in --live --module emu:c2m-10in --lane 1 --module-ber

    Prints the baseline (default codes) and tuned margins, the tuned codes, evaluations and time.
    Ctrl-C stops and keeps the best point so far.
    """
    from eqtune.errors import TuneError

    if mode == "live":
        if rx_ffe is not None:
            raise TuneError("--rx-ffe applies to --sim (a live tune writes the codes the module's driver exposes)")
        optimizer = optimizer or "gp"
        if text_eye:
            raise TuneError("--text-eye applies to --sim (a live tune's eye is the model's: see the session report)")
        _refuse_sim_only_options(direction=direction, module_ber=module_ber, instrument=instrument, fix=fix,
                                 corners=corners, serdes_profile=serdes_profile, start=start, plot=plot)
        if budget is None:
            budget = 30
        try:
            from eqtune.cli.live_cmd import live_config, run_live
        except ImportError as exc:
            raise TuneError(f"--live is not available in this build ({exc}): use --sim") from None
        cfg = live_config(
            module=module, lanes=lane, instrument=instrument, module_ber=module_ber, dwell=dwell,
            verify_dwell=verify_dwell, settle=settle, budget=budget, seed=seed, knobs=knobs, metric=metric,
            target_ber=target_ber, channel=channel, optimizer=optimizer, optimizer_options=_split(optimizer_option),
            target=target_margin, time_budget=time_budget, patience=patience, remeasure=remeasure, warm=warm,
            site=site, customer=customer, link=link, operator=operator, prior_session=prior_session,
            fixed_dwell=fixed_dwell, screen_dwell=screen_dwell, no_screen=no_screen,
            allow_traffic_down=allow_traffic_down)
        run_live(cfg, sessions=sessions, session=session, as_json=as_json, save_profile=save_profile)
        return
    live_given = [o for o, v in (("--module", module), ("--instrument", instrument),
                                 ("--module-ber", module_ber), ("--dwell", dwell), ("--session", session),
                                 ("--sessions", sessions), ("--site", site), ("--customer", customer),
                                 ("--link", link), ("--operator", operator), ("--verify-dwell", verify_dwell),
                                 ("--metric", metric), ("--target-ber", target_ber), ("--settle", settle),
                                 ("--prior-session", prior_session), ("--fixed-dwell", fixed_dwell),
                                 ("--screen-dwell", screen_dwell is not None), ("--no-screen", no_screen),
                                 ("--allow-traffic-down", allow_traffic_down))
                  if v]
    if live_given:
        raise TuneError(f"{', '.join(live_given)} only apply with --live")
    if not channel:
        raise TuneError("give a CHANNEL (library name or Touchstone/TOML file), e.g. eqtune tune c2m-10in --sim")
    if budget is None:
        budget = 60
    _run_sim(channel=channel, knobs=knobs, fix=fix, budget=budget, objective=objective, corners=corners, seed=seed,
             ber=ber, direction=direction, serdes_profile=serdes_profile, optimizer=optimizer,
             optimizer_option=_split(optimizer_option), start=start, warm=warm, time_budget=time_budget,
             target_margin=target_margin, patience=patience, remeasure=remeasure, as_json=as_json,
             save_profile=save_profile, plot=plot, text_eye=text_eye,
             channel_options=channel_file_kwargs(parse_file_lane(lane), extrapolate), rx_ffe=rx_ffe)


def _refuse_sim_only_options(*, direction: str | None, module_ber: bool, instrument: str | None, fix: str | None,
                             corners: str | None, serdes_profile: str | None, start: str | None,
                             plot: str | None) -> None:
    """A live session never ignores an option silently: the model-only options are refused in one line.

    A live session's direction is its measurement's: the module's PRBS checker (``--module-ber``, or no
    instrument) counts errors host -> module, which is ``module_rx``; an instrument measures what it is
    cabled to. ``--direction module_rx`` with the module's checker is accepted (it says what happens)."""
    from eqtune.errors import TuneError

    given = [o for o, v in (("--fix", fix), ("--corners", corners), ("--profile", serdes_profile),
                            ("--start", start), ("--plot", plot)) if v]
    if given:
        raise TuneError(f"{', '.join(given)}: simulation option(s), not used by a live session (it measures the "
                        "module from its current codes); drop them, or tune the model with --sim")
    if direction is not None and not (direction == "module_rx" and (module_ber or not instrument)):
        measured = ("the module's PRBS checker measures module_rx (host -> module)" if module_ber or not instrument
                    else "an instrument measures the direction it is cabled to")
        raise TuneError(f"--direction {direction} does not apply to this live session: {measured}; "
                        "drop --direction, or choose the measurement that sees that direction")


def _run_sim(*, channel: str, knobs: str | None, fix: str | None, budget: int, objective: str,
             corners: str | None, seed: int | None, ber: float, direction: str | None,
             serdes_profile: str | None, optimizer: str | None, start: str | None, warm: str | None,
             optimizer_option: list[str] | None = None,
             time_budget: float | None, target_margin: float | None, patience: int | None, remeasure: int,
             as_json: bool, save_profile: str | None, plot: str | None, text_eye: bool = False,
             channel_options: dict[str, Any] | None = None, rx_ffe: str | None = None) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from eqtune.tune import SimulationSource, tune
    from eqtune.tune.base import new_seed, parse_optimizer_options

    console = Console(stderr=as_json)
    opt_options = parse_optimizer_options(optimizer or "gp", optimizer_option or [])
    if seed is None:
        seed = new_seed()
    receiver = None
    if rx_ffe is not None:
        from eqtune.cli._common import parse_rx_ffe
        from eqtune.errors import TuneError

        given = [o for o, v in (("--plot", plot), ("--text-eye", text_eye)) if v]
        if given:
            raise TuneError(f"{', '.join(given)} draw(s) the CTLE + DFE eye, not the --rx-ffe receiver's: drop "
                            f"{' and '.join(given)}, or see the tuned point with eqtune eye ... --rx-ffe")
        receiver = parse_rx_ffe(rx_ffe, direction)
    src = SimulationSource(channel, knobs, objective=objective, corners=corners, ber=ber,
                           fixed=_assignments(fix, "--fix"), profile=serdes_profile, direction=direction,
                           channel_options=channel_options, rx_ffe=receiver)
    start_pt = None
    if start:
        start_pt = src.default_point()
        start_pt.update(_assignments(start, "--start"))
    warm_data = _load_json(warm, "--warm") if warm else None
    units = f" {src.units}" if src.units else ""
    search = None
    sequential = [o for o, v in (("--optimizer-option", opt_options), ("--time-budget", time_budget),
                                 ("--target-margin", target_margin), ("--patience", patience),
                                 ("--remeasure", remeasure)) if v]
    if optimizer is None and sequential:
        from eqtune.tune.plan import SimSearch

        search = SimSearch("gp", None, budget, None, float("nan"), f"{', '.join(sequential)} given: the GP")
        optimizer = "gp"
    elif optimizer is None:  # automatic: the whole grid in one batch when it costs no more than the GP run
        from eqtune.tune.plan import choose_sim_search

        search = choose_sim_search(src, budget)
        optimizer = "grid" if search.mode == "exhaustive" else "gp"
        if search.mode == "exhaustive":
            budget = max(budget, int(search.feasible or 0) + 1)  # every code (the baseline is one of them)
        if not as_json:
            console.print(f"search       {search.mode}: {search.reason}")

    from eqtune.cli._progress import PlainProgress

    label = f"{channel} ({', '.join(src.space.names)})"
    if console.is_terminal:
        bar: Any = Progress(TextColumn("[bold]tuning[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), console=console,
                            transient=False, disable=False)
        task = bar.add_task(label, total=budget, best="-")

        def on_progress(p) -> None:
            bar.update(task, completed=p.evaluation, best=f"{p.best_margin:.2f}{units}")
    else:  # a pipe or a log: whole lines, never a bar cut at a fixed width
        bar = PlainProgress(f"tuning {label}", budget)  # on stderr: stdout keeps only the result

        def on_progress(p) -> None:
            bar.update(p.evaluation, f"best {p.best_margin:.2f}{units}")

    with bar:
        result = tune(src, budget=budget, seed=seed, time_budget_s=time_budget, target_margin=target_margin,
                      patience=patience, start=start_pt, warm=warm_data, callback=on_progress,
                      optimizer=optimizer, optimizer_options=opt_options, remeasure_top_k=remeasure)

    out = result.to_dict(lazy_history=as_json)  # --json writes the history as it goes (a grid run: every code)
    out["search"] = search.to_dict() if search is not None else {"mode": "gp" if optimizer == "gp" else optimizer,
                                                                 "reason": f"--optimizer {optimizer}"}
    if opt_options:
        out["optimizer_options"] = opt_options
    if save_profile:
        out["profile"] = _save_profile(save_profile, channel, result)
    if plot:
        _plot(plot, src, result, channel)
        out["plot"] = plot
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json(out)
        return
    if result.stop_reason == "interrupted":
        console.print("[yellow]interrupted: keeping the best point so far[/]")
    b, t = result.baseline, result.tuned
    console.print(f"channel      {channel}   objective {result.objective}"
                  + (f"   corners {corners}" if corners else ""))
    console.print(f"baseline     {b.margin:8.2f}{units}   {_codes(b.codes)}")
    console.print(f"tuned        {t.margin:8.2f}{units}   {_codes(t.codes)}"
                  + ("   (start kept: nothing measured better)" if result.kept_start else ""))
    console.print(f"improvement  {result.improvement:+8.2f}{units}")
    worst = t.metrics.get("worst_corner")
    if worst and "corners" in t.metrics:
        console.print(f"worst corner {worst}: " + ", ".join(
            f"{k} {v['margin']:.2f}" for k, v in t.metrics["corners"].items()))
    console.print(f"search       {out['search']['mode']}"
                  + (f" (GP prior: the engine's fast stage-A eye of every code, {result.screen_s:.1f} s)"
                     if result.screen_s > 0 else ""))
    console.print(f"evaluations  {result.evaluations} of {budget}   stop: {result.stop_reason}   "
                  f"time {result.elapsed_s:.1f} s   seed {result.seed}")
    if save_profile:
        console.print(f"profile      {out['profile']}")
    if plot:
        console.print(f"plot         {plot}")
    if text_eye:
        _print_text_eye(console, src, result)


def _print_text_eye(console, src, result) -> None:
    """The tuned point's statistical eye as ASCII (one UI around the sampling phase)."""
    from eqtune.eye.plot import engine_text_eye

    try:
        eng = src.engine_for(result.tuned.point)
        res = src.evaluate(result.tuned.point)
        rows = engine_text_eye(eng, res)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        console.print(f"eye          not available: {exc}", markup=False)
        return
    console.print(f"tuned eye    EH {res.eye_height_min_mv:.1f} mV, EW {res.eye_width_ui:.3f} UI @ BER "
                  f"{res.ber_target:g} (blank open, | phase)", markup=False, highlight=False)
    for row in rows:
        console.print("  " + row, markup=False, highlight=False, soft_wrap=True)


def _codes(codes: dict) -> str:
    return " ".join(f"{k}={v:g}" for k, v in codes.items())


def _save_profile(path: str, channel: str, result) -> str:
    """A session profile (eqtune.session.profile) when the tuned knobs are module codes; else plain JSON."""
    from pathlib import Path

    from eqtune.errors import ProfileError, TuneError
    from eqtune.jsonutil import dumps

    codes = {k: v for k, v in result.tuned.codes.items()}
    try:
        from eqtune.session.profile import KNOBS, Profile
    except ImportError:
        Profile, KNOBS = None, ()
    if Profile is not None and codes and all(k in KNOBS and isinstance(v, int) for k, v in codes.items()):
        prof = Profile(
            module={"vendor": "simulation", "oui": "", "pn": "simulated", "rev": "", "firmware": "", "sn": None},
            lanes={1: codes}, channel=channel,
            margins={1: {"baseline": round(result.baseline.margin, 4), "tuned": round(result.tuned.margin, 4),
                         "metric": f"{result.objective} ({result.units})" if result.units else result.objective,
                         "decision": "keep" if not result.kept_start else "start"}},
        )
        try:
            return str(prof.save(path))
        except ProfileError:
            raise
    doc = {"schema": "eqtune.tuned-codes", "version": 1, "channel": channel, "objective": result.objective,
           "units": result.units, "codes": codes, "baseline_margin": result.baseline.margin,
           "tuned_margin": result.tuned.margin, "seed": result.seed}
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TuneError(f"--save-profile {path}: cannot write ({exc.strerror})") from None
    return str(p)


def _plot(path: str, src, result, channel: str) -> None:
    """Two panels: convergence (every margin + best so far vs evaluation) and the tuned statistical eye."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from eqtune.eye.plot import draw_density, save_figure

    fig, ax = plt.subplots(1, 2, figsize=(12, 4.8))
    n = np.arange(1, len(result.history) + 1)
    ys = np.array([e.margin for e in result.history])
    ax[0].plot(n, ys, "o", ms=3, color="0.6", label="measured")
    ax[0].plot(n, result.best_so_far(), "-", color="C0", label="best so far")
    ax[0].axhline(result.baseline.margin, color="C3", ls=":", label="baseline")
    ax[0].set(title=f"convergence ({result.optimizer}, seed {result.seed})", xlabel="evaluation",
              ylabel=f"margin ({result.units})" if result.units else "margin")
    ax[0].legend(loc="lower right")
    try:
        eng = src.engine_for(result.tuned.point)
        res = src.evaluate(result.tuned.point)
        draw_density(ax[1], eng.density(res.eq), eng.contour(res.eq), ms=2)
        from eqtune.eye.plot import fmt_eye_height

        ax[1].set(title=f"tuned eye: EH {fmt_eye_height(res.eye_height_min_mv)}, COM {res.com_db:.2f} dB")
    except (AttributeError, KeyError, TypeError) as exc:  # an engine without density/contour
        ax[1].text(0.5, 0.5, f"eye not available: {exc}", ha="center", transform=ax[1].transAxes)
    fig.suptitle(f"{channel}: {result.baseline.margin:.2f} -> {result.tuned.margin:.2f} {result.units}")
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
