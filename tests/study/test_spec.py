"""Study specs: expansion, stable ids/seeds, and errors that name the table, row and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqtune.errors import ConfigError
from eqtune.study.spec import load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[2]


def _parse(text: str, tmp_path: Path):
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    return load_spec(p)


def test_example_spec_expands():
    spec = load_spec(ROOT / "channels" / "studies" / "example.toml")
    labels = [c.channel.label for c in spec.combinations]
    assert labels[:2] == ["c2m-4in", "c2m-10in-xtalk"]
    assert len(spec.combinations) == 2 + 2 * 2
    assert [c.name for c in spec.combinations[0].corners] == ["25C", "85C"]
    assert spec.combinations[0].tune.knobs == ("rx_pre", "rx_post", "rx_amp")


def test_ids_and_seeds_are_content_derived(synth_spec_path, tmp_path):
    a = load_spec(synth_spec_path)
    assert len(a.combinations) == 24
    assert len({c.id for c in a.combinations}) == 24
    # same content in another order -> same ids and seeds
    text = synth_spec_path.read_text().replace("[3, 5, 7, 9, 11, 13]", "[13, 11, 9, 7, 5, 3]")
    b = _parse(text, tmp_path)
    assert {c.id: c.seed for c in a.combinations} == {c.id: c.seed for c in b.combinations}
    # a different study seed changes the seeds, not the set of combinations
    c = _parse(synth_spec_path.read_text().replace("seed = 7", "seed = 8"), tmp_path)
    assert {x.seed for x in c.combinations} != {x.seed for x in a.combinations}


@pytest.mark.parametrize(
    "text, where",
    [
        ('[[channels]]\nlibrary = "c2m-4in"\n[[channels]]\nbase = "c2m-10in"\nsweep.length_in = [4, "x"]\n',
         "channels[1].sweep.length_in[1]"),
        ('[[channels]]\nlibrary = "c2m-4in"\nlenght = 3\n', "channels[0].lenght"),
        ('[[channels]]\nlibrary = "c2m-4in"\n[[channels]]\nbase = "c2m-10in"\nsweep.length_in = [-4]\n',
         "channels[1].sweep.length_in[0]"),
        ('[study]\ntarget_ber = 2\n[[channels]]\nlibrary = "c2m-4in"\n', "study.target_ber"),
        ('[[channels]]\nlibrary = "c2m-4in"\n[tune]\nknobs = ["rx_pre", "rx_psot"]\n', "tune.knobs[1]"),
        ('[[channels]]\nlibrary = "c2m-4in"\n[[pass]]\neye_height_min_mv = 15\n[[pass]]\ncom_min = 3\n',
         "pass[1].com_min"),
        ('[[channels]]\nlibrary = "c2m-4in"\n[[corners]]\nname = "hot"\ntemperature_c = "85"\n',
         "corners[0].temperature_c"),
        ('[[channels]]\nfile = "missing.s4p"\n', "channels[0].file"),
        ('[[channels]]\nlibrary = "c2m-4in"\nfile = "x.s4p"\n', "channels[0]"),
        ('[study]\nname = "x"\n', "channels"),
        ('[[channels]]\nlibrary = "c2m-4in"\n[[channels]]\nlibrary = "c2m-4in"\n', "channels[0]"),
        ("[[channels]\n", "not valid TOML"),
        ('[[channels]]\nlibrary = "c2m-4in"\n[tune]\nknobs = ["rx_post", "tx_c1"]\n', "tune.knobs[1]"),
    ],
)
def test_malformed_spec_names_row_and_field(text, where, tmp_path):
    with pytest.raises(ConfigError) as err:
        _parse(text, tmp_path)
    msg = str(err.value)
    assert where in msg, msg
    assert str(tmp_path / "s.toml") in msg


def test_corner_temperature_conflicts_with_swept_temperature(tmp_path):
    text = ('[[channels]]\nbase = "c2m-10in"\nsweep.temperature_c = [25, 85]\n'
            '[corners]\ntemperature_c = [25, 85]\n')
    with pytest.raises(ConfigError, match="temperature_c"):
        _parse(text, tmp_path)


def test_corner_tables_and_lists(tmp_path):
    spec = parse_spec({"channels": ["c2m-4in"], "corners": [
        {"name": "cold", "temperature_c": 0}, {"name": "hot-xt", "temperature_c": 85, "crosstalk": True},
        {"temperature_c": 85, "crosstalk": False}]}, base_dir=tmp_path)
    assert [c.name for c in spec.combinations[0].corners] == ["cold", "hot-xt", "85C-noxt"]
    spec = parse_spec({"channels": ["c2m-4in"], "corners": {"temperature_c": [25, 85], "crosstalk": [True, False]}},
                      base_dir=tmp_path)
    assert [c.name for c in spec.combinations[0].corners] == ["25C", "25C-noxt", "85C", "85C-noxt"]


_RANGE_SPEC = """
[[channels]]
base = "c2m-10in"
sweep.length_in = {sweep}
sweep.material = ["megtron6", "fr4"]
"""


def test_a_sweep_range_gives_the_combinations_of_the_same_list(tmp_path):
    ranged = _parse(_RANGE_SPEC.format(sweep="{ from = 3, to = 3.3, step = 0.1 }"), tmp_path)
    listed = _parse(_RANGE_SPEC.format(sweep="[3.0, 3.1, 3.2, 3.3]"), tmp_path)
    assert [c.id for c in ranged.combinations] == [c.id for c in listed.combinations]
    assert [c.channel.param("length_in") for c in ranged.combinations[::2]] == [3.0, 3.1, 3.2, 3.3]


@pytest.mark.parametrize("sweep, words", [
    ("{ from = 3, to = 5 }", "needs from, to and step (missing step)"),
    ("{ from = 5, to = 3, step = 1 }", "below from"),
    ("{ from = 3, to = 5, step = 0 }", "step"),
    ("{ from = 0, to = 1e9, step = 1 }", "at most 1,000,000"),
    ("{ from = 3, to = 5, step = 1, by = 2 }", "by"),
])
def test_a_bad_sweep_range_names_the_field(sweep, words, tmp_path):
    with pytest.raises(ConfigError, match="channels\\[0\\].sweep.length_in") as exc:
        _parse(_RANGE_SPEC.format(sweep=sweep), tmp_path)
    assert words in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_range_is_refused_for_a_material(tmp_path):
    text = '[[channels]]\nbase = "c2m-10in"\nsweep.material = { from = 1, to = 2, step = 1 }\n'
    with pytest.raises(ConfigError, match="sweep.material.*list of values"):
        _parse(text, tmp_path)


@pytest.mark.slow
def test_the_shipped_100000_combination_spec_expands():
    spec = load_spec(ROOT / "docs" / "study-screen-100k.toml")
    assert len(spec.combinations) == 100_000
    assert [c.name for c in spec.combinations[0].corners] == ["25C", "85C"]
    lengths = sorted({c.channel.param("length_in") for c in spec.combinations})
    assert len(lengths) == 12_500 and lengths[0] == 3.0 and lengths[-1] == 15.499 and 4.217 in lengths
    # a screening study that refines its 200 worst links at full fidelity
    assert {(c.tune.fidelity, c.tune.refine_worst) for c in spec.combinations[:100]} == {("screen", 200)}
