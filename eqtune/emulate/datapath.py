"""The CMIS data path state machine and configuration procedures of the module emulator.

Mixed into :class:`eqtune.emulate.module.EmulatedModule` (it needs the module's registers, lanes,
capabilities, clock, settle time and fault queue). Behaviour from CMIS 5.2 section 6.2.4 (data path
state machine, DPDeinit / ApplyDPInit / ApplyImmediate procedures), 6.3.3 (DataPathInitialized, Tx
turn on/off), 8.10.9 (ConfigStatus), CMIS 5.3 AutoCommissioning (which trigger a SteppedConfigOnly
module also honours) and the sequence SONiC's xcvrd CmisManagerTask drives: codes from the emulator's
own table :mod:`eqtune.emulate.cmis_table`.

* a trigger while a procedure runs on a lane, or one the module does not support, is ignored;
* staged codes are validated (ConfigRejectedInvalidSI / InvalidAppSel / PartialDataPath) and a
  rejected configuration leaves the Active Control Set untouched;
* ExplicitControl clear: the module loads its application defaults instead of the staged SI codes;
* events (status changes, DPState steps) run on the module's clock after ``settle_s``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial
from typing import TYPE_CHECKING, Any

from eqtune.emulate.cmis_table import Reg, load_table
from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ

if TYPE_CHECKING:
    from eqtune.drivers.protocols import Clock
    from eqtune.emulate.link import EmulatedLink
    from eqtune.emulate.module import _Fault

T = load_table()
_DP = T.codes["dp"]
_CS = T.codes["config"]


class DPState:
    """DPState codes from the emulator table ([codes].dp)."""

    DEACTIVATED = _DP["deactivated"]
    INIT = _DP["init"]
    DEINIT = _DP["deinit"]
    ACTIVATED = _DP["activated"]
    TX_TURN_ON = _DP["tx_turn_on"]
    TX_TURN_OFF = _DP["tx_turn_off"]
    INITIALIZED = _DP["initialized"]


class ConfigStatus:
    """ConfigStatus codes from the emulator table ([codes].config)."""

    UNDEFINED = _CS["undefined"]
    SUCCESS = _CS["success"]
    REJECTED = _CS["rejected"]
    REJECTED_INVALID_APPSEL = _CS["invalid_appsel"]
    REJECTED_INVALID_SI = _CS["invalid_si"]
    REJECTED_PARTIAL_DATA_PATH = _CS["partial_data_path"]
    IN_PROGRESS = _CS["in_progress"]


# knob -> (staged field, active field), from the table
EQ_REGS: dict[str, tuple[Reg, Reg]] = {
    RX_PRE: (T.RxPreCursor, T.ActiveRxPreCursor),
    RX_POST: (T.RxPostCursor, T.ActiveRxPostCursor),
    RX_AMP: (T.RxAmplitude, T.ActiveRxAmplitude),
    TX_EQ: (T.FixedInputEqTx, T.ActiveFixedInputEqTx),
}


class DataPathMixin:
    """Event queue, DPState per lane and the Apply/DPDeinit procedures of the emulated module."""

    if TYPE_CHECKING:  # provided by EmulatedModule (eqtune/emulate/module.py) and PrbsCheckerMixin
        lanes: int
        link: EmulatedLink
        caps: dict[str, Any]
        clock: Clock
        settle_s: float
        status_latency_s: float
        stepped_config_only: bool
        cmis_rev: int
        config_s: float | None
        tx_adaptive_on: bool
        applies: int
        ignored_triggers: int
        _lock: AbstractContextManager[Any]
        _events: list[tuple[float, int, Any]]
        _seq: int
        _dpdeinit_prev: int
        _defaults: dict[int, dict[str, int]]

        @property
        def reconfiguration(self) -> str: ...

        def _get_lane(self, reg: Reg, lane: int) -> int: ...

        def _set_lane(self, reg: Reg, lane: int, value: int) -> None: ...

        def _take(self, kinds: tuple[str, ...], op: str | None) -> _Fault | None: ...

        def _accumulate(self) -> None: ...

        def _module_ready(self) -> bool: ...

        def _byte(self, page: int, off: int) -> int: ...

    # ------------------------------------------------------------------ time / events
    def _at(self, delay: float, action: Callable[[], object]) -> None:
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

    def dp_state(self, lane: int) -> int:
        return self._get_lane(T.DPState, lane)

    def set_dp_state(self, lane: int, state: int, until_s: float | None = None) -> None:
        """Force a lane's DPState (tests: e.g. DPInit), back to DPActivated after ``until_s``."""
        with self._lock:
            self._set_lane(T.DPState, lane, state)
            if until_s is not None:
                self._at(until_s, lambda: self._set_lane(T.DPState, lane, DPState.ACTIVATED))

    # ------------------------------------------------------------------ configuration procedures
    def _lanes(self, mask: int) -> list[int]:
        return [lane for lane in range(1, self.lanes + 1) if mask >> (lane - 1) & 1]

    def _validate(self, lanes: list[int], mask: int) -> int:
        """ConfigStatus for staged set 0 on ``lanes`` (SUCCESS or a rejection code)."""
        for lane in lanes:
            dpc = self._get_lane(T.DPConfig, lane)
            appsel, dpid = dpc >> 4, (dpc >> 1) & 0x7
            if appsel != 1:
                return ConfigStatus.REJECTED_INVALID_APPSEL
            # all lanes of the data path (same AppSel/DataPathID) must be applied together
            for other in range(1, self.lanes + 1):
                odpc = self._get_lane(T.DPConfig, other)
                if odpc >> 4 == appsel and (odpc >> 1) & 0x7 == dpid and not mask >> (other - 1) & 1:
                    return ConfigStatus.REJECTED_PARTIAL_DATA_PATH
            if dpc & 1:  # ExplicitControl: check SI codes against the advertisement
                c = self.caps
                if (self._get_lane(T.RxPreCursor, lane) > c["rx_pre_max"]
                        or self._get_lane(T.RxPostCursor, lane) > c["rx_post_max"]
                        or self._get_lane(T.RxAmplitude, lane) not in c["rx_amp_codes"]
                        or self._get_lane(T.FixedInputEqTx, lane) > c["tx_eq_max"]):
                    return ConfigStatus.REJECTED_INVALID_SI
        return ConfigStatus.SUCCESS

    def _apply(self, mask: int, immediate: bool) -> None:
        lanes = [lane for lane in self._lanes(mask)
                 if self._get_lane(T.ConfigStatus, lane) != ConfigStatus.IN_PROGRESS]
        if not lanes:
            return  # CMIS: a trigger while a procedure runs on the lane is ignored
        deactivated = all(self.dp_state(lane) == DPState.DEACTIVATED for lane in lanes)
        support = self.reconfiguration
        if immediate and support not in ("both", "hot"):
            # ApplyImmediate on a module without hot reconfiguration is ignored silently: ConfigStatus
            # keeps its old value (ApplyDPInit in DPDeactivated, the step-by-step procedure, is what
            # every module accepts: OIF-CMIS-05.2 s6.2.4; sonic xcvrd CMIS_STATE_AP_CONF relies on it)
            self.ignored_triggers += 1
            return
        self.applies += 1

        def in_progress() -> None:
            for lane in lanes:
                self._set_lane(T.ConfigStatus, lane, ConfigStatus.IN_PROGRESS)

        if self.status_latency_s > 0:
            self._at(self.status_latency_s, in_progress)
        else:
            in_progress()
        status = self._validate(lanes, mask)
        rej = self._take(("reject",), None)
        if rej is not None:
            status = int(rej.params.get("code", ConfigStatus.REJECTED))
        slow = self._take(("slow_apply",), None)
        base = self.settle_s if self.config_s is None else self.config_s
        delay = base + (float(slow.params.get("delay_s", 2.0)) if slow else 0.0)
        delay = max(delay, 2.0 * self.status_latency_s)  # the result comes after ConfigInProgress
        if status == ConfigStatus.SUCCESS and not immediate and not deactivated and support not in ("both", "regular"):
            status = _CS["lanes_in_use"]  # step-by-step only: the host must DPDeinit first

        def finish_status(code=status) -> None:
            for lane in lanes:
                self._set_lane(T.ConfigStatus, lane, code)

        if status != ConfigStatus.SUCCESS:
            self._at(delay, finish_status)
            return
        if immediate:
            def done() -> None:
                self._copy_to_active(lanes, push=True)
                finish_status()

            self._at(delay, done)
        elif all(self.dp_state(lane) == DPState.DEACTIVATED for lane in lanes):
            # step-by-step: copy now, DPInitPending set (11h:235, CMIS >= 5; sonic xcvrd
            # check_datapath_init_pending); DPInit runs when the host clears DPDeinit
            def copy_now() -> None:
                self._copy_to_active(lanes, push=False)
                finish_status()
                if self.cmis_rev >= 0x50:
                    for lane in lanes:
                        self._set_lane(T.DPInitPending, lane, 1)

            self._at(delay, copy_now)
        else:
            # regular reconfiguration from DPActivated: DPDeinit -> DPInit -> DPActivated
            for lane in lanes:
                self._set_lane(T.DPState, lane, DPState.DEINIT)

            def mid() -> None:
                self._copy_to_active(lanes, push=False)
                finish_status()
                for lane in lanes:
                    self._set_lane(T.DPState, lane, DPState.INIT)

            def end() -> None:
                for lane in lanes:
                    self._set_lane(T.DPState, lane, DPState.ACTIVATED)
                self._push(lanes)

            self._at(delay / 2, mid)
            self._at(delay, end)

    def _copy_to_active(self, lanes: list[int], push: bool) -> None:
        for lane in lanes:
            dpc = self._get_lane(T.DPConfig, lane)
            self._set_lane(T.ActiveDPConfig, lane, dpc)
            if dpc & 1:
                for _knob, (staged, active) in EQ_REGS.items():
                    self._set_lane(active, lane, self._get_lane(staged, lane))
                en = self._get_lane(T.AdaptiveEqEnable, lane)
            else:
                for knob, (_, active) in EQ_REGS.items():
                    self._set_lane(active, lane, self._defaults[lane][knob])
                en = int(self.tx_adaptive_on)  # the application default of this module
            self._set_lane(T.ActiveAdaptiveEnable, lane, en)
        if push:
            self._push(lanes)

    def _push(self, lanes: list[int]) -> None:
        """The physical layer now uses the active codes: tell the link (errors so far are booked)."""
        self._accumulate()
        for lane in lanes:
            self.link.set_codes(lane, {k: self._get_lane(active, lane) for k, (_, active) in EQ_REGS.items()})
            if hasattr(self.link, "set_tx_adaptive"):
                self.link.set_tx_adaptive(lane, bool(self._get_lane(T.ActiveAdaptiveEnable, lane)))

    def _dpdeinit(self, value: int) -> None:
        prev, self._dpdeinit_prev = self._dpdeinit_prev, value
        for lane in range(1, self.lanes + 1):
            bit = 1 << (lane - 1)
            if value & bit and not prev & bit:
                self._dp_down(lane)
            elif prev & bit and not value & bit:
                self._dp_init(lane)

    def _dp_down(self, lane: int) -> None:
        """DPDeinit -> DPDeactivated (CMIS 5.2 Figure 6-4 data path state machine)."""
        if self.dp_state(lane) == DPState.DEACTIVATED:
            return
        self._set_lane(T.DPState, lane, DPState.DEINIT)
        self._at(self.settle_s / 2, partial(self._set_lane, T.DPState, lane, DPState.DEACTIVATED))

    def _dp_init(self, lane: int) -> None:
        """DPInit -> DataPathInitialized while the lane's Tx output is disabled (10h:130), else
        -> DataPathActivated (through DPTxTurnOn); nothing while the module is in low power or the
        lane belongs to no data path (AppSel 0). CMIS 5.2 s6.3.3; the states sonic xcvrd waits for in
        CMIS_STATE_DP_TXON / CMIS_STATE_DP_ACTIVATE."""
        if not self._module_ready() or not self._get_lane(T.ActiveDPConfig, lane) >> 4:
            return
        self._set_lane(T.DPInitPending, lane, 0)
        self._set_lane(T.DPState, lane, DPState.INIT)

        def up(ln: int = lane) -> None:
            if self.dp_state(ln) != DPState.INIT:
                return
            if self._tx_off(ln):
                self._set_lane(T.DPState, ln, DPState.INITIALIZED)
            else:
                self._set_lane(T.DPState, ln, DPState.ACTIVATED)
                self._push([ln])

        self._at(self.settle_s, up)

    def _tx_disable(self, value: int) -> None:
        """OutputDisableTx (10h:130) written: an initialized lane whose Tx is enabled turns on
        (DPTxTurnOn -> DPActivated); an active lane whose Tx is disabled turns off (DPTxTurnOff ->
        DataPathInitialized). CMIS 5.2 s6.3.3 (DataPathTxTurnOn / TxTurnOff states)."""
        del value  # read back per data path below
        for lane in range(1, self.lanes + 1):
            off = self._tx_off(lane)
            state = self.dp_state(lane)
            if state == DPState.INITIALIZED and not off:
                self._set_lane(T.DPState, lane, DPState.TX_TURN_ON)

                def on(ln: int = lane) -> None:
                    if self.dp_state(ln) == DPState.TX_TURN_ON:
                        self._set_lane(T.DPState, ln, DPState.ACTIVATED)
                        self._push([ln])

                self._at(self.settle_s / 2, on)
            elif state == DPState.ACTIVATED and off:
                self._set_lane(T.DPState, lane, DPState.TX_TURN_OFF)
                self._at(self.settle_s / 2, partial(self._fall_to_initialized, lane))

    def _media_lanes(self, lane: int) -> list[int]:
        """Media lanes of the data path ``lane`` belongs to: its application's media lane count
        (lower page 88+4(AppSel-1) bits 3-0) from the media lane matching its first host lane
        (DataPathID, DPConfig bits 3-1) at the application's media/host lane ratio; 1:1 without an
        application (CMIS 5.2 Table 8-23: e.g. 400GAUI-8 on 8 host lanes, 400GBASE-DR4 on 4)."""
        dpc = self._get_lane(T.ActiveDPConfig, lane)
        appsel, first = dpc >> 4, ((dpc >> 1) & 7) + 1
        if not 1 <= appsel <= 8:
            return [lane]
        counts = self._byte(0, 88 + 4 * (appsel - 1))
        host_n, media_n = counts >> 4, counts & 0xF
        if not host_n or not media_n:
            return [lane]
        m0 = (first - 1) * media_n // host_n + 1
        return list(range(m0, min(8, m0 + media_n - 1) + 1))

    def _tx_off(self, lane: int) -> bool:
        """The data path of ``lane`` has a media lane whose Tx output the host disabled (10h:130)."""
        return any(self._get_lane(T.OutputDisableTx, m) for m in self._media_lanes(lane))

    def _fall_to_initialized(self, lane: int) -> None:
        if self.dp_state(lane) == DPState.TX_TURN_OFF:
            self._set_lane(T.DPState, lane, DPState.INITIALIZED)
