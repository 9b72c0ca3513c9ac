"""``eqtune profile``: tuning profiles (save, show, verify, push; export/import/diff with the NOS's own
files in :mod:`eqtune.cli.profile_nos_cmd`).

A profile is a digest-protected JSON document (see :mod:`eqtune.session.profile`). ``push`` checks
schema and digest before opening any module, then per module: identity, capabilities, current codes,
write/apply/read back, restore on failure; it ends with which modules hold which codes and exits 2
if any module did not end up with the profile's codes.
"""

from __future__ import annotations

import click

from eqtune.cli._common import echo_json, echo_json_outcome, journal_trust, journal_trust_options


@click.group(name="profile")
def profile() -> None:
    """Tuning profiles: save, show, verify, push, export/import to the NOS, diff."""


@profile.command(name="save")
@click.argument("session_id", metavar="SESSION")
@click.option("--out", "out", metavar="FILE", required=True, help="Profile file to write (JSON).")
@click.option("--sessions", metavar="DIR", default=None, help="Sessions folder (default: $EQTUNE_SESSIONS or ./sessions).")
@click.option("--pin-serial", is_flag=True, help="Apply only to this module's serial number (default: any SN of the PN).")
@click.option("--tuned", is_flag=True,
              help="Save the verified recommendation of every lane even where it did not beat the baseline.")
@journal_trust_options
def save(session_id: str, out: str, sessions: str | None, pin_serial: bool, tuned: bool, require_signed: bool,
         trusted_key: tuple[str, ...]) -> None:
    """Save the codes a session settled on as a profile (refused when the journal fails its checksums)."""
    from eqtune.session.export import save_session_profile
    from eqtune.session.profile import Profile

    path = save_session_profile(session_id, out, sessions, pin_serial=pin_serial,
                                lanes="tuned" if tuned else "decided", **journal_trust(require_signed, trusted_key))
    prof = Profile.load(path)
    click.echo(f"profile: {path} ({prof.describe_module()}, lanes {','.join(map(str, sorted(prof.lanes)))}, "
               f"sha256 {prof.digest[:16]}...)")


@profile.command(name="show")
@click.argument("file", metavar="FILE")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(file: str, as_json: bool) -> None:
    """Show a profile (after checking its schema and integrity digest)."""
    from eqtune.session.profile import Profile

    prof = Profile.load(file)
    if as_json:
        echo_json(prof.summary() | {"integrity": "ok"})
        return
    m = prof.module
    click.echo(f"profile {file}: integrity ok (sha256 {prof.digest})")
    sig = prof.signature
    click.echo("  signed   " + (f"{sig['algorithm']} by key {sig['key_id']} (checked by push --require-signed)"
                               if sig else "no (push --require-signed refuses it)"))
    click.echo(f"  module   {prof.describe_module()}  rev {m.get('rev')}  firmware {m.get('firmware')}")
    click.echo(f"  channel  {prof.channel or '-'}   session {prof.session or '-'}   created {prof.created}")
    for k, v in prof.link.items():
        click.echo(f"  {k:<8} {v}")
    for lane, codes in prof.codes().items():
        mg = prof.margins.get(lane, {})
        extra = ""
        if mg:
            def f(x):
                return "-" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))

            extra = (f"   margin {f(mg.get('baseline'))} -> {f(mg.get('tuned'))} {mg.get('metric', '')} "
                     f"({mg.get('decision')})")
        click.echo(f"  lane {lane}: " + " ".join(f"{k}={v}" for k, v in sorted(codes.items())) + extra)


@profile.command(name="sign")
@click.argument("file", metavar="FILE")
@click.option("--key", "key_file", required=True, metavar="KEY",
              help="Ed25519 private key (NAME.key from `eqtune profile keygen`) or HMAC site key file.")
def sign(file: str, key_file: str) -> None:
    """Sign a profile (after checking its integrity); the signature is stored in the file."""
    from eqtune.session.profile import Profile
    from eqtune.session.signing import load_key

    prof = Profile.load(file)
    key = load_key(key_file, role="private")
    prof.sign(key)
    prof.save(file)
    click.echo(f"profile {file}: signed ({key.algorithm}, key {key.key_id})")


@profile.command(name="keygen")
@click.argument("prefix", metavar="NAME")
def keygen(prefix: str) -> None:
    """Create an Ed25519 key pair NAME.key (secret: signs) and NAME.pub (give to sites: verifies)."""
    from eqtune.session.signing import keygen as _keygen

    priv, pub = _keygen(prefix)
    click.echo(f"private key {priv} (keep it secret), public key {pub} (trust it with --trusted-key)")


