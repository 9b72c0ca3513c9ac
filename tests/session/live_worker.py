"""Subprocess for the SIGKILL test: ``python live_worker.py SESSIONS start ID`` or ``... resume ID``.

Prints ``ready`` once everything is imported. The kill window is made, not hoped for: with
``EQTUNE_TEST_PAUSE_AT=K`` the worker stops in front of the K-th journal record it would write (0-based,
counted in this process), prints ``paused`` and waits to be killed; with ``EQTUNE_TEST_TORN=1`` it first
writes (and fsyncs) the first half of that record's line, exactly what a crash in the middle of
``Journal.append``'s write leaves. A worker that finishes before its K-th record prints ``status ...`` as
usual. The outcome therefore depends on the seed only, never on the machine's speed or load.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from eqtune.session.live import LiveConfig, LiveTuner

RESOURCE = "emu:c2m-10in?seed=1&settle_ms=0&fast=1&adaptive=0"


def _install_pause(pause_at: int, torn: bool) -> None:
    from eqtune.jsonutil import to_json_value
    from eqtune.session import journal as jmod

    original = jmod.Journal.append
    count = {"n": 0}

    def append(self: Any, type: str, **fields: Any) -> dict[str, Any]:
        if count["n"] == pause_at:
            if torn:  # the first half of the line this append would write, on disk
                rec = {"v": jmod.FORMAT_VERSION, "seq": len(self.records), "t": round(time.time(), 6), "type": type}
                rec.update(to_json_value(fields))
                line = jmod.encode_record(rec)
                os.write(self._fd, line[: len(line) // 2])
                os.fsync(self._fd)
            print("paused", flush=True)
            while True:  # the parent kills us here
                time.sleep(60)
        count["n"] += 1
        return original(self, type, **fields)

    jmod.Journal.append = append  # type: ignore[method-assign]


def main() -> None:
    sessions, action, sid = sys.argv[1:4]
    import skopt.learning  # noqa: F401  - everything slow happens before "ready"

    import eqtune.tune.optimizer  # noqa: F401
    from eqtune.drivers.transport import parse_resource
    from eqtune.emulate.registry import emulator_for

    link = emulator_for(parse_resource(RESOURCE)).link
    assert emulator_for(parse_resource(RESOURCE)).link is link
    for t in range(11):  # warm the emulator's eye-engine cache
        link.quality(1, "module_rx", {"tx_eq": t})
        link.quality(2, "module_rx", {"tx_eq": t})
    pause_at = int(os.environ.get("EQTUNE_TEST_PAUSE_AT", "-1"))
    if pause_at >= 0:
        _install_pause(pause_at, os.environ.get("EQTUNE_TEST_TORN") == "1")
    print("ready", flush=True)
    if action == "start":
        # every kill point must be reachable: the search runs its whole budget (no early "settled" stop)
        cfg = LiveConfig(module=RESOURCE, lanes=[1, 2], dwell_s=0.001, verify_dwell_s=0.002, budget=10, seed=5,
                         settled_stop=False)
        tuner = LiveTuner.create(cfg, sessions_dir=sessions, session_id=sid)
    else:
        tuner = LiveTuner.resume(sid, sessions_dir=sessions)
    result = tuner.run()
    print("status", result.status, flush=True)


if __name__ == "__main__":
    main()
