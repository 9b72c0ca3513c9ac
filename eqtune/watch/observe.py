"""Per-lane observables of one module, read through the driver's public API only.

``CmisModule.vdm(lanes)`` returns ``{lane: VdmLane}`` (eqtune/drivers/cmis_vdm.py) with field names
from the VDM observable table (eqtune/drivers/cmis_map.py ``VDM_TYPES``: e.g. ``prefec_ber_host_input``,
``esnr_host_input_db``; CMIS 5.2 s8.20 "VDM observable types"), None for a field the module does not
advertise; plain ``{lane: {name: value}}`` mappings are accepted too.
:func:`adapt_vdm` maps whatever is there onto the watch's fixed observable names by pattern, and
marks every other observable ``None`` = "not advertised" (never 0). Host-side input observables (the
C2M electrical link eqtune tunes) keep the plain name; media-side ones get ``_media``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eqtune.drivers.cmis_types import VdmLane
    from eqtune.drivers.protocols import CmisModule

#: the watch's observables (units in the name); None in a sample = not advertised by the module
OBSERVABLES = ("prefec_ber", "prefec_ber_min", "prefec_ber_max", "prefec_ber_avg", "esnr_db", "ltp_db",
               "errored_frames", "fec_symbol_errors", "fec_codeword_errors")
MEDIA_OBSERVABLES = tuple(f"{o}_media" for o in OBSERVABLES)
ALL_OBSERVABLES = OBSERVABLES + MEDIA_OBSERVABLES
NOT_ADVERTISED = "not advertised"


def observable_for(vdm_name: str) -> str | None:
    """Watch observable for a driver VDM field name (None when the watch does not use it)."""
    n = vdm_name.lower()
    media = "media" in n
    if "ber" in n and "fec" in n and "pre" in n:
        base = "prefec_ber"
        for stat in ("min", "max", "avg"):
            if f"_{stat}" in n or n.startswith(f"{stat}_"):
                base = f"prefec_ber_{stat}"
                break
    elif "esnr" in n:
        base = "esnr_db"
    elif "ltp" in n:
        base = "ltp_db"
    elif "ferc" in n or ("errored_frame" in n and any(f"_{s}_" in n for s in ("min", "max", "avg"))):
        return None  # accumulated count / window statistics: not one of the watch's observables
    elif "errored_frame" in n or "frame_err" in n:
        base = "errored_frames"
    elif "symbol" in n and "err" in n:
        base = "fec_symbol_errors"
    elif ("codeword" in n or "uncorrect" in n) and "err" in n or "uncorrectable" in n:
        base = "fec_codeword_errors"
    else:
        return None
    return base + ("_media" if media else "")


def adapt_vdm(raw: Mapping[int, VdmLane | Mapping[str, Any]] | None, lanes: list[int]) -> dict[int, dict[str, float | None]]:
    """``{lane: {observable: value or None}}`` for every lane and observable in ``ALL_OBSERVABLES``
    (None = not advertised: missing from the driver's answer or given as None)."""
    out: dict[int, dict[str, float | None]] = {}
    for lane in lanes:
        vals: dict[str, float | None] = dict.fromkeys(ALL_OBSERVABLES)
        row = (raw or {}).get(lane) or {}
        # the driver's VdmLane (eqtune/drivers/cmis_vdm.py) lists only advertised fields; plain dicts too
        items = row.advertised().items() if hasattr(row, "advertised") else row.items()
        for name, value in items:
            obs = observable_for(str(name))
            if obs is None or value is None:
                continue
            try:
                vals[obs] = float(value)
            except (TypeError, ValueError):
                continue
        out[lane] = vals
    return out


@dataclass
class ModuleSample:
    """One poll of one module: ``ts`` (Unix s), ``temperature_c`` (None when unreadable),
    ``lanes`` {lane: {observable: value or None}}, ``error`` (one line) when the poll failed,
    ``notes`` (e.g. "VDM not advertised"), ``duration_s`` of the poll."""

    resource: str
    ts: float
    temperature_c: float | None
    lanes: dict[int, dict[str, float | None]] = field(default_factory=dict)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    thresholds: dict[str, float] = field(default_factory=dict)
    #: the port's frame loss from the host's FEC counters over the last interval (eqtune.watch.hostfec)
    port_fec: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def advertised(self) -> set[str]:
        return {k for vals in self.lanes.values() for k, v in vals.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        return {"resource": self.resource, "ts": self.ts, "temperature_c": self.temperature_c,
                "ok": self.ok, "error": self.error, "notes": self.notes, "duration_s": self.duration_s,
                **({"port_fec": self.port_fec} if self.port_fec is not None else {}),
                "lanes": {str(lane): {k: (NOT_ADVERTISED if v is None else v) for k, v in vals.items()
                                      if v is not None or k in OBSERVABLES}
                          for lane, vals in self.lanes.items()}}


def lanes_of(module: CmisModule, lanes: list[int] | None) -> list[int]:
    if lanes:
        return list(lanes)
    try:
        return list(range(1, int(module.capabilities().lanes) + 1))
    except Exception:  # noqa: BLE001 - fall back to an 800G module's 8 lanes
        return list(range(1, 9))


def read_module(module: CmisModule, resource: str, lanes: list[int] | None = None, *,
                clock: Any = time.time) -> ModuleSample:
    """Poll one open module: temperature (``module.temperature_c()`` when the driver has it) and
    VDM (``module.vdm(lanes)``, which freezes and unfreezes the samples itself). Device errors become
    ``error``; a module without VDM gives all observables None with a note. ``clock``: the
    timestamp source (Unix seconds; tests pass an emulated clock)."""
    from eqtune.errors import EqtuneError, ModuleError

    t0 = time.perf_counter()
    sample = ModuleSample(resource, float(clock()), None)
    try:
        lane_list = lanes_of(module, lanes)
        reader = getattr(module, "temperature_c", None)
        if reader is not None:
            sample.temperature_c = float(reader())
        else:
            sample.notes.append("temperature: " + NOT_ADVERTISED)
        try:
            raw = module.vdm(lane_list)
        except ModuleError as exc:
            if "does not advertise VDM" not in str(exc):
                raise
            raw = None
            sample.notes.append("VDM: " + NOT_ADVERTISED)
        sample.lanes = adapt_vdm(raw, lane_list)
        sample.thresholds = vdm_thresholds(raw)
        hot = temp_high_warning_c(module)
        if hot is not None:
            sample.thresholds["temp_high_warning_c"] = hot
    except (EqtuneError, OSError, TimeoutError) as exc:
        sample.error = str(exc).splitlines()[0][:300] or type(exc).__name__
    sample.duration_s = time.perf_counter() - t0
    return sample


def vdm_thresholds(raw: Mapping[int, Any] | None) -> dict[str, float]:
    """The module's own warning/alarm levels of host-input pre-FEC BER (high) and eSNR (low) from the
    VDM threshold sets (page 28h, 8 bytes per set: high alarm, low alarm, high warning, low warning;
    sonic-platform-common api/public/cmisVDM.py get_vdm_page), as the driver's ``VdmLane.thresholds``
    gives them. Empty when the module lists none."""
    out: dict[str, float] = {}
    for row in (raw or {}).values():
        th = getattr(row, "thresholds", None) or {}
        for name, t in th.items():
            obs = observable_for(str(name))
            if obs == "prefec_ber" and t.high_warning > 0:
                out.setdefault("ber_warning", float(t.high_warning))
                if t.high_alarm > 0:
                    out.setdefault("ber_alarm", float(t.high_alarm))
            elif obs == "errored_frames" and t.high_warning > 0:
                out.setdefault("errored_frames_warning", float(t.high_warning))
            elif obs == "esnr_db" and t.low_warning > 0:
                out.setdefault("esnr_warning_db", float(t.low_warning))
                if t.low_alarm > 0:
                    out.setdefault("esnr_alarm_db", float(t.low_alarm))
    return out


def temp_high_warning_c(module: Any) -> float | None:
    """TempHighWarning (page 02h bytes 132-133, s16 / 256 C: CMIS 5.2 Table 8-62; sonic-platform-common
    mem_maps/public/cmis/pages/page02.py TEMP_HIGH_WARNING_FIELD at 132, ">h", scale 256), read
    through the driver's paged registers where it has them; None when not readable or unset (0)."""
    regs = getattr(module, "regs", None)
    if regs is None or not hasattr(regs, "read"):
        return None
    try:
        raw = bytes(regs.read(2, 132, 2))
    except Exception:  # noqa: BLE001 - flat memory / page 02h absent: not advertised
        return None
    value = int.from_bytes(raw, "big", signed=True) / 256.0
    return value if value not in (0.0, -1.0 / 256.0) and -40.0 < value < 150.0 else None
