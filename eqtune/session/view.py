"""Read-back of a session journal: the state a run left behind, derived from its records alone.

:class:`SessionView` (used by resume, the report, profile export, ``eqtune session show`` and the TUI),
:func:`load_session` (read a journal without opening it for writing) and the per-lane and per-session
results (:class:`LaneResult`, :class:`LiveResult`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eqtune.errors import SessionError
from eqtune.serdes.knobs import metric_suffix
from eqtune.session.config import LiveConfig, _fmt_codes
from eqtune.session.integrity import require_intact
from eqtune.session.journal import read_journal, session_path
from eqtune.session.records import check_records


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------
@dataclass
class LaneResult:
    lane: int
    original: dict[str, int]
    baseline_margin: float | None = None
    recommended: dict[str, int] | None = None
    verified_margin: float | None = None
    decision: str | None = None  # keep | restore | None (undecided)
    final: dict[str, int] | None = None
    evaluations: int = 0
    best_observed: float | None = None
    history: list[tuple[dict[str, int], float]] = field(default_factory=list)
    # lanes that ran Tx input adaptive EQ before tuning: True = back on after the decision (the tx_eq
    # in ``final`` is only the dormant fixed code), False = the kept fixed tx_eq replaced it; else None
    tx_adaptive: bool | None = None
    # why the lane's group stopped searching: the rule (target|time|patience|settled|exhausted|budget) and
    # its reason, from the group's last measure record; None while it searches
    stop_rule: str | None = None
    stop: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["history"] = [{"codes": c, "margin": m} for c, m in self.history]
        return d


@dataclass
class LiveResult:
    session: str
    session_dir: str
    status: str
    metric: str
    lanes: dict[int, LaneResult]
    elapsed_s: float = 0.0
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "session_dir": self.session_dir, "status": self.status,
                "metric": self.metric, "elapsed_s": round(self.elapsed_s, 3), "message": self.message,
                "lanes": {str(k): v.to_dict() for k, v in sorted(self.lanes.items())},
                "stops": self.stops()}

    def stops(self) -> list[dict[str, Any]]:
        """Why each lane group stopped searching, one entry per distinct rule and reason (a group's lanes
        share it): {lanes, rule (target|time|patience|settled|exhausted|budget), reason}."""
        out: list[dict[str, Any]] = []
        for ln, r in sorted(self.lanes.items()):
            if not r.stop_rule:
                continue
            for s in out:
                if s["rule"] == r.stop_rule and s["reason"] == r.stop:
                    s["lanes"].append(ln)
                    break
            else:
                out.append({"lanes": [ln], "rule": r.stop_rule, "reason": r.stop or ""})
        return out

    def summary_lines(self) -> list[str]:
        unit = metric_suffix(self.metric)
        out = [f"session {self.session}: {self.status}" + (f" - {self.message}" if self.message else "")]
        for ln, r in sorted(self.lanes.items()):
            b = "?" if r.baseline_margin is None else f"{r.baseline_margin:.3f}"
            v = "?" if r.verified_margin is None else f"{r.verified_margin:.3f}"
            why = f" ({r.stop_rule})" if r.stop_rule else ""
            out.append(f"lane {ln}: baseline {b} -> tuned {v} {unit} after {r.evaluations} evaluations{why}; "
                       f"{r.decision or 'undecided'}; module holds {_fmt_codes(r.final or r.original)}"
                       + (" with Tx input adaptive EQ on" if r.tx_adaptive else ""))
        out.append(f"journal: {Path(self.session_dir) / 'journal.jsonl'}")
        return out


# ---------------------------------------------------------------------------------------------
# journal -> state
# ---------------------------------------------------------------------------------------------
def _lane_map(d: Mapping[str, Any]) -> dict[int, Any]:
    return {int(k): v for k, v in (d or {}).items()}


@dataclass
class SessionView:
    """Everything derived from a journal's records (used by resume, report, profile, show)."""

    records: list[dict[str, Any]]

    @property
    def header(self) -> dict[str, Any]:
        return self.records[0] if self.records else {}

    @property
    def config(self) -> LiveConfig:
        cfg = LiveConfig.from_dict(self.header.get("config") or {"module": ""})
        plan = self.plan()
        if plan and plan.get("metric"):
            cfg.metric = plan["metric"]  # what the run actually measured (e.g. a scope -> eye_height)
        return cfg

    def last(self, type_: str, **match: Any) -> dict[str, Any] | None:
        for r in reversed(self.records):
            if r.get("type") == type_ and all(r.get(k) == v for k, v in match.items()):
                return r
        return None

    def all(self, type_: str, **match: Any) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") == type_ and all(r.get(k) == v for k, v in match.items())]

    def device(self, role: str = "module") -> dict[str, Any] | None:
        for r in self.records:  # the first connection is the identity of record
            if r.get("type") == "device" and r.get("role") == role:
                return r
        return None

    def originals(self) -> dict[int, dict[str, int]] | None:
        r = self.last("original")
        return None if r is None else {k: dict(v) for k, v in _lane_map(r["codes"]).items()}

    def plan(self) -> dict[str, Any] | None:
        return self.last("plan")

    def readings(self, type_: str, group: int | None = None) -> dict[int, dict[str, Any]]:
        """Per-lane reading of the last record of ``type_`` (baseline/verify) for each lane."""
        out: dict[int, dict[str, Any]] = {}
        for r in self.records:
            if r.get("type") == type_ and (group is None or r.get("group") == group):
                out.update(_lane_map(r["lanes"]))
        return out

    def measurements(self, group: int | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") == "measure" and (group is None or r.get("group") == group)]

    def decisions(self) -> dict[int, dict[str, Any]]:
        return {int(r["lane"]): r for r in self.records if r.get("type") == "decision"}

    def status(self) -> str:
        end = self.last("end")
        if end is not None and not any(r.get("type") == "resume" and r["seq"] > end["seq"] for r in self.records):
            return str(end.get("status"))
        return "interrupted" if len(self.records) > 1 else "new"

    def lane_results(self) -> dict[int, LaneResult]:
        cfg = self.config
        orig = self.originals() or {}
        lanes = sorted(orig) or list(cfg.lanes)
        base = self.readings("baseline")
        ver = self.readings("verify")
        dec = self.decisions()
        out: dict[int, LaneResult] = {}
        for ln in lanes:
            r = LaneResult(ln, dict(orig.get(ln, {})))
            if ln in base:
                r.baseline_margin = base[ln]["margin"]
            if ln in ver:
                r.verified_margin = ver[ln]["margin"]
                r.recommended = dict(ver[ln]["codes"])
            for m in self.measurements():
                lr = _lane_map(m["lanes"]).get(ln)
                if lr is not None:
                    r.history.append((dict(lr["codes"]), float(lr["margin"])))
                    if m.get("stop"):
                        r.stop_rule, r.stop = str(m.get("stop_rule") or "other"), str(m["stop"])
            r.evaluations = len(r.history)
            r.best_observed = max((m for _, m in r.history), default=None)
            if ln in dec:
                r.decision = dec[ln]["action"]
                r.final = dict(dec[ln]["codes"])
                if "tx_adaptive" in dec[ln]:
                    r.tx_adaptive = bool(dec[ln]["tx_adaptive"])
            out[ln] = r
        return out


def load_session(session_id: str, sessions_dir: str | os.PathLike[str] | None = None, *,
                 action: str = "use it", trusted_keys: list[Any] | None = None,
                 require_signed: bool = False) -> SessionView:
    """Read a session's journal (tolerating a torn last line) without opening it for writing.

    Everything derived from the view (report, profile, prior, TUI) may trust it: a journal that fails the
    integrity rule (:func:`eqtune.session.integrity.require_intact`) raises SessionError naming the records
    and ``action`` (what was refused, e.g. "write the report")."""
    path = session_path(session_id, sessions_dir) / "journal.jsonl"
    if not path.is_file():
        raise SessionError(f"no session {session_id!r} in {path.parent.parent}: see `eqtune session list`")
    contents = read_journal(path)
    require_intact(contents, path, action, keys=trusted_keys, require_signed=require_signed)
    records = contents.records
    check_records(records, str(path))
    view = SessionView(records)
    if (view.header.get("config") or {}).get("module"):
        view.config.check()  # types and ranges of the journaled configuration (shown in reports)
    return view
