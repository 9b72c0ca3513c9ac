"""Consent before a write that takes traffic down, and the journal of every outage.

On a module whose Apply procedure re-initializes the data path (``ApplyMethod.traffic_down`` from the
CMIS driver's apply policy, eqtune/drivers/cmis_policy.py: SteppedConfigOnly 1 + AutoCommissioning 01b,
or a requested ApplyDPInit), every write of EQ codes stops the traffic of the lanes' data path for up to
the module's advertised MaxDurationDPInit (page 01h byte 144; CMIS 5.2 s8.4.2 / Table 8-31). On a
customer's live link that is an outage per write, so nothing is written before the operator says yes:

* :func:`traffic_down_notice` says, before the first write and reading only, which lanes go down, how
  many outages a live session is expected to cause (one per write: the baseline, every evaluation, the
  verification, the decision), their advertised length, and which lanes carry no traffic now (data path
  not DPActivated, CMIS 5.2 s6.3.3: only DPActivated carries traffic);
* the operator answers with one of :data:`CHOICES` (a maintenance window: tune; tune only the lanes
  whose link is already down; stop), or a non-interactive run passes ``--allow-traffic-down``;
* every outage the driver announces (its ``notify`` hook, called just before each traffic-down apply)
  is journaled as an ``outage`` record, listed by the report and the push dialog.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from eqtune.errors import EqtuneError, InputError

TUNE = "tune"
DOWN_ONLY = "down-only"
STOP = "stop"
CHOICES = (TUNE, DOWN_ONLY, STOP)
CHOICE_TEXT = {TUNE: "tune: I am in a maintenance window, the outages are accepted",
               DOWN_ONLY: "tune only the lanes whose link is down now (their traffic is already stopped)",
               STOP: "stop: write nothing"}
#: the flag a non-interactive run gives to accept the outages
FLAG = "--allow-traffic-down"


class TrafficDownRefused(InputError):
    """No consent for a traffic-down write: nothing was written (CLI exit 2)."""


@dataclass(frozen=True)
class TrafficDownNotice:
    """What a traffic-down session will do to the link, known before the first write.

    ``lanes``: the lanes to tune (each write also takes down every other lane of their data path).
    ``outages``: the expected number of writes, each one outage (an upper bound: a write of codes the
    module already holds is skipped). ``advertised_s``: MaxDurationDPInit of page 01h byte 144 (None:
    reserved code); ``wait_s``: how long eqtune waits for the data path at most. ``down_lanes``: of
    ``lanes``, those whose data path is not DPActivated now (None: the module cannot tell).
    """

    module: str
    trigger: str
    deinit: bool
    reason: str
    lanes: list[int]
    outages: int
    advertised_s: float | None
    wait_s: float
    down_lanes: list[int] | None = None
    what: str = "live tuning"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def length_text(self) -> str:
        adv = "not advertised (reserved code)" if self.advertised_s is None else f"up to {self.advertised_s:g} s"
        return f"{adv} each (page 01h byte 144 MaxDurationDPInit; eqtune waits at most {self.wait_s:g} s)"

    def lines(self) -> list[str]:
        """The confirmation text: lanes, number of outages, their advertised length, the choices."""
        lanes = ",".join(map(str, self.lanes))
        down = ("unknown (the module does not report its data path state)" if self.down_lanes is None
                else (",".join(map(str, self.down_lanes)) or "none"))
        return [f"TRAFFIC GOES DOWN: {self.module} applies codes with {self.trigger}"
                f"{' after DPDeinit' if self.deinit else ''}.",
                f"{self.what} on lane(s) {lanes} (and every lane sharing their data path) takes traffic down "
                f"about {self.outages} time(s), {self.length_text()}.",
                f"lanes whose link is down now: {down}.",
                f"why: {self.reason}"]

    def text(self) -> str:
        return "\n".join(self.lines())


def expected_outages(groups: int, budget: int, remeasure: int = 0) -> int:
    """Writes of a live session, each one outage on a traffic-down module: per lane group the baseline,
    ``budget`` evaluations (the re-measurements are among them), the verification and the decision."""
    del remeasure  # counted inside the budget (LiveConfig.remeasure_top_k < budget)
    return max(0, int(groups)) * (int(budget) + 3)


def down_lanes(module: Any, lanes: list[int]) -> list[int] | None:
    """Of ``lanes``, those whose data path is not DPActivated (no traffic to lose); None when the module
    does not report DPState (reads only; CMIS 5.2 s6.3.3, page 11h bytes 128-131)."""
    states_of = getattr(module, "dp_states", None)
    if states_of is None:
        return None
    try:
        states = states_of()
    except (EqtuneError, OSError):
        return None
    return [ln for ln in lanes if states.get(ln) not in (None, "DPActivated")]


def traffic_down_notice(module: Any, lanes: list[int], *, outages: int, what: str = "live tuning") -> TrafficDownNotice | None:
    """The notice for writing ``lanes`` of ``module`` ``outages`` times; None when writes keep traffic up
    (or the module has no CMIS apply policy, as test fakes). Reads only."""
    method_of = getattr(module, "apply_method", None)
    if method_of is None:
        return None
    try:
        method = method_of()
    except EqtuneError:
        return None  # unsupported: the first write is refused by the driver itself
    if not method.traffic_down:
        return None
    caps = module.capabilities()
    adv = getattr(caps, "dp_init_max_s", None)
    # the driver's bound on the data-path wait: twice the advertised time, at least FBOSS's 10 s
    # (eqtune.drivers.cmis_policy.CmisTiming.dp_timeout_s)
    wait = max(10.0, 2.0 * (adv or 0.0))
    return TrafficDownNotice(module=str(getattr(module, "resource", "")), trigger=method.trigger,
                             deinit=bool(method.deinit), reason=method.reason, lanes=sorted(lanes),
                             outages=int(outages), advertised_s=adv, wait_s=wait,
                             down_lanes=down_lanes(module, sorted(lanes)), what=what)


_LANES_RE = re.compile(r"lane\(s\) ([0-9][0-9,]*)")


@dataclass
class OutageLog:
    """Collects the outages the driver announces (its ``notify`` hook) while installed on a module.

    ``record(entry)`` is called for each (e.g. to journal it); :meth:`uninstall` puts the module's
    previous hook back."""

    module: Any
    record: Callable[[dict[str, Any]], None] | None = None
    phase: str = ""
    entries: list[dict[str, Any]] = field(default_factory=list)
    _previous: Any = None
    _installed: bool = False

    def install(self) -> OutageLog:
        if hasattr(self.module, "notify") and not self._installed:
            self._previous = self.module.notify
            self.module.notify = self._notify
            self._installed = True
        return self

    def uninstall(self) -> None:
        if self._installed:
            self.module.notify = self._previous
            self._installed = False

    def _notify(self, message: str) -> None:
        m = _LANES_RE.search(message)
        entry = {"at": round(time.time(), 3), "phase": self.phase, "message": message,
                 "lanes": [int(x) for x in m.group(1).split(",") if x] if m else []}
        self.entries.append(entry)
        if self.record is not None:
            self.record(entry)
        if callable(self._previous):
            try:
                self._previous(message)
            except Exception:
                pass
