"""What the command line prints for people and scripts: JSON errors, aligned session lists,
readable measure output, option aliases, honest demo lines, plain progress lines off a terminal,
corners that differ."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eqtune.cli import main


def run(*args: str):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r


def test_errors_with_json_are_a_json_object_on_stdout_and_nothing_on_stderr(tmp_path) -> None:
    r = run("session", "show", "nope", "--sessions", str(tmp_path), "--json")
    assert r.exit_code == 2
    assert r.stderr == ""
    err = json.loads(r.stdout)["error"]
    assert err["type"] == "SessionError" and "nope" in err["message"] and err["exit_code"] == 2
    r = run("session", "show", "nope", "--sessions", str(tmp_path))  # without --json: one line on stderr
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.startswith("eqtune: error: ")


def test_session_list_has_a_header_and_aligned_columns(tmp_path) -> None:
    from eqtune.session.live import LiveConfig, LiveTuner

    for name, lanes in (("a", [1]), ("a-much-longer-name", [1, 2, 3])):
        cfg = LiveConfig(module=f"emu:c2m-10in?seed=1&fast=1&name={name}", lanes=lanes, dwell_s=0.01, budget=2,
                         metadata={"site": "hall B"})
        LiveTuner.create(cfg, sessions_dir=tmp_path).close()
    lines = run("session", "list", "--sessions", str(tmp_path)).stdout.splitlines()
    assert len(lines) == 3 and lines[0].split()[:5] == ["SESSION", "STATUS", "MODULE", "LANES", "MEAS"]
    for col in ("STATUS", "MODULE", "LANES"):  # every row's cell starts under its header
        at = lines[0].index(col)
        assert all(row[at - 2:at] == "  " and row[at] != " " for row in lines[1:]), (col, lines)
    assert "1,2,3" in lines[2] or "1,2,3" in lines[1]


def test_measure_prints_codes_and_ber_counts_not_a_dict() -> None:
    res = "emu:c2m-10in?seed=3&fast=1"
    r = run("measure", "--module", res, "--lane", "1", "--dwell", "0.05", "--ber", "1e-9")
    assert r.exit_code == 0, r.output
    assert "{" not in r.stdout and "rx_pre=" in r.stdout
    assert " errors in " in r.stdout and " bits)" in r.stdout
    alias = json.loads(run("measure", "--module", res, "--lane", "1", "--dwell", "0.05", "--ber", "1e-9",
                           "--json").stdout)
    full = json.loads(run("measure", "--module", res, "--lane", "1", "--dwell", "0.05", "--ber-target", "1e-9",
                          "--json").stdout)
    assert alias["ber_target"] == full["ber_target"] == 1e-9


def test_demo_says_how_it_is_set_up() -> None:
    from eqtune.cli.demo_cmd import _setup_lines

    text = "\n".join(_setup_lines(True, 28.2))
    assert "adaptive EQ is OFF" in text and "emulated time, not wall time" in text
    assert "real-time gates" in "\n".join(_setup_lines(False, 0.05))


def test_instrument_identity_line_shows_its_idn() -> None:
    from eqtune.session.live import LiveEvent
    from eqtune.tui.format import event_text

    ev = LiveEvent("device", {"role": "instrument", "resource": "TCPIP::127.0.0.1::5025::SOCKET",
                              "identity": {"idn": "Keysight Technologies,M8040A,MY1,6.5", "definition": "keysight-m8040a"}})
    assert event_text(ev) == ("  instrument TCPIP::127.0.0.1::5025::SOCKET: Keysight Technologies,M8040A,MY1,6.5 "
                              "(definition keysight-m8040a)")
    ph = LiveEvent("phase", {"phase": "baseline", "text": "measuring (281.951 s per group)"}, session="s")
    assert "emulated time" in event_text(ph, emulated_clock=True) and "emulated" not in event_text(ph)
    from eqtune.tune.plan import dwell_text

    for dwell in (1e-5, 2.5e-7, 0.01, 282.0, 4000.0):  # every form dwell_text prints, the exponent one included
        ev = LiveEvent("phase", {"phase": "verify", "text": f"measuring the recommendation ({dwell_text(dwell)} per group)"},
                       session="s")
        assert "of emulated time, not wall time" in event_text(ev, emulated_clock=True), (dwell, dwell_text(dwell))


def test_progress_off_a_terminal_is_whole_lines(tmp_path) -> None:
    r = run("tune", "c2m-10in", "--sim", "--budget", "6", "--seed", "1", "--knobs", "rx_pre", "--optimizer", "gp",
            "--json")  # gp: the automatic choice would run the 8-code grid in one batch
    assert r.exit_code == 0
    json.loads(r.stdout)  # stdout: the result only
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("tuning ")]
    assert lines and lines[-1].startswith("tuning c2m-10in (rx_pre): 6/6 (100 %)")
    assert not any("…" in ln for ln in lines)


def test_nominal_and_xtalk_on_corners_differ() -> None:
    from eqtune.tune import SimulationSource

    src = SimulationSource("c2m-10in-xtalk", ["rx_pre", "rx_post"], corners="25C,xtalk-on,25C+xtalk-on")
    per = src.measure(src.default_point()).metrics["corners"]
    # 25C is the through channel: crosstalk only where a corner names it
    assert per["25C"]["margin"] > per["xtalk-on"]["margin"]
    assert per["xtalk-on"]["margin"] == pytest.approx(per["25C+xtalk-on"]["margin"], abs=0.5)


def test_report_labels_an_emulated_dwell() -> None:
    from eqtune.session.report import _virtual_clock

    assert _virtual_clock("emu:c2m-10in?seed=1&settle_ms=2&fast=1&adaptive=0")
    assert not _virtual_clock("emu:c2m-10in?seed=1") and not _virtual_clock("i2c:1@0x50")


def test_a_warning_is_one_line_naming_the_file_not_an_eqtune_source_line(tmp_path) -> None:
    """A 4-port file whose legs are all alike: the port order cannot be told, eqtune assumes one and says
    so. On the command line that is one ``eqtune: warning:`` line about the user's file, not Python's
    two lines quoting eqtune's own code; and the hook is gone once the command returns."""
    import warnings

    rows = ["# GHz S RI R 50"]
    for f in range(1, 61):
        rows.append(f"{f} " + " ".join("0.3 0" if (i // 4 + i % 4) % 2 else "0.1 0" for i in range(16)))
    p = tmp_path / "flat.s4p"
    p.write_text("\n".join(rows) + "\n")
    before = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        r = run("eye", str(p))
    assert r.exit_code == 0, r.output
    said = [ln for ln in r.stderr.splitlines() if "port order is ambiguous" in ln]
    assert len(said) == 1 and said[0].startswith(f"eqtune: warning: {p}: port order is ambiguous")
    assert "touchstone.py" not in r.stderr and "UserWarning" not in r.stderr
    assert warnings.showwarning is before
