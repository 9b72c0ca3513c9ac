"""The one validation layer (eqtune.config_schema) and every file format described with it.

For each format a bad value of each kind (wrong type, out of range, unknown key, missing required key,
a value outside the allowed set) must be one line naming the file and the key path, and the CLI's exit
code 2 (``EqtuneError.exit_code``)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from eqtune.config_schema import Field, Schema, check_value, validate
from eqtune.errors import ConfigError, EqtuneError, ProfileError, SessionError


def _one_line(exc: EqtuneError, *parts: str) -> str:
    msg = str(exc)
    assert "\n" not in msg and exc.exit_code == 2, msg
    for p in parts:
        assert re.search(p, msg), f"{p!r} not in {msg!r}"
    return msg


# --------------------------------------------------------------------------- the layer itself

_S = Schema((
    Field("baud_gbd", "number", unit="GBd", gt=0, le=1000, default=53.125),
    Field("lanes", "list", items=Field("lane", "integer", ge=1, le=8), min_len=1, max_len=8),
    Field("kind", "string", fold="upper", choices=("FEXT", "NEXT"), required=True),
    Field("sub", "table", schema=Schema((Field("on", "bool", default=True),)), default={}),
    Field("sn", "string", nullable=True, nonempty=True),
    Field("codes", "table", values=Field("code", "integer", ge=0, le=15)),
))


@pytest.mark.parametrize(("doc", "message"), [
    ({"kind": "fext", "baud_gbd": "fast"}, "f.toml: baud_gbd: must be a number (GBd), got 'fast'"),
    ({"kind": "fext", "baud_gbd": True}, "f.toml: baud_gbd: must be a number (GBd), got True"),
    ({"kind": "fext", "baud_gbd": float("nan")}, "f.toml: baud_gbd: must be a finite number, got nan"),
    ({"kind": "fext", "baud_gbd": 0}, "f.toml: baud_gbd: must be > 0 and <= 1000 GBd, got 0"),
    ({"kind": "fext", "lanes": [1, 9]}, "f.toml: lanes[1]: must be >= 1 and <= 8, got 9"),
    ({"kind": "fext", "lanes": [1.0]}, "f.toml: lanes[0]: must be a whole number, got 1.0"),
    ({"kind": "fext", "lanes": []}, "f.toml: lanes: empty list: give at least one value"),
    ({"kind": "fext", "lanes": 3}, "f.toml: lanes: must be a list, got 3"),
    ({"kind": "fext", "colour": 1}, "f.toml: colour: unknown key; allowed keys: baud_gbd, lanes, kind, sub, sn, codes"),
    ({"baud_gbd": 1}, "f.toml: kind: missing; add kind = a string"),
    ({"kind": "both"}, "f.toml: kind: 'both' is unknown; use one of FEXT, NEXT"),
    ({"kind": "fext", "sub": {"on": 1}}, "f.toml: sub.on: must be true or false, got 1"),
    ({"kind": "fext", "sub": []}, "f.toml: sub: must be a table, got a list"),
    ({"kind": "fext", "sn": "  "}, "f.toml: sn: must be a non-empty string"),
    ({"kind": "fext", "codes": {"rx_pre": 16}}, "f.toml: codes.rx_pre: must be >= 0 and <= 15, got 16"),
])
def test_each_kind_of_bad_value_is_one_line_naming_the_key_path(doc, message):
    with pytest.raises(ConfigError) as ei:
        validate(doc, _S, where="f.toml")
    assert _one_line(ei.value) == message


def test_values_are_coerced_and_defaults_filled():
    out = validate({"kind": "next", "lanes": [1, 2], "sn": None, "codes": {"a": 3}}, _S, where="f")
    assert out == {"baud_gbd": 53.125, "lanes": [1, 2], "kind": "NEXT", "sub": {"on": True}, "sn": None,
                   "codes": {"a": 3}}
    assert validate({"kind": "FEXT", "baud_gbd": 53}, _S, where="f")["baud_gbd"] == 53.0
    assert type(validate({"kind": "FEXT", "baud_gbd": 53}, _S, where="f")["baud_gbd"]) is float
    # a scalar stands for a one-element list only where the format says so
    assert check_value(4, Field("x", "list", scalar_ok=True, items=Field("i", "integer")), where="", path="x") == [4]


def test_error_class_and_hint():
    f = Field("margin", "number", hint="re-measure the lane")
    with pytest.raises(SessionError, match=r"^j\.jsonl: lanes\.1\.margin: must be a number, got 'x'; re-measure the lane$"):
        check_value("x", f, where="j.jsonl", path="lanes.1.margin", error=SessionError)


# --------------------------------------------------------------------------- channel TOML

_CHANNEL = """\
name = "t"
[[segments]]
type = "trace"
length_in = 2
material = "megtron6"
"""


@pytest.mark.parametrize(("edit", "pattern"), [
    (("name = \"t\"", "name = \"t\"\nbaud_gbd = \"fast\""), r"baud_gbd: must be a number \(GBd\), got 'fast'"),
    (("name = \"t\"", "name = \"t\"\ndf_mhz = 0"), r"df_mhz: must be > 0 MHz, got 0"),
    (("", '[[segments]]\ntype = "line"\ndelay = 3\n'), r"segments\[1\]\.delay: unknown key; allowed keys: type, name"),
    (("", '[[segments]]\ntype = "shunt_c"\n'), r"segments\[1\]\.c_pf: missing; give the shunt capacitance"),
    (("", '[[segments]]\ntype = "com_package"\nside = "middle"\n'), r"segments\[1\]\.side: 'middle' is unknown"),
    (("length_in = 2", "length_in = \"2in\""), r"segments\[0\]\.length_in: must be a number \(in\), got '2in'"),
    (("", '[[segments]]\ntype = "touchstone"\nfile = "x.s4p"\nlane = 0\n'), r"segments\[1\]\.lane: must be >= 1"),
])
def test_channel_toml(tmp_path, edit, pattern):
    from eqtune.channel.library import load_channel

    old, new = edit
    p = tmp_path / "bad.toml"
    p.write_text(_CHANNEL.replace(old, new, 1) if old else _CHANNEL + new)
    with pytest.raises(ConfigError) as ei:
        load_channel(p)
    _one_line(ei.value, re.escape(str(p)) + ": ", pattern)


# --------------------------------------------------------------------------- SerDes profile

@pytest.mark.parametrize(("doc", "pattern"), [
    ({"tx": {"c0_min": "half"}}, r"tx\.c0_min: must be a number, got 'half'"),
    ({"noise": {"rlm": 0}}, r"noise\.rlm: must be > 0 and <= 1, got 0"),
    ({"noise": {"sigma_rj": 0.01}}, r"noise\.sigma_rj: unknown key; allowed keys: snr_tx_db"),
    ({"tx": {"taps": {"tx_c1": {"max": 0.0}}}}, r"tx\.taps\.tx_c1\.min: missing"),
    ({"modulation": "PAM3"}, r"modulation: 'PAM3' is unknown; use one of NRZ, PAM4, PAM6"),
    ({"rx": {"dfe": {"float_groups": 2.5}}}, r"rx\.dfe\.float_groups: must be a whole number, got 2\.5"),
    ({"module": {"defaults": {"rx_pre": 99}}}, r"module\.defaults\.rx_pre: must be >= 0 and <= 15, got 99"),
    ({"tx": {"taps": {"tx_c1": [-2, 0, 0.1, 0]}}}, r"tx\.taps\.tx_c1\.min: must be >= -1 and <= 1, got -2"),
])
def test_serdes_profile(doc, pattern):
    from eqtune.serdes.profile import profile_from_dict

    with pytest.raises(ConfigError) as ei:
        profile_from_dict(doc, "host.toml")
    _one_line(ei.value, r"^host\.toml: ", pattern)


# --------------------------------------------------------------------------- study spec and [fleet]

@pytest.mark.parametrize(("text", "pattern"), [
    ('[study]\nseed = "x"\n', r"study\.seed: must be a whole number, got 'x'"),
    ("[tune]\nbudget = 2\n", r"tune\.budget: must be >= 5, got 2"),
    ('[study]\nnmae = "x"\n', r"study\.nmae: unknown key; allowed keys: name, seed"),
    ('[fleet]\nbase = "c2m-10in"\n', r"fleet\.csv: missing; give the path of the links CSV"),
    ('[tune]\nmethod = "magic"\n', r"tune\.method: 'magic' is unknown; use one of auto, grid, bayes"),
    ("[corners]\ntemperature_c = [25, 200]\n", r"corners\.temperature_c\[1\]: must be >= -60 and <= 150 C, got 200"),
])
def test_study_spec(tmp_path, text, pattern):
    from eqtune.study.spec import load_spec

    p = tmp_path / "s.toml"
    channels = "" if "[fleet]" in text else '[[channels]]\nlibrary = "c2m-4in"\n'
    p.write_text(text + channels)
    with pytest.raises(ConfigError) as ei:
        load_spec(p)
    _one_line(ei.value, "^" + re.escape(str(p)) + ": ", pattern)


# --------------------------------------------------------------------------- driver definition

_DEFINITION = """\
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


