"""``eqtune channel list`` and ``eqtune channel show``: the channel library from the command line.

numpy / scikit-rf / matplotlib are imported inside the commands so ``eqtune --help`` stays fast.
"""

from __future__ import annotations

import warnings

import click

from eqtune.cli._common import FiniteFloat, channel_file_kwargs, channel_file_options, echo_json


def _load(name: str, **kw):
    from eqtune.channel.library import load_channel

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ch = load_channel(name, **kw)
    for w in caught:
        if issubclass(w.category, UserWarning):
            click.echo(f"eqtune: warning: {w.message}", err=True)
    return ch


@click.group(name="channel")
def channel() -> None:
    """Channel library: list, show."""


@channel.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array instead of a table.")
def list_cmd(as_json: bool) -> None:
    """Library channels with baud rate, modulation and insertion loss at Nyquist."""
    from eqtune.channel.library import list_channels

    rows = []
    for name in list_channels():
        ch = _load(name)
        rows.append({"name": name, "baud_gbd": ch.baud_gbd, "modulation": ch.modulation,
                     "il_nyquist_db": round(ch.insertion_loss_db(ch.nyquist_hz), 2),
                     "serdes_profile": ch.serdes_profile, "aggressors": len(ch.aggressors),
                     "description": ch.meta.get("description", "")})
    if as_json:
        echo_json(rows)
        return
    click.echo(f"{'name':<16} {'baud GBd':>9} {'mod':>5} {'IL@Nyq dB':>10} {'xt':>3}  profile")
    for r in rows:
        click.echo(f"{r['name']:<16} {r['baud_gbd']:>9.3f} {r['modulation']:>5} {r['il_nyquist_db']:>10.2f} "
                   f"{r['aggressors']:>3}  {r['serdes_profile']}")


@channel.command("show")
@click.argument("channel_name", metavar="CHANNEL")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False), help="Write IL/RL and pulse response PNG.")
@click.option("--temperature", type=FiniteFloat(min=-100.0, max=300.0),
              help="Trace temperature in C (parametric segments).")
@click.option("--port-order", default="auto", show_default=True, metavar="auto|1-2/3-4|1-3/2-4|a-b/c-d",
              help="4-port Touchstone port order (legs 1->2,3->4; 1->3,2->4; or any a->b = TX+ -> RX+, c->d).")
@click.option("--no-aggressors", is_flag=True, help="Ignore crosstalk aggressors.")
@click.option("--role", type=click.Choice(["thru", "fext", "next"]), default="thru", show_default=True,
              help="What a bare .s4p is: a thru, or a FEXT/NEXT aggressor file (its pairs are detected as an "
                   "aggressor's, and its coupling is reported).")
@channel_file_options
def show_cmd(channel_name: str, as_json: bool, plot_file: str | None, temperature: float | None,
             port_order: str, no_aggressors: bool, file_lane: int | None, extrapolate: str,
             role: str = "thru") -> None:
    """IL at Nyquist, RL, ILD, ICN, port order and delay of CHANNEL (library name, .toml, .sNp or .ts)."""
    from eqtune.channel.metrics import summary

    if role != "thru":
        _show_aggressor(channel_name, role.upper(), None if port_order == "auto" else port_order, as_json)
        return
    ch = _load(channel_name, temperature_c=temperature, aggressors=not no_aggressors,
               port_order=None if port_order == "auto" else port_order,
               **channel_file_kwargs(file_lane, extrapolate))
    fig = summary(ch)
    fig["extrapolated"] = list(ch.meta.get("extrapolated") or [])
    if plot_file:
        _plot(ch, plot_file)
        fig["plot"] = plot_file
    if as_json:
        echo_json(fig)
        return
    def fmt(v, unit=""):
        return "n/a" if v is None else f"{v:.3f}{unit}"

    click.echo(f"channel       {fig['name']}  ({fig['source']})")
    if ch.meta.get("description"):
        click.echo(f"description   {ch.meta['description']}")
    click.echo(f"signalling    {fig['baud_gbd']:.3f} GBd {fig['modulation']}, profile {fig['serdes_profile']}")
    click.echo(f"IL @ Nyquist  {fmt(fig['il_nyquist_db'], ' dB')}  ({fig['nyquist_ghz']:.4g} GHz)")
    click.echo(f"RL @ Nyquist  {fmt(fig['rl_nyquist_db'], ' dB')} (port 1), {fmt(fig['rl2_nyquist_db'], ' dB')} (port 2)")
    click.echo(f"ILD rms       {fmt(fig['ild_rms_db'], ' dB')}")
    if "icn_mv" in fig:
        click.echo(f"ICN           {fmt(fig['icn_mv'], ' mV')} ({len(fig['aggressors'])} aggressors)")
    order = fig["port_order"] or "n/a (2-port / parametric)"
    how = "detected" if fig["port_order_detected"] else (
        ("given" if port_order != "auto" or channel_name.lower().endswith(".toml") else "assumed")
        if fig["port_order"] else "")
    click.echo(f"port order    {order} {how}".rstrip())
    click.echo(f"delay         {fmt(fig['delay_ns'], ' ns')}")
    if ch.temperature_c is not None:
        click.echo(f"temperature   {ch.temperature_c:g} C")
    for seg in ch.meta.get("segments", []):
        click.echo(f"  segment     {seg}")
    for x in fig["extrapolated"]:
        click.echo(f"  EXTRAPOLATED {x['file']}: data end at {x['data_fmax_ghz']:g} GHz, the eye needs "
                   f"{x['needed_ghz']:g} GHz; continued by {x['method']} (not measured)")
    if plot_file:
        click.echo(f"plot          {plot_file}")


