"""Screening (eqtune.tune.screen, EyeEngine.screen): the engine's stage-A eye as the GP's prior mean."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from eqtune.eye import EyeEngine
from eqtune.serdes.knobs import Knob, KnobSpace
from eqtune.tune import SimulationSource, TableSource, first_within, tune
from eqtune.tune.optimizer import GPOptimizer
from eqtune.tune.screen import SCALE_RANGE, Screen, prior_scale
from eqtune.tune.space import IndexedSpace


def grid_table(src: SimulationSource) -> tuple[TableSource, float]:
    """The exhaustive grid of ``src`` (real engine) as a replayable table, and its optimum."""
    isp = IndexedSpace(src.space)
    grid = isp.values(isp.grid)
    margins = np.array([m.margin for m in src.measure_batch([src.space.to_point(r) for r in grid])])
    return TableSource(src.space, grid, margins, start=src.default_point(), units=src.units), float(margins.max())


def _space() -> KnobSpace:
    knobs = (Knob("a", tuple(map(float, range(6))), 0.0), Knob("b", tuple(map(float, range(5))), 0.0),
             Knob("c", tuple(map(float, range(4))), 0.0))

    def no_corner(m: np.ndarray, names) -> np.ndarray:  # a constraint: a + b <= 7
        return m[:, 0] + m[:, 1] <= 7

    return KnobSpace(knobs, constraints=(no_corner,))


def test_screen_lookup_top_and_infeasible():
    isp = IndexedSpace(_space())
    assert isp.grid is not None and len(isp.grid) < 6 * 5 * 4  # the constraint removed some codes
    vals = np.random.default_rng(0).normal(size=len(isp.grid))
    sc = Screen(isp, vals)
    pick = isp.grid[[3, 0, 17, len(isp.grid) - 1]]
    assert np.allclose(sc(pick), vals[[3, 0, 17, len(isp.grid) - 1]])
    top = sc.top(5)
    assert np.allclose(sc(top), np.sort(vals)[::-1][:5])  # best first
    # an infeasible code (a + b = 9) reads as the lowest screened value, never another code's value
    assert sc(np.array([[5, 4, 0]]))[0] == vals.min()
    with pytest.raises(ValueError, match="screened values"):
        Screen(isp, vals[:-1])


def test_prior_scale_least_squares_and_clipping():
    s = np.linspace(0.0, 1.0, 9)
    assert prior_scale(2.0 + 1.5 * s, s) == pytest.approx(1.5)
    assert prior_scale(10.0 * s, s) == SCALE_RANGE[1]
    assert prior_scale(-s, s) == SCALE_RANGE[0]
    assert prior_scale(s[:2], s[:2]) == 1.0  # too few codes
    assert prior_scale(s, np.ones_like(s)) == 1.0  # no spread in the screen


@pytest.mark.parametrize("knobs,direction", [
    (["tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2"], "serdes"),  # host TX FFE x host CTLE
    (["rx_pre", "rx_post", "rx_amp", "ctle_gdc"], "host_rx"),  # module TX codes x host CTLE (gdc2 fixed)
    (["tx_cm1", "tx_c1", "tx_eq"], "module_rx"),  # host TX FFE x the module's fixed peaking code
])
def test_engine_screen_is_the_stage_a_eye_of_each_row(knobs, direction):
    """Second path: ``_stage_a`` of every row at its own RX setting (the exact evaluation's stage A),
    max over the sampling phases, in mV. Catches a wrong RX-setting index, row order or unit."""
    eng = EyeEngine("c2m-10in", direction=direction)
    space = eng.knob_space(knobs)
    isp = IndexedSpace(space)
    rows = isp.values(isp.grid)[:: max(1, len(isp.grid) // 300)]
    got = eng.screen(rows, space.names)
    pts = [dict(zip(space.names, r)) for r in rows]
    taps, amp, idx, _ = eng._parse(pts)
    assert np.all(idx >= 0)
    a = eng._stage_a(taps, amp, idx, np.zeros((len(idx), 1)), eng.ber)
    assert np.allclose(got, a.eh.max(axis=-1) * 1e3, rtol=1e-9, atol=1e-9)


def test_engine_screen_without_ctle_knobs_is_the_best_setting():
    """Rows that leave the CTLE to the engine get the best RX setting's stage-A eye (what the engine's
    CTLE adaptation ranks by)."""
    eng = EyeEngine("c2m-10in", direction="host_rx")
    rows = np.array([[2.0, 3.0, 2.0], [0.0, 0.0, 3.0]])
    names = ("rx_pre", "rx_post", "rx_amp")
    got = eng.screen(rows, names)
    taps, amp, _, _ = eng._parse([dict(zip(names, r)) for r in rows])
    assert np.allclose(got, eng._adapt_scores(taps, amp, eng.ber).max(axis=-1) * 1e3)


def test_screen_ranks_the_exact_optimum_near_the_top():
    """The screen against the exact statistical eye (stage B: the full interference distribution) on a
    shipped channel's TX FFE x CTLE grid: a second method with the same physics. The two agree on the
    ranking (Spearman) and the exact optimum is among the screen's best 1 % (measured: rank 1-117 of
    up to 383,180 codes on 16 benchmark problems, docs/tuning.md)."""
    src = SimulationSource("c2m-16in", ["tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2"], direction="serdes")
    isp = IndexedSpace(src.space)
    table, opt = grid_table(src)
    exact = np.array([table.measure(isp.point(k)).margin for k in isp.grid])
    screened = src.screen_margins(isp)
    assert screened is not None and screened.shape == exact.shape
    assert spearmanr(screened, exact)[0] > 0.9
    rank = int(np.nonzero(np.argsort(-screened, kind="stable") == int(np.argmax(exact)))[0][0])
    assert rank < 0.01 * len(exact)
    # Stage A is a Gaussian bound: below the exact eye where the eye is open
    top = np.argsort(-exact)[:50]
    assert np.all(screened[top] < exact[top])


def test_screen_is_offered_only_for_the_eye_height():
    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post"], objective="com")
    assert src.screen_margins(IndexedSpace(src.space)) is None


def test_gp_with_a_perfect_screen_measures_the_optimum_second():
    """A screen equal to the margins: the start, then the screen's best code, which is the optimum."""
    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"])
    table, opt = grid_table(src)
    isp = IndexedSpace(src.space)
    grid = isp.values(isp.grid)
    margins = np.array([table.measure(isp.point(k)).margin for k in isp.grid])
    table.set_screen(grid, margins)
    r = tune(table, budget=20, seed=0)
    assert r.screen_s > 0.0
    assert r.history[1].margin == pytest.approx(opt)
    assert first_within(r.best_so_far(), opt, tol_db=0.01, units="mV") <= 2
    off = tune(table, budget=20, seed=0, optimizer_options={"screen": False})
    assert off.screen_s == 0.0 and off.history[1].margin != pytest.approx(opt)


