"""One self-contained HTML report of a study (inline CSS, plots as base64 PNG, matplotlib Agg).

Sections: verdict counts, the ranked table (worst robust margin first) with the pass/fail verdict of
every link, margin histograms (baseline / tuned / robust, and the BER-floor eye height), the worst
cases with their eyes and bathtubs (re-evaluated at the robust codes by a ``detail`` function), the
combinations that failed to compute and the input rows that could not be used.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eqtune.serdes.knobs import METRIC_DEFS, metric_label
from eqtune.study.spec import Combination, StudySpec
from eqtune.study.store import parse_float

REPORT = "report.html"

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em}th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}
th{background:#f3f3f3}td.l{text-align:left}tr.fail td{background:#fde8e8}tr.error td{background:#fff4d6}
.pass{color:#176b2c;font-weight:600}.fail{color:#b3261e;font-weight:600}.error{color:#8a5a00;font-weight:600}
.cards span{display:inline-block;margin:0 1.2em .6em 0;padding:.4em .8em;border-radius:6px;background:#f3f3f3}
img{max-width:100%}code{font-size:.9em}.small{color:#666;font-size:.85em}
"""


#: rows of the ranked table at most (a 100,000-row table is a 60 MB page no browser scrolls)
TABLE_MAX = 2000


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")  # a bare Figure renders with Agg
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _fmt(v: Any, nd: int = 2) -> str:
    f = parse_float(v) if isinstance(v, str) else v
    if f is None or (isinstance(f, float) and not math.isfinite(f)):
        return "&ndash;"
    return f"{f:.{nd}f}"


def _esc(s: Any) -> str:
    return html.escape(str(s if s is not None else ""))


