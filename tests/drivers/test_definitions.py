"""Every shipped instrument definition loads and validates; bad definitions fail naming file and key."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from eqtune.drivers.definition import (
    BER_OUTPUTS,
    find_definition,
    load_definition,
    load_definitions,
    match_idn,
)
from eqtune.errors import ConfigError, EqRangeError
from eqtune.resources import drivers_dir

SHIPPED = sorted(p.name for p in drivers_dir().glob("*.toml"))
REQUIRED = {"keysight-m8040a", "anritsu-mp1900a", "keysight-flexdca", "generic-scpi-bert"}


def test_required_instruments_are_shipped():
    names = {d.name for d in load_definitions()}
    assert REQUIRED <= names


@pytest.mark.parametrize("fname", SHIPPED)
def test_shipped_definition_loads_and_validates(fname):
    d = load_definition(drivers_dir() / fname)
    assert d.kind in ("bert", "scope")
    assert d.reference.strip()
    # every SCPI property cites the vendor guide, and every settable one has a validator
    for p in d.properties.values():
        assert p.ref.strip(), f"{fname}: {p.name} has no reference"
        if p.set and p.type != "bool":
            assert p.validator.describe() != "any value", f"{fname}: {p.name} settable without validator"
    # the emulated IDN of each definition is recognised by its own idn_match, and only by it
    idn = d.emulator.get("idn")
    assert idn and d.matches(idn)
    others = [o for o in load_definitions() if o.name != d.name]
    assert match_idn(idn, others) is None, f"{fname}: emulated IDN also matches another definition"
    # each TOML comment block cites its source document
    text = (drivers_dir() / fname).read_text()
    assert re.search(r"(?i)programming guide|remote control|SCPI-1999", text)


@pytest.mark.parametrize("fname", SHIPPED)
def test_measurement_procedures_store_required_outputs(fname):
    d = load_definition(drivers_dir() / fname)
    if d.kind == "bert":
        stores = {s.store for s in d.procedures["measure_ber"]}
        assert set(BER_OUTPUTS) <= stores
    else:
        stores = {s.store for s in d.procedures["measure_eye"]}
        assert "eye_height_mv" in stores


def test_real_idns_match_the_right_definition():
    defs = load_definitions()
    cases = {
        "Keysight Technologies,M8070B,MY12345678,8.0.300.12": "keysight-m8040a",
        "ANRITSU,MP1900A,6201234567,5.00.00": "anritsu-mp1900a",
        "Keysight Technologies,N1000A,MY55000001,A.07.20": "keysight-flexdca",
        "Agilent Technologies,86100D,MY5300000,A.05.00": "keysight-flexdca",
        "ACME,BERT-400,1,1.0": "generic-scpi-bert",
    }
    for idn, name in cases.items():
        m = match_idn(idn, defs)
        assert m is not None and m.name == name, idn
    assert match_idn("Rohde&Schwarz,RTP164,1,1", defs) is None


def test_find_definition_by_name_and_unknown():
    assert find_definition("keysight-flexdca").kind == "scope"
    with pytest.raises(ConfigError, match="no instrument definition named 'nope'.*keysight-m8040a"):
        find_definition("nope")


def test_property_validators():
    d = find_definition("keysight-m8040a")
    rate = d.prop("symbol_rate")
    assert rate.check("53.125e9") == 53.125e9
    with pytest.raises(EqRangeError, match=r"symbol_rate.*out of range.*\[2000000000.0, 64000000000.0\]"):
        rate.check(80e9)
    pat = d.prop("pattern")
    assert pat.check("2^31-1") == "2^31-1"
    with pytest.raises(EqRangeError, match=r"pattern.*not allowed.*2\^31-1"):
        pat.check("PRBS31Q")
    src = find_definition("keysight-flexdca").prop("eh_source")
    assert src.check("CHAN2B") == "CHAN2B"
    with pytest.raises(EqRangeError, match="does not match"):
        src.check("CHAN9Z; *RST")
    with pytest.raises(EqRangeError, match="not a valid int"):
        find_definition("anritsu-mp1900a").prop("unit").check("two")


GOOD = """
[instrument]
name = "t-bert"
title = "Test BERT"
vendor = "ACME"
kind = "bert"
idn_match = '^ACME,T'
reference = "ACME T guide"

