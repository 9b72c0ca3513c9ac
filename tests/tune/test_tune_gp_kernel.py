"""The GP's fast pieces against scikit-learn / scikit-optimize (an implementation eqtune did not write),
and the acquisition's integer local search (``climb``) on spaces enumerated or too large to enumerate."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.serdes.knobs import Knob, KnobSpace
from eqtune.tune import GPOptimizer
from eqtune.tune.acquisition import climb, move_offsets
from eqtune.tune.gp_kernel import MaternLML, fast_gpr, pair_features
from eqtune.tune.space import IndexedSpace


def _kernel(p: int):
    from skopt.learning.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    return ConstantKernel(1.0, (1e-2, 1e2)) * Matern(np.full(p, 0.5), (0.05, 20.0), nu=2.5) \
        + WhiteKernel(1e-3, (1e-6, 1.0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_log_marginal_likelihood_is_sklearns(seed):
    """Value and gradient (in log hyperparameters) equal scikit-learn's GaussianProcessRegressor
    .log_marginal_likelihood for Constant * Matern 5/2 (ARD, 36 diagonal-direction features) + White,
    at random hyperparameters far from the start."""
    from skopt.learning import GaussianProcessRegressor

    rng = np.random.default_rng(seed)
    X = pair_features(rng.random((40, 6)))
    y = rng.standard_normal(40)
    k = _kernel(X.shape[1])
    gp = GaussianProcessRegressor(kernel=k, alpha=1e-8, noise="gaussian", optimizer=None).fit(X, y)
    theta = k.theta + rng.normal(0.0, 0.5, len(k.theta))
    want, want_grad = gp.log_marginal_likelihood(theta, eval_gradient=True)
    got, got_grad = MaternLML(X, y, noise=True)(theta)
    assert -got == pytest.approx(want, rel=1e-10)
    np.testing.assert_allclose(-got_grad, want_grad, rtol=1e-8, atol=1e-9)


def test_fast_log_marginal_likelihood_with_known_per_observation_noise_is_sklearns():
    """Per-observation alpha (the known variances of noisy BER counts, eqtune.tune.recommend, added on
    the diagonal as scikit-learn's array ``alpha``): same value and gradient as scikit-learn."""
    from skopt.learning import GaussianProcessRegressor

    rng = np.random.default_rng(9)
    X = pair_features(rng.random((30, 5)))
    y = rng.standard_normal(30)
    alpha = 1e-8 + rng.uniform(0.0, 0.2, 30) * (rng.random(30) < 0.7)  # some known, some unknown (0)
    k = _kernel(X.shape[1])
    gp = GaussianProcessRegressor(kernel=k, alpha=alpha, noise="gaussian", optimizer=None).fit(X, y)
    theta = k.theta + rng.normal(0.0, 0.5, len(k.theta))
    want, want_grad = gp.log_marginal_likelihood(theta, eval_gradient=True)
    got, got_grad = MaternLML(X, y, noise=True, alpha=alpha)(theta)
    assert -got == pytest.approx(want, rel=1e-10)
    np.testing.assert_allclose(-got_grad, want_grad, rtol=1e-8, atol=1e-9)
    # a scalar alpha would be a different likelihood: the array is really used
    assert MaternLML(X, y, noise=True, alpha=1e-8)(theta)[0] != pytest.approx(got, rel=1e-6)


def test_fast_log_marginal_likelihood_without_noise_term_and_singular_kernel():
    from skopt.learning import GaussianProcessRegressor
    from skopt.learning.gaussian_process.kernels import ConstantKernel, Matern

    rng = np.random.default_rng(5)
    X, y = rng.random((12, 3)), rng.standard_normal(12)
    k = ConstantKernel(2.0) * Matern(np.full(3, 0.3), nu=2.5)
    gp = GaussianProcessRegressor(kernel=k, alpha=1e-8, optimizer=None).fit(X, y)
    want, want_grad = gp.log_marginal_likelihood(k.theta, eval_gradient=True)
    got, got_grad = MaternLML(X, y, noise=False)(k.theta)
    assert -got == pytest.approx(want, rel=1e-10)
    np.testing.assert_allclose(-got_grad, want_grad, rtol=1e-8, atol=1e-9)
    # two identical inputs, no noise, no jitter: K is singular -> +inf, as scikit-learn's -inf lml
    Xd = np.vstack([X, X[:1]])
    v, g = MaternLML(Xd, np.append(y, 0.3), noise=False, alpha=0.0)(np.log([1.0, 1e3, 1e3, 1e3]))
    assert v == np.inf and not np.any(g)


@pytest.mark.filterwarnings("ignore")  # ConvergenceWarning at the length-scale bounds
def test_fast_predict_is_skopts():
    from skopt.learning import GaussianProcessRegressor

    rng = np.random.default_rng(3)
    X, y, Z = pair_features(rng.random((30, 4))), rng.standard_normal(30), pair_features(rng.random((500, 4)))
    k = _kernel(X.shape[1])
    a = GaussianProcessRegressor(kernel=k, alpha=1e-8, noise="gaussian", n_restarts_optimizer=0, random_state=0)
    b = fast_gpr(kernel=k, alpha=1e-8, noise="gaussian", n_restarts_optimizer=0, random_state=0)
    a.fit(X, y)
    b.fit(X, y)
    ma, sa = a.predict(Z, return_std=True)
    mb, sb = b.predict(Z, return_std=True)
    np.testing.assert_allclose(mb, ma, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sb, sa, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(b.predict(Z), ma, rtol=1e-9, atol=1e-12)


def _space6(constrained: bool = True) -> KnobSpace:
    knobs = tuple(Knob(n, tuple(range(m)), 0) for n, m in zip("abcdef", (9, 9, 9, 9, 9, 9)))
    cons = ((lambda m, names: m[:, 0] + m[:, 1] <= 12),) if constrained else ()
    return KnobSpace(knobs, cons)


def test_climb_returns_untaken_feasible_point_that_improves_on_its_start():
    """Score = minus the distance to (8, 8, 4, 4, 4, 4), which violates a + b <= 12; the best point
    near it (4 .. 8 on a and b) is taken. From a far start the climb ends at a feasible, untaken point
    whose score beats the start's; every step is a +-1/+-2 move, so it walks, it does not jump."""
    isp = IndexedSpace(_space6())
    target = np.array([8, 8, 4, 4, 4, 4], dtype=float)

    def score(rows):
        return -np.sum((np.asarray(rows, dtype=float) - target) ** 2, axis=1)

    start = np.array([[0, 0, 0, 0, 8, 8]], dtype=np.int32)
    taken = {(6, 6, 4, 4, 4, 4), (5, 7, 4, 4, 4, 4), (7, 5, 4, 4, 4, 4)}
    ends, s = climb(isp, score, start, score(start), taken)
    end = tuple(int(v) for v in ends[0])
    assert end not in taken and isp.is_feasible(end)
    assert s[0] > score(start)[0] and s[0] == score(ends)[0]
    # it is a local maximum of the moves among feasible untaken points
    nb = ends[0][None, :] + move_offsets(6)
    nb = nb[np.all((nb >= 0) & (nb <= 8), axis=1)]
    nb = nb[isp.space.feasible(isp.values(nb))]
    nb = np.array([r for r in nb if tuple(int(v) for v in r) not in taken])
    assert np.all(score(nb) <= s[0])
    assert end[0] + end[1] == 12  # on the constraint, next to the taken best points


def test_climb_start_at_a_maximum_stays():
    isp = IndexedSpace(_space6())
    start = np.array([[2, 2, 2, 2, 2, 2]], dtype=np.int32)

    def score(rows):
        return -np.sum((np.asarray(rows, dtype=float) - 2.0) ** 2, axis=1)

    ends, s = climb(isp, score, start, score(start), set())
    assert np.array_equal(ends, start) and s[0] == 0.0


def test_large_space_uses_local_search_without_enumerating(monkeypatch):
    """A space over the enumeration limit (here 9^6 = 531,441 points, limit 10,000) is never
    enumerated: no grid, and every proposal of a 30-step run is feasible, new and found by sampled
    candidates plus the local search on the acquisition (counted), with a margin that improves."""
    from eqtune.tune import acquisition

    calls = []
    real = acquisition.climb

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(acquisition, "climb", counting)
    sp = _space6()
    isp = IndexedSpace(sp, max_enumerate=10_000)
    assert isp.grid is None and isp.n_feasible is None

    def f(p):
        return -sum((p[n] - v) ** 2 for n, v in zip("abcdef", (6, 5, 3, 7, 2, 4)))

    opt = GPOptimizer(sp, seed=1, ispace=isp, n_candidates=600, tr_candidates=300, climb_min=0, local_every=2)
    seen = set()
    best = []
    for _ in range(30):
        p = opt.ask()
        key = tuple(int(p[n]) for n in "abcdef")
        assert key not in seen and isp.is_feasible(key)
        seen.add(key)
        opt.tell(p, f(p))
        best.append(max(best[-1], f(p)) if best else f(p))
    assert isp.grid is None
    assert calls  # the local search ran
    assert best[-1] > best[opt.n_initial - 1]  # the BO steps improved on the initial design


def test_in_box_is_the_brute_force_box_and_nearest_feasible_is_the_stable_argsort():
    sp = _space6()
    isp = IndexedSpace(sp)
    g = isp.grid.astype(int)
    rng = np.random.default_rng(0)
    for _ in range(20):
        lo = rng.integers(0, 9, size=6)
        hi = np.minimum(lo + rng.integers(0, 5, size=6), 8)
        want = g[np.all((g >= lo) & (g <= hi), axis=1)]
        assert np.array_equal(isp.in_box(lo, hi).astype(int), want)
    target = np.array([8.0, 8.0, 4.0, 4.0, 4.4, 4.0])  # infeasible (a + b <= 12): ties on the constraint
    dist = np.sum((isp.scaled(g) - isp.scaled(target[None, :])) ** 2, axis=1)
    order = [tuple(int(v) for v in g[i]) for i in np.argsort(dist, kind="stable")]
    exclude: set = set()
    for k in range(6):
        got = isp.nearest_feasible(target, exclude, rng)
        assert got == order[k]
        exclude.add(got)


def test_local_step_every_step_from_six_knobs_and_resumed_as_saved():
    from eqtune.tune import optimizer_from_state

    six, five = _space6(), KnobSpace(tuple(Knob(n, tuple(range(5)), 0) for n in "abcde"))
    assert GPOptimizer(six, seed=0).local_every == 1 and GPOptimizer(five, seed=0).local_every == 2
    o = GPOptimizer(six, seed=0, local_every=3)
    assert optimizer_from_state(o.state(), six).local_every == 3
    st = GPOptimizer(six, seed=0).state()
    del st["config"]["climb_starts"]  # a state saved before the local search existed resumes without it
    assert optimizer_from_state(st, six).climb_starts == 0
