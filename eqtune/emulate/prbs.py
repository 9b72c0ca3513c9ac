"""Host-side PRBS checker of the module emulator (pages 13h/14h), from its own table.

Counters accumulate Poisson errors from the shared :class:`EmulatedLink` while the data path is
activated; enabling a checker or BER_CTRL bit 5 (FBOSS ``clearTransceiverPrbsStats``) resets them; the
loss-of-lock latch (14h:138, FBOSS ``HOST_LANE_CHECKER_LOL_LATCH``) is set when a checker starts and
while it has no signal, and clears on read. DiagnosticsSelector 01h gives the F16 BER per lane (FBOSS
``HOST_BER``), 02h/03h bit and error counters of lanes 1-4 / 5-8 (layout unverified, see the table).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from eqtune.emulate.cmis_table import load_table

if TYPE_CHECKING:
    from eqtune.drivers.protocols import Clock
    from eqtune.emulate.cmis_table import Reg
    from eqtune.emulate.link import EmulatedLink

T = load_table()
_DP_ACTIVATED = T.codes["dp"]["activated"]


def f16_encode(value: float) -> int:
    """F16 as FBOSS ``QsfpModule::getBerFloatValue`` decodes it (value = mantissa * 10**(exponent - 24),
    exponent bits 15-11, mantissa bits 10-0): the largest mantissa <= 2047 that fits."""
    if value <= 0:
        return 0
    e = max(0, min(31, math.floor(math.log10(value / 2047.0)) + 1 + 24))
    m = int(round(value / 10.0 ** (e - 24)))
    while m > 2047 and e < 31:
        e += 1
        m = int(round(value / 10.0 ** (e - 24)))
    return (e << 11) | min(m, 2047)


class PrbsCheckerMixin:
    """Mixed into :class:`eqtune.emulate.module.EmulatedModule`."""

    if TYPE_CHECKING:  # provided by EmulatedModule (eqtune/emulate/module.py) and DataPathMixin
        lanes: int
        link: EmulatedLink
        clock: Clock
        _chk: dict[int, dict[str, Any]]  # lane -> {"t": last accumulate (None: stopped), "bits", "errors"}
        _lol_latch: int

        def _byte(self, page: int, off: int) -> int: ...

        def _set_bytes(self, reg: Reg, data: bytes) -> None: ...

        def dp_state(self, lane: int) -> int: ...

    # ------------------------------------------------------------------ PRBS checker (pages 13h/14h)
    def _checker_enable(self, value: int) -> None:
        prev = self._byte(0x13, T.HostCheckerEnable.offset)
        now = self.clock()
        for lane in range(1, self.lanes + 1):
            bit = 1 << (lane - 1)
            if value & bit and not prev & bit:
                self._chk[lane] = {"t": now, "bits": 0, "errors": 0}  # enabling resets the counters
                self._lol_latch |= bit  # the checker starts unlocked: loss of lock latched until read
            elif prev & bit and not value & bit:
                self._accumulate()
                self._chk.get(lane, {})["t"] = None

    def _reset_counters(self) -> None:
        """BER_CTRL bit 5 (fboss clearTransceiverPrbsStats): counters of running checkers to 0."""
        self._accumulate()
        for c in self._chk.values():
            c["bits"] = 0
            c["errors"] = 0

    def _unlocked_mask(self) -> int:
        """Lanes whose enabled checker has no signal to lock to (data path not activated)."""
        en = self._byte(0x13, T.HostCheckerEnable.offset)
        return sum(1 << (ln - 1) for ln in range(1, self.lanes + 1)
                   if en >> (ln - 1) & 1 and self.dp_state(ln) != _DP_ACTIVATED)

    def _accumulate(self) -> None:
        now = self.clock()
        for lane, c in self._chk.items():
            if c.get("t") is None:
                continue
            dt = now - c["t"]
            if dt > 0 and self.dp_state(lane) == _DP_ACTIVATED:
                cnt = self.link.count_errors(lane, dt, path="module_rx")
                c["bits"] += cnt.bits
                c["errors"] += cnt.errors
            elif dt > 0:
                self._lol_latch |= 1 << (lane - 1)
            c["t"] = now

    def _refresh_diag(self) -> None:
        """Page 14h bytes 192-255 for the DiagnosticsSelector: 01h host BER F16 per lane (fboss
        HOST_BER), 02h/03h host bit and error counters of lanes 1-4 / 5-8 (table [diag], unverified)."""
        self._accumulate()
        sel = self._byte(0x14, T.DiagSelector.offset)
        data = bytearray(T.DiagData.size)
        if sel == T.diag["ber"]:
            for lane in range(1, self.lanes + 1):
                c = self._chk.get(lane, {"bits": 0, "errors": 0})
                ber = c["errors"] / c["bits"] if c["bits"] else 0.0
                data[2 * (lane - 1):2 * lane] = f16_encode(ber).to_bytes(2, "big")
        first = {T.diag["errcnt_1_4"]: 1, T.diag["errcnt_5_8"]: 5}.get(sel)
        if first is not None:
            for i in range(4):
                c = self._chk.get(first + i, {"bits": 0, "errors": 0})
                data[16 * i:16 * i + 8] = int(c["bits"]).to_bytes(8, "big")
                data[16 * i + 8:16 * i + 16] = int(c["errors"]).to_bytes(8, "big")
        self._set_bytes(T.DiagData, bytes(data))
