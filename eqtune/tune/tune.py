"""``tune()``: the measurement loop around an optimizer and a margin source.

Measure the start point (the baseline), run the initial design and the Bayesian steps until a stop
rule fires (evaluation budget, time budget, target margin, recommendation unchanged for ``patience``
evaluations, space exhausted, the callback, Ctrl-C), optionally re-measure the top candidates, and
return the recommendation - never a point whose measured margin is worse than the start point's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from eqtune.errors import TuneError
from eqtune.jsonutil import LazyList, finite_or_none, to_json_value
from eqtune.serdes.knobs import EqPoint
from eqtune.tune.base import MEASURED_GP_OPTIONS, BaseOptimizer, make_optimizer
from eqtune.tune.source import MarginSource, Measurement, measure_many, source_start
from eqtune.tune.space import Key

if TYPE_CHECKING:  # skopt behind it: imported only when the GP runs
    from eqtune.serdes.knobs import KnobSpace
    from eqtune.tune.optimizer import GPOptimizer
from eqtune.tune.recommend import count_guard, guard_pick, remeasure_key, tell_measured

#: upper bound of the GP's white-noise variance (standardized margins) for a deterministic source
DETERMINISTIC_NOISE_MAX = 0.01



@dataclass
class _Best:
    """The best measured margin so far and its key (updated while the run goes)."""

    margin: float
    key: Key

@dataclass(slots=True)
class Evaluation:
    """One measurement in the history (slots: a grid run keeps one per code, 383,180 on the 6-knob serdes
    space)."""

    index: int  # 1-based measurement number within this run
    codes: dict[str, float | int]  # the tuned knobs' values
    margin: float
    metrics: dict[str, Any]
    cost_s: float
    t_s: float  # time since the start of tune()
    phase: str  # "baseline" | "warm" | "initial" | "bo" | "confirm" | "remeasure" | "grid" | "random"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "codes": dict(self.codes), "margin": finite_or_none(self.margin),
                "metrics": to_json_value(self.metrics), "cost_s": finite_or_none(self.cost_s), "t_s": finite_or_none(self.t_s),
                "phase": self.phase}


@dataclass
class Progress:
    """What the callback gets after every measurement."""

    evaluation: int
    budget: int
    phase: str
    codes: dict[str, float | int]
    margin: float
    best_margin: float
    best_codes: dict[str, float | int]
    recommended: dict[str, float | int] | None
    elapsed_s: float


@dataclass
class Outcome:
    """Codes, full point, margin (observed mean at the point) and the metrics of its last measurement."""

    codes: dict[str, float | int]
    point: EqPoint
    margin: float
    metrics: dict[str, Any]
    measurements: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"codes": dict(self.codes), "point": dict(self.point), "margin": finite_or_none(self.margin),
                "metrics": to_json_value(self.metrics), "measurements": self.measurements}


@dataclass
class TuneResult:
    baseline: Outcome
    tuned: Outcome
    evaluations: int  # measurements made by this run (baseline and re-measurements included)
    history: Sequence[Evaluation]  # tune(): a compact eqtune.tune.history.History
    elapsed_s: float
    measure_s: float  # time spent in the source
    stop_reason: str  # budget | time | target | patience | exhausted | callback | interrupted
    optimizer: str
    seed: int
    objective: str = "margin"
    units: str = ""
    knobs: list[str] = field(default_factory=list)
    kept_start: bool = False  # the recommendation measured worse than the start: the start is returned
    warm_observations: int = 0
    optimizer_state: dict[str, Any] = field(default_factory=dict)
    screen_s: float = 0.0  # wall time of the simulation's screen (eqtune.tune.screen); 0 = not screened

    @property
    def improvement(self) -> float:
        return self.tuned.margin - self.baseline.margin

    @property
    def interrupted(self) -> bool:
        return self.stop_reason == "interrupted"

    def best_so_far(self) -> list[float]:
        """Best observed margin after each measurement (the convergence curve)."""
        out, best = [], -math.inf
        for e in self.history:
            best = max(best, e.margin)
            out.append(best)
        return out

    def to_dict(self, *, include_state: bool = False, lazy_history: bool = False) -> dict[str, Any]:
        """The result as JSON data. ``lazy_history``: the history as a ``jsonutil.LazyList`` (made while
        ``echo_json`` writes it, never held whole; the ``--json`` output of a grid run)."""
        d: dict[str, Any] = {
            "objective": self.objective, "units": self.units, "knobs": list(self.knobs),
            "baseline": self.baseline.to_dict(), "tuned": self.tuned.to_dict(),
            "improvement": finite_or_none(self.improvement), "evaluations": self.evaluations,
            "elapsed_s": finite_or_none(self.elapsed_s), "measure_s": finite_or_none(self.measure_s),
            "stop_reason": self.stop_reason, "optimizer": self.optimizer, "seed": self.seed,
            "kept_start": self.kept_start, "warm_observations": self.warm_observations,
            "screen_s": finite_or_none(self.screen_s),
            "history": LazyList(e.to_dict() for e in self.history) if lazy_history
            else [e.to_dict() for e in self.history],
        }
        if include_state:
            d["optimizer_state"] = self.optimizer_state
        return d


def _warm_items(warm: Any) -> tuple[list[tuple[EqPoint, float]], list[EqPoint]]:
    """Split ``warm`` into observations (point, margin) to tell and points to measure first."""
    if warm is None:
        return [], []
    if hasattr(warm, "history") and not isinstance(warm, Mapping):
        warm = [{"codes": e.codes, "margin": e.margin} for e in warm.history]
    elif isinstance(warm, Mapping) and "history" in warm:
        warm = warm["history"]
    elif isinstance(warm, Mapping) and "lanes" in warm:  # a profile document: its first lane's codes
        lanes = warm["lanes"]
        warm = [next(iter(lanes.values()))] if lanes else []
    elif isinstance(warm, Mapping):
        warm = [warm]
    obs: list[tuple[EqPoint, float]] = []
    pts: list[EqPoint] = []
    for item in warm:
        if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], Mapping):
            obs.append((dict(item[0]), float(item[1])))
        elif isinstance(item, Mapping) and "margin" in item:
            p = item.get("codes") or item.get("point")
            if not isinstance(p, Mapping):
                raise TuneError("warm start: an observation needs 'codes' (or 'point') and 'margin'")
            if item["margin"] is None:
                continue
            obs.append((dict(p), float(item["margin"])))
        elif isinstance(item, Mapping):
            pts.append({str(k): float(v) for k, v in item.items()})
        else:
            raise TuneError(f"warm start: cannot use {type(item).__name__}; give points or (point, margin) pairs")
    return obs, pts


def _set_screen(source: MarginSource, opt: BaseOptimizer) -> float:
    """Give a fresh GP the simulation's screened margins as its prior mean (``eqtune.tune.screen``) when
    the source offers them (``screen_margins``), the space is enumerated and the run will not measure
    every code anyway; returns the screen's wall time (s), 0 when not used."""
    fn = getattr(source, "screen_margins", None)
    if fn is None or not getattr(opt, "screen", False) or opt.ispace.grid is None:
        return 0.0  # not a GP (only the GP has the option), no screen offered, or not enumerated
    g = cast("GPOptimizer", opt)
    if g.exhaustive():
        return 0.0
    from eqtune.tune.screen import Screen

    t0 = time.perf_counter()
    values = fn(g.ispace)
    if values is None:
        return 0.0
    seconds = time.perf_counter() - t0
    g.set_screen(Screen(g.ispace, values, seconds))
    return seconds


