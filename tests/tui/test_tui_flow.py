"""Pilot-driven tests of the on-site TUI against the emulated module.

Each test drives the screens with key presses only, as an FAE would at 80x24, and asserts the state
behind them: journal records, codes in the emulated module, files written, what the screen says.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from eqtune.tui.app import EqtuneApp
from eqtune.tui.dialogs import ConfirmScreen, HelpScreen

pytestmark = pytest.mark.timeout(300)


def _records(sessions: Path, sid: str) -> list[dict]:
    lines = (sessions / sid / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _cells(app: EqtuneApp, table_id: str) -> list[list[str]]:
    table = app.query_one(f"#{table_id}")
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def _settle(app: EqtuneApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def _settle_until(app: EqtuneApp, pilot, done, timeout_s: float = 120.0) -> None:
    """Settle until ``done()`` holds (or an error shows): a key's message may start its worker only after
    one pause on a loaded machine, so one settle can return before the step has even begun."""
    import time

    end = time.monotonic() + timeout_s
    await _settle(app, pilot)
    while not done() and not app.last_error and time.monotonic() < end:
        await pilot.pause(0.05)
        await _settle(app, pilot)


async def _type(pilot, text: str) -> None:
    """Type ``text`` one key at a time, as a person does."""
    await pilot.press(*[{" ": "space"}.get(ch, ch) for ch in text])


async def _to_baseline(app: EqtuneApp, pilot, *, budget: int, dwell: float, patience: int = 0,
                       lanes: str = "1", knobs: str | None = None) -> str:
    """Session -> devices -> link with the keyboard only; returns the new session id."""
    await pilot.pause()
    assert app.focused.id == "meta-site"  # the first field has the focus when the app opens
    await _type(pilot, "Acme DC3")
    await pilot.press("enter")  # Enter in a field submits the step
    assert app.step == "devices" and app.focused.id == "module-res"
    await pilot.press("escape", "e")  # leave the field; e = the emulators (focus moves to Connect)
    assert app.focused.id == "connect"
    await pilot.press("shift+tab", "shift+tab")  # back to the Lanes field, its text selected
    assert app.focused.id == "lanes"
    await _type(pilot, lanes)
    assert app.query_one("#lanes").value == lanes
    await pilot.press("enter")
    await _settle_until(app, pilot, lambda: bool(app.ctl.identity.get("pn")))
    assert app.last_error == ""
    assert app.step == "devices"  # waits: the identity and codes are read before moving on
    assert app.ctl.identity["pn"]
    assert app.focused.id == "continue"
    await pilot.press("enter")
    assert app.step == "link" and app.focused.id == "link-channel"
    fields = [("budget", budget), ("patience", patience), ("dwell", dwell)] + ([("knobs", knobs)] if knobs else [])
    for key, value in fields:
        app.query_one(f"#link-{key}").focus()
        await pilot.pause()
        await _type(pilot, str(value))  # the field's text is selected on focus: typing replaces it
        assert app.query_one(f"#link-{key}").value == str(value)
    await pilot.press("enter")
    await _settle_until(app, pilot, lambda: app.step == "baseline")
    assert app.last_error == ""
    assert app.step == "baseline"
    return app.ctl.session_id


def test_typing_into_every_field_fires_no_hotkey(tmp_path: Path) -> None:
    """Every field takes every character, including the step letters, digits, ? and q; nothing else happens."""
    hotkeys = "nsrecltpabvwuodq?12345678"  # every step letter, step digit, help and quit
    first = {"meta-site": "DC-Ashburn hall B", "module-res": "net:127.0.0.1:7070"}  # the two cases
    fields = {"session": ["meta-site", "meta-customer", "meta-link", "meta-operator"],
              "devices": ["module-res", "lanes", "instrument-res"],
              "link": [f"link-{k}" for k in ("channel", "ber", "metric", "knobs", "budget", "patience", "dwell")],
              "save": ["push-more"]}

    async def run() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            for step, ids in fields.items():
                await app.goto(step)
                await pilot.pause()
                for wid in ids:
                    field = app.query_one(f"#{wid}")
                    field.focus()
                    await pilot.pause()
                    field.value = ""
                    text = first.get(wid, "") + " " + hotkeys
                    await _type(pilot, text)
                    await _settle(app, pilot)
                    assert field.value == text, wid
                    assert app.step == step, (wid, app.step)
                    assert app.focused is field
                    assert len(app.screen_stack) == 1, f"{wid}: a dialog opened"
                    assert app.busy is None and app.last_error == "", (wid, app.last_error)
            assert app.ctl.module is None and app.ctl.session_id is None
            assert not any(tmp_path.iterdir()), "typing created a session"
            assert app.is_running

    asyncio.run(run())


def test_question_mark_and_f1_show_the_step_keys(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("f1")  # F1 works from inside a field
            assert isinstance(app.screen, HelpScreen)
            assert "Enter" in app.screen.query_one("#help-text").render().plain
            assert "start a new session" in str(app.screen.query_one("#help-text").render())
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)
            assert app.focused.id == "meta-site"
            await pilot.press("escape", "4")  # out of the field; 4 = the Baseline step
            assert app.step == "baseline"
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            help_text = str(app.screen.query_one("#help-text").render())
            assert "measure the current codes" in help_text and "Ctrl+C" in help_text
            await pilot.press("question_mark")
            assert not isinstance(app.screen, HelpScreen)

    asyncio.run(run())


def test_quit_and_ctrl_c_ask_and_say_what_happens_to_the_codes(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("ctrl+c")
            assert isinstance(app.screen, ConfirmScreen)
            assert "nothing is written" in str(app.screen.query_one("#confirm-question").render())
            await pilot.press("n")
            assert app.is_running and not isinstance(app.screen, ConfirmScreen)
            await pilot.press("escape", "q")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("escape")
            assert app.is_running
            await pilot.press("ctrl+q", "y")
            await pilot.pause()
            assert not app.is_running

    asyncio.run(run())


def test_whole_wizard_with_eight_lanes(tmp_path: Path) -> None:
    """All eight steps with lanes "1-8", keys only; each step with results waits for Enter."""

    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            sid = await _to_baseline(app, pilot, budget=3, dwell=0.02, lanes="1-8")
            assert app.ctl.lanes == list(range(1, 9))
            codes = _cells(app, "lane-codes")
            assert [r[0] for r in codes] == [str(i) for i in range(1, 9)] and all("pre=" in r[2] for r in codes)
            assert app.focused.id == "measure"
            await pilot.press("enter")
            await _settle(app, pilot)
            assert app.step == "baseline", "the baseline must wait to be read"
            rows = _cells(app, "baseline-table")
            assert len(rows) == 8
            assert all("/" in r[3] for r in rows)  # BER with its counts (errors/bits)
            header = [str(c.label) for c in app.query_one("#baseline-table").ordered_columns]
            assert "margin (-log10(BER))" in header
            await pilot.press("enter")  # Continue
            assert app.step == "tune" and app.focused.id == "tune"
            await pilot.press("enter")
            await _settle(app, pilot)
            assert app.step == "tune", app.last_error
            lanes = _cells(app, "tune-lanes")
            assert len(lanes) == 8 and all(r[1] != "0" and "tx_eq=" in r[3] for r in lanes)  # every lane's best
            assert "DONE" in str(app.query_one("#tune-state").render())
            measures = [r for r in _records(tmp_path, sid) if r["type"] == "measure"]
            assert len(measures) == 3  # budget 3, eight lanes measured together
            await pilot.press("n")
            assert app.step == "verify"
            await pilot.press("enter")
            await _settle(app, pilot)
            assert app.step == "verify", app.last_error
            rows = _cells(app, "verify-table")
            assert len(rows) == 8 and all(r[1] in ("keep", "restore") for r in rows)
            decisions = {r["lane"]: r for r in _records(tmp_path, sid) if r["type"] == "decision"}
            assert sorted(decisions) == list(range(1, 9))
            for ln in range(1, 9):  # the screen's decision is the journal's, the codes held are the module's
                assert rows[ln - 1][1] == decisions[ln]["action"]
                held = app.ctl.module.active_eq(ln)
                assert all(f"{k.replace('rx_', '')}={v}" in rows[ln - 1][3] for k, v in held.items())
            caption = str(app.query_one("#eye-caption").render())
            assert caption.startswith("model eye, lane 1")
            assert "legend" in str(app.query_one("#eye-legend").render())
            app.query_one("#verify-table").focus()
            await pilot.press("down")
            await pilot.pause()
            assert str(app.query_one("#eye-caption").render()).startswith("model eye, lane 2")
            eye = str(app.query_one("#model-eye").render()).splitlines()
            assert len(eye) == 9 and all(len(row) <= 56 for row in eye)
            await pilot.press("n")
            assert app.step == "save" and app.focused.id == "push-more"  # a field: letters typed here are text
            await pilot.press("enter")  # Enter in the field saves the profile
            await _settle(app, pilot)
            assert app.ctl.profile_path is not None and app.ctl.profile_path.exists()
            assert app.focused.id == "push"
            await pilot.press("enter")  # push asks first; n leaves the module alone
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            await _settle(app, pilot)
            assert app.ctl.push_report is None
            await pilot.press("u", "y")
            await _settle(app, pilot)
            assert app.ctl.push_report is not None and app.ctl.push_report.ok, app.last_error
            assert app.step == "save" and app.focused.id == "continue"
            await pilot.press("enter")
            assert app.step == "report"
            await pilot.press("enter")
            await _settle(app, pilot)
            assert app.ctl.report_path is not None and sid in app.ctl.report_path.read_text()
            assert "<td>push</td>" in app.ctl.report_path.read_text()  # the report includes the push
            types = [r["type"] for r in _records(tmp_path, sid)]
            for expected in ("baseline", "measure", "verify", "decision", "profile", "push", "report"):
                assert expected in types, expected
            await pilot.press("q")
            assert "pushed and read back" in str(app.screen.query_one("#confirm-question").render())
            await pilot.press("y")

    asyncio.run(run())


def test_abort_asks_then_restores_original_codes(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            sid = await _to_baseline(app, pilot, budget=200, dwell=0.05)
            original = app.ctl.module.active_eq(1)
            await pilot.press("b")
            await _settle(app, pilot)
            await pilot.press("n", "t")
            t0 = time.monotonic()
            while app.query_one("#pane-tune").evaluations < 3 and time.monotonic() - t0 < 120:
                await pilot.pause(0.05)
            assert app.busy == "tune"
            assert "ETA" in str(app.query_one("#tune-state").render())
            await pilot.press("a")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")  # no: the tune goes on
            n = app.query_one("#pane-tune").evaluations
            t0 = time.monotonic()  # wait for the next evaluation (a loaded machine is slow), not a fixed time
            while app.query_one("#pane-tune").evaluations <= n and app.busy == "tune" and time.monotonic() - t0 < 120:
                await pilot.pause(0.05)
            assert app.busy == "tune" and app.query_one("#pane-tune").evaluations > n
            await pilot.press("p")
            t0 = time.monotonic()  # until the pause shows (not a fixed 0.3 s: a loaded machine is slow)
            while not (app.ctl.paused and "PAUSED" in str(app.query_one("#tune-state").render())) \
                    and time.monotonic() - t0 < 60:
                await pilot.pause(0.05)
            assert app.ctl.paused and "PAUSED" in str(app.query_one("#tune-state").render())
            await pilot.press("p", "a", "y")
            await _settle(app, pilot)
            assert app.busy is None and app.ctl.phase == "aborted"
            assert app.ctl.module.active_eq(1) == original
            types = [r["type"] for r in _records(tmp_path, sid)]
            assert "abort" in types and "restore" in types
            assert types.count("measure") < 200
            await pilot.press("t")  # after an abort, tune says why it does not start
            await _settle(app, pilot)
            assert "aborted" in app.last_error and "step 3" in app.last_error

    asyncio.run(run())


def test_device_error_is_a_message_not_a_crash(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("escape", "2")
            assert app.focused.id == "module-res"
            await _type(pilot, "net:127.0.0.1:1")  # nothing listens there
            await pilot.press("enter")
            await _settle(app, pilot)
            assert app.step == "devices"
            assert "127.0.0.1:1" in app.last_error
            app.query_one("#lanes").value = "9"
            await pilot.press("enter")
            await _settle(app, pilot)
            assert "1..8" in app.last_error
            app.query_one("#lanes").value = "1-x"
            await pilot.press("enter")
            assert "range 1-8" in app.last_error
            await pilot.press("escape", "3")
            await pilot.press("enter")  # confirming a link with no module connected
            await _settle(app, pilot)
            assert "Devices" in app.last_error
            assert app.is_running

    asyncio.run(run())


def test_no_color_keeps_the_focus_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With NO_COLOR the focused field's label is drawn in reverse video (a style, not a colour)."""
    monkeypatch.setenv("NO_COLOR", "1")

    async def run() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            labels = list(app.query(".row Label"))[:2]
            assert labels[0].styles.text_style.reverse and not labels[1].styles.text_style.reverse
            await pilot.press("tab")
            await pilot.pause()
            assert app.focused.id == "meta-customer"
            assert labels[1].styles.text_style.reverse and not labels[0].styles.text_style.reverse

    asyncio.run(run())


