"""Where the GP optimizer looks next: candidates, trust region, local steps, the acquisition and its
integer local search. Functions of a ``GPOptimizer`` (its observations, configuration and fitted model);
every random choice derives from ``(seed, number of observations)``.

* candidates: ``n_candidates`` feasible points drawn uniformly, half of them inside the trust region
  (TuRBO-style; Eriksson et al., "Scalable global optimization via local Bayesian optimization",
  NeurIPS 2019, in level-index space), plus the Chebyshev neighbours of the best points and their
  range-limit moves (``eqtune.tune.candidates.limit_moves``); untaken points only.
* acquisition: ``skopt.acquisition.gaussian_ei`` (Jones, Schonlau & Welch 1998) / ``gaussian_pi`` /
  ``gaussian_lcb`` over the candidates.
* local search on the acquisition (``climb``): from the best-scoring candidates, first-improvement hill
  climbing over integer moves (one knob +-1 or +-2 codes, two knobs +-1 code each: the diagonal ridge
  moves), feasible and untaken points only, until no move raises the acquisition. The usual way to
  maximize an acquisition over a discrete space too large to score whole (e.g. the local search of
  SMAC: Hutter, Hoos & Leyton-Brown, "Sequential model-based optimization for general algorithm
  configuration", LION 2011, sec. 4.3; BoTorch's ``optimize_acqf_discrete_local_search``).
* local steps: the untried neighbour of the best points with the highest upper confidence bound.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from eqtune.tune.base import keys_array, rng_for
from eqtune.tune.candidates import limit_moves
from eqtune.tune.space import IndexedSpace, Key

if TYPE_CHECKING:
    from eqtune.tune.optimizer import GPOptimizer

IntArray = NDArray[np.int32]
Score = Callable[[NDArray[Any]], NDArray[np.float64]]


def untaken(isp: IndexedSpace, rows: NDArray[Any], taken: set[Key]) -> IntArray:
    """``rows`` (level indices) without the ``taken`` ones (exact integer match), as int32."""
    rows = np.asarray(rows, dtype=np.int32)
    if not taken or not len(rows):
        return rows
    t = keys_array(sorted(taken), isp.d).astype(np.int32)
    view = np.ascontiguousarray(rows).view([("", np.int32)] * isp.d).ravel()
    tview = np.ascontiguousarray(t).view([("", np.int32)] * isp.d).ravel()
    return rows[~np.isin(view, tview)]


def move_offsets(d: int) -> IntArray:
    """The integer moves of ``climb``: each knob +-1 and +-2 codes, and every pair of knobs +-1 each
    (4 d + 4 d (d - 1) / 2 rows)."""
    eye = np.eye(d, dtype=np.int32)
    moves = [eye * s for s in (-2, -1, 1, 2)]
    i, j = np.triu_indices(d, k=1)
    for si in (-1, 1):
        for sj in (-1, 1):
            m = np.zeros((len(i), d), dtype=np.int32)
            m[np.arange(len(i)), i] = si
            m[np.arange(len(i)), j] = sj
            moves.append(m)
    return np.concatenate(moves)


def climb(isp: IndexedSpace, score: Score, starts: NDArray[Any], start_scores: NDArray[Any],
          taken: set[Key], *, max_steps: int = 20) -> tuple[IntArray, NDArray[np.float64]]:
    """Hill climbing on ``score`` from each row of ``starts`` (with their scores): move to the best
    feasible, untaken neighbour (``move_offsets``) while it scores higher; all starts step together.
    Returns the end points and their scores (a start that cannot improve is returned as it is)."""
    cur = np.asarray(starts, dtype=np.int32).copy()
    cur_s = np.asarray(start_scores, dtype=float).copy()
    if not len(cur):
        return cur, cur_s
    offs = move_offsets(isp.d)
    hi = isp.n_levels.astype(np.int32) - 1
    active = np.ones(len(cur), dtype=bool)
    for _ in range(max_steps):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        nb = cur[idx][:, None, :] + offs[None, :, :]
        owner = np.repeat(idx, len(offs))
        nb = nb.reshape(-1, isp.d)
        ok = np.all((nb >= 0) & (nb <= hi[None, :]), axis=1)
        nb, owner = nb[ok], owner[ok]
        if len(nb):
            feas = isp.space.feasible(isp.values(nb))
            nb, owner = nb[feas], owner[feas]
        if len(nb) and taken:
            keep = untaken_mask(isp, nb, taken)
            nb, owner = nb[keep], owner[keep]
        if not len(nb):
            break
        s = score(nb)
        moved = np.zeros(len(cur), dtype=bool)
        order = np.lexsort((-s, owner))  # per owner, best score first
        first = np.ones(len(order), dtype=bool)
        first[1:] = owner[order][1:] != owner[order][:-1]
        for k in order[first]:
            o = int(owner[k])
            if s[k] > cur_s[o] + 1e-12:
                cur[o], cur_s[o], moved[o] = nb[k], s[k], True
        active &= moved
    return cur, cur_s


def untaken_mask(isp: IndexedSpace, rows: NDArray[Any], taken: set[Key]) -> NDArray[np.bool_]:
    """Which of ``rows`` are not in ``taken``."""
    rows = np.asarray(rows, dtype=np.int32)
    t = keys_array(sorted(taken), isp.d).astype(np.int32)
    view = np.ascontiguousarray(rows).view([("", np.int32)] * isp.d).ravel()
    tview = np.ascontiguousarray(t).view([("", np.int32)] * isp.d).ravel()
    return np.asarray(~np.isin(view, tview))


# -- trust region (TuRBO-style, in level-index space) -----------------------------------------------
def tr_length(opt: GPOptimizer) -> tuple[float, bool]:
    """Side of the trust-region box (fraction of each knob's range) and whether the last observation
    improved on the best so far. Replayed from the observations alone (success and failure counts after
    the initial design: expand after ``tr_success`` improvements in a row, halve after ``tr_fail``
    failures in a row, restart at ``tr_init`` below one level), so the state needs nothing beyond the
    observations."""
    ys = opt.ys
    n0 = min(opt.n_initial, len(ys))
    if n0 == 0:
        return opt.tr_init, False
    length = opt.tr_init
    lmin = 1.0 / float(np.max(opt.ispace._den))
    best = max(ys[:n0])
    sd = float(np.std(ys)) if len(ys) > 1 else 0.0
    tol = 1e-3 * (sd if sd > 0 else 1.0)
    succ = fail = 0
    improved = False
    for y in ys[n0:]:
        improved = y > best + tol
        if improved:
            succ, fail = succ + 1, 0
        else:
            succ, fail = 0, fail + 1
        best = max(best, y)
        if succ >= opt.tr_success:
            length, succ = min(2.0 * length, 1.0), 0
        elif fail >= opt.tr_fail:
            length, fail = length / 2.0, 0
            if length < lmin:
                length = opt.tr_init
    return length, improved


def tr_box(opt: GPOptimizer, center: Key, rng: np.random.Generator) -> IntArray:
    """Feasible points in the trust-region box around ``center`` (at least its radius-1 neighbours),
    up to ``tr_candidates`` of them (uniform subsample)."""
    isp = opt.ispace
    length, _ = tr_length(opt)
    half = np.maximum(np.floor(0.5 * length * isp._den + 1e-9), 1).astype(int)
    c = np.asarray(center, dtype=int)
    lo, hi = np.maximum(c - half, 0), np.minimum(c + half, isp.n_levels - 1)
    if isp.grid is not None:
        rows = isp.in_box(lo, hi)
        if len(rows) > opt.tr_candidates:
            rows = rows[np.sort(rng.choice(len(rows), size=opt.tr_candidates, replace=False))]
        return np.asarray(rows, dtype=np.int32)
    n = 4 * opt.tr_candidates
    idx = np.stack([rng.integers(a, b + 1, size=n) for a, b in zip(lo, hi)], axis=1).astype(np.int32)
    idx = np.unique(idx[isp.space.feasible(isp.values(idx))], axis=0)
    return np.asarray(idx[: opt.tr_candidates], dtype=np.int32)


# -- candidates and steps ------------------------------------------------------------------------------
def candidates(opt: GPOptimizer, taken: set[Key]) -> IntArray:
    """The feasible, untaken candidates the acquisition is scored on (see the module notes)."""
    isp = opt.ispace
    rng = rng_for(opt.seed, len(opt.ys), len(opt.pending), 1)
    top = opt.ranked()[:3]
    if opt.screen_pooled and opt._screen is not None:  # only the best screened codes and the best points' neighbours
        pool = [opt._screen.top(opt.screen_pool), isp.neighbours(top, radius=1)]
        return untaken(isp, np.unique(np.concatenate(pool).astype(np.int32), axis=0), taken)
    n_global = opt.n_candidates
    parts = []
    if opt.trust_region and top:
        box = tr_box(opt, top[0], rng)
        if len(box):
            parts.append(box)
            n_global = opt.global_candidates if opt.global_candidates is not None else opt.n_candidates // 2
    parts.append(isp.sample(rng, n_global))
    parts.append(isp.neighbours(top, radius=1))
    if opt.boundary and top:
        parts.append(limit_moves(isp, top[:2]))
    if isp.d <= 4:
        parts.append(isp.neighbours(top[:1], radius=2))
    cands = np.unique(np.concatenate(parts).astype(np.int32), axis=0)
    return untaken(isp, cands, taken)


def local_step(opt: GPOptimizer, taken: set[Key]) -> Key | None:
    """Exploit: the untried Chebyshev neighbour (radius 1) of the best points with the highest upper
    confidence bound, or None when all of them have been measured."""
    isp = opt.ispace
    means = opt.mean_by_point()
    by_obs = sorted(means, key=lambda k: -means[k][0])[:2]
    tops = list(dict.fromkeys(opt.ranked()[:2] + by_obs))
    stages: list[tuple[list[Key], int, bool]] = []
    if opt.axis_first:
        # coordinate moves of the incumbent first: one knob one code up or down (2d points)
        stages.append((list(dict.fromkeys(opt.ranked()[:1] + by_obs[:1])), 1, True))
    stages += [(tops, 1, False), (tops, 2, False)]
    for centres, radius, axis in stages:
        nb = isp.neighbours(centres, radius=radius, axis_only=axis)
        if len(nb) and taken:
            nb = nb[untaken_mask(isp, nb, taken)]
        if len(nb):
            break
    else:
        return None
    t_mean, t_std = opt._predict(nb, return_std=True)
    if opt.local_acq == "ei":
        score = local_ei(opt, np.asarray(t_mean), np.asarray(t_std))
        if np.nanmax(score) > 0.0:
            return tuple(int(v) for v in nb[int(np.nanargmax(score))])
    score = -np.asarray(t_mean) + opt.kappa_local * np.asarray(t_std)
    return tuple(int(v) for v in nb[int(np.argmax(score))])


def local_ei(opt: GPOptimizer, t_mean: NDArray[Any], t_std: NDArray[Any]) -> NDArray[np.float64]:
    """Expected improvement (Jones, Schonlau & Welch, J. Global Optim. 13:455, 1998, eq. 15) of the
    neighbours over the best posterior mean of the evaluated points, in the GP's (negated,
    standardized) units. Why not the upper bound: on a plateau of equal readings (a loopback whose
    errors all come from the other direction) the plateau's untried neighbours have the highest upper
    bound, mean at the plateau plus a little sd, and a local step measures the plateau again and again;
    a move along the knob that limits (mean a little lower, sd larger) has the larger expected
    improvement."""
    from scipy.stats import norm

    ev = keys_array(list(opt.mean_by_point()), opt.ispace.d)
    y_best = float(np.min(opt._predict(ev)))
    sd = np.maximum(np.asarray(t_std, dtype=float), 1e-12)
    z = (y_best - np.asarray(t_mean, dtype=float)) / sd
    out: NDArray[np.float64] = sd * (z * norm.cdf(z) + norm.pdf(z))
    return out


def acquisition_score(opt: GPOptimizer, exploit: bool) -> Score:
    """The acquisition as a function of level-index rows (larger is better): EI / PI with the best
    posterior mean over the evaluated points as the incumbent (noise-robust), -LCB, or the posterior
    mean (``exploit``)."""
    from skopt.acquisition import gaussian_ei, gaussian_lcb, gaussian_pi

    gp = opt._fit()
    y_opt = 0.0
    if not exploit and opt.acq != "lcb":
        ev = keys_array(list(opt.mean_by_point()), opt.ispace.d)
        y_opt = float(np.min(gp.predict(opt._inputs(ev))))

    def score(rows: NDArray[Any]) -> NDArray[np.float64]:
        X = opt._inputs(rows)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if exploit:
                return -np.asarray(gp.predict(X), dtype=float)
            if opt.acq == "lcb":
                return -np.asarray(gaussian_lcb(X, gp, kappa=opt.kappa), dtype=float)
            fn = gaussian_ei if opt.acq == "ei" else gaussian_pi
            return np.asarray(fn(X, gp, y_opt=y_opt, xi=opt.xi), dtype=float)
    return score


def best_gain(opt: GPOptimizer) -> float:
    """The largest expected improvement (margin units, ``acquisition_score`` times the GP's output
    scale) over this step's candidates: what measuring a new code is expected to add to the best
    posterior mean. 0 when nothing is left to measure or there is no model."""
    if opt._fit() is None:
        return 0.0
    cands = candidates(opt, opt._taken())
    if not len(cands):
        return 0.0
    score = acquisition_score(opt, False)(cands)
    best = float(np.nanmax(score)) if np.any(np.isfinite(score)) else 0.0
    return max(best, 0.0) * float(opt._ystats[1])


def acquire(opt: GPOptimizer, taken: set[Key]) -> Key | None:
    """The next point after the initial design: a local step every ``local_every``-th step, else the
    acquisition's maximum over the candidates (refined by ``climb`` from the ``climb_starts`` best)."""
    n_bo = len(opt.ys) - opt.n_initial  # BO steps so far (the state holds everything needed)
    every = opt.screen_local_every if opt._screen is not None else opt.local_every
    local = bool(every) and n_bo >= 0 and n_bo % every == every - 1
    if not local and opt.local_on_success and n_bo >= 1 and tr_length(opt)[1]:
        local = True  # the last step improved the best: climb on from there first
    if local:
        key = local_step(opt, taken)
        if key is not None:
            return key
    cands = candidates(opt, taken)
    if len(cands) == 0:
        return opt._any_untaken(taken)
    exploit = bool(opt.exploit_every) and n_bo >= 0 and n_bo % opt.exploit_every == opt.exploit_every - 1
    score_fn = acquisition_score(opt, exploit)
    score = score_fn(cands)
    if not np.any(np.isfinite(score)) or np.nanmax(score) <= 0.0:
        # EI underflows to 0 everywhere once the model is confident: exploit the posterior mean
        score_fn = acquisition_score(opt, True)
        score = score_fn(cands)
    if opt.climb_starts > 0 and not opt.screen_pooled and (opt.ispace.n_feasible or opt.ispace.size) >= opt.climb_min:
        order = np.argsort(-np.nan_to_num(score, nan=-np.inf), kind="stable")[: opt.climb_starts]
        ends, end_s = climb(opt.ispace, score_fn, cands[order], score[order], taken)
        k = int(np.argmax(end_s))
        if end_s[k] > float(np.nanmax(score)):
            return tuple(int(v) for v in ends[k])
    best = int(np.nanargmax(score))  # first maximum: deterministic
    return tuple(int(v) for v in cands[best])
