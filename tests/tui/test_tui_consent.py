"""The TUI on a module whose every apply takes the data path down: the Devices step says so above its
tables, Connect checks the lanes against the module (``all`` on a 4-lane module is 1..4), and the
Link step asks before the session's first write, with Stop focused (keys typed ahead cannot consent).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual import events

from eqtune.tui.app import EqtuneApp
from eqtune.tui.dialogs import TrafficDownScreen

pytestmark = pytest.mark.timeout(300)
REGULAR = "emu:c2m-10in?image=qsfp4-regular&seed=2&settle_ms=0&fast=1&adaptive=0&name=tui-consent-{}"


async def _connect(app: EqtuneApp, pilot, resource: str, lanes: str) -> None:
    await app.goto("devices")
    app.query_one("#module-res").value = resource
    app.query_one("#lanes").value = lanes
    app.query_one("#lanes").focus()
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_all_lanes_are_the_modules_lanes_and_missing_lanes_are_refused(tmp_path: Path) -> None:
    async def go() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await _connect(app, pilot, REGULAR.format("lanes"), "all")
            assert app.last_error == "" and app.ctl.lanes == [1, 2, 3, 4]
            note = str(app.query_one("#traffic-note").render())
            assert "TRAFFIC GOES DOWN on every write" in note and "0.1 s" in note
            await _connect(app, pilot, REGULAR.format("lanes"), "1-8")
            assert "lane(s) 5,6,7,8 do not exist" in app.last_error and "1..4" in app.last_error
            assert not (tmp_path.exists() and any(tmp_path.iterdir()))  # no session left behind

    asyncio.run(go())


def test_dead_instrument_is_caught_at_connect(tmp_path: Path) -> None:
    async def go() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await app.goto("devices")
            app.query_one("#instrument-res").value = "TCPIP::127.0.0.1::9::SOCKET"  # discard port: nobody listens
            await _connect(app, pilot, REGULAR.format("inst"), "1")
            assert "instrument TCPIP::127.0.0.1::9::SOCKET does not answer" in app.last_error
            assert app.ctl.instrument_resource is None

    asyncio.run(go())


def test_consent_dialog_before_the_first_write(tmp_path: Path) -> None:
    async def go() -> None:
        app = EqtuneApp(str(tmp_path))
        async with app.run_test(size=(80, 24)) as pilot:
            await _connect(app, pilot, REGULAR.format("dialog"), "all")
            await app.goto("link")
            await pilot.pause()  # the pane draws the controller's link settings once mounted
            app.query_one("#link-budget").value = "3"
            app.query_one("#link-channel").focus()
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, TrafficDownScreen)
            text = "\n".join(app.screen.lines)
            assert "lane(s) 1,2,3,4" in text and "about 6 time(s)" in text and "0.1 s" in text
            assert app.focused.id == "choice-stop"
            for key in "ty":  # an impatient "t" (tune) or "y" typed ahead: letters do nothing here
                app.post_message(events.Key(key, key))
            app.post_message(events.Key("enter", "\r"))  # Enter on the focused button: Stop
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert not isinstance(app.screen, TrafficDownScreen)
            assert app.ctl.session_id is None and "nothing was written" in app.status_text
            # again, this time choosing "Tune (maintenance window)"
            app.query_one("#link-channel").focus()
            await pilot.press("enter")
            await pilot.pause()
            app.screen.query_one("#choice-tune").focus()
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            sid = app.ctl.session_id
            assert sid and app.step == "baseline"
            recs = [json.loads(x) for x in (tmp_path / sid / "journal.jsonl").read_text().splitlines()]
            consent = [r for r in recs if r["type"] == "consent"]
            assert consent[0]["how"] == "operator" and consent[0]["lanes"] == [1, 2, 3, 4]
            assert not [r for r in recs if r["type"] in ("apply", "outage")]  # consent, nothing written yet

    asyncio.run(go())
