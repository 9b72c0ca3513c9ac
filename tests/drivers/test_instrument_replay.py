"""Each driver tested by replaying command/response pairs through a fake transport (PyMeasure style)."""

from __future__ import annotations

import math

import pytest

from eqtune.drivers.definition import find_definition
from eqtune.drivers.instrument import Instrument, ReplayTransport, open_instrument
from eqtune.drivers.measurement import BerCount
from eqtune.errors import EqRangeError, InputError, InstrumentError

NOERR = '0,"No error"'


def _inst(name: str, pairs) -> tuple[Instrument, ReplayTransport]:
    t = ReplayTransport(pairs)
    slept: list[float] = []
    inst = Instrument(find_definition(name), t, sleep=slept.append)
    inst.slept = slept  # type: ignore[attr-defined]
    return inst, t


def test_m8040a_setup_and_ber():
    inst, t = _inst("keysight-m8040a", [
        (":SOURce:FREQuency 'M1.ClkGen',53125000000", None),
        # after a rate change wait until the channel runs again (public Keysight M8070B example script)
        (":STATus:INSTrument:RUN:WAIT? 'M1.DataOut1'", "1"),
        # generator AND analyzer patterns, short-hand form of the same script
        (':DATA:SEQuence:SET "Generator",PRBS,"2^31-1"', None),
        (':DATA:SEQuence:SET "Analyzer",PRBS,"2^31-1"', None),
        (":SYSTem:ERRor?", NOERR),
        (":SENSe:GATE:STATe 'M3.DataIn1',OFF", None),
        (":SENSe:GATE:STATe 'M3.DataIn1',ON", None),
        (":SENSe:GATE:STATe 'M3.DataIn1',OFF", None),
        (":FETCh:BCO? 'M3.DataIn1'", '(1.366014336e9,"M3.DataIn1",1.2222e10,1.112345e10,5.1e1,7.2e2)'),
        (":SYSTem:ERRor?", NOERR),
    ])
    inst.setup()
    bc = inst.measure_ber(3, 0.25)
    assert t.done
    assert inst.slept == [0.25]
    assert isinstance(bc, BerCount)
    assert bc.bits == 12222000000 + 11123450000 and bc.errors == 51 + 720 and bc.dwell_s == 0.25
    assert bc.ber == pytest.approx(771 / 23345450000)
    assert bc.ber_upper95 > bc.ber


def test_mp1900a_ber_selects_module_per_lane_not_unit():
    inst, t = _inst("anritsu-mp1900a", [
        (":SENSe:PATTern:TYPE PRBS", None),
        (":SENSe:PATTern:PRBS:LENGth 31", None),
        (":SYSTem:ERRor?", NOERR),
        # :UENTry:ID is the mainframe unit (1), the lane is the module slot (public MP1800A/MP1900A scripts)
        (":UENTry:ID 1", None),
        (":MODule:ID 2", None),
        (":INTerface:ID 1", None),
        (":SENSe:MEASure:STARt", None),
        # after the dwell the lane's slot is selected again before stop and read (another lane's gate
        # may have been started in between: measure_ber_lanes)
        (":UENTry:ID 1", None),
        (":MODule:ID 2", None),
        (":INTerface:ID 1", None),
        (":SENSe:MEASure:STOP", None),
        (':CALCulate:DATA:EALarm? "CURRent:CC:TOTal"', "1062500000000"),
        (':CALCulate:DATA:EALarm? "CURRent:EC:TOTal"', "0"),
        (":SYSTem:ERRor?", NOERR),
    ])
    inst.setup()
    bc = inst.measure_ber(2, 10.0)
    assert t.done
    assert (bc.bits, bc.errors) == (1062500000000, 0)
    assert bc.ber_upper95 == pytest.approx(2.9957 / 1.0625e12, rel=1e-3)  # zero errors: ~3 / bits


