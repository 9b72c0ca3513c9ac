"""Noise-aware recommendation for measured margins: what a bit-error count is worth, which measured
code to recommend, and when to measure the incumbent again.

A live margin comes from a bit-error count: ``k`` errors in ``N`` bits. Its noise is therefore known
from the measurement itself, it is not a constant to be fitted:

* Binomial: ``k ~ Bin(N, p)``, ``Var(k / N) = p (1 - p) / N``; Poisson (``N p`` small and ``N`` large,
  how error counters are modelled, e.g. ``eqtune.emulate.link``): ``Var(k / N) = p / N``
  (Casella & Berger, *Statistical Inference*, 2nd ed., 2002, Table B.1: means and variances of the
  binomial and Poisson distributions).
* Delta method (Casella & Berger 2002, Theorem 5.5.24): a margin ``g(p)`` has
  ``Var(g(p_hat)) ~= g'(p)^2 Var(p_hat)``. With ``q = Qinv(p)`` (Gaussian tail,
  ``Q(x) = erfc(x / sqrt 2) / 2``): ``dq/dp = -1 / phi(q)``, ``phi`` the standard normal density.
  So for the margins of :mod:`eqtune.tune.live`:

  - ``ber`` (``-log10 p``): ``Var = (1 - p) / (N p ln(10)^2)``, i.e. ``1 / (k ln(10)^2)`` (Poisson);
  - ``q_db`` (``20 log10 q``): ``Var = (20 / (q ln 10))^2 Var(p_hat) / phi(q)^2``;
  - a margin linear in ``q`` (``(q - c) / a``, e.g. an eye height of a Gaussian-noise-limited link,
    ``benchmarks/bench_tune_noisy.py``): ``Var = Var(p_hat) / (a phi(q))^2``.

  A zero count is evaluated at the counting floor ``2.996 / N`` (the 95 % bound the margin itself
  uses, ``eqtune.tune.live.ber_floor``).

Why it matters (IEEE tracy 10 in, where only 0.9 % of the codes open an eye): the GP fitted
ONE white-noise level to every observation. Closed eyes, the landscape's roughness and the counting
noise all went into it, so its posterior mean smoothed the top codes towards their neighbours, and
with more data the best posterior mean moved from the optimum to the runner-up 0.144 dB below it
(whose neighbours are better). Here the recommendation uses the known per-observation variances
instead: the posterior at the measured codes with the fitted kernel and the noise each observation
actually had (Rasmussen & Williams, *Gaussian Processes for Machine Learning*, MIT Press 2006,
eqs. 2.22-2.24 with a diagonal noise matrix), so a precisely measured code keeps its own value and a
code seen once with few errors borrows from its neighbours.

The recommendation is the measured code with the best lower confidence bound ``mean - z sd`` of that
posterior (``RECOMMEND_Z``): between two codes of the same mean, the one measured more often.
``remeasure_key``: when the recommended code and the runner-up are within ``CLOSE_Z`` posterior
standard deviations of each other, the less certain of the two is measured again (a repeat is a
measurement and counts against the budget), at most every other step. Constants chosen on the library
channels (c2m-4in, c2m-10in host_rx) only; see docs/tuning.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eqtune.errors import TuneError
from eqtune.jsonutil import finite_or_none

#: 95 % upper bound of a zero-error Poisson count (Garwood), as ``eqtune.tune.live.K0_95``
K0_95 = -math.log(0.05)
#: recommendation: the measured code with the best ``mean - RECOMMEND_Z * sd`` (posterior, margin units)
RECOMMEND_Z = 1.0
#: re-measure when the top two codes are closer than ``CLOSE_Z`` combined posterior sds
CLOSE_Z = 1.0
#: at most this share of the measurements after the initial design are repeats
MAX_REPEAT_SHARE = 0.5
#: the endgame: the last ``ENDGAME_SHARE`` of a known budget re-measures the top two while they are within
#: ``ENDGAME_Z`` combined posterior sds (``remeasure_key``)
ENDGAME_SHARE = 0.2
ENDGAME_Z = 2.0
#: key of a measurement's metrics that carries the variance of its margin (margin units squared)
VARIANCE_KEY = "margin_var"
COUNT_MODELS = ("binomial", "poisson")

Key = tuple[int, ...]


def _phi(q: float) -> float:
    """Standard normal density."""
    return math.exp(-0.5 * q * q) / math.sqrt(2.0 * math.pi)


def _qinv(p: float) -> float:
    """``Qinv(p) = sqrt(2) erfcinv(2 p)`` (Gaussian tail inverse), ``p`` in (0, 0.5]."""
    from scipy.special import erfcinv

    return math.sqrt(2.0) * float(erfcinv(2.0 * min(max(p, 1e-300), 0.5)))


def counted_ber(errors: int, bits: int) -> float:
    """The BER a count stands for, floored at the counting limit: ``max(errors, 2.996) / bits``, <= 0.5."""
    if bits <= 0:
        raise TuneError("the BER measurement counted no bits: its noise is unknown")
    return min(0.5, max(float(errors), K0_95) / float(bits))


def ber_variance(ber: float, bits: int, model: str = "binomial") -> float:
    """Variance of an estimated BER ``k / N`` (``N = bits``): ``p (1 - p) / N`` (binomial) or ``p / N``
    (Poisson). Casella & Berger 2002, Table B.1."""
    if model not in COUNT_MODELS:
        raise TuneError(f"unknown count model '{model}': use {' or '.join(COUNT_MODELS)}")
    if bits <= 0:
        raise TuneError("the BER measurement counted no bits: its noise is unknown")
    p = float(ber)
    return p * (1.0 - p) / bits if model == "binomial" else p / bits


def margin_slope(ber: float, metric: str, q_per_unit: float | None = None) -> float:
    """``d margin / d BER`` at ``ber`` for a margin ``metric``: "ber" (``-log10 BER``), "q_db"
    (``20 log10 Qinv(BER)``) or "q_linear" (``(Qinv(BER) - c) / a`` with ``a = q_per_unit``)."""
    p = float(ber)
    if metric == "ber":
        return -1.0 / (p * math.log(10.0))
    q = _qinv(p)
    dq = -1.0 / max(_phi(q), 1e-300)  # d Qinv / dp
    if metric == "q_db":
        return 20.0 / (max(q, 1e-6) * math.log(10.0)) * dq
    if metric == "q_linear":
        if not q_per_unit:
            raise TuneError("a margin linear in Q needs its scale (Q per margin unit)")
        return dq / float(q_per_unit)
    raise TuneError(f"metric '{metric}' is not a BER metric: use ber, q_db or q_linear")


def margin_variance(errors: int, bits: int, metric: str = "ber", *, q_per_unit: float | None = None,
                    model: str = "binomial") -> float:
    """Variance (margin units squared) of the margin computed from ``errors`` in ``bits`` (delta method,
    see the module notes); a zero count is evaluated at the counting floor."""
    p = counted_ber(int(errors), int(bits))
    return margin_slope(p, metric, q_per_unit) ** 2 * ber_variance(p, int(bits), model)


def observation_variance(metrics: Mapping[str, Any] | None) -> float | None:
    """The margin variance a measurement reported (``metrics["margin_var"]``), None when unknown."""
    if not metrics:
        return None
    v = finite_or_none(metrics.get(VARIANCE_KEY))
    return v if v is not None and v >= 0.0 else None


def standardized_variances(variances: Sequence[float | None], y: np.ndarray, warp: tuple[float, float],
                           scale: float) -> np.ndarray | None:
    """Per-observation noise of the GP's target ``t = -(w(y) - mu) / scale`` (``w``: the output warping
    ``(median, s)``: ``w(y) = med - s log1p((med - y) / s)`` below the median, identity above):
    ``Var(t) = w'(y)^2 Var(y) / scale^2`` (delta method). None when any variance is unknown."""
    if not variances or any(v is None for v in variances):
        return None
    v = np.asarray(variances, dtype=float)
    y = np.asarray(y, dtype=float)
    med, s = warp
    dw = np.ones_like(y)
    if s > 0.0:
        below = y < med
        dw[below] = 1.0 / (1.0 + (med - y[below]) / s)
    out: np.ndarray = dw ** 2 * v / float(scale) ** 2
    return out


