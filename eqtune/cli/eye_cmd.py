"""``eqtune eye CHANNEL``: the statistical eye and margins of a channel at a given EQ.

Heavy modules (numpy, the eye engine, matplotlib) are imported inside the command only.
"""

from __future__ import annotations

from typing import Any, cast

import click

from eqtune.cli._common import (
    FiniteFloat,
    channel_file_kwargs,
    channel_file_options,
    module_code_options,
    parse_rx_ffe,
    split_numbers,
)
from eqtune.serdes.knobs import (
    CTLE_GDC,
    CTLE_GDC2,
    DIRECTIONS,
    KNOB_DEFS,
    MODULE_RX_OUT_KNOBS,
    RX_AMP,
    RX_FFE_CODE_MAX,
    RX_FFE_KNOBS,
    RX_FFE_TAP_STEP,
    RX_POST,
    RX_PRE,
    TX_EQ,
    TX_TAP_OFFSETS,
)

_DIRECTIONS = DIRECTIONS


def _tx_ffe_point(text: str) -> dict[str, float]:
    """``C-k,...,C0,...,C+m`` -> tx_cm*/tx_c* knobs; the main tap is the largest one and must equal
    1 - sum |others| (IEEE 802.3 93A.1.6 normalization)."""
    from eqtune.errors import EqRangeError

    taps = split_numbers(text, "--tx-ffe")
    if not taps:
        raise EqRangeError("--tx-ffe: give at least the main tap, e.g. --tx-ffe -0.1,0.8,-0.1")
    main = max(range(len(taps)), key=lambda i: taps[i])
    names = {off: name for name, off in TX_TAP_OFFSETS.items()}
    point: dict[str, float] = {}
    for i, c in enumerate(taps):
        k = i - main
        if k == 0:
            continue
        if k not in names:
            raise EqRangeError(f"--tx-ffe {text}: tap c({k:+d}) is not supported: use up to 3 pre- and 2 post-cursor taps")
        point[names[k]] = c
    others = sum(abs(v) for v in point.values())
    if abs(taps[main] - (1.0 - others)) > 1e-6:
        raise EqRangeError(f"--tx-ffe {text}: main tap {taps[main]:g} != 1 - sum|others| = {1 - others:g}: "
                           "give normalized taps (sum |c| = 1)")
    return point


def _rx_ffe_override_options(f):
    """``--rx-ffe-pre1 CODE`` ...: the host receiver's Rx FFE overrides (registry names and options)."""
    for name in reversed(RX_FFE_KNOBS):
        d = KNOB_DEFS[name]
        f = click.option(d.cli_option, name, type=int, default=None, metavar="CODE",
                         help=f"With --rx-ffe, direction serdes: hold Rx FFE tap {d.label} at CODE x {RX_FFE_TAP_STEP:g} "
                              f"of the cursor tap (-{RX_FFE_CODE_MAX}..{RX_FFE_CODE_MAX}); the other taps re-adapt "
                              "(MMSE). Default: adapted.")(f)
    return f


@click.command("eye")
@click.argument("channel")
@click.option("--direction", type=click.Choice(_DIRECTIONS), default=None,
              help="Link direction (default: from the EQ options given; host_rx without any).")
@click.option("--profile", "profile", default=None, help="SerDes profile name or TOML (default: the channel's).")
@click.option("--tx-ffe", "tx_ffe", default=None, metavar="C-1,C0,C1", help="Host TX FFE taps, main tap included.")
@click.option("--ctle", default=None, metavar="GDC[,GDC2]", help="Host RX CTLE DC gains (dB); default: adapts.")
@module_code_options(metavar="CODE", prefix="Module ")
@click.option("--ber", "--ber-target", "ber", type=FiniteFloat(), default=1e-6, show_default=True,  # range: engine
              help="Target BER (1e-3..1e-15); --ber-target is the same option, as in `eqtune measure`.")
