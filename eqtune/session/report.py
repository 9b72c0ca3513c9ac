"""The customer report: one self-contained HTML file per session (inline CSS, plots as base64 PNG).

Everything comes from the session journal: link and site metadata, device identities, before/after
margins per lane with the BER counts behind them, the codes, the keep/restore decisions, the
convergence of every lane and, when the session names a library channel and the eye engine is
available, the model eye of the original and the kept codes. Nothing is fetched from the network
when the file is opened (no scripts, no external fonts or images), so it can be mailed as is.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import html
import io
import math
import os
from pathlib import Path
from typing import Any

from eqtune.errors import SessionError
from eqtune.session.journal import session_path
from eqtune.session.view import LaneResult, SessionView, load_session

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1000px;
color:#1b1f24;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em;
margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}th,td{border:1px solid #d0d7de;padding:.3em .6em;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.keep{color:#1a7f37;font-weight:600}.restore{color:#9a6700;font-weight:600}.bad{color:#cf222e;font-weight:600}
.muted{color:#57606a;font-size:.88em}img{max-width:100%;height:auto;border:1px solid #d0d7de;margin:.4em 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em}
@media print{body{margin:0;max-width:none}}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _codes(c: dict[str, Any] | None) -> str:
    if not c:
        return "-"
    return " ".join(f"{k}={v}" for k, v in sorted(c.items()))


def _num(x: Any, fmt: str = ".2f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return format(float(x), fmt)


def _count(v: Any) -> float | None:
    """A journaled count or rate as a float: a finite int or float; None for anything else (a bool, a
    string, None: an edited or older record)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _ber_text(reading: dict[str, Any] | None) -> str:
    if not reading:
        return "-"
    c = reading.get("counts")
    if not isinstance(c, dict):
        return "-"
    bits, errors = _count(c.get("bits")), _count(c.get("errors"))
    if bits is None or bits <= 0 or errors is None or errors < 0:
        return "-"
    if errors == 0:
        upper = _count(c.get("ber_upper95"))
        return f"&lt; {upper if upper is not None else 3.0 / bits:.1e} (0 errors in {bits:.2e} bits)"
    return f"{errors / bits:.2e} ({errors:.0f} errors in {bits:.2e} bits)"


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _unit(metric: str) -> str:
    from eqtune.serdes.knobs import metric_label

    return metric_label(metric)


def _plots(view: SessionView, lanes: dict[int, LaneResult]) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    out = []
    unit = _unit(view.config.metric)
    ids = sorted(lanes)
    if any(lanes[ln].baseline_margin is not None for ln in ids):
        fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(ids) + 2), 3.2))
        w = 0.38
        xs = range(len(ids))
        b = [lanes[ln].baseline_margin or 0.0 for ln in ids]
        v = [lanes[ln].verified_margin or 0.0 for ln in ids]
        ax.bar([x - w / 2 for x in xs], b, w, label="baseline (original codes)", color="#8c959f")
        ax.bar([x + w / 2 for x in xs], v, w, label="tuned (verified)", color="#0969da")
        ax.set_xticks(list(xs), [f"lane {ln}" for ln in ids])
        ax.set_ylabel(unit)
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title("Margin before and after tuning (long-dwell measurements)")
        out.append(("Margins per lane", _png(fig)))
    if any(lanes[ln].history for ln in ids):
        fig, ax = plt.subplots(figsize=(7.0, 3.4))
        for ln in ids:
            h = [m for _, m in lanes[ln].history]
            if not h:
                continue
            best = [max(h[: i + 1]) for i in range(len(h))]
            line, = ax.plot(range(1, len(h) + 1), best, label=f"lane {ln} best so far")
            ax.plot(range(1, len(h) + 1), h, ".", color=line.get_color(), alpha=0.45)
            if lanes[ln].baseline_margin is not None:
                ax.axhline(lanes[ln].baseline_margin, color=line.get_color(), ls=":", lw=0.8)
        ax.set_xlabel("evaluation")
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        ax.set_title("Convergence (dots: each measurement; dotted: baseline)")
        out.append(("Convergence", _png(fig)))
    eye = _eye_plot(view, lanes)
    if eye:
        out.append(eye)
    return out


