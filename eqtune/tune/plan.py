"""How a tune will spend its measurements, decided and announced before the first one.

* ``choose_sim_search``: in simulation, measure the whole feasible grid in one vectorized batch when
  that costs no more wall time than the budgeted GP run, else run the GP. The grid's cost is timed on a
  probe batch of the grid itself; the GP run's cost is ``budget`` single evaluations plus the
  optimizer's own time per step (ask + tell, ``GP_STEP_S``, measured in benchmarks/bench_tune.py). Each
  probe is timed more than once and the fastest kept (``PROBE_REPEATS``: the run least disturbed by
  the machine's other work, the convention of Python's ``timeit``). A budget below the GP's initial
  design cannot run the GP at all: the grid is then compared with the GP's smallest run (its initial
  design), not with a run that cannot happen.
* ``live_plan``: for a live session, the knobs, the number of feasible codes, how the GP will use its
  budget (every code once plus the close contenders re-measured when the space is no larger than the
  budget, see ``GPOptimizer.exhaustive``) and the expected time, from the dwell and the number of lane
  groups. Shown by ``eqtune tune --live`` and sent to the TUI as a ``plan`` event before the first write.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eqtune.serdes.knobs import KnobSpace
    from eqtune.tune.source import MarginSource
    from eqtune.tune.space import IndexedSpace

#: the GP's own time per step (ask + tell) in seconds, the mean at 50-70 observations on 5 knobs in
#: benchmarks/bench_tune.py (docs/tuning.md); used only to compare the two ways of spending a --sim run
GP_STEP_S = 0.06
#: a probe batch this large (consecutive grid rows, as the grid run measures them) times the vectorized
#: engine per point; one more point times a single evaluation
PROBE_POINTS = 256
#: tune()'s own bookkeeping per measured point in a grid run (s): a 21,760-point run spent ~9 s of 25 s
#: outside the engine under cProfile, ~0.2 ms a point without it
LOOP_S = 2e-4
#: the GP's stage-A screen of every code (eqtune.tune.screen) per feasible code (s): 8-9 s for the
#: 383,180 codes of a 6-knob TX FFE x CTLE space, 0.1-0.3 s for 21,760 5-knob codes (benchmarks/bench_tune.py)
SCREEN_S_PER_CODE = 2.5e-5
#: timings per probe: the fastest is kept (the timeit convention: the others measure the machine's load)
PROBE_REPEATS = 3


@dataclass(frozen=True)
class SimSearch:
    """The search a ``--sim`` run uses and why (seconds are estimates from a timed probe)."""

    mode: str  # "exhaustive" | "gp"
    feasible: int | None  # feasible codes (None: too many to enumerate)
    budget: int
    grid_s: float | None  # the whole grid in one batch (s)
    gp_s: float  # the budgeted GP run (s)
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def choose_sim_search(source: MarginSource, budget: int, ispace: IndexedSpace | None = None) -> SimSearch:
    """Exhaustive batch when the feasible grid costs no more than ``budget`` sequential GP steps.

    ``source``: a ``SimulationSource`` (``measure_batch``); ``ispace``: its ``IndexedSpace`` (built when
    None). The probe measures ``PROBE_POINTS`` grid points in one batch and one point alone, each
    ``PROBE_REPEATS`` times, fastest kept; the estimates are still as noisy as the machine's load. A
    ``budget`` below the GP's initial design (``optimizer.default_n_initial``) is compared as that
    design's size: the GP's smallest run (when it wins, ``tune()`` refuses the budget in one line)."""
    from eqtune.tune.optimizer import default_n_initial
    from eqtune.tune.space import IndexedSpace

    isp = ispace if ispace is not None else IndexedSpace(source.space)
    nf = isp.n_feasible
    if nf is None or not hasattr(source, "measure_batch"):
        return SimSearch("gp", nf, budget, None, float("nan"),
                         "the space is too large to enumerate" if nf is None else "the source has no batch mode")
    mid = max(0, nf // 2 - PROBE_POINTS // 2)
    grid = isp.grid
    assert grid is not None  # n_feasible is known, so the grid is enumerated
    rows = grid[mid: mid + PROBE_POINTS]
    pts = [isp.point(r) for r in rows]
    per_batch = single = float("inf")
    for i in range(PROBE_REPEATS):
        t0 = time.perf_counter()
        source.measure_batch(pts)
        per_batch = min(per_batch, (time.perf_counter() - t0) / len(pts))
        t0 = time.perf_counter()
        source.measure(pts[i % len(pts)])
        single = min(single, time.perf_counter() - t0)
    grid_s = (per_batch + LOOP_S) * nf
    smallest = default_n_initial(isp.d)
    steps = max(int(budget), smallest)  # below the initial design the GP cannot run: its smallest run
    gp_s = steps * (single + GP_STEP_S)
    if getattr(source, "screens", False):  # the GP screens every code first (SimulationSource.screens)
        gp_s += nf * SCREEN_S_PER_CODE
    if grid_s <= gp_s:
        gp_text = (f"{budget} GP steps" if steps == budget else
                   f"the GP's smallest run ({steps} steps: --budget {budget} is below its initial design)")
        why = f"the whole grid ({nf} codes, ~{grid_s:.1f} s in one batch) costs no more than {gp_text} (~{gp_s:.1f} s)"
        return SimSearch("exhaustive", nf, budget, grid_s, gp_s, why)
    why = (f"{steps} GP steps (~{gp_s:.1f} s) cost less than the whole grid ({nf} codes, ~{grid_s:.1f} s); "
           f"for the exact optimum: --optimizer grid --budget {nf}")
    return SimSearch("gp", nf, budget, grid_s, gp_s, why)


@dataclass(frozen=True)
class LivePlan:
    """What a live session will do, announced before the first write."""

    knobs: list[str]
    space_size: int  # codes in the box
    feasible: int | None  # feasible codes (None: too many to enumerate)
    groups: int  # lane groups tuned one after the other
    budget: int  # evaluations per lane group
    mode: str  # "exhaustive" (every code once, then the close contenders) | "gp"
    evaluations: int  # expected evaluations per lane group
    dwell_s: float
    expected_s: float  # all groups, evaluations only (baseline and verify dwells included)
    screen_dwell_s: float | None = None  # search measurements' dwell when screening (s)
    closing: int = 0  # evaluations per group at the full dwell after a screened search

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _screen_text(self) -> str:
        if not self.screen_dwell_s:
            return ""
        return f", search screens at {dwell_text(self.screen_dwell_s)}, the last {self.closing} at the full dwell"

    def text(self) -> str:
        space = f"{self.feasible} feasible codes" if self.feasible is not None else f"{self.space_size} codes"
        how = (f"exhaustive: every code once, then the close contenders re-measured (up to {self.budget})"
               if self.mode == "exhaustive" else f"Bayesian search, up to {self.budget} evaluations")
        dwells = f"{self.groups} dwell{'s' if self.groups != 1 else ''} to measure every lane once"
        return (f"plan: knobs {', '.join(self.knobs)}; {space}; {how} per lane group x {self.groups} ({dwells}); "
                f"at most {_duration(self.expected_s)} at {dwell_text(self.dwell_s)} dwell{self._screen_text()} "
                "(less when BER counts decide "
                "early or a group stops with nothing left to learn)")


def live_plan(space: KnobSpace, *, groups: int, budget: int, dwell_s: float, verify_dwell_s: float | None = None,
              write_s: float = 0.5, optimizer: str = "gp", remeasure: int = 0,
              screen_dwell_s: float | None = None) -> LivePlan:
    """The plan of a live session over ``space`` (a ``KnobSpace``): ``budget`` evaluations per lane
    group, each a write (``write_s``, s) plus a ``dwell_s`` measurement (``screen_dwell_s`` for all but
    the ``remeasure`` closing ones when screening); a baseline and a verify dwell per group."""
    from eqtune.tune.space import IndexedSpace

    isp = IndexedSpace(space)
    nf = isp.n_feasible
    main = int(budget) - int(remeasure)
    exhaustive = optimizer == "gp" and nf is not None and nf <= main
    evals = int(budget)
    search_s = float(screen_dwell_s) if screen_dwell_s else float(dwell_s)
    per_group = (main * (search_s + write_s) + int(remeasure) * (dwell_s + write_s) + dwell_s
                 + (verify_dwell_s if verify_dwell_s is not None else dwell_s))
    return LivePlan(list(space.names), int(isp.size), nf, int(groups), int(budget),
                    "exhaustive" if exhaustive else "gp", evals, float(dwell_s), groups * per_group,
                    float(screen_dwell_s) if screen_dwell_s else None, int(remeasure) if screen_dwell_s else 0)


def dwell_text(s: float) -> str:
    """A dwell for a person to read: seconds to 3 significant digits ("28.2 s", "282 s", "0.01 s").
    The journal and ``--json`` keep the exact value; a dwell derived from a BER target (bits / baud)
    has no meaningful fourth digit to show."""
    return f"{float(s):.3g} s" if float(s) < 1e3 else f"{float(s):.0f} s"


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
