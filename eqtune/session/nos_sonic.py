"""SONiC ``optics_si_settings.json``: the module EQ xcvrd stages at every CMIS initialisation.

xcvrd's CmisManagerTask, in its AP_CONFIGURED state, computes the host lane speed
``int(speed/1000) // host_lane_count`` (800G over 8 lanes: 100; 1.6T over 8: 200), fetches the module's
settings for its physical port and ``<N>G_SPEED`` key, stages them in the Staged Control Set and
applies them with ApplyDPInit and ExplicitControl = 1 (sonic-platform-daemons f4713bc5,
sonic-xcvrd/xcvrd/cmis/cmis_manager_task.py lines 1153-1177). The file::

    {"GLOBAL_MEDIA_SETTINGS": {"1-12,17": {"100G_SPEED": {"ACME-PN1": ENTRY, "Default": ENTRY}}},
     "PORT_MEDIA_SETTINGS":   {"5":       {"100G_SPEED": {"ACME-PN1": ENTRY}}}}
    ENTRY = {"OutputEqPreCursorTargetRx": {"OutputEqPreCursorTargetRx1": 2, ..., "...Rx8": 2}, ...}

Lookup (sonic-xcvrd/xcvrd/xcvrd_utilities/optics_si_parser.py, same commit): GLOBAL first, only keys
with a range or a comma (lines 62-77; a bare "5" there is never read), then PORT (lines 110-114); in
each, the first vendor key, in file order, that ``re.fullmatch``-es "VENDOR-PN", the vendor name
before the first "-", or the vendor name (lines 26-32; VENDOR and PN upper-cased and stripped,
line 177); else that speed's ``Default``. A GLOBAL vendor match beats any PORT entry (lines 152-158).

Parameter names and their 1-based lane suffixes are those the staging code reads
(sonic-platform-common 8607c9f3, sonic_platform_base/sonic_xcvr/api/public/cmis.py lines 2653-2822):
for every lane of the port's host lane mask it reads ``PARAM<lane>`` (a missing lane is a KeyError, line 2662),
refuses a value above the module's advertised maximum (lines 2682, 2701, 2720, 2739) and returns
False for an unknown parameter (lines 2795-2796, 2818-2819); a False makes xcvrd re-initialise the
port (cmis_manager_task.py lines 1169-1172). eqtune therefore writes every lane of the port and
refuses, before writing, what the staging would refuse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ
from eqtune.session.nos_common import ModuleFacts, NoEntryError, NosFormatError, port_ranges

GLOBAL = "GLOBAL_MEDIA_SETTINGS"
PORT = "PORT_MEDIA_SETTINGS"
DEFAULT = "Default"

#: eqtune knob -> SONiC parameter (sonic_xcvr/fields/consts.py lines 359, 374, 387, 400)
SI_PARAM: dict[str, str] = {
    RX_PRE: "OutputEqPreCursorTargetRx",
    RX_POST: "OutputEqPostCursorTargetRx",
    RX_AMP: "OutputAmplitudeTargetRx",
    TX_EQ: "FixedInputEqTargetTx",
}
PARAM_KNOB = {v: k for k, v in SI_PARAM.items()}
#: a fixed Tx input EQ code acts only with adaptive EQ off (AdaptiveInputEqEnableTx, CMIS Page 10h byte 153):
#: eqtune writes 0 on every lane whose tx_eq it sets, as `profile push` switches adaptive EQ off
ADAPTIVE_ENABLE = "AdaptiveInputEqEnableTx"
#: parameters SONiC stages that an eqtune profile does not carry (consts.py lines 348, 372-373)
NOT_IN_PROFILES = ("AdaptiveInputEqRecalledTx", "CDREnableTx", "CDREnableRx")
KNOWN_PARAMS = (*SI_PARAM.values(), ADAPTIVE_ENABLE, *NOT_IN_PROFILES)
_LANE_KEY = re.compile(r"([A-Za-z]+?)([1-9][0-9]*)")
_REGEX_META = set(".^$*+?{}[]\\|()")


def speed_key(lane_speed_g: int) -> str:
    """``"100G_SPEED"``: the key for a host lane speed in Gb/s (optics_si_parser.py line 56)."""
    return f"{int(lane_speed_g)}G_SPEED"


def module_key(vendor: str, pn: str) -> str:
    """The string SONiC matches vendor keys against: "VENDOR-PN", upper-cased and stripped
    (optics_si_parser.py line 177)."""
    return vendor.upper().strip() + "-" + pn.upper().strip()


def regex_literal(text: str) -> str:
    """``text`` as a pattern that matches exactly it (only regex metacharacters escaped, so an
    ordinary "ACME-PN1" stays readable as the platform files write it)."""
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def key_matches(dict_key: str, key: str, vendor_name: str) -> bool:
    """SONiC's vendor-key rule (optics_si_parser.py lines 26-39): full regex match of the module key,
    of its part before the first "-", or of the vendor name; equality when the key is no regex."""
    try:
        return bool(re.fullmatch(dict_key, key) or re.fullmatch(dict_key, key.split("-")[0])
                    or re.fullmatch(dict_key, vendor_name))
    except re.error:
        return dict_key in (key, key.split("-")[0], vendor_name)


# ---------------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------------
@dataclass
class SonicExport:
    """A document in the NOS's format and where eqtune's own entries are in it."""

    doc: dict[str, Any]
    entries: list[tuple[str, ...]]  # key paths of eqtune's entries (what a merge may add or replace)
    notes: list[str] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)


def si_entry(codes: Mapping[int, Mapping[str, int]], facts: ModuleFacts, *, where: str) -> dict[str, dict[str, int]]:
    """The parameter block for one module: every knob the profile sets, on every lane of the port.

    Refuses (one line) a lane beyond the port, a knob set on some lanes only (SONiC reads every lane
    of the port, cmis.py line 2663), a control the module does not advertise and a code above its
    maximum."""
    for lane in codes:
        if lane < 1 or lane > facts.lanes:
            raise NosFormatError(f"{where}: the profile sets lane {lane}, beyond the port's {facts.lanes} lanes "
                                 f"({facts.source}); use --port-lanes or a profile for this module")
    knobs = [k for k in SI_PARAM if any(k in c for c in codes.values())]
    lanes = range(1, facts.lanes + 1)
    out: dict[str, dict[str, int]] = {}
    for knob in knobs:
        missing = [ln for ln in lanes if knob not in codes.get(ln, {})]
        if missing:
            raise NosFormatError(f"{where}: the profile sets {knob} on some lanes but not on lane(s) "
                                 f"{','.join(map(str, missing))}; SONiC stages every lane of the port: "
                                 "save a profile with every lane, or give --port-lanes")
        for ln in lanes:
            facts.check_code(knob, ln, int(codes[ln][knob]), where=where)
        param = SI_PARAM[knob]
        out[param] = {f"{param}{ln}": int(codes[ln][knob]) for ln in lanes}
    if TX_EQ in knobs:
        out[ADAPTIVE_ENABLE] = {f"{ADAPTIVE_ENABLE}{ln}": 0 for ln in lanes}
    if not out:
        raise NosFormatError(f"{where}: the profile sets no module code SONiC can stage")
    return out


def check_vendor_key(vendor_key: str, facts: ModuleFacts, *, where: str) -> None:
    """A vendor key must select the module it was tuned on, by SONiC's own rule."""
    key = module_key(facts.vendor, facts.pn)
    if not key_matches(vendor_key, key, facts.vendor.upper().strip()):
        raise NosFormatError(f"{where}: vendor key {vendor_key!r} does not match the module "
                             f"{key!r} ({facts.source}); SONiC would never apply it to this module: "
                             "give the module's VENDOR-PN")


