"""tune(): baseline, stop rules, warm start, Ctrl-C, never worse than the start."""

from __future__ import annotations

import json

import pytest

from eqtune.errors import TuneError
from eqtune.tune import GPOptimizer, Measurement, optimizer_from_state, tune


def test_result_shape_and_history(table_10in):
    table, _ = table_10in
    r = tune(table, budget=20, seed=1)
    assert r.evaluations == 20 == len(r.history)
    assert r.history[0].phase == "baseline" and r.history[0].codes == r.baseline.codes
    assert {e.phase for e in r.history[1:]} <= {"initial", "bo"}
    assert r.baseline.codes == {"rx_pre": 0, "rx_post": 0, "rx_amp": 1}
    assert r.best_so_far()[-1] == max(e.margin for e in r.history)
    assert r.tuned.margin == max(e.margin for e in r.history)  # deterministic source: the best measured
    d = json.loads(json.dumps(r.to_dict(include_state=True)))
    assert set(d) >= {"baseline", "tuned", "evaluations", "history", "optimizer_state"}


def test_never_worse_than_start(table_10in):
    table, optimum = table_10in
    best = max(table._table, key=table._table.get)
    start = dict(zip(table.space.names, best))
    for seed in range(3):
        r = tune(table, budget=8, seed=seed, start=start)
        assert r.tuned.margin >= r.baseline.margin == optimum


def test_noisy_source_keeps_start_when_nothing_measures_better():
    """A noisy source whose recommendation measures worse than the start: the start is returned."""
    from eqtune.serdes.knobs import Knob, KnobSpace
    from eqtune.tune import FunctionSource

    space = KnobSpace((Knob("a", tuple(float(i) for i in range(6)), 0.0), Knob("b", (0.0, 1.0, 2.0), 0.0)))
    src = FunctionSource(space, lambda p: 5.0 if p["a"] == 0 and p["b"] == 0 else 1.0 + 0.2 * p["a"],
                         noise=0.01, seed=1)
    r = tune(src, budget=10, seed=0)
    assert r.tuned.margin >= r.baseline.margin
    assert r.tuned.codes == {"a": 0, "b": 0}


def test_stop_rules(table_10in):
    table, optimum = table_10in
    r = tune(table, budget=60, seed=2, target_margin=0.5 * optimum)
    assert r.stop_reason == "target" and r.evaluations < 60
    r = tune(table, budget=60, seed=2, patience=3)
    assert r.stop_reason == "patience" and r.evaluations < 60
    r = tune(table, budget=60, seed=2, time_budget_s=0.0)
    assert r.stop_reason == "time" and r.evaluations == 1
    r = tune(table, budget=60, seed=2, callback=lambda p: p.evaluation >= 10)
    assert r.stop_reason == "callback" and r.evaluations == 10
    r = tune(table, budget=300, seed=2, optimizer="random")
    assert r.stop_reason == "exhausted" and r.evaluations == 256


def test_progress_callback_sees_every_measurement(table_10in):
    table, _ = table_10in
    seen = []
    tune(table, budget=12, seed=0, callback=seen.append)
    assert [p.evaluation for p in seen] == list(range(1, 13))
    assert all(b.best_margin >= a.best_margin for a, b in zip(seen, seen[1:]))
    assert seen[-1].recommended is not None


def test_ctrl_c_returns_the_best_so_far(table_10in):
    table, _ = table_10in

    class Interrupting:
        space = table.space
        deterministic = True
        calls = 0

        def default_point(self):
            return table.default_point()

        def measure(self, point):
            self.calls += 1
            if self.calls == 15:
                raise KeyboardInterrupt
            return table.measure(point)

    r = tune(Interrupting(), budget=60, seed=0)
    assert r.stop_reason == "interrupted" and r.evaluations == 14
    assert r.tuned.margin == max(e.margin for e in r.history)


def test_budget_smaller_than_initial_design_is_an_error(table_10in):
    table, _ = table_10in
    with pytest.raises(TuneError, match="--budget 3 is smaller than the initial design"):
        tune(table, budget=3)
    with pytest.raises(TuneError, match="--budget"):
        tune(table, budget=0, optimizer="random")


def test_warm_start_from_observations_and_profile_codes(table_10in):
    table, optimum = table_10in
    first = tune(table, budget=15, seed=4)
    # earlier observations are told without measuring them again
    second = tune(table, budget=10, seed=4, warm=first)
    assert second.warm_observations == 15
    measured = {tuple(sorted(e.codes.items())) for e in second.history[1:]}
    earlier = {tuple(sorted(e.codes.items())) for e in first.history}
    assert not (measured & earlier)
    assert second.tuned.margin >= first.tuned.margin
    # a profile's codes: measured first
    best = dict(zip(table.space.names, max(table._table, key=table._table.get)))
    third = tune(table, budget=10, seed=0, warm=[best])
    assert third.history[1].phase == "warm" and third.tuned.margin == optimum
    # the JSON of a result works too
    fourth = tune(table, budget=10, seed=4, warm=json.loads(json.dumps(first.to_dict())))
    assert fourth.warm_observations == 15
    with pytest.raises(TuneError, match="warm"):
        tune(table, budget=10, warm=[{"codes": {"rx_pre": 99, "rx_post": 0, "rx_amp": 0}, "margin": 1.0}])


def test_resumed_optimizer_continues_in_tune(table_10in):
    table, _ = table_10in
    a = tune(table, budget=12, seed=8)
    opt = optimizer_from_state(a.optimizer_state, table.space)
    b = tune(table, budget=5, optimizer=opt)
    assert b.evaluations == 5 and b.history[0].phase == "bo"  # the start was measured before: no new baseline
    # the same continuation as an uninterrupted optimizer
    ref = GPOptimizer.from_state(a.optimizer_state, table.space)
    p = ref.ask()
    assert b.history[0].codes == ref.ispace.codes(ref.ispace.key_of(p))


def test_remeasure_top_k_counts_in_the_budget():
    from eqtune.serdes.knobs import Knob, KnobSpace
    from eqtune.tune import FunctionSource

    space = KnobSpace(tuple(Knob(n, tuple(float(i) for i in range(6)), 0.0) for n in ("a", "b")))
    src = FunctionSource(space, lambda p: 10 - (p["a"] - 3) ** 2 - (p["b"] - 2) ** 2, noise=0.2, seed=3)
    r = tune(src, budget=25, seed=1, remeasure_top_k=3)
    assert r.evaluations == 25
    assert [e.phase for e in r.history[-3:]] == ["remeasure"] * 3
    assert r.tuned.measurements >= 2
    assert isinstance(r.history[-1].metrics, dict) and isinstance(Measurement(1.0).to_dict(), dict)
