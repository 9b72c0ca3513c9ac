"""Module BER with the CMIS host-side PRBS checker (pages 13h/14h), mixed into :class:`CmisModule`.

Procedure and registers from FBOSS ``fboss/qsfp_service/module/cmis/CmisModule.cpp``
(``clearTransceiverPrbsStats``, ``setDiagSel``, ``getPrbsStats``); see :meth:`PrbsMixin.module_ber`.
"""

from __future__ import annotations

from collections.abc import Sequence

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis_parts import DriverParts
from eqtune.drivers.measurement import BerCount
from eqtune.errors import DeviceError, EqRangeError, ModuleError


class PrbsMixin(DriverParts):
    """Needs ``regs``, ``transport``, ``resource``, ``timing``, ``_settle_until``, ``capabilities()``
    and ``_check_lane()`` of :class:`eqtune.drivers.cmis.CmisDriver`."""

    # ------------------------------------------------------------------ diagnostics (pages 13h/14h)
    def _select_diag(self, selector: int) -> None:
        """DiagnosticsSelector (14h:128), then wait for the module to latch it (FBOSS ``setDiagSel``:
        written only when different, then ``kUsecDiagSelectLatchWaitPrbs`` 200 ms)."""
        if self.regs.read(0x14, M.DIAG_SELECTOR.offset, 1)[0] == selector:
            return
        self.regs.write(0x14, M.DIAG_SELECTOR.offset, bytes([selector]))
        self.transport.sleep(self.timing.diag_latch_s)

    def _read_counters(self, lanes: Sequence[int], reverse: bool = False) -> dict[int, tuple[int, int, float]]:
        """(bits, errors) per lane from the host-side error counters, DiagnosticsSelector 02h (lanes
        1-4) / 03h (lanes 5-8), bytes 192-255: per lane a U64 bit count then a U64 error count.
        UNVERIFIED layout: no public host code reads these selectors (FBOSS reads 01h, the F16 BER)."""
        out: dict[int, tuple[int, int, float]] = {}
        order = ((M.DIAG_SEL_HOST_ERRCNT_1_4, 1), (M.DIAG_SEL_HOST_ERRCNT_5_8, 5))
        for sel, first in reversed(order) if reverse else order:
            want = [ln for ln in lanes if first <= ln < first + 4]
            if not want:
                continue
            self._select_diag(sel)
            data = self.regs.read(0x14, M.DIAG_DATA_OFFSET, 64)
            t = self.transport.monotonic()
            for ln in want:
                base = (ln - first) * M.DIAG_LANE_STRIDE
                out[ln] = (int.from_bytes(data[base:base + 8], "big"), int.from_bytes(data[base + 8:base + 16], "big"), t)
        return out

    def _module_ber_f16(self, lanes: Sequence[int]) -> dict[int, float]:
        """The module's own BER per lane since the counter reset: DiagnosticsSelector 01h, 14h:192 +
        2 bytes per lane, F16 (FBOSS ``DiagnosticFeatureEncoding::BER``, ``HOST_BER``,
        ``QsfpModule::getBerFloatValue``): the confirmed encoding the unverified counters are checked
        against."""
        self._select_diag(M.DIAG_SEL_BER)
        data = self.regs.read(0x14, M.HOST_BER_OFFSET, 16)
        return {ln: M.f16_decode(int.from_bytes(data[2 * (ln - 1):2 * ln], "big")) for ln in lanes}

    def _cross_check(self, lane: int, bits: int, errors: int, module_ber: float | None) -> None:
        """ModuleError when the counters (selectors 02h/03h, layout unverified) and the module's own
        F16 BER (selector 01h) disagree by more than 3x where either sees >= 10 errors: the counter
        layout of this module then differs from the one eqtune assumes."""
        if module_ber is None or bits <= 0:
            return
        counted = errors / bits
        if max(errors, module_ber * bits) < 10:
            return
        if not module_ber / 3 <= counted <= module_ber * 3:
            raise ModuleError(f"{self.resource}: lane {lane}: the PRBS error counters (DiagnosticsSelector 02h/03h) "
                              f"give BER {counted:.2e} but the module's own BER (selector 01h) is {module_ber:.2e}; "
                              "this module lays out its counters differently: measure with an external BERT and "
                              "report the module's part number")

    def _lost_lock(self, lanes: Sequence[int]) -> list[int]:
        """Lanes whose host checker loss-of-lock latch (14h:138, bit set = lost lock; FBOSS getPrbsStats)
        is set; reading clears the latch (CMIS latched flags are clear-on-read)."""
        latch = self.regs.read(0x14, M.HOST_CHK_LOL_LATCH.offset, 1)[0]
        return [ln for ln in lanes if latch >> (ln - 1) & 1]

    def module_ber(self, lanes: Sequence[int], dwell_s: float) -> dict[int, BerCount]:
        """Count PRBS31Q errors with the module's host-side checker (module Tx-input direction).

        The host must send PRBS31Q on those lanes. Procedure: wait out the settle time after the last
        apply (CmisTiming.ber_settle_s), pattern + checker enable (13h:164/160), counter reset
        (13h:177 bit 5 set then cleared, FBOSS ``clearTransceiverPrbsStats``), DiagnosticsSelector
        latch wait (200 ms, FBOSS), checker lock (14h:138 loss-of-lock latch read twice: the second
        read must be clear), counters before and after ``dwell_s``. Each lane's ``dwell_s`` is the
        time between its two counter reads (lanes 1-4 and 5-8 need a selector switch each). The
        counters (selectors 02h/03h, layout unverified) are cross-checked against the module's own F16
        BER (selector 01h, FBOSS): a disagreement is a ModuleError, not a wrong number. A counter that went backwards
        (reset by someone else) or a lock lost during the dwell is a ModuleError, never clipped to 0.
        The checker enable is restored after.
        """
        caps = self.capabilities()
        if not caps.diagnostics:
            raise ModuleError(f"{self.resource}: the module does not advertise diagnostics pages 13h/14h "
                              "(page 01h byte 142 bit 5); measure with an external BERT instead")
        if dwell_s <= 0:
            raise EqRangeError(f"dwell {dwell_s} s must be > 0")
        lanes = sorted(set(lanes))
        for ln in lanes:
            self._check_lane(ln)
        wait = self._settle_until - self.transport.monotonic()
        if wait > 0:
            self.transport.sleep(wait)
        mask = sum(1 << (ln - 1) for ln in lanes)
        prev = self.regs.read(0x13, M.HOST_CHK_ENABLE.offset, 1)[0]
        try:
            self.regs.write_lanes(M.HOST_CHK_PATTERN, {ln: M.PRBS31Q for ln in lanes})
            if prev & mask != mask:
                self.regs.write(0x13, M.HOST_CHK_ENABLE.offset, bytes([prev | mask]))
            ctrl = self.regs.read(0x13, M.BER_CTRL.offset, 1)[0]
            reset = 1 << M.BER_CTRL_RESET_BIT
            self.regs.write(0x13, M.BER_CTRL.offset, bytes([ctrl | reset]))
            self.regs.write(0x13, M.BER_CTRL.offset, bytes([ctrl & ~reset & 0xFF]))
            self._select_diag(M.DIAG_SEL_HOST_ERRCNT_1_4 if lanes[0] <= 4 else M.DIAG_SEL_HOST_ERRCNT_5_8)
            self.transport.sleep(self.timing.diag_latch_s)
            self._lost_lock(lanes)  # clears what latched while the checker acquired lock
            unlocked = self._lost_lock(lanes)
            if unlocked:
                raise ModuleError(f"{self.resource}: the PRBS checker is not locked on lane(s) {unlocked}: is the host "
                                  "sending PRBS31Q on those lanes and is the data path activated?")
            start = self._read_counters(lanes)
            self.transport.sleep(dwell_s)
            end = self._read_counters(lanes, reverse=True)  # the last selected group is read first
            lost = self._lost_lock(lanes)
            module_ber = self._module_ber_f16(lanes)
        finally:
            if prev & mask != mask:
                try:
                    self.regs.write(0x13, M.HOST_CHK_ENABLE.offset, bytes([prev]))
                except DeviceError:
                    pass
        if lost:
            raise ModuleError(f"{self.resource}: the PRBS checker lost lock during the dwell on lane(s) {lost}; the "
                              "count is not valid (signal lost or BER too high to count): check the link")
        out = {}
        for ln in lanes:
            bits = end[ln][0] - start[ln][0]
            errors = end[ln][1] - start[ln][1]
            if bits < 0 or errors < 0:
                raise ModuleError(f"{self.resource}: the PRBS checker counters of lane {ln} went backwards during "
                                  "the dwell (reset by another host or the module); measurement discarded, retry")
            if bits == 0:
                raise ModuleError(f"{self.resource}: the PRBS checker counted no bits on lane {ln}: is the host "
                                  "sending PRBS31Q on that lane and is the data path activated?")
            out[ln] = BerCount(bits=bits, errors=errors, dwell_s=end[ln][2] - start[ln][2])
            self._cross_check(ln, end[ln][0], end[ln][1], module_ber.get(ln))
        return out
