"""``eqtune eye``: text, JSON, plot, and one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eqtune.cli import main


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_eye_json_keys(runner):
    r = runner.invoke(main, ["eye", "c2m-10in", "--rx-post", "2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for k in ("eye_height_mv", "eye_height_min_mv", "eye_width_ui", "vec_db", "com_db", "ber_target",
              "sample_phase_ui", "modulation", "baud_gbd", "eq"):
        assert k in d
    assert d["eq"]["rx_post"] == 2.0 and d["direction"] == "host_rx" and len(d["eye_height_mv"]) == 3


def test_eye_text_and_plot(runner, tmp_path):
    png = tmp_path / "eye.png"
    r = runner.invoke(main, ["eye", "c2m-10in", "--tx-ffe", "-0.1,0.8,-0.1", "--tx-eq", "6", "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert "module_rx" in r.output and "eye height" in r.output
    assert png.stat().st_size > 10_000


def test_eye_serdes_direction(runner):
    r = runner.invoke(main, ["eye", "c2m-10in", "--tx-ffe", "-0.1,0.9", "--ctle", "-8,0", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["direction"] == "serdes" and d["eq"]["ctle_gdc"] == -8.0


@pytest.mark.parametrize("args,msg", [
    (["--rx-post", "9"], "rx_post=9"),
    (["--ber", "0.7"], "BER"),
    (["--tx-ffe", "-0.1,0.8,-0.2"], "sum"),
    (["--tx-ffe", "a,b"], "comma-separated"),
    (["--ctle", "3"], "ctle_gdc=3"),
    (["--rx-pre", "1", "--tx-eq", "2"], "two directions"),
])
def test_eye_bad_input_is_one_line_exit_2(runner, args, msg):
    r = runner.invoke(main, ["eye", "c2m-10in", *args])
    assert r.exit_code == 2, r.output
    assert msg in r.output
    assert "Traceback" not in r.output


def test_eye_json_says_which_sampling_phase(runner):
    """serdes direction: the standard's Mueller-Muller phase and COM at DER_0 unless --sampling best."""
    base = ["eye", "c2m-10in", "--tx-ffe", "-0.1,0.9", "--ctle", "-8,0", "--profile", "ieee-3ck-c2c", "--json"]
    d = json.loads(runner.invoke(main, base).output)
    assert d["sampling"] == "mm" and d["com_probability"] == 1e-5 and d["ber_target"] == 1e-6
    r = runner.invoke(main, base + ["--sampling", "best"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["sampling"] == "best"
    d = json.loads(runner.invoke(main, ["eye", "c2m-10in", "--rx-post", "2", "--json"]).output)
    assert d["sampling"] == "best" and d["com_probability"] == d["ber_target"]
    r = runner.invoke(main, base + ["--sampling", "cdr"])
    assert r.exit_code == 2 and "Traceback" not in r.output