@profile.command(name="verify")
@click.argument("file", metavar="FILE")
@click.option("--module", "module_res", required=True, metavar="RESOURCE", help="Module resource to check against.")
@click.option("--force-identity", is_flag=True, help="Compare codes even if the module's identity does not match.")
@click.option("--push-report", default=None, metavar="REPORT",
              help="The `profile push --json` (or --report) output of an earlier push: tells 'reverted after "
                   "reset' from 'never applied'.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(file: str, module_res: str, force_identity: bool, push_report: str | None, as_json: bool) -> None:
    """Check (read-only) that a profile fits a module and whether the module holds its codes."""
    from eqtune.drivers.cmis import open_module
    from eqtune.errors import ProfileError
    from eqtune.session.profile import Profile
    from eqtune.session.push_verify import verify_against_push, verify_module

    prof = Profile.load(file)
    report = _load_push_report(push_report) if push_report else None
    mod = open_module(module_res)
    try:
        out = verify_module(prof, mod, force_identity=force_identity)
    finally:
        mod.close()
    out["state"], out["explanation"] = verify_against_push(out, report, prof.digest)
    if as_json:
        echo_json(out)
    else:
        click.echo(f"{module_res}: identity {'ok' if out['identity_ok'] else 'MISMATCH (forced)'}; "
                   f"capabilities {'ok' if out['capabilities_ok'] else 'NOT OK: ' + out['capability_problem']}; "
                   + ("holds the profile codes" if out["holds_profile"] else f"differs: {out['differences']}"))
        if not out["holds_profile"]:
            click.echo(f"  {out['state'].upper()}: {out['explanation']}")
        if out.get("firmware_note"):
            click.echo(f"  note: {out['firmware_note']}")
    if not out["capabilities_ok"]:
        raise ProfileError(f"{file} does not fit {module_res}: {out['capability_problem']}")


@profile.command(name="push")
@click.argument("file", metavar="FILE")
@click.option("--module", "modules", required=True, multiple=True, metavar="RESOURCE",
              help="Module resource (repeatable).")
@click.option("--dry-run", is_flag=True, help="Run every check and show what would change; write nothing.")
@click.option("--force-identity", is_flag=True, help="Push even to modules whose vendor/PN/SN do not match.")
@click.option("--jobs", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Modules pushed at once (only for modules on separate buses/adapters).")
@click.option("--require-signed", is_flag=True,
              help="Refuse the profile unless it is signed by a trusted key (--trusted-key / $EQTUNE_TRUSTED_KEYS).")
@click.option("--trusted-key", "trusted_key", multiple=True, metavar="FILE",
              help="Ed25519 public key (.pub) or HMAC site key file trusted to sign profiles (repeatable).")
@click.option("--report", "report_file", default=None, metavar="FILE",
              help="Also write the JSON push report here (for `profile verify --push-report`, `watch --from-push`).")
@click.option("--allow-traffic-down", is_flag=True,
              help="Write to modules whose Apply takes the data path (traffic) down (a maintenance window); "
                   "without it such a module is refused, nothing written.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def push(file: str, modules: tuple[str, ...], dry_run: bool, force_identity: bool, jobs: int,
         require_signed: bool, trusted_key: tuple[str, ...], report_file: str | None,
         allow_traffic_down: bool, as_json: bool) -> None:
    """Push a profile to one or more modules: verify, write, apply, read back, restore on failure."""
    from eqtune.errors import ProfileError
    from eqtune.session.profile import Profile
    from eqtune.session.push import push_profile

    prof = Profile.load(file)  # schema + digest: refused before any module is opened
    if require_signed:  # the signature too, before any module is opened
        from eqtune.session.signing import trusted_keys

        key = prof.verify_signature(trusted_keys(trusted_key))
        if not as_json:
            click.echo(f"signature ok: {prof.signature['algorithm']} key {key.key_id} ({key.source})")
    elif trusted_key:
        raise ProfileError("--trusted-key applies with --require-signed")

    def progress(r) -> None:
        if not as_json:
            click.echo(r.line())

    report = push_profile(prof, list(modules), dry_run=dry_run, force_identity=force_identity, jobs=jobs,
                          on_result=progress if jobs == 1 else None, allow_traffic_down=allow_traffic_down)
    if report_file:
        from eqtune.jsonutil import dumps
        from eqtune.session.nos_common import write_atomic

        write_atomic(report_file, dumps(report.to_dict(), indent=2) + "\n")
    bad = [r for r in report.results if not r.ok]
    failure = None if report.ok else ProfileError(
        f"{len(bad)} of {len(report.results)} module(s) did not take the profile "
        f"({', '.join(f'{r.resource}: {r.status}' for r in bad)}); see " + ("results" if as_json else "the lines above"))
    if as_json:
        echo_json_outcome(report.to_dict(), failure)  # one document, the failure inside it
        return
    if jobs > 1:
        for r in report.results:
            click.echo(r.line())
    click.echo("summary:")
    for line in report.summary_lines(prof):
        click.echo(f"  {line}")
    if failure is not None:
        raise failure


def _load_push_report(path: str) -> dict:
    """A ``profile push --json`` report, checked as the watch checks it (one line if it is not one)."""
    from eqtune.config_schema import validate
    from eqtune.errors import InputError
    from eqtune.session.nos_common import read_nos_json
    from eqtune.watch.targets import PUSH_REPORT_SCHEMA

    doc = read_nos_json(path, what="push report")
    validate(doc, PUSH_REPORT_SCHEMA, where=f"push report {path}", error=InputError)
    return doc


from eqtune.cli.profile_nos_cmd import diff, export, import_  # noqa: E402  (the NOS-format commands)

profile.add_command(export)
profile.add_command(import_)
profile.add_command(diff)