[properties.bits]
get = ":FETC:BITS? {lane}"
type = "int"
ref = "ACME guide 1.1"

[properties.errs]
get = ":FETC:ERR? {lane}"
type = "int"
ref = "ACME guide 1.2"

[procedures]
measure_ber = [ { query = "bits", store = "bits" }, { query = "errs", store = "errors" } ]
"""


def _write(tmp_path: Path, text: str, name: str = "t.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_minimal_definition_loads(tmp_path):
    d = load_definition(_write(tmp_path, GOOD))
    assert d.name == "t-bert" and d.error_query == ":SYST:ERR?"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("kind = \"bert\"", "kind = \"dmm\""), r"instrument\.kind: 'dmm' is unknown; use one of bert, scope"),
        (("idn_match = '^ACME,T'", "idn_match = '^(ACME'"), r"instrument\.idn_match: does not compile"),
        (("ref = \"ACME guide 1.1\"", "ref = \"\""), r"properties\.bits\.ref: must be a non-empty string; cite the vendor programming guide"),
        ((":FETC:BITS? {lane}", ":FETC:BITS? {__class__}"), r"properties\.bits\.get: uses unknown placeholder"),
        ((":FETC:BITS? {lane}", ":FETC:BITS? {lane.real}"), r"properties\.bits\.get: .*not a plain name"),
        (("type = \"int\"\nref = \"ACME guide 1.1\"", "type = \"complex\"\nref = \"ACME guide 1.1\""),
         r"properties\.bits\.type: 'complex' is unknown"),
        (("store = \"errors\"", "store = \"errs\""), r"procedures\.measure_ber: must store \['errors'\]"),
        (("query = \"errs\"", "query = \"nothing\""), r"procedures\.measure_ber\[1\]\.query: no property 'nothing'"),
        (("[procedures]", "[procedurez]"), r"procedurez: unknown key; allowed keys: instrument, errors"),
        (("type = \"int\"\nref = \"ACME guide 1.1\"", "type = \"int\"\nrange = [5, 1]\nref = \"ACME guide 1.1\""),
         r"properties\.bits\.range: must be \[low, high\]"),
    ],
)
def test_bad_definitions_name_file_and_key(tmp_path, change, message):
    old, new = change
    assert old in GOOD
    p = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError, match=message) as ei:
        load_definition(p)
    assert str(p) in str(ei.value)


def test_settable_property_needs_validator_and_value(tmp_path):
    text = GOOD + '\n[properties.rate]\nset = ":RATE {value}"\ntype = "float"\nref = "x"\n'
    with pytest.raises(ConfigError, match=r"properties\.rate: a settable property needs a validator"):
        load_definition(_write(tmp_path, text))
    text = GOOD + '\n[properties.rate]\nset = ":RATE"\ntype = "float"\nrange = [0, 1]\nref = "x"\n'
    with pytest.raises(ConfigError, match=r"properties\.rate\.set: must contain \{value\}"):
        load_definition(_write(tmp_path, text))


def test_not_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_definition(_write(tmp_path, "[instrument\nname="))
    with pytest.raises(ConfigError, match="not found"):
        load_definition(tmp_path / "missing.toml")


def test_duplicate_names_in_a_folder(tmp_path):
    _write(tmp_path, GOOD, "a.toml")
    _write(tmp_path, GOOD, "b.toml")
    with pytest.raises(ConfigError, match="defined twice"):
        load_definitions(tmp_path)


def test_adding_an_instrument_is_adding_a_file(tmp_path):
    _write(tmp_path, GOOD, "acme.toml")
    defs = load_definitions(tmp_path)
    assert [d.name for d in defs] == ["t-bert"]
    assert match_idn("ACME,T100,1,1", defs).name == "t-bert"


def test_queries_are_retried_only_when_declared_safe(tmp_path):
    d = load_definition(_write(tmp_path, GOOD))
    assert d.prop("bits").retry is False  # default: never repeat a query
    assert find_definition("keysight-m8040a").prop("bit_counters").retry is True  # a pure FETCh
