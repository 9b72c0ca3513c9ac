"""The Link step's Prior session field: typed key by key at 80x24 against the emulated module;
the journal says which earlier session started the tune, or that none matched."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from eqtune.session.journal import Journal
from eqtune.session.live import LiveConfig
from eqtune.tui.app import EqtuneApp

pytestmark = pytest.mark.timeout(300)


def _plan(sessions: Path, sid: str) -> dict:
    recs = [json.loads(x) for x in (sessions / sid / "journal.jsonl").read_text().splitlines() if x.strip()]
    return next(r for r in recs if r["type"] == "plan")


async def _type(pilot, text: str) -> None:
    await pilot.press(*[{" ": "space"}.get(ch, ch) for ch in text])


async def _confirm_link_with_prior(app: EqtuneApp, pilot, prior: str) -> str:
    app.query_one("#link-prior").focus()
    await pilot.pause()
    await _type(pilot, prior)
    assert app.query_one("#link-prior").value == prior
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert app.last_error == "", app.last_error
    return app.ctl.session_id


def _earlier_session(root: Path, sid: str, identity: dict, knobs: list[str], pn: str | None = None) -> None:
    """A completed session as a live tune journals it (device, plan, measurements, end)."""
    j = Journal.create(root, sid, config=LiveConfig(module="emu:c2m-10in", lanes=[1], channel="c2m-10in").to_dict())
    caps = {"knob_values": {"rx_pre": list(range(8)), "rx_post": list(range(8)), "rx_amp": [0, 1, 2, 3],
                            "tx_eq": list(range(11))}}
    j.append("device", role="module", resource="emu:c2m-10in", capabilities=caps,
             identity={"vendor": identity["vendor"], "pn": pn or identity["pn"], "sn": "EARLIER-1"})
    j.append("plan", knobs=knobs, groups=[[1]], budget=2, metric="ber")
    for n, code in enumerate((4, 7)):
        j.append("measure", group=0, n=n, lanes={"1": {"codes": dict.fromkeys(knobs, code), "margin": 8.0 + n}})
    j.append("end", status="done", message="", lanes={})
    j.close()


def test_prior_session_field_auto_none_then_the_matching_session(tmp_path: Path) -> None:
    async def run() -> None:
        app = EqtuneApp(str(tmp_path), emulators=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("enter")  # session metadata as it is
            await pilot.press("escape", "e")  # the emulators
            await pilot.press("enter")  # connect
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("enter")  # continue to Link
            assert app.step == "link", app.last_error
            first = await _confirm_link_with_prior(app, pilot, "auto")
            info = str(app.query_one("#link-info").render())
            assert "prior session: none (no completed session on" in info, info
            plan = _plan(tmp_path, first)
            assert plan["prior"]["session"] is None and plan["prior"]["how"] == "auto"

            # an earlier module of another part, then one of this part: auto takes the matching one
            _earlier_session(tmp_path, "other-part", app.ctl.identity, plan["knobs"], pn="OTHER")
            _earlier_session(tmp_path, "rack12-m1", app.ctl.identity, plan["knobs"])
            await pilot.press("escape", "3")  # back to the Link step
            assert app.step == "link"
            app.query_one("#link-prior").value = ""
            second = await _confirm_link_with_prior(app, pilot, "auto")
            assert second != first
            info = str(app.query_one("#link-info").render())
            assert "prior session: rack12-m1 (chosen automatically): 2 measurements" in info, info
            assert _plan(tmp_path, second)["prior"]["session"] == "rack12-m1"

    asyncio.run(run())