def denoised_posterior(K: np.ndarray, t: np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of the noise-free function at the training inputs, given the noise-free
    kernel matrix ``K`` (n, n), targets ``t`` (zero prior mean) and per-observation noise variances
    ``noise`` (n): mean = K (K + D)^-1 t, cov = K - K (K + D)^-1 K with D = diag(noise)
    (Rasmussen & Williams 2006, eqs. 2.22-2.24)."""
    from scipy.linalg import cho_factor, cho_solve

    K = np.asarray(K, dtype=float)
    n = len(K)
    D = np.asarray(noise, dtype=float) + 1e-10 * max(float(np.mean(np.diag(K))), 1e-12)
    c = cho_factor(K + np.diag(D), lower=True)
    mean = K @ cho_solve(c, np.asarray(t, dtype=float))
    var = np.diag(K) - np.einsum("ij,ji->i", K, cho_solve(c, K))
    return mean, np.sqrt(np.maximum(var, 0.0)) if n else var


def nugget(gp: Any, unknown: np.ndarray) -> float:
    """The fitted white-noise variance (standardized) read as the codes' own deviation from the smooth
    kernel, when every observation's noise is known (then the fit's white noise is what is left over:
    the landscape's roughness); 0 when some noise is unknown (then it is at least partly noise)."""
    if bool(np.any(unknown)):
        return 0.0
    return float(getattr(gp, "noise_", None) or 0.0)


@dataclass
class Contest:
    """The measured codes ranked by the noise-aware posterior (margin units).

    ``keys``: distinct measured codes; ``mean`` / ``sd``: posterior of the noise-free margin there;
    ``count``: measurements of each; ``order``: indices, best lower confidence bound first."""

    keys: list[Key]
    mean: np.ndarray
    sd: np.ndarray
    count: np.ndarray
    order: np.ndarray

    @property
    def best(self) -> int:
        return int(self.order[0])

    @property
    def runner_up(self) -> int | None:
        return int(self.order[1]) if len(self.order) > 1 else None

    def close(self, z: float = CLOSE_Z) -> bool:
        """Whether the top two are within ``z`` combined posterior sds of each other."""
        r = self.runner_up
        if r is None:
            return False
        b = self.best
        gap = float(self.mean[b] - self.mean[r])
        return abs(gap) < z * math.hypot(float(self.sd[b]), float(self.sd[r]))


def contest(opt: Any, z: float | None = None) -> Contest | None:
    """The noise-aware ranking of ``opt``'s measured codes (a fitted ``GPOptimizer`` whose observations
    all carry a known variance), None otherwise (the caller then keeps its own ranking)."""
    variances = getattr(opt, "margin_vars", None)
    if not variances or len(variances) != len(opt.ys) or getattr(opt, "has_prior", False):
        return None
    if all(v is None for v in variances):
        return None
    gp = opt._fit()
    if gp is None or not hasattr(gp, "kernel_"):
        return None
    from eqtune.tune.base import keys_array

    ys = np.asarray(opt.ys, dtype=float)
    mu, scale = opt._ystats
    noise = standardized_variances([0.0 if v is None else v for v in variances], ys, opt._warp, scale)
    if noise is None:
        return None
    unknown = np.array([v is None for v in variances])
    noise[unknown] = float(getattr(gp, "noise_", None) or 0.0)  # e.g. warm observations: the fitted noise
    keys_all = keys_array(opt.keys, opt.ispace.d)
    X = opt._inputs(keys_all)
    # skopt zeroed the fitted white noise in kernel_: K is the smooth part. What the fit put in the white
    # noise on top of the known variances is each code's own deviation from the smooth model (it repeats
    # when the code is measured again): signal, fully correlated between measurements of one code.
    same = np.all(keys_all[:, None, :] == keys_all[None, :, :], axis=2)
    K = gp.kernel_(X) + nugget(gp, unknown) * same
    t = -(opt._warp_apply(ys) - mu) / scale
    t_mean, t_sd = denoised_posterior(K, t, noise)
    y, dy = opt._warp_inverse(mu - scale * t_mean)
    sd = dy * scale * t_sd
    first: dict[Key, int] = {}
    for i, k in enumerate(opt.keys):
        first.setdefault(k, i)
    idx = np.array(list(first.values()))
    keys = list(first)
    counts = np.array([opt.keys.count(k) for k in keys])
    mean, sdv = y[idx], sd[idx]
    z = RECOMMEND_Z if z is None else float(z)
    order = np.argsort(-(mean - z * sdv), kind="stable")
    return Contest(keys, mean, sdv, counts, order)


def tell_measured(opt: Any, point: Mapping[str, float], margin: float, metrics: Mapping[str, Any] | None) -> None:
    """Tell ``opt`` a measurement, with its known variance when the optimizer takes one (the GP)."""
    var = observation_variance(metrics)
    if var is not None and getattr(opt, "kind", "") == "gp":
        opt.tell(point, margin, var)
    else:
        opt.tell(point, margin)


def recommend_key(opt: Any, z: float | None = None) -> Key | None:
    """The measured code with the best lower confidence bound of the noise-aware posterior, None when
    the observations carry no known variance (see ``contest``)."""
    c = contest(opt, z)
    return None if c is None else c.keys[c.best]


def in_endgame(remaining: int | None, budget: int | None, share: float | None = None) -> bool:
    """Whether the last ``share`` of a known ``budget`` has begun (``remaining`` measurements left, at
    least one): the final pick is made soon, so what it decides between gets the measurements."""
    share = ENDGAME_SHARE if share is None else float(share)
    if remaining is None or not budget or share <= 0.0 or remaining < 1:
        return False
    return remaining <= max(1, int(round(share * budget)))


def remeasure_key(opt: Any, *, z_close: float | None = None, max_share: float | None = None,
                  n_initial: int = 0, remaining: int | None = None, budget: int | None = None) -> Key | None:
    """The code to measure again next, or None to search on.

    When the recommendation and the runner-up are within ``z_close`` combined posterior sds, the less
    certain of the two (larger posterior sd) is measured again - but never two repeats in a row and at
    most ``max_share`` of the measurements after the first ``n_initial`` are repeats (defaults: the
    module's ``CLOSE_Z`` and ``MAX_REPEAT_SHARE``; ``z_close`` 0 = never).

    The endgame (``remaining`` of a known ``budget`` measurements left, ``in_endgame``): the pick is
    made soon, so the two it decides between are measured again while they are within ``ENDGAME_Z``
    sds, repeats in a row allowed, no share limit, as long as the pick's expected shortfall
    (``pick_regret``) is larger than the best expected improvement of a new code
    (``eqtune.tune.acquisition.best_gain``): while the search still finds better codes, it searches. Between two systems, giving the next sample to the
    one whose mean is less certain is the two-design case of optimal computing budget allocation (Chen,
    Lin, Yucesan & Chick, "Simulation budget allocation for further enhancing the efficiency of ordinal
    optimization", Discrete Event Dyn. Syst. 10, 2000: n_1 / n_2 = sigma_1 / sigma_2 for two designs)."""
    z_close = CLOSE_Z if z_close is None else float(z_close)
    max_share = MAX_REPEAT_SHARE if max_share is None else float(max_share)
    if z_close <= 0.0 or max_share <= 0.0:
        return None
    endgame = in_endgame(remaining, budget)
    c = contest(opt)
    if c is None or not c.close(max(z_close, ENDGAME_Z) if endgame else z_close):
        return None
    if endgame:
        from eqtune.tune.acquisition import best_gain

        # a repeat pays only while the pick's expected shortfall exceeds what a new code is expected to add
        return _less_certain(c) if pick_regret(c) > best_gain(opt) else None
    keys = list(opt.keys)
    if len(keys) >= 2 and keys[-1] in keys[:-1]:
        return None  # the last measurement was a repeat: search on
    after = keys[n_initial:]
    repeats = sum(1 for i, k in enumerate(after, n_initial) if k in keys[:i])
    if after and repeats + 1 > max_share * (len(after) + 1):
        return None
    return _less_certain(c)


def pick_regret(c: Contest) -> float:
    """Expected shortfall (margin units) of picking the recommendation when the runner-up may be the
    better code: ``E[max(D, 0)]`` for ``D ~ N(delta, s^2)``, ``delta`` the runner-up's posterior mean minus
    the pick's, ``s`` their combined sd: ``delta Phi(delta / s) + s phi(delta / s)`` (the normal
    expected-improvement integral, Jones, Schonlau & Welch, J. Global Optim. 13, 1998, eq. 15)."""
    r = c.runner_up
    if r is None:
        return 0.0
    b = c.best
    delta = float(c.mean[r] - c.mean[b])
    s = math.hypot(float(c.sd[b]), float(c.sd[r]))
    if s <= 0.0:
        return max(delta, 0.0)
    u = delta / s
    return delta * 0.5 * math.erfc(-u / math.sqrt(2.0)) + s * _phi(u)


def _less_certain(c: Contest) -> Key:
    """Of the recommendation and the runner-up, the one with the larger posterior sd."""
    b, r = c.best, c.runner_up
    assert r is not None
    return c.keys[b] if c.sd[b] >= c.sd[r] else c.keys[r]


#: the "settled" stop: nothing left whose upper bound ``mean + SETTLED_Z sd`` beats the incumbent's lower
#: bound ``mean - SETTLED_Z sd`` (posterior, margin units; one-sided 97.7 % each)
SETTLED_Z = 2.0
#: unmeasured codes are bounded by the GP posterior when the feasible space is enumerated and no larger
SETTLED_MAX_CODES = 50_000


@dataclass
class Settlement:
    """Whether any code can still beat the incumbent (margin units): the incumbent's lower bound,
    the highest upper bound of any other code (measured or not) and that code's key."""

    settled: bool
    incumbent: Key
    incumbent_low: float
    best_other_high: float
    other: Key | None
    unmeasured: int  # feasible codes not measured yet (bounded by the GP posterior)
    contenders: list[Key]  # measured codes whose upper bound still reaches the incumbent's lower bound
    unmeasured_contenders: int  # unmeasured codes whose upper bound still reaches it

    def describe(self) -> str:
        return (f"nothing left can beat the incumbent: its lower bound {self.incumbent_low:.3f} is above every "
                f"other code's upper bound (best {self.best_other_high:.3f}; {self.unmeasured} codes unmeasured)")


def settlement(opt: Any, z: float = SETTLED_Z, max_codes: int = SETTLED_MAX_CODES) -> Settlement | None:
    """The settled test of a fitted ``GPOptimizer``: the incumbent is its recommendation; measured codes
    are bounded by the noise-aware posterior (``contest``) when every observation carries a known
    variance, else (a transfer prior, unknown noise) like the unmeasured ones by the GP's predictive
    posterior of the noise-free margin (R&W 2006 eqs. 2.25-2.26). None when it cannot be decided (no
    model yet, a space too large to enumerate): the caller then searches on."""
    grid = getattr(opt.ispace, "grid", None)
    if grid is None or len(grid) > max_codes or opt._fit() is None:
        return None
    from eqtune.tune.base import keys_array

    c = contest(opt)
    measured = list(c.keys) if c is not None else list(opt.mean_by_point())
    seen = set(measured)
    todo = [k for k in (tuple(int(v) for v in row) for row in grid) if k not in seen]
    keys = (todo if c is not None else measured + todo)
    mean = np.empty(0)
    sd = np.empty(0)
    if keys:
        t_mean, t_std = opt._predict(keys_array(keys, opt.ispace.d), return_std=True)
        mu, scale = opt._ystats
        y, dy = opt._warp_inverse(mu - scale * np.asarray(t_mean))
        mean, sd = np.asarray(y, dtype=float), np.asarray(dy * scale * np.asarray(t_std), dtype=float)
    if c is not None:
        keys = list(c.keys) + keys
        mean = np.concatenate([c.mean, mean])
        sd = np.concatenate([c.sd, sd])
        inc = c.keys[c.best]
    else:
        rec = opt.recommend()
        if rec is None:
            return None
        inc = opt.ispace.key_of(rec)
    where = {k: i for i, k in enumerate(keys)}
    if inc not in where:
        return None
    b = where[inc]
    low = float(mean[b] - z * sd[b])
    high = mean + z * sd
    high[b] = -math.inf
    n_meas = len(measured)
    contenders = [keys[i] for i in range(len(keys)) if i < n_meas and high[i] >= low]
    n_up = int(np.sum(high[n_meas:] >= low))
    i = int(np.argmax(high)) if len(keys) > 1 else b
    top = float(high[i]) if len(keys) > 1 else -math.inf
    return Settlement(bool(top < low), inc, low, top, keys[i] if len(keys) > 1 else None, len(todo), contenders, n_up)


#: the smallest pooled variance used (margin units squared): a scope that repeats exactly still gets a
#: finite noise, so the posterior stays well conditioned
POOLED_FLOOR = 1e-8


def pooled_variance(observations: Sequence[tuple[Any, float]]) -> tuple[float, int] | None:
    """Pooled within-code variance of repeated measurements and its degrees of freedom:
    ``s^2 = sum_k sum_i (y_ki - mean_k)^2 / sum_k (n_k - 1)`` over every code (key) measured more than
    once (the one-way ANOVA within-group mean square, e.g. Montgomery, *Design and Analysis of
    Experiments*, 8th ed., 2013, sec. 3.3). ``observations``: (key, margin); a key may combine lane and
    codes (pooled per session). None before any repeat."""
    by: dict[Any, list[float]] = {}
    for k, y in observations:
        by.setdefault(k, []).append(float(y))
    dof = sum(len(v) - 1 for v in by.values() if len(v) > 1)
    if dof <= 0:
        return None
    ss = sum(float(np.sum((np.asarray(v) - np.mean(v)) ** 2)) for v in by.values() if len(v) > 1)
    return max(ss / dof, POOLED_FLOOR), int(dof)


#: the final-pick guard: a recommendation measured more than this many standard errors of the difference below
#: the best measured code
#: gives way to it (1: the pick may trail a measured code by noise, not by more)
GUARD_Z = 1.0


def guard_pick(opt: Any, key: Key, z: float | None = None) -> Key:
    """``key`` (the model's recommendation), unless a measured code's observed mean beats the
    recommendation's by more than ``z`` standard errors of the difference (each mean's variance
    ``sum(v_i) / n^2`` from its observations' known variances): then that best measured code. Without
    known variances a measured code is what it read, so the best observed mean wins. The model may
    prefer a code for its neighbours; it may not pick one the measurements themselves refute."""
    z = GUARD_Z if z is None else float(z)
    means: dict[Key, tuple[float, int]] = opt.mean_by_point()
    if key not in means:
        return key
    best: Key = max(means, key=lambda k: means[k][0])
    if best == key:
        return key
    gap = means[best][0] - means[key][0]
    if gap <= 0.0:
        return key
    variances = list(getattr(opt, "margin_vars", None) or [])
    if len(variances) != len(opt.ys) or any(v is None for k, v in zip(opt.keys, variances) if k in (best, key)):
        return best
    var = 0.0
    for k in (best, key):
        vs = [float(v) for kk, v in zip(opt.keys, variances) if kk == k]
        var += sum(vs) / len(vs) ** 2
    return best if gap > z * math.sqrt(var) else key


#: the pooled-count guard's one-sided level: Phi(-GUARD_Z), the same "one standard error" as the margin guard
COUNT_GUARD_ALPHA = 0.5 * math.erfc(GUARD_Z / math.sqrt(2.0))


def rate_better_p(better: tuple[int, int], than: tuple[int, int]) -> float:
    """One-sided p-value that the bit-error rate of ``better`` (bits, errors) is below that of ``than``
    (bits, errors): the exact conditional test for two Poisson rates. Given the ``k`` errors the two
    counted together, equal rates put each error in ``than`` with probability ``t = bits_than /
    (bits_better + bits_than)``, so ``k_than ~ Binomial(k, t)`` and ``p = P(X >= k_than)``
    (Przyborowski & Wilenski, Biometrika 31, 1940; the "C-test" of Krishnamoorthy & Thomson, J. Stat.
    Plan. Inference 119, 2004, eq. 1.2). It depends on the exposures: zero errors in few bits do not beat
    a few errors in many bits. 1.0 when ``than`` counted none (nothing can beat it)."""
    from scipy.stats import binom

    b1, e1 = int(better[0]), int(better[1])
    b2, e2 = int(than[0]), int(than[1])
    if b1 <= 0 or b2 <= 0 or e2 <= 0:
        return 1.0
    k = e1 + e2
    return float(binom.sf(e2 - 1, k, b2 / (b1 + b2)))


def rate_upper(count: tuple[int, int], alpha: float) -> float:
    """One-sided upper confidence bound (level ``1 - alpha``) of a bit-error rate from ``count`` (bits,
    errors): the exact Poisson (Garwood 1936) bound ``chi2_{1-alpha}(2 (k + 1)) / (2 N)``."""
    from scipy.stats import chi2

    bits, errors = int(count[0]), int(count[1])
    if bits <= 0:
        return math.inf
    return float(chi2.ppf(1.0 - alpha, 2 * (errors + 1))) / (2.0 * bits)


def count_guard(counts: Mapping[Key, tuple[int, int]], key: Key, alpha: float | None = None) -> Key:
    """``key`` (the pick), unless another measured code's pooled count (``counts``: bits, errors per code,
    every measurement of it summed, short and full dwells alike) shows a lower BER than the pick's at
    one-sided level ``alpha`` (``rate_better_p``; default ``COUNT_GUARD_ALPHA``): then, of those, the one
    with the lowest upper bound of its BER (``rate_upper``: the most surely good), and again from there
    until no code beats the pick.

    Why counts and not margins: a zero count is a bound (BER < 3/N), not a value. Read as a margin at its
    floor, a code error-free over a short screen looks worse than one that counted 4 errors over the full
    dwell, and the model, the margin guard (means of margins) and the search's neighbours all inherit
    that; the pooled counts do not (0 errors in 3.4e12 bits beats 4 in 3.4e12, p = 0.06)."""
    alpha = COUNT_GUARD_ALPHA if alpha is None else float(alpha)
    if key not in counts or alpha <= 0.0:
        return key
    seen = {key}
    for _ in range(len(counts)):
        ref = counts[key]
        better = [k for k, c in counts.items() if k != key and rate_better_p(c, ref) < alpha]
        if not better:
            break
        key = min(better, key=lambda k: (rate_upper(counts[k], alpha), -int(counts[k][0])))
        if key in seen:
            break
        seen.add(key)
    return key