def tune(
    source: MarginSource,
    *,
    budget: int = 60,
    seed: int | None = None,
    time_budget_s: float | None = None,
    target_margin: float | None = None,
    patience: int | None = None,
    start: Mapping[str, float] | None = None,
    warm: Any = None,
    callback: Callable[[Progress], bool | None] | None = None,
    optimizer: str | BaseOptimizer = "gp",
    optimizer_options: Mapping[str, Any] | None = None,
    remeasure_top_k: int = 0,
    prior: Any = None,
) -> TuneResult:
    """Tune ``source.space`` for the largest margin.

    ``budget``: measurements allowed (baseline and re-measurements included). ``seed``: makes the
    run reproducible (drawn and reported when None). ``time_budget_s``, ``target_margin``,
    ``patience`` (stop when the recommendation has not changed for that many measurements after the
    initial design): further stop rules. ``start``: the starting codes (default: the source's default
    point); the baseline. ``warm``: earlier observations (``[(point, margin), ...]``, ``[{"codes":...,
    "margin":...}]``, a ``TuneResult`` or its dict) told without measuring, and/or points (e.g. a
    profile's codes) measured first. ``callback(progress)`` after each measurement; return True to
    stop. ``optimizer``: "gp" (default), "grid", "random" or an optimizer instance (e.g. restored with
    ``optimizer_from_state``). ``remeasure_top_k``: re-measure the k best candidates at the end (noisy
    sources). ``prior``: earlier lanes' / modules' results (``TuneResult`` objects or their dicts, or
    (codes, margin) pairs) as the GP's prior mean (eqtune.tune.transfer); the start is then their best
    code unless ``start`` is given. Ctrl-C stops and returns the best so far (``stop_reason ==
    "interrupted"``).
    """
    t_start = time.perf_counter()
    budget = int(budget)
    space = source.space
    prior_obs = []
    if prior is not None:
        from eqtune.tune.transfer import prior_observations

        prior_obs = prior_observations(prior, space.names)
    start_point = dict(start) if start is not None else source_start(source)
    full_start = dict(space.fixed)
    full_start.update({k: float(v) for k, v in start_point.items()})
    for k in space.knobs:
        full_start.setdefault(k.name, float(k.default))

    if isinstance(optimizer, str):
        options = dict(optimizer_options or {})
        if optimizer == "gp" and getattr(source, "deterministic", False):
            # exact margins (simulation): the white-noise term only absorbs the landscape's fine
            # structure (<= 1 % of the margin variance), it must not smooth the top away
            options.setdefault("noise_max", DETERMINISTIC_NOISE_MAX)
            options.setdefault("contenders", 0)  # exact margins: nothing to re-measure
        elif optimizer == "gp":  # measured margins: the live sessions' local steps (MEASURED_GP_OPTIONS)
            for name, value in MEASURED_GP_OPTIONS.items():
                options.setdefault(name, value)
        if optimizer == "gp":
            # the budget tells the GP whether to measure every code once (space <= budget, see
            # GPOptimizer.exhaustive) and then re-measure only the close contenders
            options.setdefault("budget", max(0, budget - max(0, int(remeasure_top_k))))
        opt = make_optimizer(optimizer, space, seed=seed, start=full_start, **options)
    else:
        opt = optimizer
    isp = opt.ispace
    screen_s = _set_screen(source, opt) if isinstance(optimizer, str) else 0.0
    if prior_obs:
        if not hasattr(opt, "set_prior"):
            raise TuneError(f"a prior from earlier lanes needs the gp optimizer, not {getattr(opt, 'kind', opt)}")
        opt.set_prior([(_full(space, p), m) for p, m in prior_obs], keep_start=start is not None)
        if start is None:  # start from the earlier lanes' best
            full_start = dict(full_start)
            full_start.update(isp.point(cast("GPOptimizer", opt).design[0]))  # set_prior: the GP
    start_key = isp.key_of(full_start, option="--start")

    remeasure_top_k = max(0, int(remeasure_top_k))
    # a fresh optimizer needs its initial design; a restored one continues where it was
    n_initial = int(getattr(opt, "n_initial", 1)) if isinstance(optimizer, str) else 1
    if budget < 1:
        raise TuneError(f"--budget must be at least 1, got {budget}")
    if budget < n_initial + remeasure_top_k:
        raise TuneError(
            f"--budget {budget} is smaller than the initial design ({n_initial} points"
            + (f" + {remeasure_top_k} re-measurements" if remeasure_top_k else "")
            + f"): use --budget {n_initial + remeasure_top_k} or more"
        )

    warm_obs, warm_pts = _warm_items(warm)
    for p, m in warm_obs:
        isp.key_of(_full(space, p), option="warm start point")
        opt.tell(_full(space, p), m)
    queue = [_full(space, p) for p in warm_pts]
    for p in queue:
        isp.key_of(p, option="warm start point")

    from eqtune.tune.history import History

    history = History(isp)  # compact rows (a grid run: one per code); the last metrics of a key come from it
    measure_s = 0.0
    best = _Best(-math.inf, start_key)
    stop_reason = "budget"
    main_budget = budget - remeasure_top_k
    n_eval = 0
    stopped_by_callback = False

    def record(points: Sequence[EqPoint], phase: str) -> None:
        nonlocal measure_s, n_eval, stopped_by_callback
        t0 = time.perf_counter()
        ms: list[Measurement] = measure_many(source, points)
        measure_s += time.perf_counter() - t0
        for p, m in zip(points, ms):
            key = isp.key_of(p, option="measured point")
            tell_measured(opt, p, m.margin, m.metrics)
            n_eval += 1
            history.add(n_eval, key, float(m.margin), m.metrics, float(m.cost_s), time.perf_counter() - t_start,
                        phase)
            if m.margin > best.margin:
                best.margin, best.key = float(m.margin), key
            if callback is not None:
                # the GP's current pick (its model is cached per observation count); baselines: the best
                rec_codes: dict[str, float | int] | None = isp.codes(best.key)
                if getattr(opt, "kind", "") == "gp" and phase in ("bo", "remeasure", "confirm"):
                    rec = opt.recommend()
                    rec_codes = None if rec is None else isp.codes(isp.key_of(rec))
                prog = Progress(n_eval, budget, phase, isp.codes(key), float(m.margin), best.margin,
                                isp.codes(best.key), rec_codes, time.perf_counter() - t_start)
                if callback(prog):
                    stopped_by_callback = True

    # baseline: the start point (re-used when a restored optimizer has already measured it)
    means = opt.mean_by_point()
    if start_key in means and not isinstance(optimizer, str):
        pass
    else:
        record([full_start], "baseline")
    base_phase_kind = "initial" if getattr(opt, "kind", "") == "gp" else getattr(opt, "kind", "search")

    unchanged = 0
    last_rec = None
    try:
        while True:
            if stopped_by_callback:
                stop_reason = "callback"
                break
            if n_eval >= main_budget:
                stop_reason = "budget"
                break
            if time_budget_s is not None and time.perf_counter() - t_start >= time_budget_s:
                stop_reason = "time"
                break
            if target_margin is not None and best.margin >= target_margin:
                stop_reason = "target"
                break
            if patience is not None and unchanged >= int(patience):
                stop_reason = "patience"
                break
            remaining = main_budget - n_eval
            if queue:
                pts, queue = queue[:remaining], queue[remaining:]
                phase = "warm"
            else:
                in_design = bool(getattr(opt, "in_initial_design", lambda: False)())
                asked: list[EqPoint | None]
                again = None if in_design or opt.kind != "gp" else remeasure_key(
                    opt, n_initial=int(getattr(opt, "n_initial", 0)), remaining=remaining, budget=main_budget)
                if again is not None:  # the top two are within noise: measure the less certain again
                    asked, phase = [isp.point(again)], "confirm"
                elif opt.kind == "gp" and not in_design:
                    asked, phase = [opt.ask()], "bo"
                else:
                    # batches (vectorized simulation) unless a time/target rule must be checked often
                    n = 1 if (time_budget_s is not None or target_margin is not None) else min(remaining, 512)
                    asked, phase = list(opt.ask_many(n)), base_phase_kind
                pts = [p for p in asked if p is not None]
            if not pts:
                stop_reason = "exhausted"
                break
            record(pts, phase)
            if phase in ("bo", "confirm"):
                rec = opt.recommend()
                key = None if rec is None else isp.key_of(rec)
                unchanged = unchanged + 1 if key == last_rec else 0
                last_rec = key
        if stop_reason != "callback" and remeasure_top_k and n_eval < budget:
            top = opt.ranked()[: min(remeasure_top_k, budget - n_eval)]
            record([isp.point(k) for k in top], "remeasure")
    except KeyboardInterrupt:
        stop_reason = "interrupted"
        if not history:
            raise

    # outcome: the optimizer's recommendation, unless it measured worse than the start
    means = opt.mean_by_point()
    if getattr(source, "deterministic", False):
        # a deterministic source (the simulator): every measured value is exact, the best is the best
        bo = opt.best_observed()
        rec = None if bo is None else isp.point(bo[0])
    else:
        rec = opt.recommend()  # noise-aware: the GP's best posterior mean over measured points
    rec_key = isp.key_of(rec) if rec is not None else start_key
    if rec_key not in means:
        rec_key = start_key
    elif any(v is not None for v in getattr(opt, "margin_vars", None) or []):
        # counted margins (known noise): a pick the measurements refute gives way, as in live sessions
        rec_key = guard_pick(opt, rec_key)
        # and one its own pooled error counts refute gives way too (a zero count is a bound, not a value)
        rec_key = count_guard(history.pooled_counts(), rec_key)
    base_margin, base_n = means.get(start_key, (math.nan, 0))
    kept_start = False
    if start_key in means and means[rec_key][0] < base_margin:
        rec_key, kept_start = start_key, True

    def outcome(key: Key) -> Outcome:
        m, n = means.get(key, (math.nan, 0))
        return Outcome(isp.codes(key), isp.point(key), float(m), history.last_metrics(key), n)

    baseline, tuned = outcome(start_key), outcome(rec_key)
    means.clear()  # one entry per measured code: freed before the optimizer's state is made (a grid: 383,180 codes)
    return TuneResult(
        baseline=baseline, tuned=tuned, evaluations=n_eval, history=history,
        elapsed_s=time.perf_counter() - t_start, measure_s=measure_s, stop_reason=stop_reason,
        optimizer=getattr(opt, "kind", type(opt).__name__), seed=int(getattr(opt, "seed", seed or 0)),
        objective=str(getattr(source, "objective", "margin")), units=str(getattr(source, "units", "")),
        knobs=list(space.names), kept_start=kept_start, warm_observations=len(warm_obs),
        optimizer_state=opt.state(), screen_s=screen_s,
    )


