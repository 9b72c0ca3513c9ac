"""A CMIS 5.2 module emulator behind the same 256-byte two-wire interface as real hardware.

Memory map (see :mod:`eqtune.drivers.cmis_map` for the citations): identity (lower page, page 00h
with its byte-222 checksum), advertising (page 01h), Staged Control Set 0 (page 10h), status and
Active Control Set (page 11h), PRBS checker controls and error counters (pages 13h/14h).

Behaviour modelled:

* Data path state machine per lane (DPDeinit, ApplyDPInit regular and step-by-step, ApplyImmediate),
  with a settle time (``settle_s``, default 50 ms; 0 in unit tests). ConfigStatus is
  ``IN_PROGRESS`` until the apply completes, then SUCCESS or a rejection code; a rejected config
  leaves the Active Control Set untouched (CMIS 5.2 section 6.2.4 / 8.10.9).
* Staged codes are validated against the advertised capabilities (ConfigRejectedInvalidSI), the
  application (ConfigRejectedInvalidAppSel) and the data path grouping (ConfigRejectedPartialDataPath).
* ExplicitControl clear -> the module loads its application defaults instead of the staged SI codes.
* Tx input adaptive EQ (page 10h byte 153 / page 11h byte 214): advertised (``tx_adaptive``) and on
  at power-up on every lane, as shipped modules do (``tx_adaptive_on=False``, resource option
  ``adaptive=0``: a module running the fixed ``tx_eq`` code). While on, the link's module-input
  direction uses the best code (:meth:`EmulatedLink.set_tx_adaptive`).
* The host-side PRBS checker counts bits and errors from the shared :class:`EmulatedLink`
  (Poisson errors accumulating with elapsed time, ``module_rx`` direction).
* Fault injection: :meth:`EmulatedModule.inject` with ``"nack"``, ``"timeout"``, ``"corrupt"``,
  ``"reject"``, ``"slow_apply"``.

Time comes from ``clock``: :class:`RealClock` (default) or :class:`VirtualClock` (instant, for
tests and fast demos: the driver sleeps through the transport, which advances the virtual clock).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis_map import ConfigStatus, DPState


class EmuNack(OSError):
    """The emulated module did not acknowledge the transaction."""


class EmuTimeout(TimeoutError):
    """The emulated transaction timed out (clock stretched / no answer)."""


class RealClock:
    def __call__(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class VirtualClock:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self.now += seconds

    advance = sleep


@dataclass
class _Fault:
    kind: str
    count: int
    on: str = "any"  # "read", "write", "any" (nack/timeout/corrupt) ; ignored for reject/slow_apply
    after: int = 0  # transactions (or applies) to let through first
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class WriteRecord:
    bank: int
    page: int
    offset: int
    data: bytes


DEFAULT_IDENTITY = {
    "identifier": 0x19,  # SFF-8024: OSFP 8X
    "vendor": "EQTUNE EMULATOR",
    "oui": bytes([0x02, 0xEE, 0x71]),  # locally administered, not a real vendor
    "pn": "EMU-800G-OSFP",
    "rev": "A1",
    "sn": "EMU0000001",
    "date_code": "261129  ",
    "firmware": (5, 2),
    "cmis_rev": 0x52,
}


class EmulatedModule:
    """An 800G CMIS module emulator. ``read(offset, n)``/``write(offset, data)`` like an I2C target."""

    def __init__(self, link=None, *, channel: str = "c2m-10in", lanes: int = 8, settle_s: float = 0.05,
                 clock=None, seed: int | None = None, noise: bool = True, rx_pre_max: int = 7,
                 rx_post_max: int = 7, rx_amp_codes: tuple[int, ...] = (0, 1, 2, 3), tx_eq_max: int = 10,
                 tx_adaptive: bool = True, tx_adaptive_on: bool = True, stepped_config_only: bool = False,
                 diagnostics: bool = True, vdm: bool = True,
                 identity: dict[str, Any] | None = None, name: str = "emu") -> None:
        if link is None:
            from eqtune.drivers.emulated_link import EmulatedLink

            link = EmulatedLink(channel, lanes=lanes, seed=seed, noise=noise, tx_eq_max=tx_eq_max)
        self.link = link
        self.lanes = link.lanes
        self.name = name
        self.settle_s = float(settle_s)
        self.clock = clock if clock is not None else RealClock()
        self.caps = {
            "rx_pre_max": rx_pre_max, "rx_post_max": rx_post_max, "rx_amp_codes": tuple(rx_amp_codes),
            "tx_eq_max": tx_eq_max, "tx_adaptive": tx_adaptive,
        }
        self.tx_adaptive_on = bool(tx_adaptive and tx_adaptive_on)
        self.stepped_config_only = stepped_config_only
        self.diagnostics = diagnostics
        self.vdm = vdm
        self._vdm_frozen = False
        self.identity = {**DEFAULT_IDENTITY, **(identity or {})}
        self._lock = threading.RLock()
        self._lower = bytearray(128)
        self._pages: dict[tuple[int, int], bytearray] = {}
        self._bank = 0
        self._page = 0
        self._events: list[tuple[float, int, Any]] = []
        self._seq = 0
        self._faults: list[_Fault] = []
        import numpy as np

        self._fault_rng = np.random.default_rng(seed)
        self._dpdeinit_prev = 0
        self._chk: dict[int, dict[str, float]] = {}  # lane -> {"t": last accumulate, "bits", "errors"}
        self.writes: list[WriteRecord] = []
        self.select_writes = 0
        self.applies = 0
        self._build()

    # ------------------------------------------------------------------ memory helpers
    def _pg(self, page: int, bank: int = 0) -> bytearray:
        key = (bank if page >= 0x10 else 0, page)
        if key not in self._pages:
            self._pages[key] = bytearray(128)
        return self._pages[key]

    def peek(self, page: int, offset: int, n: int = 1, bank: int = 0) -> bytes:
        """Direct memory read for tests (no faults, no side effects, no log)."""
        with self._lock:
            self._tick()
            if offset < 128:
                return bytes(self._lower[offset:offset + n])
            return bytes(self._pg(page, bank)[offset - 128:offset - 128 + n])

    def poke(self, page: int, offset: int, data: bytes, bank: int = 0) -> None:
        """Direct memory write for tests (no validation, no triggers)."""
        with self._lock:
            for i, b in enumerate(bytes(data)):
                o = offset + i
                if o < 128:
                    self._lower[o] = b
                else:
                    self._pg(page, bank)[o - 128] = b

    def _get_lane(self, fld: M.Field, lane: int) -> int:
        off, shift, mask = fld.locate(lane)
        return (self.peek_raw(fld.page, off) >> shift) & mask

    def peek_raw(self, page: int, off: int) -> int:
        return self._lower[off] if off < 128 else self._pg(page)[off - 128]

    def _set_lane(self, fld: M.Field, lane: int, value: int) -> None:
        off, shift, mask = fld.locate(lane)
        buf = self._pg(fld.page)
        i = off - 128
        buf[i] = (buf[i] & ~(mask << shift) & 0xFF) | ((value & mask) << shift)

    def _set_str(self, fld: M.Field, text: str) -> None:
        raw = text.encode("ascii")[: fld.size].ljust(fld.size, b" ")
        self._pg(fld.page)[fld.offset - 128: fld.offset - 128 + fld.size] = raw

    # ------------------------------------------------------------------ initial image
    def _build(self) -> None:
        ident = self.identity
        lo = self._lower
        lo[M.IDENTIFIER.offset] = ident["identifier"]
        lo[M.CMIS_REVISION.offset] = ident["cmis_rev"]
        lo[2] = (1 << 6) if self.stepped_config_only else 0  # paged memory; SteppedConfigOnly bit 6
        lo[M.MODULE_STATE.offset] = (M.ModuleState.READY << 1) | 0x01
        lo[M.ACTIVE_FW_MAJOR.offset], lo[M.ACTIVE_FW_MINOR.offset] = ident["firmware"]
        # Application descriptor 1 (bytes 86-89): host interface ID (illustrative 800GAUI-8 C2M code),
        # media interface ID, host/media lane counts, host lane assignment; byte 90 = 0xFF ends the list.
        lo[86:91] = bytes([0x4F, 0x1C, (self.lanes << 4) | self.lanes, 0x01, 0xFF])
        p0 = self._pg(0)
        p0[0] = ident["identifier"]
        self._set_str(M.VENDOR_NAME, ident["vendor"])
        p0[M.VENDOR_OUI.offset - 128: M.VENDOR_OUI.offset - 125] = bytes(ident["oui"])
        self._set_str(M.VENDOR_PN, ident["pn"])
        self._set_str(M.VENDOR_REV, ident["rev"])
        self._set_str(M.VENDOR_SN, ident["sn"])
        self._set_str(M.DATE_CODE, ident["date_code"])
        p0[222 - 128] = sum(p0[0:222 - 128]) & 0xFF  # page 00h checksum, bytes 128-221
        p1 = self._pg(1)
        p1[0], p1[1] = ident["firmware"]
        caps = self.caps
        p1[142 - 128] = (0x80 if self.diagnostics else 0x00) | (0x40 if self.vdm else 0x00)
        p1[144 - 128] = 0x44  # MaxDurationDPDeinit/DPInit codes 4: < 100 ms
        amp_mask = sum(1 << c for c in caps["rx_amp_codes"])
        p1[153 - 128] = (caps["tx_eq_max"] & 0xF) | ((amp_mask & 0xF) << 4)
        p1[154 - 128] = (caps["rx_pre_max"] & 0xF) | ((caps["rx_post_max"] & 0xF) << 4)
        p1[161 - 128] = (1 << M.TX_FIXED_EQ_SUPPORTED_BIT) | ((1 << M.TX_ADAPTIVE_EQ_SUPPORTED_BIT) if caps["tx_adaptive"] else 0)
        p1[162 - 128] = (1 << M.RX_AMP_SUPPORTED_BIT) | (1 << M.RX_PRE_SUPPORTED_BIT) | (1 << M.RX_POST_SUPPORTED_BIT)
        # one data path over all lanes: AppSel 1, DataPathID 0 (first lane), ExplicitControl 0
        for lane in range(1, 9):
            in_use = lane <= self.lanes
            dpc = (1 << 4) if in_use else 0
            self._pg(0x10)[M.DP_CONFIG_SCS0.offset - 128 + lane - 1] = dpc
            self._pg(0x11)[M.ACTIVE_DP_CONFIG.offset - 128 + lane - 1] = dpc
            self._set_lane(M.DP_STATE, lane, DPState.ACTIVATED if in_use else DPState.DEACTIVATED)
            self._set_lane(M.CONFIG_STATUS, lane, ConfigStatus.UNDEFINED)
            if in_use:
                codes = self.link.active_codes(lane)
                for knob, (staged, active) in M.EQ_FIELDS.items():
                    self._set_lane(staged, lane, codes[knob])
                    self._set_lane(active, lane, codes[knob])
        self._defaults = {lane: self.link.active_codes(lane) for lane in range(1, self.lanes + 1)}
        if self.vdm:
            # one VDM group: per lane eSNR host input and pre-FEC BER current value host input
            desc = self._pg(M.VDM_DESC_PAGE)
            for lane in range(1, self.lanes + 1):
                for k, typ in enumerate((M.VDM_ESNR_HOST, M.VDM_PREFEC_BER_HOST)):
                    i = 2 * (2 * (lane - 1) + k)
                    desc[i], desc[i + 1] = lane - 1, typ
            self._pg(0x2F)[0] = 0  # groups supported - 1
            self._pg(0x2F)[145 - 128] = 1 << M.VDM_UNFREEZE_DONE_BIT
        # adaptive Tx input EQ on by default (as shipped modules do), in staged and active sets;
        # tx_adaptive_on=False (resource option adaptive=0) powers up with the fixed tx_eq code instead
        mask = (1 << self.lanes) - 1 if self.tx_adaptive_on else 0
        self._pg(0x10)[M.TX_ADAPTIVE_EN_SCS0.offset - 128] = mask
        self._pg(0x11)[M.TX_ADAPTIVE_EN_ACTIVE.offset - 128] = mask
        if hasattr(self.link, "set_tx_adaptive"):
            for lane in range(1, self.lanes + 1):
                self.link.set_tx_adaptive(lane, self.tx_adaptive_on)

    def reset(self) -> None:
        """Reset (ResetS / ResetL / power cycle): every register back to its power-up value and the
        link back to the power-up codes, with Tx input adaptive EQ as shipped (CMIS 5.2 section 6.3.2:
        after a reset the module reinitializes from its defaults; volatile control settings are lost)."""
        with self._lock:
            for lane, codes in self._defaults.items():
                self.link.set_codes(lane, dict(codes))
            self._lower[:] = bytes(128)
            self._pages.clear()
            self._bank = self._page = 0
            self._events.clear()
            self._build()

    # ------------------------------------------------------------------ faults
    def inject(self, kind: str, count: int = 1, *, on: str = "any", after: int = 0, **params) -> None:
        """Arm a fault for the next ``count`` matching transactions (after letting ``after`` pass).

        kinds: ``nack``, ``timeout``, ``corrupt`` (reads return one flipped bit) act on transactions
        (``on`` = "read", "write" or "any"); ``reject`` (ConfigStatus rejected, ``code=`` optional) and
        ``slow_apply`` (``delay_s=``, default 2 s) act on the next applies.
        """
        if kind not in ("nack", "timeout", "corrupt", "reject", "slow_apply"):
            raise ValueError(f"unknown fault {kind!r}")
        with self._lock:
            self._faults.append(_Fault(kind, count, on, after, params))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take(self, kinds: tuple[str, ...], op: str | None) -> _Fault | None:
        for f in self._faults:
            if f.kind in kinds and (op is None or f.on in ("any", op)):
                if f.after > 0:
                    f.after -= 1
                    continue
                f.count -= 1
                if f.count <= 0:
                    self._faults.remove(f)
                return f
        return None

    def _transaction(self, op: str) -> _Fault | None:
        f = self._take(("nack", "timeout", "corrupt"), op)
        if f is None:
            return None
        if f.kind == "nack":
            raise EmuNack(f"{self.name}: NACK")
        if f.kind == "timeout":
            raise EmuTimeout(f"{self.name}: timeout")
        return f  # corrupt (reads only make sense)

    # ------------------------------------------------------------------ bus interface
    def read(self, offset: int, n: int) -> bytes:
        with self._lock:
            fault = self._transaction("read")
            self._tick()
            out = bytearray()
            for o in range(offset, offset + n):
                if o < 128:
                    out.append(self._lower[o])
                else:
                    if self._page == 0x14 and o == max(offset, M.DIAG_DATA_OFFSET):
                        self._refresh_diag()  # once per read transaction
                    elif self._page == M.VDM_SAMPLE_PAGE and self.vdm and not self._vdm_frozen and o == offset:
                        self._vdm_samples()
                    out.append(self._pg(self._page, self._bank)[o - 128])
            if fault is not None and out:
                i = int(self._fault_rng.integers(len(out)))
                out[i] ^= 1 << int(self._fault_rng.integers(8))
            return bytes(out)

    def write(self, offset: int, data: bytes) -> None:
        with self._lock:
            self._transaction("write")
            self._tick()
            data = bytes(data)
            if offset == 126 and len(data) <= 2 or (offset == 127 and len(data) == 1):
                self.select_writes += 1
            else:
                self.writes.append(WriteRecord(self._bank, self._page, offset, data))
            for i, b in enumerate(data):
                self._write_byte(offset + i, b)

    def _write_byte(self, o: int, b: int) -> None:
        if o < 128:
            if o == 126:
                self._bank = b
            elif o == 127:
                self._page = b
            elif o == 26:
                self._lower[o] = b
            return  # other lower-page bytes are read-only here
        page = self._page
        if page == 0x10 and self._bank == 0:
            if o == M.APPLY_DPINIT_SCS0.offset:
                self._apply(b, immediate=False)
            elif o == M.APPLY_IMMEDIATE_SCS0.offset:
                self._apply(b, immediate=True)
            elif o == M.DP_DEINIT.offset:
                self._pg(0x10)[0] = b
                self._dpdeinit(b)
            else:
                self._pg(0x10)[o - 128] = b
        elif page == 0x13 and self._bank == 0 and o >= 144:
            if o == M.HOST_CHK_ENABLE.offset:
                self._checker_enable(b)
            self._pg(0x13)[o - 128] = b
        elif page == 0x2F and self.vdm and o == M.VDM_CONTROL.offset:
            self._pg(0x2F)[o - 128] = b
            freeze = bool(b & M.VDM_FREEZE_REQUEST)
            if freeze and not self._vdm_frozen:
                self._vdm_samples()
            self._vdm_frozen = freeze
            self._pg(0x2F)[145 - 128] = 1 << (M.VDM_FREEZE_DONE_BIT if freeze else M.VDM_UNFREEZE_DONE_BIT)
        elif page == 0x14 and self._bank == 0 and o == M.DIAG_SELECTOR.offset:
            self._pg(0x14)[0] = b
            self._refresh_diag()
        # anything else is read-only: ignored, as modules do

    # ------------------------------------------------------------------ time / events
    def _at(self, delay: float, action) -> None:
        self._seq += 1
        self._events.append((self.clock() + max(0.0, delay), self._seq, action))
        self._events.sort(key=lambda e: (e[0], e[1]))
        if delay <= 0:
            self._tick()

    def _tick(self) -> None:
        now = self.clock()
        while self._events and self._events[0][0] <= now:
            _, _, action = self._events.pop(0)
            action()

    def settle(self) -> None:
        """Run every pending event now (tests)."""
        with self._lock:
            while self._events:
                _, _, action = self._events.pop(0)
                action()

    def dp_state(self, lane: int) -> DPState:
        return DPState(self._get_lane(M.DP_STATE, lane))

    def set_dp_state(self, lane: int, state: int, until_s: float | None = None) -> None:
        """Force a lane's DPState (tests: e.g. DPInit), back to DPActivated after ``until_s``."""
        with self._lock:
            self._set_lane(M.DP_STATE, lane, state)
            if until_s is not None:
                self._at(until_s, lambda: self._set_lane(M.DP_STATE, lane, DPState.ACTIVATED))

    # ------------------------------------------------------------------ configuration procedures
    def _lanes(self, mask: int) -> list[int]:
        return [lane for lane in range(1, self.lanes + 1) if mask >> (lane - 1) & 1]

    def _validate(self, lanes: list[int], mask: int) -> int:
        """ConfigStatus for staged set 0 on ``lanes`` (SUCCESS or a rejection code)."""
        p10 = self._pg(0x10)
        for lane in lanes:
            dpc = p10[M.DP_CONFIG_SCS0.offset - 128 + lane - 1]
            appsel, dpid = dpc >> 4, (dpc >> 1) & 0x7
            if appsel != 1:
                return ConfigStatus.REJECTED_INVALID_APPSEL
            # all lanes of the data path (same AppSel/DataPathID) must be applied together
            for other in range(1, self.lanes + 1):
                odpc = p10[M.DP_CONFIG_SCS0.offset - 128 + other - 1]
                if odpc >> 4 == appsel and (odpc >> 1) & 0x7 == dpid and not mask >> (other - 1) & 1:
                    return ConfigStatus.REJECTED_PARTIAL_DATA_PATH
            if dpc & 1:  # ExplicitControl: check SI codes against the advertisement
                c = self.caps
                if (self._get_lane(M.RX_PRE_SCS0, lane) > c["rx_pre_max"]
                        or self._get_lane(M.RX_POST_SCS0, lane) > c["rx_post_max"]
                        or self._get_lane(M.RX_AMP_SCS0, lane) not in c["rx_amp_codes"]
                        or self._get_lane(M.TX_FIXED_EQ_SCS0, lane) > c["tx_eq_max"]):
                    return ConfigStatus.REJECTED_INVALID_SI
        return ConfigStatus.SUCCESS

    def _apply(self, mask: int, immediate: bool) -> None:
        lanes = [lane for lane in self._lanes(mask)
                 if self._get_lane(M.CONFIG_STATUS, lane) != ConfigStatus.IN_PROGRESS]
        if not lanes:
            return  # CMIS: a trigger while a procedure runs on the lane is ignored
        self.applies += 1
        for lane in lanes:
            self._set_lane(M.CONFIG_STATUS, lane, ConfigStatus.IN_PROGRESS)
        status = self._validate(lanes, mask)
        rej = self._take(("reject",), None)
        if rej is not None:
            status = ConfigStatus(rej.params.get("code", ConfigStatus.REJECTED))
        slow = self._take(("slow_apply",), None)
        delay = self.settle_s + (float(slow.params.get("delay_s", 2.0)) if slow else 0.0)
        if status == ConfigStatus.SUCCESS:
            if immediate and self.stepped_config_only:
                status = ConfigStatus.REJECTED
            if not immediate and self.stepped_config_only and any(
                    self.dp_state(lane) != DPState.DEACTIVATED for lane in lanes):
                status = ConfigStatus.REJECTED_LANES_IN_USE

        def finish_status(code=status) -> None:
            for lane in lanes:
                self._set_lane(M.CONFIG_STATUS, lane, code)

        if status != ConfigStatus.SUCCESS:
            self._at(delay / 2, finish_status)
            return
        if immediate:
            def done() -> None:
                self._copy_to_active(lanes, push=True)
                finish_status()

            self._at(delay, done)
        elif all(self.dp_state(lane) == DPState.DEACTIVATED for lane in lanes):
            # step-by-step: copy now; DPInit runs when the host clears DPDeinit
            self._at(delay / 2, lambda: (self._copy_to_active(lanes, push=False), finish_status()))
        else:
            # regular reconfiguration from DPActivated: DPDeinit -> DPInit -> DPActivated
            for lane in lanes:
                self._set_lane(M.DP_STATE, lane, DPState.DEINIT)

            def mid() -> None:
                self._copy_to_active(lanes, push=False)
                finish_status()
                for lane in lanes:
                    self._set_lane(M.DP_STATE, lane, DPState.INIT)

            def end() -> None:
                for lane in lanes:
                    self._set_lane(M.DP_STATE, lane, DPState.ACTIVATED)
                self._push(lanes)

            self._at(delay / 2, mid)
            self._at(delay, end)

    def _copy_to_active(self, lanes: list[int], push: bool) -> None:
        p10, p11 = self._pg(0x10), self._pg(0x11)
        for lane in lanes:
            dpc = p10[M.DP_CONFIG_SCS0.offset - 128 + lane - 1]
            p11[M.ACTIVE_DP_CONFIG.offset - 128 + lane - 1] = dpc
            bit = 1 << (lane - 1)
            if dpc & 1:
                for _knob, (staged, active) in M.EQ_FIELDS.items():
                    self._set_lane(active, lane, self._get_lane(staged, lane))
                en = p10[M.TX_ADAPTIVE_EN_SCS0.offset - 128] & bit
            else:
                for knob, (_, active) in M.EQ_FIELDS.items():
                    self._set_lane(active, lane, self._defaults[lane][knob])
                en = bit if self.tx_adaptive_on else 0  # the application default of this module
            a = M.TX_ADAPTIVE_EN_ACTIVE.offset - 128
            p11[a] = (p11[a] & ~bit & 0xFF) | en
        if push:
            self._push(lanes)

    def _push(self, lanes: list[int]) -> None:
        """The physical layer now uses the active codes: tell the link (errors so far are booked)."""
        self._accumulate()
        adaptive = self._pg(0x11)[M.TX_ADAPTIVE_EN_ACTIVE.offset - 128]
        for lane in lanes:
            self.link.set_codes(lane, {k: self._get_lane(active, lane) for k, (_, active) in M.EQ_FIELDS.items()})
            if hasattr(self.link, "set_tx_adaptive"):
                self.link.set_tx_adaptive(lane, bool(adaptive >> (lane - 1) & 1))

    def _dpdeinit(self, value: int) -> None:
        prev, self._dpdeinit_prev = self._dpdeinit_prev, value
        for lane in range(1, self.lanes + 1):
            bit = 1 << (lane - 1)
            if value & bit and not prev & bit:
                self._set_lane(M.DP_STATE, lane, DPState.DEINIT)
                self._at(self.settle_s / 2, lambda ln=lane: self._set_lane(M.DP_STATE, ln, DPState.DEACTIVATED))
            elif prev & bit and not value & bit:
                self._set_lane(M.DP_STATE, lane, DPState.INIT)

                def up(ln=lane) -> None:
                    self._set_lane(M.DP_STATE, ln, DPState.ACTIVATED)
                    self._push([ln])

                self._at(self.settle_s, up)

    # ------------------------------------------------------------------ PRBS checker (pages 13h/14h)
    def _checker_enable(self, value: int) -> None:
        prev = self._pg(0x13)[M.HOST_CHK_ENABLE.offset - 128]
        now = self.clock()
        for lane in range(1, self.lanes + 1):
            bit = 1 << (lane - 1)
            if value & bit and not prev & bit:
                self._chk[lane] = {"t": now, "bits": 0, "errors": 0}  # enabling resets the counters
            elif prev & bit and not value & bit:
                self._accumulate()
                self._chk.get(lane, {})["t"] = None

    def _accumulate(self) -> None:
        now = self.clock()
        for lane, c in self._chk.items():
            if c.get("t") is None:
                continue
            dt = now - c["t"]
            if dt > 0 and self.dp_state(lane) == DPState.ACTIVATED:
                cnt = self.link.count_errors(lane, dt, path="module_rx")
                c["bits"] += cnt.bits
                c["errors"] += cnt.errors
            c["t"] = now

    def _refresh_diag(self) -> None:
        self._accumulate()
        p14 = self._pg(0x14)
        sel = p14[0]
        first = {M.DIAG_SEL_HOST_ERRCNT_1_4: 1, M.DIAG_SEL_HOST_ERRCNT_5_8: 5}.get(sel)
        data = bytearray(64)
        if first is not None:
            for i in range(4):
                c = self._chk.get(first + i, {"bits": 0, "errors": 0})
                base = i * M.DIAG_LANE_STRIDE
                data[base:base + 8] = int(c["bits"]).to_bytes(8, "big")
                data[base + 8:base + 16] = int(c["errors"]).to_bytes(8, "big")
        p14[M.DIAG_DATA_OFFSET - 128:] = data


    # ------------------------------------------------------------------ VDM (pages 20h-2Fh)
    def _vdm_samples(self) -> None:
        """Fill page 24h from the link: pre-FEC BER (Poisson over a 0.1 s window) and eSNR.

        eSNR from the symbol error probability P of the module-input eye with the M-PAM relation
        P = 2 (1 - 1/M) Q(sqrt(3 SNR / (M^2 - 1))) (Proakis, Digital Communications, 5th ed., 4.3),
        M = 4: SNR = 5 Qinv(P / 1.5)^2 (an emulator convention: real modules estimate eSNR from their
        slicer histograms)."""
        from statistics import NormalDist

        desc, out = self._pg(M.VDM_DESC_PAGE), self._pg(M.VDM_SAMPLE_PAGE)
        for i in range(64):
            lane, typ = (desc[2 * i] & 0xF) + 1, desc[2 * i + 1]
            if typ == 0 or lane > self.lanes:
                continue
            if typ == M.VDM_PREFEC_BER_HOST:
                raw = M.f16_encode(self.link.count_errors(lane, 0.1, path="module_rx").ber)
            elif typ == M.VDM_ESNR_HOST:
                p = min(max(self.link.ber(lane, "module_rx"), 1e-300), 0.74)
                q = -NormalDist().inv_cdf(p / 1.5) if p / 1.5 < 0.5 else 0.0
                import math

                snr_db = 10 * math.log10(max(5.0 * q * q, 1e-3))
                raw = int(round(min(max(snr_db, 0.0), 255.0) * 256))
            else:
                continue
            out[2 * i:2 * i + 2] = raw.to_bytes(2, "big")


