"""MMSE receiver FFE + short DFE: the 802.3dj (Annex 178A) reference receiver solution, as pure functions.

Sources:

* [HH24] A. Healey, R. Hegde, "Reference receiver framework for 200G/lane electrical interfaces and PHYs",
  IEEE P802.3dj Task Force, Jan. 2024: the receiver model (Rx FFE of ``n_taps`` taps, ``n_pre`` of them
  before the cursor, followed by an ``n_dfe``-tap DFE) and its minimum mean-squared-error solution.
* [178A] IEEE P802.3dj draft, Annex 178A (D1.2, Aug. 2024), the COM form of [HH24]: MMSE FFE with the
  cursor constrained to unit amplitude, DFE taps bounded by ``b_min``/``b_max``, Rx FFE taps bounded
  *relative to the cursor tap* (178A-26), every pre-cursor sample kept (178A-32), R = H'H + Rnn/var_x
  (178A-33), the constrained solution and its MSE (178A-33..36). The draft is not public; these equation
  numbers are as PyChOpMarg 3.4.0 (PyPI) names them next to its code (``optimize.py``: ``clip_taps``,
  ``_mmse_solve`` docstrings, the ``mmse`` loop comment), not read from the draft here.
* [PCM] PyChOpMarg 3.4.0 ``optimize.mmse`` solves the same problem as a bordered (Lagrange) linear system;
  tests/eye/test_mmse.py checks this module against it on identical inputs. One difference, by design:
  when the DFE limits are hit and the FFE limits are not, PyChOpMarg keeps the clamped unconstrained DFE
  taps; here the DFE taps are always the clamped optimum for the final FFE, clip(Hb w) (the MSE is
  separable in b, so that is the DFE's own best answer; the two agree whenever Hb w stays past the limit).

Conventions (all quantities at the FFE input, after the CTLE and the AFE filter):

* ``h``: the pulse response sampled once per UI at the chosen sampling phase (V), cursor at ``cursor``.
* ``rn``: the autocorrelation of the noise (+ crosstalk, jitter, TX noise) at the FFE input, sampled at UI
  lags 0 .. n_taps-1 (V^2); :func:`autocorrelation_from_psd` builds it from a power spectral density.
* ``var_x``: the symbol variance (PAM-L with levels in [-1, 1]: (L^2 - 1) / (3 (L - 1)^2), 178A / 93A).
* FFE taps ``w`` (length ``n_taps``, cursor tap at index ``n_pre``); the equalized cursor is
  ``y[c] = sum_k w[k] h[c + n_pre - k]`` and the solution makes it exactly 1 (unit-amplitude constraint).
* DFE taps ``b`` are in units of that cursor (so ``b_min``/``b_max`` are the config sheet's normalized limits).

The MSE of the decision variable, per [HH24]:

    MSE / var_x = w' R w + 1 + b' b - 2 w' h0 - 2 w' Hb' b,    R = H' H + toeplitz(rn) / var_x

with ``H`` the convolution matrix of ``h`` with the FFE, ``h0`` its cursor row, ``Hb`` the ``n_dfe`` rows after
it. Minimized over ``b`` (unconstrained) it gives ``b = Hb w`` and, with ``h0' w = 1``,

    MSE / var_x = w' Q w,    Q = H_isi' H_isi + toeplitz(rn) / var_x

where ``H_isi`` is ``H`` without the cursor row and the DFE rows (the ISI the DFE does not cancel). The
minimum of a quadratic form under one linear constraint is closed form (Lagrange):

    w = Q^-1 h0 / (h0' Q^-1 h0),    MSE = var_x / (h0' Q^-1 h0).

When that ``b`` leaves its limits, ``b`` is clamped and ``w`` is solved again with ``b`` fixed (the [HH24]
procedure, one pass):  w = R^-1 (g + mu h0), g = h0 + Hb' b_lim, mu = (1 - h0' R^-1 g) / (h0' R^-1 h0).
Then the FFE taps are clipped relative to the cursor tap (178A-26), the cursor renormalized to 1, the DFE
taps recomputed and clamped, and the MSE evaluated with the general formula above.

Taps held at given values (a receiver whose taps an engineer overrides, ``fixed_tap_basis``): each held tap
is a fixed ratio to the cursor tap, w[c+k] = v_k w[c] (c = n_pre). Derivation (the constrained form of the
above; [HH24] and 178A-33..36 give only the unconstrained one): these constraints are linear and
homogeneous, so the admissible taps are exactly w = N z, with z the free taps (every tap but the held
ones) and N the n_taps x n_free matrix that copies each free tap and writes v_k times the cursor tap into
each held one. Substituting w = N z leaves a quadratic form of the same shape in z,

    MSE / var_x = z' (N' Q N) z   subject to   (N' h0)' z = 1,

so the same Lagrange solution applies with Q -> N' Q N and h0 -> N' h0 (and, with the DFE clamped,
R -> N' R N, g -> N' g), and w = N z. Consequences the tests check: the held-tap MSE is never below the
unconstrained one (a minimum over a subset), and holding each tap at the unconstrained optimum's own ratio
reproduces that optimum (it lies in the subset; Q is positive definite, so the minimum is unique).

Everything is vectorized over leading batch axes of ``h`` (sampling phases, CTLE settings): one call solves
all of them with stacked ``numpy.linalg.solve``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from eqtune.errors import InputError

FloatArray = NDArray[np.float64]


class MmseInputError(InputError):
    """Inputs of the MMSE solution that cannot describe a receiver (sizes, limits, non-finite values)."""


@dataclass(frozen=True)
class MmseSolution:
    """The MMSE receiver at each batch entry (leading axes of the sampled pulse response).

    ``ffe``: FFE taps (..., n_taps), cursor tap at ``n_pre``, scaled so the equalized cursor is 1.
    ``dfe``: DFE taps (..., n_dfe), in units of the equalized cursor, inside their limits.
    ``mse``: mean-squared error of the decision variable (V^2 relative to a unit cursor), with the
    constraints applied. ``fom_db``: 20 log10(R_LM / (L - 1) / sqrt(mse)) ([HH24] figure of merit).
    ``dfe_limited`` / ``ffe_limited``: whether a DFE / FFE tap limit was active.
    ``isi``: the residual ISI the DFE does not cancel (..., len(h) + n_taps - 1), cursor entry 0.
    """

    ffe: FloatArray
    dfe: FloatArray
    mse: FloatArray
    fom_db: FloatArray
    dfe_limited: NDArray[np.bool_]
    ffe_limited: NDArray[np.bool_]
    isi: FloatArray


def pam_symbol_variance(levels: int) -> float:
    """Variance of equiprobable PAM-``levels`` symbols on [-1, 1]: (L^2 - 1) / (3 (L - 1)^2) (93A/178A var_X)."""
    if levels < 2:
        raise MmseInputError(f"PAM levels must be >= 2, got {levels}")
    return (levels**2 - 1) / (3.0 * (levels - 1) ** 2)


def autocorrelation_from_psd(psd_v2_per_hz: FloatArray, df_hz: float, n_lags: int) -> FloatArray:
    """Noise autocorrelation at UI lags 0..n_lags-1 (V^2) from its spectral density (Wiener-Khinchin).

    ``psd_v2_per_hz``: the two-sided density S(f) of the UI-sampled (folded) noise at f = 0, df, ..., f_b/2
    (N+1 points, N df = f_b / 2), V^2/Hz. R[k] = integral over (-f_b/2, f_b/2) of S(f) exp(j 2 pi f k T) df,
    evaluated on that grid (the even extension of S, i.e. ``irfft`` times the 2N df = f_b it omits). A
    white density S = sigma^2 / f_b gives R = [sigma^2, 0, 0, ...]. PyChOpMarg's ``NoiseCalc.Rn`` uses
    the same convention (``irfft(Sn) / Tb``).
    """
    psd = np.asarray(psd_v2_per_hz, dtype=float)
    if psd.ndim != 1 or psd.size < 2 or not np.all(np.isfinite(psd)):
        raise MmseInputError("noise PSD must be a finite 1-D array of >= 2 points from 0 to f_b/2")
    if df_hz <= 0:
        raise MmseInputError(f"PSD frequency step must be > 0 Hz, got {df_hz}")
    n = psd.size - 1
    if n_lags > 2 * n:
        raise MmseInputError(f"{n_lags} lags need a PSD of >= {n_lags // 2 + 1} points, got {psd.size}")
    r = np.fft.irfft(psd, 2 * n) * (2 * n * df_hz)
    return np.asarray(r[:n_lags], dtype=float)


def convolution_rows(h: FloatArray, n_taps: int) -> FloatArray:
    """Full convolution matrix of ``h`` (..., N) with an ``n_taps`` FFE: (..., N + n_taps - 1, n_taps).

    Row ``i``, column ``k`` is h[i - k] (0 outside 0..N-1), so ``rows @ w`` is ``numpy.convolve(h, w)``.
    """
    n = h.shape[-1]
    i = np.arange(n + n_taps - 1)[:, None] - np.arange(n_taps)[None, :]
    valid = (i >= 0) & (i < n)
    return np.where(valid, h[..., np.clip(i, 0, n - 1)], 0.0)


def _check(h: FloatArray, rn: FloatArray, cursor: int, n_taps: int, n_pre: int, n_dfe: int,
           b_min: FloatArray, b_max: FloatArray, w_min: FloatArray | None, w_max: FloatArray | None) -> None:
    if n_taps < 1 or not 0 <= n_pre < n_taps:
        raise MmseInputError(f"need n_taps >= 1 and 0 <= n_pre < n_taps, got n_taps={n_taps}, n_pre={n_pre}")
    if not 0 <= cursor < h.shape[-1]:
        raise MmseInputError(f"cursor index {cursor} is outside the {h.shape[-1]}-sample pulse response")
    if n_dfe < 0 or cursor + n_pre + n_dfe >= h.shape[-1] + n_taps - 1:
        raise MmseInputError(f"{n_dfe} DFE taps run past the end of the pulse response; give more post-cursor samples")
    if rn.shape[-1] < n_taps:
        raise MmseInputError(f"noise autocorrelation has {rn.shape[-1]} lags, the FFE needs {n_taps}")
    if b_min.shape != (n_dfe,) or b_max.shape != (n_dfe,) or np.any(b_min > b_max):
        raise MmseInputError(f"DFE limits must be {n_dfe} values each with b_min <= b_max")
    for name, lim in (("w_min", w_min), ("w_max", w_max)):
        if lim is not None and lim.shape != (n_taps,):
            raise MmseInputError(f"{name} must have {n_taps} values (one per FFE tap), got {lim.shape}")
    if not (np.all(np.isfinite(h)) and np.all(np.isfinite(rn))):
        raise MmseInputError("pulse response and noise autocorrelation must be finite")


def clip_ffe_to_cursor(w: FloatArray, n_pre: int, w_min: FloatArray, w_max: FloatArray) -> FloatArray:
    """FFE taps limited relative to the cursor tap (178A-26): w_min[k] w[c] <= w[k] <= w_max[k] w[c].

    The cursor tap itself is left as it is (its limits are 1 in the dj sheets); batch axes lead.
    """
    c = w[..., n_pre:n_pre + 1]
    lo = np.minimum(w_min * c, w_max * c)
    hi = np.maximum(w_min * c, w_max * c)
    out = np.clip(w, lo, hi)
    out[..., n_pre] = w[..., n_pre]
    return out


def fixed_tap_basis(n_taps: int, n_pre: int, fixed: dict[int, float]) -> FloatArray:
    """N (n_taps, n_taps - len(fixed)) with w = N z holding w[n_pre + k] = v_k w[n_pre] for each ``fixed``
    offset k -> v_k (UI from the cursor tap, value relative to the cursor tap; module docstring). The free
    taps z are the others, in tap order."""
    bad = [k for k in fixed if k == 0 or not -n_pre <= k < n_taps - n_pre]
    if bad:
        raise MmseInputError(f"held Rx FFE tap offset(s) {bad}: the {n_taps}-tap FFE with {n_pre} pre-cursor taps "
                             f"has offsets {-n_pre}..{n_taps - n_pre - 1} besides the cursor tap (0)")
    if not all(np.isfinite(v) for v in fixed.values()):
        raise MmseInputError("held Rx FFE tap values must be finite")
    held = {n_pre + k: float(v) for k, v in fixed.items()}
    free = [i for i in range(n_taps) if i not in held]
    basis = np.zeros((n_taps, len(free)))
    basis[free, np.arange(len(free))] = 1.0
    c = free.index(n_pre)
    for i, v in held.items():
        basis[i, c] = v
    return basis


def mmse_rx_ffe(h: FloatArray, rn: FloatArray, *, cursor: int, n_taps: int, n_pre: int, n_dfe: int,
                var_x: float, b_min: FloatArray, b_max: FloatArray,
                w_min: FloatArray | None = None, w_max: FloatArray | None = None,
                rlm: float = 1.0, levels: int = 4, basis: FloatArray | None = None) -> MmseSolution:
    """The [HH24] / 178A MMSE FFE + DFE for UI-sampled pulse responses ``h`` (..., N) (module docstring).

    ``rn``: noise autocorrelation (n_lags,) or (..., n_lags) matching the batch axes of ``h``, V^2.
    ``w_min``/``w_max``: FFE tap limits relative to the cursor tap (178A-26); None = no FFE limit.
    ``rlm``, ``levels``: only for ``fom_db``. ``basis``: :func:`fixed_tap_basis` for held taps; None = every
    tap adapted (the unconstrained solution, unchanged).
    """
    h = np.asarray(h, dtype=float)
    rn = np.asarray(rn, dtype=float)
    b_min = np.asarray(b_min, dtype=float).reshape(-1)
    b_max = np.asarray(b_max, dtype=float).reshape(-1)
    w_min_a = None if w_min is None else np.asarray(w_min, dtype=float).reshape(-1)
    w_max_a = None if w_max is None else np.asarray(w_max, dtype=float).reshape(-1)
    _check(h, rn, cursor, n_taps, n_pre, n_dfe, b_min, b_max, w_min_a, w_max_a)
    if var_x <= 0:
        raise MmseInputError(f"symbol variance must be > 0, got {var_x}")

    big_h = convolution_rows(h, n_taps)                      # (..., M, n_taps)
    d = cursor + n_pre                                       # cursor row of the FFE output
    h0 = big_h[..., d, :]                                    # (..., n_taps)
    hb = big_h[..., d + 1:d + 1 + n_dfe, :]                  # (..., n_dfe, n_taps)
    lag = np.abs(np.arange(n_taps)[:, None] - np.arange(n_taps)[None, :])
    r_full = np.swapaxes(big_h, -1, -2) @ big_h + rn[..., :n_taps][..., lag] / var_x   # H'H + toeplitz(rn)/var_x
    sol = mmse_solve(r_full, h0, hb, n_pre=n_pre, var_x=var_x, b_min=b_min, b_max=b_max, w_min=w_min_a,
                     w_max=w_max_a, rlm=rlm, levels=levels, basis=basis)
    y = (big_h @ sol.ffe[..., None])[..., 0]
    isi = y.copy()
    isi[..., d] -= 1.0
    isi[..., d + 1:d + 1 + n_dfe] -= sol.dfe
    return MmseSolution(ffe=sol.ffe, dfe=sol.dfe, mse=sol.mse, fom_db=sol.fom_db, dfe_limited=sol.dfe_limited,
                        ffe_limited=sol.ffe_limited, isi=isi)


def toeplitz_gram(r_hh: FloatArray, rn: FloatArray, var_x: float) -> FloatArray:
    """R = H'H + toeplitz(rn) / var_x (178A-33) from autocorrelations (..., n_taps) at lags 0..n_taps-1.

    For the *full* convolution matrix H of a pulse h with an n-tap FFE, H'H is the Toeplitz matrix of the
    linear autocorrelation of h (``r_hh[k] = sum_n h[n] h[n + k]``), so R needs neither H nor its size.
    """
    n = r_hh.shape[-1]
    lag = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    out: FloatArray = (r_hh + rn / var_x)[..., lag]
    return out


def mmse_solve(r_full: FloatArray, h0: FloatArray, hb: FloatArray, *, n_pre: int, var_x: float,
               b_min: FloatArray, b_max: FloatArray, w_min: FloatArray | None = None,
               w_max: FloatArray | None = None, rlm: float = 1.0, levels: int = 4,
               basis: FloatArray | None = None) -> MmseSolution:
    """The constrained MMSE FFE + DFE (module docstring) from R = H'H + Rnn/var_x (..., n, n), the cursor
    row ``h0`` (..., n) and the DFE rows ``hb`` (..., n_dfe, n) of H: 178A-33..36. ``isi`` is left empty
    (:func:`mmse_rx_ffe` fills it from the pulse). ``basis``: N of :func:`fixed_tap_basis` (held taps,
    w = N z); None = every tap free."""
    r_full = np.asarray(r_full, dtype=float)
    h0 = np.asarray(h0, dtype=float)
    hb = np.asarray(hb, dtype=float)
    n_taps = h0.shape[-1]
    # H_isi' H_isi + Rn/var_x (small batched products by einsum: numpy's matmul is slow on tiny matrices)
    q = r_full - h0[..., :, None] * h0[..., None, :] - np.einsum("...ri,...rj->...ij", hb, hb)

    # Unconstrained DFE: w = Q^-1 h0 / (h0' Q^-1 h0); b = Hb w.
    if basis is None:
        qinv_h0 = np.linalg.solve(q, h0[..., None])[..., 0]
        w = qinv_h0 / np.sum(h0 * qinv_h0, axis=-1, keepdims=True)
    else:  # held taps: the same form in z, Q -> N'QN, h0 -> N'h0, then w = N z (module docstring)
        h0z = h0 @ basis
        qz_h0 = np.linalg.solve(basis.T @ q @ basis, h0z[..., None])[..., 0]
        w = (qz_h0 / np.sum(h0z * qz_h0, axis=-1, keepdims=True)) @ basis.T
    b = np.einsum("...ri,...i->...r", hb, w)
    b_lim = np.clip(b, b_min, b_max)
    dfe_limited = np.any(b_lim != b, axis=-1)

    if np.any(dfe_limited):
        # DFE clamped: minimize w' R w - 2 w' (h0 + Hb' b_lim) subject to h0' w = 1 ([HH24]); solved for
        # the clamped entries only (batch axes flattened)
        n_dfe = hb.shape[-2]
        sel = dfe_limited.reshape(-1)
        h0c = h0.reshape(-1, n_taps)[sel]
        hbc = hb.reshape(-1, n_dfe, n_taps)[sel]
        g = h0c + np.einsum("bri,br->bi", hbc, b_lim.reshape(-1, n_dfe)[sel])
        r_sel = r_full.reshape(-1, n_taps, n_taps)[sel]
        if basis is not None:  # held taps: R -> N'RN, g -> N'g, h0 -> N'h0 (module docstring)
            r_sel, g, h0c = basis.T @ r_sel @ basis, g @ basis, h0c @ basis
        rinv = np.linalg.solve(r_sel, np.stack([g, h0c], axis=-1))
        rinv_g, rinv_h0 = rinv[..., 0], rinv[..., 1]
        mu = (1.0 - np.sum(h0c * rinv_g, -1, keepdims=True)) / np.sum(h0c * rinv_h0, -1, keepdims=True)
        w_all = w.reshape(-1, n_taps).copy()
        w_all[sel] = rinv_g + mu * rinv_h0 if basis is None else (rinv_g + mu * rinv_h0) @ basis.T
        w = w_all.reshape(w.shape)
    ffe_limited = np.zeros(dfe_limited.shape, dtype=bool)
    if w_min is not None or w_max is not None:
        lo = np.full(n_taps, -np.inf) if w_min is None else w_min
        hi = np.full(n_taps, np.inf) if w_max is None else w_max
        w_clip = clip_ffe_to_cursor(w, n_pre, lo, hi)
        ffe_limited = np.any(w_clip != w, axis=-1)
        w = np.where(ffe_limited[..., None], w_clip / np.sum(h0 * w_clip, -1, keepdims=True), w)
    b_final = np.clip(np.einsum("...ri,...i->...r", hb, w), b_min, b_max)

    # General MSE with the constrained (w, b) ([HH24]).
    rw = np.einsum("...ij,...j->...i", r_full, w)
    mse = var_x * (np.sum(w * rw, -1) + 1.0 + np.sum(b_final**2, -1) - 2.0 * np.sum(w * h0, -1)
                   - 2.0 * np.sum(np.einsum("...ri,...i->...r", hb, w) * b_final, -1))
    with np.errstate(divide="ignore"):
        fom = 20.0 * np.log10(rlm / (levels - 1) / np.sqrt(np.maximum(mse, 0.0)))
    return MmseSolution(ffe=w, dfe=b_final, mse=mse, fom_db=fom, dfe_limited=dfe_limited,
                        ffe_limited=ffe_limited, isi=np.zeros(h0.shape[:-1] + (0,)))


@dataclass(frozen=True)
class PhaseSearch:
    """The best sampling phase of an oversampled pulse response and the MMSE receiver there."""

    sample_index: int          # index into the oversampled pulse response of the cursor sample
    solution: MmseSolution     # at that phase (no batch axes)
    fom_db_by_phase: FloatArray  # FOM at each phase tried, in the order of ``sample_indices``
    sample_indices: NDArray[np.int_]


def ui_samples(pulse: FloatArray, samples_per_ui: int, cursor_sample: int, n_pre: int,
               n_post: int) -> FloatArray:
    """UI-spaced samples of ``pulse`` around ``cursor_sample``: n_pre before, n_post after (zeros outside)."""
    idx = cursor_sample + samples_per_ui * np.arange(-n_pre, n_post + 1)
    ok = (idx >= 0) & (idx < pulse.shape[-1])
    return np.where(ok, pulse[..., np.clip(idx, 0, pulse.shape[-1] - 1)], 0.0)


def mmse_best_phase(pulse: FloatArray, rn: FloatArray, *, samples_per_ui: int, n_taps: int, n_pre: int,
                    n_dfe: int, var_x: float, b_min: FloatArray, b_max: FloatArray,
                    w_min: FloatArray | None = None, w_max: FloatArray | None = None,
                    rlm: float = 1.0, levels: int = 4, search_ui: float = 0.5) -> PhaseSearch:
    """Sampling phase search: the MMSE receiver at every sample within +-``search_ui`` of the pulse peak.

    ``pulse``: oversampled pulse response (V), ``samples_per_ui`` per UI. The phases are solved in one
    batched call; the phase with the highest FOM wins (the [HH24] / 178A criterion). ``rn`` is taken as
    independent of the phase (a phase-dependent noise term, such as jitter, needs one call per phase).
    """
    pulse = np.asarray(pulse, dtype=float).reshape(-1)
    peak = int(np.argmax(pulse))
    half = int(search_ui * samples_per_ui)
    indices = np.arange(max(peak - half, 0), min(peak + half, pulse.size - 1) + 1)
    n_post = (pulse.size - 1 - peak) // samples_per_ui
    n_before = max(n_pre, peak // samples_per_ui)
    h = np.stack([ui_samples(pulse, samples_per_ui, int(i), n_before, n_post) for i in indices])
    sol = mmse_rx_ffe(h, rn, cursor=n_before, n_taps=n_taps, n_pre=n_pre, n_dfe=n_dfe, var_x=var_x,
                      b_min=b_min, b_max=b_max, w_min=w_min, w_max=w_max, rlm=rlm, levels=levels)
    best = int(np.argmax(sol.fom_db))
    pick = MmseSolution(ffe=sol.ffe[best], dfe=sol.dfe[best], mse=sol.mse[best], fom_db=sol.fom_db[best],
                        dfe_limited=sol.dfe_limited[best], ffe_limited=sol.ffe_limited[best], isi=sol.isi[best])
    return PhaseSearch(sample_index=int(indices[best]), solution=pick, fom_db_by_phase=sol.fom_db,
                       sample_indices=indices)