@click.option("--samples-per-ui", type=click.IntRange(4, 1024), default=32, show_default=True)
@click.option("--sampling", type=click.Choice(("mm", "best")), default=None,
              help="Sampling phase: mm = Mueller-Muller (the COM standard's, 93A.1.6; default of --direction serdes), "
                   "best = the phase with the best eye (receivers that search it; default elsewhere).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--precoding", is_flag=True,
              help="FEC figures with 1/(1+D) mod 4 precoding (802.3cd 135.5.7.2); default off.")
@click.option("--plot", "plot", default=None, metavar="FILE.png", help="Stat eye, bathtubs and pulse response.")
@click.option("--text", "as_text", is_flag=True,
              help="Also draw the statistical eye in the terminal (ASCII; one UI around the sampling phase).")
@click.option("--rx-ffe", "rx_ffe", default=None, metavar="TAPS,PRE",
              help="Also the eye of a DSP receiver: CTLE, then an MMSE-adapted Rx FFE of TAPS taps (PRE before the "
                   "cursor) + 1-tap DFE, e.g. 15,6 (the 802.3dj KR reference's fixed taps); serdes or module_rx.")
@click.option("--host-interface", "host_interface", default=None, metavar="NAME",
              help="FEC figures: the host interface whose codeword interleave the lane carries (200GAUI-1, 400GAUI-2, "
                   "800GAUI-4, 1.6TAUI-8, ...); default 1.6TAUI-8 (4 codewords) at 200G/lane, 100GAUI-1 (none) below.")
