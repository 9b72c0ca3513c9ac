"""The GP's kernel inputs and its hyperparameter fit: diagonal-direction features, the L-BFGS-B
maximizer (optionally MAP under a length-scale prior) and a fast log marginal likelihood.

* ``pair_features``: the knob axes plus, for every pair of knobs, their half difference and half sum
  (the restricted "factor analysis" metric of Rasmussen & Williams, *Gaussian Processes for Machine
  Learning*, MIT Press 2006, sec. 4.2, eq. 4.22; see ``eqtune.tune.optimizer``).
* ``MaternLML``: the log marginal likelihood of ``ConstantKernel * Matern(nu=2.5, ARD) + WhiteKernel``
  plus ``alpha`` on the diagonal, and its gradient in the log hyperparameters, in the order of
  scikit-learn's ``kernel.theta`` (constant, length scales, noise). The same value as
  ``GaussianProcessRegressor.log_marginal_likelihood`` (R&W 2006 eq. 2.30 and eq. 5.9 for the
  gradient; Matern 5/2 form and derivative as R&W eq. 4.17 and scikit-learn's ``Matern.__call__``),
  checked against scikit-learn in tests/tune/test_tune_gp_kernel.py. Why: scikit-learn builds an
  (n, n, p) gradient tensor and contracts it with einsum at every call (about 2 ms at 60 points and
  36 features); here the squared feature differences are computed once per fit and the gradient is
  one matrix-vector product (about 0.1-0.2 ms), so a fit costs a few ms instead of 60-80.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
#: an objective for L-BFGS-B: theta -> (value, gradient)
Objective = Callable[[FloatArray], tuple[float, FloatArray]]
#: (theta indices, prior means, prior sd) of a Gaussian prior on log hyperparameters
Prior = tuple[NDArray[Any], FloatArray, float]

DIRECTIONS = ("axes", "pairs")

# above this, the d(d-1) extra length scales would cost more than they pay (6 knobs: 36 features)
PAIR_MAX_KNOBS = 6

# the length-scale prior is used from this many knobs up (with the diagonal directions): measured on 4-5
# knobs (16-25 length scales, benchmarks/bench_tune.py); on a clean 2-knob diagonal ridge (4 length scales,
# 14 points: tests/tune/test_tune_optimizer.py) it doubles the model's error, so small spaces keep
# plain maximum likelihood
LS_PRIOR_MIN_KNOBS = 4

SQRT5 = float(np.sqrt(5.0))


_CONTROLLER: list[Any] = []


def _one_thread() -> Any:
    """BLAS on one thread: the matrices are tiny (<= a few hundred rows) and a multi-threaded BLAS on a
    busy machine spends far more time synchronizing than computing. The thread-pool controller is made
    once: building one inspects every loaded library (about 10-20 ms on a busy machine)."""
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


def pair_features(x: NDArray[Any]) -> FloatArray:
    """GP input features of scaled knob levels ``x`` (n, d): ``x`` itself, then (x_i - x_j)/2 and
    (x_i + x_j)/2 for every pair i < j (d + d(d-1) columns). See the module notes (R&W eq. 4.22)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    d = x.shape[1]
    if d < 2:
        return x
    i, j = np.triu_indices(d, k=1)
    return np.column_stack([x, 0.5 * (x[:, i] - x[:, j]), 0.5 * (x[:, i] + x[:, j])])


