"""The TCP register bridge over real loopback TCP."""

from __future__ import annotations

import socket

import pytest

from eqtune.drivers.cmis import open_module
from eqtune.drivers.netbridge import NetTransport
from eqtune.emulate.bridge import NetBridgeServer
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.errors import ModuleError, TransportError


@pytest.fixture()
def bridge():
    link = EmulatedLink("c2m-10in", seed=2, quality=surrogate_quality(16.0))
    emu = EmulatedModule(link, settle_s=0.01, clock=VirtualClock(), name="emu:c2m-10in")
    srv = NetBridgeServer(emu, "127.0.0.1", 0).start()
    yield srv
    srv.stop()


def test_round_trip_over_tcp_and_shared_state(bridge):
    assert bridge.port > 0 and bridge.resource == f"net:127.0.0.1:{bridge.port}"
    with open_module(bridge.resource) as a, open_module(bridge.resource) as b:
        assert a.identity().pn == "EMU-800G-OSFP"
        a.apply_eq({2: {"rx_pre": 5, "tx_eq": 7}})
        assert b.active_eq(2)["rx_pre"] == 5 and b.active_eq(2)["tx_eq"] == 7
        assert bridge.module.link.active_codes(2)["tx_eq"] == 7
        counts = b.module_ber([2], 0.5)  # virtual clock advanced through the bridge
        assert counts[2].bits > 0


def test_faults_through_bridge(bridge):
    with open_module(bridge.resource) as mod:
        bridge.module.inject("nack", count=10, on="read")
        with pytest.raises(TransportError, match="NACK"):
            mod.active_eq(1)
        bridge.module.clear_faults()
        bridge.module.inject("reject")
        with pytest.raises(ModuleError, match="rejected"):
            mod.apply_eq({1: {"rx_post": 3}})
        assert mod.active_eq(1)["rx_post"] != 3


def test_protocol_errors(bridge):
    with socket.create_connection(("127.0.0.1", bridge.port), timeout=2) as s:
        f = s.makefile("rwb")
        for req, want in ((b"HELLO\n", b"OK eqtune-netbridge 1"), (b"R 0 1\n", b"OK 19"),
                          (b"R 250 10\n", b"ERR BADREQ"), (b"FOO\n", b"ERR BADREQ"), (b"W 0 zz\n", b"ERR BADREQ")):
            f.write(req)
            f.flush()
            assert f.readline().startswith(want)


def test_unreachable_and_wrong_peer():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(TransportError, match="cannot connect to the register bridge"):
        NetTransport("127.0.0.1", port, timeout_s=0.5)
    # a server that answers something else
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    import threading

    def answer():
        c, _ = srv.accept()
        c.recv(100)
        c.sendall(b"*IDN? what\n")
        c.close()

    threading.Thread(target=answer, daemon=True).start()
    with pytest.raises(TransportError, match="not an eqtune register bridge|closed the connection|failed"):
        NetTransport("127.0.0.1", srv.getsockname()[1], timeout_s=1.0)
    srv.close()


def test_server_stop_then_client_error(bridge):
    t = NetTransport("127.0.0.1", bridge.port, timeout_s=0.5, retries=0)
    bridge.stop()
    with pytest.raises(TransportError):
        t.read(0, 1)
        t.read(0, 1)
    t.close()


def test_software_reset_through_the_bridge_restores_the_defaults(bridge):
    """A host in another process resets the emulated module with SoftwareReset (lower page byte 26
    bit 3, sonic CmisApi.reset_module): the applied codes are gone, the power-up codes are active."""
    with open_module(bridge.resource) as mod:
        default = mod.active_eq(2)
        mod.apply_eq({2: {"rx_pre": (default["rx_pre"] + 3) % 8}})
        assert mod.active_eq(2) != default
        mod.regs.write(0, 26, bytes([1 << 3]))
        assert mod.active_eq(2) == default and bridge.module.link.active_codes(2) == default
