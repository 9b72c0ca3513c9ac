"""Subprocess for the TUI resume test: ``python kill_worker.py SESSIONS ID K``.

Runs a live session and, right after its K-th journaled tuning or verification reading (the event is
emitted after the record is fsync'd), prints ``at K`` and blocks: the parent SIGKILLs it there. The
kill point is therefore exact, whatever the load.
"""

from __future__ import annotations

import sys
import threading

from eqtune.session.live import LiveConfig, LiveTuner

RESOURCE = "emu:c2m-10in?seed=1&settle_ms=0&fast=1&adaptive=0"
BUDGET = 8


def main() -> None:
    sessions, sid, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    seen = [0]
    hold = threading.Event()

    def on_event(ev) -> None:
        if ev.kind in ("evaluation", "verify"):
            seen[0] += 1
            if seen[0] == k:
                print(f"at {k} {ev.kind}", flush=True)
                hold.wait()  # SIGKILL arrives here

    # the kill points are counted on the whole budget: no early stop rule may end the session first
    cfg = LiveConfig(module=RESOURCE, lanes=[1, 2], dwell_s=0.001, verify_dwell_s=0.002, budget=BUDGET, seed=5,
                     settled_stop=False)
    tuner = LiveTuner.create(cfg, sessions_dir=sessions, session_id=sid, on_event=on_event)
    tuner.run()
    print("finished", flush=True)


if __name__ == "__main__":
    main()