def _plot(ch, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from eqtune.channel.metrics import pulse_response
    from eqtune.errors import InputError

    f_ghz = ch.freqs_hz / 1e9
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7))
    ax1.plot(f_ghz, 20 * np.log10(np.maximum(np.abs(ch.sdd21), 1e-12)), label="SDD21 (IL)")
    if ch.sdd11 is not None:
        ax1.plot(f_ghz, 20 * np.log10(np.maximum(np.abs(ch.sdd11), 1e-12)), label="SDD11 (RL)", alpha=0.7)
    for a in ch.aggressors:
        ax1.plot(f_ghz, 20 * np.log10(np.maximum(np.abs(a.sdd21), 1e-12)), lw=0.8, label=f"{a.kind} {a.name}")
    ax1.axvline(ch.nyquist_hz / 1e9, color="k", ls=":", lw=0.8)
    ax1.set_xlim(0, min(f_ghz[-1], 2 * ch.baud_gbd))
    ax1.set_ylim(-80, 5)
    ax1.set_xlabel("frequency (GHz)")
    ax1.set_ylabel("dB")
    ax1.set_title(f"{ch.name}: {ch.baud_gbd:g} GBd {ch.modulation}")
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8)
    pr = pulse_response(ch)
    i = int(np.argmax(pr.v))
    lo, hi = max(0, i - 5 * pr.samples_per_ui), min(pr.v.size, i + 20 * pr.samples_per_ui)
    t_ui = (pr.t_s[lo:hi] - pr.t_s[i]) / pr.ui_s
    ax2.plot(t_ui, pr.v[lo:hi])
    ax2.set_xlabel("time from peak (UI)")
    ax2.set_ylabel("pulse response (V per 1 V)")
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the plot ({exc.strerror}); choose a writable path") from None
    finally:
        plt.close(fig)


def _show_aggressor(path: str, kind: str, port_order: str | None, as_json: bool) -> None:
    """``channel show FILE --role fext|next``: the aggressor file's port order as an aggressor is read (its
    two pairs), the evidence, and its coupling at 1 GHz and Nyquist."""
    import numpy as np

    from eqtune.channel.mixedmode import detect_crosstalk_port_order
    from eqtune.channel.touchstone import load_sdd, read_network
    from eqtune.errors import InputError

    if not path.lower().endswith(".s4p"):
        raise InputError(f"--role {kind.lower()} needs a 4-port Touchstone file (.s4p), got {path!r}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = load_sdd(path, port_order=port_order, crosstalk=True)
    for w in caught:
        if issubclass(w.category, UserWarning):
            click.echo(f"eqtune: warning: {w.message}", err=True)
    net = read_network(path)
    _, info = detect_crosstalk_port_order(np.asarray(net.f), np.asarray(net.s))
    f = d.freqs_hz
    x = d.s[:, 1, 0]

    def at(fz: float) -> float:
        return float(20 * np.log10(max(abs(x[int(np.argmin(np.abs(f - fz)))]), 1e-300)))

    fig = {"file": path, "role": kind, "port_order": d.port_order, "port_order_detected": d.port_order_detected,
           "pair_coupling_ratio": float(info["pair_coupling_ratio"]),
           "coupling_db_1ghz": at(1e9), "coupling_db_26g5625": at(26.5625e9),
           "coupling_peak_db": float(20 * np.log10(max(float(np.abs(x).max()), 1e-300)))}
    if as_json:
        echo_json(fig)
        return
    how = "detected" if d.port_order_detected else "given"
    click.echo(f"{kind} aggressor  {path}")
    if info.get("pair_rule_void"):
        why = "no coupling inside either pair: the order in which SDD21 holds the file's coupling"
    else:
        why = f"in-pair coupling {fig['pair_coupling_ratio']:.1f}x the next pairing's"
    click.echo(f"port order    {d.port_order} {how} ({why})")
    click.echo(f"coupling      {fig['coupling_db_1ghz']:.1f} dB @ 1 GHz, {fig['coupling_db_26g5625']:.1f} dB @ "
               f"26.5625 GHz, peak {fig['coupling_peak_db']:.1f} dB")