def _histograms(rows: Sequence[Mapping[str, str]], units: str) -> str | None:
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure state touched

    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return None
    fig = Figure(figsize=(11, 3.6))
    axes = fig.subplots(1, 2)
    series = [("baseline (defaults, worst corner)", "baseline_margin", "#999999"),
              ("tuned (nominal corner)", "tuned_margin", "#1f77b4"),
              ("robust (worst corner)", "robust_margin", "#d62728")]
    for label, col, color in series:
        vals = [v for v in (parse_float(r.get(col)) for r in ok) if v is not None]
        if vals:
            axes[0].hist(vals, bins=min(30, max(5, len(vals) // 3)), alpha=0.55, label=label, color=color)
    axes[0].set_xlabel(f"margin ({units})")
    axes[0].set_ylabel("combinations")
    axes[0].legend(fontsize=8)
    axes[0].set_title("Margin at the target BER")
    floor = [v for v in (parse_float(r.get("floor_eh_mv")) for r in ok) if v is not None]
    if floor:
        axes[1].hist(floor, bins=min(30, max(5, len(floor) // 3)), color="#9467bd")
        axes[1].axvline(0, color="k", lw=0.8)
    ber = next((r.get("floor_ber") for r in ok if r.get("floor_ber")), "")
    axes[1].set_title(f"Eye height at the BER floor {ber}")
    axes[1].set_xlabel(f"{metric_label('eye_height')}, robust codes, worst corner")
    return _png(fig)


def _detail_plot(detail: Mapping[str, Any], title: str) -> str | None:
    import numpy as np
    from matplotlib.figure import Figure

    from eqtune.study.berfloor import fit_bathtub, q_of_ber

    eye = detail.get("eye")
    tub = detail.get("bathtub")
    if tub is not None and not np.any(np.isfinite(np.asarray(tub["eye_height_mv"], float))):
        tub = None  # closed at every BER: nothing to draw
    if eye is None and tub is None:
        return None
    ncols = (eye is not None) + (tub is not None)
    fig = Figure(figsize=(5.4 * ncols, 3.8))
    axes = list(np.atleast_1d(fig.subplots(1, ncols)))
    if eye is not None:
        ax = axes.pop(0)
        img = np.asarray(eye["density"], float)  # rows: voltage, columns: phase
        img = img / np.maximum(img.max(axis=0, keepdims=True), 1e-300)  # per-phase normalised
        from eqtune.eye.plot import centre_columns

        v = eye.get("v_mv", [-1, 1])
        # one UI centred on the eye's opening: never cut at the left edge (the eye is periodic in phase)
        t, img = centre_columns(eye.get("t_ui", np.linspace(-0.5, 0.5, img.shape[1], endpoint=False)), img,
                                None, v)
        im = ax.imshow(np.log10(np.maximum(img, 1e-16)), origin="lower", aspect="auto", cmap="magma",
                       extent=[t[0], t[-1], v[0], v[-1]], vmin=-12, vmax=0)
        fig.colorbar(im, ax=ax, label="log10 rel. probability", pad=0.02)
        ax.set_xlabel("phase from the eye centre (UI)")
        ax.set_ylabel("voltage (mV)")
        ax.set_title("statistical eye")
    if tub is not None:
        ax = axes.pop(0)
        ber = np.asarray(tub["ber"], float)
        eh = np.asarray(tub["eye_height_mv"], float)
        ax.semilogy(eh, ber, "o-", ms=3, label="statistical eye (direct)")
        lo, hi = detail.get("fit_ber", (1e-3, 1e-300))
        sel = (ber <= lo) & (ber >= hi)
        fit = fit_bathtub(ber[sel], eh[sel], ber_max=lo, max_points=int(sel.sum()) or 1)
        if fit is not None:
            ax.semilogy(eh[sel], ber[sel], "s", ms=5, mfc="none", color="C1", label="points fitted")
            bb = np.logspace(np.log10(lo), -16, 60)
            ax.semilogy(fit.intercept + fit.slope * q_of_ber(bb), bb, "--", color="C1",
                        label=f"Q-scale extrapolation (R2={fit.r2:.4f})")
        for b in detail.get("floor_bers", []):
            ax.axhline(b, color="#aaa", lw=0.6)
        ax.axvline(0, color="k", lw=0.6)
        ax.set_xlabel(f"{metric_label('eye_height')}, worst eye")
        ax.set_ylabel("BER")
        ax.set_title("vertical bathtub")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return _png(fig)


def _sci(value: Any) -> str:
    v = parse_float(value)
    return "-" if v is None else f"{v:.1e}"


def _corner_note(row: Mapping[str, str]) -> str:
    c = row.get("fec_worst_corner")
    return f" ({c})" if c and row.get("fec_frame_error_ratio") else ""


def _floor_class(row: Mapping[str, str]) -> str:
    """Error-floor screen: the eye at the deepest floor BER is closed (<= 0 mV)."""
    v = parse_float(row.get("floor_eh_mv"))
    return "fail" if v is not None and v <= 0 else ""


def _ranked_rows(rows: Sequence[Mapping[str, str]]) -> list[Mapping[str, str]]:
    def key(r):
        m = parse_float(r.get("robust_margin"))
        return (0 if r.get("status") != "ok" else 1, m if m is not None else -math.inf, int(r.get("index") or 0))

    return sorted(rows, key=key)


def render_report(spec: StudySpec, rows: Sequence[Mapping[str, str]], summary: Mapping[str, Any],
                  details: Sequence[tuple[Mapping[str, str], Mapping[str, Any] | None]] = ()) -> str:
    """The HTML text of the report (pure: no files read)."""
    settings = spec.settings
    obj = settings.get("tune", {}).get("objective", "eye_height")
    units = METRIC_DEFS[obj].unit if obj in METRIC_DEFS else ""
    floor_key = next((r.get("floor_ber") for r in rows if r.get("floor_ber")), "")
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>eqtune study {_esc(spec.name)}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>eqtune study: {_esc(spec.name)}</h1>",
           f"<p class='small'>spec <code>{_esc(spec.source)}</code> &middot; target BER "
           f"{settings.get('target_ber', 0):g} &middot; objective {_esc(obj)} ({units}) &middot; direction "
           f"{_esc(settings.get('direction'))} &middot; corners "
           f"{_esc(', '.join(c['name'] for c in settings.get('corners', [])))} &middot; pass: "
           f"{_esc(' or '.join(settings.get('criteria', [])))} &middot; executor {_esc(summary.get('executor'))}</p>",
           "<div class='cards'>"
           f"<span>combinations <b>{summary.get('combinations')}</b></span>"
           f"<span>finished <b>{summary.get('finished')}</b></span>"
           f"<span class='pass'>pass {summary.get('pass')}</span>"
           f"<span class='fail'>fail {summary.get('fail')}</span>"
           f"<span class='error'>errors {len(summary.get('errors', []))}</span>"
           f"<span>bad input rows {len(summary.get('input_errors', []))}</span></div>"]
    if not summary.get("complete"):
        out.append(f"<p class='fail'>Incomplete: {summary.get('missing')} combinations missing; "
                   "run again with --resume.</p>")
    hist = _histograms(rows, units)
    if hist:
        out.append(f"<h2>Margins</h2><img alt='margin histograms' src='{hist}'>")
    # worst cases
    if details:
        out.append("<h2>Worst cases</h2>")
        for row, det in details:
            title = (f"{row['channel']} | {row.get('profile') or 'default profile'}: robust margin "
                     f"{_fmt(row.get('robust_margin'))} {units} at {row.get('robust_worst_corner')}, codes "
                     f"{row.get('robust_codes')}")
            out.append(f"<h3>{_esc(title)}</h3>")
            img = _detail_plot(det, title) if det else None
            if img:
                out.append(f"<img alt='eye and bathtub' src='{img}'>")
            floor = json.loads(row.get("ber_floor") or "{}")
            if floor:
                out.append("<table><tr><th>BER</th><th>direct (mV)</th><th>Q-scale extrapolated (mV)</th>"
                           "<th>difference</th><th>fit R&sup2;</th></tr>")
                for b, f in floor.items():
                    out.append(f"<tr><td>{_esc(b)}</td><td>{_fmt(f.get('direct'))}</td><td>"
                               f"{_fmt(f.get('extrapolated'))}</td><td>{_fmt(f.get('delta'))}</td>"
                               f"<td>{_fmt(f.get('fit_r2'), 4)}</td></tr>")
                out.append("</table>")
            if det and det.get("note"):
                out.append(f"<p class='small'>{_esc(det['note'])}</p>")
    # ranked table: every link of a study a browser can show; the worst TABLE_MAX of a larger one
    ranked = _ranked_rows(rows)
    shown = ranked[:TABLE_MAX]
    title = "All links, worst first" if len(shown) == len(ranked) else \
        f"The {len(shown):,} worst of {len(ranked):,} links"
    out.append(f"<h2>{title}</h2>")
    if len(shown) < len(ranked):
        out.append(f"<p class='small'>Every row is in results.csv and results.sqlite; ask the store, e.g. "
                   f"<code>eqtune study query OUT --worst 50 --corner {_esc(spec.combinations[0].corners[-1].name)}"
                   "</code> or <code>--verdict fail</code>.</p>")
    out.append(f"<table><tr><th>#</th><th>channel</th><th>profile</th>"
               f"<th>baseline ({units})</th><th>tuned ({units})</th><th>robust ({units})</th><th>worst corner</th>"
               f"<th>EH @ {_esc(floor_key)} (mV)</th><th>frame loss (KP4 CER, worst corner)</th><th>AI-ready</th>"
               "<th>robust codes</th><th>method</th><th>verdict</th><th>why</th></tr>")
    for i, r in enumerate(shown, 1):
        status = r.get("status")
        v = r.get("verdict") if status == "ok" else "error"
        why = r.get("fail_reasons") if status == "ok" else r.get("error")
        out.append(f"<tr class='{'fail' if v == 'fail' else 'error' if v == 'error' else ''}'><td>{i}</td>"
                   f"<td class='l'>{_esc(r.get('channel'))}</td><td class='l'>{_esc(r.get('profile'))}</td>"
                   f"<td>{_fmt(r.get('baseline_margin'))}</td><td>{_fmt(r.get('tuned_margin'))}</td>"
                   f"<td>{_fmt(r.get('robust_margin'))}</td><td class='l'>{_esc(r.get('robust_worst_corner'))}</td>"
                   f"<td class='{_floor_class(r)}'>{_fmt(r.get('floor_eh_mv'))}</td>"
                   f"<td>{_sci(r.get('fec_frame_error_ratio'))}{_esc(_corner_note(r))}</td>"
                   f"<td class='{'fail' if r.get('ai_ready') == 'no' else ''}'>{_esc(r.get('ai_ready') or '-')}</td>"
                   f"<td class='l'><code>{_esc(r.get('robust_codes'))}</code></td>"
                   f"<td>{_esc(r.get('method'))}</td><td class='{v}'>{_esc(v)}</td>"
                   f"<td class='l small'>{_esc(why)}</td></tr>")
    out.append("</table>")
    out.append("<p class='small'>Frame loss: RS(544,514) KP4 codeword error ratio of the robust codes from the "
               "eye's symbol error ratio and DFE taps, with DFE error bursts (Markov chain on the first taps, no "
               "precoding; IEEE 802.3 clause 91/119 FEC), at the worst corner. AI-ready: below the 6.2e-11 "
               "frame-loss target there (an uncorrectable codeword loses its frames; retransmits stall collective "
               "operations). '-' = not computed for this model.</p>")
    if summary.get("input_errors"):
        out.append("<h2>Input rows not studied</h2><ul>")
        out += [f"<li>{_esc(e)}</li>" for e in summary["input_errors"]]
        out.append("</ul>")
    prof = summary.get("profiles")
    if prof:
        out.append(f"<h2>Module profiles</h2><p>{len(prof.get('written', []))} written to "
                   "<code>profiles/</code> (push with <code>eqtune profile push</code>).</p>")
        if prof.get("skipped"):
            out.append("<ul>" + "".join(f"<li>{_esc(s)}</li>" for s in prof["skipped"]) + "</ul>")
    out.append("</body></html>\n")
    return "".join(out)


def write_report(out_dir: str | Path, spec: StudySpec, rows: Sequence[Mapping[str, str]],
                 summary: Mapping[str, Any], *, detail: Callable[[Combination, Mapping[str, str]], Any] | None = None,
                 ) -> Path:
    """Write ``out_dir/report.html``; ``detail(combo, row)`` supplies eyes/bathtubs for the worst cases."""
    by_id = spec.by_id()
    n = int(spec.settings.get("report_worst", 3))
    worst = [r for r in _ranked_rows(rows) if r.get("status") == "ok"][:n]
    details = []
    for r in worst:
        det = None
        if detail is not None and r["id"] in by_id:
            try:
                det = detail(by_id[r["id"]], r)
            except Exception as exc:  # noqa: BLE001 - a plot must not lose the report
                det = {"note": f"eye/bathtub not available: {type(exc).__name__}: {exc}"}
        details.append((r, det))
    text = render_report(spec, rows, summary, details)
    path = Path(out_dir) / REPORT
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
