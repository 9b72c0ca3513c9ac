"""Multi-channel BERT definitions: the shipped units declare their error-detector channels, a live session
groups that many lanes per dwell, and ``measure_ber_lanes`` opens every lane's gate before ONE dwell wait."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqtune.drivers.definition import find_definition, load_definition
from eqtune.drivers.instrument import Instrument, ReplayTransport
from eqtune.errors import ConfigError, InputError
from eqtune.tune.live import instrument_channels, lane_groups

NOERR = '0,"No error"'


def _inst(name: str, pairs) -> tuple[Instrument, ReplayTransport, list[float]]:
    t = ReplayTransport(pairs)
    slept: list[float] = []
    inst = Instrument(find_definition(name), t, sleep=slept.append)
    inst._setup_done = True  # the setup procedure is covered by test_instrument_replay
    return inst, t, slept


@pytest.mark.parametrize("name", ["keysight-m8040a", "anritsu-mp1900a"])
def test_shipped_berts_declare_channels_and_group_lanes(name):
    d = find_definition(name)
    assert d.channels == len(d.lane_map) == 8  # every addressed error-detector input
    assert d.channels_ref  # where the count comes from (and what is unverified)
    inst = Instrument(d, ReplayTransport([]))
    assert instrument_channels(inst) == 8
    assert lane_groups(range(1, 9), inst) == [list(range(1, 9))]  # one dwell per evaluation of a module
    assert lane_groups(range(1, 9), inst, parallel=False) == [[ln] for ln in range(1, 9)]


def test_generic_bert_stays_one_channel():
    inst = Instrument(find_definition("generic-scpi-bert"), ReplayTransport([]))
    assert inst.channels == 1 and instrument_channels(inst) == 1
    assert lane_groups([1, 2, 3], inst) == [[1], [2], [3]]


def test_m8040a_gates_lanes_together_one_wait():
    inst, t, slept = _inst("keysight-m8040a", [
        (":SENSe:GATE:STATe 'M2.DataIn1',OFF", None),
        (":SENSe:GATE:STATe 'M2.DataIn1',ON", None),
        (":SENSe:GATE:STATe 'M3.DataIn1',OFF", None),
        (":SENSe:GATE:STATe 'M3.DataIn1',ON", None),
        (":SENSe:GATE:STATe 'M2.DataIn1',OFF", None),
        (":FETCh:BCO? 'M2.DataIn1'", '(1.0,"M2.DataIn1",5e11,5e11,3,4)'),
        (":SYSTem:ERRor?", NOERR),
        (":SENSe:GATE:STATe 'M3.DataIn1',OFF", None),
        (":FETCh:BCO? 'M3.DataIn1'", '(1.0,"M3.DataIn1",4e11,4e11,0,0)'),
        (":SYSTem:ERRor?", NOERR),
    ])
    got = inst.measure_ber_lanes([1, 3], 9.5)
    assert t.done and slept == [9.5]  # one dwell for both lanes
    assert (got[1].bits, got[1].errors) == (10**12, 7)
    assert (got[3].bits, got[3].errors) == (8 * 10**11, 0)


def test_mp1900a_reselects_each_slot_after_the_dwell():
    sel = [(":UENTry:ID 1", None), (":MODule:ID {}", None), (":INTerface:ID 1", None)]

    def select(slot: int):
        return [(c.format(slot), r) for c, r in sel]

    inst, t, slept = _inst("anritsu-mp1900a", [
        *select(1), (":SENSe:MEASure:STARt", None),
        *select(2), (":SENSe:MEASure:STARt", None),
        *select(1), (":SENSe:MEASure:STOP", None),
        (':CALCulate:DATA:EALarm? "CURRent:CC:TOTal"', "1000"), (':CALCulate:DATA:EALarm? "CURRent:EC:TOTal"', "1"),
        (":SYSTem:ERRor?", NOERR),
        *select(2), (":SENSe:MEASure:STOP", None),
        (':CALCulate:DATA:EALarm? "CURRent:CC:TOTal"', "2000"), (':CALCulate:DATA:EALarm? "CURRent:EC:TOTal"', "0"),
        (":SYSTem:ERRor?", NOERR),
    ])
    got = inst.measure_ber_lanes([1, 2], 2.0)
    assert t.done and slept == [2.0]
    assert (got[1].bits, got[1].errors, got[2].bits, got[2].errors) == (1000, 1, 2000, 0)


def test_measure_ber_lanes_refuses_before_any_io():
    inst, t, _ = _inst("keysight-m8040a", [])  # any I/O would fail the replay
    with pytest.raises(InputError, match="gates 8 channel"):
        inst.measure_ber_lanes(list(range(1, 10)), 1.0)
    with pytest.raises(InputError, match="do not fit"):
        inst.measure_ber_lanes([1, 1], 1.0)
    with pytest.raises(InputError, match="dwell"):
        inst.measure_ber_lanes([1, 2], 0.0)


def _definition(tmp_path: Path, instrument_extra: str, waits: int = 1) -> Path:
    wait_steps = "\n".join('  { wait = "dwell_s" },' for _ in range(waits))
    p = tmp_path / "x.toml"
    p.write_text(f'''
[instrument]
name = "x-bert"
title = "X"
vendor = "X"
kind = "bert"
idn_match = "X"
reference = "X guide"
{instrument_extra}

[properties.bits]
get = ":BITS?"
type = "int"
ref = "X guide"

[properties.errors]
get = ":ERR?"
type = "int"
ref = "X guide"

[procedures]
measure_ber = [
{wait_steps}
  {{ query = "bits", store = "bits" }},
  {{ query = "errors", store = "errors" }},
]
''')
    return p


def test_definition_channels_rules(tmp_path):
    assert load_definition(_definition(tmp_path, 'channels = 4\nchannels_ref = "data sheet"')).channels == 4
    with pytest.raises(ConfigError, match="channels_ref"):
        load_definition(_definition(tmp_path, "channels = 4"))
    with pytest.raises(ConfigError, match="exactly one"):
        load_definition(_definition(tmp_path, 'channels = 2\nchannels_ref = "ds"', waits=2))
    with pytest.raises(ConfigError, match="only lanes"):
        load_definition(_definition(tmp_path, 'channels = 9\nchannels_ref = "ds"\nlanes = [1, 8]'))