def export_optics_si(codes: Mapping[int, Mapping[str, int]], facts: ModuleFacts, *, ports: list[int],
                     lane_speed_g: int, scope: str = "port", vendor_key: str | None = None) -> SonicExport:
    """``optics_si_settings.json`` content for the module ``facts`` describes on ``ports``.

    ``scope="port"``: one PORT_MEDIA_SETTINGS entry per port; ``"global"``: one GLOBAL_MEDIA_SETTINGS
    entry for the port ranges. The vendor key is the module's literal "VENDOR-PN" unless
    ``vendor_key`` (a SONiC regex) is given; it must match the module either way."""
    where = "sonic-optics-si export"
    if lane_speed_g not in (10, 25, 50, 100, 200, 400):
        raise NosFormatError(f"{where}: --lane-speed {lane_speed_g} is not a host lane speed; give the port "
                             "speed over its host lanes in Gb/s (800G over 8 lanes: 100, 1.6T over 8: 200)")
    key = vendor_key or regex_literal(module_key(facts.vendor, facts.pn))
    check_vendor_key(key, facts, where=where)
    entry = si_entry(codes, facts, where=where)
    sk = speed_key(lane_speed_g)
    notes = [f"SONiC matches vendor and PN only: the entry applies to every {facts.vendor} {facts.pn} "
             f"on port(s) {port_ranges(ports, single_as_range=False)} at {sk}",
             # cmis_manager_task.py lines 540-591 and 1006-1030
             "xcvrd stages the file when it initialises the module; a module already running the port's "
             "application with every lane DataPathActivated and ConfigSuccess is left as it is (no re-apply)"]
    entries: list[tuple[str, ...]]
    if scope == "global":
        rng = port_ranges(ports)
        doc = {GLOBAL: {rng: {sk: {key: entry}}}}
        entries = [(GLOBAL, rng, sk, key)]
    elif scope == "port":
        doc = {PORT: {str(p): {sk: {key: entry}} for p in ports}}
        entries = [(PORT, str(p), sk, key) for p in ports]
    else:
        raise NosFormatError(f"{where}: --scope {scope!r}: give port or global")
    return SonicExport(doc, entries, notes, list(ports))


