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
    -> the procedure :func:`eqtune.drivers.cmis_policy.method_for` gives (CMIS revision,
       SteppedConfigOnly, AutoCommissioning from 5.3): ApplyImmediate with traffic up (FBOSS), or the
       step-by-step DPDeinit -> ApplyDPInit -> release DPDeinit with traffic down (SONiC xcvrd)
    -> poll ConfigStatus (page 11h 202-205) until it leaves ConfigInProgress/ConfigUndefined and
       DPState (page 11h 128-131), within twice the advertised MaxDuration (page 01h byte 144)
    -> read back page 11h twice (stable) and compare
    -> on any failure: re-apply the previous active codes if they changed, restore the staged
       set byte for byte, and raise ModuleError saying what happened and what was restored.

Page bytes are decoded and composed by the pure functions of :mod:`eqtune.drivers.cmis_codec`; the
values returned are the dataclasses of :mod:`eqtune.drivers.cmis_types`; the contract this class
meets is :class:`eqtune.drivers.protocols.CmisModule`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import replace
from typing import Any, TypeVar

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis_codec import (
    CAPS_PAGE1_FIRST,
    CAPS_PAGE1_LEN,
    IDENTITY_LOWER_LEN,
    IDENTITY_UPPER_FIRST,
    IDENTITY_UPPER_LAST,
    check_codes,
    check_lane,
    compose_staged,
    decode_capabilities,
    decode_eq,
    decode_identity,
    lane_mask,
    page00_checksum_ok,
)
from eqtune.drivers.cmis_map import ConfigStatus, DPState, ModuleState
from eqtune.drivers.cmis_policy import ApplyMethod, CmisTiming, method_for
from eqtune.drivers.cmis_prbs import PrbsMixin
from eqtune.drivers.cmis_types import (  # noqa: F401 (re-exported: the old import path)
    CMIS_IDENTIFIERS,
    CONFIG_STATUS_NAMES,
    DP_STATE_NAMES,
    MODULE_STATE_NAMES,
    EqCapabilities,
    EqCodes,
    ModuleIdentity,
    PlannedChange,
    state_name,
)
from eqtune.drivers.cmis_vdm import VdmMixin
from eqtune.drivers.transport import PagedRegisters, open_transport
from eqtune.errors import DeviceError, EqRangeError, ModuleError, TransportError
from eqtune.serdes.knobs import TX_EQ

STEADY_DP = (DPState.ACTIVATED, DPState.DEACTIVATED, DPState.INITIALIZED)
_T = TypeVar("_T")


