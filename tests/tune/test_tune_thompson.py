"""Thompson-sampling steps of the GP optimizer (``ts_every`` / ``ts_stall``): the joint posterior draw,
its determinism and resume, the schedule, and the option checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eqtune.errors import TuneError
from eqtune.serdes.knobs import Knob, KnobSpace
from eqtune.tune import GPOptimizer, acquisition, optimizer_from_state
from eqtune.tune.base import parse_optimizer_options, rng_for
from eqtune.tune.space import IndexedSpace


def _bowl():
    """Two 16-level knobs and a smooth bowl with its top at (11, 4)."""
    space = KnobSpace(tuple(Knob(n, tuple(float(i) for i in range(16)), 0.0) for n in ("a", "b")))

    def margin(p):
        return 30.0 - 0.3 * (p["a"] - 11.0) ** 2 - 0.2 * (p["b"] - 4.0) ** 2 - 0.05 * (p["a"] - 11.0) * (p["b"] - 4.0)

    return space, margin


def _told(space, margin, keys, **options):
    opt = GPOptimizer(space, seed=3, noise_max=0.01, warp_y="none", n_initial=4, **options)
    isp = opt.ispace
    for k in keys:
        p = isp.point(tuple(int(v) for v in k))
        opt.tell(p, margin(p))
    return opt


def _random_keys(isp: IndexedSpace, n: int, seed: int, exclude=()) -> list:
    rows = [tuple(int(v) for v in r) for r in isp.grid if tuple(int(v) for v in r) not in set(exclude)]
    idx = np.random.default_rng(seed).choice(len(rows), n, replace=False)
    return [rows[i] for i in idx]


def _drive(opt, table, n: int) -> None:
    for _ in range(n):
        p = opt.ask()
        opt.tell(p, table.measure(p).margin)


def test_posterior_draw_has_the_posterior_mean_and_covariance():
    """Many draws at five points: their sample mean and covariance are the GP's joint posterior (a wrong
    factor, e.g. L' instead of L, or independent draws, gives the wrong covariance)."""
    space, margin = _bowl()
    isp = IndexedSpace(space)
    opt = _told(space, margin, _random_keys(isp, 12, 0))
    rows = np.array([[0, 0], [1, 0], [2, 1], [8, 12], [15, 15]], dtype=np.int32)
    gp = opt._fit()
    mean, cov = gp.predict(opt._inputs(rows), return_cov=True)
    draws = np.array([acquisition.posterior_draw(opt, rows, rng_for(1, i)) for i in range(3000)])
    # scores are the negative of the model's values
    np.testing.assert_allclose(-draws.mean(axis=0), mean, atol=0.08 * float(np.sqrt(np.max(np.diag(cov)))) + 1e-3)
    emp = np.cov(draws.T)
    scale = float(np.max(np.diag(cov)))
    np.testing.assert_allclose(emp, cov, atol=0.08 * scale)
    # neighbouring codes are strongly correlated in the draw, far ones much less
    corr = emp / np.sqrt(np.outer(np.diag(emp), np.diag(emp)))
    assert corr[0, 1] > 0.5 and abs(corr[0, 4]) < corr[0, 1]


def test_thompson_step_finds_the_top_of_a_well_measured_bowl():
    """With 60 of the 256 codes measured (not the top, nor its 8 neighbours), the posterior is sure of
    the bowl: the draw's argmax is the top for every one of 8 seeds."""
    space, margin = _bowl()
    isp = IndexedSpace(space)
    near = [(11 + i, 4 + j) for i in (-1, 0, 1) for j in (-1, 0, 1)]
    hits = []
    for seed in range(8):
        opt = _told(space, margin, _random_keys(isp, 60, seed, exclude=near), ts_every=1)
        opt.seed = seed
        hits.append(acquisition.thompson_step(opt, opt._taken()))
    assert all(h == (11, 4) for h in hits), hits


def test_thompson_step_is_determined_by_seed_and_observation_count(table_10in):
    """The same observations and seed give the same TS proposal (twice in a row, and after a JSON state
    round trip); the draw itself is a function of (seed, observations, pending) and changes with the seed."""
    table, _ = table_10in
    a = GPOptimizer(table.space, seed=11, start=table.default_point(), ts_every=1)
    _drive(a, table, 14)
    state = json.loads(json.dumps(a.state()))
    assert state["config"]["ts_every"] == 1
    b = optimizer_from_state(state, table.space)
    c = optimizer_from_state(state, table.space)
    for _ in range(4):  # the same TS proposals, step after step
        pa, pb, pc = a.ask(), b.ask(), c.ask()
        assert pa == pb == pc
        y = table.measure(pa).margin
        for o in (a, b, c):
            o.tell(pa, y)
    # the draw: a function of (seed, observations, pending)
    rows = np.asarray(sorted(a.evaluated()), dtype=np.int32)[:40]
    d1 = acquisition.posterior_draw(a, rows, rng_for(a.seed, len(a.ys), 0, 9))
    d2 = acquisition.posterior_draw(b, rows, rng_for(b.seed, len(b.ys), 0, 9))
    d3 = acquisition.posterior_draw(a, rows, rng_for(a.seed + 1, len(a.ys), 0, 9))
    np.testing.assert_array_equal(d1, d2)
    assert not np.allclose(d1, d3)


