"""``eqtune watch``: poll many modules' VDM observables and temperature, store them, flag the lanes
that lose margin (trend, temperature correlation) with evidence and a suggested action.

Heavy modules (numpy, prometheus_client, textual) are imported inside the command only.
"""

from __future__ import annotations

import click

from eqtune.cli._common import FiniteFloat
from eqtune.serdes.knobs import TX_EQ


def _fmt_flag(f: dict) -> str:
    if f["kind"] in ("retune_verified", "retune_not_restored"):
        from eqtune.watch.retune import verdict_line

        return verdict_line(f)
    if f["kind"] == "improved":
        ev, ber = f["evidence"], f["metric"] == "log10_prefec_ber"
        fmt = (lambda x: f"BER {x:.2e}") if ber else (lambda x: f"eSNR {x:.2f} dB")
        return f"BETTER {f['resource']} lane {f['lane']}: {fmt(ev['before'])} -> {fmt(ev['after'])} (the new baseline)"
    from eqtune.watch.actions import evidence_line
    from eqtune.watch.detect import Finding
    line = evidence_line(Finding(f["kind"], f["metric"], f["evidence"]))
    out = f"FLAG {f['resource']} lane {f['lane']} {f['kind']} ({f['metric']}): {line}\n     action: {f.get('action') or '-'}"
    return out


