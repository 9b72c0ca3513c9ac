"""Bad input: the right eqtune error, naming the file (and line) and what to fix; CLI: one line, exit 2."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqtune.channel import load_channel
from eqtune.channel.touchstone import load_sdd
from eqtune.cli import main
from eqtune.errors import ConfigError, EqtuneError, TouchstoneError

GOOD_S2P = "# GHz S RI R 50\n1 0.1 0 0.9 0 0.9 0 0.1 0\n2 0.1 0 0.8 0 0.8 0 0.1 0\n3 0.1 0 0.7 0 0.7 0 0.1 0\n"

BAD_TOUCHSTONE = {
    "truncated.s2p": (GOOD_S2P[:-12], r"truncated\.s2p:4: ends in the middle of a frequency record"),
    "nonnumeric.s2p": (GOOD_S2P.replace("0.8 0 0.8", "0.8 x 0.8"), r"nonnumeric\.s2p:3: 'x' is not a number"),
    "wrongcount.s4p": (GOOD_S2P, r"wrongcount\.s4p:\d: .*not a 4-port file"),
    "nonmono.s2p": (GOOD_S2P.replace("\n3 0.1", "\n1.5 0.1"), r"nonmono\.s2p:4: frequency 1\.5 does not increase"),
    "three.s3p": ("# GHz S RI R 50\n" + "1 " + "0.1 0 " * 9 + "\n2 " + "0.1 0 " * 9 + "\n",
                  r"three\.s3p: a 3-port file cannot be a differential channel"),
    "nooption.s2p": (GOOD_S2P.split("\n", 1)[1].replace("1 0.1", "1 a", 1), r"nooption\.s2p"),
    "empty.s2p": ("", r"empty\.s2p"),
    "name.txt": (GOOD_S2P, r"name\.txt: not a Touchstone file: the name is not .sNp"),
    # dB values under an MA option line: |S21| = 20 (26 dB of gain) is a wrong file, not a measurement
    "dbasma.s2p": (GOOD_S2P.replace("RI", "MA").replace("0.9 0 0.9", "-20 0 -20"),
                   r"dbasma\.s2p: an S-parameter magnitude reaches 20 \(26 dB of gain\).*MA, DB or RI"),
    "huge.s2p": (GOOD_S2P.replace("0.8 0 0.8", "1e300 0 1e300"), r"huge\.s2p: an S-parameter magnitude reaches 1e\+300"),
}


@pytest.mark.parametrize("name", sorted(BAD_TOUCHSTONE))
def test_bad_touchstone_raises_touchstone_error_with_file_and_line(tmp_path, name):
    text, pattern = BAD_TOUCHSTONE[name]
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(TouchstoneError, match=pattern):
        load_sdd(p)


def test_missing_touchstone(tmp_path):
    with pytest.raises(TouchstoneError, match=r"nothere\.s4p: no such Touchstone file"):
        load_sdd(tmp_path / "nothere.s4p")


VALID_TOML = """
name = "t"
baud_gbd = 53.125
[[segments]]
type = "trace"
length_in = 2
material = "megtron6"
"""

BAD_TOML = {
    "unknown_top": (VALID_TOML.replace('name = "t"', 'name = "t"\nbaud = 53'), r"bad\.toml: baud: unknown key; allowed keys: name, description"),
    "unknown_seg": (VALID_TOML + "colour = 1\n", r"bad\.toml: segments\[0\]\.colour: unknown key; allowed keys: length_mm\|length_in, kind"),
    "negative_len": (VALID_TOML.replace("length_in = 2", "length_in = -2"),
                     r"bad\.toml: segments\[0\]\.length_in: must be >= 0 in, got -2"),
    "missing_file": (VALID_TOML + '[[segments]]\ntype = "touchstone"\nfile = "gone.s4p"\n',
                     r"bad\.toml: segments\[1\]\.file: 'gone\.s4p' not found"),
    "missing_agg": (VALID_TOML + '[[aggressors]]\nkind = "FEXT"\nfile = "gone.s4p"\n',
                    r"bad\.toml: aggressors\[0\]\.file: 'gone\.s4p' not found"),
    "bad_type": (VALID_TOML.replace('type = "trace"', 'type = "wire"'), r"segments\[0\]\.type: 'wire' is unknown"),
    "neg_delay": (VALID_TOML + '[[segments]]\ntype = "line"\ndelay_ps = -3\n', r"segments\[1\]\.delay_ps: must be >= 0"),
    "bad_material": (VALID_TOML.replace("megtron6", "unobtainium"), r"material 'unobtainium' is unknown"),
    "syntax": ("name = \n", r"bad\.toml: invalid TOML: .*line 1"),
    "no_segments": ('name = "x"\n', r"segments: missing; give at least one \[\[segments\]\] table"),
    "bad_modulation": (VALID_TOML.replace('name = "t"', 'name = "t"\nmodulation = "QAM"'), r"modulation: 'QAM'"),
}


@pytest.mark.parametrize("case", sorted(BAD_TOML))
def test_bad_channel_toml_raises_config_error(tmp_path, case):
    text, pattern = BAD_TOML[case]
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=pattern):
        load_channel(p)


def test_unknown_library_name():
    with pytest.raises(EqtuneError, match=r"not in the library \(.*c2m-10in"):
        load_channel("c2m-nonexistent")


@pytest.mark.parametrize("case", ["unknown_seg", "negative_len", "missing_file"])
def test_cli_bad_toml_one_line_exit_2(tmp_path, case):
    p = tmp_path / "bad.toml"
    p.write_text(BAD_TOML[case][0])
    res = CliRunner().invoke(main, ["channel", "show", str(p)])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("eqtune: error: ") and "bad.toml" in lines[0]
    assert "Traceback" not in res.output


@pytest.mark.parametrize("name", ["truncated.s2p", "nonnumeric.s2p", "wrongcount.s4p", "nonmono.s2p"])
def test_cli_bad_touchstone_one_line_exit_2(tmp_path, name):
    p = tmp_path / name
    p.write_text(BAD_TOUCHSTONE[name][0])
    res = CliRunner().invoke(main, ["channel", "show", str(p)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("eqtune: error: ") and name in lines[0]


_TOKENS = st.sampled_from(["0.1", "0", "-1e3", "1e-9", "nan", "inf", "x", "!", "#", "# GHz S RI R 50",
                           "# Hz S MA R 50", "[Version] 2.0", "[Number of Ports] 2", "[Network Data]", "[End]",
                           "1", "2", "3", "", "\t", "1,2", "--", "# MHz Y DB R 75"])
_LINES = st.lists(st.lists(_TOKENS, max_size=12).map(" ".join), max_size=12).map("\n".join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(_LINES, st.text(max_size=300), _LINES.map(lambda s: GOOD_S2P + s)),
       ext=st.sampled_from([".s2p", ".s4p", ".s1p", ".s8p"]))
def test_fuzzed_touchstone_only_eqtune_errors_escape(text, ext):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"fuzz{ext}"
        p.write_bytes(text.encode("utf-8", errors="replace"))
        try:
            load_sdd(p, check_passivity=False)
        except EqtuneError as exc:
            assert str(p.name) in str(exc)


@settings(max_examples=40, deadline=None)
@given(cut=st.integers(min_value=0, max_value=len(GOOD_S2P) - 1))
def test_fuzzed_truncation_of_valid_file(cut):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "cut.s2p"
        p.write_text(GOOD_S2P[:cut])
        try:
            load_sdd(p)
        except EqtuneError as exc:
            assert "cut.s2p" in str(exc)


_VALUES = st.one_of(st.integers(-5, 50), st.floats(allow_nan=True, allow_infinity=True, width=32),
                    st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2))
_TRACE_KEYS = st.sampled_from(["length_in", "length_mm", "kind", "material", "dk", "df", "f_ref_ghz", "width_mil",
                               "thickness_um", "spacing_mm", "height_mil", "zdiff_ohm", "roughness",
                               "huray_radius_um", "huray_sr", "rq_um", "temperature_c", "colour"])


def _toml_value(v) -> str:
    import json
    import math

    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return json.dumps(v)


@settings(max_examples=60, deadline=None)
@given(entries=st.dictionaries(_TRACE_KEYS, _VALUES, max_size=5),
       top=st.dictionaries(st.sampled_from(["baud_gbd", "modulation", "temperature_c", "df_mhz", "termination_ohm",
                                             "fmax_ghz"]), _VALUES, max_size=2))
def test_fuzzed_channel_toml_only_eqtune_errors_escape(entries, top):
    body = "".join(f"{k} = {_toml_value(v)}\n" for k, v in top.items())
    body += '[[segments]]\ntype = "trace"\n' + "".join(f"{k} = {_toml_value(v)}\n" for k, v in entries.items())
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "fuzz.toml"
        p.write_text(body)
        try:
            load_channel(p)
        except EqtuneError as exc:
            assert "fuzz.toml" in str(exc)
