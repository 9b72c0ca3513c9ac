"""What to watch: resources from the command line, a fleet CSV, or a ``profile push --json`` report.

Fleet CSV (header row, case-insensitive; extra columns kept as labels)::

    resource,server,port,lanes,channel,profile
    net:10.0.0.7:9000,gpu-rack3-07,osfp1,,c2m-10in,profiles/osfp-800g.json
    i2c:1@0x50,gpu-rack3-08,osfp2,1-4,,

Optional ``fec_source`` (a SONiC COUNTERS_DB JSON dump) and ``interface`` (the port's SONiC name, e.g.
``Ethernet0``) give the host's FEC counters of the module's port (eqtune/watch/hostfec.py).
``resource`` is required (``i2c:``, ``optoe:``, ``ftdi://``, ``net:``, ``emu:``); ``lanes`` (e.g.
``1-4`` or ``1,3``; default all), ``channel`` and ``profile`` feed the suggested re-tune command
(without ``channel``, the channel the profile was tuned on).
Several CSV rows with one resource merge their lanes. A push report (``eqtune profile push --json``)
gives its ``results[].resource`` (every module the profile went to).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from eqtune.config_schema import Field, Schema, validate
from eqtune.errors import InputError

_PUSH_HINT = "give the output of `eqtune profile push --json`"
PUSH_REPORT_SCHEMA = Schema((  # what `eqtune profile push --json` writes, as far as the watch reads it
    Field("results", "list", required=True, hint=_PUSH_HINT, items=Field("result", "table", hint=_PUSH_HINT, schema=Schema((
        Field("resource", "string", required=True, nonempty=True, hint=_PUSH_HINT),
        Field("status", "scalar", nullable=True)), extra="allow"))),
), extra="allow", hint=_PUSH_HINT)


@dataclass
class WatchTarget:
    """One module to poll: ``resource``, the ``lanes`` (None = all), and what the suggested action
    needs: ``channel`` (library name or file) and ``profile`` (path); ``labels`` from the CSV."""

    resource: str
    lanes: list[int] | None = None
    channel: str | None = None
    profile: str | None = None
    labels: dict[str, str] = field(default_factory=dict)


def parse_lanes(text: str, where: str) -> list[int] | None:
    """A lane selection as the watch stores it: None for every lane (empty or ``all``), else the sorted
    lanes, through :func:`eqtune.validate.parse_lanes`, the one lane parser of every command and file."""
    from eqtune.validate import parse_lanes as parse

    if not (text or "").strip():
        return None
    return parse(text, where) or None


MAX_INPUT_BYTES = 16 * 1024 * 1024


def _read_text(p: Path, what: str, hint: str) -> str:
    """A small UTF-8 text file (BOM allowed), or one line saying what is wrong with it."""
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{what} {p}: {exc.strerror or exc}; {hint}") from None
    if len(raw) > MAX_INPUT_BYTES:
        raise InputError(f"{what} {p}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MB; {hint}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {p}: not UTF-8 text (byte {exc.start}); save it as UTF-8 and {hint}") from None


def from_csv(path: str | Path) -> list[WatchTarget]:
    p = Path(path)
    text = _read_text(p, "fleet CSV", "give an existing UTF-8 CSV file")
    try:
        rows = list(csv.DictReader(text.splitlines()))
    except csv.Error as exc:
        raise InputError(f"fleet CSV {p}: {exc}; one row per module, fields under "
                         f"{csv.field_size_limit() // 1024} kB") from None
    if not rows:
        raise InputError(f"fleet CSV {p}: no rows; the first line is the header (resource,server,port,lanes,...)")
    header = {k.strip().lower(): k for k in rows[0] if k}
    if "resource" not in header:
        raise InputError(f"fleet CSV {p}: no 'resource' column (have: {', '.join(header) or 'none'}); "
                         "add the module resource of each row, e.g. net:HOST:PORT or i2c:1@0x50")
    targets: dict[str, WatchTarget] = {}
    for i, row in enumerate(rows, start=2):
        r = {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}
        res = r.get("resource", "")
        if not res:
            raise InputError(f"fleet CSV {p} line {i}: empty resource; give the module resource or delete the row")
        lanes = parse_lanes(r.get("lanes", ""), f"fleet CSV {p} line {i}")
        t = targets.get(res)
        if t is None:
            labels = {k: v for k, v in r.items() if k not in ("resource", "lanes", "channel", "profile") and v}
            channel, profile = r.get("channel") or None, r.get("profile") or None
            if profile and not channel:
                channel = _profile_channel(profile, p.parent, f"fleet CSV {p} line {i}")
            targets[res] = WatchTarget(res, lanes, channel, profile, labels)
        elif t.lanes is not None:
            t.lanes = None if lanes is None else sorted(set(t.lanes) | set(lanes))
    return list(targets.values())


def _profile_channel(profile: str, base: Path, where: str) -> str | None:
    """The channel a tuning profile was tuned on (for the suggested re-tune), relative paths from the CSV's folder."""
    from eqtune.errors import EqtuneError
    from eqtune.session.profile import Profile

    path = Path(profile)
    if not path.is_absolute() and not path.exists():
        path = base / path
    try:
        return Profile.load(path).channel
    except EqtuneError as exc:
        raise InputError(f"{where}: {exc}") from None


def from_push_report(path: str | Path) -> list[WatchTarget]:
    p = Path(path)
    text = _read_text(p, "push report", "give the file `eqtune profile push --json` wrote")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise InputError(f"push report {p}: nested too deeply; give the output of `eqtune profile push --json`") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"push report {p}: not JSON ({exc.msg} at line {exc.lineno}); give the output of "
                         "`eqtune profile push --json`") from None
    results = validate(doc, PUSH_REPORT_SCHEMA, where=f"push report {p}", error=InputError)["results"]
    seen: dict[str, WatchTarget] = {}
    for r in results:
        seen.setdefault(str(r["resource"]), WatchTarget(str(r["resource"]), labels={"push_status": str(r.get("status", ""))}))
    return list(seen.values())
