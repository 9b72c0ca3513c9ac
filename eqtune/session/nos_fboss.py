"""FBOSS qsfp_service ``transceiverConfigOverrides``: the module Rx output EQ FBOSS applies.

The config (fboss 14ec47ec, fboss/qsfp_service/if/qsfp_service_config.thrift lines 28-52 and 122-129)::

    {"transceiverConfigOverrides": [
        {"factor": {"applicationCode": 119},
         "config": {"cmis": {"rxEqualizerSettings": {"preCursor": 2, "postCursor": 3, "mainAmplitude": 1}}}}]}

``RxEqualizerSettings`` (fboss/qsfp_service/if/transceiver.thrift lines 467-471) has three required
i32 fields. What FBOSS does with it (fboss/qsfp_service/module/cmis/CmisModule.cpp):

* It carries **one value per port**: ``setModuleRxEqualizerLocked`` writes the same pre/post/main
  nibble into every host lane of the port (lines 4340-4392), so a profile whose lanes differ cannot be
  expressed; eqtune refuses it instead of picking one lane.
* It matches by application code only: the part number is passed as ``std::nullopt`` (line 4207, a
  TODO upstream) and ``TransceiverPartNumber`` has only UNKNOWN, so an override applies to every CMIS
  module of that application on the switch (no factor: every CMIS module). The first override
  that matches and carries Rx EQ wins (lines 4212-4226).
* There is no CMIS Tx input EQ override (CmisOverrides holds rxEqualizerSettings only); Sff8636Overrides
  has txEqualization, for SFF-8636 modules. A profile's ``tx_eq`` is reported as not exported.

Enums are written as integers, as Thrift's JSON protocols encode them; names from the
``SMFMediaInterfaceCode`` enum (transceiver.thrift lines 298-322) are accepted on input.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eqtune.serdes.knobs import MODULE_RX_OUT_KNOBS, RX_AMP, RX_POST, RX_PRE, TX_EQ
from eqtune.session.nos_common import Diff, ModuleFacts, NoEntryError, NosFormatError, structural_diff

OVERRIDES = "transceiverConfigOverrides"
FIELD: dict[str, str] = {RX_PRE: "preCursor", RX_POST: "postCursor", RX_AMP: "mainAmplitude"}
FIELD_KNOB = {v: k for k, v in FIELD.items()}

#: SMFMediaInterfaceCode (transceiver.thrift lines 298-322)
SMF_CODES: dict[str, int] = {
    "CWDM4_100G": 0x10, "FR1_100G": 0x15, "FR4_200G": 0x18, "LR4_200G": 0x19, "DR4_400G": 0x1C,
    "FR4_400G": 0x1D, "LR4_10_400G": 0x1E, "DR1_200G": 0x73, "DR2_200G": 0x98, "DR2_400G": 0x75,
    "DR4_800G": 0x77, "DR1_100G": 0x14, "FR8_800G": 0xC1, "ZR_OIF_ZRA_800G": 0x6C,
    "ZR_OROADM_FLEXO_8E_DPO_800G": 0x68, "ZR_OROADM_FLEXO_6E_DPO_600G": 0x6A,
    "ZR_OROADM_FLEXO_4E_DO_400G": 0x64, "ZR_OPENZRP_OFEC_400G": 0x36, "FR4_800G": 0x79, "FR2_400G": 0xC2,
    "FR1_200G": 0xC4, "ZR_VENDOR_CUSTOM": 0xF7,
}


def application_code(text: str | int | None) -> int | None:
    """An SMFMediaInterfaceCode from a name (DR4_800G), a number (119, 0x77) or None (every module)."""
    if text is None or text == "":
        return None
    if isinstance(text, int) and not isinstance(text, bool):
        code = text
    elif isinstance(text, str) and text.upper() in SMF_CODES:
        return SMF_CODES[text.upper()]
    else:
        try:
            code = int(str(text), 0)
        except ValueError:
            raise NosFormatError(f"application code {text!r}: give an SMFMediaInterfaceCode name "
                                 f"({', '.join(list(SMF_CODES)[:4])}, ...) or its number") from None
    if code not in SMF_CODES.values():
        raise NosFormatError(f"application code {code:#x} is not an SMFMediaInterfaceCode FBOSS knows "
                             "(transceiver.thrift); check the module's media interface")
    return code


@dataclass
class FbossExport:
    doc: dict[str, Any]
    override: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def export_fboss(codes: Mapping[int, Mapping[str, int]], facts: ModuleFacts, *, app_code: int | None) -> FbossExport:
    """One override carrying the profile's Rx output EQ (identical on every lane, all three knobs)."""
    where = "fboss export"
    values: dict[str, int] = {}
    for knob in MODULE_RX_OUT_KNOBS:
        per_lane = {ln: c[knob] for ln, c in sorted(codes.items()) if knob in c}
        if not per_lane:
            raise NosFormatError(f"{where}: the profile does not set {knob}; FBOSS's RxEqualizerSettings needs "
                                 "preCursor, postCursor and mainAmplitude (a missing one would be written as 0)")
        if len(set(per_lane.values())) > 1:
            shown = ", ".join(f"lane {ln} {knob}={v}" for ln, v in per_lane.items())
            raise NosFormatError(f"{where}: FBOSS carries one Rx EQ setting for all lanes of a port "
                                 f"(CmisModule.cpp setModuleRxEqualizerLocked) but the lanes differ ({shown}); "
                                 "export per-lane codes to SONiC, or save a profile with common codes")
        missing = [ln for ln in range(1, facts.lanes + 1) if ln not in per_lane]
        if missing:
            raise NosFormatError(f"{where}: FBOSS writes {knob} to every lane of the port but the profile leaves "
                                 f"lane(s) {','.join(map(str, missing))} unset; give --port-lanes or every lane")
        for ln, v in per_lane.items():
            facts.check_code(knob, ln, int(v), where=where)
        values[knob] = int(next(iter(per_lane.values())))
    factor: dict[str, Any] = {} if app_code is None else {"applicationCode": app_code}
    override = {"factor": factor, "config": {"cmis": {"rxEqualizerSettings": {FIELD[k]: values[k] for k in FIELD}}}}
    notes = ["FBOSS matches overrides by application code only (no part number): this override applies to every "
             + ("CMIS module" if app_code is None else f"CMIS module of application {app_code:#x}")
             + " on the switch, not only " + f"{facts.vendor} {facts.pn}"]
    if any(TX_EQ in c for c in codes.values()):
        notes.append("tx_eq not exported: FBOSS has no CMIS Tx input EQ override (CmisOverrides carries "
                     "rxEqualizerSettings only); the module keeps its own Tx input EQ under FBOSS")
    return FbossExport({OVERRIDES: [override]}, override, notes)


