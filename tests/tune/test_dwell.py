"""The sequential dwell (eqtune.tune.dwell): its intervals against a second method, its error rate by
simulation, and the pooled noise and final-pick guard of eqtune.tune.recommend."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.tune.dwell import BETTER, EQUAL, WORSE, SequentialDwell, poisson_interval
from eqtune.tune.recommend import guard_pick, pooled_variance


@pytest.mark.parametrize("k", [0, 1, 3, 17, 250])
def test_garwood_interval_matches_the_gamma_form(k):
    """Garwood's chi-square limits equal the gamma quantiles: lower Gamma(k).ppf(a), upper
    Gamma(k + 1).ppf(1 - a) (the Poisson-gamma relation, e.g. Johnson, Kemp & Kotz, Univariate Discrete
    Distributions, 3rd ed., 2005, eq. 4.38)."""
    from scipy.stats import gamma

    lo, hi = poisson_interval(k, 0.99)
    assert hi == pytest.approx(float(gamma.ppf(0.995, k + 1)), rel=1e-9)
    assert lo == (0.0 if k == 0 else pytest.approx(float(gamma.ppf(0.005, k)), rel=1e-9))


def test_zero_errors_upper_bound_is_the_three_over_n_rule():
    t = SequentialDwell(looks=1, alpha=0.10)  # one look: each side 5 %, upper = -ln(0.05) = 2.996
    assert t.interval(10**12, 0)[1] == pytest.approx(2.995732 / 1e12, rel=1e-5)


def test_verdicts():
    t = SequentialDwell()
    ref = (3 * 10**12, 0)  # an error-free incumbent at the 1e-12 dwell
    assert t.verdict((10**11, 40), ref) == WORSE  # a 4e-10 code: refuted at the first look
    assert t.verdict((10**11, 0), ref) is None  # error-free too: cannot be told apart
    assert t.verdict((10**12, 0), (10**12, 500)) == BETTER
    assert t.verdict((10**12, 20), (10**12, 25)) is None  # within the counting noise, bands too wide
    assert t.verdict((10**12, 480), (10**12, 500)) == EQUAL  # both within [426, 559]: a 1.31 x band
    # four million errors each, 0.1 % apart: equal within the indifference band, at the first look
    assert t.verdict((10**11, 4_000_000), (10**12, 40_040_000)) == EQUAL
    assert t.verdict((10**12, 5), None) is None  # nothing to compare with: dwell on
    assert t.fractions() == [1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0]


def test_wrong_decisions_stay_below_alpha_over_all_looks():
    """Equal BERs (no right answer but "undecided" or "equal"): over every look, the share of runs that
    call one better or worse stays below alpha (Bonferroni over the looks). Simulated Poisson counts."""
    rng = np.random.default_rng(5)
    t = SequentialDwell(looks=6, alpha=0.05)
    ber, bits = 2e-11, 3 * 10**12
    ref = (bits, int(rng.poisson(ber * bits)))
    wrong = 0
    runs = 2000
    for _ in range(runs):
        k = 0
        n = 0
        done = 0.0
        for f in t.fractions():
            step = int(bits * (f - done))
            done = f
            n += step
            k += int(rng.poisson(ber * step))
            v = t.verdict((n, k), ref)
            if v in (WORSE, BETTER):
                wrong += 1
                break
            if v == EQUAL:
                break
    assert wrong / runs < 0.05


def test_pooled_variance_is_the_within_code_mean_square():
    obs = [("a", 1.0), ("a", 1.2), ("b", 3.0), ("b", 2.6), ("b", 2.9), ("c", 9.0)]
    var, dof = pooled_variance(obs)
    a, b = np.array([1.0, 1.2]), np.array([3.0, 2.6, 2.9])
    want = (np.sum((a - a.mean()) ** 2) + np.sum((b - b.mean()) ** 2)) / (1 + 2)
    assert dof == 3 and var == pytest.approx(want)
    assert pooled_variance([("a", 1.0), ("b", 2.0)]) is None  # no repeat: no estimate


class _Obs:
    """The parts of an optimizer guard_pick reads."""

    def __init__(self, keys, ys, variances):
        self.keys, self.ys, self.margin_vars = keys, ys, variances

    def mean_by_point(self):
        out = {}
        for k in dict.fromkeys(self.keys):
            v = [y for kk, y in zip(self.keys, self.ys) if kk == k]
            out[k] = (float(np.mean(v)), len(v))
        return out


def test_guard_pick_refuses_a_pick_the_measurements_refute():
    a, b = (0,), (1,)
    # b measured 1 mV above the pick a, noise sd 0.1 mV (se of the gap 0.14): the measurements refute a
    assert guard_pick(_Obs([a, b], [10.0, 11.0], [0.01, 0.01]), a) == b
    # 0.1 mV apart with the same noise (within one se of the gap): the model's pick stands
    assert guard_pick(_Obs([a, b], [10.0, 10.1], [0.01, 0.01]), a) == a
    # no noise known: a measured code is what it read
    assert guard_pick(_Obs([a, b], [10.0, 10.1], [None, None]), a) == b
