"""Static proof that every implementation meets the contracts of :mod:`eqtune.drivers.protocols`.

Not a test module (pytest does not collect it) and never run: mypy type-checks it
(``mypy --strict tests/typecheck/protocol_conformance.py``). Each assignment below fails the type
check when a class loses a Protocol member or changes its signature incompatibly. The run-time
counterpart (member by member, with inspect.signature) is tests/drivers/test_protocols.py.
"""

from __future__ import annotations

from eqtune.drivers.cmis import CmisDriver, open_module
from eqtune.drivers.instrument import Instrument, ReplayTransport
from eqtune.drivers.netbridge import NetTransport
from eqtune.drivers.protocols import (
    Bert,
    Clock,
    CmisModule,
    LabInstrument,
    RegisterTransport,
    Scope,
    ScpiTransport,
    TwoWireTarget,
)
from eqtune.drivers.transport import FtdiTransport, OptoeTransport, PagedRegisters, SMBusTransport
from eqtune.drivers.visa import VisaTransport
from eqtune.emulate.faults import FaultyTransport
from eqtune.emulate.module import EmulatedModule, RealClock, VirtualClock
from eqtune.emulate.transport import EmulatorTransport
from tests.session.fakes import FakeModule


def modules(regs: PagedRegisters, driver: CmisDriver, fake: FakeModule) -> list[CmisModule]:
    """The real driver (what i2c:, optoe:, ftdi://, net: and emu: resources open) and the test fake."""
    opened: CmisModule = open_module("emu:c2m-10in")
    built: CmisModule = CmisDriver(regs)
    with driver as entered:
        ctx: CmisModule = entered
    faked: CmisModule = fake
    return [opened, built, ctx, faked]


def instruments(inst: Instrument) -> tuple[LabInstrument, Bert, Scope]:
    """A definition-driven SCPI instrument (to a real one or to the SCPI emulator) is both kinds."""
    return inst, inst, inst


def scpi_transports(visa: VisaTransport, replay: ReplayTransport) -> list[ScpiTransport]:
    return [visa, replay]


def register_transports(smbus: SMBusTransport, optoe: OptoeTransport, ftdi: FtdiTransport, net: NetTransport,
                        emu: EmulatorTransport, faulty: FaultyTransport) -> list[RegisterTransport]:
    return [smbus, optoe, ftdi, net, emu, faulty]


def emulated_targets(emu: EmulatedModule) -> tuple[TwoWireTarget, Clock, Clock]:
    """The CMIS module emulator behind ``emu:`` resources and ``eqtune emulate``, and its clocks."""
    return emu, RealClock(), VirtualClock()