@pytest.mark.parametrize(("old", "new", "pattern"), [
    ('reference = "ACME T guide"', 'reference = "ACME T guide"\ntimeout_ms = "fast"',
     r"instrument\.timeout_ms: must be a whole number, got 'fast'"),
    ('reference = "ACME T guide"', 'reference = "ACME T guide"\ntimeout_ms = 5',
     r"instrument\.timeout_ms: must be >= 10 and <= 600000, got 5"),
    ('ref = "ACME guide 1.1"', 'ref = "ACME guide 1.1"\ngett = "x"', r"properties\.bits\.gett: unknown key"),
    ('ref = "ACME guide 1.1"\n', "", r"properties\.bits\.ref: missing; cite the vendor programming guide"),
    ('kind = "bert"', 'kind = "dmm"', r"instrument\.kind: 'dmm' is unknown; use one of bert, scope"),
    ('store = "bits" }', 'store = "bits", scale = "2" }', r"procedures\.measure_ber\[0\]\.scale: must be a number"),
])
def test_driver_definition(tmp_path, old, new, pattern):
    from eqtune.drivers.definition import load_definition

    assert old in _DEFINITION
    p = tmp_path / "t.toml"
    p.write_text(textwrap.dedent(_DEFINITION.replace(old, new, 1)))
    with pytest.raises(ConfigError) as ei:
        load_definition(p)
    _one_line(ei.value, "^driver definition " + re.escape(str(p)) + ": ", pattern)