# ---------------------------------------------------------------------------------------------
# lookup: what SONiC applies to a port (eqtune's reading, checked against SONiC's own code in tests)
# ---------------------------------------------------------------------------------------------
def _in_range(text: str, port: int, where: str) -> bool:
    a, _, b = text.partition("-")
    try:
        return int(a.strip()) <= port <= int(b.strip())
    except ValueError:
        raise NosFormatError(f"{where}: port key {text!r} is not a range low-high; "
                             "SONiC's parser would stop on it: fix the file") from None


def resolve_optics_si(doc: Mapping[str, Any], port: int, lane_speed_g: int, key: str,
                      vendor_name: str) -> tuple[dict[str, Any], tuple[str, ...] | None]:
    """The block SONiC stages for ``port`` and the module ``key`` ("VENDOR-PN"), with its key path
    (None: nothing applies). Mirrors optics_si_parser.py lines 41-159 step by step, including that a
    GLOBAL match found under one port key stays selected while later keys are read (line 60)."""
    where = "optics_si_settings.json"
    sk = speed_key(lane_speed_g)
    default: dict[str, Any] = {}
    default_path: tuple[str, ...] | None = None
    g = doc.get(GLOBAL)
    if isinstance(g, dict):
        sel: Any = {}
        sel_key = ""
        for keys in g:
            if "," in keys:
                for part in keys.split(","):
                    if ("-" in part and _in_range(part, port, where)) or ("-" not in part and str(port) == part):
                        sel, sel_key = g[keys], keys
                        break
            elif "-" in keys and _in_range(keys, port, where):
                sel, sel_key = g[keys], keys
            if isinstance(sel, dict) and sk in sel:
                for dk in sel[sk]:
                    if key_matches(dk, key, vendor_name):
                        return sel[sk][dk], (GLOBAL, sel_key, sk, dk)
                if DEFAULT in sel[sk]:
                    default, default_path = sel[sk][DEFAULT], (GLOBAL, sel_key, sk, DEFAULT)
    p = doc.get(PORT)
    if isinstance(p, dict):
        psel: Any = {}
        psel_key = ""
        for keys in p:
            try:
                num = int(keys)
            except ValueError:
                raise NosFormatError(f"{where}: {PORT} key {keys!r} is not a port number; SONiC's parser "
                                     "would stop on it: fix the file") from None
            if num == port:
                psel, psel_key = p[keys], keys
                break
        if not psel:
            return (default, default_path) if default else ({}, None)
        if sk in psel:
            for dk in psel[sk]:
                if key_matches(dk, key, vendor_name):
                    return psel[sk][dk], (PORT, psel_key, sk, dk)
            if DEFAULT in psel[sk]:
                return psel[sk][DEFAULT], (PORT, psel_key, sk, DEFAULT)
    return (default, default_path) if default else ({}, None)