class _WatchCommand(click.Command):
    """``eqtune watch [RESOURCE]...`` polls; ``eqtune watch history|worst|export|ack ...`` read or
    annotate the store (a resource never has those names: resources carry a ``:``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in SUBCOMMANDS:
            ctx.meta["eqtune_watch_sub"] = (args[0], list(args[1:]))
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        sub = ctx.meta.get("eqtune_watch_sub")
        if sub is None:
            return super().invoke(ctx)
        cmd = SUBCOMMANDS[sub[0]]
        with cmd.make_context(f"{ctx.info_name} {sub[0]}", sub[1], parent=ctx) as sub_ctx:
            return cmd.invoke(sub_ctx)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Store commands"):
            formatter.write_dl([(f"watch {name}", (cmd.help or "").splitlines()[0]) for name, cmd in SUBCOMMANDS.items()])


@click.command("watch", cls=_WatchCommand)
@click.argument("resources", nargs=-1, metavar="[RESOURCE]...")
@click.option("--fleet", "fleet_csv", default=None, metavar="CSV",
              help="Fleet CSV with a 'resource' column (optional: server, port, lanes, channel, profile).")
@click.option("--from-push", "push_report", default=None, metavar="JSON",
              help="Watch the modules of a `profile push --json` report.")
@click.option("--lanes", default=None, metavar="1-8", help="Lanes of the RESOURCE arguments (default all).")
@click.option("--channel", default=None, help="Channel of the RESOURCE arguments (for the suggested re-tune).")
@click.option("--interval", "interval_s", type=FiniteFloat(min=0.0, min_open=True, max=86400.0), default=1.0,
              show_default=True, help="Seconds between polls.")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Stop after this many intervals.")
@click.option("--duration", "duration_s", type=FiniteFloat(min=0.0, min_open=True), default=None,
              help="Stop after this many seconds.")
@click.option("--db", "db_path", default=None, metavar="FILE",
              help="SQLite store (default: <sessions>/watch.sqlite).")
@click.option("--sessions", default=None, metavar="DIR", help="Sessions folder (default: $EQTUNE_SESSIONS or ./sessions).")
@click.option("--no-store", is_flag=True, help="Do not write the SQLite store.")
@click.option("--prometheus", default=None, metavar="HOST:PORT", help="Expose the metrics for Prometheus here.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines: one per module per interval, one per flag.")
@click.option("--tui", is_flag=True, help="Terminal view: lanes sorted by risk, BER/temperature sparklines.")
@click.option("--window", "window_s", type=FiniteFloat(min=0.0, min_open=True, max=30 * 86400.0), default=1800.0,
              show_default=True, help="Detector window (s; widened, and said so, to hold 10 polls).")
@click.option("--horizon", "horizon_s", type=FiniteFloat(min=0.0, min_open=True, max=365 * 86400.0), default=3600.0,
              show_default=True, help="Flag a trend that reaches the warning level within this many seconds.")
@click.option("--hot-c", type=FiniteFloat(min=-40.0, max=150.0), default=70.0, show_default=True,
              help="Temperature for projections (C) where a module has no TempHighWarning (page 02h).")
@click.option("--ber-warning", type=FiniteFloat(min=0.0, min_open=True, max=0.5, max_open=True), default=1e-5,
              show_default=True, help="Pre-FEC BER warning level where a module advertises none (VDM).")
@click.option("--ber-alarm", type=FiniteFloat(min=0.0, min_open=True, max=0.5, max_open=True), default=2.4e-4,
              show_default=True, help="Pre-FEC BER alarm level where a module advertises none (VDM).")
@click.option("--esnr-min-db", type=FiniteFloat(min=0.0, max=60.0), default=None,
              help="eSNR warning level (dB) where a module advertises none (default: PAM4 eSNR at --ber-warning).")
@click.option("--retain-days", type=FiniteFloat(min=0.0, min_open=True, max=3650.0), default=1.0, show_default=True,
              help="Keep raw samples this long, then min/max/mean per --block.")
@click.option("--block", "block_s", type=FiniteFloat(min=1.0, max=86400.0), default=900.0, show_default=True,
              help="Downsampling block (s) for samples older than --retain-days.")
@click.option("--demo-fleet", type=click.IntRange(1, 256), default=None, metavar="N",
              help="Watch N emulated modules (3 planted weak lanes, one lane at a wrong fixed Tx input EQ code, a "
                   "10 C ramp at 30x speed) instead of hardware.")
@click.option("--scenario", default=None, metavar="TOML",
              help="Rehearse: watch a scenario's emulated fleet (a file or a shipped name, e.g. planted-faults) "
                   "on a simulated clock (--interval and --duration in simulated seconds; nothing sleeps), then "
                   "report what was flagged and when against the planted faults.")
def watch(resources: tuple[str, ...], fleet_csv: str | None, push_report: str | None, lanes: str | None,
          channel: str | None, interval_s: float, count: int | None, duration_s: float | None, db_path: str | None,
          sessions: str | None, no_store: bool, prometheus: str | None, as_json: bool, tui: bool, window_s: float,
          horizon_s: float, hot_c: float, ber_warning: float, ber_alarm: float, esnr_min_db: float | None,
          retain_days: float, block_s: float, demo_fleet: int | None, scenario: str | None) -> None:
    """Watch module lanes: VDM pre-FEC BER/eSNR/FEC counters and temperature on an interval."""
    import signal
    import sys
    import threading

    from eqtune.errors import InputError
    from eqtune.watch.detect import DetectConfig
    from eqtune.watch.targets import WatchTarget, from_csv, from_push_report, parse_lanes

    if ber_alarm < ber_warning:
        raise InputError(f"--ber-alarm {ber_alarm:g} is below --ber-warning {ber_warning:g}: the alarm is the higher BER")
    if tui and as_json:
        raise InputError("--tui and --json both want the terminal: choose one")
    cfg = DetectConfig(window_s=window_s, horizon_s=horizon_s, hot_c=hot_c, ber_warning=ber_warning,
                       ber_alarm=ber_alarm, esnr_warning_db=esnr_min_db)
    if scenario is not None:
        if resources or fleet_csv or push_report or demo_fleet:
            raise InputError("--scenario is a rehearsal of its own emulated fleet: give no resources, --fleet, "
                             "--from-push or --demo-fleet with it")
        if tui or prometheus:
            raise InputError("--scenario runs on a simulated clock: --tui and --prometheus need real time; "
                             "serve the scenario with `eqtune emulate --scenario` and watch its --fleet-out CSV")
        _rehearse(scenario, interval_s, count, duration_s, cfg, as_json,
                  None if no_store else (db_path, sessions))
        return
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
        click.echo(_demo_knock_off(fleet, demo_fleet), err=True)
        targets += [WatchTarget(r, None, spec.channel, labels={"demo": "1"}) for r in fleet.resources]
    seen: set[str] = set()
    targets = [t for t in targets if not (t.resource in seen or seen.add(t.resource))]
    if not targets:
        raise InputError("nothing to watch: give module resources, --fleet CSV, --from-push REPORT or --demo-fleet N")
    for note in cfg.for_interval(interval_s)[1]:
        click.echo(f"eqtune: note: {note}", err=True)

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
                          count=count, duration_s=duration_s, consent_flag=_tune_consent_flag(), sessions_dir=sessions)
            return
        from eqtune.watch.poller import Watcher

        on_interval = _json_lines if as_json else _text_lines(len(targets), store, exporter)
        progress = None if as_json or not sys.stdout.isatty() or len(targets) < 8 else _FirstScanProgress(len(targets))
        watcher = Watcher(targets, interval_s=interval_s, store=store, exporter=exporter, cfg=cfg,
                          on_interval=on_interval, on_module=progress, retain_days=retain_days, block_s=block_s,
                          consent_flag=_tune_consent_flag(), sessions_dir=sessions)
        try:
            watcher.run(count=count, duration_s=duration_s, stop=stop)
        except KeyboardInterrupt:
            stop.set()
        finally:
            if progress is not None:
                progress.close()
        if not as_json:
            _summary(watcher)
        if watcher.interval > 0 and watcher.answered == 0:
            from eqtune.errors import EqtuneError

            raise EqtuneError(f"nothing watched: no module answered in {watcher.interval} poll(s) of "
                              f"{len(targets)} module(s); check the resources (`eqtune module show RESOURCE`)")
    finally:
        if exporter is not None:
            exporter.stop()
        if store is not None:
            store.close()
        if fleet is not None:
            fleet.stop()


def _demo_knock_off(fleet, modules: int) -> str:
    """The demo fleet's re-tunable fault: lane 4 of the second module (the first with one module) held at a
    fixed Tx input EQ code past the module's BER alarm level, written through the driver as a wrong
    optics_si_settings entry would be. The re-tune the watch prints for it restores the lane."""
    from eqtune.drivers.cmis import open_module

    m, lane = min(1, modules - 1), 4
    link = fleet.links[m]
    code = max(c for c in range(11) if 2.4e-4 < link.ber(lane, "module_rx", {TX_EQ: c}) < 1e-2)
    with open_module(fleet.resources[m]) as mod:
        mod.apply_eq({lane: {TX_EQ: code}})
    return (f"demo: lane {lane} of {fleet.resources[m]} holds a wrong fixed Tx input EQ code (tx_eq={code}); "
            "run the re-tune the watch prints for it (another terminal) and the watch verifies the lane")


def _rehearse(scenario: str, interval_s: float, count: int | None, duration_s: float | None, cfg, as_json: bool,
              store_at: tuple[str | None, str | None] | None) -> None:
    """``watch --scenario``: the watch over a scenario's emulated fleet on a simulated clock."""
    import sys

    from eqtune.emulate.scenario import EPOCH_S, load_scenario
    from eqtune.errors import EqtuneError
    from eqtune.jsonutil import dumps
    from eqtune.watch.rehearse import rehearse

    sc = load_scenario(scenario)
    for note in cfg.for_interval(interval_s)[1]:
        click.echo(f"eqtune: note: {note}", err=True)
    store = None
    if store_at is not None:
        from eqtune.watch.store import WatchStore, default_path

        store = WatchStore(store_at[0] or default_path(store_at[1]))
        store.start_run(sys.argv)
    if count is None and duration_s is None:
        duration_s = 4 * 3600.0
    if not as_json:
        click.echo(f"rehearsal {sc.name}: {sc.modules} emulated modules x {sc.lanes} lanes, {len(sc.faults)} planted "
                   f"fault(s), polls every {interval_s:g} s on a simulated clock"
                   + (f"; store {store.path}" if store is not None else ""))

    def show(rep) -> None:
        t = rep.ts - EPOCH_S
        stamp = f"t={t:7.0f} s ({int(t // 3600):02d}:{int(t % 3600 // 60):02d})"
        if as_json:
            for f in rep.new_flags:
                click.echo(dumps({"type": "flag", "interval": rep.interval, "t_s": t, **f}))
            for c in rep.cleared:
                click.echo(dumps({"type": "cleared", "interval": rep.interval, "t_s": t, **c}))
            return
        for f in rep.new_flags:
            click.echo(f"{stamp} " + _fmt_flag(f))
        for c in rep.cleared:
            click.echo(f"{stamp} CLEAR {c['resource']} lane {c['lane']} {c['kind']}: the evidence no longer holds")

    try:
        report = rehearse(sc, interval_s=interval_s, polls=count, duration_s=duration_s, cfg=cfg, store=store,
                          on_interval=show)
    except EqtuneError:
        raise
    finally:
        if store is not None:
            store.close()
    if as_json:
        click.echo(dumps({"type": "rehearsal", **report.to_dict()}))
    else:
        for line in report.lines():
            click.echo(line)


