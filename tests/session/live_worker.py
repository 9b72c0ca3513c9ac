"""Subprocess for the SIGKILL test: ``python live_worker.py SESSIONS start ID`` or ``... resume ID``.

Prints ``ready`` once everything is imported (the parent then kills it at a random moment).
"""

from __future__ import annotations

import sys

from eqtune.session.live import LiveConfig, LiveTuner

RESOURCE = "emu:c2m-10in?seed=1&settle_ms=0&fast=1&adaptive=0"


def main() -> None:
    sessions, action, sid = sys.argv[1:4]
    import skopt.learning  # noqa: F401  - everything slow happens before "ready"

    import eqtune.tune.optimizer  # noqa: F401
    from eqtune.drivers.transport import parse_resource
    from eqtune.emulate.module import emulator_for

    link = emulator_for(parse_resource(RESOURCE)).link
    assert emulator_for(parse_resource(RESOURCE)).link is link
    for t in range(11):  # warm the emulator's eye-engine cache
        link.quality(1, "module_rx", {"tx_eq": t})
        link.quality(2, "module_rx", {"tx_eq": t})
    print("ready", flush=True)
    if action == "start":
        cfg = LiveConfig(module=RESOURCE, lanes=[1, 2], dwell_s=0.001, verify_dwell_s=0.002, budget=10, seed=5)
        tuner = LiveTuner.create(cfg, sessions_dir=sessions, session_id=sid)
    else:
        tuner = LiveTuner.resume(sid, sessions_dir=sessions)
    result = tuner.run()
    print("status", result.status, flush=True)


if __name__ == "__main__":
    main()