def test_screen_not_used_when_every_code_is_measured():
    """A budget that covers the space: every code once anyway, no screen spent."""
    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post"])
    table, _ = grid_table(src)
    isp = IndexedSpace(src.space)
    table.set_screen(isp.values(isp.grid), np.zeros(len(isp.grid)))
    assert tune(table, budget=200, seed=0).screen_s == 0.0


def test_screened_state_resumes_without_the_screen():
    """The screen is not part of the JSON state (it is recomputed from the model); a restored optimizer
    proposes feasible, unmeasured codes without it."""
    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"])
    r = tune(src, budget=12, seed=2)  # the real engine: screened by SimulationSource.screen_margins
    assert r.screen_s > 0.0
    opt = GPOptimizer.from_state(r.optimizer_state, src.space)
    assert opt._screen is None and opt.screen is True
    p = opt.ask()
    key = opt.ispace.key_of(p)
    assert opt.ispace.is_feasible(key) and key not in {opt.ispace.key_of(e.codes) for e in r.history}


def test_sim_plan_counts_the_screen_in_the_gp_run(monkeypatch):
    """--sim's choice between the whole grid and the GP adds the screen's cost to the GP run: a screen
    made expensive tips the choice to the grid."""
    import types

    import eqtune.tune.plan as plan

    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"])
    # the probe's timings come from a clock that advances 10 ms per reading, not from the machine (whose
    # load once moved the measured GP step by 1.6 s between the two calls below)
    ticks = iter(range(10**6))
    monkeypatch.setattr(plan, "time", types.SimpleNamespace(perf_counter=lambda: 0.01 * next(ticks)))
    monkeypatch.setattr(plan, "LOOP_S", 1e-2)  # grid: 256 codes x ~10 ms = ~2.6 s
    monkeypatch.setattr(plan, "GP_STEP_S", 0.0)
    monkeypatch.setattr(plan, "SCREEN_S_PER_CODE", 0.0)
    cheap = plan.choose_sim_search(src, 12)
    assert cheap.mode == "gp"
    monkeypatch.setattr(plan, "SCREEN_S_PER_CODE", 0.05)  # 12.8 s of screen for 256 codes
    dear = plan.choose_sim_search(src, 12)
    assert dear.gp_s == pytest.approx(cheap.gp_s + 12.8, abs=1e-9)
    assert dear.mode == "exhaustive"
    com = SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"], objective="com")  # no screen for COM
    assert plan.choose_sim_search(com, 12).mode == "gp"


