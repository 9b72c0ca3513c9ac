"""Transports with fakes (smbus2 bus object, optoe temp file), resource parsing, paged access."""

from __future__ import annotations

import ctypes
import importlib.util

import pytest

from eqtune.drivers import cmis_map as M
from eqtune.drivers.transport import (
    FtdiTransport,
    OptoeTransport,
    PagedRegisters,
    SMBusTransport,
    Transport,
    open_transport,
    parse_resource,
)
from eqtune.errors import InputError, TransportError


# ------------------------------------------------------------------ resource strings
@pytest.mark.parametrize("res, kind, target, addr, port", [
    ("i2c:1@0x50", "i2c", "1", 0x50, 0),
    ("i2c:/dev/i2c-7@0x51", "i2c", "7", 0x51, 0),
    ("i2c:3", "i2c", "3", 0x50, 0),
    ("optoe:/sys/bus/i2c/devices/11-0050/eeprom", "optoe", "/sys/bus/i2c/devices/11-0050/eeprom", 0x50, 0),
    ("ftdi://ftdi:232h/1", "ftdi", "ftdi://ftdi:232h/1", 0x50, 0),
    ("ftdi://ftdi:232h/1@0x51", "ftdi", "ftdi://ftdi:232h/1", 0x51, 0),
    ("emu:c2m-10in", "emu", "c2m-10in", 0x50, 0),
    ("net:127.0.0.1:7700", "net", "127.0.0.1", 0x50, 7700),
    ("net:[::1]:7700", "net", "::1", 0x50, 7700),
])
def test_parse_resource(res, kind, target, addr, port):
    spec = parse_resource(res)
    assert (spec.kind, spec.target, spec.address, spec.port) == (kind, target, addr, port)


def test_parse_emu_options():
    spec = parse_resource("emu:c2m-16in?seed=4&settle_ms=0&fast=1")
    assert spec.options == {"seed": "4", "settle_ms": "0", "fast": "1"}


@pytest.mark.parametrize("res, match", [
    ("", "empty module resource"),
    ("bogus", "unknown module resource"),
    ("usb:1", "unknown module resource"),
    ("i2c:", "missing I2C bus"),
    ("i2c:x@0x50", "is not a number"),
    ("i2c:1@zz", "address 'zz' is not a number"),
    ("i2c:1@0x90", "outside 0x03..0x77"),
    ("optoe:", "missing eeprom path"),
    ("ftdi:232h", "pyftdi URLs"),
    ("emu:", "missing channel"),
    ("emu:c2m?colour=red", "unknown emulator option"),
    ("emu:c2m?seed", "key=value"),
    ("net:localhost", "net:HOST:PORT"),
    ("net:localhost:http", "not a TCP port"),
    ("net:localhost:70000", "not a TCP port"),
])
def test_parse_resource_errors(res, match):
    with pytest.raises(InputError, match=match):
        parse_resource(res)


def test_bad_emu_option_value():
    with pytest.raises(InputError, match="bad emulator option"):
        open_transport("emu:c2m-10in?seed=abc")


# ------------------------------------------------------------------ smbus2 with a fake bus
class FakeBus:
    def __init__(self, mem: bytearray | None = None, fail: list[int] | None = None) -> None:
        self.mem = mem if mem is not None else bytearray(range(256))
        self.calls: list[tuple] = []
        self.fail = list(fail or [])  # errnos to raise on the next calls

    def _maybe_fail(self) -> None:
        if self.fail:
            err = self.fail.pop(0)
            raise OSError(err, "fake bus error")

    def read_i2c_block_data(self, addr, reg, n):
        self.calls.append(("read_block", addr, reg, n))
        self._maybe_fail()
        assert n <= 32
        return list(self.mem[reg:reg + n])

    def write_i2c_block_data(self, addr, reg, data):
        self.calls.append(("write_block", addr, reg, list(data)))
        self._maybe_fail()
        self.mem[reg:reg + len(data)] = bytes(data)

    def i2c_rdwr(self, *msgs):
        self.calls.append(("rdwr", len(msgs)))
        self._maybe_fail()
        wr, rd = msgs
        reg = bytes(wr)[0]
        data = bytes(self.mem[reg:reg + rd.len])
        ctypes.memmove(rd.buf, data, len(data))

    def close(self):
        self.calls.append(("close",))


