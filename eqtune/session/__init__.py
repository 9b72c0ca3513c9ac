"""On-site sessions: journals, live tuning orchestration, profiles, push, reports.

Public API (imported lazily, so ``import eqtune.session`` stays cheap)::

    from eqtune.session import LiveConfig, LiveTuner
    tuner = LiveTuner.create(LiveConfig(module="emu:c2m-10in", lanes=[1]), on_event=print)
    result = tuner.run()                 # or connect()/baseline()/tune()/verify()/decide()/finish()

    from eqtune.session import Profile, push_profile, save_session_profile, write_report
    save_session_profile(result.session, "p.json"); push_profile("p.json", ["i2c:1@0x50"])
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Journal": "eqtune.session.journal",
    "list_sessions": "eqtune.session.journal",
    "read_journal": "eqtune.session.journal",
    "validate_session_id": "eqtune.session.journal",
    "LiveConfig": "eqtune.session.config",
    "LiveEvent": "eqtune.session.config",
    "LiveResult": "eqtune.session.view",
    "LiveTuner": "eqtune.session.live",
    "SessionView": "eqtune.session.view",
    "RECORD_TYPES": "eqtune.session.config",
    "load_session": "eqtune.session.view",
    "session_profile": "eqtune.session.export",
    "save_session_profile": "eqtune.session.export",
    "Profile": "eqtune.session.profile",
    "canonical_json": "eqtune.session.profile",
    "PushReport": "eqtune.session.push",
    "PushResult": "eqtune.session.push",
    "push_profile": "eqtune.session.push",
    "push_to_module": "eqtune.session.push",
    "verify_module": "eqtune.session.push_verify",
    "render_report": "eqtune.session.report",
    "write_report": "eqtune.session.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'eqtune.session' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)
