"""``eqtune com CHANNEL --profile P``: COM as the standard computes it (``eqtune.eye.com``).

CHANNEL is a channel TOML / library name, or a thru Touchstone file with ``--fext`` / ``--next`` files or
globs. Heavy modules are imported inside the command only.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import click

from eqtune.cli._common import channel_file_kwargs, channel_file_options


def _expand(patterns: tuple[str, ...], option: str) -> list[Path]:
    """Files named by ``patterns`` (paths or globs), sorted per pattern; a pattern matching nothing is an
    error (a typo must not silently drop an aggressor)."""
    from eqtune.errors import InputError

    out: list[Path] = []
    for pat in patterns:
        hits = sorted(glob.glob(pat)) if any(ch in pat for ch in "*?[") else [pat]
        if not hits or not all(Path(h).is_file() for h in hits):
            raise InputError(f"{option} {pat!r}: no such file; give a Touchstone file or a glob that matches some")
        out.extend(Path(h).resolve() for h in hits)
    return out


def build_channel(channel: str, fext: tuple[str, ...], nxt: tuple[str, ...], port_order: str | None,
                  aggressor_port_order: str | None, *, lane: int | None = None,
                  extrapolate: str | None = None) -> Any:
    """A Channel from a TOML/library name, or from a thru Touchstone plus aggressor files. ``lane``: lane K
    of multi-lane Touchstone files (thru and aggressors alike); ``extrapolate``: "loss-fit" or "hold" for
    data that end below 0.75 x baud (otherwise refused, ``eqtune.channel.band``)."""
    from eqtune.channel import load_channel
    from eqtune.channel.library import channel_from_definition
    from eqtune.errors import InputError

    fx, nx = _expand(fext, "--fext"), _expand(nxt, "--next")
    p = Path(channel)
    if not (fx or nx) and not p.suffix.lower().startswith(".s"):
        return load_channel(channel, port_order=port_order, lane=lane, extrapolate=extrapolate)
    if not p.is_file():
        raise InputError(f"{channel!r}: no such thru file (give a .s4p with --fext/--next, or a channel TOML)")
    seg: dict[str, Any] = {"type": "touchstone", "file": str(p.resolve())}
    if port_order:
        seg["port_order"] = port_order
    if lane is not None:
        seg["lane"] = lane
    aggs = []
    for kind, files in (("FEXT", fx), ("NEXT", nx)):
        for f in files:
            a: dict[str, Any] = {"kind": kind, "file": str(f)}
            if aggressor_port_order:
                a["port_order"] = aggressor_port_order
            if lane is not None:
                a["lane"] = lane
            aggs.append(a)
    doc: dict[str, Any] = {"name": p.stem, "segments": [seg], "aggressors": aggs}
    if extrapolate:
        doc["extrapolate"] = extrapolate
    return channel_from_definition(doc, base_dir=p.parent, name=p.stem)


@click.command("com")
@click.argument("channel")
@click.option("--profile", default=None, help="SerDes profile: ieee-3ck-kr, ieee-3ck-c2c, ieee-3ck-cr, an 802.3dj "
              "(Annex 178A) profile such as ieee-dj-kr, or a TOML (default: the channel's).")
@click.option("--fext", multiple=True, metavar="FILE|GLOB", help="FEXT aggressor Touchstone files (repeatable).")
@click.option("--next", "nxt", multiple=True, metavar="FILE|GLOB", help="NEXT aggressor Touchstone files (repeatable).")
@click.option("--case", "cases", type=click.Choice(("1", "2")), multiple=True,
              help="Package case(s) to evaluate (default: both; COM is the worse).")
@click.option("--port-order", default=None, metavar="1-2/3-4|1-3/2-4",
              help="Port order of the thru (default: detected).")
@click.option("--aggressor-port-order", default=None, metavar="1-2/3-4|1-3/2-4",
              help="Port order of every aggressor file (default: detected; a disagreement with the thru is refused).")
@click.option("--tx-noise", type=click.Choice(("cursor", "spectrum")), default="cursor", show_default=True,
              help="93A-30 TX noise: cursor = MATLAB COM's h(0)^2 10^(-SNR_TX/10); spectrum = sigma_X^2 "
                   "10^(-SNR_TX/10) sum h(n)^2 (a deviation from MATLAB COM).")
@click.option("--no-floating-taps", is_flag=True, help="Drop the profile's floating DFE taps (a deviation).")
@click.option("--samples-per-ui", type=click.IntRange(8, 256), default=32, show_default=True)
@click.option("--adc/--no-adc", default=None, help="802.3dj profiles: ADC quantization noise (default: the profile's).")
@click.option("--mlse/--no-mlse", default=None,
              help="802.3dj profiles: the MLSD reference receiver of 178A.1.10 (default: the profile's).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (progress goes to stderr).")
@click.option("--plot", default=None, metavar="FILE.png", help="Pulse response and noise budget of the worse case.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@channel_file_options
def com(channel: str, profile: str | None, fext: tuple[str, ...], nxt: tuple[str, ...], cases: tuple[str, ...],
        port_order: str | None, aggressor_port_order: str | None, tx_noise: str, no_floating_taps: bool,
        samples_per_ui: int, adc: bool | None, mlse: bool | None, as_json: bool, plot: str | None, quiet: bool,
        file_lane: int | None, extrapolate: str) -> None:
    """COM of CHANNEL by the standard's procedure: the sheet's TX FFE x CTLE grid searched by the figure of
    merit (93A-36), COM (93A-1) at the best EQ, both package cases, the worse reported."""
    from eqtune.eye.com import compute_com
    from eqtune.serdes.dj_profile import is_dj_profile

    ch = build_channel(channel, fext, nxt, port_order, aggressor_port_order,
                       **channel_file_kwargs(file_lane, extrapolate))
    if is_dj_profile(profile or ch.serdes_profile):  # 802.3dj: the Annex 178A procedure (eqtune.eye.com_dj)
        from eqtune.cli.com_dj_cmd import run_dj_com
        from eqtune.errors import InputError

        if plot:
            raise InputError("--plot is not available with an 802.3dj profile yet: drop it")
        run_dj_com(ch, profile or ch.serdes_profile, cases=tuple(int(c) for c in cases) or None, adc=adc,
                   mlse=mlse, samples_per_ui=samples_per_ui, as_json=as_json, quiet=quiet)
        return
    if adc is not None or mlse is not None:
        from eqtune.errors import InputError

        raise InputError(f"--{'adc' if adc is not None else 'mlse'} applies to 802.3dj (Annex 178A) profiles only: "
                         "drop it or use e.g. --profile ieee-dj-kr")
    cb, bar = _progress(quiet)
    with bar:
        rep = compute_com(ch, profile, cases=tuple(int(c) for c in cases) or None, tx_noise=tx_noise,
                          floating_taps=not no_floating_taps, samples_per_ui=samples_per_ui, progress=cb)
    d = rep.to_dict()
    if plot:
        from eqtune.eye.com_plot import plot_com

        plot_com(ch, rep, plot, samples_per_ui=samples_per_ui)
        d["plot"] = plot
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json(d)
        return
    for line in format_report(rep):
        click.echo(line)
    if plot:
        click.echo(f"plot: {plot}")


def format_report(rep: Any) -> list[str]:
    """The report as MATLAB COM users read it (text lines)."""
    from eqtune.eye.points import DERIVED_KEYS
    from eqtune.serdes.knobs import CTLE_KNOBS, TX_TAP_OFFSETS

    ag = rep.aggressors
    lines = [f"{rep.channel}  profile {rep.profile}  ({ag['FEXT']} FEXT, {ag['NEXT']} NEXT)",
             f"IL @ Nyquist {rep.il_db_nyquist:.2f} dB (thru)   ILD rms {rep.ild_rms_db:.3f} dB"
             + (f"   ICN {rep.icn_mv:.3f} mV" if rep.icn_mv is not None else "")]
    for c in rep.cases:
        eq = c.eq
        order = sorted((k for k in TX_TAP_OFFSETS if k in eq), key=lambda k: TX_TAP_OFFSETS[k])
        pre = [k for k in order if TX_TAP_OFFSETS[k] < 0]
        taps = ", ".join(f"{eq[k]:g}" for k in [*pre, *DERIVED_KEYS, *order[len(pre):]] if k in eq)
        ctle = ", ".join(f"{eq[k]:g}" for k in CTLE_KNOBS if k in eq)
        lines += [
            f"package case {c.package_case}: COM {c.com_db:.3f} dB   FOM {c.fom_db:.3f} dB   IL with packages "
            f"{c.il_db_nyquist_with_packages:.2f} dB   ({c.points_searched} points, {c.search_s:.1f} s)",
            f"  EQ: TX FFE [{taps}]  CTLE g_DC, g_DC2 [{ctle}] dB   phase {c.sample_phase_ui:+.3f} UI",
            f"  A_s {c.a_s_mv:.3f} mV   A_ni {c.a_ni_mv:.3f} mV   sigma: ISI {c.sigma_isi_mv:.3f}  jitter "
            f"{c.sigma_jitter_mv:.3f}  crosstalk {c.sigma_xt_mv:.3f}  TX {c.sigma_tx_mv:.3f}  RX {c.sigma_rx_mv:.3f} mV"]
    verdict = "PASS" if rep.passed else "FAIL"
    lines.append(f"COM {rep.com_db:.3f} dB (package case {rep.worst_case}, the worse) at DER_0 {rep.der0:g}: "
                 f"{verdict} (threshold {rep.threshold_db:g} dB)")
    s = rep.settings
    lines.append(f"settings: TX noise {s['tx_noise']}, floating taps {'on' if s['floating_taps'] else 'off'}, "
                 f"{s['sampling']} phase, {s['samples_per_ui']} samples/UI, step {float(s['frequency_step_hz']) / 1e6:g} MHz")
    return lines


def _progress(quiet: bool) -> tuple[Any, Any]:
    """A progress callback (done, total) and its context: a rich bar on a terminal's stderr, whole lines
    on a pipe, nothing when quiet."""
    import contextlib

    if quiet:
        return None, contextlib.nullcontext()
    from eqtune.cli._progress import PlainProgress, stderr_is_terminal

    if not stderr_is_terminal():
        holder: dict[str, PlainProgress] = {}

        def plain_cb(done: int, total: int) -> None:
            if "p" not in holder:
                holder["p"] = PlainProgress("COM grid search", total)
            holder["p"].update(done)

        return plain_cb, contextlib.nullcontext()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("COM grid search"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task("com", total=None)

    def cb(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return cb, bar