def test_generic_bert_ber_runs_setup_once_on_first_measurement():
    inst, t = _inst("generic-scpi-bert", [
        (":SOURce:DATA:RATE 106.25", None), (":SOURce:PATTern PRBS31Q", None), (":SENSe:PATTern PRBS31Q", None),
        (":SYSTem:ERRor?", NOERR),
        (":SENSe5:COUNter:RESet", None),
        (":SENSe5:GATE:STATe ON", None),
        (":SENSe5:GATE:STATe OFF", None),
        (":FETCh5:BITS?", "+1.0625E+10"),
        (":FETCh5:ERRors?", "12"),
        (":SYSTem:ERRor?", '+0,"No error"'),
    ])
    bc = inst.measure_ber(5, 0.1)
    assert t.done and (bc.bits, bc.errors) == (10625000000, 12)
    t.pairs += [(":SENSe5:COUNter:RESet", None), (":SENSe5:GATE:STATe ON", None), (":SENSe5:GATE:STATe OFF", None),
                (":FETCh5:BITS?", "100"), (":FETCh5:ERRors?", "0"), (":SYSTem:ERRor?", NOERR)]
    assert inst.measure_ber(5, 0.1).bits == 100  # no second setup
    assert t.done


def test_flexdca_eye_sequence():
    pairs = [(":SYSTem:MODE EYE", None), (":MEASure:PAM:AMPLitude:UNITs VOLT", None),
             (":MEASure:PAM:EYE:TIME:UNITs UINTerval", None),
             (":MEASure:EYE:PAM:EHEight:DEFine:EOPening PROBability", None),
             (":MEASure:EYE:PAM:EHEight:DEFine:EOPening:PROBability 0.001", None),
             (":SYSTem:ERRor:NEXT?", NOERR),
             (":ACQuire:CDISplay", None), (":MEASure:EYE:PAM:EHEight:SOURce CHAN2A", None)]
    for i, v in enumerate(("4.1E-2", "4.4E-2", "4.0E-2")):
        pairs += [(f":MEASure:EYE:PAM:EHEight:EYE EYE{i}", None), (":MEASure:EYE:PAM:EHEight", None),
                  (":MEASure:EYE:PAM:EHEight?", v)]
    pairs += [(":MEASure:EYE:PAM:EWIDth:SOURce CHAN2A", None), (":MEASure:EYE:PAM:EWIDth:EYE EYE1", None),
              (":MEASure:EYE:PAM:EWIDth", None), (":MEASure:EYE:PAM:EWIDth?", "2.9E-1"),  # UI
              (":SYSTem:ERRor:NEXT?", NOERR)]  # no TDECQ: an optical metric, not on the electrical output
    inst, t = _inst("keysight-flexdca", pairs)
    inst.setup()
    eye = inst.measure_eye(3, 1.0)
    assert t.done
    assert eye["eye_height_mv"] == pytest.approx([41.0, 44.0, 40.0])
    assert eye["eye_height_min_mv"] == pytest.approx(40.0)
    assert eye["eye_width_ui"] == pytest.approx(0.29)
    assert eye.get("tdecq_db") is None


def test_get_set_properties_and_parsing():
    inst, t = _inst("keysight-m8040a", [
        (":SOURce:FREQuency? 'M1.ClkGen'", "+5.3125000000E+10"),
        (":SOURce:FREQuency 'M1.ClkGen',26562500000", None),
        (":SENSe:GATE:STATe? 'M2.DataIn2'", "1"),
        (":FETCh:IBERate? 'M2.DataIn1'", '(1.7e9,"M2.DataIn1",2.5e-7)'),
    ])
    assert inst.get("symbol_rate") == 53.125e9
    inst.set("symbol_rate", 26.5625e9)
    assert inst.get("gate", lane=2) is True
    assert inst.get("ber", lane=1) == {"timestamp": 1.7e9, "location": "M2.DataIn1", "ber": 2.5e-7}
    assert t.done


def test_validators_run_before_any_io():
    inst, t = _inst("keysight-m8040a", [])  # any I/O would fail the replay
    with pytest.raises(EqRangeError, match="symbol_rate.*out of range"):
        inst.set("symbol_rate", 100e9)
    with pytest.raises(EqRangeError, match="pattern.*not allowed"):
        inst.setup(pattern="PRBS5")
    with pytest.raises(EqRangeError, match="lane 9 is out of range.*1..8"):
        inst.measure_ber(9, 1.0)
    with pytest.raises(InputError, match="dwell"):
        inst.measure_ber(1, -1.0)
    with pytest.raises(InputError, match="not a scope"):
        inst.measure_eye(1)
    assert t.log == []