def test_schedule_every_kth_step_and_after_a_stall(table_10in, monkeypatch):
    """``ts_every=3``: BO steps 2, 5, 8, ... are TS steps; ``ts_stall=2``: every step once the best has not
    improved for 2 steps; both 0: never."""
    table, _ = table_10in
    calls: list[int] = []
    real = acquisition.thompson_step

    def counted(opt, taken):
        calls.append(len(opt.ys) - opt.n_initial)
        return real(opt, taken)

    monkeypatch.setattr(acquisition, "thompson_step", counted)
    o = GPOptimizer(table.space, seed=2, ts_every=3)
    _drive(o, table, o.n_initial + 9)
    assert calls == [2, 5, 8]
    calls.clear()
    o = GPOptimizer(table.space, seed=2)
    assert o.ts_every == 0 and o.ts_stall == 0  # off by default
    _drive(o, table, o.n_initial + 9)
    assert calls == []
    o = GPOptimizer(table.space, seed=2, ts_stall=2)
    _drive(o, table, o.n_initial + 12)
    stalls = []
    for n in range(o.n_initial, len(o.ys)):  # replay: the stall count before each BO step
        sub = GPOptimizer(table.space, seed=2, ts_stall=2)
        sub.keys, sub.ys = o.keys[:n], o.ys[:n]
        stalls.append(acquisition.steps_since_gain(sub))
    expect = [n - o.n_initial for n, s in zip(range(o.n_initial, len(o.ys)), stalls) if s >= 2]
    assert calls == expect and calls  # some stall happens in 12 steps on this problem


def test_trust_region_draw_stays_in_the_box(table_10in):
    """``ts_region="tr"``: every TS proposal lies in the trust-region box around the best point."""
    table, _ = table_10in
    o = GPOptimizer(table.space, seed=6, ts_every=1, ts_region="tr", tr_init=0.25)
    _drive(o, table, o.n_initial)
    for _ in range(5):
        length, _ = acquisition.tr_length(o)
        half = np.maximum(np.floor(0.5 * length * o.ispace._den + 1e-9), 1)
        centre = np.asarray(o.ranked()[0])
        p = o.ask()
        key = np.asarray(o.ispace.key_of(p))
        assert np.all(np.abs(key - centre) <= half), (key, centre, half)
        o.tell(p, table.measure(p).margin)


def test_steps_since_gain_counts_from_the_last_improvement(table_10in):
    table, _ = table_10in
    o = GPOptimizer(table.space, seed=0, n_initial=2)
    pts = [o.ispace.point(tuple(int(v) for v in r)) for r in o.ispace.grid[:8]]
    for p, y in zip(pts, [1.0, 2.0, 1.5, 3.0, 2.9, 2.0, 1.0]):
        o.tell(p, y)
    assert acquisition.steps_since_gain(o) == 3
    o.tell(pts[7], 5.0)
    assert acquisition.steps_since_gain(o) == 0


def test_thompson_options_are_checked(table_10in):
    table, _ = table_10in
    with pytest.raises(TuneError, match="ts_every must be >= 0, got -1"):
        GPOptimizer(table.space, ts_every=-1)
    with pytest.raises(TuneError, match="ts_candidates must be >= 2, got 1"):
        GPOptimizer(table.space, ts_candidates=1)
    with pytest.raises(TuneError, match="unknown Thompson-sampling region 'box': use all or tr"):
        GPOptimizer(table.space, ts_region="box")
    with pytest.raises(TuneError, match="ts_stall=two: expected an integer"):
        parse_optimizer_options("gp", ["ts_stall=two"])
    assert parse_optimizer_options("gp", ["ts_every=2", "ts_candidates=500", "ts_region=tr"]) == {
        "ts_every": 2, "ts_candidates": 500, "ts_region": "tr"}


def test_state_saved_before_thompson_sampling_resumes_without_it(table_10in):
    table, _ = table_10in
    a = GPOptimizer(table.space, seed=5, ts_every=1)
    _drive(a, table, 10)
    state = json.loads(json.dumps(a.state()))
    for k in ("ts_every", "ts_stall", "ts_candidates"):
        del state["config"][k]
    b = GPOptimizer.from_state(state, table.space)
    assert b.ts_every == 0 and b.ts_stall == 0


def test_thompson_step_with_a_transfer_prior_mean(table_10in):
    """With earlier lanes' observations as the prior mean (``set_prior``), the model is the residual GP
    plus that mean: its joint covariance is the residual's, its mean is shifted, and a TS step works."""
    table, _ = table_10in
    donor = GPOptimizer(table.space, seed=1)
    _drive(donor, table, 12)
    obs = [(donor.ispace.codes(k), y) for k, y in zip(donor.keys, donor.ys)]
    o = GPOptimizer(table.space, seed=4, ts_every=1)
    o.set_prior(obs)
    _drive(o, table, 3)
    rows = np.asarray(sorted(o.evaluated()), dtype=np.int32)
    model = o._fit()
    mean, cov = model.predict(o._inputs(rows), return_cov=True)
    np.testing.assert_allclose(mean, model.predict(o._inputs(rows)))
    np.testing.assert_allclose(cov, model.gp.predict(o._inputs(rows), return_cov=True)[1])
    p = o.ask()
    assert o.ispace.key_of(p) not in o.evaluated()