def _smbus(bus: FakeBus, **kw) -> SMBusTransport:
    return SMBusTransport(1, 0x50, bus_factory=lambda _n: bus, **kw)


def test_smbus_short_read_uses_block_read():
    bus = FakeBus()
    t = _smbus(bus)
    assert t.read(10, 8) == bytes(range(10, 18))
    assert bus.calls[-1] == ("read_block", 0x50, 10, 8)


def test_smbus_long_read_uses_i2c_rdwr():
    bus = FakeBus()
    t = _smbus(bus)
    assert t.read(128, 64) == bytes(range(128, 192))
    assert bus.calls[-1] == ("rdwr", 2)


def test_smbus_write_and_nack_message():
    bus = FakeBus()
    t = _smbus(bus)
    t.write(200, b"\x01\x02")
    assert bus.mem[200:202] == b"\x01\x02"
    bus.fail = [121]
    with pytest.raises(TransportError, match=r"i2c:1@0x50: write of 1 bytes at 5 failed .*NACK"):
        t.write(5, b"\x00")
    assert sum(1 for c in bus.calls if c[0] == "write_block") == 2  # writes are not retried


def test_smbus_read_retry_then_give_up():
    bus = FakeBus(fail=[110])
    t = _smbus(bus, retries=2)
    assert t.read(0, 2) == b"\x00\x01"  # one timeout, then success
    bus.fail = [121, 121, 121]
    with pytest.raises(TransportError, match="NACK"):
        t.read(0, 2)


def test_smbus_open_error():
    def boom(_n):
        raise FileNotFoundError(2, "No such file or directory: '/dev/i2c-9'")

    with pytest.raises(TransportError, match="cannot open I2C bus 9.*modprobe i2c-dev"):
        SMBusTransport(9, bus_factory=boom)


def test_range_check():
    t = _smbus(FakeBus())
    with pytest.raises(TransportError, match="outside the 256-byte"):
        t.read(250, 10)


# ------------------------------------------------------------------ paged registers on a fake bus
class PagedFake(Transport):
    """A minimal paged target: bytes 126/127 select the upper page."""

    resource = "fake"

    def __init__(self) -> None:
        self.lower = bytearray(128)
        self.pages: dict[tuple[int, int], bytearray] = {}
        self.log: list[tuple[str, int, int]] = []

    def _up(self):
        return self.pages.setdefault((self.lower[126], self.lower[127]), bytearray(128))

    def read(self, offset, n):
        self.log.append(("r", offset, n))
        return bytes(self.lower[o] if o < 128 else self._up()[o - 128] for o in range(offset, offset + n))

    def write(self, offset, data):
        self.log.append(("w", offset, len(data)))
        for i, b in enumerate(data):
            o = offset + i
            if o < 128:
                self.lower[o] = b
            else:
                self._up()[o - 128] = b


def test_paged_select_and_chunking():
    t = PagedFake()
    regs = PagedRegisters(t)
    regs.write(0x10, 145, bytes(range(20)))
    assert t.pages[(0, 0x10)][145 - 128:165 - 128] == bytes(range(20))
    data_writes = [e for e in t.log if e[0] == "w" and e[1] != 126]
    assert all(n <= 8 for _, _, n in data_writes) and sum(n for *_, n in data_writes) == 20
    assert t.log[0] == ("w", 126, 2)  # bank+page selected before the upper-page access
    assert regs.read(0x10, 145, 20) == bytes(range(20))
    regs.write(0x13, 200, b"\xaa", bank=1)
    assert t.pages[(1, 0x13)][200 - 128] == 0xAA


def test_read_spanning_lower_and_upper():
    t = PagedFake()
    t.lower[120:128] = bytes(8)
    t.pages[(0, 1)] = bytearray(range(128))
    regs = PagedRegisters(t)
    assert regs.read(1, 124, 8)[4:] == bytes(range(4))


def test_nibble_read_modify_write_keeps_other_lane():
    t = PagedFake()
    regs = PagedRegisters(t)
    regs.write(0x10, 162, bytes([0x21, 0x43, 0x65, 0x87]))  # lanes 1..8 = 1..8 (odd lane low nibble)
    assert regs.read_lanes(M.RX_PRE_SCS0) == {ln: ln for ln in range(1, 9)}
    regs.write_lanes(M.RX_PRE_SCS0, {3: 0xF, 8: 0})
    assert regs.read(0x10, 162, 4) == bytes([0x21, 0x4F, 0x65, 0x07])
    regs.write_lanes(M.TX_ADAPTIVE_EN_SCS0, {1: 1, 8: 1})
    assert regs.read(0x10, 153, 1) == b"\x81"
    with pytest.raises(TransportError, match="does not fit"):
        regs.write_lanes(M.RX_PRE_SCS0, {1: 16})


