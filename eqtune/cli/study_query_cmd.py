"""``eqtune study query OUT``: the worst links of a study's results store (and ``--csv`` export).

``eqtune study SPEC`` runs a study and ``eqtune study query OUT`` reads one: ``StudyCommand``
sends a first argument ``query`` to the query command, every other first argument is a spec.
"""

from __future__ import annotations

import time
from typing import Any

import click


@click.command(name="query")
@click.argument("out_dir", metavar="OUT", type=click.Path(file_okay=False))
@click.option("--worst", "n", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many combinations, lowest robust-code margin first.")
@click.option("--corner", default=None, metavar="NAME",
              help="Rank by the margin at this corner (e.g. 85C) instead of each link's worst corner.")
@click.option("--verdict", type=click.Choice(["pass", "fail"]), default=None, help="Only links with this verdict.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None,
              help="Also export every row of the store to this CSV file.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as one JSON document.")
def query(out_dir: str, n: int, corner: str | None, verdict: str | None, csv_path: str | None,
          as_json: bool) -> None:
    """The N worst combinations of the study in OUT (its results.sqlite), e.g. ``--worst 20 --corner 85C``."""
    from pathlib import Path

    from eqtune.errors import InputError
    from eqtune.study.store import DATABASE, RESULTS, ResultStore

    store = ResultStore(out_dir)
    if not (Path(out_dir) / DATABASE).exists() and not (Path(out_dir) / RESULTS).exists():
        raise InputError(f"{out_dir}: holds no study results ({DATABASE}); give the --out folder of a study")
    t0 = time.perf_counter()
    if corner is not None:
        known = store.corners()
        if corner not in known:
            raise InputError(f"corner {corner!r} is not in this study; its corners: {', '.join(known) or 'none'}")
    worst = store.worst(n, corner=corner, verdict=verdict)
    elapsed = time.perf_counter() - t0
    refined = len(store.refined_map())
    total = store.count() - refined  # a refined screening row and its full-fidelity row are one combination
    if csv_path:
        store.export_csv(csv_path)
    if as_json:
        from eqtune.cli._common import echo_json

        doc: dict[str, Any] = {"out": str(out_dir), "rows_in_store": total + refined, "combinations": total,
                               "refined": refined, "corner": corner, "verdict": verdict,
                               "query_s": round(elapsed, 4),
                               "worst": [{"id": w.id, "channel": w.channel, "profile": w.profile, "corner": w.corner,
                                          "robust_margin": w.margin, "verdict": w.verdict, "method": w.method}
                                         for w in worst]}
        echo_json(doc)
        return
    at = f"at {corner}" if corner else "at each link's worst corner"
    click.echo(f"{len(worst)} worst of {total} combinations, robust-code margin {at}"
               + (f", verdict {verdict}" if verdict else "") + f" ({elapsed * 1000:.0f} ms)")
    screening = refined or any(w.method == "screen" for w in worst)
    if screening:
        click.echo(f"screening study: {refined} rows refined at full fidelity; 'screen' marks a screened figure")
    for rank, w in enumerate(worst, 1):
        margin = f"{w.margin:8.2f}" if w.margin is not None else "       -"
        how = f"{'screen' if w.method == 'screen' else 'full':<7}" if screening else ""
        click.echo(f"{rank:4d} {margin}  {w.corner:<10} {w.verdict:<5} {how}{w.channel} | {w.profile or 'default'}")
    if csv_path:
        click.echo(f"exported: {csv_path}")


class StudyCommand(click.Command):
    """``eqtune study SPEC ...`` runs a study; ``eqtune study query OUT ...`` queries a results store."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "query":
            ctx.meta["eqtune.study.query"] = list(args[1:])
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        rest = ctx.meta.get("eqtune.study.query")
        if rest is None:
            return super().invoke(ctx)
        with query.make_context("eqtune study query", rest) as sub:
            return query.invoke(sub)