class MaternLML:
    """Negative log marginal likelihood (and gradient) of a zero-mean GP with kernel
    ``c * Matern52(x, x'; l) + s2 * [x == x'] + alpha * [x == x']`` at inputs ``X`` (n, p), targets
    ``y`` (n,), as a function of theta = (log c, log l_1 .. log l_p[, log s2]) (``noise``: the
    white-noise term is present). Matern 5/2 with r^2 = sum_k (x_k - x'_k)^2 / l_k^2:
    k = (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r) (R&W 2006 eq. 4.17); dk/dlog l_k = 5/3 (1 + sqrt5 r)
    exp(-sqrt5 r) (x_k - x'_k)^2 / l_k^2. lml = -y'a/2 - sum log diag L - n/2 log 2 pi with
    K = L L', a = K^-1 y (R&W eq. 2.30, Algorithm 2.1); d lml/d theta = tr((a a' - K^-1) dK/dtheta)/2
    (R&W eq. 5.9). A non-positive-definite K gives (+inf, 0), as scikit-learn does."""

    def __init__(self, X: NDArray[Any], y: NDArray[Any], *, noise: bool,
                 alpha: float | NDArray[Any] = 1e-8) -> None:
        X = np.asarray(X, dtype=float)
        self.n, self.p = X.shape
        diff = X[:, None, :] - X[None, :, :]
        self.sq: FloatArray = (diff * diff).reshape(self.n * self.n, self.p)  # once per fit
        self.y: FloatArray = np.asarray(y, dtype=float).ravel()
        self.noise = bool(noise)
        # the diagonal term: a scalar jitter, or per observation (known measurement variances + jitter)
        self.alpha: FloatArray = np.broadcast_to(np.asarray(alpha, dtype=float), (self.n,))
        self.calls = 0

    def __call__(self, theta: NDArray[Any]) -> tuple[float, FloatArray]:
        from scipy.linalg import cho_solve, cholesky
        from scipy.linalg.lapack import dpotri

        self.calls += 1
        theta = np.asarray(theta, dtype=float)
        n, p = self.n, self.p
        c = float(np.exp(theta[0]))
        inv_l2 = np.exp(-2.0 * theta[1:1 + p])
        s2 = float(np.exp(theta[1 + p])) if self.noise else 0.0
        r = SQRT5 * np.sqrt(np.maximum(self.sq @ inv_l2, 0.0)).reshape(n, n)  # sqrt5 * r
        e = np.exp(-r)
        kc = c * (1.0 + r + r * r / 3.0) * e  # noiseless kernel matrix
        K = kc.copy()
        K[np.diag_indices(n)] += s2 + self.alpha
        try:
            L = cholesky(K, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return float("inf"), np.zeros_like(theta)
        a = cho_solve((L, True), self.y, check_finite=False)
        lml = -0.5 * float(self.y @ a) - float(np.sum(np.log(np.diag(L)))) - 0.5 * n * np.log(2.0 * np.pi)
        kinv, info = dpotri(L, lower=1)  # K^-1 from its Cholesky factor (lower triangle filled)
        if info != 0:
            return float("inf"), np.zeros_like(theta)
        # the upper triangle is the zeros of L's: mirror the lower one
        kinv = kinv + kinv.T
        kinv[np.diag_indices(n)] *= 0.5
        W = np.outer(a, a) - kinv
        grad = np.empty(len(theta))
        grad[0] = 0.5 * float(np.sum(W * kc))
        G = (c * 5.0 / 3.0) * (1.0 + r) * e
        grad[1:1 + p] = 0.5 * ((W * G).ravel() @ self.sq) * inv_l2
        if self.noise:
            grad[1 + p] = 0.5 * s2 * float(np.trace(W))
        return -lml, -grad


def with_prior(f: Objective, prior: Prior | None) -> Objective:
    """``f`` plus the negative log density (up to a constant) of a Gaussian prior on some of the log
    hyperparameters: MAP instead of maximum likelihood (R&W 2006 sec. 5.2)."""
    if prior is None:
        return f
    idx, mean, sd = prior

    def g(theta: FloatArray) -> tuple[float, FloatArray]:
        v, grad = f(theta)
        z = (theta[idx] - mean) / sd
        grad = np.array(grad, dtype=float)
        grad[idx] += z / sd
        return float(v) + 0.5 * float(z @ z), grad
    return g


def _lbfgs(maxiter: int, prior: Prior | None = None, fast: Objective | None = None) -> Callable[..., Any]:
    """Marginal-likelihood maximizer for sklearn's GPR: L-BFGS-B with an iteration cap (a warm-started
    fit converges in a few iterations; the cap bounds the time of a poor start). ``prior`` =
    (theta indices, means, sd): a Gaussian prior on those log hyperparameters, i.e. MAP instead of
    maximum likelihood. ``fast``: the same objective as scikit-learn's (e.g. ``MaternLML``), used
    instead of it."""
    from scipy.optimize import minimize

    def run(obj_func: Callable[..., Any], initial_theta: FloatArray, bounds: FloatArray) -> tuple[FloatArray, float]:
        base: Objective = fast if fast is not None else (lambda th: obj_func(th, eval_gradient=True))
        res = minimize(with_prior(base, prior), initial_theta, method="L-BFGS-B", jac=True, bounds=bounds,
                       options={"maxiter": maxiter})
        return np.asarray(res.x, dtype=float), float(res.fun)

    return run


def fast_gpr(**params: Any) -> Any:
    """A ``skopt.learning.GaussianProcessRegressor`` whose ``predict`` computes the posterior variance
    diag(K** - K* K^-1 K*') as a row sum of (K* K^-1) o K* (one matrix product; R&W 2006 eq. 2.26) instead
    of skopt's three-operand ``einsum``, which numpy runs as an unoptimized loop (about 25 ms for 5,000
    candidates and 60 points, 2 ms this way). Same values to rounding; negative variances are set to 0
    as skopt does. Every other call (covariance, gradients, before a fit) is skopt's own."""
    from skopt.learning import GaussianProcessRegressor

    class FastGPR(GaussianProcessRegressor):  # type: ignore[misc]
        def predict(self, X: Any, return_std: bool = False, return_cov: bool = False,
                    return_mean_grad: bool = False, return_std_grad: bool = False) -> Any:
            if return_cov or return_mean_grad or return_std_grad or not hasattr(self, "X_train_"):
                return super().predict(X, return_std=return_std, return_cov=return_cov,
                                       return_mean_grad=return_mean_grad, return_std_grad=return_std_grad)
            X = np.atleast_2d(np.asarray(X, dtype=float))
            k_trans = self.kernel_(X, self.X_train_)
            y_mean = self.y_train_std_ * (k_trans @ self.alpha_) + self.y_train_mean_
            if not return_std:
                return y_mean
            var = self.kernel_.diag(X) - np.sum((k_trans @ self.K_inv_) * k_trans, axis=1)
            return y_mean, np.sqrt(np.maximum(var, 0.0) * self.y_train_std_ ** 2)

    return FastGPR(**params)