def test_field_layouts_cite_sources():
    for name in dir(M):
        f = getattr(M, name)
        if isinstance(f, M.Field):
            assert f.ref, f"{name} has no citation"
    assert M.DP_STATE.locate(1) == (128, 0, 0xF) and M.DP_STATE.locate(2) == (128, 4, 0xF)
    assert M.CONFIG_STATUS.locate(8) == (205, 4, 0xF)


def test_stable_read_detects_corruption():
    class Flaky(PagedFake):
        n = 0

        def read(self, offset, n):
            Flaky.n += 1
            return bytes([Flaky.n & 0xFF]) * n

    regs = PagedRegisters(Flaky())
    with pytest.raises(TransportError, match="corrupted reads"):
        regs.read_stable(0, 0, 4)


# ------------------------------------------------------------------ optoe
def test_optoe_linear_pages(tmp_path):
    path = tmp_path / "eeprom"
    image = bytearray(0x30 * 128 + 256)
    image[0] = 0x19
    image[0x11 * 128 + 202] = 0x11  # page 11h byte 202 (ConfigStatus lanes 1-2)
    image[1 * 128 + 154] = 0x77  # page 01h byte 154
    path.write_bytes(bytes(image))
    regs = PagedRegisters(open_transport(f"optoe:{path}"))
    assert regs.read(0, 0, 1) == b"\x19"
    assert regs.read(0x11, 202, 1) == b"\x11"
    assert regs.read(1, 154, 1) == b"\x77"
    regs.write(0x10, 162, b"\x55\x66")
    assert path.read_bytes()[0x10 * 128 + 162:0x10 * 128 + 164] == b"\x55\x66"
    with pytest.raises(TransportError, match="cannot select bank 1"):
        regs.read(0x10, 128, 1, bank=1)
    regs.close()


def test_optoe_short_read_and_missing_file(tmp_path):
    path = tmp_path / "eeprom"
    path.write_bytes(bytes(256))
    t = OptoeTransport(str(path))
    with pytest.raises(TransportError, match="short read"):
        t.read_page(0, 0x11, 200, 4)
    t.close()
    with pytest.raises(TransportError, match="cannot open the optoe eeprom file"):
        OptoeTransport(str(tmp_path / "nope"))


# ------------------------------------------------------------------ ftdi
@pytest.mark.skipif(importlib.util.find_spec("pyftdi") is not None, reason="pyftdi is installed")
def test_ftdi_without_pyftdi_names_the_extra():
    with pytest.raises(TransportError, match=r"pip install eqtune\[ftdi\]"):
        FtdiTransport("ftdi://ftdi:232h/1")
    with pytest.raises(TransportError, match=r"pip install eqtune\[ftdi\]"):
        open_transport("ftdi://ftdi:232h/1")


def test_ftdi_with_fake_pyftdi(monkeypatch):
    import sys
    import types

    class I2cNackError(Exception):
        pass

    mem = bytearray(range(256))

    class Port:
        def exchange(self, out, n):
            return mem[out[0]:out[0] + n]

        def write(self, data):
            if data[0] == 99:
                raise I2cNackError("nack")
            mem[data[0]:data[0] + len(data) - 1] = data[1:]

    class I2cController:
        def configure(self, url, frequency):
            self.url, self.freq = url, frequency

        def get_port(self, addr):
            assert addr == 0x50
            return Port()

        def terminate(self):
            pass

    pkg = types.ModuleType("pyftdi")
    mod = types.ModuleType("pyftdi.i2c")
    mod.I2cController, mod.I2cNackError = I2cController, I2cNackError
    monkeypatch.setitem(sys.modules, "pyftdi", pkg)
    monkeypatch.setitem(sys.modules, "pyftdi.i2c", mod)
    t = open_transport("ftdi://ftdi:232h/1")
    assert t.read(10, 40) == bytes(range(10, 50))
    t.write(200, b"\x07")
    assert mem[200] == 7
    with pytest.raises(TransportError, match="NACK"):
        t.write(99, b"\x00")
    t.close()
