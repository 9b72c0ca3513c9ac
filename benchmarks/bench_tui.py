"""TUI speed: time to the first screen, and key latency while a tune runs.

Targets: first screen <= 1.5 s after `eqtune tui`; key presses handled within 100 ms while tuning.
Baseline for the ratio: an idle key press on the same app in the same run.

    python benchmarks/bench_tui.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time


def first_screen_s() -> float:
    """Wall time of a fresh interpreter importing the app and mounting its first screen (the Session
    form with its first field focused)."""
    code = (
        "import time,asyncio;t0=time.perf_counter();from eqtune.tui.app import EqtuneApp\n"
        "async def m():\n"
        "    app=EqtuneApp('" + tempfile.mkdtemp() + "')\n"
        "    async with app.run_test(size=(80,24)) as p:\n"
        "        await p.pause(); assert app.focused.id=='meta-site'; print(time.perf_counter()-t0)\n"
        "asyncio.run(m())\n"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    return wall, float(out.stdout.strip().splitlines()[-1])


def bare_textual_s() -> float:
    """Same-run baseline: a fresh interpreter mounting a Textual app with one Input (the framework floor)."""
    code = (
        "import time,asyncio;t0=time.perf_counter()\n"
        "from textual.app import App\nfrom textual.widgets import Input\n"
        "class A(App):\n    def compose(self):\n        yield Input()\n"
        "async def m():\n    app=A()\n"
        "    async with app.run_test(size=(80,24)) as p:\n        await p.pause(); print(time.perf_counter()-t0)\n"
        "asyncio.run(m())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


async def key_latency() -> tuple[list[float], list[float]]:
    """Time from a key event entering the app (as the terminal driver delivers it) to its action
    running, idle and while a tune runs in the worker thread. Pilot's own waits (idle, animations)
    are not counted: they are not what the FAE waits for."""
    from textual import events

    from eqtune.tui.app import EqtuneApp

    class Timed(EqtuneApp):
        handled_at = 0.0

        async def action_goto(self, step: str) -> None:
            Timed.handled_at = time.perf_counter()
            await super().action_goto(step)

    async def one_key(app, pilot, key: str) -> float:
        Timed.handled_at = 0.0
        t0 = time.perf_counter()
        ev = events.Key(key, key)
        ev.set_sender(app)
        app._driver.send_message(ev)
        while Timed.handled_at == 0.0:
            await asyncio.sleep(0.001)
        dt = Timed.handled_at - t0
        await pilot.pause()
        return dt

    app = Timed(tempfile.mkdtemp(), emulators=True)
    idle, busy = [], []
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # step 1: start a session (Enter in the first field)
        await pilot.press("enter")  # step 2: connect the emulated module
        await app.workers.wait_for_complete()
        await pilot.press("enter")  # Continue to step 3
        app.query_one("#link-budget").value = "400"
        app.query_one("#link-dwell").value = "0.02"
        app.query_one("#link-patience").value = "0"  # the whole budget: still tuning while keys are timed
        await pilot.press("enter")  # confirm the link: journal opened, on to the baseline
        await app.workers.wait_for_complete()
        # steps 4 and 5 have no text field: their number keys are live (as for an FAE outside a field)
        for k in ("5", "4") * 10:
            idle.append(await one_key(app, pilot, k))
        await pilot.press("enter")  # measure the baseline
        await app.workers.wait_for_complete()
        await pilot.press("enter", "enter")  # Continue to Tune, start tuning
        while app.query_one("#pane-tune").evaluations < 2:
            await pilot.pause(0.02)
        for k in ("4", "5") * 10:
            busy.append(await one_key(app, pilot, k))
        assert app.busy == "tune"
        app.ctl.abort()
        await app.workers.wait_for_complete()
    return idle, busy


def main() -> None:
    runs = [(first_screen_s(), bare_textual_s()) for _ in range(3)]  # interleaved: same load for both
    mounted = statistics.median(r[0][1] for r in runs)
    wall = statistics.median(r[0][0] for r in runs)
    bare = statistics.median(r[1] for r in runs)
    print(f"first screen: median of 3 {mounted * 1000:.0f} ms after interpreter start (process wall "
          f"{wall * 1000:.0f} ms); bare Textual app with one Input {bare * 1000:.0f} ms (ratio "
          f"{mounted / bare:.2f}); target <= 1500 ms")
    idle, busy = asyncio.run(key_latency())
    mi, mb = statistics.median(idle), statistics.median(busy)
    print(f"key to action, idle: median {mi * 1000:.1f} ms; while tuning: median {mb * 1000:.1f} ms, "
          f"max {max(busy) * 1000:.1f} ms (ratio tuning/idle {mb / mi:.2f}); target <= 100 ms")


if __name__ == "__main__":
    main()
