"""``eqtune watch``: poll many modules' VDM observables and temperature, store them, flag the lanes
that lose margin (trend, temperature correlation) with evidence and a suggested action.

Heavy modules (numpy, prometheus_client, textual) are imported inside the command only.
"""

from __future__ import annotations

import click


def _fmt_flag(f: dict) -> str:
    ev = f["evidence"]
    where = f"{f['resource']} lane {f['lane']}"
    w = ev.get("window_s", [0, 0])
    win = f"{w[1] - w[0]:.0f} s window, {ev.get('samples')} samples"
    if f["kind"] == "thermal":
        unit = ev.get("sensitivity_units", "")
        hot = ev.get("projected_at_hot")
        hot_s = f"{hot:.1f} dB" if ev.get("metric") == "esnr_db" else f"BER {hot:.1e}"
        what = (f"margin follows temperature: {ev['sensitivity_per_c']:+.3f} {unit}, r(d margin/dt, dT/dt) = "
                f"{ev['corr_with_dT_dt']:+.2f} over {ev['temp_range_c'][0]:.1f}-{ev['temp_range_c'][1]:.1f} C "
                f"({win}); projected {hot_s} at {ev['hot_c']:.0f} C")
    elif f["kind"] in ("esnr_trend", "ber_trend"):
        what = (f"{ev['metric']} trending to the threshold: {ev['slope_per_s'] * 60:+.3g} {ev['slope_units'][:-2]}/min "
                f"(t = {ev['t_stat']:.1f}; {win}); reaches it in {ev['time_to_threshold_s']:.0f} s")
    else:
        what = f"{ev['metric']} past the threshold ({ev['fitted_now']:.3g} vs {ev['threshold']:.3g}; {win})"
    return f"FLAG {where} {f['kind']}: {what}\n     action: {f.get('action') or '-'}"


@click.command("watch")
@click.argument("resources", nargs=-1, metavar="[RESOURCE]...")
@click.option("--fleet", "fleet_csv", default=None, metavar="CSV",
              help="Fleet CSV with a 'resource' column (optional: server, port, lanes, channel, profile).")
@click.option("--from-push", "push_report", default=None, metavar="JSON",
              help="Watch the modules of a `profile push --json` report.")
@click.option("--lanes", default=None, metavar="1-8", help="Lanes of the RESOURCE arguments (default all).")
@click.option("--channel", default=None, help="Channel of the RESOURCE arguments (for the suggested re-tune).")
@click.option("--interval", "interval_s", type=float, default=1.0, show_default=True, help="Seconds between polls.")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Stop after this many intervals.")
@click.option("--duration", "duration_s", type=float, default=None, help="Stop after this many seconds.")
@click.option("--db", "db_path", default=None, metavar="FILE",
              help="SQLite store (default: <sessions>/watch.sqlite).")
@click.option("--sessions", default=None, metavar="DIR", help="Sessions folder (default: $EQTUNE_SESSIONS or ./sessions).")
@click.option("--no-store", is_flag=True, help="Do not write the SQLite store.")
@click.option("--prometheus", default=None, metavar="HOST:PORT", help="Expose the metrics for Prometheus here.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines: one per module per interval, one per flag.")
@click.option("--tui", is_flag=True, help="Terminal view: lanes sorted by risk, BER/temperature sparklines.")
@click.option("--window", "window_s", type=float, default=300.0, show_default=True, help="Detector window (s).")
@click.option("--horizon", "horizon_s", type=float, default=900.0, show_default=True,
              help="Flag a trend that reaches the threshold within this many seconds.")
@click.option("--hot-c", type=float, default=70.0, show_default=True, help="Worst-case temperature for projections (C).")
@click.option("--ber-threshold", type=float, default=2.4e-4, show_default=True, help="Pre-FEC BER threshold.")
@click.option("--esnr-min-db", type=float, default=None, help="eSNR threshold (default: PAM4 eSNR at --ber-threshold).")
@click.option("--demo-fleet", type=click.IntRange(1, 256), default=None, metavar="N",
              help="Watch N emulated modules (3 planted weak lanes, a 10 C ramp at 30x speed) instead of hardware.")
