"""The module state machine of the module emulator: ModuleReady <-> ModuleLowPwr and SoftwareReset.

Mixed into :class:`eqtune.emulate.module.EmulatedModule`. Lower page byte 26 (sonic-platform-common
``MODULE_LEVEL_CONTROL``; FBOSS ``MODULE_CONTROL``): bit 4 LowPwrRequestSW, bit 3 SoftwareReset; the
module state is lower page byte 3 bits 3-1 (codes from the emulator's table ``[codes].module``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from eqtune.emulate.datapath import DPState, T

if TYPE_CHECKING:
    from collections.abc import Callable

    from eqtune.emulate.cmis_table import Reg


class ModuleStateMixin:
    """LowPwr request and SoftwareReset of the emulated module."""

    if TYPE_CHECKING:  # provided by EmulatedModule and DataPathMixin
        lanes: int
        settle_s: float
        _lower: bytearray
        _lock: AbstractContextManager[Any]

        def _get(self, reg: Reg) -> int: ...

        def _put(self, reg: Reg, value: int) -> None: ...

        def _byte(self, page: int, off: int) -> int: ...

        def _at(self, delay: float, action: Callable[[], object]) -> None: ...

        def _dp_down(self, lane: int) -> None: ...

        def _dp_init(self, lane: int) -> None: ...

        def dp_state(self, lane: int) -> int: ...

        def reset(self) -> None: ...

    def _module_ready(self) -> bool:
        return self._get(T.ModuleState) == T.codes["module"]["ready"]

    def _module_control(self, value: int) -> None:
        """Lower page byte 26 written: SoftwareReset (bit 3, self-clearing) resets the module;
        LowPwrRequestSW (bit 4) takes it ModuleReady -> ModulePwrDn -> ModuleLowPwr (every data
        path deactivated) and, cleared, ModuleLowPwr -> ModulePwrUp -> ModuleReady, after which the
        data paths the host has not held in DPDeinit initialize (CMIS 5.2 s6.3.2 module state
        machine; sonic CmisApi ``set_lpmode``/``reset_module``; FBOSS setModuleLowPowerModeLocked)."""
        if value >> T.SoftwareReset.bit_lo & 1:
            self.reset()
            return
        self._lower[T.ModuleControl.offset] = value
        ms = T.codes["module"]
        low = bool(value >> T.LowPwrRequestSW.bit_lo & 1)
        state = self._get(T.ModuleState)
        if low and state in (ms["ready"], ms["pwr_up"]):
            self._put(T.ModuleState, ms["pwr_dn"])
            for lane in range(1, self.lanes + 1):
                self._dp_down(lane)
            self._at(self.settle_s, lambda: self._put(T.ModuleState, ms["low_pwr"]))
        elif not low and state in (ms["low_pwr"], ms["pwr_dn"]):
            self._put(T.ModuleState, ms["pwr_up"])

            def ready() -> None:
                if self._get(T.ModuleState) != ms["pwr_up"]:
                    return
                self._put(T.ModuleState, ms["ready"])
                deinit = self._byte(0x10, T.DPDeinit.offset)
                for lane in range(1, self.lanes + 1):
                    if not deinit >> (lane - 1) & 1 and self.dp_state(lane) == DPState.DEACTIVATED:
                        self._dp_init(lane)

            self._at(self.settle_s, ready)
