"""``module doctor``: what eqtune can and cannot do on a CMIS module, from reads only.

The report gathers identity (page 00h), the EQ advertisement (page 01h), the Apply procedure chosen
from the CMIS revision, SteppedConfigOnly and AutoCommissioning (:func:`eqtune.drivers.cmis_policy.method_for`,
the same answer `module set`, live tuning and push use) and whether traffic goes down, PRBS checker and VDM support, and a list of limitations. Nothing is
written to the module (the VDM read is taken without a freeze request).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from eqtune.drivers.protocols import CmisModule
from eqtune.errors import ModuleError
from eqtune.serdes.knobs import MODULE_KNOBS


@dataclass
class DoctorReport:
    resource: str
    identity: dict[str, Any]
    capabilities: dict[str, Any]
    apply: dict[str, Any]
    prbs_ber: bool
    vdm: bool
    vdm_observables: list[str] = field(default_factory=list)
    cannot: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def diagnose(mod: CmisModule) -> DoctorReport:
    """Build the report for an open module (:class:`~eqtune.drivers.protocols.CmisModule`; reads only)."""
    ident = mod.identity()
    caps = mod.capabilities()
    cannot: list[str] = []
    try:
        method = mod.apply_method("auto").to_dict()
    except ModuleError as exc:
        method = {"trigger": "", "supported": False, "traffic_down": None, "reason": str(exc)}
        cannot.append("apply EQ codes: " + str(exc).split(": ", 1)[-1])
    if method.get("traffic_down"):
        cannot.append("apply EQ with traffic up: the module supports only step-by-step configuration "
                      "(SteppedConfigOnly 1, lower page byte 2 bit 6), so every apply takes the data path down")
    kv = caps.knob_values()
    for knob in MODULE_KNOBS:
        if knob not in kv:
            cannot.append(f"set {knob}: not advertised on page 01h")
    if not caps.tx_adaptive:
        cannot.append("switch Tx input adaptive EQ on: not advertised (page 01h byte 161 bit 3)")
    if not caps.diagnostics:
        cannot.append("measure BER with its own PRBS checker: no diagnostics pages 13h/14h (page 01h byte 142 "
                      "bit 5); use an external BERT")
    observables: list[str] = []
    if caps.vdm:
        try:
            lanes = mod.vdm([1], freeze=False)
            observables = sorted(lanes[1].advertised()) if 1 in lanes else []
        except ModuleError as exc:
            cannot.append(f"read VDM: {exc}")
    else:
        cannot.append("report pre-FEC BER / eSNR through VDM: no VDM pages 20h-2Fh (page 01h byte 142 bit 6)")
    if ident.page00_checksum != "ok":
        cannot.append("trust page 00h: its checksum (byte 222) does not match the bytes, the same on every "
                      "read (the module's EEPROM, not the bus); identity shown as read")
    if caps.dp_init_max_s is None:
        cannot.append("bound the DPInit time: page 01h byte 144 holds a reserved duration code (14-15); "
                      "eqtune waits its 10 s default")
    return DoctorReport(mod.resource, ident.to_dict(), caps.to_dict(), method, caps.diagnostics, caps.vdm,
                        observables, cannot)
