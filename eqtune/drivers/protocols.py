"""Typed contracts between the hardware room and its users: what a module, an instrument and a
register transport must offer (:class:`typing.Protocol`, structural: nobody inherits from these).

* :class:`CmisModule`: every call session/, tune/live, watch/, tui/ and cli/ make on an open CMIS
  module. Met by the real driver :class:`eqtune.drivers.cmis.CmisDriver` (also what an ``emu:`` or
  ``net:`` resource opens: the same driver over an emulator transport) and by the test fake
  ``tests/session/fakes.py::FakeModule``. Values are the dataclasses of :mod:`eqtune.drivers.cmis_types`.
* :class:`LabInstrument`, :class:`Bert`, :class:`Scope`: a SCPI instrument bound to a definition
  (:class:`eqtune.drivers.instrument.Instrument`, which is both; its ``kind`` says which one works).
* :class:`ScpiTransport`: a SCPI session (``VisaTransport`` to a real instrument or to the SCPI
  emulator on 127.0.0.1, ``ReplayTransport`` in tests).
* :class:`RegisterTransport`: the 256-byte two-wire space of a module (i2c, optoe, FTDI, the
  ``net:`` bridge client, the emulator transport, the fault-injecting wrapper).
* :class:`TwoWireTarget` and :class:`Clock`: the device behind a transport in tests and demos, the
  CMIS module emulator :class:`eqtune.emulate.module.EmulatedModule` (what ``emu:`` resources and
  ``eqtune emulate`` serve).

Conformance is checked twice: statically by mypy on ``tests/typecheck/protocol_conformance.py``, and at
run time by ``tests/drivers/test_protocols.py`` (every member present with a compatible signature).
Units: ``dwell_s`` in s, codes are CMIS integer codes, lanes are 1-based.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from eqtune.drivers.cmis_policy import ApplyMethod
from eqtune.drivers.cmis_types import EqCapabilities, EqCodes, ModuleIdentity, PlannedChange, VdmLane
from eqtune.drivers.measurement import BerCount, EyeMeasurement

__all__ = [
    "Bert", "Clock", "CmisModule", "LabInstrument", "RegisterTransport", "Scope", "ScpiTransport",
    "TwoWireTarget",
]


@runtime_checkable
class CmisModule(Protocol):
    """An open CMIS 4.0/5.x module (lanes 1..8): identity, EQ read/validate/apply, Tx adaptive EQ,
    PRBS BER, VDM and temperature. Writes are validated before any I/O, verified by read-back and
    rolled back on failure (:class:`eqtune.errors.ModuleError`); bad codes raise
    :class:`eqtune.errors.EqRangeError` before any write."""

    #: the resource string it was opened with (``i2c:1@0x50``, ``emu:c2m-10in``, ...)
    resource: str
    #: told (one line of text) before an apply takes the data path, and so the traffic, down
    notify: Callable[[str], None] | None

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> None: ...

    # identity / status
    def module_state(self) -> str:
        """ModuleState name (``ModuleReady``, ...; CMIS 5.2 Table 8-6)."""
        ...

    def identity(self) -> ModuleIdentity: ...

    def capabilities(self, refresh: bool = False) -> EqCapabilities: ...

    def dp_states(self, stable: bool = False) -> dict[int, str]:
        """DPState name per lane (CMIS 5.2 Table 8-80)."""
        ...

    def apply_method(self, method: str = "auto") -> ApplyMethod:
        """The Apply procedure ``apply_eq(method=...)`` would use ("auto", "immediate", "dpinit")."""
        ...

    # EQ codes
    def active_eq(self, lane: int) -> dict[str, int]:
        """Active codes (page 11h) of one lane: knob -> code, supported knobs only."""
        ...

    def active_eq_all(self) -> dict[int, dict[str, int]]: ...

    def tx_adaptive_enabled(self) -> dict[int, bool]:
        """Tx input adaptive EQ on, per lane (page 11h byte 214)."""
        ...

    def validate_eq(self, codes: EqCodes) -> None:
        """EqRangeError unless every lane/knob/code is advertised (no I/O beyond reads)."""
        ...

    def plan_eq(self, codes: EqCodes) -> list[PlannedChange]: ...

    def apply_eq(self, codes: EqCodes, *, method: str = "auto") -> None:
        """Stage, apply, read back ``{lane: {knob: code}}``; restores the previous codes on failure."""
        ...

    def enable_tx_adaptive(self, lanes: Sequence[int], *, method: str = "auto") -> None: ...

    def set_tx_adaptive(self, lanes: Sequence[int], on: bool, *, method: str = "auto") -> None: ...

    # measurements
    def module_ber(self, lanes: Sequence[int], dwell_s: float) -> dict[int, BerCount]:
        """Bit errors counted by the module's host-side PRBS checker over ``dwell_s`` seconds."""
        ...

    def vdm(self, lanes: Sequence[int] | None = None, *, freeze: bool = True) -> dict[int, VdmLane]: ...

    def temperature_c(self) -> float:
        """Module temperature (degrees C, lower page bytes 14-15)."""
        ...


@runtime_checkable
class LabInstrument(Protocol):
    """An opened lab instrument: ``kind`` is "bert" or "scope" (its definition's)."""

    resource: str

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    def identity(self) -> dict[str, str]:
        """``{"idn", "definition", "title", "resource", "kind"}`` for journals and reports."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Bert(LabInstrument, Protocol):
    """A bit-error-ratio tester: counts errors on one lane for ``dwell_s`` seconds."""

    def measure_ber(self, lane: int, dwell_s: float, **params: Any) -> BerCount: ...


@runtime_checkable
class Scope(LabInstrument, Protocol):
    """A sampling scope: eye height (mV), width (ps/UI), TDECQ (dB) of one lane."""

    def measure_eye(self, lane: int, dwell_s: float = 0.0, **params: Any) -> EyeMeasurement: ...


@runtime_checkable
class ScpiTransport(Protocol):
    """A SCPI session: ``write`` a command, ``query`` one reply line (``retry`` only for pure queries)."""

    resource: str

    def write(self, command: str) -> None: ...

    def query(self, command: str, *, retry: bool = False) -> str: ...

    def close(self) -> None: ...


@runtime_checkable
class RegisterTransport(Protocol):
    """The 256-byte two-wire space of a module: bytes 0-127 lower page, 128-255 the selected page.

    ``pages_natively``: the transport addresses pages itself (``read_page``/``write_page``; optoe, the
    net bridge) instead of writing the page-select byte 127. ``sleep``/``monotonic`` (s) are the time
    the driver waits on (an emulator may run a virtual clock)."""

    resource: str
    pages_natively: bool

    def read(self, offset: int, n: int) -> bytes: ...

    def write(self, offset: int, data: bytes) -> None: ...

    def read_page(self, bank: int, page: int, offset: int, n: int) -> bytes: ...

    def write_page(self, bank: int, page: int, offset: int, data: bytes) -> None: ...

    def close(self) -> None: ...

    def sleep(self, seconds: float) -> None: ...

    def monotonic(self) -> float: ...


@runtime_checkable
class Clock(Protocol):
    """``clock()`` -> now (s, monotonic); ``clock.sleep(s)`` waits (a virtual clock just advances)."""

    def __call__(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@runtime_checkable
class TwoWireTarget(Protocol):
    """A device on the two-wire bus as an I2C target sees it (the module emulator): ``read``/``write``
    at the current page (byte 127 selects it), NACK/timeout raised as the emulator's exceptions."""

    name: str
    clock: Clock

    def read(self, offset: int, n: int) -> bytes: ...

    def write(self, offset: int, data: bytes) -> None: ...
