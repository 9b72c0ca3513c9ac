"""The pyvisa-py path for real: loopback TCP against the SCPI emulator, with faults."""

from __future__ import annotations

import socket
import time

import pytest

from eqtune.drivers.definition import find_definition, load_definitions
from eqtune.drivers.instrument import open_instrument
from eqtune.drivers.measurement import BerCount
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.emulate.scpi import Faults, ScpiEmulator, _split_commands
from eqtune.errors import ConfigError, EqRangeError, InstrumentError

pytestmark = pytest.mark.timeout(60)

ALL = [d.name for d in load_definitions()]
BERTS = [d.name for d in load_definitions() if d.kind == "bert"]


def fake_quality(direction, codes, lane):
    """A fake link-quality model (injected instead of the eye engine): every step of tx_eq towards 8
    and of rx_post towards 4 gains one decade of BER."""
    if direction == "module_rx":
        ber = 10.0 ** (-3 - abs(8 - abs(8 - codes.get("tx_eq", 0))) * 0.5)
        eh = 10.0 + 4.0 * codes.get("tx_eq", 0)
    else:
        ber = 10.0 ** (-3 - (4 - abs(4 - codes.get("rx_post", 0))) * 1.0)
        eh = 10.0 + 5.0 * (4 - abs(4 - codes.get("rx_post", 0)))
    return {"ber_estimate": ber, "eye_height_mv": [eh * 0.97, eh, eh * 0.98], "eye_height_min_mv": eh * 0.97,
            "eye_width_ui": 0.3}


@pytest.fixture
def link():
    return EmulatedLink(quality=fake_quality, seed=7)


@pytest.fixture
def emulator(link):
    started = []

    def make(name, **kw):
        emu = ScpiEmulator(name, link, seed=3, **kw).start()
        started.append(emu)
        return emu

    yield make
    for e in started:
        e.stop()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("name", ALL)
def test_every_definition_round_trips_over_pyvisa(emulator, name):
    emu = emulator(name)
    assert emu.resource.startswith("TCPIP::127.0.0.1::") and emu.resource.endswith("::SOCKET")
    with open_instrument(emu.resource, timeout_ms=3000) as inst:  # IDN matching picks the definition
        assert inst.name == name
        inst.setup()
        if inst.kind == "bert":
            bc = inst.measure_ber(2, 0.02)
            assert isinstance(bc, BerCount)
            assert bc.bits > 1e8 and 0 <= bc.errors < bc.bits
        else:
            eye = inst.measure_eye(2)
            assert len(eye["eye_height_mv"]) == 3 and all(x > 0 for x in eye["eye_height_mv"])
            assert eye["eye_width_ui"] == pytest.approx(0.3, rel=0.05)  # :MEASure:PAM:EYE:TIME:UNITs UINTerval
    # the emulator saw exactly what the definition says, and nothing it did not understand
    assert not any("Undefined" in e for e in emu._errors)


def test_settable_state_and_validation_in_the_emulator(emulator):
    emu = emulator("keysight-m8040a")
    with open_instrument(emu.resource, "keysight-m8040a", timeout_ms=2000) as inst:
        inst.set("symbol_rate", 26.5625e9)
        assert inst.get("symbol_rate") == pytest.approx(26.5625e9)
        inst.set("pattern", "2^15-1")
        assert inst.get("pattern") == "2^15-1"
        with pytest.raises(EqRangeError):  # refused before I/O by the runtime
            inst.set("symbol_rate", 1e12)
        inst.transport.write(":SOURce:FREQuency 'M1.ClkGen',1e12")  # bypassing the runtime validator
        inst.transport.write(":BOGus:COMMand 1")
        with pytest.raises(InstrumentError, match=r"2 error\(s\).*-222.*-113"):
            inst.check_errors()
        inst.check_errors()  # the queue is drained


def test_unreachable_resource_fails_fast():
    res = f"TCPIP::127.0.0.1::{_closed_port()}::SOCKET"
    t0 = time.monotonic()
    with pytest.raises(InstrumentError) as ei:
        open_instrument(res, timeout_ms=500, open_timeout_ms=500)
    assert time.monotonic() - t0 < 3.0
    msg = str(ei.value)
    assert res in msg and "refused" in msg and "check" in msg


def test_refused_connection_fault(emulator):
    emu = emulator("generic-scpi-bert", faults=Faults(refuse=True))
    with pytest.raises(InstrumentError, match=emu.resource.replace("::", "::")):
        open_instrument(emu.resource, timeout_ms=400, open_timeout_ms=400)


def test_unexpected_idn(emulator):
    emu = emulator("keysight-m8040a")
    emu.faults.idn = "Tektronix,DSA8300,B0123,6.4"
    with pytest.raises(InstrumentError, match="identifies as 'Tektronix,DSA8300.*matches no definition"):
        open_instrument(emu.resource, timeout_ms=1000)
    with pytest.raises(InstrumentError, match="not as Keysight M8040A"):
        open_instrument(emu.resource, "keysight-m8040a", timeout_ms=1000)


