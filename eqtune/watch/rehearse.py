"""A rehearsal: the watch polls a scenario's emulated fleet (eqtune.emulate.scenario) on a simulated
clock, as it polls hardware (the CMIS driver over each module's registers, the store and the
detector as in production), and the report says what it flagged and when, against what was planted.

Nothing sleeps: after each interval the scenario clock moves by the interval, so six hours at
SONiC's 60 s cadence take as long as 360 polls of the emulated modules take.

Expectations, per planted fault (the issue a fleet operator meets):

* ``step``: flagged as a step within ``step_polls`` polls of the first poll after the flap, and still
  flagged at the end of the run;
* ``thermal``: flagged as thermal before the end of the module's first temperature swing that starts
  after the detector is armed (its warm-up); the time shown is that of the first thermal finding;
* ``noisy`` and ``marginal``: never flagged; nor any lane without a fault.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eqtune.emulate.scenario import EPOCH_S, Scenario, ScenarioFleet, build_fleet
from eqtune.watch.detect import DetectConfig
from eqtune.watch.poller import IntervalReport, Watcher
from eqtune.watch.targets import WatchTarget

EXPECT_FLAG = ("step", "thermal")


@dataclass
class LaneOutcome:
    """What the watch did about one lane: ``first_s`` (scenario seconds of its first finding),
    ``kinds`` (every finding kind raised), ``held_at_end``; for a planted fault also ``fault`` (its
    description), ``deadline_s`` (when it had to be flagged), ``polls_after`` (step: polls from the
    first poll after the flap to the flag) and ``met``."""

    module: int
    lane: int
    fault_kind: str | None
    fault: str = ""
    first_s: float | None = None
    kinds: list[str] = field(default_factory=list)
    held_at_end: bool = False
    deadline_s: float | None = None
    polls_after: int | None = None
    met: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RehearsalReport:
    scenario: str
    interval_s: float
    polls: int
    lanes: int
    planted: list[LaneOutcome]
    unexpected: list[LaneOutcome]
    notes: list[str]
    poll_cpu_s: float

    @property
    def ok(self) -> bool:
        return all(o.met for o in self.planted) and not self.unexpected

    def lines(self) -> list[str]:
        out = [f"rehearsal {self.scenario}: {self.polls} polls every {self.interval_s:g} s "
               f"({self.polls * self.interval_s / 3600:.1f} h simulated), {self.lanes} lanes"]
        for o in self.planted:
            when = ("never" if o.first_s is None else f"at t={o.first_s:.0f} s") + (f" ({'/'.join(o.kinds)})" if o.kinds else "")
            if o.fault_kind == "thermal" and o.first_s is None and o.kinds:
                when = f"not as thermal ({'/'.join(o.kinds)})"
            need = ("must never be flagged" if o.fault_kind not in EXPECT_FLAG else
                    f"due by t={o.deadline_s:.0f} s" if o.deadline_s is not None else "due")
            extra = f", {o.polls_after} poll(s) after the flap" if o.polls_after is not None else ""
            held = ", still flagged at the end" if o.held_at_end else ""
            out.append(f"  {'ok  ' if o.met else 'MISS'} module {o.module} lane {o.lane} {o.fault}: flagged {when}"
                       f"{extra}{held}; {need}")
        if self.unexpected:
            for o in self.unexpected:
                out.append(f"  FALSE module {o.module} lane {o.lane} (no fault): flagged at t={o.first_s:.0f} s "
                           f"({'/'.join(o.kinds)})")
        else:
            out.append("  no lane without a fault was flagged")
        out += [f"  note: {n}" for n in self.notes]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "interval_s": self.interval_s, "polls": self.polls, "lanes": self.lanes,
                "ok": self.ok, "planted": [o.to_dict() for o in self.planted],
                "unexpected": [o.to_dict() for o in self.unexpected], "notes": self.notes}


def targets_of(fleet: ScenarioFleet) -> list[WatchTarget]:
    return [WatchTarget(res, None, fleet.scenario.channel, labels=dict(lab))
            for res, lab in zip(fleet.resources, fleet.labels, strict=True)]


def rehearse(sc: Scenario, *, interval_s: float = 60.0, duration_s: float | None = None, polls: int | None = None,
             cfg: DetectConfig | None = None, store: Any = None, step_polls: int = 2,
             on_interval: Callable[[IntervalReport], None] | None = None, workers: int = 1) -> RehearsalReport:
    """Run the watch over scenario ``sc`` for ``polls`` intervals (or ``duration_s`` simulated seconds;
    default: 4 h) every ``interval_s`` simulated seconds and judge the outcome (module docstring)."""
    import time

    fleet = build_fleet(sc)
    if polls is None:
        polls = max(1, int(round((duration_s if duration_s is not None else 4 * 3600.0) / interval_s)))
    first: dict[tuple[int, int], float] = {}
    kinds: dict[tuple[int, int], list[str]] = {}
    first_thermal: dict[tuple[int, int], float] = {}
    slot = {res: i + 1 for i, res in enumerate(fleet.resources)}

    def seen(rep: IntervalReport) -> None:
        for f in rep.new_flags:
            if f["kind"] == "improved":
                continue
            key = (slot[f["resource"]], int(f["lane"]))
            first.setdefault(key, rep.ts - EPOCH_S)
            if f["kind"] == "thermal":
                first_thermal.setdefault(key, rep.ts - EPOCH_S)
            if f["kind"] not in kinds.setdefault(key, []):
                kinds[key].append(f["kind"])
        if on_interval is not None:
            on_interval(rep)

    w = Watcher(targets_of(fleet), interval_s=interval_s, store=store, cfg=cfg, on_interval=seen,
                opener=fleet.opener, clock=fleet.clock.unix, workers=workers)
    t0 = time.process_time()
    try:
        w.run(count=polls, advance=fleet.clock.advance)
    finally:
        fleet.stop()
    cpu = time.process_time() - t0
    det = w.detector
    assert det is not None
    end_s = (polls - 1) * interval_s
    active = {(slot[r], ln) for r, ln, _ in w.active}
    armed_s = det.warm_n * interval_s
    planted: list[LaneOutcome] = []
    for f in sc.faults:
        key = (f.module, f.lane)
        o = LaneOutcome(f.module, f.lane, f.kind, f.describe(), first.get(key), kinds.get(key, []),
                        key in active)
        if f.kind == "step":
            first_poll = math.ceil((f.at_s + f.flap_s) / interval_s - 1e-9) * interval_s
            o.deadline_s = first_poll + (step_polls - 1) * interval_s
            stepped = "step" in o.kinds
            if o.first_s is not None and stepped:
                o.polls_after = int(round((o.first_s - first_poll) / interval_s)) + 1
            o.met = stepped and o.first_s is not None and o.first_s <= o.deadline_s and o.held_at_end
            if first_poll > end_s:
                o.met, o.deadline_s = False, None
        elif f.kind == "thermal":
            swings = [s for s in sc.swings(f.module, end_s) if s[0] >= armed_s]
            o.deadline_s = swings[0][1] if swings else None
            # flagged as thermal (a step that comes and goes with the swing is the wrong diagnosis)
            o.first_s = first_thermal.get(key)
            o.met = o.deadline_s is not None and o.first_s is not None and o.first_s <= o.deadline_s
        else:
            o.met = o.first_s is None
        planted.append(o)
    faulted = {(f.module, f.lane) for f in sc.faults}
    unexpected = [LaneOutcome(m, ln, None, "", t, kinds.get((m, ln), []), (m, ln) in active)
                  for (m, ln), t in sorted(first.items()) if (m, ln) not in faulted]
    notes = list(w.notes)
    if any(o.fault_kind == "thermal" and o.deadline_s is None for o in planted):
        notes.append("a thermal fault's module had no swing after the warm-up within the run: run longer")
    return RehearsalReport(sc.name, interval_s, polls, sc.modules * sc.lanes, planted, unexpected, notes, cpu)
