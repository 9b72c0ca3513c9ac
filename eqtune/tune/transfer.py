"""Transfer across lanes and modules: earlier lanes' measurements as the GP's prior mean.

The 8 lanes of a module, and the modules of one platform, share most of their channel: their margin
landscapes differ by a small, smooth offset (a few tenths of a dB of trace loss moves the optimum by a
code or two, if at all). So lane k starts from what lanes 1..k-1 measured:

* the prior mean m(x) is the posterior mean of a GP fitted to every earlier observation (all lanes
  pooled; lane-to-lane differences end up in its fitted noise);
* the new lane's GP models only the residual r = y - m(x), with the earlier fit's length scales (the
  landscape's shape is shared, only the offset is new) capped at ``RESID_LS_MAX`` (so the residual can
  still move the optimum by a code along an axis the pooled fit found flat), a smaller amplitude
  (``prior_amp`` times the earlier margins' spread) and its own small noise ``RESID_NOISE``,
  hyperparameters held: a few points cannot re-learn 16-36 length scales;
* the first code measured is the earlier lanes' best (the prior mean's argmax over their codes), and
  there is no space-filling initial design.

This is the "prior mean function" form of GP regression (Rasmussen & Williams, *Gaussian Processes for
Machine Learning*, MIT Press 2006, sec. 2.7, eq. 2.38: a fixed mean function m(x), the GP on y - m(x));
as transfer learning across related tasks it is the simplest member of the family surveyed by Bai et
al., "Transfer learning for Bayesian optimization: a survey" (arXiv:2302.05927, 2023, sec. 4.1 "warm
starting the surrogate"). Measured in benchmarks/bench_tune_fleet.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from eqtune.tune.optimizer import GPOptimizer

#: the residual GP's amplitude, as a fraction of the earlier margins' spread (sd of their upper half)
PRIOR_AMP = 0.25
#: upper bound of the residual GP's length scales (input units: a knob's whole range is 1). The pooled
#: prior fit often finds an axis flat (length scale ~20: lane-to-lane differences along it end up in its
#: noise), and a residual with that shape cannot follow the one or two codes by which this lane's optimum
#: differs (seen in benchmarks/bench_live_fleet.py on c2m-10in, a library channel: lanes stuck on the
#: earlier lanes' best rx_post 0.2-0.5 dB below their own optimum for 20 measurements)
RESID_LS_MAX: float | None = 0.5
#: white-noise variance of the residual GP (units of the earlier margins' spread, squared): the lane's own
#: measurement noise, not the pooled fit's noise (which holds the lane-to-lane differences and kept the
#: posterior on the prior mean). 3e-3 = a noise sd of 5.5 % of the spread; chosen on c2m-10in (library)
RESID_NOISE: float | None = 3e-3


class PriorModel:
    """What ``GPOptimizer._fit`` returns with a prior: the residual GP plus the prior mean, in the
    optimizer's standardized, negated units (``predict`` as skopt's acquisition functions call it)."""

    def __init__(self, resid_gp: Any, prior_mean: Callable[[np.ndarray], np.ndarray], d: int, den: np.ndarray,
                 sd: float) -> None:
        self.gp = resid_gp
        self.prior_mean = prior_mean  # keys (n, d) -> margins (original units)
        self.d = d
        self.den = den
        self.sd = sd

    def _keys(self, X: np.ndarray) -> np.ndarray:
        ret: np.ndarray = np.rint(np.asarray(X)[:, : self.d] * self.den).astype(np.int64)
        return ret

    def predict(self, X: np.ndarray, return_std: bool = False,
                **_: object) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        out = self.gp.predict(X, return_std=return_std)
        shift = np.asarray(self.prior_mean(self._keys(X)), dtype=float) / self.sd
        if return_std:
            t, s = out
            return np.asarray(t) - shift, s
        return np.asarray(out) - shift


def prior_observations(items: Any, names: Sequence[str]) -> list[tuple[dict[str, float], float]]:
    """(codes, margin) pairs from earlier results: ``TuneResult`` objects, their dicts, a
    ``{"points": [...], "margins": [...]}`` mapping, or (point, margin) pairs; only the tuned knobs'
    values are kept."""
    out: list[tuple[dict[str, float], float]] = []
    if items is None:
        return out
    if isinstance(items, Mapping) and "points" in items:
        return [({n: float(p[n]) for n in names}, float(m)) for p, m in zip(items["points"], items["margins"])]
    if hasattr(items, "history") or (isinstance(items, Mapping) and "history" in items):
        items = [items]
    for it in items:
        if hasattr(it, "history") and not isinstance(it, Mapping):
            out += [({n: float(e.codes[n]) for n in names}, float(e.margin)) for e in it.history]
        elif isinstance(it, Mapping) and "history" in it:
            out += [({n: float(e["codes"][n]) for n in names}, float(e["margin"]))
                    for e in it["history"] if e.get("margin") is not None]
        else:
            p, m = it
            out.append(({n: float(p[n]) for n in names}, float(m)))
    return out


def fit_prior(opt: GPOptimizer, keys: list[tuple[int, ...]], ys: list[float]) -> dict[str, Any]:
    """Fit the prior GP (a GPOptimizer of the same configuration on the earlier observations) and
    return what ``residual_model`` needs: the prior's posterior mean function, its fitted kernel, the
    margin spread and the earlier best key."""
    from eqtune.tune.optimizer import GPOptimizer

    cfg = dict(opt._config())
    cfg.update(budget=0, n_initial=1, corners=0)
    prior = GPOptimizer(opt.space, seed=opt.seed, ispace=opt.ispace, **cfg)
    for k, y in zip(keys, ys):
        prior.keys.append(tuple(int(v) for v in k))
        prior.ys.append(float(y))
        prior._seen.add(tuple(int(v) for v in k))
    gp = prior._fit()
    yarr = np.asarray(ys, dtype=float)
    top = yarr[yarr >= np.median(yarr)]
    spread = float(np.std(top)) if len(top) > 1 else 0.0
    if not np.isfinite(spread) or spread <= 1e-9:
        spread = max(float(np.std(yarr)), 1e-3)
    cache: dict[tuple[int, ...], float] = {}

    def mean(keys_arr: np.ndarray) -> np.ndarray:
        keys_arr = np.atleast_2d(keys_arr)
        todo = [tuple(int(v) for v in r) for r in keys_arr if tuple(int(v) for v in r) not in cache]
        if todo and gp is not None:
            pts: list[Mapping[str, float]] = [prior.ispace.point(k) for k in dict.fromkeys(todo)]
            mu, _ = prior.posterior(pts)
            cache.update({k: float(v) for k, v in zip(dict.fromkeys(todo), mu)})
        elif todo:
            cache.update({k: float(np.mean(yarr)) for k in todo})
        return np.array([cache[tuple(int(v) for v in r)] for r in keys_arr])

    best = prior.ranked()[0] if gp is not None else keys[int(np.argmax(yarr))]
    return {"mean": mean, "gp": gp, "spread": spread, "best": tuple(int(v) for v in best)}


def residual_model(opt: GPOptimizer, prior: Mapping[str, Any], X: np.ndarray, keys: np.ndarray, y: np.ndarray,
                   amp: float = PRIOR_AMP) -> tuple[PriorModel, tuple[float, float]]:
    """The residual GP on y - m(x) (m: the prior mean) with the prior fit's kernel, amplitude
    ``amp`` x the prior margins' spread, hyperparameters held; returns the model and (mu, sd)."""
    from skopt.learning import GaussianProcessRegressor
    from skopt.learning.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    sd = float(prior["spread"])
    r = np.asarray(y, dtype=float) - prior["mean"](keys)
    mu = float(np.mean(r)) if len(r) else 0.0
    t = -(r - mu) / sd
    pg = prior["gp"]
    if pg is not None:
        k = pg.kernel_
        with np.errstate(divide="ignore"):  # log(0) of the white noise skopt zeroed after the fit
            theta = np.array(k.theta, dtype=float)
        theta[0] = np.log(max(amp, 1e-3) ** 2)  # the constant (amplitude) of ConstantKernel * Matern
        if RESID_LS_MAX is not None:  # see RESID_LS_MAX
            theta[1:1 + X.shape[1]] = np.minimum(theta[1:1 + X.shape[1]], np.log(RESID_LS_MAX))
        if len(theta) > 1 + X.shape[1]:  # a WhiteKernel: the prior's fitted noise (zeroed in kernel_)
            noise = float(getattr(pg, "noise_", None) or 1e-6) if RESID_NOISE is None else RESID_NOISE
            theta[-1] = np.log(max(noise, 1e-6))
        kernel = k.clone_with_theta(theta)
    else:
        kernel = ConstantKernel(amp ** 2, "fixed") * Matern(np.full(X.shape[1], 0.5), "fixed", nu=2.5) \
            + WhiteKernel(1e-4, "fixed")
    gp = GaussianProcessRegressor(kernel=kernel, optimizer=None, normalize_y=False, alpha=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp.fit(X, t)
    return PriorModel(gp, prior["mean"], opt.ispace.d, opt.ispace._den, sd), (mu, sd)
