"""The re-tune loop of the watch: what the module holds on a flagged lane, and whether the re-tune the
watch suggested restored it.

* :func:`read_lane_state`: the flagged lane's live state, read from the module (reads only): its
  Active Control Set codes (page 11h), whether its Tx input EQ adapts (page 11h byte 214), the fixed
  Tx input EQ range (page 01h), the Apply procedure eqtune uses there
  (eqtune.drivers.cmis_policy.method_for: traffic up or down, advertised duration), and the fleet
  CSV's profile codes for the lane. :func:`eqtune.watch.actions.suggest` turns it into the action.
* :class:`RetuneVerifier`: for every lane the watch told to re-tune, finds the tuning session that ran
  on that module and lane after the flag (its journal in the sessions folder, passing the journal
  integrity rule), and compares the lane's readings in the polls before the session started with the
  polls after it ended. The verdict (``restored``, ``improved`` = better but still past the warning
  level, ``not restored``) goes to the store and the watch's output as a ``retune_verified`` /
  ``retune_not_restored`` row with both levels, and into the tuning session's journal as a
  ``watch_verify`` record (its report lists it). A lane not restored gets "swap" next.

Thresholds of "better": the detector's smallest step (``step_min_decades`` of pre-FEC BER,
``step_min_db`` of eSNR; eqtune/watch/detect.py), on the median of each side (robust to one noisy
reading). A BER reading of 0 (no error counted in the module's window) is held at 1e-13, as the
detector holds it.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.watch.actions import LaneState

BER_FLOOR = 1e-13


def read_lane_state(module: Any, lane: int, profile: str | None = None) -> LaneState:
    """The lane's live state (reads only). Raises the driver's errors (EqtuneError, OSError)."""
    caps = module.capabilities()
    active = dict(module.active_eq(lane))
    adaptive: bool | None = None
    reader = getattr(module, "tx_adaptive_enabled", None)
    if reader is not None:
        adaptive = bool(reader().get(lane, False))
    trigger, deinit, down, dur = "", False, False, None
    try:
        method = module.apply_method()
        trigger, deinit, down, dur = method.trigger, bool(method.deinit), bool(method.traffic_down), method.max_duration_s
    except Exception:  # noqa: BLE001 - an unsupported module: the re-tune is refused by the driver itself
        pass
    codes = None
    if profile:
        codes = _profile_codes(profile, lane)
    return LaneState(active=active, tx_adaptive=adaptive, tx_eq_max=caps.tx_eq_max, apply_trigger=trigger,
                     apply_deinit=deinit, traffic_down=down, max_duration_s=dur, profile=profile, profile_codes=codes)


def _profile_codes(profile: str, lane: int) -> dict[str, int] | None:
    from eqtune.errors import EqtuneError
    from eqtune.session.profile import Profile

    try:
        prof = Profile.load(profile)
    except (EqtuneError, OSError):
        return None
    codes = prof.lanes.get(lane)
    return dict(codes) if codes else None


# ------------------------------------------------------------------------------ sessions
@dataclass(frozen=True)
class TuningSession:
    """What the watch needs of a finished live tuning session: id, module, lanes (empty: all), start
    and end (Unix s, the journal's own time stamps), and per lane the decision record (action, codes)."""

    id: str
    module: str
    lanes: tuple[int, ...]
    start_t: float
    end_t: float
    status: str
    decisions: dict[int, dict[str, Any]]


def _read_session(sdir: Path) -> TuningSession | None:
    """A finished tuning session from its journal; None when it is not one (no ``end`` record yet, no
    module) or when any record fails the journal integrity rule (nothing derived from such a journal
    is trusted: eqtune.session.integrity)."""
    from eqtune.errors import EqtuneError
    from eqtune.session.journal import JOURNAL_NAME, read_journal

    try:
        contents = read_journal(sdir / JOURNAL_NAME)
    except EqtuneError:
        return None
    if contents.checksums.failing or not contents.records:
        return None
    recs = contents.records
    head = recs[0]
    cfg = head.get("config") or {}
    ends = [r for r in recs if r.get("type") == "end"]
    if head.get("type") != "session" or not cfg.get("module") or not ends:
        return None
    decisions = {int(r["lane"]): r for r in recs if r.get("type") == "decision" and isinstance(r.get("lane"), int)}
    return TuningSession(id=sdir.name, module=str(cfg["module"]), lanes=tuple(int(x) for x in cfg.get("lanes") or []),
                         start_t=float(head.get("t", 0.0)), end_t=float(ends[-1].get("t", 0.0)),
                         status=str(ends[-1].get("status", "")), decisions=decisions)


class SessionIndex:
    """The finished tuning sessions of a sessions folder, re-read only when a journal changes, and the
    folder listed at most every ``min_scan_s`` seconds (a watch at 1 s polls with a lane waiting for its
    re-tune does not stat every journal every second)."""

    def __init__(self, sessions_dir: str | Path | None, *, min_scan_s: float = 2.0) -> None:
        from eqtune.resources import sessions_dir as resolve

        self.root = resolve(sessions_dir)
        self.min_scan_s = float(min_scan_s)
        self._cache: dict[str, tuple[tuple[int, int], TuningSession | None]] = {}
        self._listed: tuple[float, list[TuningSession]] | None = None

    def sessions(self) -> list[TuningSession]:
        import time

        now = time.monotonic()
        if self._listed is not None and now - self._listed[0] < self.min_scan_s:
            return self._listed[1]
        out = self._scan()
        self._listed = (now, out)
        return out

    def _scan(self) -> list[TuningSession]:
        from eqtune.session.journal import JOURNAL_NAME

        out: list[TuningSession] = []
        if not self.root.is_dir():
            return out
        for sdir in sorted(self.root.iterdir()):
            j = sdir / JOURNAL_NAME
            try:
                st = j.stat()
            except OSError:
                continue
            key = (st.st_mtime_ns, st.st_size)
            hit = self._cache.get(sdir.name)
            if hit is None or hit[0] != key:
                hit = (key, _read_session(sdir))
                self._cache[sdir.name] = hit
            if hit[1] is not None:
                out.append(hit[1])
        return out

    def after(self, resource: str, lane: int, since: float) -> TuningSession | None:
        """The first session on ``resource`` that tuned ``lane`` and started at or after ``since``."""
        for s in sorted(self.sessions(), key=lambda x: x.start_t):
            if s.module == resource and s.start_t >= since and lane in s.decisions:
                return s
        return None


# ------------------------------------------------------------------------------ verification
@dataclass
class _Pending:
    resource: str
    lane: int
    flagged_ts: float
    kinds: list[str]
    ber_warning: float
    recent: deque = field(default_factory=lambda: deque(maxlen=32))  # (ts, ber, esnr)
    session: TuningSession | None = None
    after: list[tuple[float, float | None, float | None]] = field(default_factory=list)


def _median(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return float(statistics.median(vals)) if vals else None


def _log_ber(b: float) -> float:
    return math.log10(max(b, BER_FLOOR))


class RetuneVerifier:
    """Follows the lanes the watch told to re-tune until the re-tune is verified (see the module doc).

    ``observe`` every lane poll (cheap for lanes that are not pending), ``verdicts(now)`` once per
    interval: the rows to store and print. ``polls``: readings needed on each side (at least 2);
    ``step_min_decades`` / ``step_min_db``: the smallest change that counts as better."""

    def __init__(self, sessions_dir: str | Path | None, *, polls: int = 3, step_min_decades: float = 0.5,
                 step_min_db: float = 1.0, store_path: str | None = None) -> None:
        self.index = SessionIndex(sessions_dir)
        self.sessions_dir = sessions_dir
        self.polls = max(2, int(polls))
        self.step_min_decades, self.step_min_db = float(step_min_decades), float(step_min_db)
        self.pending: dict[tuple[str, int], _Pending] = {}
        self.store_path = store_path

    def observe(self, resource: str, lane: int, ts: float, ber: float | None, esnr: float | None, *,
                retune_suggested: bool, kinds: list[str], ber_warning: float) -> None:
        key = (resource, lane)
        p = self.pending.get(key)
        if p is None:
            if not retune_suggested:
                return
            p = self.pending[key] = _Pending(resource, lane, ts, sorted(set(kinds)), ber_warning)
        if p.session is None:
            p.recent.append((ts, ber, esnr))
        elif ts > p.session.end_t:
            p.after.append((ts, ber, esnr))

    def verdicts(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for key, p in list(self.pending.items()):
            if p.session is None:
                p.session = self.index.after(p.resource, p.lane, p.flagged_ts)
                if p.session is None:
                    continue
                # readings taken after the session ended, before it was found, count as "after"
                p.after = [r for r in p.recent if r[0] > p.session.end_t]
            if len(p.after) < self.polls:
                continue
            before = [r for r in p.recent if r[0] < p.session.start_t][-self.polls:]
            del self.pending[key]
            if not before:
                continue
            out.append(self._verdict(p, before, p.after[:self.polls]))
        return out

    def _verdict(self, p: _Pending, before: list, after: list) -> dict[str, Any]:
        s = p.session
        assert s is not None
        b_ber, a_ber = _median([r[1] for r in before]), _median([r[1] for r in after])
        b_snr, a_snr = _median([r[2] for r in before]), _median([r[2] for r in after])
        better: list[str] = []
        worse: list[str] = []
        decades = gain = None
        if b_ber is not None and a_ber is not None:
            decades = _log_ber(b_ber) - _log_ber(a_ber)
            if decades >= self.step_min_decades:
                better.append("ber")
            elif decades <= -self.step_min_decades:
                worse.append("ber")
        if b_snr is not None and a_snr is not None:
            gain = a_snr - b_snr
            if gain >= self.step_min_db:
                better.append("esnr")
            elif gain <= -self.step_min_db:
                worse.append("esnr")
        under = a_ber is None or a_ber < p.ber_warning
        if better and not worse:
            verdict = "restored" if under else "improved"
        else:
            verdict = "not restored"
        dec = s.decisions.get(p.lane, {})
        ev = {"verdict": verdict, "session": s.id, "session_decision": dec.get("action"),
              "session_codes": dec.get("codes"), "session_start_ts": s.start_t, "session_end_ts": s.end_t,
              "flagged_ts": p.flagged_ts, "flagged_kinds": p.kinds, "polls": len(after),
              "before_ts": [before[0][0], before[-1][0]], "after_ts": [after[0][0], after[-1][0]],
              "prefec_ber_before": b_ber, "prefec_ber_after": a_ber, "ber_decades_better": decades,
              "esnr_db_before": b_snr, "esnr_db_after": a_snr, "esnr_gain_db": gain,
              "ber_warning": p.ber_warning, "ber_floor": BER_FLOOR}
        self._journal(s.id, p, ev)
        return {"resource": p.resource, "lane": p.lane, "ts": after[-1][0],
                "kind": "retune_verified" if verdict != "not restored" else "retune_not_restored",
                "metric": "log10_prefec_ber" if b_ber is not None else "esnr_db", "evidence": ev}

    def _journal(self, session_id: str, p: _Pending, ev: dict[str, Any]) -> None:
        """The verdict in the tuning session's own journal (its report lists it); skipped when another
        process holds the journal."""
        from eqtune.session.journal import note_closed_session

        note_closed_session(session_id, self.index.root, "watch_verify", resource=p.resource, lane=p.lane,
                            store=self.store_path, **{k: v for k, v in ev.items() if k != "session"})


def verdict_line(row: dict[str, Any]) -> str:
    """One line of a verification row, in the user's units."""
    ev = row["evidence"]

    def ber(x: float | None) -> str:
        if x is None:
            return "n/a"
        return "0 (no error counted)" if x <= 0 else f"{x:.2e}"

    parts = [f"BER {ber(ev['prefec_ber_before'])} -> {ber(ev['prefec_ber_after'])}"]
    if ev.get("esnr_db_before") is not None and ev.get("esnr_db_after") is not None:
        parts.append(f"eSNR {ev['esnr_db_before']:.2f} -> {ev['esnr_db_after']:.2f} dB")
    codes = ev.get("session_codes") or {}
    held = " ".join(f"{k}={v}" for k, v in sorted(codes.items()))
    return (f"{ev['verdict'].upper()} {row['resource']} lane {row['lane']} after tuning session {ev['session']} "
            f"({ev.get('session_decision') or '?'}{': ' + held if held else ''}): " + ", ".join(parts)
            + f" (median of {ev['polls']} polls each side)")