def test_non_empty_error_queue_after_setup(emulator):
    emu = emulator("anritsu-mp1900a")
    with open_instrument(emu.resource, timeout_ms=2000) as inst:
        assert inst.get("unit") == 1  # a round trip: the *CLS sent on open has been processed
        emu.push_error('-241,"Hardware missing"')
        with pytest.raises(InstrumentError) as ei:
            inst.setup()
    msg = str(ei.value)
    assert emu.resource in msg and "-241" in msg and "Hardware missing" in msg and "after setup" in msg


def test_disconnect_mid_measurement(emulator):
    emu = emulator("keysight-m8040a")
    with open_instrument(emu.resource, timeout_ms=600) as inst:
        emu.faults.disconnect_match = r"FETCh:BCO"
        t0 = time.monotonic()
        with pytest.raises(InstrumentError) as ei:
            inst.measure_ber(1, 0.01)
        assert time.monotonic() - t0 < 5.0
    msg = str(ei.value)
    assert emu.resource in msg and ":FETCh:BCO?" in msg and "closed the connection" in msg


def test_slow_reply_beyond_timeout(emulator):
    emu = emulator("generic-scpi-bert")
    with open_instrument(emu.resource, timeout_ms=300) as inst:
        # The reply would come after 120 s (longer than the test's own timeout): raising at all shows the
        # 0.3 s timeout fired, on any machine load. (The delayed reply is released when the emulator stops.)
        emu.faults.delay_s = 120.0
        emu.faults.delay_match = "ERR"
        with pytest.raises(InstrumentError, match=r"did not answer within 0.3 s.*:SYSTem:ERRor\?"):
            inst.check_errors()
        # the error query pops the queue: never retried
        assert sum(1 for c in emu.log if c == ":SYSTem:ERRor?") == 1


def test_safe_query_is_retried_once_after_a_timeout(emulator):
    emu = emulator("generic-scpi-bert")
    with open_instrument(emu.resource, timeout_ms=300) as inst:
        inst.set("data_rate", 53.125)
        # The first reply is lost (never sent), so the retry is the only way to an answer: no timing window.
        emu.faults.lose_match, emu.faults.lose_count = "RATE", 1
        assert inst.get("data_rate") == pytest.approx(53.125)
        assert sum(1 for c in emu.log if c == ":SOURce:DATA:RATE?") == 2


def test_ber_follows_the_codes_in_the_link(emulator, link):
    emu = emulator("keysight-m8040a")
    with open_instrument(emu.resource, timeout_ms=3000) as inst:
        link.set_codes(1, {"tx_eq": 0, "rx_post": 0})  # the fake model's worst codes
        bad = inst.measure_ber(1, 0.02)
        link.set_codes(1, {"tx_eq": 8, "rx_post": 4})  # its best codes
        good = inst.measure_ber(1, 0.02)
    assert bad.errors > 1000
    assert good.ber < bad.ber / 100
    assert good.ber_upper95 < bad.ber


def test_ber_ranking_of_the_surrogate_model_is_what_the_bert_reads(emulator):
    link = EmulatedLink(quality=surrogate_quality(18.0), seed=11)
    emu = ScpiEmulator("anritsu-mp1900a", link, seed=1).start()
    try:
        candidates = [{"tx_eq": t, "rx_post": p, "rx_pre": 1, "rx_amp": 2} for t in (0, 5, 10) for p in (0, 3, 6)]
        ranked = sorted(candidates, key=lambda c: link.ber(4, "loopback", c))
        readings = {}
        with open_instrument(emu.resource, timeout_ms=3000) as inst:
            for label, codes in (("best", ranked[0]), ("worst", ranked[-1])):
                link.set_codes(4, codes)
                readings[label] = inst.measure_ber(4, 0.03)
        assert readings["best"].ber < readings["worst"].ber
    finally:
        emu.stop()


def test_scope_eye_follows_codes_with_small_noise(emulator, link):
    emu = emulator("keysight-flexdca")
    with open_instrument(emu.resource, timeout_ms=3000) as inst:
        link.set_codes(3, {"rx_post": 0})
        low = inst.measure_eye(3)
        link.set_codes(3, {"rx_post": 4})
        high = [inst.measure_eye(3)["eye_height_min_mv"] for _ in range(3)]
    assert min(high) > low["eye_height_min_mv"] + 10
    assert max(high) - min(high) < 3.0  # measurement noise is small


def test_multiple_commands_per_line_and_opc(emulator):
    emu = emulator("keysight-flexdca")
    with open_instrument(emu.resource, timeout_ms=2000) as inst:
        assert inst.transport.query(":SYSTem:MODE EYE;*OPC?") == "1"
        assert inst.get("mode") == "EYE"
    assert _split_commands(":A 'x;y';:B") == [":A 'x;y'", ":B"]


def test_emulator_checks_its_own_idn_and_port_in_use(link):
    d = find_definition("generic-scpi-bert")
    bad = type(d)(**{**d.__dict__, "emulator": {"idn": "NOPE,1,2,3"}})
    with pytest.raises(ConfigError, match="does not match idn_match"):
        ScpiEmulator(bad, link)
    with ScpiEmulator("generic-scpi-bert", link) as a:
        with pytest.raises(Exception, match="choose another port"):
            ScpiEmulator("generic-scpi-bert", link, port=a.port).start()
