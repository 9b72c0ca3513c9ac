"""``eqtune profile export|import|diff``: profiles in the network OS's own files, and drift.

A push writes the module's volatile control sets; the NOS re-applies SI settings at every module
initialisation from its own files. ``export`` writes (or merges into) those files, ``import`` reads
them back into a profile, ``diff`` compares a profile or a NOS file with what modules hold now.
Every check (module maxima, advertised controls, lanes, vendor key) runs before any file is written.
"""

from __future__ import annotations

from typing import Any

import click

from eqtune.cli._common import echo_json

_FORMATS = ("sonic-optics-si", "sonic-media-settings", "fboss")


def nos_options(f: Any) -> Any:
    """The options that say where in the NOS file the settings go (shared by export/import/diff)."""
    opts = [
        click.option("--format", "fmt", type=click.Choice(_FORMATS), required=True,
                     help="sonic-optics-si (module EQ, optics_si_settings.json), sonic-media-settings (host TX FFE, "
                          "media_settings.json) or fboss (transceiverConfigOverrides)."),
        click.option("--port", "ports", multiple=True, metavar="N|A-B",
                     help="[SONiC] Physical port number(s) as in the platform files (repeat or 1-4,9)."),
        click.option("--lane-speed", type=int, default=None, metavar="GBPS",
                     help="[sonic-optics-si] Gb/s per host lane: the <N>G_SPEED key (800G over 8 lanes: 100; 1.6T: 200)."),
        click.option("--port-lanes", type=click.IntRange(1, 8), default=None, metavar="N",
                     help="Host lanes of the port (default: the module's with --module, else 8)."),
        click.option("--module", "module_res", default=None, metavar="RESOURCE",
                     help="Check against this module (read only): identity, advertised controls and maxima."),
        click.option("--vendor", default=None, help="Module vendor name (without --module, for host taps or imports)."),
        click.option("--pn", default=None, help="Module part number (without --module, for host taps or imports)."),
        click.option("--vendor-key", default=None, metavar="REGEX",
                     help="[sonic-optics-si] Vendor key to write or read instead of the module's VENDOR-PN."),
        click.option("--scope", type=click.Choice(["port", "global"]), default="port", show_default=True,
                     help="[sonic-optics-si] PORT_MEDIA_SETTINGS per port, or one GLOBAL_MEDIA_SETTINGS port range."),
        click.option("--application-code", "app_code", default=None, metavar="CODE",
                     help="[fboss] SMFMediaInterfaceCode of the override factor (DR4_800G, 0x77); default every module."),
        click.option("--tap-scale", type=int, default=None, metavar="N",
                     help="[sonic-media-settings] The platform SAI's integer for a tap weight of 1.0 (no default)."),
        click.option("--hex-bits", type=click.Choice(["8", "16", "32"]), default="32", show_default=True,
                     help="[sonic-media-settings] Two's complement width of the hex values."),
        click.option("--speed-key", default=None, metavar="IFACE",
                     help="[sonic-media-settings] Host interface layer, e.g. 800GAUI-8 (speed:<IFACE>)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _options(kw: dict[str, Any]) -> Any:
    from eqtune.session.nos import NosOptions
    from eqtune.session.nos_common import parse_ports
    from eqtune.session.nos_fboss import application_code

    return NosOptions(ports=parse_ports(kw["ports"]) if kw["ports"] else [], lane_speed_g=kw["lane_speed"],
                      scope=kw["scope"], vendor_key=kw["vendor_key"], app_code=application_code(kw["app_code"]),
                      tap_scale=kw["tap_scale"], hex_bits=int(kw["hex_bits"]), speed_key=kw["speed_key"])


def _facts(kw: dict[str, Any], *, profile: Any = None, doc_module: dict[str, Any] | None = None) -> Any:
    """The module facts: read from --module, else the profile's (or --vendor/--pn's) identity."""
    from eqtune.errors import InputError
    from eqtune.session.nos_common import facts_from_identity, facts_from_module

    if kw["module_res"]:
        from eqtune.drivers.cmis import open_module

        mod = open_module(kw["module_res"])
        try:
            facts = facts_from_module(mod, kw["module_res"])
        finally:
            mod.close()
        if kw["port_lanes"]:
            facts.lanes = min(facts.lanes, kw["port_lanes"])
        if profile is not None:
            mism = profile.identity_mismatches({"vendor": facts.vendor, "pn": facts.pn})
            if mism:
                raise InputError(f"the profile's vendor key does not match {kw['module_res']}: {'; '.join(mism)}; "
                                 "export a profile tuned on this module type")
        return facts
    ident = dict(doc_module or {})
    if profile is not None:
        ident = dict(profile.module)
    if kw["vendor"]:
        ident["vendor"] = kw["vendor"]
    if kw["pn"]:
        ident["pn"] = kw["pn"]
    if not ident.get("vendor") or not ident.get("pn"):
        raise InputError("give --module RESOURCE, or --vendor and --pn: the NOS files key settings by vendor and PN")
    return facts_from_identity(ident, kw["port_lanes"] or 8)


@click.command(name="export")
@click.argument("source", metavar="PROFILE")
@nos_options
@click.option("--out", default=None, metavar="FILE", help="Write a new NOS file.")
@click.option("--merge", default=None, metavar="FILE",
              help="Merge into this existing NOS file (others' entries kept); written in place unless --out.")
@click.option("--replace", is_flag=True, help="With --merge: replace eqtune's entries where the file holds other values.")
@click.option("--dry-run", is_flag=True, help="Check and show the result; write nothing.")
@click.option("--print", "show", is_flag=True, help="Print the resulting document.")
def export(source: str, out: str | None, merge: str | None, replace: bool, dry_run: bool, show: bool, **kw: Any) -> None:
    """Write a profile in the NOS's own format so it survives module resets.

    \b
    eqtune profile export p.json --format sonic-optics-si --port 5 --lane-speed 100 --out optics_si_settings.json
    eqtune profile export p.json --format sonic-optics-si --port 1-8 --lane-speed 100 --merge device/.../optics_si_settings.json
    eqtune profile export p.json --format fboss --application-code DR4_800G --out qsfp_overrides.json
    eqtune profile export taps.json --format sonic-media-settings --port 5 --tap-scale 168 --vendor ACME --pn X --out m.json
    """
    from eqtune.errors import ProfileError
    from eqtune.session.nos import SONIC_MEDIA, export_to_file

    opts = _options(kw)
    if kw["fmt"] == SONIC_MEDIA:
        from eqtune.session.nos_common import read_nos_json
        from eqtune.session.nos_sonic_media import load_host_taps

        doc = read_nos_json(source, what="host TX FFE file")
        facts = _facts(kw, doc_module=doc.get("module") if isinstance(doc.get("module"), dict) else None)
        src: Any = load_host_taps(doc, facts.lanes, where=source)
    else:
        from eqtune.session.profile import Profile

        src = Profile.load(source)
        facts = _facts(kw, profile=src)
    res = export_to_file(kw["fmt"], src, facts, opts, out=out, merge=merge, replace=replace, dry_run=dry_run)
    for line in res.lines:
        click.echo(line)
    if show:
        click.echo(res.text, nl=False)
    if res.written:
        checked = (f"vendor key for {facts.vendor} {facts.pn}, {facts.lanes} lanes" if kw["fmt"] == SONIC_MEDIA
                   else f"checked against {facts.source}")
        click.echo(f"wrote {res.written} ({kw['fmt']}, {checked})")
    if res.conflicts:
        raise ProfileError(f"{res.conflicts} conflict(s) with the existing file; nothing written (see the diff above)")


@click.command(name="import")
@click.argument("nos_file", metavar="NOS_FILE")
@nos_options
@click.option("--out", required=True, metavar="FILE", help="Profile (or, for media settings, host TX FFE) file to write.")
def import_(nos_file: str, out: str, **kw: Any) -> None:
    """Read what the NOS would apply to one module from its file into an eqtune profile."""
    from eqtune.session.nos import SONIC_MEDIA, import_codes

    opts = _options(kw)
    facts = _facts(kw)
    codes, notes = import_codes(kw["fmt"], nos_file, facts, opts)
    for n in notes:
        click.echo(f"note: {n}")
    if kw["fmt"] == SONIC_MEDIA:
        from eqtune.session.nos_common import render_nos_json, write_atomic
        from eqtune.session.nos_sonic_media import HostTxScaling, host_tx_document

        doc = host_tx_document(codes, vendor=facts.vendor, pn=facts.pn, source=nos_file,
                               scaling=HostTxScaling(int(opts.tap_scale), opts.hex_bits))
        path = write_atomic(out, render_nos_json(doc))
        click.echo(f"host TX FFE taps: {path} (lanes {','.join(map(str, sorted(codes)))})")
        return
    from eqtune.session.profile import Profile

    prof = Profile.from_identity({"vendor": facts.vendor, "pn": facts.pn}, codes, link={"imported_from": nos_file})
    path = prof.save(out)
    click.echo(f"profile: {path} ({prof.describe_module()}, lanes {','.join(map(str, sorted(codes)))}, "
               f"sha256 {prof.digest[:16]}...)")


@click.command(name="diff")
@click.argument("source", metavar="PROFILE_OR_NOS_FILE")
@click.argument("resources", nargs=-1, metavar="[RESOURCE]...")
@click.option("--fleet", default=None, metavar="CSV", help="Modules from a fleet CSV (resource,...,port,...).")
@click.option("--from-push", "push_report", default=None, metavar="REPORT", help="Modules of a `profile push --json` report.")
@click.option("--format", "fmt", type=click.Choice(("sonic-optics-si", "fboss")), default=None,
              help="SOURCE is a NOS file of this format (default: an eqtune profile).")
@click.option("--port", "port", type=int, default=None, metavar="N",
              help="[sonic-optics-si] Physical port of every module (default: the fleet CSV's port column digits).")
@click.option("--lane-speed", type=int, default=None, metavar="GBPS", help="[sonic-optics-si] Gb/s per host lane.")
@click.option("--application-code", "app_code", default=None, metavar="CODE", help="[fboss] Override factor.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def diff(source: str, resources: tuple[str, ...], fleet: str | None, push_report: str | None, fmt: str | None,
         port: int | None, lane_speed: int | None, app_code: str | None, as_json: bool) -> None:
    """Which modules (per lane) no longer hold a profile's or a NOS file's codes. Read only.

    Exits 1 when any module drifted, 0 when all hold the codes."""
    from eqtune.session.nos_drift import drift_report

    targets = _targets(resources, fleet=fleet, push_report=push_report, port=port)
    rows = drift_report(source, targets, fmt=fmt, lane_speed_g=lane_speed, app_code=app_code)
    drifted = [r for r in rows if r.state != "holds"]
    if as_json:
        echo_json({"source": source, "modules": [r.to_dict() for r in rows], "drifted": len(drifted)})
    else:
        for r in rows:
            click.echo(r.line())
        click.echo(f"{len(rows) - len(drifted)} of {len(rows)} module(s) hold the codes; {len(drifted)} drifted"
                   + (": " + ", ".join(r.resource for r in drifted) if drifted else ""))
    if drifted:
        raise SystemExit(1)


def _targets(resources: tuple[str, ...], *, fleet: str | None, push_report: str | None,
             port: int | None) -> list[tuple[str, int | None]]:
    """(resource, physical port) of every module to compare: arguments, a fleet CSV (its ``port``
    column's digits, e.g. osfp5 -> 5, unless --port) and a push report; each resource once."""
    import re

    from eqtune.errors import InputError
    from eqtune.watch.targets import from_csv, from_push_report

    out: dict[str, int | None] = {r: port for r in resources}
    if fleet:
        for t in from_csv(fleet):
            m = re.search(r"([0-9]+)$", t.labels.get("port", "") or "")
            out.setdefault(t.resource, port if port is not None else (int(m.group(1)) if m else None))
    if push_report:
        for t in from_push_report(push_report):
            out.setdefault(t.resource, port)
    if not out:
        raise InputError("give modules to compare: RESOURCE arguments, --fleet CSV or --from-push REPORT")
    return list(out.items())