def _eye_plot(view: SessionView, lanes: dict[int, LaneResult]) -> tuple[str, str] | None:
    """Model eye (library channel + eye engine) of the original and the kept codes of the first lane."""
    if not view.config.channel or not lanes:
        return None
    ln = sorted(lanes)[0]
    r = lanes[ln]
    after = r.final or r.recommended
    if not after:
        return None
    try:
        import matplotlib.pyplot as plt

        from eqtune.eye.plot import draw_contour
        from eqtune.session.model import model_eye_setup, model_point

        setup = model_eye_setup(view.config.channel, (view.plan() or {}).get("knobs") or after)
        if setup is None:
            return None
        eng, _, use, direction = setup
        rec = view.last("original") or {}
        adaptive_before = ln in {int(x) for x in (rec.get("tx_adaptive") or [])}
        adaptive_after = bool(r.tx_adaptive) and after == r.final
        if eng.evaluate(model_point(setup, after, tx_adaptive=adaptive_after)).eye_height_min_mv <= 0:
            return None  # the nominal channel model closes where the measured lane is open: no picture
        fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2), sharex=True, sharey=True)  # same axes: comparable
        for ax, (title, codes, adapt) in zip(axes, (("original", r.original, adaptive_before),
                                                    ("tuned", after, adaptive_after))):
            pt = model_point(setup, codes, tx_adaptive=adapt)
            res = eng.evaluate(pt)
            if res.eye_height_min_mv > 0:
                draw_contour(ax, eng.contour(pt))
            else:
                from eqtune.eye.plot import mark_closed

                mark_closed(ax, f"CLOSED at BER {res.ber_target:g}")
                ax.set_xlim(-0.5, 0.5)
            # two short lines per panel: one long line ran into the neighbouring panel's title
            ax.set_title(f"lane {ln} {title}: EH "
                         f"{'CLOSED' if not res.eye_height_min_mv > 0 else f'{res.eye_height_min_mv:.1f} mV'}\n"
                         f"{_codes({k: int(v) for k, v in pt.items() if k in use})}{', adaptive' if adapt else ''}",
                         fontsize=8)
            ax.set_xlabel("UI from the sampling instant")
        axes[0].set_ylabel("mV")
        return (f"Model eye at the target BER ({direction}, channel {view.config.channel})", _png(fig))
    except Exception:  # the eye is an illustration; the report never fails for it
        return None


