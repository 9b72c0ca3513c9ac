"""Fleet studies: a CSV of links (server, port, lane, host trace, module PN) -> one profile per module.

CSV columns (header row required, case-insensitive, extra columns are kept as link metadata):

=================  ========  ==========================================================
column             required  meaning
=================  ========  ==========================================================
server             yes       host name or asset tag
port               yes       cage/port name on that server
lane               yes       CMIS lane 1..8
host_trace_in      one of    host PCB trace length from the SerDes to the cage (inch)
host_trace_mm      one of    the same in mm
module_pn          yes       module part number (groups lanes into one module profile)
material           no        PCB material of the host trace (channel library material name)
temperature_c      no        trace temperature (C) for this link
module_vendor      no        module vendor (the profile's identity; ``profile push`` checks it, so give it)
module_sn          no        module serial number (pins the profile to one module)
channel            no        base channel whose host trace is replaced (default: [fleet] base, c2m-10in)
=================  ========  ==========================================================

A malformed row does not stop the study: it is reported as ``"<file> row N (line L) field F: ..."`` and
the other rows are studied. A module profile is written only for modules whose lanes all computed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eqtune.config_schema import Field, Schema, validate
from eqtune.errors import ConfigError
from eqtune.jsonutil import finite_or_none

REQUIRED = ("server", "port", "lane", "module_pn")
OPTIONAL = ("host_trace_in", "host_trace_mm", "material", "temperature_c", "module_vendor", "module_sn",
            "channel")
DEFAULT_BASE = "c2m-10in"
FLEET_SCHEMA = Schema((  # the [fleet] table of a study spec
    Field("csv", "string", required=True, nonempty=True, hint="give the path of the links CSV"),
    Field("base", "string", nonempty=True, default=DEFAULT_BASE),
    Field("material", "string", nonempty=True),
))
FLEET_KEYS = FLEET_SCHEMA.names
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _row_error(src: str, row: int, line: int, field: str, msg: str) -> str:
    return f"{src} row {row} (line {line}) field {field!r}: {msg}"


def parse_fleet_rows(text: str, *, source: str = "fleet.csv", base: str = DEFAULT_BASE,
                     material: str | None = None):
    """Parse fleet CSV text -> (links, errors).

    ``links`` is a list of ``(ChannelRef, link_metadata_tuple)``; ``errors`` a list of messages naming
    the row (1 = first data row), its line in the file and the field.
    """

    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise ConfigError(f"{source}: empty file; the first line must be a header "
                          f"({', '.join(REQUIRED)}, host_trace_in, ...)") from None
    header = [h.strip().lower() for h in header]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ConfigError(f"{source} line 1 (header): missing column {missing[0]!r}; required: "
                          f"{', '.join(REQUIRED)} and host_trace_in or host_trace_mm")
    if "host_trace_in" not in header and "host_trace_mm" not in header:
        raise ConfigError(f"{source} line 1 (header): missing column 'host_trace_in' (or 'host_trace_mm')")
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise ConfigError(f"{source} line 1 (header): column {dup!r} appears twice")

    links: list = []
    errors: list[str] = []
    seen: dict[tuple[str, str, int], int] = {}
    row_no = 0
    for fields in reader:
        line = reader.line_num
        if not fields or all(not f.strip() for f in fields) or fields[0].lstrip().startswith("#"):
            continue
        row_no += 1
        if len(fields) < len(header):
            errors.append(_row_error(source, row_no, line, header[len(fields)],
                                     f"missing: the row has {len(fields)} of {len(header)} fields"))
            continue
        if len(fields) > len(header):
            errors.append(_row_error(source, row_no, line, f"#{len(header) + 1}",
                                     f"extra field {fields[len(header)]!r}: the header has {len(header)} columns"))
            continue
        rec = {h: f.strip() for h, f in zip(header, fields)}
        try:
            link, ch = _link_from_record(rec, base=base, material=material)
        except _FieldError as exc:
            errors.append(_row_error(source, row_no, line, exc.field, exc.msg))
            continue
        key = (rec["server"], rec["port"], int(rec["lane"]))
        if key in seen:
            errors.append(_row_error(source, row_no, line, "lane",
                                     f"server {key[0]} port {key[1]} lane {key[2]} already given in row {seen[key]}"))
            continue
        seen[key] = row_no
        links.append((ch, tuple(sorted(link.items()))))
    return links, errors


class _FieldError(Exception):
    def __init__(self, field: str, msg: str):
        super().__init__(msg)
        self.field, self.msg = field, msg


def _num(rec: Mapping[str, str], key: str, *, lo: float, hi: float) -> float:
    raw = rec.get(key, "")
    try:
        value = float(raw)
    except ValueError:
        raise _FieldError(key, f"expected a number, got {raw!r}") from None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise _FieldError(key, f"{value:g} is outside {lo:g}..{hi:g}")
    return value


def _link_from_record(rec: dict[str, str], *, base: str, material: str | None):
    from eqtune.study.spec import ChannelRef

    for key in ("server", "port", "module_pn"):
        if not rec.get(key):
            raise _FieldError(key, "empty; every link needs a server, port and module_pn")
    lane_raw = rec.get("lane", "")
    if not lane_raw.isdigit() or not 1 <= int(lane_raw) <= 8:
        raise _FieldError("lane", f"expected a CMIS lane 1..8, got {lane_raw!r}")
    params: list[tuple[str, Any]] = []
    if rec.get("host_trace_in"):
        params.append(("length_in", _num(rec, "host_trace_in", lo=0.1, hi=60)))
    elif rec.get("host_trace_mm"):
        params.append(("length_mm", _num(rec, "host_trace_mm", lo=1, hi=1500)))
    else:
        raise _FieldError("host_trace_in", "empty; give the host trace length in inch (or host_trace_mm)")
    mat = rec.get("material") or material
    if mat:
        params.append(("material", mat))
    if rec.get("temperature_c"):
        params.append(("temperature_c", _num(rec, "temperature_c", lo=-60, hi=150)))
    link = {k: v for k, v in rec.items() if v != ""}
    label = f"{rec['server']}/{rec['port']}/lane{int(lane_raw)}"
    base_ref = rec.get("channel") or base
    if rec.get("channel"):
        from eqtune.resources import channels_dir

        lib = {p.stem for p in channels_dir().glob("*.toml")}
        if base_ref not in lib:
            raise _FieldError("channel", f"{base_ref!r} is not a library channel ({', '.join(sorted(lib))})")
    return link, ChannelRef(label, "parametric", base_ref, tuple(params))


def parse_fleet_table(table: Any, *, base_dir: Path):
    """The ``[fleet]`` table of a spec -> (links, row errors). ``csv`` is relative to the spec."""
    from eqtune.study.spec import _resolve_file

    table = validate(table, FLEET_SCHEMA, where="", path="fleet")
    path = _resolve_file(table["csv"], base_dir, "fleet.csv")
    base = table["base"]
    if base.endswith(".toml") or "/" in base:
        base = _resolve_file(base, base_dir, "fleet.base")
    material = table.get("material")
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text CSV file") from None
    return parse_fleet_rows(text, source=Path(path).name, base=base, material=material)


# --------------------------------------------------------------------------- profiles


def _safe(text: str) -> str:
    return _SAFE.sub("_", text).strip("_") or "x"


def module_profiles(rows: Iterable[Mapping[str, Any]], *, study: str) -> tuple[list[dict], list[str]]:
    """Group finished fleet rows by (server, port, module_pn) -> profile documents.

    Uses the robust codes (tuned over every corner). Returns (profiles, skipped) where ``skipped``
    names modules left out because a lane failed to compute.
    """
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        link = json.loads(r.get("link") or "{}")
        if not link:
            continue
        groups.setdefault((link["server"], link["port"], link["module_pn"]), []).append(r)
    profiles, skipped = [], []
    for (server, port, pn), lanes in sorted(groups.items()):
        bad = [r for r in lanes if r.get("status") != "ok"]
        if bad:
            lane = json.loads(bad[0]["link"])["lane"]
            skipped.append(f"{server}/{port} ({pn}): lane {lane} did not compute: {bad[0].get('error', '')}")
            continue
        profiles.append(_profile_doc(server, port, pn, lanes, study=study))
    return profiles, skipped


def _profile_doc(server: str, port: str, pn: str, lanes: list[Mapping[str, Any]], *, study: str) -> dict:
    first = json.loads(lanes[0]["link"])
    per_lane: dict[str, dict[str, int | float]] = {}
    margins: dict[str, dict[str, Any]] = {}
    for r in sorted(lanes, key=lambda r: int(json.loads(r["link"])["lane"])):
        lane = str(int(json.loads(r["link"])["lane"]))
        codes = json.loads(r["robust_codes"] or r["tuned_codes"] or "{}")
        per_lane[lane] = {k: (int(v) if float(v).is_integer() else float(v)) for k, v in codes.items()}
        margins[lane] = {"baseline": finite_or_none(r.get("baseline_margin")), "robust_worst": finite_or_none(r.get("robust_margin")),
                         "verdict": r.get("verdict")}
    doc = {
        "identity": {"vendor": first.get("module_vendor", ""), "pn": pn, "sn": first.get("module_sn", "")},
        "lanes": per_lane,
        "link": {"server": server, "port": port, "channel": lanes[0].get("channel", "")},
        "margins": margins,
        "source": {"kind": "study", "study": study},
    }
    return doc




def profile_filename(doc: Mapping[str, Any]) -> str:
    return f"{_safe(doc['link']['server'])}_{_safe(doc['link']['port'])}_{_safe(doc['identity']['pn'])}.json"


def write_module_profiles(out_dir: Path, rows: Iterable[Mapping[str, Any]], *, study: str,
                          ) -> tuple[list[Path], list[str]]:
    """Write one ``eqtune.profile`` document per module into ``out_dir/profiles/``.

    The files are ``eqtune.session.profile.Profile`` documents (schema, digest), so
    ``eqtune profile show|verify|push`` accept them. Only module (CMIS) knobs go into a profile.
    """
    from eqtune.session.profile import KNOBS, Profile

    profiles, skipped = module_profiles(rows, study=study)
    target = Path(out_dir) / "profiles"
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for doc in profiles:
        lanes = {int(lane): {k: int(v) for k, v in codes.items() if k in KNOBS}
                 for lane, codes in doc["lanes"].items()}
        if not all(lanes.values()):
            skipped.append(f"{doc['link']['server']}/{doc['link']['port']} ({doc['identity']['pn']}): "
                           f"no module knob tuned ({', '.join(KNOBS)}); nothing to push")
            continue
        ident = doc["identity"]
        prof = Profile.from_identity(
            {"vendor": ident["vendor"] or "unknown", "pn": ident["pn"], "sn": ident["sn"]}, lanes,
            pin_serial=bool(ident["sn"]), channel=doc["link"]["channel"] or None,
            link={"server": doc["link"]["server"], "port": doc["link"]["port"], "study": study},
            margins={int(k): v for k, v in doc["margins"].items()}, session=None)
        written.append(prof.save(target / profile_filename(doc)))
    return written, skipped
