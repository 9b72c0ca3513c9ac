"""Fault injection at the register interface, for tests and the fault benchmark.

:class:`FaultyTransport` wraps any :class:`~eqtune.drivers.transport.Transport` (an emulated module,
a net bridge) and makes chosen transactions fail the way a two-wire bus and a CMIS module fail:

``nack``
    the transaction is not acknowledged: :class:`~eqtune.errors.TransportError`, nothing moved.
``timeout``
    the target stretched the clock past the adapter's limit: TransportError; for a write the bytes
    may or may not have landed (here: they did, the harder case for the host).
``corrupt``
    a read returns one flipped bit (noise on SDA): the host sees a wrong read-back.
``reject``
    the module refuses the next configuration: the Apply write (page 10h byte 143 ApplyDPInit or 144
    ApplyImmediate, CMIS 5.2 section 8.9.2 / table 8-76) is dropped, and ConfigStatus (page 11h bytes
    202-205, section 8.10.9) reads ConfigRejected (2) for every lane until the next accepted Apply.
``reset``
    the module resets in the middle of a multi-byte register write (an upper-page write: the
    staging or Apply of a configuration; a reset armed on a page select moves to the next write): the first half of the bytes land, the
    module power-cycles (``reset()`` of the wrapped emulator: registers and link back to power-up)
    and NACKs while it boots (``boot_naks`` transactions), as a module pulled by ResetL or a
    brown-out would.

Faults are armed with :meth:`FaultyTransport.arm` at a transaction index (counted over reads and
writes through this wrapper). Nothing here changes the emulator's own behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eqtune.drivers import cmis_map as M
from eqtune.drivers.transport import Transport
from eqtune.errors import TransportError

KINDS = ("nack", "timeout", "corrupt", "reject", "reset")

_PAGE_SELECT = 127  # CMIS 5.2 section 8.2.1: byte 127 selects the upper page (126 the bank)
_APPLY_OFFSETS = (M.APPLY_DPINIT_SCS0.offset, M.APPLY_IMMEDIATE_SCS0.offset)  # page 10h, 143 / 144
_STATUS_FIRST = M.CONFIG_STATUS.offset  # page 11h 202..205, one nibble per lane
_REJECTED = int(M.ConfigStatus.REJECTED)


@dataclass
class FaultLog:
    """What was injected (by kind) and at which transactions."""

    injected: dict[str, int] = field(default_factory=dict)
    at: list[tuple[int, str]] = field(default_factory=list)


class FaultyTransport(Transport):
    """A transport whose armed transactions fail (see the module docstring)."""

    def __init__(self, inner: Transport, *, emulator: Any = None, boot_naks: int = 3) -> None:
        self.inner = inner
        self.resource = getattr(inner, "resource", "?")
        self.emulator = emulator  # needed for "reset" (EmulatedModule.reset)
        self.boot_naks = boot_naks
        self.count = 0  # transactions seen
        self._armed: dict[int, str] = {}
        self._page = 0
        self._reject_next = False  # drop the next Apply write
        self._rejected = False  # ConfigStatus reads ConfigRejected until an Apply is accepted
        self._booting = 0
        self.log = FaultLog()

    # -- arming --------------------------------------------------------------------------------
    def arm(self, kind: str, at: int) -> None:
        """Fail the transaction with index ``at`` (0 = the next one after construction) with ``kind``."""
        if kind not in KINDS:
            raise ValueError(f"unknown fault {kind!r}; use one of {', '.join(KINDS)}")
        self._armed[int(at)] = kind

    def _take(self, op: str) -> str | None:
        i = self.count
        self.count += 1
        if self._booting > 0:
            self._booting -= 1
            return "boot"
        kind = self._armed.pop(i, None)
        if kind is not None:
            if kind == "corrupt" and op != "read":
                kind = "nack"  # a write cannot be "corrupted" on the way back; fail it instead
            self.log.injected[kind] = self.log.injected.get(kind, 0) + 1
            self.log.at.append((i, kind))
        return kind

    def _fail(self, kind: str, what: str) -> TransportError:
        if kind == "timeout":
            return TransportError(f"{self.resource}: {what}: bus timeout (injected)")
        return TransportError(f"{self.resource}: {what}: the module did not acknowledge (NACK, injected)")

    # -- bus -----------------------------------------------------------------------------------
    def _defer(self, kind: str) -> None:
        """Move a fault armed on a transaction it cannot hit to the next one."""
        self._armed.setdefault(self.count, kind)
        self.log.injected[kind] -= 1
        self.log.at.pop()

    def read(self, offset: int, n: int) -> bytes:
        kind = self._take("read")
        if kind == "reset":  # resets hit writes
            self._defer(kind)
            kind = None
        if kind in ("nack", "boot"):
            raise self._fail("nack", f"read at {offset}")
        if kind == "timeout":
            raise self._fail("timeout", f"read at {offset}")
        if kind == "reject":
            self._reject_next = True
        data = bytearray(self.inner.read(offset, n))
        if self._rejected and self._page == 0x11:
            for i in range(n):
                if _STATUS_FIRST <= offset + i < _STATUS_FIRST + 4:
                    data[i] = _REJECTED | _REJECTED << 4
        if kind == "corrupt" and data:
            data[(self.count * 7) % len(data)] ^= 1 << (self.count % 8)
        return bytes(data)

    def write(self, offset: int, data: bytes) -> None:
        kind = self._take("write")
        if kind in ("nack", "boot"):
            raise self._fail("nack", f"write at {offset}")
        if kind == "reset" and offset < 128:  # a reset interrupts a register write, not a page select
            self._defer(kind)
            kind = None
        if kind == "reset":
            half = max(1, len(data) // 2)
            if len(data) > 1:
                self.inner.write(offset, bytes(data[:half]))
            if self.emulator is None:
                raise ValueError("a reset fault needs the emulator (FaultyTransport(emulator=...))")
            self.emulator.reset()
            self._page, self._reject_next, self._rejected, self._booting = 0, False, False, self.boot_naks
            raise self._fail("nack", f"write at {offset} (module reset mid-write)")
        if kind == "reject":
            self._reject_next = True
        if offset <= _PAGE_SELECT < offset + len(data):
            self._page = data[_PAGE_SELECT - offset]
        if self._page == 0x10 and any(offset <= a < offset + len(data) for a in _APPLY_OFFSETS):
            if self._reject_next:  # the module refuses this configuration: nothing applied
                self._reject_next, self._rejected = False, True
                return
            self._rejected = False
        self.inner.write(offset, bytes(data))
        if kind == "timeout":  # the bytes landed but the host was told it timed out
            raise self._fail("timeout", f"write at {offset}")

    # -- passthrough (a transport that selects pages with byte 127, e.g. the in-process emulator) -----
    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)

    def monotonic(self) -> float:
        return self.inner.monotonic()

    def close(self) -> None:
        self.inner.close()
