"""How the budget is spent: exhaustive mode and close contenders, range-limit candidates, large-space
enumeration, transfer from earlier lanes (prior mean), and the live plan announced before any write."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from eqtune.serdes.knobs import Knob, KnobSpace
from eqtune.tune import FunctionSource, GPOptimizer, optimizer_from_state, tune
from eqtune.tune import space as space_mod
from eqtune.tune.plan import dwell_text, live_plan
from eqtune.tune.space import IndexedSpace


def _bowl_space() -> KnobSpace:
    return KnobSpace((Knob("a", tuple(range(4)), 0), Knob("b", tuple(range(5)), 0)))


def _bowl(p) -> float:
    return -((p["a"] - 3) ** 2) - 0.5 * (p["b"] - 2) ** 2  # optimum (3, 2) = 0; (3, 1), (3, 3) = -0.5


@pytest.mark.parametrize("seed", [0, 1])
def test_small_space_noisy_every_code_once_then_only_close_contenders(seed):
    """20 codes, budget 40, noise sd 0.3: all 20 measured before any repeat; repeats only among the
    best few; the run stops before the budget once no contender can be told apart from the best."""
    src = FunctionSource(_bowl_space(), _bowl, noise=0.3, seed=seed)
    r = tune(src, budget=40, seed=seed)
    keys = [tuple(e.codes.values()) for e in r.history]
    assert len(set(keys[:20])) == 20  # the whole space, each code once, first
    repeats = Counter(keys[20:])
    # every re-measurement is of a code whose TRUE value is within 1 (about 3 noise sd) of the best
    assert all(_bowl({"a": a, "b": b}) >= -1.0 for a, b in repeats), repeats
    assert r.stop_reason == "exhausted" and r.evaluations < 40
    assert r.tuned.codes == {"a": 3, "b": 2}


def test_small_space_exact_source_measures_each_code_once_and_stops():
    r = tune(FunctionSource(_bowl_space(), _bowl), budget=40, seed=3)
    assert r.evaluations == 20 and r.stop_reason == "exhausted"
    assert len({tuple(e.codes.values()) for e in r.history}) == 20
    assert r.tuned.codes == {"a": 3, "b": 2}


def test_space_larger_than_budget_is_not_exhaustive():
    opt = GPOptimizer(_bowl_space(), seed=0, budget=19)
    assert not opt.exhaustive()
    assert GPOptimizer(_bowl_space(), seed=0, budget=20).exhaustive()
    assert not GPOptimizer(_bowl_space(), seed=0).exhaustive()  # budget unknown


def test_limit_moves_put_knobs_on_their_range_limits():
    sp = KnobSpace((Knob("a", tuple(range(8)), 0), Knob("b", tuple(range(4)), 0), Knob("c", tuple(range(11)), 0)),
                   (lambda m, names: m[:, 0] + m[:, 1] <= 9,))
    opt = GPOptimizer(sp, seed=0)
    rows = opt._limit_moves([(3, 1, 5)])
    hi = np.array([7, 3, 10])
    assert len(rows) > 0 and np.all(rows[:, 0] + rows[:, 1] <= 9)  # feasible only
    for r in rows:  # one or two knobs moved, each to 0 or its top code; the rest held
        moved = np.flatnonzero(r != np.array([3, 1, 5]))
        assert 1 <= len(moved) <= 2 and all(r[i] in (0, hi[i]) for i in moved)
    assert any((r == [7, 1, 5]).all() for r in rows) and any((r == [7, 3, 10]).all() for r in rows) is False
    assert any((r == [3, 1, 10]).all() for r in rows) and any((r == [0, 3, 5]).all() for r in rows)


def test_chunked_enumeration_is_the_brute_force_feasible_set(monkeypatch):
    """The chunked, small-integer enumeration gives exactly the feasible rows of the whole box, in C
    order (checked against a direct np.indices enumeration), also across chunk boundaries."""
    sp = KnobSpace((Knob("a", tuple(range(9)), 0), Knob("b", tuple(range(7)), 0), Knob("c", tuple(range(5)), 0)),
                   (lambda m, names: (m[:, 0] + 2 * m[:, 1] - m[:, 2]) % 3 != 0,))
    monkeypatch.setattr(space_mod, "ENUM_CHUNK", 17)
    isp = IndexedSpace(sp)
    idx = np.indices((9, 7, 5)).reshape(3, -1).T
    want = idx[(idx[:, 0] + 2 * idx[:, 1] - idx[:, 2]) % 3 != 0]
    assert isp.grid.dtype == np.int8 and np.array_equal(isp.grid.astype(int), want)


def test_six_knob_space_over_the_old_limit_is_enumerated():
    """4 TX FFE taps + 2 CTLE codes on c2m-10in serdes: 383,180 feasible of 418,880 (was sampled above
    300,000 points); int8 rows, 2.3 MB."""
    from eqtune.tune import SimulationSource

    src = SimulationSource("c2m-10in", ["tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2"],
                           direction="serdes")
    isp = IndexedSpace(src.space)
    assert isp.size == 418_880 and isp.n_feasible == 383_180 and isp.grid.dtype == np.int8
    assert np.all(src.space.feasible(isp.values(isp.grid[::997])))


def _lane(shift: float, offset: float):
    """A lane's landscape: the same ridge, shifted by ``shift`` codes along a and by ``offset`` in level."""
    def f(p):
        return offset - 0.3 * (p["a"] - 6 - shift) ** 2 - 0.2 * (p["b"] - 2) ** 2 - 0.15 * (p["a"] - p["c"] - 1) ** 2
    return f