def test_error_queue_after_setup_is_reported_with_every_entry():
    inst, _ = _inst("keysight-m8040a", [
        (":SOURce:FREQuency 'M1.ClkGen',53125000000", None),
        # after a rate change wait until the channel runs again (public Keysight M8070B example script)
        (":STATus:INSTrument:RUN:WAIT? 'M1.DataOut1'", "1"),
        # generator AND analyzer patterns, short-hand form of the same script
        (':DATA:SEQuence:SET "Generator",PRBS,"2^31-1"', None),
        (':DATA:SEQuence:SET "Analyzer",PRBS,"2^31-1"', None),
        (":SYSTem:ERRor?", '-222,"Data out of range"'),
        (":SYSTem:ERRor?", '-113,"Undefined header"'),
        (":SYSTem:ERRor?", NOERR),
    ])
    with pytest.raises(InstrumentError) as ei:
        inst.setup()
    msg = str(ei.value)
    assert "REPLAY::0" in msg and "2 error(s) after setup" in msg
    assert "-222" in msg and "-113" in msg and "check" in msg


def test_garbage_reply_and_inconsistent_counters():
    inst, _ = _inst("generic-scpi-bert", [(":FETCh1:BITS?", "hello")])
    with pytest.raises(InstrumentError, match="cannot read.*'hello' as int"):
        inst.get("bits", lane=1)
    inst, _ = _inst("generic-scpi-bert", [
        (":SOURce:DATA:RATE 106.25", None), (":SOURce:PATTern PRBS31Q", None), (":SENSe:PATTern PRBS31Q", None),
        (":SYSTem:ERRor?", NOERR),
        (":SENSe1:COUNter:RESet", None), (":SENSe1:GATE:STATe ON", None), (":SENSe1:GATE:STATe OFF", None),
        (":FETCh1:BITS?", "0"), (":FETCh1:ERRors?", "0"), (":SYSTem:ERRor?", NOERR)])
    with pytest.raises(InstrumentError, match="counted no bits.*synchronized"):
        inst.measure_ber(1, 0.1)


def test_open_instrument_identifies_and_rejects_unexpected_idn():
    t = ReplayTransport([("*IDN?", "ANRITSU,MP1900A,1,1"), ("*CLS", None)], resource="TCPIP::x::5025::SOCKET")
    inst = open_instrument("TCPIP::x::5025::SOCKET", transport=t)
    assert inst.name == "anritsu-mp1900a" and inst.idn.startswith("ANRITSU")
    t = ReplayTransport([("*IDN?", "ANRITSU,MP1900A,1,1")], resource="R1")
    with pytest.raises(InstrumentError, match=r"R1 identifies as 'ANRITSU,MP1900A,1,1', not as Keysight M8040A"):
        open_instrument("R1", "keysight-m8040a", transport=t)
    assert t.closed
    t = ReplayTransport([("*IDN?", "Tektronix,DPO70000,1,1")], resource="R2")
    with pytest.raises(InstrumentError, match="matches no definition"):
        open_instrument("R2", transport=t)


def test_scpi_nan_float_is_nan():
    inst, _ = _inst("keysight-flexdca", [(":MEASure:EYE:PAM:EHEight?", "9.91E37")])
    assert math.isnan(inst.get("eye_height"))


def test_unverified_commands_are_listed():
    from click.testing import CliRunner

    from eqtune.cli import main

    assert set(find_definition("keysight-m8040a").unverified()) >= {"gate", "bit_counters"}
    assert "run_wait" not in find_definition("keysight-m8040a").unverified()
    res = CliRunner().invoke(main, ["drivers", "list", "--json"])
    rows = {r["name"]: r for r in __import__("json").loads(res.output)["definitions"]}
    assert "interface" in rows["anritsu-mp1900a"]["unverified"] and rows["generic-scpi-bert"]["unverified"] == {}
    text = CliRunner().invoke(main, ["drivers", "list"]).output
    assert "keysight-flexdca" in text and "UNVERIFIED: amplitude_units" in text