def _tune_consent_flag() -> str | None:
    """``eqtune tune``'s traffic-down consent option, when it has one (printed in re-tune commands)."""
    from eqtune.cli.tune_cmd import tune

    return "--allow-traffic-down" if any("--allow-traffic-down" in p.opts for p in tune.params) else None


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
    for c in rep.cleared:
        click.echo(dumps({"type": "cleared", "interval": rep.interval, **c}))
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
        for c in rep.cleared:
            click.echo(f"CLEAR {c['resource']} lane {c['lane']} {c['kind']}: the evidence no longer holds")

    return show


def _summary(watcher) -> None:
    from eqtune.watch.retune import verdict_line

    for row in watcher.verified:
        click.echo(verdict_line(row))
    lanes = sorted({(r, ln) for r, ln, _ in watcher.raised})
    if lanes:
        click.echo(f"{len(lanes)} lane(s) flagged during the watch: " + ", ".join(f"{r} lane {ln}" for r, ln in lanes))
    else:
        click.echo("no lane flagged during the watch")


# ------------------------------------------------------------------------------ store commands
def _db_option(f):
    f = click.option("--db", "db_path", default=None, metavar="FILE", help="SQLite store (default: <sessions>/watch.sqlite).")(f)
    return click.option("--sessions", default=None, metavar="DIR", help="Sessions folder.")(f)