# ---------------------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------------------
def check_top_level(doc: Mapping[str, Any], *, where: str) -> None:
    unknown = [k for k in doc if k not in (GLOBAL, PORT)]
    if unknown:
        raise NosFormatError(f"{where}: unknown key {unknown[0]!r} at the top level (SONiC reads {GLOBAL} and "
                             f"{PORT} only); check the file is an optics_si_settings.json")


def entry_codes(entry: Mapping[str, Any], facts: ModuleFacts, *, where: str) -> dict[int, dict[str, int]]:
    """Per-lane codes of one parameter block, refusing what SONiC's staging would refuse."""
    if not isinstance(entry, dict) or not entry:
        raise NosFormatError(f"{where}: the entry is not a block of parameters")
    codes: dict[int, dict[str, int]] = {}
    adaptive: dict[int, int] = {}
    for param, lanes in entry.items():
        if param not in KNOWN_PARAMS:
            raise NosFormatError(f"{where}: unknown key {param!r} (SONiC stages {', '.join(KNOWN_PARAMS)}; "
                                 "an unknown one makes it re-initialise the port)")
        if param in NOT_IN_PROFILES:
            raise NosFormatError(f"{where}: {param} is a SONiC control an eqtune profile does not carry; "
                                 "import an entry with module EQ codes only")
        if not isinstance(lanes, dict):
            raise NosFormatError(f"{where}: {param} must map {param}1..{param}8 to codes")
        for lk, val in lanes.items():
            m = _LANE_KEY.fullmatch(lk)
            if not m or m.group(1) != param:
                raise NosFormatError(f"{where}: unknown key {lk!r} under {param} (expected {param}<lane>, lanes from 1)")
            lane = int(m.group(2))
            if isinstance(val, bool) or not isinstance(val, int):
                raise NosFormatError(f"{where}: {lk} = {val!r} is not an integer code")
            if param == ADAPTIVE_ENABLE:
                if lane > facts.lanes:
                    facts.check_code(TX_EQ, lane, 0, where=where)
                adaptive[lane] = val
                continue
            knob = PARAM_KNOB[param]
            facts.check_code(knob, lane, val, where=where)
            codes.setdefault(lane, {})[knob] = val
    for lane, on in sorted(adaptive.items()):
        if on:
            raise NosFormatError(f"{where}: {ADAPTIVE_ENABLE}{lane} = {on} turns Tx input adaptive EQ on; an eqtune "
                                 "profile holds fixed codes (a lane on adaptive EQ has no tx_eq): import without it")
        if TX_EQ not in codes.get(lane, {}):
            raise NosFormatError(f"{where}: {ADAPTIVE_ENABLE}{lane} = 0 without FixedInputEqTargetTx{lane}; "
                                 "a profile cannot hold adaptive EQ off without a fixed code")
    return codes


def import_optics_si(doc: Mapping[str, Any], facts: ModuleFacts, *, port: int, lane_speed_g: int,
                     vendor_key: str | None = None) -> tuple[dict[int, dict[str, int]], tuple[str, ...]]:
    """The codes SONiC would stage on ``port`` for the module ``facts`` describes, and the entry's
    key path. With ``vendor_key`` that exact entry is read (refused if it does not match the module)."""
    where = "sonic-optics-si import"
    check_top_level(doc, where=where)
    key, vname = module_key(facts.vendor, facts.pn), facts.vendor.upper().strip()
    if vendor_key is not None:
        check_vendor_key(vendor_key, facts, where=where)
    entry, path = resolve_optics_si(doc, port, lane_speed_g, key, vname)
    if path is None:
        raise NoEntryError(f"{where}: no entry applies to port {port} at {speed_key(lane_speed_g)} for {key}; "
                             "check --port, --lane-speed and the module")
    if vendor_key is not None and path[-1] != vendor_key:
        raise NosFormatError(f"{where}: SONiC applies {' / '.join(path)} to port {port}, not the vendor key "
                             f"{vendor_key!r}; import what applies (omit --vendor-key) or fix the file")
    return entry_codes(entry, facts, where=f"{where} {' / '.join(path)}"), path
