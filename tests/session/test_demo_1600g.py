"""``eqtune demo --module osfp-1.6t``: a 200G lane (106.25 GBd PAM4) of the emulated 1.6T OSFP module
tuned end to end over the 224G library channel (journal, profile and report written)."""

from __future__ import annotations

from click.testing import CliRunner

from eqtune.cli import main
from eqtune.session.live import load_session


def test_demo_tunes_a_200g_lane_of_the_1600g_module(tmp_path):
    r = CliRunner().invoke(main, ["demo", "--module", "osfp-1.6t", "--sessions", str(tmp_path), "--quiet",
                                  "--budget", "8", "--seed", "5"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "c2m-224g-6in on emulated 1.6T (8x200G, 106.25 GBd) module" in r.output
    sid = next(p.name for p in tmp_path.iterdir() if p.is_dir())
    view = load_session(sid, str(tmp_path))
    assert "image=osfp8-1600g" in view.config.module and view.config.channel == "c2m-224g-6in"
    assert (tmp_path / sid / "profile.json").is_file() and (tmp_path / sid / "report.html").is_file()
    # the module's DSP receiver (MMSE FFE + DFE): the verified BER is that receiver's, not a CTLE-only 1e-2
    ber = float(r.output.split(" -> ")[2].split(")")[0])
    assert ber < 1e-3, r.output


def test_demo_says_when_the_emulated_link_is_not_the_eye_engine(tmp_path, monkeypatch):
    """Where the eye engine cannot model the channel (here: made to fail as a missing scikit-rf would), the
    emulator's closed-form surrogate still runs the demo, and the demo says so instead of presenting its
    figures as the channel's; with the engine, JSON names the model."""
    import json

    import eqtune.emulate.link as link_mod

    r = CliRunner().invoke(main, ["demo", "--sessions", str(tmp_path / "a"), "--json", "--budget", "4"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["link_model"] == "eye-engine" and "warning" not in r.stderr

    def no_engine(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'skrf'")

    monkeypatch.setattr(link_mod, "_eye_engine_quality", no_engine)  # a new seed: a new emulator, not the cached one
    r = CliRunner().invoke(main, ["demo", "--sessions", str(tmp_path / "b"), "--json", "--budget", "4", "--seed", "97"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "not the eye engine's model of c2m-10in" in r.stderr and "skrf" in r.stderr
    assert json.loads(r.stdout)["link_model"].startswith("surrogate (ModuleNotFoundError")