def watch(resources: tuple[str, ...], fleet_csv: str | None, push_report: str | None, lanes: str | None,
          channel: str | None, interval_s: float, count: int | None, duration_s: float | None, db_path: str | None,
          sessions: str | None, no_store: bool, prometheus: str | None, as_json: bool, tui: bool, window_s: float,
          horizon_s: float, hot_c: float, ber_threshold: float, esnr_min_db: float | None,
          demo_fleet: int | None) -> None:
    """Watch module lanes: VDM pre-FEC BER/eSNR/FEC counters and temperature on an interval."""
    import signal
    import sys
    import threading

    from eqtune.errors import InputError
    from eqtune.watch.detect import DetectConfig
    from eqtune.watch.targets import WatchTarget, from_csv, from_push_report, parse_lanes

    if interval_s <= 0 or window_s <= 0 or horizon_s <= 0:
        raise InputError("--interval, --window and --horizon must be positive seconds")
    if not 0 < ber_threshold < 0.5:
        raise InputError(f"--ber-threshold {ber_threshold}: give a pre-FEC BER in (0, 0.5), e.g. 2.4e-4")
    if tui and as_json:
        raise InputError("--tui and --json both want the terminal: choose one")
    lane_list = parse_lanes(lanes or "", "--lanes")
    targets = [WatchTarget(r, lane_list, channel) for r in resources]
    if fleet_csv:
        targets += from_csv(fleet_csv)
    if push_report:
        targets += from_push_report(push_report)
    fleet = None
    if demo_fleet:
        from eqtune.watch.fleet import FleetSpec, start_fleet

        spec = FleetSpec(modules=demo_fleet, time_scale=30.0,
                         planted=[(m, ln) for m, ln in [(0, 2), (demo_fleet // 2, 5), (demo_fleet - 1, 8)]],
                         stable_marginal=[])
        fleet = start_fleet(spec)
        targets += [WatchTarget(r, None, spec.channel, labels={"demo": "1"}) for r in fleet.resources]
    seen: set[str] = set()
    targets = [t for t in targets if not (t.resource in seen or seen.add(t.resource))]
    if not targets:
        raise InputError("nothing to watch: give module resources, --fleet CSV, --from-push REPORT or --demo-fleet N")
    cfg = DetectConfig(window_s=window_s, horizon_s=horizon_s, hot_c=hot_c, ber_threshold=ber_threshold,
                       esnr_threshold_db=esnr_min_db)

    store = exporter = None
    try:
        if not no_store:
            from eqtune.watch.store import WatchStore, default_path

            store = WatchStore(db_path or default_path(sessions))
            store.start_run(sys.argv)
        if prometheus:
            from eqtune.watch.prom import PrometheusExporter, parse_hostport

            exporter = PrometheusExporter(*parse_hostport(prometheus)).start()
        stop = threading.Event()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
        if tui:
            from eqtune.tui.watch_screen import run_watch_tui

            run_watch_tui(targets, interval_s=interval_s, store=store, exporter=exporter, cfg=cfg,
                          count=count, duration_s=duration_s)
            return
        from eqtune.watch.poller import Watcher

        on_interval = _json_lines if as_json else _text_lines(len(targets), store, exporter)
        progress = None if as_json or not sys.stdout.isatty() or len(targets) < 8 else _FirstScanProgress(len(targets))
        watcher = Watcher(targets, interval_s=interval_s, store=store, exporter=exporter, cfg=cfg,
                          on_interval=on_interval, on_module=progress)
        try:
            watcher.run(count=count, duration_s=duration_s, stop=stop)
        except KeyboardInterrupt:
            stop.set()
        finally:
            if progress is not None:
                progress.close()
        if not as_json:
            _summary(watcher)
    finally:
        if exporter is not None:
            exporter.stop()
        if store is not None:
            store.close()
        if fleet is not None:
            fleet.stop()


class _FirstScanProgress:
    """A rich progress bar over the first scan (opening every module is the long one)."""

    def __init__(self, total: int) -> None:
        from rich.progress import Progress

        self.progress = Progress(transient=True)
        self.task = self.progress.add_task("first scan: opening modules", total=total)
        self.progress.start()
        self.done = 0
        self.total = total

    def __call__(self, sample) -> None:
        if self.progress is None:
            return
        self.done += 1
        self.progress.advance(self.task)
        if self.done >= self.total:
            self.close()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _json_lines(rep) -> None:
    from eqtune.jsonutil import dumps

    for s in rep.samples:
        click.echo(dumps({"type": "sample", "interval": rep.interval, **s.to_dict()}))
    for f in rep.new_flags:
        click.echo(dumps({"type": "flag", "interval": rep.interval, **f}))
    click.echo(dumps({"type": "interval", "interval": rep.interval, "ts": rep.ts, "committed": True,
                           "modules": len(rep.samples), "failed": sum(not s.ok for s in rep.samples),
                           "flagged_lanes": len({(r, ln) for r, ln, _ in rep.active}),
                           "duration_s": rep.duration_s}))


def _text_lines(n_modules: int, store, exporter):
    where = []
    if store is not None:
        where.append(f"store {store.path}")
    if exporter is not None:
        where.append(f"Prometheus http://{exporter.host}:{exporter.port}/metrics")
    click.echo(f"watching {n_modules} module(s)" + (f"; {', '.join(where)}" if where else "") + " (Ctrl-C stops)")

    def show(rep) -> None:
        failed = [s for s in rep.samples if not s.ok]
        flagged = len({(r, ln) for r, ln, _ in rep.active})
        click.echo(f"interval {rep.interval}: {len(rep.samples) - len(failed)}/{len(rep.samples)} modules answered, "
                   f"{flagged} lane(s) flagged, poll {rep.duration_s:.2f} s")
        for s in failed:
            click.echo(f"  {s.resource}: {s.error}")
        for f in rep.new_flags:
            click.echo(_fmt_flag(f))

    return show


def _summary(watcher) -> None:
    lanes = sorted({(r, ln) for r, ln, _ in watcher.raised})
    if lanes:
        click.echo(f"{len(lanes)} lane(s) flagged during the watch: " + ", ".join(f"{r} lane {ln}" for r, ln in lanes))
    else:
        click.echo("no lane flagged during the watch")
