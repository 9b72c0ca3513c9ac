"""``eqtune emulate``: an emulated module plus emulated lab instruments sharing one link.

Starts, on 127.0.0.1:

* the CMIS module emulator behind the TCP register bridge (``NetBridgeServer``), reached as
  ``net:127.0.0.1:PORT`` by ``eqtune module ...``, ``eqtune measure --module ...`` and the tuner;
* one SCPI emulator per instrument definition (default: the Keysight M8040A BERT and the FlexDCA
  scope), reached by pyvisa-py as ``TCPIP::127.0.0.1::PORT::SOCKET``.

All share one ``EmulatedLink``: codes written to the module change the BER the BERT counts and
the eye the scope measures. Runs until Ctrl-C (or ``--duration``).

Security: the register bridge and the SCPI emulators have no authentication: anyone who can connect
can write any register. They are for emulators on the bench; ``--host`` other than a loopback address
prints a warning.
"""

from __future__ import annotations

import time

import click

DEFAULT_INSTRUMENTS = ("keysight-m8040a", "keysight-flexdca")


def _stop_on_sigterm() -> None:
    """SIGTERM (systemd, docker stop, kill) stops the emulators cleanly, like Ctrl-C."""
    import signal

    def _raise(_sig, _frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread (e.g. tests): keep the default
        pass


@click.command(name="emulate")
@click.argument("channel", required=False, default="c2m-10in")
@click.option("--port", type=click.IntRange(0, 65535), default=5025, show_default=True,
              help="First SCPI port; further instruments use the next ports (0: pick free ports).")
@click.option("--module-port", type=click.IntRange(0, 65535), default=7700, show_default=True,
              help="Port of the module register bridge (0: pick a free port).")
@click.option("--instrument", "instruments", multiple=True, metavar="NAME",
              help="Instrument definition to emulate (repeatable; default: keysight-m8040a and keysight-flexdca).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Keep the loopback default: the bridge takes unauthenticated register "
                   "writes (a warning is printed for any other address).")
@click.option("--seed", type=int, default=None, help="Random seed (reproducible noise).")
@click.option("--no-module", is_flag=True, help="Start only the instrument emulators.")
@click.option("--duration", type=click.FloatRange(min=0.0), default=None, hidden=True,
              help="Stop after this many seconds (tests, scripted demos).")
@click.option("--scenario", default=None, metavar="TOML",
              help="Serve a scenario's fleet instead (a file or a shipped name, e.g. planted-faults): its N modules, "
                   "each on its own port from --module-port, in this one process, with their scripted "
                   "temperatures and faults (docs/watch-rehearsal.md). No instruments.")
@click.option("--speed", type=click.FloatRange(min=0.0, min_open=True, max=3600.0), default=1.0, show_default=True,
              help="With --scenario: scenario seconds per real second (60: an hour of the script in a minute).")
@click.option("--fleet-out", default=None, metavar="CSV",
              help="With --scenario: write the fleet CSV that `eqtune watch --fleet` reads (resource, server, port, serial).")
def emulate(channel: str, port: int, module_port: int, instruments: tuple[str, ...], host: str, seed: int | None,
            no_module: bool, duration: float | None, scenario: str | None, speed: float, fleet_out: str | None) -> None:
    """Start the module and instrument emulators for CHANNEL and print the resource strings."""
    from eqtune.drivers.definition import find_definition
    from eqtune.emulate.bridge import NON_LOOPBACK_WARNING, is_loopback
    from eqtune.emulate.link import EmulatedLink
    from eqtune.emulate.scpi import ScpiEmulator

    if not is_loopback(host):
        click.echo("eqtune: warning: " + NON_LOOPBACK_WARNING.format(host=f"--host {host}"), err=True)
    if scenario is not None:
        if instruments or no_module:
            from eqtune.errors import InputError

            raise InputError("--scenario serves modules only: drop --instrument and --no-module")
        _serve_scenario(scenario, host, module_port, speed, fleet_out, duration)
        return
    if fleet_out is not None:
        from eqtune.errors import InputError

        raise InputError("--fleet-out writes a scenario's fleet CSV: give --scenario TOML with it")
    names = list(instruments) or list(DEFAULT_INSTRUMENTS)
    defs = [find_definition(n) for n in names]  # unknown names fail before anything starts
    link = EmulatedLink(channel, seed=seed)
    started: list = []
    bridge = None
    try:
        if not no_module:
            from eqtune.emulate.module import EmulatedModule

            module = EmulatedModule(link, channel=channel, seed=seed, name=f"emu:{channel}")
            import warnings

            from eqtune.emulate.bridge import NetBridgeServer

            with warnings.catch_warnings():  # already said once above
                warnings.simplefilter("ignore", UserWarning)
                bridge = NetBridgeServer(module, host, module_port).start()
            click.echo(f"module   {channel:<22} {bridge.resource}")
        for i, d in enumerate(defs):
            emu = ScpiEmulator(d, link, host=host, port=(port + i) if port else 0, seed=seed).start()
            started.append(emu)
            click.echo(f"{d.kind:<8} {d.name:<22} {emu.resource}")
        click.echo(f"link quality: {link.quality_source}")
        click.echo("emulators running; press Ctrl-C to stop", err=True)
        _wait(duration)
    finally:
        for emu in started:
            emu.stop()
        if bridge is not None:
            bridge.stop()
    click.echo("emulators stopped", err=True)


def _wait(duration: float | None) -> None:
    """Until Ctrl-C, SIGTERM or ``duration`` seconds."""
    t_end = None if duration is None else time.monotonic() + duration
    _stop_on_sigterm()
    try:
        while t_end is None or time.monotonic() < t_end:
            time.sleep(0.05 if t_end is not None else 0.5)
    except KeyboardInterrupt:
        pass


def _serve_scenario(path: str, host: str, first_port: int, speed: float, fleet_out: str | None,
                    duration: float | None) -> None:
    """``emulate --scenario``: every module of the scenario on its own register bridge, one process."""
    import warnings
    from pathlib import Path

    from eqtune.emulate.scenario import ScenarioClock, build_fleet, load_scenario
    from eqtune.errors import InputError

    sc = load_scenario(path)
    if first_port and first_port + sc.modules - 1 > 65535:
        raise InputError(f"--module-port {first_port}: {sc.modules} modules need ports up to "
                         f"{first_port + sc.modules - 1}; give a lower port or 0 (free ports)")
    fleet = build_fleet(sc, ScenarioClock(speed=speed))
    try:
        with warnings.catch_warnings():  # said once above
            warnings.simplefilter("ignore", UserWarning)
            fleet.serve(host, first_port)
        for res, lab in zip(fleet.resources, fleet.labels, strict=True):
            click.echo(f"module   {sc.name}/{lab['module']:<4} {lab['server']}/{lab['port']:<6} {res}")
        for f in sc.faults:
            click.echo(f"fault    module {f.module} lane {f.lane}: {f.describe()}")
        if fleet_out:
            Path(fleet_out).write_text(fleet.fleet_csv(), encoding="utf-8")
            click.echo(f"fleet CSV {fleet_out}: eqtune watch --fleet {fleet_out}")
        click.echo(f"scenario {sc.name}: {sc.modules} modules, scenario time at {speed:g}x real time; "
                   "press Ctrl-C to stop", err=True)
        _wait(duration)
    finally:
        fleet.stop()
    click.echo("emulators stopped", err=True)