def test_an_early_stop_ends_the_tune_with_its_rule_and_reason_on_screen(tmp_path: Path) -> None:
    """A lane group ended by a stop rule before its budget: the tune step's DONE line names the rule the
    journal recorded (stop_rule) and its reason. The rule here is patience 2 (the TUI's emulated module
    gates in real time, so whether a tx_eq-only space settles depends on the machine's load; settled and
    exhausted reach the screen by the same stop event, and tests/session/test_live_stops.py checks them
    in demo and tune --live)."""

    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            sid = await _to_baseline(app, pilot, budget=30, dwell=0.02, patience=2, knobs="tx_eq")
            await pilot.press("enter")  # measure the baseline
            await _settle(app, pilot)
            await pilot.press("enter")  # Continue
            assert app.step == "tune"
            await pilot.press("enter")
            await _settle(app, pilot)
            assert app.step == "tune", app.last_error
            measures = [r for r in _records(tmp_path, sid) if r["type"] == "measure"]
            rule = measures[-1].get("stop_rule")
            assert len(measures) < 30 and rule in ("settled", "exhausted", "patience"), (len(measures), rule)
            state = str(app.query_one("#tune-state").render())
            assert "DONE" in state and f"({rule})" in state and measures[-1]["stop"][:20] in state, state

    asyncio.run(run())