# --------------------------------------------------------------------------- tuning profile (JSON)

def _profile_doc() -> dict:
    return {"schema": "eqtune.profile", "version": 1, "created": "2026-11-29T20:31:07+00:00", "tool": "eqtune",
            "session": None, "channel": "c2m-10in", "link": {"site": "lab"},
            "module": {"vendor": "V", "oui": "", "pn": "PN", "rev": "A", "firmware": "1", "sn": None},
            "lanes": {"1": {"rx_pre": 1, "rx_post": 3}}, "margins": {"1": {"tuned": 7.9}},
            "digest": {"algorithm": "sha256", "canonicalization": "RFC 8785", "value": "0" * 64}}


def _set(doc: dict, path: str, value) -> dict:
    *head, last = path.split(".")
    d = doc
    for k in head:
        d = d[k]
    if value is _DELETE:
        del d[last]
    else:
        d[last] = value
    return doc


_DELETE = object()


@pytest.mark.parametrize(("path", "value", "pattern"), [
    ("lanes.1.rx_pre", "3", r"lanes\.1\.rx_pre: must be a whole number, got '3'"),
    ("lanes.1.rx_pre", 16, r"lanes\.1\.rx_pre: must be >= 0 and <= 15, got 16"),
    ("module.colour", "red", r"module\.colour: unknown key; allowed keys: vendor"),
    ("tool", _DELETE, r"tool: missing"),
    ("margins.1.tuned", [1], r"margins\.1\.tuned: must be a string, a finite number or true/false"),
    ("lanes.9", {"rx_pre": 1}, r"lanes\.9: is not a lane number 1\.\.8"),
    ("signature", {"algorithm": "ed25519", "key_id": "xyz", "value": "0" * 64},
     r"signature\.key_id: 'xyz' has the wrong form; 16 hex digits"),
    ("signature", {"algorithm": "rsa", "key_id": "0" * 16, "value": "0" * 64},
     r"signature\.algorithm: 'rsa' is unknown; use one of ed25519, hmac-sha256"),
])
def test_tuning_profile(path, value, pattern):
    from eqtune.session.profile import Profile

    text = json.dumps(_set(_profile_doc(), path, value))
    with pytest.raises(ProfileError) as ei:
        Profile.loads(text, where="p.json")
    _one_line(ei.value, r"^p\.json: ", pattern, "re-save the profile from its session$")


