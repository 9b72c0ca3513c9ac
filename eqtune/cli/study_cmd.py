"""``eqtune study SPEC.toml|LINKS.csv``: offline channel studies (thin front end over eqtune.study)."""

from __future__ import annotations

import os
import sys

import click

from eqtune.cli.study_query_cmd import StudyCommand


def _default_out(spec_path: str) -> str:
    from pathlib import Path

    return str(Path.cwd() / "studies" / Path(spec_path).stem)


@click.command(name="study", cls=StudyCommand)
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Results folder (default ./studies/<spec name>): results.csv, summary.json, report.html, profiles/.")
@click.option("--workers", type=int, default=None,
              help="Local worker processes (default: all cores; 1 = serial in this process).")
@click.option("--scheduler", default=None, metavar="tcp://HOST:8786",
              help="Run on an existing dask.distributed cluster instead of local processes.")
@click.option("--resume", is_flag=True, help="Continue an interrupted study in --out (finished rows are kept).")
@click.option("--backend", type=click.Choice(["sim", "synthetic"]), default="sim", show_default=True,
              help="sim: the eye engine; synthetic: an analytic stand-in to try the machinery quickly.")
@click.option("--chunk", type=click.IntRange(min=1), default=None, metavar="N",
              help="Combinations per task on workers/dask (default: sized to ~0.5 s of work each). "
                   "Results are the same whatever N.")
@click.option("--no-report", is_flag=True, help="Skip the HTML report.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON summary on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def study(spec: str, out_dir: str | None, workers: int | None, scheduler: str | None, resume: bool, backend: str,
          chunk: int | None, no_report: bool, as_json: bool, quiet: bool) -> None:
    """Run a study: every channel x SerDes profile, baseline / tuned / robust codes over the corners.

    SPEC is a study TOML (see channels/studies/example.toml) or a fleet CSV of links (server, port,
    lane, host_trace_in, module_pn, ...), which yields one profile per module. Results go row by row
    into OUT/results.sqlite (exported as results.csv at the end); an interrupted study continues with
    --resume. Query a study with: eqtune study query OUT --worst 20 --corner 85C
    """
    from eqtune.errors import EqtuneError
    from eqtune.study.backends import BACKENDS, DETAILS
    from eqtune.study.runner import run_study
    from eqtune.study.spec import load_spec

    spec_obj = load_spec(spec)
    out = out_dir or _default_out(spec)
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    total = len(spec_obj.combinations)
    for msg in spec_obj.row_errors:
        click.echo(f"eqtune: warning: {msg} (row skipped; the other rows are studied)", err=True)

    progress_cb, bar = _progress(total, quiet)
    try:
        with bar:
            result = run_study(spec_obj, out, workers=n_workers, scheduler=scheduler, resume=resume,
                               compute=BACKENDS[backend], detail=DETAILS[backend], progress=progress_cb,
                               report=not no_report, on_interrupt=_stopping, chunk=chunk)
    except KeyboardInterrupt as exc:
        click.echo(f"eqtune: {exc or 'interrupted'}; continue with: eqtune study {spec} --out {out} --resume",
                   err=True)
        sys.exit(130)
    s = result.summary
    problems = [e["error"] for e in s["errors"]] + list(spec_obj.row_errors)
    failure = None
    if problems:
        more = f" (and {len(problems) - 1} more, see summary.json)" if len(problems) > 1 else ""
        failure = EqtuneError(f"{len(problems)} combination(s)/row(s) could not be studied; first: {problems[0]}{more}")
    if as_json:
        from eqtune.cli._common import echo_json_outcome

        echo_json_outcome(s, failure)  # one document whatever the outcome, the failure inside it
        return
    else:
        click.echo(f"study {s['study']}: {s['finished']}/{s['combinations']} combinations "
                   f"({result.computed} computed now, {result.skipped} from earlier runs) on {s['executor']}")
        if "refined" in s:
            click.echo(f"screening: {s['refined']} of the worst rows refined at full fidelity "
                       f"(eqtune study query {result.out_dir} --worst 20)")
        click.echo(f"verdict: {s['pass']} pass, {s['fail']} fail, {len(s['errors'])} errors")
        m = s["margin"]["robust"]
        if m["min"] is not None:
            click.echo(f"robust margin: min {m['min']:.2f}, median {m['median']:.2f}, max {m['max']:.2f}")
        for w in s["worst"]:
            click.echo(f"  worst: {w['channel']} | {w['profile'] or 'default'}: {w['robust_margin']:.2f} "
                       f"({w['verdict']})")
        click.echo(f"results: {result.out_dir / 'results.csv'}")
        if result.report:
            click.echo(f"report:  {result.report}")
        if result.profiles:
            click.echo(f"profiles: {len(result.profiles)} in {result.out_dir / 'profiles'}")
        for note in s.get("profiles", {}).get("skipped", []):
            click.echo(f"  profile skipped: {note}", err=True)
    if failure is not None:
        raise failure


def _stopping() -> None:
    click.echo("eqtune: stopping after the running combinations (they are saved); Ctrl-C again to stop now",
               err=True)


def _progress(total: int, quiet: bool):
    """A rich progress bar on stderr and its callback (no-op context when quiet)."""
    import contextlib

    if quiet:
        return None, contextlib.nullcontext()
    from eqtune.cli._progress import PlainProgress, stderr_is_terminal
    from eqtune.study.progress import StudyEta

    # the ETA counts this run's rows only (a resumed study starts at the rows stored earlier), the
    # same for local processes and a dask cluster: rows are counted where they are stored
    # a screening study's refinement pass reports its own count (total_ changes): a new ETA and label
    eta = StudyEta(total)
    if not stderr_is_terminal():  # a pipe or a log: whole lines, never a bar cut at a fixed width
        plain = PlainProgress("study", total)

        def plain_cb(row, done: int, total_: int) -> None:
            nonlocal eta, plain
            if total_ != eta.total:
                eta, plain = StudyEta(total_), PlainProgress("refine at full fidelity", total_)
            eta.update(done)
            plain.update(done, f"{eta.text()}  {row.get('channel', '')}: {row.get('verdict') or row.get('status')}")

        return plain_cb, plain
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    bar = Progress(TextColumn("study"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.fields[eta]}"), TextColumn("{task.fields[last]}"),
                   console=Console(stderr=True), transient=False)
    task = bar.add_task("study", total=total, last="", eta="eta --")

    def cb(row, done: int, total_: int) -> None:
        nonlocal eta, task
        if total_ != eta.total:
            eta = StudyEta(total_)
            task = bar.add_task("refine", total=total_, last="", eta="eta --")
        eta.update(done)
        last = f"{row.get('channel', '')}: {row.get('verdict') or row.get('status')}"
        bar.update(task, completed=done, last=last[:60], eta=eta.text())

    return cb, bar