def _utc_text(t: object) -> str:
    """A journal record's Unix time as UTC text; "?" for a missing or impossible time (an edited or
    foreign journal must not stop the report)."""
    try:
        return _dt.datetime.fromtimestamp(float(t), _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def render_report(view: SessionView, *, session_id: str = "", journal_path: Path | None = None) -> str:
    """The HTML text of a session report."""
    head = view.header
    meta = head.get("metadata") or {}
    cfg = view.config
    plan = view.plan() or {}
    lanes = view.lane_results()
    base = view.readings("baseline")
    ver = view.readings("verify")
    dev = view.device("module") or {}
    ident = dev.get("identity") or {}
    inst = view.device("instrument")
    status = view.status()
    unit = _unit(cfg.metric)
    sid = session_id or head.get("id", "")
    title = " / ".join(x for x in (meta.get("customer"), meta.get("site"), meta.get("link")) if x) or sid
    p: list[str] = []
    a = p.append
    a("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>")
    a("<meta name='viewport' content='width=device-width, initial-scale=1'>")
    a(f"<title>eqtune report {_e(sid)}</title><style>{_CSS}</style></head><body>")
    a(f"<h1>Link equalization report: {_e(title)}</h1>")
    a(f"<p class='muted'>Session <code>{_e(sid)}</code>, started {_e(head.get('created'))}, status "
      f"<b>{_e(status)}</b>. Generated {_e(_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds'))} by eqtune "
      f"{_e(head.get('eqtune', ''))}.</p>")

    a("<h2>Link and devices</h2><table>")
    rows = [("Customer", meta.get("customer")), ("Site", meta.get("site")), ("Link", meta.get("link")),
            ("Operator", meta.get("operator"))]
    rows += [(k.capitalize(), v) for k, v in sorted(meta.items()) if k not in ("customer", "site", "link", "operator")]
    rows += [("Module", f"{ident.get('vendor', '')} {ident.get('pn', '')} rev {ident.get('rev', '')}"),
             ("Module SN / firmware", f"{ident.get('sn', '')} / {ident.get('firmware', '')}"),
             ("Module resource", dev.get("resource", cfg.module)),
             ("Measurement", f"{inst['resource']} ({(inst.get('identity') or {}).get('idn', '')})" if inst
              else "module's own PRBS checker (CMIS pages 13h/14h)"),
             ("Channel model", cfg.channel or "none (pure live tuning)"),
             ("Knobs tuned", ", ".join(plan.get("knobs", [])) or "-"),
             ("Margin metric", unit),
             ("Dwell per evaluation / baseline and verification", f"{cfg.dwell_s:g} s / {cfg.verify_dwell:g} s"
              + (" (emulated time: the emulator's virtual clock, not wall time)" if _virtual_clock(cfg.module)
                 else "")),
             ("Budget / seed / optimizer", f"{cfg.budget} evaluations per lane group / {cfg.seed} / {cfg.optimizer}")]
    for k, v in rows:
        if v not in (None, ""):
            a(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    a("</table>")

    a(f"<h2>Result per lane</h2><p class='muted'>Margins in {_e(unit)}; larger is better. Baseline and "
      "tuned values are long-dwell measurements; the tuned codes are kept only when they beat the baseline.</p>")
    a("<table><tr><th>Lane</th><th>Original codes</th><th>Baseline</th><th>BER (baseline)</th>"
      "<th>Tuned codes</th><th>Tuned</th><th>BER (tuned)</th><th>Gain</th><th>Decision</th>"
      "<th>Module now holds</th><th>Evaluations</th></tr>")
    for ln, r in sorted(lanes.items()):
        gain = (r.verified_margin - r.baseline_margin) if (r.verified_margin is not None and
                                                           r.baseline_margin is not None) else None
        cls = {"keep": "keep", "restore": "restore"}.get(r.decision or "", "bad")
        a(f"<tr><td>{ln}</td><td><code>{_e(_codes(r.original))}</code></td><td class='num'>{_num(r.baseline_margin)}</td>"
          f"<td>{_ber_text(base.get(ln))}</td><td><code>{_e(_codes(r.recommended))}</code></td>"
          f"<td class='num'>{_num(r.verified_margin)}</td><td>{_ber_text(ver.get(ln))}</td>"
          f"<td class='num'>{_num(gain, '+.2f')}</td><td class='{cls}'>{_e(r.decision or 'undecided')}</td>"
          f"<td><code>{_e(_codes(r.final or (r.original if r.decision is None else None)))}</code></td>"
          f"<td class='num'>{r.evaluations}</td></tr>")
    a("</table>")

    _traffic_section(view, a)

    for caption, uri in _plots(view, lanes):
        a(f"<h2>{_e(caption)}</h2><img alt='{_e(caption)}' src='{uri}'>")

    a("<h2>Decisions and events</h2><table><tr><th>Time (UTC)</th><th>Event</th><th>Details</th></tr>")
    for rec in view.records:
        t = rec.get("type")
        if t not in ("decision", "restore", "abort", "resume", "recovered", "end", "profile", "push", "verdict",
                     "consent", "watch_verify"):
            continue
        when = _utc_text(rec.get("t"))
        if t == "decision":
            det = f"lane {rec['lane']}: {rec['action']} {_codes(rec.get('codes'))} - {rec.get('reason', '')}"
        elif t == "restore" and rec.get("reason") == "tx_adaptive":
            det = (f"Tx input adaptive EQ switched back on, lane(s) {_lanes(rec.get('lanes'))}; read back: "
                   f"{'yes' if rec.get('verified') else 'NO'}")
        elif t == "restore":
            det = f"{rec.get('reason')}: {_codes_lanes(rec.get('codes')) or 'no codes'}; read back: " \
                  f"{'yes' if rec.get('verified') else 'NO'}"
        elif t == "abort":
            det = str(rec.get("reason", ""))
        elif t == "verdict":
            det = f"{rec.get('text', '')} Stopped here: the module keeps its codes."
        elif t == "consent":
            det = (f"traffic-down writes: {rec.get('choice')} ({rec.get('how')}), lane(s) "
                   f"{_lanes(rec.get('lanes'))}")
        elif t == "watch_verify":  # the fleet watch's before/after of the lane (eqtune/watch/retune.py)
            det = _watch_verify_text(rec)
        elif t == "end":
            det = f"status {rec.get('status')}" + (f" - {rec['message']}" if rec.get("message") else "")
        elif t == "profile":  # the file name only: the laptop's folders are not the customer's business
            det = f"{Path(str(rec.get('path') or 'profile.json')).name} (sha256 {str(rec.get('digest', ''))[:16]}...)"
        elif t == "push":  # the profile written to modules, each read back (eqtune.session.push)
            det = "; ".join(f"{r.get('resource')}: {r.get('status')}" + (f" - {r['message']}" if r.get("message") else "")
                            for r in rec.get("results") or []) or "no module"
        else:
            det = ", ".join(f"{k}={v}" for k, v in rec.items()
                            if k not in ("v", "seq", "t", "type", "ck", "pid") and v not in (None, "", [], {}))
        a(f"<tr><td>{_e(when)}</td><td>{_e(t)}</td><td>{_e(det or '-')}</td></tr>")
    a("</table>")

    if journal_path is not None and journal_path.is_file():
        dg = hashlib.sha256(journal_path.read_bytes()).hexdigest()
        a(f"<p class='muted'>Source of truth: the session journal <code>{_e(sid)}/{_e(journal_path.name)}</code> "
          f"({len(view.records)} records, sha256 {dg}).</p>")
    a("</body></html>\n")
    return "".join(p)


def _watch_verify_text(rec: dict[str, Any]) -> str:
    """The watch's verdict on the lane after this session: the readings before and after, each side's median."""
    def ber(x: Any) -> str:
        v = _count(x)
        return "n/a" if v is None else ("0 (no error counted)" if v <= 0 else f"{v:.2e}")

    snr = ""
    if _count(rec.get("esnr_db_before")) is not None and _count(rec.get("esnr_db_after")) is not None:
        snr = f", eSNR {float(rec['esnr_db_before']):.2f} -> {float(rec['esnr_db_after']):.2f} dB"
    return (f"fleet watch, lane {rec.get('lane')}: {rec.get('verdict')}; pre-FEC BER {ber(rec.get('prefec_ber_before'))} "
            f"-> {ber(rec.get('prefec_ber_after'))}{snr} (median of {rec.get('polls')} polls before the session and "
            "after it)")


def _lanes(lanes: Any) -> str:
    return ",".join(str(x) for x in (lanes or [])) or "-"


def _traffic_section(view: SessionView, a: Any) -> None:
    """Consent and every outage of the session and of its pushes (a module whose Apply re-initializes the
    data path; eqtune.session.consent): the customer sees each time the link's traffic stopped."""
    consent = view.last("consent")
    outages = [r for r in view.records if r.get("type") == "outage"]
    pushed = [(rec, o) for rec in view.records if rec.get("type") == "push"
              for res in rec.get("results") or [] for o in res.get("outages") or []]
    if consent is None and not outages and not pushed:
        return
    n = len(outages) + len(pushed)
    a(f"<h2>Traffic outages</h2><p>{n} traffic outage(s): on this module every write of EQ codes "
      "re-initializes the data path, which stops the traffic of its lanes.")
    if consent is not None:
        notice = consent.get("notice") or {}
        adv = notice.get("advertised_s")
        a(f" Accepted before the first write ({_e(consent.get('how'))}: {_e(consent.get('choice'))}) for lane(s) "
          f"{_e(_lanes(consent.get('lanes')))}; expected about {_e(notice.get('outages', '?'))}, each up to "
          f"{_e('an unadvertised time' if adv is None else f'{adv:g} s')} (module's MaxDurationDPInit).")
    a("</p>")
    if outages or pushed:
        a("<table><tr><th>Time (UTC)</th><th>Step</th><th>Lanes down</th></tr>")
        for o in outages:
            a(f"<tr><td>{_e(_utc_text(o.get('t')))}</td><td>{_e(o.get('phase') or '-')}</td>"
              f"<td>{_e(_lanes(o.get('lanes')))}</td></tr>")
        for _rec, o in pushed:
            a(f"<tr><td>{_e(_utc_text(o.get('at')))}</td><td>push</td><td>{_e(_lanes(o.get('lanes')))}</td></tr>")
        a("</table>")


def _virtual_clock(resource: str | None) -> bool:
    """An emulated module on its virtual clock (``emu:...?fast=1``): its dwell is emulated time."""
    from urllib.parse import parse_qs, urlsplit

    res = str(resource or "")
    if not res.startswith("emu:"):
        return False
    opts = parse_qs(urlsplit(res).query or res.partition("?")[2])
    return (opts.get("fast") or ["0"])[0].lower() in ("1", "true", "yes", "on")


def _codes_lanes(codes: dict[str, Any] | None) -> str:
    return "; ".join(f"lane {k}: {_codes(v)}" for k, v in sorted((codes or {}).items()))


def write_report(session_id: str, out: str | os.PathLike[str] | None = None,
                 sessions_dir: str | os.PathLike[str] | None = None, *, trusted_keys: list[Any] | None = None,
                 require_signed: bool = False) -> Path:
    """Write ``report.html`` (default ``<sessions>/<id>/report.html``) and return its path.

    A journal that fails the integrity rule is refused before anything is written."""
    view = load_session(session_id, sessions_dir, action="write the report", trusted_keys=trusted_keys,
                        require_signed=require_signed)
    if len(view.records) < 1:
        raise SessionError(f"session {session_id} is empty; nothing to report")
    sdir = session_path(session_id, sessions_dir)
    path = Path(out) if out else sdir / "report.html"
    text = render_report(view, session_id=session_id, journal_path=sdir / "journal.jsonl")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise SessionError(f"cannot write report {path}: {exc.strerror}; choose another --out") from None
    from eqtune.session.journal import note_closed_session

    note_closed_session(session_id, sessions_dir, "report", path=str(path.resolve()))
    return path
