"""``eqtune drivers``: the declarative instrument definitions (list, show) and a VISA scan.

pyvisa is imported only by ``scan`` (through eqtune.drivers.visa), never at import time.
"""

from __future__ import annotations

import click

from eqtune.cli._common import echo_json
from eqtune.textsafe import printable


@click.group(name="drivers")
def drivers() -> None:
    """Instrument driver definitions (drivers/*.toml): list, show, scan."""


def _load(directory: str | None):
    from eqtune.drivers.definition import load_definitions

    return load_definitions(directory)


@drivers.command("list")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help="Definitions folder (default: the shipped drivers/).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(directory: str | None, as_json: bool) -> None:
    """List the instrument definitions and what they match."""
    defs = _load(directory)
    rows = [
        {"name": d.name, "kind": d.kind, "vendor": d.vendor, "title": d.title, "idn_match": d.idn_match.pattern,
         "file": d.path.name, "properties": len(d.properties), "procedures": sorted(d.procedures),
         "unverified": d.unverified()}
        for d in defs
    ]
    if as_json:
        echo_json({"definitions": rows})
        return
    if not rows:
        click.echo("no definitions found")
        return
    w = max(len(r["name"]) for r in rows)
    for r in rows:
        un = r["unverified"]
        tail = f"  UNVERIFIED: {', '.join(un)}" if un else ""
        click.echo(f"{r['name']:<{w}}  {r['kind']:<5}  {r['title']}  [{r['file']}]{tail}")


@drivers.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_cmd(name: str, as_json: bool) -> None:
    """Show one definition: properties (SCPI, type, validator, reference) and procedures."""
    from eqtune.drivers.definition import find_definition

    d = find_definition(name)
    props = [
        {"name": p.name, "get": p.get, "set": p.set, "command": p.command, "type": p.type, "unit": p.unit,
         "validator": p.validator.describe(), "ref": p.ref, "unverified": p.unverified or None}
        for p in d.properties.values()
    ]
    procs = {k: [{"op": s.op, "target": s.target, "value": s.value, "store": s.store} for s in v]
             for k, v in d.procedures.items()}
    if as_json:
        echo_json({"name": d.name, "title": d.title, "kind": d.kind, "vendor": d.vendor, "reference": d.reference,
                   "idn_match": d.idn_match.pattern, "error_query": d.error_query, "file": str(d.path),
                   "properties": props, "procedures": procs})
        return
    click.echo(f"{d.name}: {d.title} ({d.kind})\n  file: {d.path}\n  reference: {d.reference}\n"
               f"  idn_match: /{d.idn_match.pattern}/   error query: {d.error_query}")
    for p in props:
        scpi = " | ".join(x for x in (p["get"], p["set"], p["command"]) if x)
        mark = f"   UNVERIFIED: {p['unverified']}" if p["unverified"] else ""
        click.echo(f"  {p['name']:<18} {p['type']:<6} {scpi}   ({p['validator']}){mark}")
    for k, steps in procs.items():
        click.echo(f"  procedure {k}: " + ", ".join(f"{s['op']} {s['target']}" for s in steps))


@drivers.command("scan")
@click.option("--resource", "resources", multiple=True, metavar="VISA",
              help="Also probe this resource, e.g. TCPIP::192.168.1.20::5025::SOCKET (repeatable).")
@click.option("--discover/--no-discover", default=True, show_default=True,
              help="Ask the VISA backend for resources (USB, GPIB, serial, LAN VXI-11/HiSLIP).")
@click.option("--timeout-ms", type=click.IntRange(50, 60000), default=2000, show_default=True,
              help="I/O timeout per instrument.")
@click.option("--backend", default="@py", show_default=True, help="pyvisa backend.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def scan_cmd(resources: tuple[str, ...], discover: bool, timeout_ms: int, backend: str, as_json: bool) -> None:
    """List VISA resources, query *IDN? and match each to a definition."""
    from eqtune.drivers.instrument import identify
    from eqtune.drivers.visa import VisaTransport, list_resources
    from eqtune.errors import InstrumentError

    defs = _load(None)
    found: list[str] = []
    notes: list[str] = []
    if discover:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                found = list(list_resources(backend=backend))
            except InstrumentError as exc:
                notes.append(str(exc))
        # pyvisa-py warns (stderr, with its source line) about optional discovery it cannot do, e.g.
        # HiSLIP discovery without the zeroconf package: one plain note instead
        for w in caught:
            if not issubclass(w.category, UserWarning):  # e.g. ResourceWarning: hidden by default, as before
                continue
            msg = str(w.message)
            if "zeroconf" in msg:
                msg = ("HiSLIP instruments are not discovered without the optional zeroconf package "
                       "(pip install zeroconf); give them with --resource TCPIP::HOST::hislip0::INSTR")
            notes.append(msg.split("...")[0].strip())
    order = list(dict.fromkeys([*found, *resources]))
    rows = []
    for res in order:
        row: dict = {"resource": res, "idn": None, "definition": None, "kind": None, "error": None,
                     "unverified": []}
        try:
            t = VisaTransport(res, timeout_ms=timeout_ms, open_timeout_ms=timeout_ms, backend=backend)
            try:
                row["idn"] = identify(t)
            finally:
                t.close()
            match = next((d for d in defs if d.matches(row["idn"])), None)
            if match is not None:
                row["definition"], row["kind"] = match.name, match.kind
                row["unverified"] = sorted(match.unverified())
            else:
                row["error"] = "no definition matches this IDN; add a drivers/*.toml with a fitting idn_match"
        except InstrumentError as exc:
            row["error"] = str(exc)
        rows.append(row)
    if as_json:
        echo_json({"resources": rows, "notes": notes})
        return
    for n in notes:
        click.echo(f"note: {n}", err=True)
    if not rows:
        click.echo("no VISA resources found; give raw-socket instruments with --resource TCPIP::HOST::PORT::SOCKET")
        return
    for r in rows:
        if r["definition"]:
            un = r["unverified"]
            note = (f"  [{len(un)} unverified command(s): {', '.join(un)}; check them on the instrument]"
                    if un else "")
            click.echo(printable(f"{r['resource']}  {r['definition']} ({r['kind']})  {r['idn']}{note}"))  # *IDN? is device text
        elif r["idn"]:
            click.echo(printable(f"{r['resource']}  (no definition)  {r['idn']}"))  # *IDN? is device text
        else:
            click.echo(printable(f"{r['resource']}  unreachable: {r['error']}"))  # *IDN? is device text
