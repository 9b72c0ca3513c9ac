"""Statistical-eye arithmetic: symbol levels, and the distribution of ISI + crosstalk + noise.

The COM method (IEEE 802.3 93A.1.7, 93A-39..93A-43) builds the interference PDF by convolving the PDFs
of every cursor ``h_k * a`` (``a`` a random symbol level) with the Gaussian noise and the dual-Dirac
jitter PDF. A convolution of PDFs is a product of characteristic functions, so eqtune computes the
characteristic function (CF) on an FFT grid, vectorized over rows (EQ points x phases)::

    CF(w) = prod_k mean_l cos(w a_l h_k) * cos(w A_DD) * exp(-sigma^2 w^2 / 2)

(symbol levels are symmetric, so each cursor's CF is real), and one inverse real FFT gives the PDF.
The largest ``k_exact`` cursors enter exactly; the many small remaining ones are lumped into the
Gaussian term with their variance sigma_X^2 sum h_k^2 (central limit theorem; they are far below the
noise). Grid: half-span = sum |h_k| + A_DD + 10 sigma (no aliasing), and sigma >= 3 bins (the CF has
decayed to < 1e-19 at the grid's Nyquist), so the numerical floor of the tail probabilities is ~1e-16.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import ndtr, ndtri

MIN_SIGMA_REL = 1e-5  # numerical noise floor relative to the cursor (noise-free links stay finite)
P_FLOOR = 1e-15  # below this the FFT tail is round-off: the Gaussian asymptote takes over
BINS_PER_SIGMA = 6.0  # grid resolution: bin <= sigma/6 (tail quantile error < 1e-4 relative)


def symbol_levels(n_levels: int, rlm: float = 1.0) -> np.ndarray:
    """Normalized symbol levels (outer = +-1). Inner levels are scaled by the level mismatch R_LM
    (802.3 120D.3.1.2: R_LM = 3 ES for PAM4, so the inner levels sit at +-R_LM/3)."""
    a = np.linspace(-1.0, 1.0, int(n_levels))
    inner = np.abs(a) < 1.0 - 1e-12
    return np.where(inner, a * rlm, a)


def symbol_variance(n_levels: int) -> float:
    """sigma_X^2 = (L^2 - 1) / (3 (L - 1)^2), the symbol variance of 93A-? (COM uses the ideal levels
    here even when R_LM < 1; this reproduces MATLAB COM 3.70's sigma_jitter figure)."""
    L = int(n_levels)
    return (L * L - 1) / (3.0 * (L - 1) ** 2)


def q_factor(p: float | np.ndarray) -> np.ndarray:
    """Gaussian Q^-1(p): the one-sided tail probability p in units of sigma."""
    ret: np.ndarray = -ndtri(np.asarray(p, dtype=float))
    return ret


def norm_sf(z: np.ndarray) -> np.ndarray:
    """Gaussian tail probability Q(z)."""
    ret: np.ndarray = ndtr(-np.asarray(z, dtype=float))
    return ret


def split_exact(cursors: np.ndarray, k_exact: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k_exact`` largest |cursors| per row (exact), and the summed square of the rest (R,)."""
    c = np.asarray(cursors, dtype=float)
    if c.shape[-1] <= k_exact:
        return c, np.zeros(c.shape[:-1])
    part = np.argpartition(np.abs(c), c.shape[-1] - k_exact, axis=-1)
    big = np.take_along_axis(c, part[..., -k_exact:], axis=-1)
    rest = np.take_along_axis(c, part[..., :-k_exact], axis=-1)
    return big, np.sum(rest**2, axis=-1)


def _grid_inputs(cursors: np.ndarray, sigma_v: np.ndarray | float, a_dd_v: np.ndarray | float, levels: np.ndarray,
                 h0_v: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = cursors.shape[0]
    sigma = np.broadcast_to(np.asarray(sigma_v, dtype=float), (r,)).copy()
    add = np.broadcast_to(np.abs(np.asarray(a_dd_v, dtype=float)), (r,))
    h0 = np.abs(np.broadcast_to(np.asarray(h0_v, dtype=float), (r,)))
    peak = np.sum(np.abs(cursors), axis=-1) * float(np.max(np.abs(levels))) + add
    sigma = np.maximum(sigma, MIN_SIGMA_REL * np.maximum(h0, 1e-12))
    return sigma, add, peak


def bins_needed(peak: np.ndarray, sigma: np.ndarray, min_bins: int = 256, max_bins: int = 8192) -> np.ndarray:
    """Power-of-two bins per row so that 2 (peak + 10 sigma) / N <= sigma / BINS_PER_SIGMA."""
    need = 2.0 * BINS_PER_SIGMA * (peak + 10.0 * sigma) / sigma
    ret: np.ndarray = np.clip(2 ** np.ceil(np.log2(np.maximum(need, 2.0))), min_bins, max_bins).astype(int)
    return ret


def grouped_pdfs(cursors: np.ndarray, sigma_v: np.ndarray, a_dd_v: np.ndarray, levels: np.ndarray,
                 h0_v: np.ndarray) -> list[tuple[np.ndarray, InterferencePdf]]:
    """InterferencePdf objects for groups of rows sharing a grid size, so every row's result is the
    same whether it is computed alone or in a batch."""
    cursors = np.atleast_2d(np.asarray(cursors, dtype=float))
    r = cursors.shape[0]
    sig = np.broadcast_to(np.asarray(sigma_v, dtype=float), (r,))
    add = np.broadcast_to(np.asarray(a_dd_v, dtype=float), (r,))
    h0 = np.broadcast_to(np.asarray(h0_v, dtype=float), (r,))
    s2, _, peak = _grid_inputs(cursors, sig, add, levels, h0)
    nb = bins_needed(peak, s2)
    out = []
    for n in np.unique(nb):
        rows = np.nonzero(nb == n)[0]
        out.append((rows, InterferencePdf(cursors[rows], sig[rows], add[rows], levels, h0_v=h0[rows],
                                          n_bins=int(n))))
    return out


@lru_cache(maxsize=32)
def _level_weights(levels: tuple[float, ...]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Distinct |levels| and their probabilities (levels are symmetric, so each cursor's CF is real)."""
    lv = np.abs(np.asarray(levels))
    pos = np.unique(lv)
    return tuple(pos.tolist()), tuple((np.sum(np.isclose(lv[:, None], pos[None, :]), axis=0) / len(lv)).tolist())


class InterferencePdf:
    """PDF of the interference Y (ISI + crosstalk + noise + DD jitter) per row, on a per-row grid.

    Rows are independent (different EQ points / phases). ``y`` is (R, N), ``pdf`` (R, N), ``tail`` (R, N)
    the probability P(Y > y). Y is symmetric around 0. The number of bins N (a power of two, shared by
    all rows) is chosen so that every row has half-span >= sum|h| + A_DD + 10 sigma and bin <= sigma/3;
    beyond ``max_bins`` sigma is inflated instead (pessimistic, only for nearly noise-free rows).
    """

    def __init__(self, cursors: np.ndarray, sigma_v: np.ndarray, a_dd_v: np.ndarray, levels: np.ndarray,
                 *, h0_v: np.ndarray, min_bins: int = 256, max_bins: int = 8192, n_bins: int | None = None):
        cursors = np.atleast_2d(np.asarray(cursors, dtype=float))
        r = cursors.shape[0]
        sigma, add, peak = _grid_inputs(cursors, sigma_v, a_dd_v, levels, h0_v)
        if n_bins is None:
            n_bins = int(np.max(bins_needed(peak, sigma, min_bins, max_bins)))
        # sigma inflation when n_bins is capped: sigma/BINS_PER_SIGMA = 2 (peak + 10 sigma)/N
        s_min = (2.0 * peak / n_bins) / (1.0 / BINS_PER_SIGMA - 20.0 / n_bins)
        sigma = np.maximum(sigma, s_min)
        dy = 2.0 * (peak + 10.0 * sigma) / n_bins
        self.n_bins = n_bins
        self.dy = dy
        self.sigma_v = sigma
        n_half = n_bins // 2 + 1
        dw = 2.0 * np.pi / (n_bins * dy)  # rad/V per bin
        # the Gaussian factor makes the CF negligible (< 1e-17) beyond sigma w = 9: skip those frequencies
        # (per row; the rest is zero-filled, so rows do not depend on each other)
        n_use = int(min(n_half, np.ceil(np.max(9.0 / (sigma * dw))) + 2))
        w = np.arange(n_use)[None, :] * dw[:, None]  # (R, n_use)
        cf = np.exp(-0.5 * (sigma[:, None] * w) ** 2) * np.cos(w * add[:, None])  # Gaussian x dual-Dirac
        pos, weights = _level_weights(tuple(np.round(np.asarray(levels, dtype=float), 12)))
        for k in range(cursors.shape[1]):  # 93A-40: convolve each cursor's PDF -> multiply CFs
            wh = w * cursors[:, k, None]
            f = weights[0] * np.cos(wh * pos[0]) if pos[0] > 0 else np.full_like(w, weights[0])
            for a, wt in zip(pos[1:], weights[1:]):
                f += wt * np.cos(wh * a)
            cf *= f
        row_use = np.minimum(np.ceil(9.0 / (sigma * dw)) + 2, n_half)
        full = np.zeros((r, n_half))
        full[:, :n_use] = np.where(np.arange(n_use)[None, :] < row_use[:, None], cf, 0.0)
        raw = np.fft.irfft(full, n_bins, axis=-1) / dy[:, None]
        h = n_bins // 2
        pdf = np.concatenate([raw[:, h:], raw[:, :h]], axis=-1)  # fftshift: y from -N/2 dy
        self.y = (np.arange(n_bins)[None, :] - n_bins // 2) * dy[:, None]
        self.pdf = np.maximum(pdf, 0.0)
        # P(Y > y) by summing bins from the top (pdf smooth on the grid: sigma >= 3 bins)
        # trapezoid with the Euler-Maclaurin end correction: int_y^inf f = T + dy^2/12 f'(y)
        d = dy[:, None]
        tail = np.cumsum(self.pdf[:, ::-1], axis=-1)[:, ::-1] * d - 0.5 * self.pdf * d
        tail += d**2 / 12.0 * np.gradient(self.pdf, axis=-1) / d
        self.tail = np.clip(tail, 1e-300, 1.0)

    def quantile(self, p: float) -> np.ndarray:
        """Smallest y >= 0 with P(Y > y) <= p, per row (V); log-interpolated between bins.

        Below P_FLOOR (the FFT's round-off floor) the tail continues as the Gaussian asymptote from
        P_FLOOR: q(p) = q(P_FLOOR) + sigma (Q^-1(p) - Q^-1(P_FLOOR)) (the ISI is bounded, so the deep
        tail is the Gaussian one), keeping q monotone in p."""
        if p < P_FLOOR:
            ret: np.ndarray = self._quantile(P_FLOOR) + self.sigma_v * (q_factor(p) - q_factor(P_FLOOR))
            return ret
        return self._quantile(p)

    def _quantile(self, p: float) -> np.ndarray:
        mid = self.n_bins // 2
        lt = np.log(self.tail[:, mid:])
        target = np.log(p)
        idx = np.argmax(lt <= target, axis=-1)  # first bin at or below p (grid covers the support)
        idx = np.maximum(idx, 1)
        rows = np.arange(lt.shape[0])
        l0, l1 = lt[rows, idx - 1], lt[rows, idx]
        frac = np.clip((l0 - target) / np.where(l0 > l1, l0 - l1, 1.0), 0.0, 1.0)
        ret: np.ndarray = (idx - 1 + frac) * self.dy
        return ret

    def tail_at(self, y_v: np.ndarray) -> np.ndarray:
        """P(Y > y) per row at ``y_v`` (R,) or (R, k), log-interpolated; beyond the P_FLOOR quantile the
        Gaussian asymptote (the inverse of ``quantile``)."""
        y_v = np.asarray(y_v, dtype=float)
        single = y_v.ndim == 1
        yy = y_v[:, None] if single else y_v
        lp = np.log(self.tail)
        out = np.empty(yy.shape)
        for r in range(yy.shape[0]):
            out[r] = np.exp(np.interp(yy[r], self.y[r], lp[r], left=0.0, right=np.log(1e-300)))
        qf = self._quantile(P_FLOOR)[:, None]
        deep = yy > qf
        if np.any(deep):
            z = q_factor(P_FLOOR) + (yy - qf) / self.sigma_v[:, None]
            out = np.where(deep, norm_sf(z), out)
        return out[:, 0] if single else out

    def row_tail(self, k: int, y_v: np.ndarray) -> np.ndarray:
        """P(Y > y) of row ``k`` at the points ``y_v`` (any shape), as ``tail_at``."""
        y_v = np.asarray(y_v, dtype=float)
        out = np.exp(np.interp(y_v, self.y[k], np.log(self.tail[k]), left=0.0, right=np.log(1e-300)))
        qf = float(self._quantile(P_FLOOR)[k])
        z = q_factor(P_FLOOR) + (y_v - qf) / self.sigma_v[k]
        return np.where(y_v > qf, norm_sf(z), out)



def eye_heights_at_ber(cursors_v: np.ndarray, sigma_v: float, levels: np.ndarray, h0_v: float, ber: float,
                       k_exact: int = 16, *, own_dd_v: float = 0.0, own_rj_v: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Eye height per eye (V, bottom to top) and the interference quantile per level (V) of one receiver.

    The residual interference at the decision point is ``cursors_v`` (V: the ISI left after every
    equalizer, plus any per-cursor dual-Dirac jitter term, each multiplied by a random symbol level) and
    Gaussian noise ``sigma_v``; the ``k_exact`` largest cursors enter exactly (93A-40), the rest as Gaussian
    variance sigma_X^2 sum h^2 (as the engine's stage B). The decided symbol's own jitter is not random in
    level: a symbol of level a moves by a (+-``own_dd_v`` + N(0, ``own_rj_v``^2)) (transmitter jitter on
    the cursor, h_J(0) x A_DD and x sigma_RJ, first order as 93A-28), so each |level| gets its own
    distribution (dual-Dirac ``|a| own_dd_v``, extra variance a^2 ``own_rj_v``^2) and
    EH_i = (a_{i+1} - a_i) h0 - q(|a_i|) - q(|a_{i+1}|), q the one-sided ``ber`` quantile (93A.1.7 read at
    ``ber``). For the receiver an Rx FFE front end feeds (``eqtune.eye.ffe_eye``).
    """
    lv = np.asarray(levels, dtype=float)
    mags = np.unique(np.round(np.abs(lv), 12))
    big, rest2 = split_exact(np.atleast_2d(np.asarray(cursors_v, dtype=float)), k_exact)
    sig = np.sqrt(float(sigma_v) ** 2 + symbol_variance(lv.size) * rest2 + (mags * own_rj_v) ** 2)
    rows = np.repeat(big, mags.size, axis=0)
    pdf = InterferencePdf(rows, sig, mags * abs(own_dd_v), lv, h0_v=np.full(mags.size, abs(float(h0_v))))
    q_mag = pdf.quantile(ber)
    q = q_mag[np.searchsorted(mags, np.round(np.abs(lv), 12))]
    return np.diff(lv) * float(h0_v) - q[:-1] - q[1:], q


def symbol_error_ratio(cursors_v: np.ndarray, sigma_v: float, levels: np.ndarray, h0_v: float, k_exact: int = 16,
                       *, own_dd_v: float = 0.0, own_rj_v: float = 0.0) -> float:
    """Symbol error ratio of the receiver of :func:`eye_heights_at_ber` with thresholds mid-way between the
    levels: (1/L) sum over eyes of P(level i crosses up) + P(level i+1 crosses down), each the tail of its
    level's distribution at half the eye's spacing (the engine's stage-B estimate, per level here)."""
    lv = np.asarray(levels, dtype=float)
    mags = np.unique(np.round(np.abs(lv), 12))
    big, rest2 = split_exact(np.atleast_2d(np.asarray(cursors_v, dtype=float)), k_exact)
    sig = np.sqrt(float(sigma_v) ** 2 + symbol_variance(lv.size) * rest2 + (mags * own_rj_v) ** 2)
    pdf = InterferencePdf(np.repeat(big, mags.size, axis=0), sig, mags * abs(own_dd_v), lv,
                          h0_v=np.full(mags.size, abs(float(h0_v))))
    row = np.searchsorted(mags, np.round(np.abs(lv), 12))
    half = np.diff(lv) * float(h0_v) / 2.0
    if np.any(half <= 0):
        return 1.0 - 1.0 / lv.size
    up = [float(pdf.row_tail(int(row[i]), np.array([half[i]]))[0]) for i in range(half.size)]
    down = [float(pdf.row_tail(int(row[i + 1]), np.array([half[i]]))[0]) for i in range(half.size)]
    return float(min(1.0 - 1.0 / lv.size, (sum(up) + sum(down)) / lv.size))
