"""A CMIS 5.2 module emulator behind the same 256-byte two-wire interface as real hardware.

Memory map: the emulator's OWN register table :mod:`eqtune.emulate.cmis_table`
(``cmis_table.toml``, every field cited to sonic-platform-common, FBOSS qsfp_service or Xena's
cable-perf-test-suite); it does not import the driver's map :mod:`eqtune.drivers.cmis_map`, so a wrong
bit in either fails the driver tests. Identity (lower page, page 00h with its byte-222 checksum),
advertising (page 01h), Staged Control Set 0 (page 10h), status and Active Control Set (page 11h), PRBS
checker controls, counters and lock latch (pages 13h/14h), VDM (pages 20h-2Fh, :mod:`eqtune.emulate.vdm`).

Module images (``image=`` / resource option ``image=NAME``, table ``[images.*]``): advertised
profiles differing in CMIS revision, SteppedConfigOnly/AutoCommissioning, diagnostics and VDM pages, 4
or 8 lanes, each with a real application advertisement (MediaType, SFF-8024 host/media codes, media lane
assignment, power class); or a real module's page dump (``images/fboss-*.json``).
Reconfiguration (:attr:`EmulatedModule.reconfiguration`): ApplyDPInit in DPDeactivated (the
step-by-step procedure) is accepted on every image; ApplyDPInit from DPActivated only with SteppedConfigOnly
0 or CMIS 5.3 AutoCommissioning 01b (else ConfigRejectedLaneInUse); ApplyImmediate only with SteppedConfigOnly
0 or CMIS 5.3 AutoCommissioning 10b, silently ignored otherwise. Module state machine with LowPwr
(LowPwrRequestSW), SoftwareReset / :meth:`EmulatedModule.reset_to_defaults`, Tx disable, DPInitPending and
DataPathInitialized: what SONiC's xcvrd drives (tests/hosts).

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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqtune.emulate.bus import EmuNack, EmuTimeout, RealClock, VirtualClock
from eqtune.emulate.cmis_table import DEFAULT_IMAGE, Reg, dump_names, dump_profile, load_dump, threshold_bytes
from eqtune.emulate.datapath import EQ_REGS, ConfigStatus, DataPathMixin, DPState, T
from eqtune.emulate.link import EmulatedLink
from eqtune.emulate.module_state import ModuleStateMixin
from eqtune.emulate.prbs import PrbsCheckerMixin, f16_encode
from eqtune.emulate.vdm import VdmModel
from eqtune.serdes.knobs import TX_EQ

# re-exported: the names this module has always offered
__all__ = [
    "DEFAULT_IDENTITY", "EQ_REGS", "ConfigStatus", "DPState", "EmuNack", "EmuTimeout", "EmulatedModule",
    "RealClock", "Reg", "T", "VirtualClock", "WriteRecord", "f16_encode",
]


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


class EmulatedModule(ModuleStateMixin, DataPathMixin, PrbsCheckerMixin):
    """An 800G CMIS module emulator. ``read(offset, n)``/``write(offset, data)`` like an I2C target.

    ``image`` names an advertised profile of the table (``[images.*]``); ``lanes``,
    ``stepped_config_only``, ``auto_commissioning``, ``diagnostics`` and ``vdm`` override it."""

    def __init__(self, link=None, *, channel: str | None = None, lanes: int | None = None, settle_s: float = 0.05,
                 clock=None, seed: int | None = None, noise: bool = True, rx_pre_max: int = 7,
                 rx_post_max: int = 7, rx_amp_codes: tuple[int, ...] = (0, 1, 2, 3), tx_eq_max: int = 10,
                 tx_adaptive: bool = True, tx_adaptive_on: bool = True, stepped_config_only: bool | None = None,
                 diagnostics: bool | None = None, vdm: bool | None = None, auto_commissioning: int | None = None,
                 image: str | None = None, identity: dict[str, Any] | None = None, name: str = "emu",
                 status_latency_s: float = 0.0, cmis_rev: int | None = None, config_s: float | None = None,
                 real_timing: bool = False) -> None:
        image = image or DEFAULT_IMAGE
        if image in T.images:
            img = T.images[image]
        elif image in dump_names():  # a real module's page dump: its advertisement, read from its bytes
            img = dump_profile(image)
            rx_pre_max, rx_post_max, tx_eq_max = img["rx_pre_max"], img["rx_post_max"], img["tx_eq_max"]
            rx_amp_codes, tx_adaptive = img["rx_amp_codes"], img["tx_adaptive"]
        else:
            raise ValueError(f"unknown module image {image!r}; images: {', '.join(sorted(T.images) + dump_names())}")
        self.image = image
        self._image_cfg = img
        self._dump = load_dump(image) if img.get("dump") else None
        if link is None:
            link = EmulatedLink(channel or str(img.get("channel", "c2m-10in")), lanes=lanes or int(img["lanes"]), seed=seed, noise=noise, tx_eq_max=tx_eq_max,
                                receiver=str(img.get("module_receiver", "ctle")))
        self.link = link
        self.lanes = link.lanes
        self.name = name
        self.settle_s = float(settle_s)
        # ConfigStatus keeps its previous value this long after a trigger before showing ConfigInProgress
        # (a module that is slow to start the procedure: a host reading at once sees a stale ConfigSuccess)
        self.status_latency_s = float(status_latency_s)
        # ConfigStatus shows ConfigInProgress this long after an accepted trigger (None: settle_s), as
        # a module that takes its time to commission the staged set does
        self.config_s = None if config_s is None else float(config_s)
        self.clock = clock if clock is not None else RealClock()
        self.caps = {
            "rx_pre_max": rx_pre_max, "rx_post_max": rx_post_max, "rx_amp_codes": tuple(rx_amp_codes),
            "tx_eq_max": tx_eq_max, "tx_adaptive": tx_adaptive,
        }
        self.tx_adaptive_on = bool(tx_adaptive and tx_adaptive_on)
        self.stepped_config_only = bool(img["stepped_config_only"] if stepped_config_only is None else stepped_config_only)
        if auto_commissioning is None and stepped_config_only is not None:
            auto_commissioning = 1 if stepped_config_only else 0  # stepped=1 alone: regular reconfiguration
        self.auto_commissioning = int(img["auto_commissioning"] if auto_commissioning is None else auto_commissioning)
        self.diagnostics = bool(img["diagnostics"] if diagnostics is None else diagnostics)
        self.vdm = bool(img["vdm"] if vdm is None else vdm)
        self.vdm_types = list(img.get("vdm_types", [])) if self.vdm else []
        if self.vdm and not self.vdm_types:
            self.vdm_types = ["esnr_host", "ber_cur_host"]
        self.dp_durations = int(img.get("dp_durations", 0x44))
        self.identity = {**DEFAULT_IDENTITY, "identifier": int(img.get("identifier", 0x19)),
                         "cmis_rev": int(img.get("cmis_rev", 0x52)),
                         **({"pn": str(img["pn"])} if "pn" in img else {}), **(identity or {})}
        if cmis_rev is not None:
            self.identity["cmis_rev"] = int(cmis_rev)
        self.cmis_rev = int(self.identity["cmis_rev"])
        self.app = {k: img[k] for k in ("host_if", "media_if", "media_type", "power_class", "max_power_w") if k in img}
        # host waits a driver may shorten for this emulator (transport.wait_scale): real-host waits on a
        # virtual clock cost nothing; on the real clock they scale with the emulated settle time
        # (``real_timing=True``, resource option ``timing=real``: the host waits as on real hardware)
        self.host_wait_scale = (1.0 if real_timing or isinstance(self.clock, VirtualClock)
                                else min(1.0, self.settle_s / 0.5))
        self._lock = threading.RLock()
        self._lower = bytearray(128)
        self._pages: dict[tuple[int, int], bytearray] = {}
        self._bank = 0
        self._page = 0
        self._events: list[tuple[float, int, Any]] = []
        self._seq = 0
        self._faults: list[_Fault] = []
        self._fault_rng = np.random.default_rng(seed)
        self._dpdeinit_prev = 0
        self._chk: dict[int, dict[str, float]] = {}  # lane -> {"t": last accumulate, "bits", "errors"}
        self._lol_latch = 0
        self.writes: list[WriteRecord] = []
        self.select_writes = 0
        self.applies = 0
        self.ignored_triggers = 0
        self._vdm = VdmModel(self)
        self._build()

    @property
    def reconfiguration(self) -> str:
        """What this module accepts: "both" (SteppedConfigOnly 0: step-by-step, ApplyDPInit from
        DPActivated and ApplyImmediate), "stepped" (SteppedConfigOnly 1: ApplyDPInit only in
        DPDeactivated), and from CMIS 5.3 (byte 2 bits 1-0 AutoCommissioning; reserved before, so
        ignored) "hot" (10b: also ApplyImmediate) or "regular" (01b: also ApplyDPInit from
        DPActivated). OIF-CMIS-05.2 s6.2.4 / byte 00h:2 bit 6; OIF-CMIS-05.3 byte 00h:2 bits 1-0."""
        if not self.stepped_config_only:
            return "both"
        if self.cmis_rev < 0x53:
            return "stepped"
        return {2: "hot", 1: "regular"}.get(self.auto_commissioning & 3, "stepped")

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

    def _byte(self, page: int, off: int) -> int:
        return self._lower[off] if off < 128 else self._pg(page)[off - 128]

    def _set_byte(self, page: int, off: int, value: int) -> None:
        if off < 128:
            self._lower[off] = value & 0xFF
        else:
            self._pg(page)[off - 128] = value & 0xFF

    def peek_raw(self, page: int, off: int) -> int:
        return self._byte(page, off)

    def _get(self, reg: Reg) -> int:
        return reg.get(self._byte(reg.page, reg.offset))

    def _put(self, reg: Reg, value: int) -> None:
        self._set_byte(reg.page, reg.offset, reg.put(self._byte(reg.page, reg.offset), value))

    def _get_lane(self, reg: Reg, lane: int) -> int:
        off, shift, mask = reg.locate(lane)
        return (self._byte(reg.page, off) >> shift) & mask

    def _set_lane(self, reg: Reg, lane: int, value: int) -> None:
        off, shift, mask = reg.locate(lane)
        b = self._byte(reg.page, off)
        self._set_byte(reg.page, off, (b & ~(mask << shift) & 0xFF) | ((value & mask) << shift))

    def _set_bytes(self, reg: Reg, data: bytes) -> None:
        for i, b in enumerate(bytes(data)[: reg.size]):
            self._set_byte(reg.page, reg.offset + i, b)

    def _set_str(self, reg: Reg, text: str) -> None:
        self._set_bytes(reg, text.encode("ascii")[: reg.size].ljust(reg.size, b" "))

    # ------------------------------------------------------------------ initial image
    def _load_dump(self, dump: dict[str, Any]) -> None:
        """Memory from a real module's page dump (eqtune/emulate/images): every page as dumped, the
        link at the dump's active codes and Tx adaptive EQ state; the module state machine, data
        path and Apply procedures then behave as for the table's images. VDM pages stay as dumped
        (no live samples); a freeze/unfreeze request is acknowledged (page 2Fh byte 145)."""
        for key, data in dump["pages"].items():
            if key == "lower":
                self._lower[:] = data
            else:
                self._pg(int(key, 16))[:] = data
        self._lower[T.ModuleControl.offset] &= ~(1 << T.SoftwareReset.bit_lo) & 0xFF
        self._put(T.ModuleState, T.codes["module"]["ready"])
        for lane in range(1, 9):
            if lane > self.lanes:
                continue
            codes = {k: self._get_lane(active, lane) for k, (_, active) in EQ_REGS.items()}
            codes[TX_EQ] = min(codes[TX_EQ], self.caps["tx_eq_max"])
            self.link.set_codes(lane, codes)
            self._set_lane(T.DPState, lane, DPState.ACTIVATED if self._get_lane(T.ActiveDPConfig, lane) >> 4
                           else DPState.DEACTIVATED)
        self._defaults = {lane: self.link.active_codes(lane) for lane in range(1, self.lanes + 1)}
        self._dpdeinit_prev = self._byte(0x10, T.DPDeinit.offset)
        if hasattr(self.link, "set_tx_adaptive"):
            en = self._byte(0x11, T.ActiveAdaptiveEnable.offset)
            for lane in range(1, self.lanes + 1):
                self.link.set_tx_adaptive(lane, bool(en >> (lane - 1) & 1))

    def _build(self) -> None:
        if self._dump is not None:
            self._load_dump(self._dump)
            return
        ident = self.identity
        self._put(T.Identifier, ident["identifier"])
        self._put(T.CmisRevision, ident["cmis_rev"])
        self._put(T.FlatMemory, 0)  # paged memory
        self._put(T.SteppedConfigOnly, int(self.stepped_config_only))
        self._put(T.AutoCommissioning, self.auto_commissioning)
        self._put(T.ModuleState, T.codes["module"]["ready"])
        self._put(T.ActiveFwMajor, ident["firmware"][0])
        self._put(T.ActiveFwMinor, ident["firmware"][1])
        # Application descriptor 1 (table [images.*] host_if / media_if, SFF-8024 codes right for the
        # lane count: 800GAUI-8 + 800GBASE-DR8 on 8 lanes, 400GAUI-4 + 400GBASE-DR4 on 4), host/media
        # lane counts, host lane assignment (lane 1); the next descriptor's first byte 0xFF ends the list
        app = self.app
        host_if = int(app.get("host_if", 81 if self.lanes == 8 else 79))
        media_if = int(app.get("media_if", 86 if self.lanes == 8 else 28))
        self._put(T.MediaType, int(app.get("media_type", 2)))
        self._set_bytes(T.AppDescriptor1, bytes([host_if, media_if, (self.lanes << 4) | self.lanes, 0x01]))
        self._set_byte(0, T.AppDescriptor1.offset + 4, 0xFF)
        self._set_byte(0, 128, ident["identifier"])
        self._set_str(T.VendorName, ident["vendor"])
        self._set_bytes(T.VendorOUI, bytes(ident["oui"]))
        self._set_str(T.VendorPN, ident["pn"])
        self._set_str(T.VendorRev, ident["rev"])
        self._set_str(T.VendorSN, ident["sn"])
        self._set_str(T.DateCode, ident["date_code"])
        self._put(T.PowerClass, int(app.get("power_class", 6)))
        self._put(T.MaxPower, int(round(float(app.get("max_power_w", 14.0)) * 4)))
        p0 = self._pg(0)
        self._put(T.PageChecksum00, sum(p0[0:T.PageChecksum00.offset - 128]) & 0xFF)
        self._put(T.InactiveFwMajor, ident["firmware"][0])
        self._put(T.InactiveFwMinor, ident["firmware"][1])
        caps = self.caps
        self._put(T.DiagPagesSupported, int(self.diagnostics))
        self._put(T.VdmPagesSupported, int(self.vdm))
        self._set_byte(1, T.MaxDurationDPInit.offset, self.dp_durations)
        # module power up/down and Tx turn on/off: code 4 (100 ms), sonic-codes DP_PATH_TIMINGS
        self._set_byte(1, T.ModulePwrUpDuration.offset, 0x44)
        self._set_byte(1, T.DPTxTurnOnDuration.offset, 0x44)
        self._put(T.TxDisableSupported, 1)
        self._put(T.MediaLaneAssign1, 0x01)
        self._put(T.TxInputEqMax, caps["tx_eq_max"] & 0xF)
        self._put(T.RxOutputLevelSupport, sum(1 << c for c in caps["rx_amp_codes"]) & 0xF)
        self._put(T.RxPreCursorMax, caps["rx_pre_max"] & 0xF)
        self._put(T.RxPostCursorMax, caps["rx_post_max"] & 0xF)
        self._put(T.TxFixedEqSupported, 1)
        self._put(T.TxAdaptiveSupported, int(caps["tx_adaptive"]))
        self._put(T.RxSiSupported, 0b111)
        # one data path over all lanes: AppSel 1, DataPathID 0 (first lane), ExplicitControl 0
        for lane in range(1, 9):
            in_use = lane <= self.lanes
            dpc = (1 << 4) if in_use else 0
            self._set_lane(T.DPConfig, lane, dpc)
            self._set_lane(T.ActiveDPConfig, lane, dpc)
            self._set_lane(T.DPState, lane, DPState.ACTIVATED if in_use else DPState.DEACTIVATED)
            self._set_lane(T.ConfigStatus, lane, ConfigStatus.UNDEFINED)
            if in_use:
                codes = self.link.active_codes(lane)
                for knob, (staged, active) in EQ_REGS.items():
                    self._set_lane(staged, lane, codes[knob])
                    self._set_lane(active, lane, codes[knob])
        self._defaults = {lane: self.link.active_codes(lane) for lane in range(1, self.lanes + 1)}
        if self.vdm:
            self._vdm.build()
        thresholds = threshold_bytes(self._image_cfg)  # page 02h, from a real module's dump (cmis_table.toml)
        if thresholds is not None:
            self._set_bytes(T.ThresholdsBlock, thresholds)
        # adaptive Tx input EQ on by default (as shipped modules do), in staged and active sets;
        # tx_adaptive_on=False (resource option adaptive=0) powers up with the fixed tx_eq code instead
        mask = (1 << self.lanes) - 1 if self.tx_adaptive_on else 0
        self._set_byte(0x10, T.AdaptiveEqEnable.offset, mask)
        self._set_byte(0x11, T.ActiveAdaptiveEnable.offset, mask)
        if hasattr(self.link, "set_tx_adaptive"):
            for lane in range(1, self.lanes + 1):
                self.link.set_tx_adaptive(lane, self.tx_adaptive_on)

    def reset_to_defaults(self) -> None:
        """Module reset: every control (staged and active control sets, DPDeinit, Tx disable, low-power
        request) back to the module's power-up defaults and the link back to the power-up codes. The
        same happens when a host sets SoftwareReset (lower page byte 26 bit 3; sonic CmisApi
        ``reset_module`` writes ``1 << 3``), also through ``eqtune emulate``'s register bridge. CMIS
        5.2 s6.3.2: control sets are volatile, a reset restores the module's defaults."""
        self.reset()

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
            self._dpdeinit_prev = 0
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
            if offset < 16 and offset + n > 14:
                self._temperature_monitor()
            out = bytearray()
            page = self._page
            for o in range(offset, offset + n):
                if o < 128:
                    out.append(self._lower[o])
                    continue
                if page == 0x14 and self.diagnostics and o == max(offset, T.DiagData.offset):
                    self._refresh_diag()  # once per read transaction
                elif (self.vdm and self._dump is None and o == offset
                      and T.vdm["sample_page"] <= page < T.vdm["sample_page"] + 4):
                    self._vdm.refresh()
                if page == 0x14 and self.diagnostics and o == T.HostCheckerLolLatch.offset:
                    self._accumulate()
                    out.append(self._lol_latch | self._unlocked_mask())
                    self._lol_latch = 0  # latched flags clear on read
                    continue
                if self.vdm and self._dump is None and page == T.vdm["flag_page"]:
                    out.append(self._vdm.read_flag(o))
                    continue
                out.append(self._pg(page, self._bank)[o - 128])
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
            elif o == T.ModuleControl.offset:
                self._module_control(b)
            return  # other lower-page bytes are read-only here
        page = self._page
        if page == 0x10 and self._bank == 0:
            if o == T.ApplyDPInit.offset:
                self._apply(b, immediate=False)
            elif o == T.ApplyImmediate.offset:
                self._apply(b, immediate=True)
            elif o == T.DPDeinit.offset:
                self._pg(0x10)[o - 128] = b
                self._dpdeinit(b)
            elif o == T.OutputDisableTx.offset:
                self._pg(0x10)[o - 128] = b
                self._tx_disable(b)
            else:
                self._pg(0x10)[o - 128] = b
        elif page == 0x13 and self._bank == 0 and o >= 144 and self.diagnostics:
            if o == T.HostCheckerEnable.offset:
                self._checker_enable(b)
            if o == T.BerCtrl.offset and b >> T.diag["ber_ctrl_reset_bit"] & 1:
                self._reset_counters()
            self._pg(0x13)[o - 128] = b
        elif page == 0x2F and self.vdm and o == T.VdmControl.offset:
            self._pg(0x2F)[o - 128] = b
            if self._dump is None:
                self._vdm.control(b)
            else:  # dumped VDM pages: acknowledge the request at once
                self._put(T.VdmFreezeDone, b >> 7 & 1)
                self._put(T.VdmUnfreezeDone, 1 - (b >> 7 & 1))
        elif page == 0x14 and self._bank == 0 and self.diagnostics and o == T.DiagSelector.offset:
            self._pg(0x14)[o - 128] = b
            self._refresh_diag()
        # anything else is read-only: ignored, as modules do

    # ------------------------------------------------------------------ module monitors
    def _temperature_monitor(self) -> None:
        """Lower memory bytes 14-15 TempMonValue (s16, 1/256 C; CMIS 5.2 s8.2.5, sonic CmisMemMap
        TEMPERATURE_FIELD @ (0x0, 14)) from the link's thermal profile (35 C without one)."""
        temp = getattr(self.link, "temperature_c", lambda: None)()
        raw = int(round((35.0 if temp is None else temp) * 256.0))
        self._lower[14:16] = max(-32768, min(32767, raw)).to_bytes(2, "big", signed=True)