class CmisDriver(PrbsMixin, VdmMixin):
    """A CMIS 4.0/5.x module behind a :class:`PagedRegisters` view. Lanes are numbered 1..8.

    Satisfies :class:`eqtune.drivers.protocols.CmisModule` (tests/drivers/test_protocols.py checks it);
    ``CmisModule`` in this module is the old name of this class."""

    def __init__(self, regs: PagedRegisters, *, resource: str | None = None, poll_timeout_s: float = 10.0,
                 poll_interval_s: float = 0.005, timing: CmisTiming | None = None,
                 notify: Callable[[str], None] | None = None) -> None:
        self.regs = regs
        self.transport = regs.transport
        self.resource: str = resource or regs.resource
        self.poll_timeout_s = poll_timeout_s
        self.poll_interval_s = poll_interval_s
        # host waits as real hosts use them; a transport may shorten them (emulators: wait_scale)
        self.timing = timing or CmisTiming().scaled(getattr(self.transport, "wait_scale", 1.0))
        # notify(message): told before any write when an apply takes the data path (traffic) down
        self.notify: Callable[[str], None] | None = notify
        self._settle_until = 0.0
        self._caps: EqCapabilities | None = None

    # ------------------------------------------------------------------ context
    def close(self) -> None:
        self.regs.close()

    def __enter__(self) -> CmisDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CmisModule({self.resource!r})"

    # ------------------------------------------------------------------ identity / status
    def module_state(self) -> str:
        return state_name(MODULE_STATE_NAMES, self.regs.read_scalar(M.MODULE_STATE))

    def identity(self) -> ModuleIdentity:
        """Page 00h administrative information; the page checksum (byte 222) is verified."""
        lower = self.regs.read(0, 0, IDENTITY_LOWER_LEN)
        reads: list[bytes] = []
        for _ in range(3):
            up = self.regs.read(0, IDENTITY_UPPER_FIRST, IDENTITY_UPPER_LAST - IDENTITY_UPPER_FIRST + 1)
            if page00_checksum_ok(up):
                return decode_identity(lower, up)
            reads.append(up)
        if len(set(reads)) == 1:
            # the same bytes three times: the module's own EEPROM holds a wrong checksum (FBOSS and
            # SONiC read identity without checking it); reported, not taken for corrupted reads
            return replace(decode_identity(lower, up), page00_checksum="mismatch (module EEPROM)")
        raise TransportError(
            f"{self.resource}: page 00h checksum (byte 222) does not match on 3 reads: corrupted "
            "reads; check the cable/adapter, lower the bus speed, or reseat the module"
        )

    def capabilities(self, refresh: bool = False) -> EqCapabilities:
        """Page 01h advertisement (cached; ``refresh=True`` re-reads)."""
        if self._caps is not None and not refresh:
            return self._caps
        # no checksum covers the lower page: read twice and compare, as page 01h (one flipped bit of
        # byte 2 would turn a hot-reconfigurable module into one that refuses every apply)
        rev_and_chars = self.regs.read_stable(0, 1, 2)  # byte 1 CMIS revision, byte 2 characteristics
        media_and_app = self.regs.read_stable(0, 85, 33)  # byte 85 media type, 86-117 application descriptors 1-8
        p1 = self.regs.read_stable(1, CAPS_PAGE1_FIRST, CAPS_PAGE1_LEN)
        self._caps = decode_capabilities(rev_and_chars[1:2], media_and_app[1:], p1, cmis_rev=rev_and_chars[0],
                                         media_type=media_and_app[0])
        return self._caps

    def dp_states(self, stable: bool = False) -> dict[int, str]:
        lanes = range(1, self.capabilities().lanes + 1)
        return {lane: state_name(DP_STATE_NAMES, v) for lane, v in self.regs.read_lanes(M.DP_STATE, lanes, stable=stable).items()}

    def config_status(self) -> dict[int, str]:
        lanes = range(1, self.capabilities().lanes + 1)
        return {lane: state_name(CONFIG_STATUS_NAMES, v) for lane, v in self.regs.read_lanes(M.CONFIG_STATUS, lanes).items()}

    # ------------------------------------------------------------------ EQ read
    def _eq_block(self, page: int, first: int, last: int) -> bytes:
        return self.regs.read_stable(page, first, last - first + 1)

    def _decode_eq(self, block: bytes, first: int, lane: int, active: bool) -> dict[str, int]:
        return decode_eq(block, first, lane, active, self.capabilities().knob_values())

    def _check_lane(self, lane: int) -> None:
        check_lane(self.resource, lane, self.capabilities().lanes)

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

    def _normalize(self, codes: EqCodes) -> EqCodes:
        return check_codes(self.resource, codes, self.capabilities())

    def plan_eq(self, codes: EqCodes) -> list[PlannedChange]:
        """What :meth:`apply_eq` would change: rows of lane, knob, current (active), new. No writes."""
        codes = self._normalize(codes)
        active = self.active_eq_all()
        return [PlannedChange(lane=lane, knob=k, current=active[lane].get(k), new=v)
                for lane in sorted(codes) for k, v in codes[lane].items()]

    # ------------------------------------------------------------------ polling helpers
    def _timeout(self) -> float:
        """How long to wait for a data path step or ConfigStatus (s): the module's advertised
        MaxDurationDPInit + MaxDurationDPDeinit (page 01h byte 144), twice, at least
        ``poll_timeout_s`` (FBOSS's 10 s default), at most the host cap (:class:`CmisTiming`)."""
        caps = self.capabilities()
        return self.timing.wait_limit(caps.dp_init_max_s, caps.dp_deinit_max_s, self.poll_timeout_s)

    def _advertised(self) -> str:
        caps = self.capabilities()
        if caps.dp_init_max_s is None or caps.dp_deinit_max_s is None:
            return "a reserved duration code"
        return f"{caps.dp_deinit_max_s:g} s DPDeinit + {caps.dp_init_max_s:g} s DPInit"

    def apply_method(self, method: str = "auto") -> ApplyMethod:
        """The Apply procedure :meth:`apply_eq` uses with ``method`` (reads only). ModuleError when the
        module does not support it (see :func:`eqtune.drivers.cmis_policy.choose_apply_method`)."""
        if method not in ("auto", "immediate", "dpinit"):
            raise EqRangeError(f"apply method {method!r} unknown; use auto, immediate or dpinit")
        try:
            return method_for(self.capabilities(), method)
        except ValueError as exc:
            raise ModuleError(f"{self.resource}: {exc}") from None

    def _poll(self, what: str, check: Callable[[], _T | None], timeout_s: float | None = None,
              interval_s: float | None = None) -> _T:
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
            name = state_name(MODULE_STATE_NAMES, state)
            raise ModuleError(f"{self.resource}: module is in {name}, not ModuleReady; EQ cannot be applied. "
                              "Check that the host released LowPwr (lower page byte 26) and the module's "
                              "power/fault flags, then retry")

    def _wait_steady(self, lanes: list[int], what: str) -> dict[int, int]:
        last: dict[int, int] = {}

        def check() -> dict[int, int] | None:
            nonlocal last
            last = self.regs.read_lanes(M.DP_STATE, lanes)
            return last if all(v in STEADY_DP for v in last.values()) else None

        try:
            return self._poll(what, check)
        except ModuleError:
            busy = ", ".join(f"lane {ln} {state_name(DP_STATE_NAMES, v)}" for ln, v in last.items() if v not in STEADY_DP)
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
        mask = lane_mask(lanes)
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
        mask = lane_mask(lanes)
        cur = self.regs.read(0x10, M.DP_DEINIT.offset, 1)[0]
        self.regs.write(0x10, M.DP_DEINIT.offset, bytes([cur & ~mask & 0xFF]))

    def _wait_config(self, lanes: list[int]) -> None:
        """Poll ConfigStatus (page 11h 202-205) until every lane has left ConfigInProgress and
        ConfigUndefined (no answer yet: FBOSS ``checkLaneConfigError`` retries on 0 the same way),
        within :meth:`_timeout`. A late answer is waited for; a rejection code is named as one; no
        answer at all is named as that, not as a rejection."""
        last: dict[int, int] = {}
        pending = (ConfigStatus.IN_PROGRESS, ConfigStatus.UNDEFINED)

        def check() -> dict[int, int] | None:
            nonlocal last
            last = self.regs.read_lanes(M.CONFIG_STATUS, lanes)
            return last if all(v not in pending for v in last.values()) else None

        # a ConfigStatus read straight after the trigger can still show the previous ConfigSuccess:
        # wait first as real hosts do (FBOSS 500 ms, Xena 1 s; CmisTiming.after_trigger_s)
        self.transport.sleep(self.timing.after_trigger_s)
        try:
            status = self._poll("ConfigStatus", check, interval_s=self.timing.dp_poll_s)
        except ModuleError:
            waiting = ", ".join(f"lane {ln} {state_name(CONFIG_STATUS_NAMES, v)}" for ln, v in sorted(last.items())
                                if v in pending)
            raise ModuleError(f"{self.resource}: no configuration result after {self._timeout():g} s ({waiting}; "
                              "the module advertises at most "
                              f"{self._advertised()} on page 01h byte 144): the module is slow or hung, it did "
                              "not reject the codes; wait and read it with 'eqtune module show', or reset the "
                              "module") from None
        bad = {ln: v for ln, v in status.items() if v != ConfigStatus.SUCCESS}
        if bad:
            desc = ", ".join(f"lane {ln} {state_name(CONFIG_STATUS_NAMES, v)}" for ln, v in sorted(bad.items()))
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

    def enable_tx_adaptive(self, lanes: Sequence[int], *, method: str = "auto") -> None:
        """Switch the module's Tx input adaptive equalizer back on for ``lanes``: the counterpart of
        writing a fixed ``tx_eq`` with :meth:`apply_eq`. See :meth:`set_tx_adaptive`."""
        self.set_tx_adaptive(lanes, True, method=method)

    def set_tx_adaptive(self, lanes: Sequence[int] | int, on: bool, *, method: str = "auto") -> None:
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
        lanes = sorted({int(ln) for ln in ([lanes] if isinstance(lanes, int) else lanes)})
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
               off: Set[int] = frozenset(), on: Set[int] = frozenset()) -> None:
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
        off_mask = lane_mask(off)
        on_mask = lane_mask(on)
        adaptive = (adaptive_active & ~off_mask & 0xFF) | on_mask
        group_mask = lane_mask(group)
        if all(old_active[ln] == target[ln] for ln in group) and not (adaptive ^ adaptive_active) & group_mask:
            return  # already active: nothing to write
        if method.traffic_down and self.notify is not None:
            self.notify(f"{self.resource}: {method.trigger}{' with DPDeinit' if method.deinit else ''} on lane(s) "
                        f"{','.join(map(str, group))}: the data path goes down (traffic stops; the module "
                        f"advertises {self._advertised()}, eqtune waits up to {self._timeout():g} s) -- "
                        f"{method.reason}")
        # ExplicitControl=1 makes the module use every staged SI field: the staged set is first a copy of
        # the Active Control Set (page 11h 206-234 has the page 10h 145-173 layout), so no stale staged
        # byte (e.g. 154-155, 160-161) is applied (CMIS 5.2 s8.9.4 ExplicitControl; FBOSS
        # setModuleRxEqualizerLocked also starts from the active codes and sets the ExplicitControl bit).
        new_staged = compose_staged(old_active_block, target, dpcfg, adaptive)
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

    def _run_apply(self, group: list[int], old_staged: bytes, new_staged: bytes, target: EqCodes, adaptive: int,
                   method: ApplyMethod, pre_states: dict[int, int]) -> None:
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

    def _restore(self, group: list[int], old_staged: bytes, old_active: EqCodes, adaptive_active: int, dpcfg: bytes,
                 method: ApplyMethod, pre_states: dict[int, int]) -> str:
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
            group_mask = lane_mask(group)
            if now_active != old_active or (now_adapt ^ adaptive_active) & group_mask:
                back = compose_staged(old_staged, old_active, dpcfg, adaptive_active)
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


def open_module(resource: str, **kwargs: Any) -> CmisDriver:
    """Open a CMIS module by resource string: ``i2c:1@0x50``, ``optoe:/sys/.../eeprom``,
    ``ftdi://ftdi:232h/1``, ``emu:CHANNEL[?seed=1&settle_ms=0&fast=1&adaptive=0]``, ``net:HOST:PORT``
    (``adaptive=0``: an emulated module with fixed Tx input EQ on all lanes; default adaptive on).

    The module is probed (SFF-8024 identifier, paged memory, CMIS revision >= 4.0); keyword
    arguments go to :class:`CmisDriver` (``poll_timeout_s``, ``poll_interval_s``).
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
        return CmisDriver(regs, resource=resource, **kwargs)
    except BaseException:
        transport.close()
        raise


#: the old name of :class:`CmisDriver` (the contract every module object meets is
#: :class:`eqtune.drivers.protocols.CmisModule`)
CmisModule = CmisDriver
