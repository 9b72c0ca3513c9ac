"""The pooled-count guard of a counted metric's pick (eqtune.tune.recommend.rate_better_p, count_guard):
the exact conditional test for two Poisson rates against its closed forms and a Monte Carlo of its
level, and the guard's choice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eqtune.tune.recommend import COUNT_GUARD_ALPHA, GUARD_Z, count_guard, rate_better_p


def test_the_level_is_one_standard_error_as_the_margin_guard():
    # Phi(-1) = 0.158655 (one-sided normal tail at one standard error)
    assert COUNT_GUARD_ALPHA == pytest.approx(0.5 * math.erfc(GUARD_Z / math.sqrt(2.0)))
    assert COUNT_GUARD_ALPHA == pytest.approx(0.158655, abs=1e-6)


def test_rate_better_p_matches_the_binomial_closed_forms():
    # every one of k errors in the pick, equal exposures: p = 0.5^k
    for k in range(1, 8):
        assert rate_better_p((10**12, 0), (10**12, k)) == pytest.approx(0.5 ** k)
    # unequal exposures: each error falls in the pick with t = b2 / (b1 + b2): p = t^k
    b1, b2 = 3.74e11, 3.37e12
    assert rate_better_p((b1, 0), (b2, 4)) == pytest.approx((b2 / (b1 + b2)) ** 4)
    # the general tail, summed by hand: P(X >= 3), X ~ Bin(5, 1/2) = (10 + 5 + 1) / 32
    assert rate_better_p((10**9, 2), (10**9, 3)) == pytest.approx(16 / 32)
    # nothing beats a pick that counted no errors; a reading without bits is no evidence
    assert rate_better_p((10**13, 0), (10**12, 0)) == 1.0
    assert rate_better_p((0, 0), (10**12, 5)) == 1.0


def test_rate_better_p_holds_its_level_under_equal_rates():
    """A Monte Carlo of equal BERs: the test says 'better' no more often than its level (it is exact and
    conservative for discrete counts)."""
    rng = np.random.default_rng(7)
    for mean1, mean2 in ((3.0, 3.0), (0.8, 8.0), (20.0, 5.0)):  # expected errors: exposures differ
        hits = sum(rate_better_p((mean1 * 1e12, int(rng.poisson(mean1))), (mean2 * 1e12, int(rng.poisson(mean2))))
                   < COUNT_GUARD_ALPHA for _ in range(4000))
        assert hits / 4000 <= COUNT_GUARD_ALPHA + 0.02


def test_count_guard_keeps_a_pick_the_counts_do_not_refute_and_replaces_one_they_do():
    pick, zero_full, zero_screen, twin = (9, 6, 4, 0), (8, 6, 4, 0), (8, 5, 4, 0), (9, 5, 4, 0)
    counts = {pick: (3.37e12, 4), zero_screen: (3.74e11, 0), twin: (3.37e12, 2)}
    assert count_guard(counts, pick) == pick  # a short error-free screen and a 2-vs-4 count prove nothing
    counts[zero_full] = (3.37e12, 0)  # error-free over the same bits as the pick's 4 errors: p = 1/16
    assert count_guard(counts, pick) == zero_full
    assert count_guard(counts, zero_full) == zero_full
    assert count_guard(counts, (1, 1, 1, 1)) == (1, 1, 1, 1)  # a pick without counts stands
    assert count_guard(counts, pick, alpha=0.05) == pick  # at 5 % one-sided, 1/16 is not enough


def test_count_guard_takes_the_most_surely_good_of_many_better_codes():
    """When many codes beat a pick by a mile (every p underflows to 0), the guard takes the one whose BER
    upper bound is lowest (an error-free code), not the first or the longest measured."""
    counts = {(2,): (9.4e10, 11_293_859_958), (3,): (3.0e12, 167_793_868_076), (6,): (9.4e10, 69_821),
              (8,): (9.4e10, 0), (9,): (9.4e10, 106)}
    assert count_guard(counts, (2,)) == (8,)
    assert count_guard(counts, (9,)) == (8,)
    assert count_guard(counts, (8,)) == (8,)
