"""Versatile Diagnostics Monitoring (CMIS pages 20h-2Fh) for a health watch: typed per-lane values.

Read procedure (sonic-platform-common ``sonic_xcvr/api/public/cmisVDM.py`` ``get_vdm_page`` and
``api/public/cmis.py`` ``freeze_vdm_stats``/``get_vdm_freeze_status``; FBOSS ``CmisModule.cpp``
``latchAndReadVdmDataLocked``): FreezeRequest (2Fh:144 bit 7), poll FreezeDone (2Fh:145 bit 7), hold
(FBOSS ``kUsecVdmLatchHold`` 100 ms), read descriptors 20h+g, samples 24h+g, thresholds 28h+g and
flags 2Ch, release the freeze and poll UnfreezeDone (2Fh:145 bit 6). Every observable the module does
not advertise is None (never 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis_parts import DriverParts
from eqtune.drivers.cmis_types import VdmFlags, VdmLane, VdmThreshold
from eqtune.errors import ModuleError

__all__ = ["VdmFlags", "VdmLane", "VdmMixin", "VdmThreshold", "decode", "parse_group", "to_lanes"]


def decode(raw: int, fmt: str, scale: float) -> float:
    """U16 (big-endian, times ``scale``) or F16 (:func:`eqtune.drivers.cmis_map.f16_decode`)."""
    return M.f16_decode(raw) if fmt == "F16" else raw * scale


def parse_group(desc: bytes, samples: bytes, thresholds: bytes, flags: bytes, want: set[int],
                out: dict[int, dict[str, Any]]) -> None:
    """Fill ``out[lane]`` (field -> value, plus "thresholds"/"flags") from one VDM group's pages."""
    for i in range(64):
        lane, typ, tset = (desc[2 * i] & 0xF) + 1, desc[2 * i + 1], desc[2 * i] >> 4
        if typ not in M.VDM_TYPES or lane not in want:
            continue
        name, fmt, scale = M.VDM_TYPES[typ]
        row = out.setdefault(lane, {"thresholds": {}, "flags": {}})
        row[name] = decode(int.from_bytes(samples[2 * i:2 * i + 2], "big"), fmt, scale)
        t = thresholds[8 * tset:8 * tset + 8]
        if len(t) == 8:
            row["thresholds"][name] = VdmThreshold(*(decode(int.from_bytes(t[k:k + 2], "big"), fmt, scale)
                                                     for k in range(0, 8, 2)))
        nib = flags[i // 2] >> (4 * (i % 2)) & 0xF if i // 2 < len(flags) else 0
        row["flags"][name] = VdmFlags(*(bool(nib >> b & 1) for b in range(4)))


def to_lanes(out: dict[int, dict[str, Any]]) -> dict[int, VdmLane]:
    return {lane: VdmLane(lane=lane, **row) for lane, row in sorted(out.items())}


class VdmMixin(DriverParts):
    """:meth:`vdm` for :class:`eqtune.drivers.cmis.CmisDriver` (needs ``regs``, ``transport``,
    ``resource``, ``timing``, ``capabilities()`` and ``_poll()``)."""

    # ------------------------------------------------------------------ VDM (pages 20h-2Fh)
    def vdm(self, lanes: Sequence[int] | None = None, *, freeze: bool = True) -> dict[int, VdmLane]:
        """Versatile Diagnostics Monitoring per lane: a :class:`~eqtune.drivers.cmis_vdm.VdmLane` with
        pre-FEC BER current/min/max/avg, errored frames, FERC, eSNR and LTP (host and media inputs),
        thresholds and flags; fields the module does not advertise are None (never 0).

        ``freeze``: FreezeRequest, wait FreezeDone, hold, read, release, wait UnfreezeDone (see
        :mod:`eqtune.drivers.cmis_vdm`), so all samples belong to one instant."""
        caps = self.capabilities()
        if not caps.vdm:
            raise ModuleError(f"{self.resource}: the module does not advertise VDM pages 20h-2Fh (page 01h "
                              "byte 142 bit 6); use module_ber (PRBS checker) or an external BERT")
        want = set(lanes) if lanes else set(range(1, caps.lanes + 1))
        groups = self.regs.read_scalar(M.VDM_GROUPS) + 1

        def status_bit(bit: int) -> bool | None:
            return True if self.regs.read(0x2F, M.VDM_STATUS.offset, 1)[0] >> bit & 1 else None

        out: dict[int, dict[str, Any]] = {}
        if freeze:
            self.regs.write(0x2F, M.VDM_CONTROL.offset, bytes([M.VDM_FREEZE_REQUEST]))
        try:
            if freeze:
                self._poll("VDM FreezeDone", lambda: status_bit(M.VDM_FREEZE_DONE_BIT))
                self.transport.sleep(self.timing.vdm_latch_s)
            flags = self.regs.read(M.VDM_FLAG_PAGE, 128, 128)
            samples = self.regs.read_stable if freeze else self.regs.read  # live samples move between reads
            for g in range(groups):
                parse_group(self.regs.read_stable(M.VDM_DESC_PAGE + g, 128, 128),
                            samples(M.VDM_SAMPLE_PAGE + g, 128, 128),
                            self.regs.read_stable(M.VDM_THRESHOLD_PAGE + g, 128, 128),
                            flags[32 * g:32 * g + 32], want, out)
        finally:
            if freeze:
                self.regs.write(0x2F, M.VDM_CONTROL.offset, b"\x00")
        if freeze:
            self._poll("VDM UnfreezeDone", lambda: status_bit(M.VDM_UNFREEZE_DONE_BIT))
        return to_lanes(out)