def _factor_matches(factor: Mapping[str, Any], app_code: int | None) -> bool:
    """QsfpConfigParserHelper.cpp overrideFactorMatchFound (lines 10-28) for a module of ``app_code``."""
    want = factor.get("applicationCode")
    if want is None:
        return True
    return app_code is not None and application_code(want) == app_code


def _rx_eq(override: Mapping[str, Any]) -> Any:
    cfg = override.get("config")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("cmis"), dict):
        return None
    return cfg["cmis"].get("rxEqualizerSettings")


def selected_override(doc: Mapping[str, Any], app_code: int | None) -> tuple[int, dict[str, Any]] | None:
    """The override FBOSS applies to a module of ``app_code``: the first matching one with Rx EQ
    (CmisModule.cpp lines 4212-4226), with its index."""
    lst = doc.get(OVERRIDES)
    if not isinstance(lst, list):
        return None
    for i, ov in enumerate(lst):
        if isinstance(ov, dict) and _factor_matches(ov.get("factor") or {}, app_code) and _rx_eq(ov) is not None:
            return i, ov
    return None


@dataclass
class FbossMerge:
    doc: dict[str, Any]
    action: str  # "added", "replaced", "same", "conflict"
    conflict: Diff | None = None
    notes: list[str] = field(default_factory=list)


def merge_fboss(existing: dict[str, Any], exp: FbossExport, *, app_code: int | None, replace: bool = False) -> FbossMerge:
    """Add eqtune's override first in the list (it must be the first match for its application code);
    an existing override with the same factor and other values is a conflict unless ``replace``."""
    doc = copy.deepcopy(existing)
    lst = doc.setdefault(OVERRIDES, [])
    if not isinstance(lst, list):
        raise NosFormatError(f"{OVERRIDES} in the file is not a list; fix the file before merging")
    same = [i for i, ov in enumerate(lst) if isinstance(ov, dict) and (ov.get("factor") or {}) == exp.override["factor"]
            and _rx_eq(ov) is not None]
    notes: list[str] = []
    if same:
        i = same[0]
        if lst[i] == exp.override:
            return FbossMerge(doc, "same", notes=notes)
        if not replace:
            return FbossMerge(doc, "conflict", structural_diff(lst[i], exp.override, (OVERRIDES, f"[{i}]")))
        lst[i] = copy.deepcopy(exp.override)
        action = "replaced"
    else:
        lst.insert(0, copy.deepcopy(exp.override))
        action = "added"
    sel = selected_override(doc, app_code)
    if sel is None or sel[1] != exp.override:
        raise NosFormatError(f"fboss merge: override #{sel[0] if sel else '?'} would still be applied before eqtune's "
                             "(an earlier override matches every module); nothing written: move it by hand")
    return FbossMerge(doc, action, notes=notes)


def import_fboss(doc: Mapping[str, Any], facts: ModuleFacts, *, app_code: int | None) -> dict[int, dict[str, int]]:
    """The codes FBOSS would write on every lane of a port for a module of ``app_code``."""
    where = "fboss import"
    unknown = [k for k in doc if k not in (OVERRIDES, "defaultCommandLineArgs", "sdk_version", "qsfpTestConfig",
                                            "transceiverFirmwareVersions", "transceiverI2cLogging")]
    if unknown and OVERRIDES not in doc:
        raise NosFormatError(f"{where}: unknown key {unknown[0]!r} and no {OVERRIDES}; give a qsfp_service config")
    sel = selected_override(doc, app_code)
    if sel is None:
        raise NoEntryError(f"{where}: no override with rxEqualizerSettings applies to application "
                             f"{app_code if app_code is None else hex(app_code)}")
    rx = _rx_eq(sel[1])
    if not isinstance(rx, dict):
        raise NosFormatError(f"{where}: override #{sel[0]} rxEqualizerSettings is not an object")
    for k in rx:
        if k not in FIELD_KNOB:
            raise NosFormatError(f"{where}: unknown key {k!r} in rxEqualizerSettings (FBOSS reads "
                                 f"{', '.join(FIELD_KNOB)})")
    codes: dict[int, dict[str, int]] = {}
    for fld, knob in FIELD_KNOB.items():
        v = rx.get(fld)
        if isinstance(v, bool) or not isinstance(v, int):
            raise NosFormatError(f"{where}: override #{sel[0]} {fld} = {v!r} is not an integer code "
                                 "(FBOSS would write 0 for a missing one)")
        for ln in range(1, facts.lanes + 1):
            facts.check_code(knob, ln, v, where=f"{where} override #{sel[0]}")
            codes.setdefault(ln, {})[knob] = v
    return codes