# --------------------------------------------------------------------------------------------------
# emu:CHANNEL resources: one emulated module per resource string per process (hardware persists)
# --------------------------------------------------------------------------------------------------
_EMULATORS: dict[str, EmulatedModule] = {}
_REG_LOCK = threading.Lock()


def _opt_bool(v: str) -> bool:
    return v.lower() in ("1", "true", "yes", "on")


def emulator_for(spec) -> EmulatedModule:
    """The process-wide emulated module for an ``emu:`` resource spec (created on first use).

    Options: ``seed``, ``settle_ms`` (default 50), ``fast=1`` (virtual clock), ``lanes`` (8),
    ``stepped=1`` (SteppedConfigOnly), ``noise=0`` (exact error counts), ``adaptive=0|1`` (Tx input
    adaptive EQ at power-up; default 1 as shipped, 0 = fixed Tx input EQ on all lanes),
    ``adaptive_cap=0`` (a module that does not advertise Tx input adaptive EQ at all), ``name``
    (distinguishes otherwise equal strings)."""
    from eqtune.errors import InputError

    key = spec.target + "?" + "&".join(f"{k}={v}" for k, v in sorted(spec.options.items()))
    with _REG_LOCK:
        mod = _EMULATORS.get(key)
        if mod is None:
            o = spec.options
            try:
                kwargs = {
                    "seed": int(o["seed"]) if "seed" in o else None,
                    "settle_s": float(o.get("settle_ms", 50)) / 1000.0,
                    "lanes": int(o.get("lanes", 8)),
                    "stepped_config_only": _opt_bool(o.get("stepped", "0")),
                    "tx_adaptive_on": _opt_bool(o.get("adaptive", "1")),
                    "tx_adaptive": _opt_bool(o.get("adaptive_cap", "1")),
                    "noise": _opt_bool(o.get("noise", "1")),
                    "clock": VirtualClock() if _opt_bool(o.get("fast", "0")) else None,
                    "name": o.get("name", f"emu:{spec.target}"),
                }
            except ValueError as exc:
                raise InputError(f"emu:{spec.target}: bad emulator option ({exc}); e.g. emu:c2m-10in?seed=1&settle_ms=0") from None
            try:
                mod = EmulatedModule(channel=spec.target, **kwargs)
            except ValueError as exc:
                raise InputError(f"emu:{spec.target}: {exc}") from None
            _EMULATORS[key] = mod
        return mod


def reset_emulators() -> None:
    """Forget every ``emu:`` module of this process (tests)."""
    with _REG_LOCK:
        _EMULATORS.clear()