def _open_ro(db_path: str | None, sessions: str | None):
    from eqtune.watch.store import connect_readonly, default_path

    return connect_readonly(db_path or default_path(sessions))


@click.command("worst")
@click.option("-n", "count", type=click.IntRange(1, 100000), default=10, show_default=True, help="How many lanes.")
@click.option("--observable", default="prefec_ber", show_default=True,
              help="Observable to rank by (prefec_ber: highest first; esnr_db / ltp_db: lowest first).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@_db_option
def worst_cmd(count: int, observable: str, as_json: bool, db_path: str | None, sessions: str | None) -> None:
    """The fleet's worst lanes by their newest value."""
    from eqtune.cli._common import echo_json
    from eqtune.watch.store import worst_lanes

    db = _open_ro(db_path, sessions)
    rows = worst_lanes(db, observable, count, ascending=observable.startswith(("esnr", "ltp")))
    if as_json:
        echo_json({"observable": observable, "lanes": [{"resource": r, "lane": ln, "value": v, "ts": t}
                                                       for r, ln, v, t in rows]})
        return
    for r, ln, v, _t in rows:
        click.echo(f"{r} lane {ln}: {observable} {v:.3g}")
    if not rows:
        click.echo(f"no {observable} samples in the store")


@click.command("history")
@click.argument("resource")
@click.option("--lane", type=click.IntRange(1, 16), required=True, help="Lane.")
@click.option("--observable", default="prefec_ber", show_default=True)
@click.option("--since", type=FiniteFloat(), default=0.0, help="Unix time (s) to start from.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@_db_option
def history_cmd(resource: str, lane: int, observable: str, since: float, as_json: bool, db_path: str | None,
                sessions: str | None) -> None:
    """One lane's stored series: downsampled blocks (min/max/mean), then raw samples; then its findings and
    re-tune verdicts (before/after, tuning session)."""
    import json

    from eqtune.cli._common import echo_json
    from eqtune.watch.store import history

    db = _open_ro(db_path, sessions)
    rows = history(db, resource, lane, observable, since)
    events = [{"ts": ts, "kind": kind, "evidence": json.loads(ev), "action": action} for ts, kind, ev, action in
              db.execute("SELECT ts, kind, evidence, action FROM flags WHERE resource = ? AND lane = ? AND ts >= ? "
                         "ORDER BY ts", (resource, lane, since))]
    if as_json:
        echo_json({"resource": resource, "lane": lane, "observable": observable, "rows": rows, "events": events})
        return
    for row in rows:
        if "value" in row:
            click.echo(f"{row['ts']:.0f} {row['value']:.4g}")
        else:
            click.echo(f"{row['ts']:.0f} +{row['block_s']:.0f}s n={row['n']} min {row['min']:.4g} "
                       f"mean {row['mean']:.4g} max {row['max']:.4g}")
    if not rows:
        click.echo(f"no {observable} samples for {resource} lane {lane}")
    for e in events:
        click.echo(f"{e['ts']:.0f} " + _fmt_flag({"resource": resource, "lane": lane, "metric": e["evidence"].get(
            "metric", "log10_prefec_ber"), **e}).splitlines()[0])


@click.command("export")
@click.option("--since", type=FiniteFloat(), default=0.0, help="Unix time (s) to start from.")
@_db_option
def export_cmd(since: float, db_path: str | None, sessions: str | None) -> None:
    """Raw samples as CSV on stdout: ts,resource,lane,observable,value."""
    import csv
    import sys

    db = _open_ro(db_path, sessions)
    w = csv.writer(sys.stdout)
    w.writerow(["ts", "resource", "lane", "observable", "value"])
    for row in db.execute("SELECT ts, resource, lane, observable, value FROM samples WHERE ts >= ? ORDER BY ts",
                          (since,)):
        w.writerow(row)


@click.command("ack")
@click.argument("resource")
@click.argument("lane", type=click.IntRange(1, 16))
@click.option("--note", default="", help="Why (kept in the store).")
@_db_option
def ack_cmd(resource: str, lane: int, note: str, db_path: str | None, sessions: str | None) -> None:
    """Accept a lane's new level as normal: a running watch on this store drops the held step /
    thermal finding at its next poll."""
    from eqtune.watch.store import acknowledge, default_path

    acknowledge(db_path or default_path(sessions), resource, lane, note)
    click.echo(f"acknowledged {resource} lane {lane}")


SUBCOMMANDS: dict[str, click.Command] = {"history": history_cmd, "worst": worst_cmd, "export": export_cmd, "ack": ack_cmd}
