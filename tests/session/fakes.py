"""A small in-test stand-in for a CMIS module, backed by an ``EmulatedLink``.

It satisfies :class:`eqtune.drivers.protocols.CmisModule` (checked statically in
``tests/typecheck/protocol_conformance.py`` and at run time by ``tests/drivers/test_protocols.py``) and
returns the real dataclasses (:class:`ModuleIdentity`, :class:`EqCapabilities`, :class:`VdmLane`,
:class:`BerCount`), so it cannot drift from the driver's contract.

Used only where the real emulator would make a test slow or where a fault must be placed exactly;
the end-to-end tests use ``open_module("emu:...")``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from types import TracebackType

from eqtune.drivers.cmis_codec import check_codes
from eqtune.drivers.cmis_policy import ApplyMethod, choose_apply_method
from eqtune.drivers.cmis_types import EqCapabilities, EqCodes, ModuleIdentity, PlannedChange, VdmLane
from eqtune.drivers.measurement import BerCount
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.errors import EqRangeError, ModuleError, TransportError
from eqtune.serdes.knobs import TX_EQ

FAKE_IDENTITY = ModuleIdentity(vendor="ACME", oui="00-11-22", pn="QDD-800G-DR8", rev="A", sn="SN0001",
                               date_code="2026-01-01", firmware="3.1", cmis_rev="5.2",
                               module_state="ModuleReady", form_factor="QSFP-DD")
FAKE_CAPS = EqCapabilities(lanes=8, rx_pre_max=7, rx_post_max=7, rx_amp_codes=(0, 1, 2, 3), tx_eq_max=10,
                           tx_adaptive=False, stepped_config_only=False, apply_immediate=True)


def fake_identity(**changes: str) -> ModuleIdentity:
    """:data:`FAKE_IDENTITY` with some fields changed (``fake_identity(pn="OTHER-PN")``)."""
    return dataclasses.replace(FAKE_IDENTITY, **changes)


def fake_caps(**changes: object) -> EqCapabilities:
    """:data:`FAKE_CAPS` with some fields changed (``fake_caps(tx_adaptive=True)``)."""
    return dataclasses.replace(FAKE_CAPS, **changes)  # type: ignore[arg-type]


class FakeModule:
    """faults: set of 'nack' (I2C NACK after half the lanes, no driver restore), 'timeout' (apply
    times out, nothing applied), 'readback' (one code silently lands wrong), 'restore_fails'."""

    def __init__(self, resource: str = "fake:0", *, identity: ModuleIdentity | None = None,
                 caps: EqCapabilities | None = None, link: EmulatedLink | None = None, seed: int = 0) -> None:
        self.resource = resource
        self.notify: Callable[[str], None] | None = None
        self._id = identity or FAKE_IDENTITY
        self._caps = caps or FAKE_CAPS
        self.link = link or EmulatedLink("c2m-10in", seed=seed, quality=surrogate_quality(16.0))
        self._adaptive = {ln: False for ln in range(1, self._caps.lanes + 1)}
        self.faults: set[str] = set()
        self.writes = 0  # apply_eq calls that reached "hardware"
        self.closed = False

    # context
    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> FakeModule:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> None:
        self.close()

    # identity / status
    def module_state(self) -> str:
        return self._id.module_state

    def identity(self) -> ModuleIdentity:
        return self._id

    def capabilities(self, refresh: bool = False) -> EqCapabilities:
        return self._caps

    def dp_states(self, stable: bool = False) -> dict[int, str]:
        return {ln: "DPActivated" for ln in range(1, self._caps.lanes + 1)}

    def apply_method(self, method: str = "auto") -> ApplyMethod:
        try:
            return choose_apply_method(self._caps.stepped_config_only, self._caps.auto_commissioning, method)
        except ValueError as exc:
            raise ModuleError(f"{self.resource}: {exc}") from None

    # EQ codes
    def active_eq(self, lane: int) -> dict[str, int]:
        return self.link.active_codes(lane)

    def active_eq_all(self) -> dict[int, dict[str, int]]:
        return {ln: self.active_eq(ln) for ln in range(1, self._caps.lanes + 1)}

    def tx_adaptive_enabled(self) -> dict[int, bool]:
        return dict(self._adaptive)

    def validate_eq(self, codes: EqCodes) -> None:
        allowed = self._caps.knob_values()
        for lane, c in codes.items():
            if not 1 <= int(lane) <= self._caps.lanes:
                raise EqRangeError(f"lane {lane} outside 1..{self._caps.lanes}")
            for k, v in c.items():
                if int(v) not in allowed.get(k, ()):
                    raise EqRangeError(f"{k}={v} outside capabilities")

    def plan_eq(self, codes: EqCodes) -> list[PlannedChange]:
        codes = check_codes(self.resource, codes, self._caps)
        return [PlannedChange(lane=ln, knob=k, current=self.active_eq(ln).get(k), new=v)
                for ln in sorted(codes) for k, v in codes[ln].items()]

    def apply_eq(self, codes: EqCodes, *, method: str = "auto") -> None:
        self.validate_eq(codes)
        self.apply_method(method)
        self.writes += 1
        lanes = sorted(codes)
        if "timeout" in self.faults:
            raise ModuleError(f"{self.resource}: apply timed out (ConfigStatus in progress)")
        if "nack" in self.faults:
            for ln in lanes[: max(1, len(lanes) // 2)]:
                self.link.set_codes(ln, codes[ln])
            raise TransportError(f"{self.resource}: I2C NACK at page 10h")
        for ln in lanes:
            c = dict(codes[ln])
            if "readback" in self.faults:
                k = sorted(c)[0]
                c[k] = (c[k] + 1) % 4
            self.link.set_codes(ln, c)
            if TX_EQ in c:
                self._adaptive[ln] = False  # a fixed tx_eq code switches the adaptive equalizer off
        if "restore_fails" in self.faults:
            self.faults = {"timeout"}

    def enable_tx_adaptive(self, lanes: Sequence[int], *, method: str = "auto") -> None:
        self.set_tx_adaptive(lanes, True, method=method)

    def set_tx_adaptive(self, lanes: Sequence[int], on: bool, *, method: str = "auto") -> None:
        if on and not self._caps.tx_adaptive:
            raise EqRangeError(f"{self.resource}: the module does not advertise Tx input adaptive EQ")
        self.apply_method(method)
        for ln in lanes:
            if ln not in self._adaptive:
                raise EqRangeError(f"{self.resource}: lane {ln} outside 1..{self._caps.lanes}")
            self._adaptive[ln] = bool(on)
            self.link.set_tx_adaptive(ln, bool(on))

    # measurements
    def module_ber(self, lanes: Sequence[int], dwell_s: float) -> dict[int, BerCount]:
        return {ln: self.link.count_errors(ln, dwell_s, path="module_rx") for ln in lanes}

    def vdm(self, lanes: Sequence[int] | None = None, *, freeze: bool = True) -> dict[int, VdmLane]:
        if not self._caps.vdm:
            raise ModuleError(f"{self.resource}: the module does not advertise VDM pages 20h-2Fh")
        want = list(lanes) if lanes else list(range(1, self._caps.lanes + 1))
        return {ln: VdmLane(lane=ln, prefec_ber_host_input=self.link.count_errors(ln, 0.1, path="module_rx").ber)
                for ln in want}

    def temperature_c(self) -> float:
        temp = self.link.temperature_c()
        return 35.0 if temp is None else temp
