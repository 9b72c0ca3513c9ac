"""``eqtune session``: on-site session journals (list, show, resume, report).

Sessions live in ``--sessions DIR``, else ``$EQTUNE_SESSIONS``, else ``./sessions``. Heavy modules
(numpy, the optimizer, matplotlib, the drivers) are imported inside the commands only.
"""

from __future__ import annotations

import click

from eqtune.cli._common import echo_json, journal_trust, journal_trust_options

_SESSIONS = click.option("--sessions", "sessions", metavar="DIR", default=None,
                         help="Sessions folder (default: $EQTUNE_SESSIONS or ./sessions).")


@click.group(name="session")
def session() -> None:
    """On-site session journals: list, show, resume, report."""


@session.command(name="list")
@_SESSIONS
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(sessions: str | None, as_json: bool) -> None:
    """List the sessions in the sessions folder (oldest first)."""
    from eqtune.resources import sessions_dir
    from eqtune.session.journal import list_sessions

    infos = list_sessions(sessions)
    if as_json:
        echo_json([i.to_dict() for i in infos])
        return
    if not infos:
        click.echo(f"no sessions in {sessions_dir(sessions)}")
        return
    rows = []
    for i in infos:
        meta = i.metadata
        where = " / ".join(x for x in (meta.get("customer"), meta.get("site"), meta.get("link")) if x)
        note = ("torn last record " if i.torn else "") + (i.error or "")
        rows.append((i.id, i.status, i.module or "-", ",".join(map(str, i.lanes)) or "all", str(i.measurements),
                     (where + ("  " + note if note else "")).strip()))
    click.echo(_table(("SESSION", "STATUS", "MODULE", "LANES", "MEAS", "CUSTOMER / SITE / LINK"), rows))


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns sized to their widest cell (MEAS right-aligned), last column free."""
    widths = [max(len(str(r[c])) for r in (header, *rows)) for c in range(len(header))]
    lines = []
    for r in (header, *rows):
        cells = [str(v).rjust(widths[c]) if header[c] == "MEAS" else str(v).ljust(widths[c])
                 for c, v in enumerate(r)]
        lines.append("  ".join(cells[:-1] + [str(r[-1])]).rstrip())
    return "\n".join(lines)


@session.command(name="show")
@click.argument("session_id", metavar="ID")
@_SESSIONS
@click.option("--json", "as_json", is_flag=True, help="Print JSON (header, devices, lanes, status).")
@click.option("--eye", "eye", is_flag=True,
              help="Also draw the model eye of lane 1's held codes (the session's library channel) as text.")
def show(session_id: str, sessions: str | None, as_json: bool, eye: bool) -> None:
    """Show one session: metadata, devices, per-lane results, status."""
    from eqtune.session.journal import read_journal, session_path
    from eqtune.session.view import SessionView

    path = session_path(session_id, sessions) / "journal.jsonl"
    from eqtune.session.records import check_records

    contents = read_journal(path)
    check_records(contents.records, str(path))
    view = SessionView(contents.records)
    signature = _signature_line(path, contents)
    if (view.header.get("config") or {}).get("module"):
        view.config.check()
    lanes = view.lane_results()
    dev = view.device("module") or {}
    if as_json:
        echo_json({
            "id": session_id, "path": str(path), "status": view.status(), "header": view.header,
            "devices": view.all("device"), "plan": view.plan(),
            "lanes": {str(k): v.to_dict() for k, v in lanes.items()},
            "records": len(contents.records), "torn": None if contents.torn is None else contents.torn.describe(),
            "integrity": contents.integrity(), "bad_checksums": list(contents.bad_checksums),
            "signature": signature,
        })
        return
    head = view.header
    click.echo(f"session {session_id}  ({view.status()}, {len(contents.records)} records)  {path}")
    from eqtune.textsafe import printable  # journaled device text and metadata: no terminal escapes

    for k, v in (head.get("metadata") or {}).items():
        click.echo(printable(f"  {k:<9} {v}"))
    ident = dev.get("identity") or {}
    if dev:
        click.echo(printable(f"  module    {dev.get('resource')}: {ident.get('vendor')} {ident.get('pn')} "
                             f"SN {ident.get('sn')} fw {ident.get('firmware')}"))
    cfg = view.config
    screen = f", screen {cfg.screen_dwell_s:g} s" if cfg.screening and cfg.screen_dwell_s else ""
    click.echo(f"  tuning    metric {cfg.metric}, dwell {cfg.dwell_s:g} s{screen}, verify {cfg.verify_dwell:g} s, "
               f"budget {cfg.budget}, seed {cfg.seed}")
    why = ((view.plan() or {}).get("screen") or {}).get("why") or cfg.screen_why
    if why:
        click.echo(printable(f"  screen    {why}"))
    for ln, r in sorted(lanes.items()):
        b = "-" if r.baseline_margin is None else f"{r.baseline_margin:.3f}"
        v = "-" if r.verified_margin is None else f"{r.verified_margin:.3f}"
        click.echo(f"  lane {ln}: baseline {b} -> tuned {v}, {r.evaluations} evaluations, "
                   f"{r.decision or 'undecided'}"
                   + (f", stopped ({r.stop_rule}): {printable(r.stop or '')}" if r.stop_rule else "")
                   + (", holds " + " ".join(f"{k}={v}" for k, v in sorted(r.final.items())) if r.final else ""))
    if contents.torn is not None:
        click.echo(f"  note: {contents.torn.describe()}; `eqtune session resume {session_id}` sets it aside")
    if contents.bad_checksums:
        click.echo(f"  WARNING: {contents.integrity()}; nothing can be derived from it (resume, report, "
                   "profile save and the TUI refuse it)")
    click.echo(f"  signature {signature}")
    if eye:
        from eqtune.session.model import model_eye_lines

        lines = model_eye_lines(view, width=64, height=15)
        if not lines:
            click.echo("  model eye: not available (the session names no library channel, or the model closes "
                       "the eye at these codes)")
        for line in lines:
            click.echo("  " + line)


def _signature_line(path, contents) -> str:
    """What journal.sig says (checked with $EQTUNE_TRUSTED_KEYS when set), in one line."""
    from eqtune.errors import EqtuneError
    from eqtune.session.integrity import check_signature
    from eqtune.session.signing import trusted_keys

    try:
        st = check_signature(path, contents.good_size, len(contents.records), trusted_keys(()))
    except EqtuneError as exc:
        return f"unreadable: {exc}"
    if not st.present:
        return "none (eqtune session sign ID --key KEY)"
    if st.problem:
        return f"BROKEN: {st.problem}"
    how = f"verified with trusted key {st.verified_by}" if st.verified_by else "not verified (no trusted key given)"
    return f"{st.records} of {len(contents.records)} records signed by key {st.key_id}, {how}"


@session.command(name="resume")
@click.argument("session_id", metavar="ID")
@_SESSIONS
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.option("--allow-traffic-down", is_flag=True,
              help="Accept that writes take the data path down, for a session that had no consent journaled yet.")
@journal_trust_options
def resume(session_id: str, sessions: str | None, as_json: bool, quiet: bool, allow_traffic_down: bool,
           require_signed: bool, trusted_key: tuple[str, ...]) -> None:
    """Continue an interrupted live tune where it stopped (no completed measurement is repeated)."""
    from eqtune.cli.live_cmd import resume_live

    resume_live(session_id, sessions=sessions, as_json=as_json, quiet=quiet, allow_traffic_down=allow_traffic_down,
                **journal_trust(require_signed, trusted_key))


@session.command(name="report")
@click.argument("session_id", metavar="ID")
@_SESSIONS
@click.option("--out", "out", metavar="FILE", default=None,
              help="HTML file to write (default: <sessions>/<ID>/report.html).")
@journal_trust_options
def report(session_id: str, sessions: str | None, out: str | None, require_signed: bool,
           trusted_key: tuple[str, ...]) -> None:
    """Write the self-contained HTML report of a session for the customer."""
    from eqtune.session.report import write_report

    path = write_report(session_id, out, sessions, **journal_trust(require_signed, trusted_key))
    click.echo(f"report: {path}")


@session.command(name="sign")
@click.argument("session_id", metavar="ID")
@_SESSIONS
@click.option("--key", "key_file", required=True, metavar="KEY",
              help="Ed25519 private key (NAME.key from `eqtune profile keygen`) or HMAC site key file.")
def sign(session_id: str, sessions: str | None, key_file: str) -> None:
    """Sign a session journal (after checking every record's checksum): journal.sig beside it."""
    from eqtune.session.integrity import sign_journal

    st = sign_journal(session_id, key_file, sessions)
    click.echo(f"session {session_id}: {st.records} records signed (key {st.key_id}); require it with "
               "--require-signed --trusted-key PUBLIC_KEY")
