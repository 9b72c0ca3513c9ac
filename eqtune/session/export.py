"""Profiles from sessions: the codes a finished live tune holds, as a :class:`~eqtune.session.profile.Profile`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from eqtune.serdes.knobs import TX_EQ, metric_label
from eqtune.session.journal import note_closed_session
from eqtune.session.view import load_session


def session_profile(session_id: str, sessions_dir: str | os.PathLike[str] | None = None, *,
                    pin_serial: bool = False, lanes: str = "decided", trusted_keys: list[Any] | None = None,
                    require_signed: bool = False):
    """Build a :class:`~eqtune.session.profile.Profile` from a session journal.

    ``lanes="decided"``: the codes each lane holds after the keep/restore decision (needs a finished
    tune). ``"tuned"``: the verified recommendation of every lane regardless of the decision.
    A journal that fails the integrity rule is refused (:func:`~eqtune.session.view.load_session`).
    """
    from eqtune.errors import ProfileError
    from eqtune.session.profile import Profile

    view = load_session(session_id, sessions_dir, action="save a profile from it", trusted_keys=trusted_keys,
                        require_signed=require_signed)
    dev = view.device("module")
    if dev is None:
        raise ProfileError(f"session {session_id} never connected to a module; there is nothing to save")
    results = view.lane_results()
    decisions = view.decisions()
    codes: dict[int, dict[str, int]] = {}
    margins: dict[int, dict[str, Any]] = {}
    # each lane's Tx input EQ mode at the end: adaptive back on (restore), or off with a fixed tx_eq
    tx_adaptive: dict[int, bool] = {}
    for ln, r in results.items():
        if lanes == "decided":
            if r.decision is None:
                raise ProfileError(f"session {session_id} lane {ln} has no keep/restore decision yet: resume it "
                                   f"(`eqtune session resume {session_id}`) before saving a profile")
            codes[ln] = dict(r.final or r.original)
            mode = decisions.get(ln, {}).get("tx_adaptive")
            if mode is not None:
                tx_adaptive[ln] = bool(mode)
            elif TX_EQ in codes[ln]:
                tx_adaptive[ln] = False  # a fixed tx_eq: adaptive EQ is off once it is written
            if decisions.get(ln, {}).get("tx_adaptive"):
                # the lane went back to Tx input adaptive EQ: a fixed tx_eq in the profile would switch it
                # off on every module the profile is pushed to, so the profile leaves tx_eq alone
                codes[ln].pop(TX_EQ, None)
                if not codes[ln]:
                    del codes[ln]
                    continue
        else:
            if r.recommended is None:
                raise ProfileError(f"session {session_id} lane {ln} has no verified recommendation yet")
            codes[ln] = dict(r.recommended)
        margins[ln] = {"metric": metric_label(view.config.metric), "baseline": r.baseline_margin, "tuned": r.verified_margin,
            "decision": r.decision}
    if not codes:
        raise ProfileError(f"session {session_id}: every lane went back to the module's Tx input adaptive EQ "
                           "and no other code was tuned; there is nothing to save in a profile")
    cfg = view.config
    return Profile.from_identity(dev["identity"], codes, pin_serial=pin_serial, channel=cfg.channel,
                                 link=dict(view.header.get("metadata") or {}), margins=margins, session=session_id,
                                 tx_adaptive=tx_adaptive if lanes == "decided" else {})


def save_session_profile(session_id: str, out: str | os.PathLike[str],
                         sessions_dir: str | os.PathLike[str] | None = None, **kw: Any) -> Path:
    """Save the session's profile to ``out`` and journal it (when the session is not open elsewhere)."""
    prof = session_profile(session_id, sessions_dir, **kw)
    path = prof.save(out)
    note_closed_session(session_id, sessions_dir, "profile", path=str(Path(path).resolve()), digest=prof.digest)
    return path