def _lane_space() -> KnobSpace:
    return KnobSpace((Knob("a", tuple(range(10)), 0), Knob("b", tuple(range(6)), 0), Knob("c", tuple(range(10)), 0)))


def _evals_to_best(r, best: float) -> int:
    return next(i for i, v in enumerate(r.best_so_far(), 1) if v >= best - 1e-9)


def test_prior_from_earlier_lanes_needs_fewer_evaluations_and_resumes():
    sp = _lane_space()
    lane1 = tune(FunctionSource(sp, _lane(0.0, 5.0)), budget=40, seed=0)
    lane2 = _lane(0.0, 4.6)  # same shape, lower level (more loss); optimum (6, 2, 5)
    best = max(lane2({"a": a, "b": b, "c": c}) for a in range(10) for b in range(6) for c in range(10))
    warm = tune(FunctionSource(sp, lane2), budget=25, seed=1, prior=lane1)
    cold = tune(FunctionSource(sp, lane2), budget=25, seed=1)
    assert _evals_to_best(warm, best) <= 3 < _evals_to_best(cold, best)
    assert warm.history[0].codes == lane1.tuned.codes  # starts at the earlier lanes' best
    # the prior is part of the optimizer's JSON state: a resumed run proposes the same next point
    st = json.loads(json.dumps(warm.optimizer_state))
    assert len(st["prior"]["margins"]) == len(lane1.history)
    a, b = optimizer_from_state(st, sp), optimizer_from_state(st, sp)
    assert a.has_prior and a.ask() == b.ask()


def test_live_plan_says_exhaustive_and_the_expected_time():
    sp = _bowl_space()
    p = live_plan(sp, groups=2, budget=30, dwell_s=10.0, write_s=0.5)
    assert p.mode == "exhaustive" and p.feasible == 20
    assert p.expected_s == pytest.approx(2 * (30 * 10.5 + 10 + 10))  # evaluations + baseline + verify per group
    assert "every code once" in p.text() and "knobs a, b" in p.text() and "20 feasible codes" in p.text()
    q = live_plan(sp, groups=1, budget=12, dwell_s=28.0, remeasure=0)
    assert q.mode == "gp" and "Bayesian search, up to 12" in q.text()


def test_plan_line_shows_a_dwell_to_three_significant_digits():
    # a dwell derived from a BER target (3e12 bits / 106.25 Gb/s = 28.235... s) reads as 28.2 s, not 28.2353
    p = live_plan(_bowl_space(), groups=1, budget=30, dwell_s=3e12 / 106.25e9)
    assert "at 28.2 s dwell" in p.text() and "28.23" not in p.text()
    assert [dwell_text(s) for s in (0.01, 3.52467, 281.951, 4000.4)] == ["0.01 s", "3.52 s", "282 s", "4000 s"]


def test_live_later_lane_groups_start_from_the_earlier_groups_measurements():
    """Lane group 2's GP gets every measurement of group 1 (both lanes pooled, from the journal view) as
    its prior mean and starts at their best code; group 1, and the option transfer=false, get none."""
    from types import SimpleNamespace

    from eqtune.session.live import _set_prior_from_earlier_groups

    sp = _lane_space()
    src = SimpleNamespace(space=sp, knobs=list(sp.names))
    f1, f2 = _lane(0.0, 5.0), _lane(0.4, 4.8)
    rng = np.random.default_rng(0)
    records = []
    for n in range(12):
        codes = {"a": int(rng.integers(0, 10)), "b": int(rng.integers(0, 6)), "c": int(rng.integers(0, 10))}
        if n == 5:
            codes = {"a": 6, "b": 2, "c": 5}  # the best of group 1
        records.append({"lanes": {"1": {"codes": codes, "margin": f1(codes)}, "2": {"codes": codes, "margin": f2(codes)}}})
    view = SimpleNamespace(measurements=lambda g: records if g == 0 else [])
    start = {"a": 0.0, "b": 0.0, "c": 0.0}
    opts = {3: GPOptimizer(sp, seed=1, start=start), 4: GPOptimizer(sp, seed=2, start=start, transfer=False)}
    _set_prior_from_earlier_groups(opts, view, 1, src)
    assert opts[3].has_prior and len(opts[3].state()["prior"]["margins"]) == 24
    assert opts[3].ask() == {"a": 6.0, "b": 2.0, "c": 5.0}
    assert not opts[4].has_prior
    first = {5: GPOptimizer(sp, seed=1, start=start)}
    _set_prior_from_earlier_groups(first, view, 0, src)
    assert not first[5].has_prior