def test_sim_plan_below_the_initial_design_compares_the_gps_smallest_run(monkeypatch):
    """A budget the GP cannot run (below its initial design of d + 2 codes) is compared as that design,
    not as the budget: with a grid dearer than 3 GP steps but cheaper than the GP's 5, the grid is
    chosen (before, the GP was, and tune() then refused the budget). The probe's fastest timing is the
    one kept."""
    import types

    import eqtune.tune.plan as plan

    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"])  # 256 codes, initial design 5
    # a clock that advances a fixed step per reading: every probe takes one tick (1 ms), none of the
    # machine's load; the grid then costs 256 x (1 ms / 256 + LOOP_S), a GP step 1 ms + GP_STEP_S
    ticks = iter(range(10**6))
    monkeypatch.setattr(plan, "time", types.SimpleNamespace(perf_counter=lambda: 1e-3 * next(ticks)))
    monkeypatch.setattr(plan, "LOOP_S", 1e-3)  # grid ~0.257 s
    monkeypatch.setattr(plan, "GP_STEP_S", 0.063)  # 3 steps 0.192 s, 5 steps 0.32 s
    monkeypatch.setattr(plan, "SCREEN_S_PER_CODE", 0.0)
    low = plan.choose_sim_search(src, 3)
    assert low.mode == "exhaustive"
    assert low.gp_s == pytest.approx(5 * 0.064, rel=1e-9)
    assert "below its initial design" in low.reason
    # a budget the GP can run is compared as it is: 6 steps (0.384 s) cost more than the grid
    assert plan.choose_sim_search(src, 6).mode == "exhaustive"
    monkeypatch.setattr(plan, "LOOP_S", 2e-3)  # grid ~0.51 s: dearer than the GP's smallest run
    dear = plan.choose_sim_search(src, 3)
    assert dear.mode == "gp" and dear.gp_s == pytest.approx(0.32, rel=1e-9)
    from eqtune.errors import TuneError

    with pytest.raises(TuneError, match="smaller than the initial design"):
        tune(src, budget=3, optimizer="gp", seed=0)


def test_sim_plan_keeps_the_fastest_probe(monkeypatch):
    """Of the probe's repeated timings the fastest is kept: a first batch slowed 100x by the machine
    does not tip the choice."""
    import eqtune.tune.plan as plan

    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"])
    readings = iter([0.0, 25.6, 25.6, 25.601] + [0.0, 0.256, 0.256, 0.257] * 10)
    monkeypatch.setattr(plan, "time", __import__("types").SimpleNamespace(perf_counter=lambda: next(readings)))
    monkeypatch.setattr(plan, "LOOP_S", 0.0)
    monkeypatch.setattr(plan, "GP_STEP_S", 0.0)
    monkeypatch.setattr(plan, "SCREEN_S_PER_CODE", 0.0)
    got = plan.choose_sim_search(src, 12)
    assert got.grid_s == pytest.approx(0.256, rel=1e-9)  # 256 codes x 1 ms, not x 100 ms
    assert got.gp_s == pytest.approx(12 * 1e-3, rel=1e-9)


def test_cli_sim_says_it_screened(tmp_path):
    import json

    from click.testing import CliRunner

    from eqtune.cli import main

    r = CliRunner().invoke(main, ["tune", "c2m-10in", "--sim", "--optimizer", "gp", "--budget", "12", "--seed", "1"])
    assert r.exit_code == 0, r.output
    assert "GP prior: the engine's fast stage-A eye of every code" in r.output
    r = CliRunner().invoke(main, ["tune", "c2m-10in", "--sim", "--optimizer", "gp", "--budget", "12", "--seed", "1",
                                  "--json", "--optimizer-option", "screen=false"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["screen_s"] == 0.0


def test_screen_with_fixed_knobs_uses_them():
    """Knobs fixed by the user (here the CTLE and the amplitude) are part of every screened row."""
    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post"], fixed={"ctle_gdc": -4.0, "rx_amp": 2})
    isp = IndexedSpace(src.space)
    got = src.screen_margins(isp)
    eng = src._engines[0][2]
    taps, amp, idx, _ = eng._parse([dict(isp.point(k), ctle_gdc=-4.0, rx_amp=2.0) for k in isp.grid])
    assert len(set(idx.tolist())) == 1  # one CTLE setting: the fixed one
    a = eng._stage_a(taps, amp, idx, np.zeros((len(idx), 1)), eng.ber)
    assert got is not None and np.allclose(got, a.eh.max(axis=-1) * 1e3)
    free = SimulationSource("c2m-10in", ["rx_pre", "rx_post"], fixed={"rx_amp": 2})
    assert not np.allclose(free.screen_margins(IndexedSpace(free.space)), got)  # CTLE left free: its best


def test_unique_rows_matches_numpy():
    from eqtune.eye.engine import _unique_rows

    rng = np.random.default_rng(3)
    for shape, levels in (((500, 4), 5), ((300, 1), 3), ((200, 12), 60)):  # the last one overflows: fallback
        m = rng.integers(0, levels, shape).astype(float) * 0.02 - 0.1
        u, inv = _unique_rows(m)
        u2, inv2 = np.unique(m, axis=0, return_inverse=True)
        assert np.array_equal(u, u2) and np.array_equal(inv, np.asarray(inv2).reshape(-1))
        assert np.array_equal(u[inv], m)


def test_table_screen_for_another_grid_is_refused():
    from eqtune.errors import TuneError

    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post"])
    table, _ = grid_table(src)
    isp = IndexedSpace(src.space)
    grid = isp.values(isp.grid)
    table.set_screen(grid[::-1], np.arange(len(grid), dtype=float))  # rows in another order
    with pytest.raises(TuneError, match="another grid"):
        table.screen_margins(isp)
