"""Gaussian-process Bayesian optimizer: the scikit-optimize adapter (all skopt quirks live here).

Tested with scikit-optimize 0.10.2 (pinned in pyproject.toml; the project is dormant).

Why not ``skopt.Optimizer`` itself: its ask/tell loop optimizes the acquisition over the whole box
(``acq_optimizer="sampling"|"lbfgs"``) and has no notion of our feasibility constraints, so it would
propose infeasible points that we would have to penalize, it warns and re-proposes duplicate points on
integer spaces, its ``expected_minimum`` does nothing useful on integer dimensions, and its state is a
pickle. So this adapter keeps skopt's *model* and *acquisition functions* and does the loop itself:

* model: ``skopt.learning.GaussianProcessRegressor`` with a Matern 5/2 ARD kernel times a constant,
  plus a ``WhiteKernel`` for measurement noise (``noise="gaussian"``: skopt fits the white noise and
  removes it at prediction time, so the posterior is that of the noise-free margin; Rasmussen &
  Williams, *Gaussian Processes for Machine Learning*, MIT Press 2006, eq. 2.24/2.25 and ch. 4.2 for
  the Matern class, ch. 5.4 for the marginal-likelihood fit). Inputs are knob level indices scaled to
  [0, 1]; outputs are standardized. Hyperparameters by maximum marginal likelihood, warm-started
  from the previous fit with an L-BFGS-B iteration cap, plus ``n_restarts`` random restarts every
  ``restart_every`` fits - the light configuration that keeps ask/tell under 150 ms at 60
  observations. BLAS is held to one thread during the fit (tiny matrices, busy machines). The
  likelihood and the posterior variance are computed by ``eqtune.tune.gp_kernel`` (the same values as
  scikit-learn's, about 10x faster; ``fast_fit=False`` uses scikit-learn's own).
* diagonal directions (``directions="pairs"``, the default for 2..6 knobs): the GP's inputs are the
  scaled levels plus, for every pair of knobs, their half difference and half sum, each with its own
  ARD length scale (``pair_features``). Equalizer landscapes are ridges ACROSS the knob axes (more
  post-cursor with less CTLE peaking gives nearly the same eye), and an axis-aligned ARD kernel can
  only describe a diagonal ridge with short length scales on both knobs, i.e. many points. The
  augmented kernel is the stationary kernel with the metric M = sum_k a_k a_k^T / l_k^2 over the fixed
  directions a_k in {e_i, (e_i - e_j)/2, (e_i + e_j)/2}: a restricted form of the "factor analysis"
  distance M = Lambda Lambda^T + Psi (Rasmussen & Williams 2006, sec. 4.2, eq. 4.22). Measured in
  ``benchmarks/bench_tune.py``: it mostly pays on plateau ridges (see docs/tuning.md).
* length-scale prior (``ls_prior``, with the diagonal directions): the hyperparameters are the MAP
  estimate under a log-normal prior on the knob axes' length scales, log l_i ~ N(log 0.5, ls_prior^2),
  instead of the plain maximum of the marginal likelihood (Rasmussen & Williams 2006, sec. 5.2 and
  5.4.1: hyperpriors, maximizing log p(y|X,theta) + log p(theta); log-normal length-scale priors as in
  Hvarfner, Hellsten & Nardi, "Vanilla Bayesian optimization performs great in high dimensions",
  ICML 2024). Why: with d + d(d-1) length scales and 10-20 points, maximum likelihood often explains
  the data by one or two diagonal directions and sends every knob axis to the upper bound (knob
  "irrelevant"). On c2m-10in host_rx, seed 11, after 19 points that fit predicted 29.4 +- 0.5 mV for
  the one-code move to the optimum, which gives 35.2 mV; with the prior (sd 0.7) it predicts 33.8.
  The diagonal length scales stay free, so ridges are still learned. Used from
  ``LS_PRIOR_MIN_KNOBS`` (4) knobs up: on a clean 2-knob diagonal ridge, where maximum likelihood has
  enough points for its 4 length scales, the prior doubles the model's error. Measured over 60 seeds
  in ``benchmarks/bench_tune.py`` (docs/tuning.md).
* where to look next (``eqtune.tune.acquisition``, details and citations there): expected improvement
  (default; or PI / LCB) over FEASIBLE, not yet measured candidates only (uniform samples, half of them
  in a TuRBO-style trust region around the incumbent, the best points' neighbours and range-limit
  moves), refined by an integer local search on the acquisition in spaces of ``climb_min`` points or
  more; every ``local_every``-th step (every step from 6 knobs up) the best points' untried neighbour
  with the highest upper confidence bound. Constraints are met by construction, never by penalty
  values, and duplicates cannot be proposed. ``local_on_success`` (off since the diagonal
  directions: sum of the 30-seed medians 238 with, 223.5 without) makes the step after an
  improvement a local one too.
* output warping (``warp_y="log"``, ``eqtune.tune.warp``): margins below the median compressed
  logarithmically when the lower tail dominates the output scale; monotone, ``posterior`` maps back.
* ``noise_max``: upper bound of the fitted white-noise variance (standardized units). ``tune()``
  sets 0.01 for deterministic sources (simulation), where a large fitted noise only smooths the top;
  measured (live) margins keep the default 1.0.
* screening (simulation only, ``screen``; ``eqtune.tune.screen``): when the source can rank every code
  by the eye engine's closed-form stage-A eye (``SimulationSource.screen_margins``), that screen times
  a fitted scale is the GP's prior mean and the GP models only the rest; the initial design is the
  start plus the best screened codes, the acquisition is scored on the best ``screen_pool`` screened
  codes and the best points' neighbours, and local steps are off (``screen_local_every``). Live
  measurements have no screen: nothing changes there.
* initial design (``eqtune.tune.design``): the start point (default codes / profile / warm start) plus
  a scrambled Sobol sequence (scipy.stats.qmc; Owen scrambling) mapped to the nearest unused feasible
  point; with the screen, the best screened codes instead.
* recommendation: the evaluated point with the best GP posterior mean (noise-aware: not the
  luckiest single measurement). ``tune()`` uses the best measured point instead when the source is
  deterministic (simulation), where every measured value is exact.
* numpy integers are cast to python ``int``/``float`` everywhere; the state is plain JSON data and
  every random choice derives from ``(seed, number of observations)``, so ``from_state(state())``
  proposes exactly what the original run would have proposed next.

See the scikit-optimize documentation (https://scikit-optimize.github.io/stable/) for
``GaussianProcessRegressor`` (``noise``) and ``gaussian_ei``/``gaussian_lcb``/``gaussian_pi``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from eqtune.errors import TuneError
from eqtune.serdes.knobs import EqPoint, KnobSpace
from eqtune.tune import acquisition
from eqtune.tune.base import BaseOptimizer, keys_array, rng_for
from eqtune.tune.candidates import close_contender, limit_moves
from eqtune.tune.design import screened_design, sobol_design
from eqtune.tune.gp_kernel import (  # noqa: F401 - re-exported (public names of this module before the split)
    DIRECTIONS,
    LS_PRIOR_MIN_KNOBS,
    PAIR_MAX_KNOBS,
    MaternLML,
    _lbfgs,
    _one_thread,
    fast_gpr,
    pair_features,
)
from eqtune.tune.screen import Screen, prior_scale
from eqtune.tune.space import IndexedSpace, Key
from eqtune.tune.warp import IDENTITY, Warp, warp_apply, warp_inverse, warp_params

ACQUISITIONS = ("ei", "pi", "lcb")
#: how a local step scores the untried neighbours: upper confidence bound, or expected improvement
#: (``eqtune.tune.acquisition.local_ei``; live sessions, whose plateaus of equal readings trap the bound)
LOCAL_ACQUISITIONS = ("ucb", "ei")


def _skopt_gpr(**params: Any) -> Any:
    from skopt.learning import GaussianProcessRegressor

    return GaussianProcessRegressor(**params)


def default_local_every(d: int) -> int:
    """A local step every k-th step: k = 2 up to 5 knobs; from 6 knobs up every step (k = 1: the
    expected-improvement step only when every neighbour of the best points is measured). Chosen on the
    library's 6-knob problem (c2m-10in serdes, seeds 0-4: median 83 -> 60 evaluations to 0.1 dB,
    benchmarks/bench_tune.py; docs/tuning.md), where EI spends its steps on the far corners of the
    36-length-scale model while the top is a long, bumpy diagonal ridge."""
    return 2 if d <= 5 else 1


def default_n_initial(d: int) -> int:
    """Initial-design size for ``d`` knobs (start point included): d + 2, between 4 and 10."""
    return int(min(10, max(4, d + 2)))


class GPOptimizer(BaseOptimizer):
    """Bayesian optimization over a (constrained, stepped) knob space; maximizes the margin.

    Parameters: ``seed`` (stored; drawn when ``None``), ``start`` (first design point),
    ``n_initial`` (design size incl. the start point), ``acq`` ("ei" | "pi" | "lcb"), ``xi``
    (EI/PI exploration, in standardized-margin units), ``kappa`` (LCB), ``n_candidates`` (feasible
    candidates sampled per ask), ``n_restarts`` (random marginal-likelihood restarts, every
    ``restart_every`` fits), ``noise`` (fit a white-noise term; keep ``True`` for measured margins),
    ``local_every`` / ``kappa_local`` (a local UCB step every k-th step after the design; 0 = never;
    default ``default_local_every``: 2, from 6 knobs up 1),
    ``local_on_success`` (a local step after every improving step), ``trust_region`` / ``tr_init`` /
    ``tr_success`` / ``tr_fail`` / ``tr_candidates`` / ``global_candidates`` (trust-region candidates,
    see the module notes), ``warp_y`` ("log" | "none") / ``warp_q`` / ``warp_scale`` / ``warp_gate``
    (output warping), ``noise_max`` (white-noise bound), ``exploit_every`` (every k-th step the
    posterior-mean argmax over the candidates; 0 = never), ``axis_first`` (local steps try the
    incumbent's one-knob moves first), ``local_acq`` ("ucb" | "ei": how a local step scores the
    neighbours), ``ls_min`` (lower bound of the scaled Matern length scales),
    ``directions`` ("pairs": length scales along the knob axes and the diagonals of every pair of knobs,
    up to ``PAIR_MAX_KNOBS`` knobs; "axes": along the knob axes only, the configuration before it),
    ``ls_prior`` (sd of the log-normal prior on the knob axes' length scales, used with the diagonal
    directions from ``LS_PRIOR_MIN_KNOBS`` knobs up; 0 = plain maximum likelihood, the configuration
    before it), ``budget`` (evaluations the caller will spend; when the feasible space is no larger, every
    code is measured once and then only the close contenders, ``contenders`` of them at most, are
    re-measured; 0 = unknown), ``boundary`` (the incumbent's range-limit moves among the candidates),
    ``corners`` (box corners in the initial design), ``transfer`` (live sessions: later lane groups
    start from the earlier groups' measurements as the prior mean, see ``set_prior``), ``screen`` /
    ``screen_design`` / ``screen_pool`` / ``screen_local_every`` (simulation: the engine's stage-A screen
    as the prior mean, see ``set_screen``; ``screen=False`` is the optimizer before the screen). The
    configuration before the diagonal directions is ``directions="axes",
    local_on_success=True, ls_prior=0``; the one before the trust region is ``directions="axes",
    trust_region=False, local_on_success=False, warp_y="none"`` with ``noise_max=1``.
    """

    kind = "gp"

    def __init__(self, space: KnobSpace, *, seed: int | None = None, start: Mapping[str, float] | None = None,
                 ispace: IndexedSpace | None = None, n_initial: int | None = None, acq: str = "ei",
                 xi: float = 0.01, kappa: float = 1.96, n_candidates: int = 5000, n_restarts: int = 1,
                 noise: bool = True, restart_every: int = 10, local_every: int | None = None,
                 kappa_local: float = 1.0, trust_region: bool = True, tr_init: float = 0.5,
                 tr_success: int = 2, tr_fail: int | None = None, tr_candidates: int = 3000,
                 local_on_success: bool = False, global_candidates: int | None = None,
                 warp_y: str = "log", warp_q: float = 0.5, exploit_every: int = 0,
                 noise_max: float = 1.0, warp_scale: float = 1.0, warp_gate: float = 4.0,
                 axis_first: bool = False, ls_min: float = 0.05, directions: str = "pairs",
                 ls_prior: float = 0.7, budget: int = 0, contenders: int = 3, boundary: bool = True,
                 corners: int = 0, transfer: bool = True, climb_starts: int = 5,
                 climb_min: int = 100_000, fast_fit: bool = True, screen: bool = True,
                 screen_design: int | None = None, screen_pool: int = 500,
                 screen_local_every: int = 0, local_acq: str = "ucb") -> None:
        super().__init__(space, seed=seed, start=start, ispace=ispace)
        if acq not in ACQUISITIONS:
            raise TuneError(f"unknown acquisition '{acq}': use one of {', '.join(ACQUISITIONS)}")
        self.acq = acq
        self.xi = float(xi)
        self.kappa = float(kappa)
        self.n_candidates = int(n_candidates)
        self.n_restarts = int(n_restarts)
        self.noise = bool(noise)
        n_init = int(n_initial) if n_initial is not None else default_n_initial(self.ispace.d)
        if n_init < 1:
            raise TuneError(f"n_initial must be at least 1, got {n_init}")
        nf = self.ispace.n_feasible
        self.n_initial = min(n_init, nf) if nf is not None else n_init
        self.design: list[Key] = self._make_design()
        self.restart_every = int(restart_every)
        self.local_every = int(local_every) if local_every is not None else default_local_every(self.ispace.d)
        self.kappa_local = float(kappa_local)
        self.trust_region = bool(trust_region)
        self.tr_init = float(tr_init)
        self.tr_success = int(tr_success)
        self.tr_fail = int(tr_fail) if tr_fail is not None else max(3, self.ispace.d)
        self.tr_candidates = int(tr_candidates)
        self.local_on_success = bool(local_on_success)
        self.global_candidates = int(global_candidates) if global_candidates is not None else None
        if warp_y not in ("none", "log"):
            raise TuneError(f"unknown output warping '{warp_y}': use none or log")
        self.warp_y = warp_y
        self.warp_q = float(warp_q)
        self.exploit_every = int(exploit_every)
        self.noise_max = float(noise_max)
        self.warp_scale = float(warp_scale)
        self.warp_gate = float(warp_gate)
        self.axis_first = bool(axis_first)
        if local_acq not in LOCAL_ACQUISITIONS:
            raise TuneError(f"unknown local acquisition '{local_acq}': use {' or '.join(LOCAL_ACQUISITIONS)}")
        self.local_acq = local_acq
        self.ls_min = float(ls_min)
        if directions not in DIRECTIONS:
            raise TuneError(f"unknown kernel directions '{directions}': use {' or '.join(DIRECTIONS)}")
        self.directions = directions
        if not ls_prior >= 0.0:
            raise TuneError(f"ls_prior must be >= 0 (the sd of the length-scale prior; 0 = off), got {ls_prior}")
        self.ls_prior = float(ls_prior)
        self.budget = max(0, int(budget))
        self.contenders = max(0, int(contenders))
        self.boundary = bool(boundary)
        self.corners = max(0, int(corners))
        self.transfer = bool(transfer)
        self.climb_starts = max(0, int(climb_starts))
        self.climb_min = max(0, int(climb_min))
        self.fast_fit = bool(fast_fit)
        self.screen = bool(screen)
        self.screen_design = None if screen_design is None else max(0, int(screen_design))
        self.screen_pool = max(0, int(screen_pool))
        self.screen_local_every = max(0, int(screen_local_every))
        if self.corners:  # the design was made above without them
            self.design = self._make_design()
        self._warp: Warp = (0.0, 0.0)  # (median, scale) of the lower-tail compression; scale 0 = identity
        self._model: Any = None
        self._model_n = -1
        self._ystats = (0.0, 1.0)
        self._theta: dict[str, Any] = {}  # last fitted GP hyperparameters (log scale), see _fit
        self._prior_keys: list[Key] = []  # earlier lanes' observations (eqtune.tune.transfer)
        self._prior_ys: list[float] = []
        self._prior: dict[str, Any] | None = None
        self._screen: Screen | None = None  # simulation's screened margins as the prior mean (tune.screen)
        self._screen_scale = 1.0
        self.margin_vars: list[float | None] = []  # known variance of each observation (tune.recommend)

    def tell(self, point: Mapping[str, float], margin: float, variance: float | None = None) -> None:
        """``BaseOptimizer.tell`` plus the observation's known noise variance (margin units squared,
        e.g. from its error count: ``eqtune.tune.recommend.margin_variance``); None = unknown."""
        super().tell(point, margin)
        self.margin_vars.append(None if variance is None else float(variance))

    def set_noise(self, variance: float | Sequence[float] | None) -> None:
        """The noise variance (margin units squared) of every observation, one value or one per
        observation: an instrument that reports none (a scope's eye height), estimated from repeats
        (``eqtune.tune.recommend.pooled_variance``). None = unknown again. Refitted at the next use."""
        if variance is None or isinstance(variance, (int, float)):
            self.margin_vars = [None if variance is None else float(variance)] * len(self.ys)
        else:
            vs = [float(v) for v in variance]
            if len(vs) != len(self.ys):
                raise TuneError(f"{len(vs)} noise variances for {len(self.ys)} observations")
            self.margin_vars = list(vs)
        self._model_n = -1

    def _config(self) -> dict[str, Any]:
        return {"n_initial": self.n_initial, "acq": self.acq, "xi": self.xi, "kappa": self.kappa,
                "n_candidates": self.n_candidates, "n_restarts": self.n_restarts, "noise": self.noise,
                "restart_every": self.restart_every, "local_every": self.local_every,
                "kappa_local": self.kappa_local, "trust_region": self.trust_region, "tr_init": self.tr_init,
                "tr_success": self.tr_success, "tr_fail": self.tr_fail, "tr_candidates": self.tr_candidates,
                "local_on_success": self.local_on_success, "global_candidates": self.global_candidates,
                "warp_y": self.warp_y, "warp_q": self.warp_q,
                "exploit_every": self.exploit_every, "noise_max": self.noise_max,
                "warp_scale": self.warp_scale, "warp_gate": self.warp_gate,
                "axis_first": self.axis_first, "ls_min": self.ls_min, "directions": self.directions,
                "ls_prior": self.ls_prior, "budget": self.budget, "contenders": self.contenders,
                "boundary": self.boundary, "corners": self.corners, "transfer": self.transfer,
                "climb_starts": self.climb_starts, "climb_min": self.climb_min, "fast_fit": self.fast_fit,
                "screen": self.screen, "screen_design": self.screen_design, "screen_pool": self.screen_pool,
                "screen_local_every": self.screen_local_every, "local_acq": self.local_acq}

    @classmethod
    def from_state(cls, state: Mapping[str, Any], space: KnobSpace) -> Any:
        cfg = dict(state.get("config") or {})
        cfg.setdefault("directions", "axes")  # saved before diagonal directions existed: resume as it ran
        cfg.setdefault("ls_prior", 0.0)  # saved before the length-scale prior existed: maximum likelihood
        cfg.setdefault("boundary", False)  # saved before the range-limit candidates existed
        cfg.setdefault("transfer", False)  # saved before transfer existed: no prior from earlier groups
        cfg.setdefault("climb_starts", 0)  # saved before the acquisition's local search existed
        cfg.setdefault("screen", False)  # saved before screening existed
        return super().from_state({**state, "config": cfg}, space)

    def _uses_pairs(self) -> bool:
        """Whether the GP's inputs include the diagonal directions (``pair_features``)."""
        return self.directions == "pairs" and 2 <= self.ispace.d <= PAIR_MAX_KNOBS

    def _inputs(self, keys: np.ndarray) -> np.ndarray:
        """The GP's input features of level-index rows ``keys`` (see ``pair_features``)."""
        x = self.ispace.scaled(keys)
        return pair_features(x) if self._uses_pairs() else x

    def state(self) -> dict[str, Any]:
        st = super().state()
        st["gp"] = dict(self._theta)
        if any(v is not None for v in self.margin_vars):
            st["margin_vars"] = list(self.margin_vars)
        if self._prior_keys:
            st["prior"] = {"points": [self.ispace.codes(k) for k in self._prior_keys],
                           "margins": [float(y) for y in self._prior_ys]}
        return st

    def _restore(self, state: Mapping[str, Any]) -> None:
        super()._restore(state)
        gp = state.get("gp") or {}
        self._theta = {"n": gp.get("n"), "theta": gp.get("theta"), "start": gp.get("start")}
        mv = state.get("margin_vars")
        self.margin_vars = [None if v is None else float(v) for v in mv] if mv else [None] * len(self.ys)
        pr = state.get("prior")
        if pr:
            self.set_prior(list(zip(pr["points"], pr["margins"])))
        self._model, self._model_n = None, -1

    # -- transfer (eqtune.tune.transfer) -------------------------------------------------------
    def set_prior(self, observations: Sequence[tuple[Mapping[str, float], float]], *, keep_start: bool = True) -> None:
        """Earlier lanes' / modules' observations ``[(codes, margin), ...]`` as the prior mean of this
        run's GP (see eqtune.tune.transfer): no space-filling design; the first point is the start
        (``keep_start`` and a start given), else the earlier lanes' best."""
        from eqtune.tune.base import _full

        keys = [self.ispace.key_of(_full(self.space, p) or {}, option="prior point") for p, _ in observations]
        ys = [float(m) for _, m in observations]
        if not keys:
            return
        from eqtune.tune.transfer import fit_prior

        self._prior_keys, self._prior_ys = keys, ys
        self._prior = fit_prior(self, keys, ys)
        self.n_initial = 1
        if not keep_start or self.start_key is None:
            self.start_key = self._prior["best"]
        first = self.start_key
        self.design = [first]
        self._model, self._model_n = None, -1

    def set_screen(self, screen: Screen) -> None:
        """The simulation's screened margins (``eqtune.tune.screen``) as the prior mean. The initial
        design becomes the start point plus the best screened codes (``screen_design`` of them; default:
        the whole design), the acquisition is scored on the best ``screen_pool`` screened codes and the
        best points' neighbours (0 = the usual candidates), and local steps come every
        ``screen_local_every``-th step (0 = none). Chosen on the library problems (docs/tuning.md)."""
        self._screen = screen
        self.design = screened_design(self.design, self.start_key, self.n_initial, self.screen_design, screen)
        self._model, self._model_n = None, -1

    @property
    def screen_pooled(self) -> bool:
        """The acquisition is scored on the best screened codes only (no climb: they are the best already)."""
        return self._screen is not None and self.screen_pool > 0

    @property
    def has_prior(self) -> bool:
        return self._prior is not None

    # -- initial design (eqtune.tune.design) -----------------------------------------------------
    def _make_design(self) -> list[Key]:
        return sobol_design(self.ispace, self.start_key, self.n_initial, self.seed, getattr(self, "corners", 0))

    # -- exhaustive mode -----------------------------------------------------------------------
    def exhaustive(self) -> bool:
        """Whether this run measures every feasible code once: the space is enumerated and no larger
        than the evaluation ``budget`` the caller gave (0 = unknown: never). The order is still the
        GP's (best expected first), so a run stopped early keeps a good point; afterwards only the close
        contenders are re-measured (``_contender``)."""
        nf = self.ispace.n_feasible
        return bool(self.budget) and nf is not None and nf <= self.budget

    def _contender(self) -> Key | None:
        """Once every code is measured: the close contender to re-measure next (``close_contender``)."""
        return close_contender(self.keys, self.ys, self.contenders)

    def in_initial_design(self) -> bool:
        return len(self._seen) < self.n_initial

    # -- model ---------------------------------------------------------------------------------
    def _fit(self) -> Any:
        """The GP fitted to all observations (cached per observation count); None if < 2 distinct."""
        n = len(self.ys)
        if self._model_n == n:
            return self._model
        self._model_n = n
        self._model = None
        if self._prior is not None and self._seen:  # the residual on the earlier lanes' prior mean
            from eqtune.tune.transfer import residual_model

            keys = keys_array(self.keys, self.ispace.d)
            self._warp = (0.0, 0.0)
            self._model, self._ystats = residual_model(self, self._prior, self._inputs(keys), keys,
                                                       np.asarray(self.ys, dtype=float))
            return self._model
        if len(self._seen) < 2:
            return None
        from skopt.learning.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        isp = self.ispace
        keys_all = keys_array(self.keys, isp.d)
        X = self._inputs(keys_all)
        if self._screen is not None:  # the GP on what the screen gets wrong (eqtune.tune.screen)
            ys = np.asarray(self.ys, dtype=float)
            s_obs = self._screen(keys_all)
            self._screen_scale = prior_scale(ys, s_obs)
            self._warp = IDENTITY
            y = ys - self._screen_scale * s_obs
        else:
            y = self._warp_fit(np.asarray(self.ys, dtype=float))
        mu, sd = float(np.mean(y)), float(np.std(y))
        if not np.isfinite(sd) or sd <= 1e-12:
            sd = 1.0
        self._ystats = (mu, sd)
        # skopt minimizes: model the negative standardized margin
        t = -(y - mu) / sd
        # knob axes start at 0.5 of the range, the diagonal directions at 2 (nearly irrelevant until the
        # data say otherwise)
        ls0 = np.concatenate([np.full(isp.d, 0.5), np.full(X.shape[1] - isp.d, 2.0)])
        kernel = ConstantKernel(1.0, (1e-2, 1e2)) * Matern(
            length_scale=ls0, length_scale_bounds=(self.ls_min, 20.0), nu=2.5
        )
        if self.noise:
            kernel = kernel + WhiteKernel(min(1e-3, self.noise_max), (1e-6, max(self.noise_max, 1e-6)))
        # MAP instead of maximum likelihood with the diagonal directions: a log-normal prior on the knob
        # axes' length scales (theta index 1..d, after the constant), centred on their start value
        prior = None
        if self.ls_prior > 0.0 and self._uses_pairs() and isp.d >= LS_PRIOR_MIN_KNOBS:
            prior = (np.arange(1, 1 + isp.d), np.log(ls0[: isp.d]), self.ls_prior)
        # warm start of the hyperparameters: from the previous fit (at another observation count), or
        # from the start of the fit at this count when the state was saved right after it (resume)
        if self._theta.get("n") == n:
            start = self._theta.get("start")
        else:
            start = self._theta.get("theta")
        start_used = None
        if start is not None and len(start) == len(kernel.theta):
            b = kernel.bounds
            start_used = [float(v) for v in np.clip(np.asarray(start, dtype=float), b[:, 0], b[:, 1])]
            kernel = kernel.clone_with_theta(np.asarray(start_used))
        # one random restart every ``restart_every`` fits keeps the warm start out of poor local optima
        restarts = self.n_restarts if (start_used is None or n % self.restart_every == 0) else 0
        # fast_fit: the same likelihood and posterior as scikit-learn's, computed faster (gp_kernel.py);
        # off = scikit-learn's own (the before of the benchmark's timing). MaternLML assumes the theta
        # layout (constant, length scales[, free white noise]): any other kernel uses scikit-learn's.
        fast_lml = self.fast_fit and len(kernel.theta) == 1 + X.shape[1] + (1 if self.noise else 0)
        alpha = self._alpha(y, sd)  # known per-observation noise (tune.recommend) + jitter
        gp = (fast_gpr if self.fast_fit else _skopt_gpr)(
            kernel=kernel, normalize_y=False, n_restarts_optimizer=restarts,
            optimizer=_lbfgs(30 if start_used is not None else 200, prior,
                             fast=MaternLML(X, t, noise=self.noise, alpha=alpha) if fast_lml else None),
            noise="gaussian" if self.noise else None, alpha=alpha,
            random_state=int(rng_for(self.seed, n, 3).integers(0, 2**31 - 1)),
        )
        with warnings.catch_warnings(), _one_thread():
            warnings.simplefilter("ignore")  # ConvergenceWarning at the length-scale bounds
            gp.fit(X, t)
            theta = np.array(gp.kernel_.theta, dtype=float)  # log(0) for the zeroed noise: replaced below
        if self.noise:  # skopt zeroes the fitted white noise after the fit (kept in noise_)
            theta[-1] = np.log(max(float(gp.noise_ or 1e-6), 1e-6))
        self._theta = {"n": n, "theta": [float(v) for v in theta], "start": start_used}
        self._model = gp
        if self._screen is not None:
            from eqtune.tune.transfer import PriorModel

            screen, b = self._screen, self._screen_scale
            self._model = PriorModel(gp, lambda k: b * screen(k), isp.d, isp._den, sd)
        return self._model

    def _alpha(self, y: np.ndarray, sd: float) -> Any:
        """The GP's per-observation noise: the known variances in its standardized, warped units
        (``eqtune.tune.recommend.standardized_variances``; unknown ones at 0) + 1e-8 jitter."""
        from eqtune.tune.recommend import standardized_variances

        if not any(v is not None for v in self.margin_vars) or len(self.margin_vars) != len(y):
            return 1e-8
        v = standardized_variances([0.0 if x is None else x for x in self.margin_vars],
                                   np.asarray(self.ys, dtype=float), self._warp, sd)
        return 1e-8 if v is None else v + 1e-8

    def _warp_fit(self, y: np.ndarray) -> np.ndarray:
        """Output warping of the margins (``eqtune.tune.warp``); sets ``_warp`` for the inverse."""
        self._warp = warp_params(y, mode=self.warp_y, q=self.warp_q, scale=self.warp_scale, gate=self.warp_gate)
        return warp_apply(y, self._warp)

    def _warp_apply(self, y: np.ndarray) -> np.ndarray:
        return warp_apply(y, self._warp)

    def _warp_inverse(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Original-unit values of warped values ``t``, and the derivative dy/dt (for the sd)."""
        return warp_inverse(t, self._warp)


    def _predict(self, keys: np.ndarray, return_std: bool = False) -> Any:
        gp = self._fit()
        X = self._inputs(keys)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return gp.predict(X, return_std=return_std)

    def posterior(self, points: list[Mapping[str, float]]) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of the margin (original units) at ``points``."""
        keys = keys_array([self.ispace.key_of(p) for p in points], self.ispace.d)
        if self._fit() is None:
            return np.full(len(keys), np.nan), np.full(len(keys), np.nan)
        t_mean, t_std = self._predict(keys, return_std=True)
        mu, sd = self._ystats
        y, dy = self._warp_inverse(mu - sd * np.asarray(t_mean))
        return y, dy * sd * np.asarray(t_std)

    def ranked(self) -> list[Key]:
        """Distinct evaluated points, best posterior mean first (observed mean before the GP exists)."""
        means = self.mean_by_point()
        keys = list(means)
        if self._fit() is None:
            return sorted(keys, key=lambda k: -means[k][0])
        t = np.asarray(self._predict(keys_array(keys, self.ispace.d)))
        order = np.argsort(t, kind="stable")  # smallest -margin first
        return [keys[int(i)] for i in order]

    def recommend(self) -> EqPoint | None:
        """The evaluated point with the best posterior mean (noise-aware), None before any data. With
        known per-observation variances: the best lower confidence bound of the posterior with that
        noise (``eqtune.tune.recommend.recommend_key``)."""
        if not self.ys:
            return None
        from eqtune.tune.recommend import recommend_key

        key = recommend_key(self)
        return self.ispace.point(key if key is not None else self.ranked()[0])

    # -- asking --------------------------------------------------------------------------------
    def ask_many(self, n: int) -> list[EqPoint]:
        """The remaining initial-design points (up to ``n``, measurable together), else one BO point."""
        taken = self._taken()
        need = self.n_initial - len(taken)
        if need > 0:
            keys = [k for k in self.design if k not in taken][: min(max(1, int(n)), need)]
            if keys:
                self._add_pending(keys)
                return [self.ispace.point(k) for k in keys]
        p = self.ask()
        return [] if p is None else [p]

    def _next_key(self) -> Key | None:
        taken = self._taken()
        if self.in_initial_design():
            for key in self.design:
                if key not in taken:
                    return key
        if self.exhaustive() and len(self._seen) >= int(self.ispace.n_feasible or 0):
            return self._contender()
        if self._fit() is None:  # fewer than 2 distinct observations and no design left
            return self._random_untaken(taken)
        return self._acquire(taken)

    def _random_untaken(self, taken: set[Key]) -> Key | None:
        rng = rng_for(self.seed, len(self.ys), len(self.pending), 2)
        for row in self.ispace.sample(rng, max(64, self.n_candidates)):
            key = tuple(int(v) for v in row)
            if key not in taken:
                return key
        return self._any_untaken(taken)

    def _any_untaken(self, taken: set[Key]) -> Key | None:
        grid = self.ispace.grid
        if grid is None:
            return None
        for row in grid:
            key = tuple(int(v) for v in row)
            if key not in taken:
                return key
        return None

    # -- where to look next (eqtune.tune.acquisition) ---------------------------------------------
    def _candidates(self, taken: set[Key]) -> np.ndarray:
        return acquisition.candidates(self, taken)

    def _limit_moves(self, keys: list[Key]) -> np.ndarray:
        return limit_moves(self.ispace, keys)

    def tr_length(self) -> tuple[float, bool]:
        """Side of the trust-region box and whether the last observation improved the best
        (``eqtune.tune.acquisition.tr_length``)."""
        return acquisition.tr_length(self)

    def _acquire(self, taken: set[Key]) -> Key | None:
        return acquisition.acquire(self, taken)