@_rx_ffe_override_options
@channel_file_options
def eye(channel: str, direction: str | None, profile: str | None, tx_ffe: str | None, ctle: str | None,
        rx_pre: int | None, rx_post: int | None, rx_amp: int | None, tx_eq: int | None, ber: float,
        samples_per_ui: int, as_json: bool, precoding: bool, plot: str | None, as_text: bool,
        sampling: str | None = None, file_lane: int | None = None, extrapolate: str = "none",
        rx_ffe: str | None = None, host_interface: str | None = None, **overrides: int | None) -> None:
    """Statistical eye of CHANNEL (library name or .s4p) at the given EQ (profile defaults otherwise)."""
    from eqtune.channel import load_channel
    from eqtune.errors import InputError
    from eqtune.eye import EyeEngine, check_ber

    check_ber(ber)
    point: dict[str, float] = {}
    if tx_ffe is not None:
        point.update(_tx_ffe_point(tx_ffe))
    if ctle is not None:
        g = split_numbers(ctle, "--ctle")
        if not 1 <= len(g) <= 2:
            raise InputError(f"--ctle {ctle!r}: give GDC or GDC,GDC2 in dB")
        point[CTLE_GDC] = g[0]
        if len(g) == 2:
            point[CTLE_GDC2] = g[1]
    codes = {RX_PRE: rx_pre, RX_POST: rx_post, RX_AMP: rx_amp, TX_EQ: tx_eq}
    point.update({name: float(val) for name, val in codes.items() if val is not None})
    if direction is None:
        module_rx = any(k.startswith("tx_") for k in point)
        host_rx = any(k in point for k in MODULE_RX_OUT_KNOBS)
        ctle_given = CTLE_GDC in point
        if module_rx and (host_rx or (ctle_given and TX_EQ in point)):
            raise InputError("the EQ options act in two directions: choose one with --direction")
        if module_rx and ctle_given:
            direction = "serdes"
        elif module_rx:
            direction = "module_rx"
        else:
            direction = "host_rx"
    ch = load_channel(channel, **channel_file_kwargs(file_lane, extrapolate))
    eng = EyeEngine(ch, profile, direction=direction, ber=ber, samples_per_ui=samples_per_ui, sampling=sampling)
    ignored = [k for k in point if k not in eng.knob_names]
    if ignored:
        raise InputError(f"{', '.join(ignored)} do(es) not act in direction {direction}: "
                         f"use {', '.join(eng.knob_names)} or another --direction")
    ffe_rx = parse_rx_ffe(rx_ffe, direction) if rx_ffe is not None else None
    held: dict[str, float] = {str(n): float(v) for n, v in overrides.items() if n in RX_FFE_KNOBS and v is not None}
    if held and ffe_rx is None:
        raise InputError(f"{', '.join(KNOB_DEFS[n].cli_option for n in held)} override(s) a tap of the DSP receiver's "
                         "Rx FFE: also give --rx-ffe TAPS,PRE (e.g. --rx-ffe 15,6)")
    res = eng.evaluate(point)
    d = res.to_dict()
    d["channel"] = ch.name
    fe = None
    if ffe_rx is not None:
        from eqtune.eye.ffe_eye import ffe_eye

        fe = ffe_eye(eng, point, rx=ffe_rx, held=held)
        d["rx_ffe"] = fe.to_dict()
    extrapolated = cast("list[dict[str, Any]]", ch.meta.get("extrapolated") or [])
    d["extrapolated"] = cast("Any", extrapolated)
    d["profile"] = eng.profile.name
    from eqtune.eye.fec import (
        fec_from_eye,
        fec_from_ffe_eye,
        fec_margin_decades,
        frame_loss_ratio,
        lane_interleave,
    )

    interleave, iface = lane_interleave(res.baud_gbd, host_interface)
    fec = fec_from_eye(res, precoding=precoding, interleave=interleave)
    d["fec_frame_error_ratio"] = fec.codeword_error_ratio
    fec_d = fec.to_dict()
    if interleave > 1 or host_interface:
        fec_d["host_interface"] = iface
    d["fec"] = fec_d
    fec_fe = None
    fe_fec: dict[str, Any] = {}
    if fe is not None:
        fec_fe = fec_from_ffe_eye(fe, precoding=precoding, interleave=interleave)
        flr = frame_loss_ratio(fec_fe.codeword_error_ratio, interleave)
        fe_fec = {**fec_fe.to_dict(), "host_interface": iface, "frame_loss_ratio": flr,
                  "margin_decades": fec_margin_decades(flr)}
        d["rx_ffe"] = {**fe.to_dict(), "fec": fe_fec}
    if plot:
        _plot(eng, res, plot, ch.name)
        d["plot"] = plot
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json(d)
        return
    eq = ", ".join(f"{k}={v:g}" for k, v in res.eq.items())
    click.echo(f"{ch.name}  {direction}  {res.modulation} {res.baud_gbd:g} GBd  profile {eng.profile.name}")
    click.echo(f"EQ: {eq}")
    for x in extrapolated:
        click.echo(f"EXTRAPOLATED: {x['file']} ends at {x['data_fmax_ghz']:g} GHz (needed {x['needed_ghz']:g} GHz), "
                   f"continued by {x['method']}: the eye above it is not measured")
    click.echo(f"eye height @ BER {ber:g}: " + ", ".join(f"{h:.1f}" for h in res.eye_height_mv)
               + f" mV (min {res.eye_height_min_mv:.1f} mV{', CLOSED' if res.closed else ''})")
    click.echo(f"eye width: {res.eye_width_ui:.3f} UI ({res.eye_width_ps:.2f} ps)   VEC {res.vec_db:.2f} dB   "
               f"COM {res.com_db:.2f} dB @ {res.com_probability:g}")
    how = "Mueller-Muller" if res.sampling == "mm" else "best eye"
    click.echo(f"sampling phase {res.sample_phase_ui:+.3f} UI ({how})   cursor {res.cursor_mv:.1f} mV   "
               f"SER estimate {res.ber_estimate:.2e}")
    click.echo(f"RS(544,514) codeword error ratio {fec.codeword_error_ratio:.2e} (DFE bursts: mean "
               f"{fec.mean_burst_symbols:.2f} symbols; precoding {'on' if precoding else 'off'}"
               + (f"; {interleave} codewords interleaved per lane, {iface}" if interleave > 1 or host_interface else "")
               + ")")
    if fe is not None:
        how = ("MMSE-adapted" if not fe.held else
               "held " + ", ".join(f"{n}={c:g}" for n, c in fe.held.items()) + ", the rest MMSE-adapted")
        click.echo(f"with an Rx FFE ({len(fe.ffe_taps)} taps, {fe.n_pre} pre, {how}) + {len(fe.dfe_taps)}-tap "
                   f"DFE at the same TX/CTLE: eye height " + ", ".join(f"{h:.1f}" for h in fe.eye_height_mv)
                   + f" mV (min {fe.eye_height_min_mv:.1f} mV)   SER estimate {fe.ser_estimate:.2e}")
        click.echo("  FFE taps " + " ".join(f"{w:+.3f}" for w in fe.ffe_taps)
                   + "   DFE " + " ".join(f"{b:.3f}" for b in fe.dfe_taps))
        click.echo("  Rx FFE override codes (held or nearest to the adapted tap, 1/64 of the cursor tap): "
                   + " ".join(f"{n}={c:g}" for n, c in fe.knob_codes().items()))
    if fec_fe is not None:
        click.echo(f"  RS(544,514) with the Rx FFE: codeword error ratio {fec_fe.codeword_error_ratio:.2e}, frame loss "
                   f"ratio {fe_fec['frame_loss_ratio']:.2e} ({interleave} codewords per lane, {iface}): margin "
                   f"{fe_fec['margin_decades']:+.1f} decades to FLR 6.2e-11 (DFE bursts only; MLSE not modelled)")
    if plot:
        click.echo(f"plot: {plot}")
    if as_text:
        from eqtune.eye.plot import engine_text_eye

        click.echo(f"statistical eye, blank = open at BER {ber:g}, '|' = sampling phase "
                   f"({res.sample_phase_ui:+.3f} UI); columns span one UI:")
        for row in engine_text_eye(eng, res):
            click.echo("  " + row)