# --------------------------------------------------------------------------- journal records

def _decision(**kw) -> dict:
    rec = {"v": 1, "seq": 4, "t": 1.0, "type": "decision", "lane": 1, "action": "keep", "codes": {"rx_pre": 1}}
    rec.update(kw)
    return {k: v for k, v in rec.items() if v is not _DELETE}


@pytest.mark.parametrize(("rec", "pattern"), [
    (_decision(lane="1"), r"lane: must be a whole number, got '1'"),
    (_decision(lane=9), r"lane: must be >= 1 and <= 8, got 9"),
    (_decision(action=_DELETE), r"action: missing"),
    (_decision(action="maybe"), r"action: 'maybe' is unknown; use one of keep, restore"),
    (_decision(codes={"rx_pre": 300}), r"codes\.rx_pre: must be >= 0 and <= 255, got 300"),
    ({"seq": 2, "type": "baseline", "lanes": {"1": {"codes": {"rx_pre": 1}, "margin": "big"}}},
     r"lanes\.1\.margin: must be a number, got 'big'"),
    ({"seq": 2, "type": "baseline", "lanes": {"9": {"codes": {"rx_pre": 1}, "margin": 1.0}}},
     r"lanes\.9: is not a lane 1\.\.8"),
])
def test_journal_records(rec, pattern):
    from eqtune.session.records import check_records

    with pytest.raises(SessionError) as ei:
        check_records([rec], "j.jsonl")
    _one_line(ei.value, r"^j\.jsonl: record seq \d+ \('\w+'\): ", pattern, "start a new session$")


def test_journal_records_allow_unknown_fields_and_types():
    from eqtune.session.records import check_records

    check_records([_decision(note="from eqtune 9"), {"seq": 5, "type": "future-thing", "x": [1]}], "j.jsonl")


# --------------------------------------------------------------------------- push report (watch targets)

@pytest.mark.parametrize(("doc", "pattern"), [
    ({"results": [{"status": "ok"}]}, r"results\[0\]\.resource: missing"),
    ({"results": "x"}, r"results: must be a list, got 'x'"),
    ([], r"must be a table, got a list"),
])
def test_push_report(tmp_path, doc, pattern):
    from eqtune.watch.targets import from_push_report

    p = tmp_path / "push.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(EqtuneError) as ei:
        from_push_report(p)
    _one_line(ei.value, "^push report " + re.escape(str(p)) + ": ", pattern, r"eqtune profile push --json")


def test_cli_prints_the_schema_error_on_one_line_with_exit_2(tmp_path):
    from click.testing import CliRunner

    from eqtune.cli import main

    p = tmp_path / "bad.toml"
    p.write_text(_CHANNEL.replace('name = "t"', 'name = "t"\nmodulation = 4'))
    r = CliRunner().invoke(main, ["eye", str(p)])
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "Traceback" not in r.output
    assert lines[0].startswith("eqtune: error: ") and "bad.toml: modulation: must be a string, got 4" in lines[0]


def test_schemas_match_the_shipped_files():
    """Every shipped channel, SerDes profile, driver definition and study spec passes its schema."""
    from eqtune.channel.library import list_channels, load_channel
    from eqtune.drivers.definition import load_definitions
    from eqtune.resources import channels_dir
    from eqtune.serdes.profile import list_profiles, load_profile
    from eqtune.study.spec import load_spec

    assert len(load_definitions()) >= 4
    assert all(load_profile(n).name == n for n in list_profiles())
    assert load_channel(list_channels()[0]).sdd21.size > 0
    assert load_spec(Path(channels_dir()) / "studies" / "example.toml").combinations
