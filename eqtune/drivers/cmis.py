"""CMIS module driver: identity, EQ capabilities, active EQ, safe EQ apply, module PRBS BER.

Every register comes from the declarative map in :mod:`eqtune.drivers.cmis_map` (with CMIS 5.2 /
sonic_xcvr citations). The apply procedure (CMIS 5.2 section 6.2.4 "Data Path configuration"
procedures, section 8.9.3 Apply triggers) is:

    validate against page 01h advertisement (EqRangeError, before any write)
    -> module must be ModuleReady, lanes' data paths in a steady state (wait while DPInit/DPDeinit)
    -> remember Staged Control Set 0 (page 10h 145-173) and the Active Control Set (page 11h)
    -> stage codes for every lane of the affected data paths (others keep their active codes),
       ExplicitControl=1 in DPConfig keeping AppSel and DataPathID, Tx adaptive EQ off where tx_eq is set
       (``enable_tx_adaptive``/``set_tx_adaptive`` run the same procedure to switch it back on)
    -> ApplyImmediate (hot reconfiguration) when the module allows it (SteppedConfigOnly=0),
       else ApplyDPInit (with DPDeinit around it when SteppedConfigOnly=1)
    -> poll ConfigStatus (page 11h 202-205) and DPState (page 11h 128-131)
    -> read back page 11h twice (stable) and compare
    -> on any failure: re-apply the previous active codes if they changed, restore the staged
       set byte for byte, and raise ModuleError saying what happened and what was restored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis_map import ConfigStatus, DPState, ModuleState
from eqtune.drivers.cmis_policy import (
    DURATION_S,
    ApplyMethod,
    CmisTiming,
    choose_apply_method,
    reconfiguration_support,
)
from eqtune.drivers.cmis_prbs import PrbsMixin
from eqtune.drivers.cmis_vdm import VdmMixin
from eqtune.drivers.transport import PagedRegisters, open_transport
from eqtune.errors import DeviceError, EqRangeError, ModuleError, TransportError
from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ

MODULE_STATE_NAMES = {1: "ModuleLowPwr", 2: "ModulePwrUp", 3: "ModuleReady", 4: "ModulePwrDn", 5: "ModuleFault"}
DP_STATE_NAMES = {1: "DPDeactivated", 2: "DPInit", 3: "DPDeinit", 4: "DPActivated", 5: "DPTxTurnOn",
                  6: "DPTxTurnOff", 7: "DPInitialized"}
CONFIG_STATUS_NAMES = {0: "ConfigUndefined", 1: "ConfigSuccess", 2: "ConfigRejected",
                       3: "ConfigRejectedInvalidAppSel", 4: "ConfigRejectedInvalidDataPath",
                       5: "ConfigRejectedInvalidSI", 6: "ConfigRejectedLanesInUse",
                       7: "ConfigRejectedPartialDataPath", 12: "ConfigInProgress"}
STEADY_DP = (DPState.ACTIVATED, DPState.DEACTIVATED, DPState.INITIALIZED)
# SFF-8024 identifiers of modules managed with CMIS (SFF-8024 Table 4-1)
CMIS_IDENTIFIERS = {0x18: "QSFP-DD", 0x19: "OSFP", 0x1A: "SFP-DD", 0x1B: "DSFP", 0x1E: "QSFP+ (CMIS)",
                    0x1F: "SFP-DD (CMIS)", 0x20: "SFP+ (CMIS)", 0x21: "OSFP-XD", 0x22: "OIF-ELSFP",
                    0x23: "CDFP (CMIS)"}

EqCodes = dict[int, dict[str, int]]


def _state_name(table: dict[int, str], value: int) -> str:
    return table.get(int(value), f"reserved({int(value)})")


@dataclass(frozen=True)
class ModuleIdentity:
    vendor: str
    oui: str
    pn: str
    rev: str
    sn: str
    date_code: str
    firmware: str
    cmis_rev: str
    module_state: str
    form_factor: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class EqCapabilities:
    lanes: int
    rx_pre_max: int | None
    rx_post_max: int | None
    rx_amp_codes: tuple[int, ...]
    tx_eq_max: int | None
    tx_adaptive: bool
    stepped_config_only: bool
    apply_immediate: bool
    diagnostics: bool = False
    vdm: bool = False
    dp_init_max_s: float | None = None
    auto_commissioning: int = 0
    reconfiguration: str = "both"

    def knob_values(self) -> dict[str, tuple[int, ...]]:
        """Allowed codes per supported knob (knobs the module does not support are absent)."""
        out: dict[str, tuple[int, ...]] = {}
        if self.rx_pre_max is not None:
            out[RX_PRE] = tuple(range(self.rx_pre_max + 1))
        if self.rx_post_max is not None:
            out[RX_POST] = tuple(range(self.rx_post_max + 1))
        if self.rx_amp_codes:
            out[RX_AMP] = tuple(self.rx_amp_codes)
        if self.tx_eq_max is not None:
            out[TX_EQ] = tuple(range(self.tx_eq_max + 1))
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["rx_amp_codes"] = list(self.rx_amp_codes)
        d["knob_values"] = {k: list(v) for k, v in self.knob_values().items()}
        return d


def _ascii(raw: bytes) -> str:
    return raw.decode("ascii", errors="replace").strip(" \x00")


def _date(raw: bytes) -> str:
    s = _ascii(raw)
    if len(s) >= 6 and s[:6].isdigit():
        lot = s[6:].strip()
        return f"20{s[0:2]}-{s[2:4]}-{s[4:6]}" + (f" lot {lot}" if lot else "")
    return s


class CmisModule(PrbsMixin, VdmMixin):
    """A CMIS 4.0/5.x module behind a :class:`PagedRegisters` view. Lanes are numbered 1..8."""

    def __init__(self, regs: PagedRegisters, *, resource: str | None = None, poll_timeout_s: float = 10.0,
                 poll_interval_s: float = 0.005, timing: CmisTiming | None = None, notify=None) -> None:
        self.regs = regs
        self.transport = regs.transport
        self.resource = resource or regs.resource
        self.poll_timeout_s = poll_timeout_s
        self.poll_interval_s = poll_interval_s
        # host waits as real hosts use them; a transport may shorten them (emulators: wait_scale)
        self.timing = timing or CmisTiming().scaled(getattr(self.transport, "wait_scale", 1.0))
        # notify(message): told before any write when an apply takes the data path (traffic) down
        self.notify = notify
        self._settle_until = 0.0
        self._caps: EqCapabilities | None = None

    # ------------------------------------------------------------------ context
    def close(self) -> None:
        self.regs.close()

    def __enter__(self) -> CmisModule:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CmisModule({self.resource!r})"

    # ------------------------------------------------------------------ identity / status
    def module_state(self) -> str:
        return _state_name(MODULE_STATE_NAMES, self.regs.read_scalar(M.MODULE_STATE))

    def identity(self) -> ModuleIdentity:
        """Page 00h administrative information; the page checksum (byte 222) is verified."""
        lower = self.regs.read(0, 0, 41)
        for _ in range(3):
            up = self.regs.read(0, 128, 95)  # 128..222
            if sum(up[:94]) & 0xFF == up[94]:
                break
        else:
            raise TransportError(
                f"{self.resource}: page 00h checksum (byte 222) does not match on 3 reads: corrupted "
                "reads; check the cable/adapter, lower the bus speed, or reseat the module"
            )

        def fld(f: M.Field) -> bytes:
            return up[f.offset - 128: f.offset - 128 + f.size]

        major, minor = lower[M.CMIS_REVISION.offset] >> 4, lower[M.CMIS_REVISION.offset] & 0xF
        return ModuleIdentity(
            vendor=_ascii(fld(M.VENDOR_NAME)),
            oui="-".join(f"{b:02X}" for b in fld(M.VENDOR_OUI)),
            pn=_ascii(fld(M.VENDOR_PN)),
            rev=_ascii(fld(M.VENDOR_REV)),
            sn=_ascii(fld(M.VENDOR_SN)),
            date_code=_date(fld(M.DATE_CODE)),
            firmware=f"{lower[M.ACTIVE_FW_MAJOR.offset]}.{lower[M.ACTIVE_FW_MINOR.offset]}",
            cmis_rev=f"{major}.{minor}",
            module_state=_state_name(MODULE_STATE_NAMES, M.MODULE_STATE.scalar_value(lower[3:4])),
            form_factor=CMIS_IDENTIFIERS.get(lower[0], f"0x{lower[0]:02x}"),
        )

    def capabilities(self, refresh: bool = False) -> EqCapabilities:
        """Page 01h advertisement (cached; ``refresh=True`` re-reads)."""
        if self._caps is not None and not refresh:
            return self._caps
        # no checksum covers the lower page: read twice and compare, as page 01h (one flipped bit of
        # byte 2 would turn a hot-reconfigurable module into one that refuses every apply)
        lower2 = self.regs.read_stable(0, 2, 1)
        app = self.regs.read_stable(0, 86, 4)
        p1 = self.regs.read_stable(1, 142, 21)  # 142..162

        def b(off: int) -> int:
            return p1[off - 142]

        tx_adv, rx_adv = b(161), b(162)
        lanes = app[2] >> 4 if app[0] not in (0, 0xFF) and app[2] >> 4 else 8
        stepped = bool(M.STEPPED_CONFIG_ONLY.scalar_value(lower2))
        auto_comm = M.AUTO_COMMISSIONING.scalar_value(lower2)
        reconf = reconfiguration_support(stepped, auto_comm)
        amp_mask = M.RX_OUTPUT_LEVEL_SUPPORT.scalar_value(bytes([b(153)]))
        self._caps = EqCapabilities(
            lanes=min(8, lanes),
            rx_pre_max=M.RX_PRE_MAX.scalar_value(bytes([b(154)])) if rx_adv >> M.RX_PRE_SUPPORTED_BIT & 1 else None,
            rx_post_max=M.RX_POST_MAX.scalar_value(bytes([b(154)])) if rx_adv >> M.RX_POST_SUPPORTED_BIT & 1 else None,
            rx_amp_codes=tuple(c for c in range(4) if amp_mask >> c & 1) if rx_adv >> M.RX_AMP_SUPPORTED_BIT & 1 else (),
            tx_eq_max=M.TX_INPUT_EQ_MAX.scalar_value(bytes([b(153)])) if tx_adv >> M.TX_FIXED_EQ_SUPPORTED_BIT & 1 else None,
            tx_adaptive=bool(tx_adv >> M.TX_ADAPTIVE_EQ_SUPPORTED_BIT & 1),
            stepped_config_only=stepped,
            apply_immediate=reconf in ("both", "hot"),
            diagnostics=bool(M.DIAG_PAGES_SUPPORTED.scalar_value(bytes([b(142)]))),
            vdm=bool(M.VDM_SUPPORTED.scalar_value(bytes([b(142)]))),
            dp_init_max_s=DURATION_S[b(144) & 0xF],  # None for the reserved codes 14-15
            auto_commissioning=auto_comm,
            reconfiguration=reconf,
        )
        return self._caps

    def dp_states(self, stable: bool = False) -> dict[int, str]:
        lanes = range(1, self.capabilities().lanes + 1)
        return {lane: _state_name(DP_STATE_NAMES, v) for lane, v in self.regs.read_lanes(M.DP_STATE, lanes, stable=stable).items()}

    def config_status(self) -> dict[int, str]:
        lanes = range(1, self.capabilities().lanes + 1)
        return {lane: _state_name(CONFIG_STATUS_NAMES, v) for lane, v in self.regs.read_lanes(M.CONFIG_STATUS, lanes).items()}

    # ------------------------------------------------------------------ EQ read
    def _eq_block(self, page: int, first: int, last: int) -> bytes:
        return self.regs.read_stable(page, first, last - first + 1)

    def _decode_eq(self, block: bytes, first: int, lane: int, active: bool) -> dict[str, int]:
        out = {}
        supported = self.capabilities().knob_values()
        for knob, (staged, act) in M.EQ_FIELDS.items():
            if knob not in supported:
                continue
            fld = act if active else staged
            off, shift, mask = fld.locate(lane)
            out[knob] = (block[off - first] >> shift) & mask
        return out

    def _check_lane(self, lane: int) -> None:
        n = self.capabilities().lanes
        if not isinstance(lane, int) or not 1 <= lane <= n:
            raise EqRangeError(f"{self.resource}: lane {lane} does not exist: this module has lanes 1..{n}")

    def active_eq(self, lane: int) -> dict[str, int]:
        """Active EQ codes of ``lane`` from page 11h (knobs the module supports)."""
        self._check_lane(lane)
        return self._decode_eq(self._eq_block(0x11, M.ACTIVE_FIRST, M.ACTIVE_LAST), M.ACTIVE_FIRST, lane, True)

    def active_eq_all(self) -> dict[int, dict[str, int]]:
        block = self._eq_block(0x11, M.ACTIVE_FIRST, M.ACTIVE_LAST)
        return {lane: self._decode_eq(block, M.ACTIVE_FIRST, lane, True) for lane in range(1, self.capabilities().lanes + 1)}

    def staged_eq(self, lane: int) -> dict[str, int]:
        """Staged Control Set 0 codes of ``lane`` (page 10h)."""
        self._check_lane(lane)
        return self._decode_eq(self._eq_block(0x10, M.SCS0_FIRST, M.SCS0_LAST), M.SCS0_FIRST, lane, False)

    def tx_adaptive_enabled(self) -> dict[int, bool]:
        lanes = range(1, self.capabilities().lanes + 1)
        return {k: bool(v) for k, v in self.regs.read_lanes(M.TX_ADAPTIVE_EN_ACTIVE, lanes).items()}

    # ------------------------------------------------------------------ validation
    def validate_eq(self, codes: EqCodes) -> None:
        """Check lanes, knob names and codes against the page 01h advertisement (no writes)."""
        self._normalize(codes)

    def _normalize(self, codes: EqCodes) -> dict[int, dict[str, int]]:
        if not isinstance(codes, dict) or not codes:
            raise EqRangeError(f"{self.resource}: no EQ codes given; pass {{lane: {{knob: code}}}}")
        caps = self.capabilities()
        allowed = caps.knob_values()
        out: dict[int, dict[str, int]] = {}
        for lane, knobs in codes.items():
            self._check_lane(lane)
            if not knobs:
                raise EqRangeError(f"{self.resource}: lane {lane}: no knobs given")
            for knob, value in knobs.items():
                if knob not in M.EQ_FIELDS:
                    raise EqRangeError(f"{self.resource}: unknown knob {knob!r}; module knobs are "
                                       f"{', '.join(M.KNOBS)}")
                if knob not in allowed:
                    raise EqRangeError(f"{self.resource}: this module does not support {knob} control "
                                       "(page 01h advertisement); leave it out")
                try:
                    iv = int(value)
                except (TypeError, ValueError):
                    raise EqRangeError(f"{self.resource}: lane {lane} {knob}={value!r} is not an integer code") from None
                if iv != value or iv not in allowed[knob]:
                    vals = allowed[knob]
                    span = (f"{vals[0]}..{vals[-1]}" if knob != RX_AMP and list(vals) == list(range(vals[0], vals[-1] + 1))
                            else ", ".join(map(str, vals)))
                    raise EqRangeError(f"{self.resource}: lane {lane} {knob}={value} is outside what the module "
                                       f"advertises ({span}); pick a code in that range")
                out.setdefault(lane, {})[knob] = iv
        return out

    def plan_eq(self, codes: EqCodes) -> list[dict]:
        """What :meth:`apply_eq` would change: rows of lane, knob, current (active), new. No writes."""
        codes = self._normalize(codes)
        active = self.active_eq_all()
        return [{"lane": lane, "knob": k, "current": active[lane].get(k), "new": v}
                for lane in sorted(codes) for k, v in codes[lane].items()]

    # ------------------------------------------------------------------ polling helpers
    def _timeout(self) -> float:
        caps = self.capabilities()
        return max(self.poll_timeout_s, 2.0 * (caps.dp_init_max_s or 0.0))

    def apply_method(self, method: str = "auto") -> ApplyMethod:
        """The Apply procedure :meth:`apply_eq` uses with ``method`` (reads only). ModuleError when the
        module does not support it (see :func:`eqtune.drivers.cmis_policy.choose_apply_method`)."""
        if method not in ("auto", "immediate", "dpinit"):
            raise EqRangeError(f"apply method {method!r} unknown; use auto, immediate or dpinit")
        caps = self.capabilities()
        try:
            return choose_apply_method(caps.stepped_config_only, caps.auto_commissioning, method)
        except ValueError as exc:
            raise ModuleError(f"{self.resource}: {exc}") from None

    def _poll(self, what: str, check, timeout_s: float | None = None, interval_s: float | None = None):
        """Call ``check()`` until it returns a non-None value; ModuleError naming ``what`` on timeout."""
        t = self.transport
        deadline = t.monotonic() + (self._timeout() if timeout_s is None else timeout_s)
        while True:
            result = check()
            if result is not None:
                return result
            if t.monotonic() >= deadline:
                raise ModuleError(f"{self.resource}: timed out waiting for {what}")
            t.sleep(self.poll_interval_s if interval_s is None else interval_s)

    def _check_ready(self) -> None:
        state = self.regs.read_scalar(M.MODULE_STATE)
        if state != ModuleState.READY:
            name = _state_name(MODULE_STATE_NAMES, state)
            raise ModuleError(f"{self.resource}: module is in {name}, not ModuleReady; EQ cannot be applied. "
                              "Check that the host released LowPwr (lower page byte 26) and the module's "
                              "power/fault flags, then retry")

    def _wait_steady(self, lanes: list[int], what: str) -> dict[int, int]:
        last: dict[int, int] = {}

        def check():
            nonlocal last
            last = self.regs.read_lanes(M.DP_STATE, lanes)
            return last if all(v in STEADY_DP for v in last.values()) else None

        try:
            return self._poll(what, check)
        except ModuleError:
            busy = ", ".join(f"lane {ln} {_state_name(DP_STATE_NAMES, v)}" for ln, v in last.items() if v not in STEADY_DP)
            raise ModuleError(f"{self.resource}: data path not ready ({busy}) after {self._timeout():g} s; "
                              "check that the host is sending a signal on those lanes and the data path is "
                              "configured, then retry") from None

    def _data_path_lanes(self, lanes: list[int], dpcfg: bytes) -> list[int]:
        """All lanes sharing a data path (AppSel + DataPathID) with ``lanes`` (CMIS applies per data path)."""
        n = self.capabilities().lanes
        keys = {(dpcfg[ln - 1] >> 4, (dpcfg[ln - 1] >> 1) & 7) for ln in lanes if dpcfg[ln - 1] >> 4}
        group = {ln for ln in range(1, n + 1) if (dpcfg[ln - 1] >> 4, (dpcfg[ln - 1] >> 1) & 7) in keys}
        return sorted(group | set(lanes))

    # ------------------------------------------------------------------ apply
    def _compose_staged(self, base: bytes, target: dict[int, dict[str, int]], dpcfg_active: bytes,
                        adaptive: int) -> bytes:
        """Staged Control Set 0 (page 10h 145-173) holding ``target`` codes for its lanes, ExplicitControl
        on, and for those lanes the AdaptiveInputEqEnableTx bit (page 10h byte 153) taken from ``adaptive``
        (a lane bit mask); every other lane and field keeps what ``base`` holds."""
        out = bytearray(base)
        first = M.SCS0_FIRST
        for lane, knobs in target.items():
            i = M.DP_CONFIG_SCS0.offset - first + lane - 1
            # AppSel (bits 7-4) and DataPathID (bits 3-1) of the running configuration, ExplicitControl on
            out[i] = (dpcfg_active[lane - 1] & 0xFE) | 0x01
            for knob, value in knobs.items():
                fld = M.EQ_FIELDS[knob][0]
                off, shift, mask = fld.locate(lane)
                j = off - first
                out[j] = (out[j] & ~(mask << shift) & 0xFF) | (value << shift)
            j = M.TX_ADAPTIVE_EN_SCS0.offset - first
            bit = 1 << (lane - 1)
            out[j] = (out[j] & ~bit & 0xFF) | (adaptive & bit)
        return bytes(out)

    def _write_block(self, page: int, first: int, old: bytes, new: bytes) -> None:
        """Write only the bytes that differ, in runs of at most 8 bytes, then verify by stable read."""
        i = 0
        while i < len(new):
            if old[i] == new[i]:
                i += 1
                continue
            j = i
            while j < len(new) and j - i < 8 and old[j] != new[j]:
                j += 1
            self.regs.write(page, first + i, new[i:j])
            i = j
        got = self.regs.read_stable(page, first, len(new))
        if got != new:
            diff = [first + k for k in range(len(new)) if got[k] != new[k]]
            raise ModuleError(f"{self.resource}: page {page:02x}h bytes {diff} read back differently after "
                              "writing; the module did not accept the staged values")

    def _trigger(self, lanes: list[int], method: ApplyMethod, deinit_done: list[bool]) -> None:
        mask = sum(1 << (ln - 1) for ln in lanes)
        if method.trigger == "ApplyImmediate":
            self.regs.write(0x10, M.APPLY_IMMEDIATE_SCS0.offset, bytes([mask]))
            return
        if method.deinit:  # step-by-step: DPDeinit, wait DPDeactivated, ApplyDPInit, release DPDeinit
            cur = self.regs.read(0x10, M.DP_DEINIT.offset, 1)[0]
            self.regs.write(0x10, M.DP_DEINIT.offset, bytes([cur | mask]))
            deinit_done.append(True)
            self._poll("DPDeactivated after DPDeinit", lambda: True if all(
                v == DPState.DEACTIVATED for v in self.regs.read_lanes(M.DP_STATE, lanes).values()) else None,
                interval_s=self.timing.dp_poll_s)
        self.regs.write(0x10, M.APPLY_DPINIT_SCS0.offset, bytes([mask]))

    def _release_deinit(self, lanes: list[int]) -> None:
        mask = sum(1 << (ln - 1) for ln in lanes)
        cur = self.regs.read(0x10, M.DP_DEINIT.offset, 1)[0]
        self.regs.write(0x10, M.DP_DEINIT.offset, bytes([cur & ~mask & 0xFF]))

    def _wait_config(self, lanes: list[int]) -> None:
        last: dict[int, int] = {}

        def check():
            nonlocal last
            last = self.regs.read_lanes(M.CONFIG_STATUS, lanes)
            return last if all(v != ConfigStatus.IN_PROGRESS for v in last.values()) else None

        # a ConfigStatus read straight after the trigger can still show the previous ConfigSuccess:
        # wait first as real hosts do (FBOSS 500 ms, Xena 1 s; CmisTiming.after_trigger_s)
        self.transport.sleep(self.timing.after_trigger_s)
        try:
            status = self._poll("ConfigStatus", check, interval_s=self.timing.dp_poll_s)
        except ModuleError:
            raise ModuleError(f"{self.resource}: ConfigStatus still ConfigInProgress after {self._timeout():g} s "
                              f"on lane(s) {lanes}; the module is slow or hung: wait and read it with "
                              "'eqtune module show', or reset the module") from None
        bad = {ln: v for ln, v in status.items() if v != ConfigStatus.SUCCESS}
        if bad:
            desc = ", ".join(f"lane {ln} {_state_name(CONFIG_STATUS_NAMES, v)}" for ln, v in sorted(bad.items()))
            raise ModuleError(f"{self.resource}: the module rejected the configuration ({desc}); check the "
                              "codes against 'eqtune module show' capabilities and the module's application")

    def apply_eq(self, codes: EqCodes, *, method: str = "auto") -> None:
        """Validate -> stage (page 10h) -> apply -> poll -> read back (page 11h); restore on failure.

        ``method``: "auto" (ApplyImmediate when allowed, else ApplyDPInit), "immediate" or "dpinit".
        Writing ``tx_eq`` for a lane selects the fixed Tx input equalizer there, i.e. clears its
        AdaptiveInputEqEnableTx bit; :meth:`enable_tx_adaptive` sets it again.
        """
        immediate = self._apply_method(method)
        codes = self._normalize(codes)
        off = {ln for ln, k in codes.items() if TX_EQ in k}
        self._apply(codes, sorted(codes), off=off, immediate=immediate,
                    what=f"applying EQ to lane(s) {','.join(map(str, sorted(codes)))}")

    def enable_tx_adaptive(self, lanes: list[int], *, method: str = "auto") -> None:
        """Switch the module's Tx input adaptive equalizer back on for ``lanes``: the counterpart of
        writing a fixed ``tx_eq`` with :meth:`apply_eq`. See :meth:`set_tx_adaptive`."""
        self.set_tx_adaptive(lanes, True, method=method)

    def set_tx_adaptive(self, lanes: list[int], on: bool, *, method: str = "auto") -> None:
        """Turn Tx input adaptive EQ on (or off) for ``lanes``, leaving every code as it is.

        Refused before any write (EqRangeError) when turning it on and page 01h byte 161 bit 3
        (TxInputAdaptiveEqSupported) is clear, or for a lane that does not exist. Otherwise the same
        procedure as :meth:`apply_eq`: stage AdaptiveInputEqEnableTx (page 10h byte 153, CMIS 5.2
        Table 8-66) for the lanes' data paths, ApplyImmediate/ApplyDPInit, poll ConfigStatus/DPState,
        read back the active bit (page 11h byte 214, Table 8-87); on failure the previous active
        state and the staged set are restored and ModuleError is raised. Nothing is written when
        the lanes already run as asked.
        """
        immediate = self._apply_method(method)
        if isinstance(lanes, int):
            lanes = [lanes]
        lanes = sorted({int(ln) for ln in lanes})
        if not lanes:
            raise EqRangeError(f"{self.resource}: no lanes given; pass the lanes whose Tx input adaptive EQ to switch")
        for ln in lanes:
            self._check_lane(ln)
        if on and not self.capabilities().tx_adaptive:
            raise EqRangeError(f"{self.resource}: the module does not advertise Tx input adaptive EQ (page 01h "
                               "byte 161 bit 3), so it cannot be switched on; its Tx input runs the fixed "
                               "tx_eq code")
        state = "on" if on else "off"
        self._apply({}, lanes, on=set(lanes) if on else set(), off=set() if on else set(lanes),
                    immediate=immediate,
                    what=f"switching Tx input adaptive EQ {state} on lane(s) {','.join(map(str, lanes))}")

    def _apply_method(self, method: str) -> ApplyMethod:
        """The checked Apply procedure (before any write): ModuleError when unsupported."""
        return self.apply_method(method)

    def _apply(self, codes: EqCodes, lanes: list[int], *, immediate: ApplyMethod, what: str,
               off: set[int] = frozenset(), on: set[int] = frozenset()) -> None:
        """The shared apply procedure: ``codes`` (validated) for their lanes, Tx adaptive EQ cleared on
        ``off`` and set on ``on``; every other lane of the affected data paths keeps its active state.
        ``immediate`` is the :class:`ApplyMethod` to use."""
        method = immediate
        self._check_ready()
        dpcfg = self.regs.read_stable(0x11, M.ACTIVE_DP_CONFIG.offset, 8)
        unused = [ln for ln in lanes if not dpcfg[ln - 1] >> 4]
        if unused:
            raise ModuleError(f"{self.resource}: lane(s) {unused} belong to no configured data path (active AppSel 0); "
                              "configure the application on the host first (e.g. bring the port up), then retry")
        group = self._data_path_lanes(lanes, dpcfg)
        pre_states = self._wait_steady(group, "a steady data path state")
        old_staged = self._eq_block(0x10, M.SCS0_FIRST, M.SCS0_LAST)
        old_active_block = self._eq_block(0x11, M.ACTIVE_FIRST, M.ACTIVE_LAST)
        old_active = {ln: self._decode_eq(old_active_block, M.ACTIVE_FIRST, ln, True) for ln in group}
        adaptive_active = old_active_block[M.TX_ADAPTIVE_EN_ACTIVE.offset - M.ACTIVE_FIRST]
        target = {ln: {**old_active[ln], **codes.get(ln, {})} for ln in group}
        off_mask = sum(1 << (ln - 1) for ln in off)
        on_mask = sum(1 << (ln - 1) for ln in on)
        adaptive = (adaptive_active & ~off_mask & 0xFF) | on_mask
        group_mask = sum(1 << (ln - 1) for ln in group)
        if all(old_active[ln] == target[ln] for ln in group) and not (adaptive ^ adaptive_active) & group_mask:
            return  # already active: nothing to write
        if method.traffic_down and self.notify is not None:
            self.notify(f"{self.resource}: {method.trigger}{' with DPDeinit' if method.deinit else ''} on lane(s) "
                        f"{','.join(map(str, group))}: the data path goes down (traffic stops for up to "
                        f"{self._timeout():g} s) -- {method.reason}")
        # ExplicitControl=1 makes the module use every staged SI field: the staged set is first a copy of
        # the Active Control Set (page 11h 206-234 has the page 10h 145-173 layout), so no stale staged
        # byte (e.g. 154-155, 160-161) is applied (CMIS 5.2 s8.9.4 ExplicitControl; the host practice the issue attributes to
        # SONiC's CMIS manager, not re-checked in its source here).
        new_staged = self._compose_staged(old_active_block, target, dpcfg, adaptive)
        try:
            self._run_apply(group, old_staged, new_staged, target, adaptive, method, pre_states)
        except DeviceError as exc:
            note = self._restore(group, old_staged, old_active, adaptive_active, dpcfg, method, pre_states)
            raise ModuleError(f"{self.resource}: {what} failed: {exc} -- {note}") from exc
        self._settle_until = self.transport.monotonic() + self.timing.ber_settle_s

    def _trigger_and_wait(self, group: list[int], method: ApplyMethod) -> None:
        """Apply the staged set to ``group`` and wait for ConfigStatus; a DPDeinit raised for a
        SteppedConfigOnly module is always released again."""
        deinit: list[bool] = []
        try:
            self._trigger(group, method, deinit)
            self._wait_config(group)
        finally:
            if deinit:
                self._release_deinit(group)

    def _run_apply(self, group, old_staged, new_staged, target, adaptive, method: ApplyMethod, pre_states) -> None:
        self._write_block(0x10, M.SCS0_FIRST, old_staged, new_staged)
        self._trigger_and_wait(group, method)
        # DPState poll as FBOSS does (500 ms period, >= 10 s; CmisTiming)
        self._poll("the data path to return to its state", lambda: True if all(
            v == pre_states[ln] for ln, v in self.regs.read_lanes(M.DP_STATE, group).items()) else None,
            interval_s=self.timing.dp_poll_s)
        block = self._eq_block(0x11, M.ACTIVE_FIRST, M.ACTIVE_LAST)
        got = {ln: self._decode_eq(block, M.ACTIVE_FIRST, ln, True) for ln in group}
        wrong = [f"lane {ln} {k}={got[ln].get(k)} (wanted {v})" for ln in group for k, v in target[ln].items()
                 if got[ln].get(k) != v]
        got_adaptive = block[M.TX_ADAPTIVE_EN_ACTIVE.offset - M.ACTIVE_FIRST]
        wrong += [f"lane {ln} Tx adaptive EQ {'on' if got_adaptive >> (ln - 1) & 1 else 'off'} (wanted "
                  f"{'on' if adaptive >> (ln - 1) & 1 else 'off'})" for ln in group
                  if (got_adaptive ^ adaptive) >> (ln - 1) & 1]
        if wrong:
            raise ModuleError(f"read-back of page 11h differs: {', '.join(wrong)}")

    def _restore(self, group, old_staged, old_active, adaptive_active, dpcfg, method: ApplyMethod, pre_states) -> str:
        """Best effort: put the previous active codes and Tx adaptive EQ state back (if they changed)
        and the staged set."""
        try:
            if method.deinit:
                self._release_deinit(group)
                self._wait_steady(group, "a steady data path state")
            block = self._eq_block(0x11, M.ACTIVE_FIRST, M.ACTIVE_LAST)
            now_active = {ln: self._decode_eq(block, M.ACTIVE_FIRST, ln, True) for ln in group}
            now_adapt = block[M.TX_ADAPTIVE_EN_ACTIVE.offset - M.ACTIVE_FIRST]
            cur_staged = self._eq_block(0x10, M.SCS0_FIRST, M.SCS0_LAST)
            group_mask = sum(1 << (ln - 1) for ln in group)
            if now_active != old_active or (now_adapt ^ adaptive_active) & group_mask:
                back = self._compose_staged(old_staged, old_active, dpcfg, adaptive_active)
                self._write_block(0x10, M.SCS0_FIRST, cur_staged, back)
                self._trigger_and_wait(group, method)
                cur_staged = back
                what = "previous active codes re-applied and staged set restored"
            else:
                what = "active codes unchanged, staged set restored"
            self._write_block(0x10, M.SCS0_FIRST, cur_staged, old_staged)
            return what
        except DeviceError as exc:
            return (f"RESTORE FAILED ({exc}); the module may hold partly applied codes: read them with "
                    "'eqtune module show' and re-apply known-good codes")

    # ------------------------------------------------------------------ module monitors
    def temperature_c(self) -> float:
        """Module temperature (C): lower memory bytes 14-15 TempMonValue, signed 16 bit, 1/256 C per
        LSB (CMIS 5.2 s8.2.5 "Module-level monitors"; sonic-platform-common CmisMemMap
        TEMPERATURE_FIELD @ (0x0, 14), size 2, format ">h", scale 256)."""
        raw = self.regs.read(0, 14, 2)
        return int.from_bytes(raw, "big", signed=True) / 256.0


def open_module(resource: str, **kwargs) -> CmisModule:
    """Open a CMIS module by resource string: ``i2c:1@0x50``, ``optoe:/sys/.../eeprom``,
    ``ftdi://ftdi:232h/1``, ``emu:CHANNEL[?seed=1&settle_ms=0&fast=1&adaptive=0]``, ``net:HOST:PORT``
    (``adaptive=0``: an emulated module with fixed Tx input EQ on all lanes; default adaptive on).

    The module is probed (SFF-8024 identifier, paged memory, CMIS revision >= 4.0); keyword
    arguments go to :class:`CmisModule` (``poll_timeout_s``, ``poll_interval_s``).
    """
    transport = open_transport(resource)
    regs = PagedRegisters(transport)
    try:
        head = regs.read(0, 0, 3)
        ident, rev, chars = head
        if ident not in CMIS_IDENTIFIERS:
            raise ModuleError(f"{resource}: SFF-8024 identifier 0x{ident:02x} is not a CMIS module "
                              "(QSFP28/SFF-8636 and SFP/SFF-8472 are not supported); check the port/address")
        if rev >> 4 < 4:
            raise ModuleError(f"{resource}: CMIS revision {rev >> 4}.{rev & 0xF} is older than 4.0; "
                              "eqtune needs CMIS 4.0 or later (staged control sets)")
        if chars >> 7 & 1:
            raise ModuleError(f"{resource}: the module has flat memory (no pages 01h/10h/11h), so its EQ "
                              "cannot be controlled")
        return CmisModule(regs, resource=resource, **kwargs)
    except BaseException:
        transport.close()
        raise