def _full(space: KnobSpace, p: Mapping[str, float]) -> EqPoint:
    out: EqPoint = dict(space.fixed)
    out.update({str(k): float(v) for k, v in p.items()})
    return out


def first_within(values: Iterable[float], optimum: float, *, tol_db: float = 0.1, rel: float | None = None,
                 units: str = "mV") -> int | None:
    """1-based index of the first value within tolerance of ``optimum`` (None if never).

    Tolerance: ``tol_db`` dB - for dB objectives an absolute difference; for amplitudes (mV) the
    ratio 20 log10(optimum / value) <= tol_db, i.e. about 1.1 % for 0.1 dB; ``rel`` overrides with a
    relative tolerance.
    """
    thr = threshold(optimum, tol_db=tol_db, rel=rel, units=units)
    for i, v in enumerate(values, 1):
        if v >= thr:
            return i
    return None


def threshold(optimum: float, *, tol_db: float = 0.1, rel: float | None = None, units: str = "mV") -> float:
    """Smallest margin counted as "within tolerance" of ``optimum`` (see ``first_within``)."""
    if rel is not None:
        return optimum - abs(optimum) * rel
    if units == "dB":
        return optimum - tol_db
    return optimum - abs(optimum) * (1.0 - 10 ** (-tol_db / 20.0))
