"""An earlier session's measurements as the prior of a new live tune (``--prior-session``).

The modules of one platform share most of their channel (the same host board, connector and module
part), so the next module starts from what the last one measured: every (codes, margin) observation
of an earlier session becomes the prior mean of the first lane group's GP (eqtune.tune.transfer: the
GP models only the residual; the first code measured is the prior's best). Lane groups after the first
keep learning from the earlier groups of their own module (``_set_prior_from_earlier_groups``).

``--prior-session ID`` names the session; ``--prior-session auto`` picks the most recently completed
session (status ``done``) on the same module vendor and part number, with the same host profile (the
library channel the link corresponds to, ``LiveConfig.channel``), the same metric and the same tuned
knobs over the same codes. The choice, or that none matched, and the observations themselves are
journaled in the ``plan`` record (:meth:`PriorSession.to_record`): a resumed session rebuilds the same
prior even if the earlier journal has moved or newer sessions exist.

A prior from a different knob space (other knobs, or codes the module does not allow) is refused with
one line saying what differs; margins of another metric are on another scale and are refused too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eqtune.errors import SessionError
from eqtune.session.journal import list_sessions
from eqtune.session.view import SessionView, _lane_map, load_session

AUTO = "auto"


@dataclass(frozen=True)
class PriorSession:
    """The resolved prior: which session, how it was chosen, and its observations.

    ``session`` is ``None`` when ``auto`` found no matching session (``reason`` says why).
    ``codes[i]`` are the values of ``knobs`` at observation ``i`` (module codes), ``margins[i]`` its
    margin in the session's metric (``-log10 BER``, Q dB or eye height mV).
    """

    session: str | None
    how: str  # "given" (an id) or "auto"
    knobs: tuple[str, ...] = ()
    codes: tuple[tuple[int, ...], ...] = ()
    margins: tuple[float, ...] = ()
    identity: dict[str, str] = field(default_factory=dict)  # vendor, pn, sn of the earlier module
    reason: str = ""

    def observations(self) -> list[tuple[dict[str, float], float]]:
        """``[(codes, margin), ...]`` as ``GPOptimizer.set_prior`` takes them."""
        return [({k: float(v) for k, v in zip(self.knobs, c)}, float(m)) for c, m in zip(self.codes, self.margins)]

    def describe(self) -> str:
        """One line for the FAE: which session the prior came from, or why there is none."""
        if self.session is None:
            return f"prior session: none ({self.reason})"
        who = " ".join(str(self.identity.get(k, "")) for k in ("vendor", "pn")).strip()
        sn = self.identity.get("sn")
        return (f"prior session: {self.session}" + (" (chosen automatically)" if self.how == AUTO else "")
                + f": {len(self.margins)} measurements of {', '.join(self.knobs)} on {who or 'a module'}"
                + (f" SN {sn}" if sn else "") + " as the first lane group's prior mean")

    def to_record(self) -> dict[str, Any]:
        """Plain JSON for the ``plan`` record."""
        return {"session": self.session, "how": self.how, "knobs": list(self.knobs),
                "codes": [list(c) for c in self.codes], "margins": list(self.margins),
                "identity": dict(self.identity), "reason": self.reason}

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> PriorSession:
        return cls(session=rec.get("session"), how=str(rec.get("how", "given")),
                   knobs=tuple(str(k) for k in rec.get("knobs") or ()),
                   codes=tuple(tuple(int(v) for v in c) for c in rec.get("codes") or ()),
                   margins=tuple(float(m) for m in rec.get("margins") or ()),
                   identity={str(k): str(v) for k, v in (rec.get("identity") or {}).items()},
                   reason=str(rec.get("reason", "")))


def _identity(view: SessionView) -> dict[str, str]:
    dev = view.device("module") or {}
    ident = dev.get("identity") or {}
    return {k: str(ident.get(k, "")) for k in ("vendor", "pn", "sn")}


def _allowed(view: SessionView, knobs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    caps = (view.device("module") or {}).get("capabilities") or {}
    vals = caps.get("knob_values") or {}
    return {k: tuple(int(v) for v in vals.get(k, ())) for k in knobs}


def space_mismatch(view: SessionView, knobs: Sequence[str], allowed: Mapping[str, Sequence[int]],
                   metric: str) -> str:
    """Why session ``view`` cannot be this session's prior ('' when it can): other tuned knobs, other
    allowed codes for them (the module's capabilities, page 01h), another metric, or no measurements."""
    plan = view.plan() or {}
    theirs = [str(k) for k in plan.get("knobs") or ()]
    if sorted(theirs) != sorted(knobs):
        return f"it tuned {','.join(theirs) or 'nothing'}, this session tunes {','.join(knobs)}"
    their_codes = _allowed(view, knobs)
    for k in knobs:
        mine = tuple(int(v) for v in allowed.get(k, ()))
        if their_codes.get(k) and their_codes[k] != mine:
            return (f"its module allows {k} {min(their_codes[k])}..{max(their_codes[k])}, this one "
                    f"{min(mine)}..{max(mine)}" if mine else f"its module allows {k}, this one does not")
    their_metric = str(plan.get("metric") or view.config.metric)
    if their_metric != metric:
        return f"it measured {their_metric}, this session measures {metric} (margins on another scale)"
    if not view.measurements():
        return "it has no measurements"
    return ""


def load_prior_view(spec: str, sessions_dir: str | os.PathLike[str] | None) -> SessionView:
    """The journal of session ``spec``, errors prefixed with the option that named it."""
    try:
        return load_session(spec, sessions_dir)
    except SessionError as exc:
        raise SessionError(f"--prior-session {spec}: {exc}") from None


def prior_from_view(view: SessionView, session_id: str, knobs: Sequence[str], how: str) -> PriorSession:
    """Every measured (codes, margin) of the session, every lane pooled, in journal order."""
    codes: list[tuple[int, ...]] = []
    margins: list[float] = []
    for m in view.measurements():
        for r in _lane_map(m["lanes"]).values():
            codes.append(tuple(int(r["codes"][k]) for k in knobs))
            margins.append(float(r["margin"]))
    return PriorSession(session_id, how, tuple(knobs), tuple(codes), tuple(margins), _identity(view))


def resolve_prior(spec: str, *, sessions_dir: str | os.PathLike[str] | None, current: str,
                  identity: Mapping[str, Any], channel: str | None, knobs: Sequence[str],
                  allowed: Mapping[str, Sequence[int]], metric: str) -> PriorSession:
    """``--prior-session`` ``spec`` (a session id or ``auto``) -> the prior (before any write).

    A given id that does not exist, has no measurements or has another knob space raises
    :class:`~eqtune.errors.SessionError` (one line); ``auto`` returns ``PriorSession(None, ...)`` with
    the reason when no earlier session matches.
    """
    if spec != AUTO:
        if spec == current:
            raise SessionError(f"--prior-session {spec}: that is this session; name an earlier one")
        view = load_prior_view(spec, sessions_dir)
        why = space_mismatch(view, knobs, allowed, metric)
        if why:
            raise SessionError(f"--prior-session {spec}: {why}; a prior needs the same knobs, codes and metric: "
                               "pick another session or drop --prior-session")
        return prior_from_view(view, spec, knobs, "given")
    want = (str(identity.get("vendor", "")), str(identity.get("pn", "")))
    best: tuple[float, str, SessionView] | None = None
    seen = 0
    for info in list_sessions(sessions_dir):
        if info.id == current or info.status != "done" or not info.measurements:
            continue
        try:
            view = load_session(info.id, sessions_dir)
        except SessionError:  # a damaged journal is no prior
            continue
        ident = _identity(view)
        if (ident["vendor"], ident["pn"]) != want or (view.config.channel or None) != (channel or None):
            continue
        seen += 1
        if space_mismatch(view, knobs, allowed, metric):
            continue
        end = view.last("end") or {}
        key = (float(end.get("t") or 0.0), info.id)
        if best is None or key > best[:2]:
            best = (key[0], key[1], view)
    if best is None:
        host = f"host profile {channel}" if channel else "no host profile (no CHANNEL given)"
        what = f"{want[0]} {want[1]}".strip() or "this module"
        reason = (f"no completed session on {what} with {host}"
                  + (f" ({seen} on that module and host tuned other knobs, codes or metric)" if seen else ""))
        return PriorSession(None, AUTO, tuple(knobs), reason=reason)
    return prior_from_view(best[2], best[1], knobs, AUTO)