def _plot(eng, res, path: str, title: str) -> None:
    """One PNG: stat eye with the contour at the target BER, vertical + horizontal bathtubs, pulse response."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from eqtune.eye.plot import draw_density, eye_names, fmt_eye_height, mark_closed, save_figure

    dens = eng.density(res.eq)
    con = eng.contour(res.eq)
    bt = eng.bathtubs(res.eq)
    pr = eng.pulse_response(res.eq)
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    draw_density(ax[0, 0], dens, con, sample_phase_ui=res.sample_phase_ui)
    ax[0, 0].set(title=f"statistical eye (contour @ BER {res.ber_target:g})")
    names = eye_names(len(bt["vertical"]))
    for name, v in zip(names, bt["vertical"]):
        ax[0, 1].semilogx(np.maximum(v["ber"], 1e-20), np.array(bt["vertical_offset_mv"]) + v["center_mv"],
                          label=f"{name} (centre {v['center_mv']:.0f} mV)")
    ax[0, 1].axvline(res.ber_target, color="k", ls=":", label=f"target BER {res.ber_target:g}")
    ax[0, 1].legend(fontsize=7, loc="lower left")
    ax[0, 1].set(title="vertical bathtubs", xlabel="probability", ylabel="threshold (mV)", xlim=(1e-20, 1))
    ax[1, 0].semilogy(bt["phase_ui"], np.maximum(bt["horizontal_ser"], 1e-20))
    ax[1, 0].axhline(res.ber_target, color="k", ls=":", label=f"target BER {res.ber_target:g}")
    ax[1, 0].legend(fontsize=7, loc="lower right")
    ax[1, 0].set(title="horizontal bathtub", xlabel="phase (UI)", ylabel="symbol error probability", ylim=(1e-20, 1))
    t_ui = (pr.t_s - pr.t_s[pr.cursor_index]) / (eng.ui_s)
    ax[1, 1].plot(t_ui, pr.pulse_v * 1e3)
    ax[1, 1].plot(t_ui[pr.cursor_index % pr.samples_per_ui::pr.samples_per_ui],
                  pr.pulse_v[pr.cursor_index % pr.samples_per_ui::pr.samples_per_ui] * 1e3, "o", ms=3)
    ax[1, 1].set(title="equalized pulse response", xlabel="UI from cursor", ylabel="mV", xlim=(-eng.n_pre, 30))
    closed = not res.eye_height_min_mv > 0
    if closed:
        mark_closed(ax[0, 0], f"CLOSED at BER {res.ber_target:g}")
    fig.suptitle(f"{title}: EH {fmt_eye_height(res.eye_height_min_mv)}"
                 + ("" if closed else f", EW {res.eye_width_ui:.3f} UI") + f", COM {res.com_db:.2f} dB")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
