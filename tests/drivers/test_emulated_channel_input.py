"""An ``emu:`` module on a channel file the eye engine cannot model is refused in one line; it is never
tuned on the closed-form surrogate in its place (that would be a silently wrong result: the figures of a
bowl, not of the user's channel). Where the surrogate is still used (a broken install: the eye engine does
not import), the live CLI and the TUI say so in one line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.errors import InputError

ONE_POINT = "# GHz S MA R 50\n1 " + "0.5 0 " * 16 + "\n"
# a 4-port sweep to 10 GHz: the eye at 53.125 GBd needs data to 0.75 x baud (IEEE 802.3 93A.1.4)
SHORT = "# GHz S RI R 50\n" + "".join(f"{f} " + "0.1 0 " * 16 + "\n" for f in range(1, 11))


def _no_engine(*args, **kwargs):
    raise ModuleNotFoundError("No module named 'skrf'")


@pytest.mark.filterwarnings("ignore:.*port order is ambiguous")
@pytest.mark.parametrize("text, reason", [(ONE_POINT, "only one frequency point"),
                                          (SHORT, "needs data up to 39.84 GHz")], ids=["one-point", "short-band"])
def test_a_channel_the_engine_cannot_model_is_refused_not_replaced(tmp_path, text, reason):
    p = tmp_path / "lane.s4p"
    p.write_text(text)
    with pytest.raises(InputError, match=reason) as exc:
        emulator_for(parse_resource(f"emu:{p}"))
    assert str(exc.value).startswith(f"emu:{p}: ")


def test_the_cli_says_it_in_one_line_and_tunes_nothing(tmp_path):
    p = tmp_path / "lane.s4p"
    p.write_text(ONE_POINT)
    r = CliRunner().invoke(main, ["tune", "--live", "--module", f"emu:{p}", "--lane", "1", "--module-ber",
                                  "--budget", "3", "--sessions", str(tmp_path / "sessions")])
    assert r.exit_code != 0
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "only one frequency point" in lines[0], r.output
    assert "Traceback" not in r.output
    assert not list((tmp_path / "sessions").glob("*/journal.jsonl"))


def test_a_library_channel_still_runs_on_the_eye_engine():
    assert emulator_for(parse_resource("emu:c2m-4in?seed=3")).link.quality_source == "eye-engine"


def test_a_live_tune_on_a_broken_install_says_its_link_is_the_surrogate(tmp_path, monkeypatch):
    """Without the eye engine (a broken install) the emulator still runs on its closed-form surrogate, and
    ``eqtune tune --live`` says so in one line before it tunes; with the engine it says nothing."""
    import eqtune.emulate.link as link_mod

    args = ["tune", "--live", "--lane", "1", "--module-ber", "--budget", "2", "--sessions", str(tmp_path)]
    r = CliRunner().invoke(main, [*args, "--module", "emu:c2m-4in?seed=5&fast=1"])
    assert r.exit_code == 0, r.output
    assert "not the eye engine's model" not in r.output

    monkeypatch.setattr(link_mod, "_eye_engine_quality", _no_engine)
    r = CliRunner().invoke(main, [*args, "--module", "emu:c2m-4in?seed=6&fast=1"])
    assert r.exit_code == 0, r.output
    said = [ln for ln in r.output.splitlines() if "not the eye engine's model of c2m-4in" in ln]
    assert len(said) == 1 and said[0].startswith("warning: ") and "ModuleNotFoundError" in said[0]


def test_the_tui_says_it_at_connect(tmp_path, monkeypatch):
    import eqtune.emulate.link as link_mod
    from eqtune.tui.controller import SessionController

    ctl = SessionController(tmp_path)
    ctl.connect_module("emu:c2m-4in?seed=7&fast=1", "1")
    assert ctl.link_warning is None
    monkeypatch.setattr(link_mod, "_eye_engine_quality", _no_engine)
    ctl.connect_module("emu:c2m-4in?seed=8&fast=1", "1")
    assert ctl.link_warning is not None and "not the eye engine's model of c2m-4in" in ctl.link_warning
