"""Profiles to and from the network OS's own files: what ``eqtune profile export|import`` run.

Formats (:data:`FORMATS`): ``sonic-optics-si`` (module EQ, :mod:`eqtune.session.nos_sonic`),
``sonic-media-settings`` (host SerDes TX FFE, :mod:`eqtune.session.nos_sonic_media`) and ``fboss``
(module Rx EQ, :mod:`eqtune.session.nos_fboss`). Every export and import is checked against the target
module (:class:`~eqtune.session.nos_common.ModuleFacts`) before any file is written; a merge into an
existing file changes only eqtune's entries (:mod:`eqtune.session.nos_merge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.session.nos_common import (
    ModuleFacts,
    NosFormatError,
    read_nos_json,
    render_nos_json,
    write_atomic,
)

SONIC_SI = "sonic-optics-si"
SONIC_MEDIA = "sonic-media-settings"
FBOSS = "fboss"
FORMATS = (SONIC_SI, SONIC_MEDIA, FBOSS)


@dataclass
class NosOptions:
    """Where the settings go: physical ports, host lane speed, scope, keys and scaling."""

    ports: list[int] = field(default_factory=list)
    lane_speed_g: int | None = None  # SONiC optics SI: Gb/s per host lane (800G/8 = 100)
    scope: str = "port"  # SONiC optics SI: port (PORT_MEDIA_SETTINGS) or global (GLOBAL_MEDIA_SETTINGS)
    vendor_key: str | None = None  # SONiC optics SI: a regex instead of the literal VENDOR-PN
    app_code: int | None = None  # FBOSS: SMFMediaInterfaceCode of the override factor (None = every module)
    tap_scale: int | None = None  # SONiC media settings: SAI integer per tap weight 1.0
    hex_bits: int = 32
    speed_key: str | None = None  # SONiC media settings: host interface, e.g. 800GAUI-8


@dataclass
class ExportOutcome:
    text: str  # the document that was (or, with conflicts, would be) written
    lines: list[str]  # what happened, for the user
    written: Path | None
    conflicts: int = 0


def _need(value: Any, option: str, fmt: str, hint: str) -> Any:
    if value is None or value == []:
        raise NosFormatError(f"--format {fmt} needs {option} ({hint})")
    return value


def export_document(fmt: str, source: Any, facts: ModuleFacts, opts: NosOptions) -> tuple[Any, list[str]]:
    """The export object of ``fmt`` (a SonicExport or FbossExport) and its notes. ``source`` is a
    Profile (optics SI, FBOSS) or per-lane host taps (media settings)."""
    if fmt == SONIC_SI:
        from eqtune.session.nos_sonic import export_optics_si

        _need(opts.ports, "--port", fmt, "physical port numbers as in the platform files, e.g. 5 or 1-8")
        speed = _need(opts.lane_speed_g, "--lane-speed", fmt, "Gb/s per host lane: 100 for 800G over 8 lanes")
        exp = export_optics_si(source.codes(), facts, ports=opts.ports, lane_speed_g=speed, scope=opts.scope,
                               vendor_key=opts.vendor_key)
        if source.module.get("sn"):
            exp.notes.append(f"the profile is pinned to SN {source.module['sn']}; SONiC cannot match a serial")
        return exp, exp.notes
    if fmt == SONIC_MEDIA:
        from eqtune.session.nos_sonic_media import HostTxScaling, export_media_settings

        _need(opts.ports, "--port", fmt, "physical port numbers")
        scale = _need(opts.tap_scale, "--tap-scale", fmt,
                      "the platform SAI's integer for a tap weight of 1.0; it is platform-specific")
        exp = export_media_settings(source, vendor=facts.vendor, pn=facts.pn, ports=opts.ports, port_lanes=facts.lanes,
                                    scaling=HostTxScaling(scale, opts.hex_bits), speed=opts.speed_key)
        return exp, exp.notes
    if fmt == FBOSS:
        from eqtune.session.nos_fboss import export_fboss

        fexp = export_fboss(source.codes(), facts, app_code=opts.app_code)
        return fexp, fexp.notes
    raise NosFormatError(f"--format {fmt!r}: give one of {', '.join(FORMATS)}")


def export_to_file(fmt: str, source: Any, facts: ModuleFacts, opts: NosOptions, *, out: str | None,
                   merge: str | None = None, replace: bool = False, dry_run: bool = False) -> ExportOutcome:
    """Export, merge into ``merge`` when given, check the NOS's lookup selects eqtune's entries, and
    write ``out`` (default: the merged file itself) unless there is a conflict or ``dry_run``."""
    exp, notes = export_document(fmt, source, facts, opts)
    lines = [f"note: {n}" for n in notes]
    if merge is None:
        doc = exp.doc
        conflicts = 0
    else:
        existing = read_nos_json(merge, what=f"{fmt} file")
        doc, more, conflicts = _merge(fmt, existing, exp, facts, opts, replace=replace)
        lines += more
    text = render_nos_json(doc)
    target = out or merge
    if target is None:
        raise NosFormatError("give --out FILE (a new file) or --merge FILE (an existing file to add to)")
    if conflicts:
        lines.append(f"{conflicts} conflict(s): nothing written (the file keeps its entries; --replace writes eqtune's)")
        return ExportOutcome(text, lines, None, conflicts)
    if dry_run:
        lines.append(f"dry run: would write {target}")
        return ExportOutcome(text, lines, None)
    return ExportOutcome(text, lines, write_atomic(target, text))


def _merge(fmt: str, existing: dict[str, Any], exp: Any, facts: ModuleFacts, opts: NosOptions, *,
           replace: bool) -> tuple[dict[str, Any], list[str], int]:
    from eqtune.session.nos_merge import check_selected, merge_entries

    if fmt == FBOSS:
        from eqtune.session.nos_fboss import merge_fboss

        fm = merge_fboss(existing, exp, app_code=opts.app_code, replace=replace)
        lines = [f"{fm.action} override {exp.override['factor'] or '(every module)'}"]
        if fm.conflict is not None:
            lines = ["CONFLICT: an override with the same factor holds other values (kept; --replace to write eqtune's):"]
            lines += [f"    {ln}" for ln in fm.conflict.lines()]
        return fm.doc, lines, int(fm.action == "conflict")
    res = merge_entries(existing, exp.doc, exp.entries, replace=replace)
    if not res.conflicts:
        if fmt == SONIC_SI:
            from eqtune.session.nos_sonic import check_top_level, module_key, resolve_optics_si

            check_top_level(existing, where=f"{fmt} merge")
            key, vname = module_key(facts.vendor, facts.pn), facts.vendor.upper().strip()
            speed = int(opts.lane_speed_g or 0)
            by_port = {int(p): e for e in exp.entries for p in _entry_ports(e[1])}
            check_selected(res.doc, exp.ports, lambda p: by_port[p],
                           lambda d, p: resolve_optics_si(d, p, speed, key, vname)[1], what=f"{fmt} merge")
        else:
            from eqtune.session.nos_sonic_media import ANY_MEDIUM, resolve_media

            key = facts.vendor.upper() + "-" + facts.pn
            by_port = {int(e[1]): e for e in exp.entries}
            check_selected(res.doc, exp.ports, lambda p: by_port[p],
                           lambda d, p: resolve_media(d, p, key, opts.speed_key, ANY_MEDIUM)[1], what=f"{fmt} merge",
                           fix="edit that entry by hand (it matches this module's medium and lane speed, or its vendor)")
    return res.doc, res.lines(), len(res.conflicts)


def _entry_ports(key: str) -> list[int]:
    """The ports of a GLOBAL_MEDIA_SETTINGS key such as "1-4,9"."""
    from eqtune.session.nos_common import parse_ports

    return parse_ports(key)


def import_codes(fmt: str, path: str, facts: ModuleFacts, opts: NosOptions) -> tuple[Any, list[str]]:
    """Module codes per lane (optics SI, FBOSS) or host taps per lane (media settings) that the NOS
    would apply from ``path`` to the module ``facts`` describes, with notes."""
    if len(opts.ports) > 1:
        raise NosFormatError(f"--port {','.join(map(str, opts.ports))}: an import reads one port; give one --port")
    doc = read_nos_json(path, what=f"{fmt} file")
    if fmt == SONIC_SI:
        from eqtune.session.nos_sonic import import_optics_si

        port = _need(opts.ports, "--port", fmt, "the physical port to read")
        speed = _need(opts.lane_speed_g, "--lane-speed", fmt, "Gb/s per host lane")
        codes, where = import_optics_si(doc, facts, port=port[0], lane_speed_g=speed, vendor_key=opts.vendor_key)
        return codes, [f"read {' / '.join(where)}"]
    if fmt == SONIC_MEDIA:
        from eqtune.session.nos_sonic_media import HostTxScaling, import_media_settings

        port = _need(opts.ports, "--port", fmt, "the physical port to read")
        scale = _need(opts.tap_scale, "--tap-scale", fmt, "the platform SAI's integer for a tap weight of 1.0")
        return import_media_settings(doc, vendor=facts.vendor, pn=facts.pn, port=port[0], port_lanes=facts.lanes,
                                     scaling=HostTxScaling(scale, opts.hex_bits), speed=opts.speed_key)
    if fmt == FBOSS:
        from eqtune.session.nos_fboss import import_fboss

        return import_fboss(doc, facts, app_code=opts.app_code), []
    raise NosFormatError(f"--format {fmt!r}: give one of {', '.join(FORMATS)}")
