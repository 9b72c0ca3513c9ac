"""Register transports for CMIS modules and the paged register view on top of them.

A *transport* moves bytes on the module's 256-byte two-wire (I2C) address space at 0x50:
bytes 0..127 are the lower page, 128..255 the upper page selected by bytes 126 (bank) and 127
(page) (CMIS 5.2 section 8.1). Transports raise :class:`~eqtune.errors.TransportError` only.

:class:`PagedRegisters` adds page/bank selection, per-field access for the declarative map in
:mod:`eqtune.drivers.cmis_map`, read-modify-write of packed per-lane fields, write chunking
(CMIS 5.2 section 5.2.2: a host should not write more than 8 bytes in one transaction), and
"stable" reads (read twice, compare) for values that must not be corrupted.

Resource strings (see :func:`parse_resource`)::

    i2c:BUS[@ADDR]            Linux i2c-dev via smbus2, e.g. i2c:1@0x50 or i2c:/dev/i2c-1@0x50
    optoe:PATH                optoe sysfs eeprom file, e.g. optoe:/sys/bus/i2c/devices/11-0050/eeprom
    ftdi://ftdi:232h/1[@ADDR] FT232H via pyftdi (pip install eqtune[ftdi])
    emu:CHANNEL[?k=v&...]     in-process CMIS module emulator (options: seed, settle_ms, fast, lanes,
                              stepped, noise, adaptive, name; adaptive=0 powers up with fixed Tx
                              input EQ on all lanes, default 1 = adaptive on as shipped); parsed and
                              opened by eqtune.emulate through the scheme registry (drivers/schemes.py)
    net:HOST:PORT             TCP register bridge served by ``eqtune emulate`` (NetBridgeServer)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

from eqtune.drivers.schemes import SCHEMES, scheme_function
from eqtune.errors import InputError, TransportError

if TYPE_CHECKING:
    from eqtune.drivers.cmis_map import Field

I2C_ADDR_DEFAULT = 0x50
MAX_WRITE = 8  # CMIS 5.2 section 5.2.2: writes of up to 8 bytes in one transaction
SMBUS_BLOCK_MAX = 32  # SMBus/i2c-dev block transfer limit; longer reads use I2C_RDWR


class Transport:
    """Base class: ``read(offset, n)`` / ``write(offset, data)`` on the 256-byte two-wire space."""

    resource: str = "?"
    #: True when the transport addresses pages itself (optoe, net bridge): see read_page/write_page.
    pages_natively: bool = False

    def read(self, offset: int, n: int) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def write(self, offset: int, data: bytes) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def read_page(self, bank: int, page: int, offset: int, n: int) -> bytes:  # pragma: no cover
        raise NotImplementedError

    def write_page(self, bank: int, page: int, offset: int, data: bytes) -> None:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:
        pass

    # Time hooks: the emulator may run on a virtual clock, so drivers sleep/measure via the transport.
    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def monotonic(self) -> float:
        return time.monotonic()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _check_range(resource: str, offset: int, n: int) -> None:
        if offset < 0 or n < 0 or offset + n > 256:
            raise TransportError(
                f"{resource}: access {offset}..{offset + n - 1} is outside the 256-byte two-wire space "
                "(internal error: report it)"
            )


def _retry_reads(func: Callable[[], bytes], retries: int, resource: str, what: str,
                 sleep: Callable[[float], None]) -> bytes:
    """Reads are side-effect free on CMIS registers used here: retry them; writes are never retried."""
    last: Exception | None = None
    for attempt in range(retries + 1):
        try:
            return func()
        except TransportError as exc:
            last = exc
            if attempt < retries:
                sleep(0.002 * (attempt + 1))
    assert last is not None
    raise last


# --------------------------------------------------------------------------------------------------
# Linux I2C (smbus2)
# --------------------------------------------------------------------------------------------------
I2C_TIMEOUT_IOCTL = 0x0702  # linux/i2c-dev.h I2C_TIMEOUT, unit 10 ms


class SMBusTransport(Transport):
    """Linux ``/dev/i2c-N`` via smbus2. Reads over 32 bytes use one ``I2C_RDWR`` transfer
    (write offset, repeated start, read n) because SMBus block reads stop at 32 bytes."""

    def __init__(self, bus: int | str, address: int = I2C_ADDR_DEFAULT, *, timeout_s: float = 0.5,
                 retries: int = 2, bus_factory: Callable[[Any], Any] | None = None) -> None:
        self.bus_id = bus
        self.address = address
        self.retries = retries
        self.resource = f"i2c:{bus}@0x{address:02x}"
        try:
            if bus_factory is None:
                from smbus2 import SMBus

                bus_factory = SMBus
            self._bus = bus_factory(bus)
        except (OSError, FileNotFoundError, PermissionError) as exc:
            raise TransportError(
                f"{self.resource}: cannot open I2C bus {bus} ({exc}); check that i2c-dev is loaded "
                "(modprobe i2c-dev), the bus number (i2cdetect -l) and that you may access /dev/i2c-*"
            ) from exc
        fd = getattr(self._bus, "fd", None)
        if isinstance(fd, int) and fd >= 0:
            try:  # adapter-level timeout; not every adapter honours it
                import fcntl

                fcntl.ioctl(fd, I2C_TIMEOUT_IOCTL, max(1, int(round(timeout_s * 100))))
            except OSError:
                pass

    def _fault(self, what: str, exc: Exception) -> TransportError:
        errno: int = getattr(exc, "errno", None) or -1
        hint = {
            6: "no device answered (NACK): check the module is seated and powered and the address",
            121: "no acknowledge (NACK): check the module is seated and powered and the address",
            110: "bus timeout: the module stretched the clock too long or the bus is stuck; reseat it",
            5: "I/O error on the bus: check the cable/adapter and bus speed",
        }.get(errno, "check the module is seated and the bus/address are right")
        return TransportError(f"{self.resource}: {what} failed ({exc}); {hint}")

    def read(self, offset: int, n: int) -> bytes:
        self._check_range(self.resource, offset, n)

        def once() -> bytes:
            try:
                if n <= SMBUS_BLOCK_MAX:
                    return bytes(self._bus.read_i2c_block_data(self.address, offset, n))
                from smbus2 import i2c_msg

                wr = i2c_msg.write(self.address, [offset])
                rd = i2c_msg.read(self.address, n)
                self._bus.i2c_rdwr(wr, rd)
                return bytes(rd)
            except OSError as exc:
                raise self._fault(f"read of {n} bytes at {offset}", exc) from exc

        return _retry_reads(once, self.retries, self.resource, "read", self.sleep)

    def write(self, offset: int, data: bytes) -> None:
        self._check_range(self.resource, offset, len(data))
        try:
            self._bus.write_i2c_block_data(self.address, offset, list(data))
        except OSError as exc:
            raise self._fault(f"write of {len(data)} bytes at {offset}", exc) from exc

    def close(self) -> None:
        bus, self._bus = getattr(self, "_bus", None), None
        if bus is not None:
            try:
                bus.close()
            except OSError:
                pass


# --------------------------------------------------------------------------------------------------
# optoe sysfs eeprom
# --------------------------------------------------------------------------------------------------
class OptoeTransport(Transport):
    """The optoe driver's sysfs ``eeprom`` file (optoe3 = CMIS).

    optoe presents the paged memory as one linear file: lower page at 0..127, upper page 00h at
    128..255, and upper page N at ``N * 128 + 128 .. N * 128 + 255`` (optoe.c header comment; the same
    ``page * 128 + offset`` convention as sonic_xcvr's ``getaddr``). optoe writes the page select
    itself, so this transport pages natively. It cannot select banks other than 0.
    """

    pages_natively = True

    def __init__(self, path: str, *, retries: int = 2) -> None:
        self.path = path
        self.retries = retries
        self.resource = f"optoe:{path}"
        try:
            self._fd = os.open(path, os.O_RDWR)
        except PermissionError:
            try:
                self._fd = os.open(path, os.O_RDONLY)
            except OSError as exc:
                raise self._open_error(exc) from exc
        except OSError as exc:
            raise self._open_error(exc) from exc

    def _open_error(self, exc: Exception) -> TransportError:
        return TransportError(
            f"{self.resource}: cannot open the optoe eeprom file ({exc}); check the path "
            "(ls /sys/bus/i2c/devices/*/eeprom), that the optoe driver is bound (dev_class 3 for CMIS) "
            "and your permissions"
        )

    @staticmethod
    def linear(page: int, offset: int) -> int:
        return offset if offset < 128 else page * 128 + offset

    def _pread(self, pos: int, n: int) -> bytes:
        try:
            data = os.pread(self._fd, n, pos)
        except OSError as exc:
            raise TransportError(
                f"{self.resource}: read of {n} bytes at linear offset {pos} failed ({exc}); "
                "check the module is present and the page is supported"
            ) from exc
        if len(data) != n:
            raise TransportError(
                f"{self.resource}: short read at linear offset {pos} ({len(data)} of {n} bytes); "
                "the page may not be supported by the module or by optoe"
            )
        return data

    def _pwrite(self, pos: int, data: bytes) -> None:
        try:
            written = os.pwrite(self._fd, bytes(data), pos)
        except OSError as exc:
            raise TransportError(
                f"{self.resource}: write of {len(data)} bytes at linear offset {pos} failed ({exc}); "
                "check that the file is writable (root) and the module is present"
            ) from exc
        if written != len(data):
            raise TransportError(f"{self.resource}: short write at linear offset {pos}")

    def read(self, offset: int, n: int) -> bytes:
        self._check_range(self.resource, offset, n)
        return _retry_reads(lambda: self._pread(offset, n), self.retries, self.resource, "read", self.sleep)

    def write(self, offset: int, data: bytes) -> None:
        self._check_range(self.resource, offset, len(data))
        if offset <= 127 < offset + len(data) or offset in (126, 127):
            raise TransportError(f"{self.resource}: optoe selects pages itself; do not write bytes 126/127")
        self._pwrite(offset, data)

    def _bank0(self, bank: int) -> None:
        if bank:
            raise TransportError(
                f"{self.resource}: optoe cannot select bank {bank}; lanes 9+ need a bank-capable "
                "adapter (i2c:BUS@0x50)"
            )

    def read_page(self, bank: int, page: int, offset: int, n: int) -> bytes:
        self._bank0(bank)
        pos = self.linear(page, offset)
        return _retry_reads(lambda: self._pread(pos, n), self.retries, self.resource, "read", self.sleep)

    def write_page(self, bank: int, page: int, offset: int, data: bytes) -> None:
        self._bank0(bank)
        self._pwrite(self.linear(page, offset), data)

    def close(self) -> None:
        fd: int | None = getattr(self, "_fd", None)
        self._fd = -1  # closed
        if fd is not None and fd >= 0:
            os.close(fd)


# --------------------------------------------------------------------------------------------------
# FTDI FT232H (pyftdi, optional)
# --------------------------------------------------------------------------------------------------
class FtdiTransport(Transport):
    """An FT232H (or FT2232H/FT4232H) MPSSE I2C master via pyftdi (optional: ``pip install eqtune[ftdi]``)."""

    def __init__(self, url: str, address: int = I2C_ADDR_DEFAULT, *, frequency_hz: float = 400e3,
                 retries: int = 2) -> None:
        self.url = url
        self.address = address
        self.retries = retries
        self.resource = f"{url}@0x{address:02x}"
        try:
            from pyftdi.i2c import I2cController, I2cNackError
        except ImportError as exc:
            raise TransportError(
                f"{url}: the FTDI transport needs pyftdi, which is not installed; "
                "run: pip install eqtune[ftdi]"
            ) from exc
        self._nack = I2cNackError
        self._ctrl = I2cController()
        try:
            self._ctrl.configure(url, frequency=frequency_hz)
            self._port = self._ctrl.get_port(address)
        except Exception as exc:  # pyftdi raises USBError, FtdiError, ValueError...
            raise TransportError(
                f"{url}: cannot open the FTDI adapter ({exc}); check the URL (python -m pyftdi.ftdi_urls), "
                "USB permissions (udev rule) and that no other program holds it"
            ) from exc

    def read(self, offset: int, n: int) -> bytes:
        self._check_range(self.resource, offset, n)

        def once() -> bytes:
            try:
                return bytes(self._port.exchange([offset], n))
            except self._nack as exc:
                raise TransportError(f"{self.resource}: read at {offset}: NACK ({exc}); check the module "
                                     "is seated and powered and the address") from exc
            except Exception as exc:
                raise TransportError(f"{self.resource}: read at {offset} failed ({exc}); check the USB "
                                     "cable and the adapter") from exc

        return _retry_reads(once, self.retries, self.resource, "read", self.sleep)

    def write(self, offset: int, data: bytes) -> None:
        self._check_range(self.resource, offset, len(data))
        try:
            self._port.write(bytes([offset]) + bytes(data))
        except self._nack as exc:
            raise TransportError(f"{self.resource}: write at {offset}: NACK ({exc}); check the module "
                                 "is seated and powered") from exc
        except Exception as exc:
            raise TransportError(f"{self.resource}: write at {offset} failed ({exc}); check the USB "
                                 "cable and the adapter") from exc

    def close(self) -> None:
        ctrl, self._ctrl = getattr(self, "_ctrl", None), None
        if ctrl is not None:
            try:
                ctrl.terminate()
            except Exception:  # noqa: BLE001 - closing must not raise
                pass


# --------------------------------------------------------------------------------------------------
# Resource strings
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ResourceSpec:
    kind: str  # "i2c", "optoe", "ftdi", "emu", "net"
    target: str  # bus, path, url, channel, host
    address: int = I2C_ADDR_DEFAULT
    port: int = 0
    options: dict[str, str] = field(default_factory=dict)


_FORMATS = ("i2c:BUS@0x50, optoe:/sys/bus/i2c/devices/N-0050/eeprom, ftdi://ftdi:232h/1, "
            "emu:CHANNEL, net:HOST:PORT")


def _parse_addr(resource: str, text: str) -> int:
    try:
        addr = int(text, 0)
    except ValueError:
        raise InputError(f"{resource!r}: I2C address {text!r} is not a number; write it like @0x50") from None
    if not 0x03 <= addr <= 0x77:
        raise InputError(f"{resource!r}: I2C address 0x{addr:02x} is outside 0x03..0x77 (CMIS modules use 0x50)")
    return addr


def parse_resource(resource: str) -> ResourceSpec:
    """Parse a module resource string; raise InputError naming the accepted forms."""
    if not isinstance(resource, str) or not resource.strip():
        raise InputError(f"empty module resource; use one of: {_FORMATS}")
    res = resource.strip()
    kind, sep, rest = res.partition(":")
    kind = kind.lower()
    if not sep or kind not in ("i2c", "optoe", "ftdi", "net", *SCHEMES):
        raise InputError(f"unknown module resource {resource!r}; use one of: {_FORMATS}")
    if kind == "i2c":
        bus, _, addr = rest.partition("@")
        if not bus:
            raise InputError(f"{resource!r}: missing I2C bus number; write it like i2c:1@0x50")
        if bus.startswith("/dev/i2c-"):
            bus = bus[len("/dev/i2c-"):]
        if not bus.isdigit():
            raise InputError(f"{resource!r}: I2C bus {bus!r} is not a number; write it like i2c:1@0x50")
        return ResourceSpec("i2c", bus, _parse_addr(resource, addr) if addr else I2C_ADDR_DEFAULT)
    if kind == "optoe":
        if not rest:
            raise InputError(f"{resource!r}: missing eeprom path; write it like "
                             "optoe:/sys/bus/i2c/devices/11-0050/eeprom")
        return ResourceSpec("optoe", rest)
    if kind == "ftdi":
        if not rest.startswith("//"):
            raise InputError(f"{resource!r}: FTDI resources are pyftdi URLs like ftdi://ftdi:232h/1")
        url, addr = res, ""
        head, at, tail = res.rpartition("@")
        if at and tail.lower().startswith("0x"):
            url, addr = head, tail
        return ResourceSpec("ftdi", url, _parse_addr(resource, addr) if addr else I2C_ADDR_DEFAULT)
    if kind in SCHEMES:  # e.g. emu: (the emulators register their parser: drivers/schemes.py)
        parsed: ResourceSpec = scheme_function(kind, "parse")(resource, rest)
        return parsed
    # net:HOST:PORT
    host, _, port = rest.rpartition(":")
    if not host or not port:
        raise InputError(f"{resource!r}: write the bridge as net:HOST:PORT, e.g. net:127.0.0.1:7700")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"{resource!r}: port {port!r} is not a TCP port number (1..65535)")
    return ResourceSpec("net", host.strip("[]"), port=int(port))


def open_transport(resource: str, **kwargs: Any) -> Transport:
    """Open the transport a resource string names (see module docstring)."""
    spec = parse_resource(resource)
    if spec.kind == "i2c":
        return SMBusTransport(int(spec.target), spec.address, **kwargs)
    if spec.kind == "optoe":
        return OptoeTransport(spec.target, **kwargs)
    if spec.kind == "ftdi":
        return FtdiTransport(spec.target, spec.address, **kwargs)
    if spec.kind == "net":
        from eqtune.drivers.netbridge import NetTransport

        return NetTransport(spec.target, spec.port, **kwargs)
    opened: Transport = scheme_function(spec.kind, "open")(spec, resource.strip(), **kwargs)
    return opened


# --------------------------------------------------------------------------------------------------
# Paged register view
# --------------------------------------------------------------------------------------------------
class PagedRegisters:
    """``read(page, offset, n, bank=0)`` / ``write(page, offset, data, bank=0)`` over a transport.

    ``offset`` is the two-wire byte address (0..127 lower page, 128..255 upper page). Every upper-page
    access writes BankSelect+PageSelect (bytes 126-127, one 2-byte write; CMIS 5.2 section 8.2.x)
    first, so several processes sharing a bridge cannot leave a stale page selected.
    """

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.resource = transport.resource

    # ------------------------------------------------------------------ raw
    def _select(self, bank: int, page: int) -> None:
        if not (0 <= bank <= 255 and 0 <= page <= 255):
            raise TransportError(f"{self.resource}: bank {bank}/page {page} out of range")
        self.transport.write(126, bytes([bank, page]))

    def read(self, page: int, offset: int, n: int, bank: int = 0) -> bytes:
        out = bytearray()
        while n > 0:
            if offset < 128:
                k = min(n, 128 - offset)
                out += self.transport.read(offset, k)
            else:
                k = min(n, 256 - offset)
                if k <= 0:
                    raise TransportError(f"{self.resource}: read past byte 255 of page {page:02x}h")
                if self.transport.pages_natively:
                    out += self.transport.read_page(bank, page, offset, k)
                else:
                    self._select(bank, page)
                    out += self.transport.read(offset, k)
            offset += k
            n -= k
        return bytes(out)

    def read_stable(self, page: int, offset: int, n: int, bank: int = 0, attempts: int = 3) -> bytes:
        """Read twice and compare (guards against corrupted reads); retry up to ``attempts`` times."""
        prev = self.read(page, offset, n, bank)
        for _ in range(attempts):
            cur = self.read(page, offset, n, bank)
            if cur == prev:
                return cur
            prev = cur
        raise TransportError(
            f"{self.resource}: page {page:02x}h bytes {offset}..{offset + n - 1} read differently on "
            "every attempt (corrupted reads); check the cable/adapter, lower the bus speed, reseat the module"
        )

    def write(self, page: int, offset: int, data: bytes, bank: int = 0) -> None:
        data = bytes(data)
        pos = 0
        while pos < len(data):
            off = offset + pos
            k = min(MAX_WRITE, len(data) - pos, (128 if off < 128 else 256) - off)
            if k <= 0:
                raise TransportError(f"{self.resource}: write past byte 255 of page {page:02x}h")
            chunk = data[pos:pos + k]
            if off < 128:
                self.transport.write(off, chunk)
            elif self.transport.pages_natively:
                self.transport.write_page(bank, page, off, chunk)
            else:
                self._select(bank, page)
                self.transport.write(off, chunk)
            pos += k

    # ------------------------------------------------------------------ fields
    def read_field_bytes(self, fld: Field, bank: int = 0, stable: bool = False) -> bytes:
        reader = self.read_stable if stable else self.read
        return reader(fld.page, fld.offset, fld.span, bank)

    def read_scalar(self, fld: Field, bank: int = 0) -> int:
        return fld.scalar_value(self.read(fld.page, fld.offset, 1, bank))

    def read_lanes(self, fld: Field, lanes: Iterable[int] = range(1, 9), bank: int = 0,
                   stable: bool = False) -> dict[int, int]:
        block = self.read_field_bytes(fld, bank, stable)
        return {lane: fld.lane_value(block, lane) for lane in lanes}

    def write_lanes(self, fld: Field, values: dict[int, int], bank: int = 0) -> None:
        """Read-modify-write the bytes of a per-lane field; untouched lanes keep their values."""
        block = bytearray(self.read_field_bytes(fld, bank, stable=True))
        original = bytes(block)
        for lane, value in values.items():
            off, shift, mask = fld.locate(lane)
            if not 0 <= value <= mask:
                raise TransportError(f"{self.resource}: {fld.name} lane {lane} value {value} does not fit")
            i = off - fld.offset
            block[i] = (block[i] & ~(mask << shift) & 0xFF) | (value << shift)
        for i, (a, b) in enumerate(zip(original, block)):
            if a != b:
                self.write(fld.page, fld.offset + i, bytes([b]), bank)

    def close(self) -> None:
        self.transport.close()
