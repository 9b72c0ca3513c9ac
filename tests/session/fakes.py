"""A small in-test stand-in for ``CmisModule`` (same method names), backed by an ``EmulatedLink``.

Used only where the real emulator would make a test slow or where a fault must be placed exactly;
the end-to-end tests use ``open_module("emu:...")``.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.errors import EqRangeError, ModuleError, TransportError


@dataclass(frozen=True)
class Identity:
    vendor: str = "ACME"
    oui: str = "00:11:22"
    pn: str = "QDD-800G-DR8"
    rev: str = "A"
    sn: str = "SN0001"
    date_code: str = "260101"
    firmware: str = "3.1"
    cmis_rev: str = "5.2"
    module_state: str = "ModuleReady"


@dataclass(frozen=True)
class Caps:
    lanes: int = 8
    rx_pre_max: int | None = 7
    rx_post_max: int | None = 7
    rx_amp_codes: tuple[int, ...] = (0, 1, 2, 3)
    tx_eq_max: int | None = 10
    tx_adaptive: bool = False
    stepped_config_only: bool = False
    apply_immediate: bool = True

    def knob_values(self) -> dict[str, tuple[int, ...]]:
        out = {}
        if self.rx_pre_max is not None:
            out["rx_pre"] = tuple(range(self.rx_pre_max + 1))
        if self.rx_post_max is not None:
            out["rx_post"] = tuple(range(self.rx_post_max + 1))
        if self.rx_amp_codes:
            out["rx_amp"] = tuple(self.rx_amp_codes)
        if self.tx_eq_max is not None:
            out["tx_eq"] = tuple(range(self.tx_eq_max + 1))
        return out


class FakeModule:
    """faults: set of 'nack' (I2C NACK after half the lanes, no driver restore), 'timeout' (apply
    times out, nothing applied), 'readback' (one code silently lands wrong), 'restore_fails'."""

    def __init__(self, resource: str = "fake:0", *, identity: Identity | None = None, caps: Caps | None = None,
                 link: EmulatedLink | None = None, seed: int = 0) -> None:
        self.resource = resource
        self._id = identity or Identity()
        self._caps = caps or Caps()
        self.link = link or EmulatedLink("c2m-10in", seed=seed, quality=surrogate_quality(16.0))
        self.faults: set[str] = set()
        self.writes = 0  # apply_eq calls that reached "hardware"
        self.closed = False

    def identity(self) -> Identity:
        return self._id

    def capabilities(self) -> Caps:
        return self._caps

    def active_eq(self, lane: int) -> dict[str, int]:
        return self.link.active_codes(lane)

    def validate_eq(self, codes) -> None:
        allowed = self._caps.knob_values()
        for lane, c in codes.items():
            if not 1 <= int(lane) <= self._caps.lanes:
                raise EqRangeError(f"lane {lane} outside 1..{self._caps.lanes}")
            for k, v in c.items():
                if int(v) not in allowed.get(k, ()):
                    raise EqRangeError(f"{k}={v} outside capabilities")

    def apply_eq(self, codes) -> None:
        self.validate_eq(codes)
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
        if "restore_fails" in self.faults:
            self.faults = {"timeout"}

    def module_ber(self, lanes, dwell_s):
        return {ln: self.link.count_errors(ln, dwell_s, path="module_rx") for ln in lanes}

    def close(self) -> None:
        self.closed = True
