"""Time-domain equalizers on sampled pulse responses: TX/RX FFE, DFE (fixed and floating taps), and
the module (CMIS) output-driver FFE built from pre/post-cursor emphasis in dB.

Pulse responses here are "cursor matrices": ``P[..., n, j]`` = pulse value at UI ``n`` (row) and
sampling phase ``j`` (column, ``M`` phases per UI). An FFE is a sum of row-shifted copies (linear), a
DFE cancels post-cursor rows. Everything is vectorized over leading axes (EQ points, CTLE settings).
"""

from __future__ import annotations

import numpy as np

from eqtune.errors import EqRangeError


def ffe_main_tap(taps: np.ndarray) -> np.ndarray:
    """Main tap c(0) = 1 - sum |c(k != 0)| (IEEE 802.3 93A.1.6 normalization, sum |c| = 1).

    ``taps`` has the non-main taps on its last axis.
    """
    ret: np.ndarray = 1.0 - np.abs(np.asarray(taps, dtype=float)).sum(axis=-1)
    return ret


def check_ffe(taps: np.ndarray, c0_min: float, names: tuple[str, ...] = ()) -> None:
    """Raise EqRangeError when sum |c(k != 0)| > 1 - c0_min (so that c(0) >= c0_min, 93A.1.6)."""
    taps = np.atleast_2d(np.asarray(taps, dtype=float))
    c0 = ffe_main_tap(taps)
    bad = c0 < c0_min - 1e-9
    if np.any(bad):
        row = taps[int(np.argmax(bad))]
        desc = ", ".join(f"{n}={v:g}" for n, v in zip(names, row)) if names else str(row.tolist())
        raise EqRangeError(
            f"TX FFE taps {desc} give main tap c0={c0[bad][0]:.3f} < c0_min={c0_min:g} "
            f"(sum |taps| must be <= {1 - c0_min:g}): reduce the pre/post-cursor taps"
        )


def module_ffe_taps(pre_db: np.ndarray, post_db: np.ndarray) -> np.ndarray:
    """3-tap driver FFE [c(-1), c(0), c(1)] (sum |c| = 1, c(+-1) <= 0) for given emphasis in dB.

    Definitions (IEEE 802.3 72.7.1.11 / 136.9.3.1.2 pre- and post-cursor equalization ratios, with
    sum |c| = 1): R_pre = (c0 + c1 - c-1)/(c0 + c1 + c-1), R_post = (c0 + c-1 - c1)/(c0 + c-1 + c1),
    dB = 20 log10 R. With x = c(-1), y = c(1), c0 = 1 + x + y these read R_pre = (1+2y)/S,
    R_post = (1+2x)/S, S = 1 + 2x + 2y, hence S = 1/(R_pre + R_post - 1),
    x = (R_post S - 1)/2, y = (R_pre S - 1)/2.
    (CMIS 5.2 Table 8-49/8-50 names the codes only in dB; this is the mapping eqtune uses.)
    """
    r_pre = 10.0 ** (np.asarray(pre_db, dtype=float) / 20.0)
    r_post = 10.0 ** (np.asarray(post_db, dtype=float) / 20.0)
    s = 1.0 / (r_pre + r_post - 1.0)
    cm1 = (r_post * s - 1.0) / 2.0
    c1 = (r_pre * s - 1.0) / 2.0
    c0 = 1.0 + cm1 + c1
    return np.stack([cm1, c0, c1], axis=-1)


def apply_ffe_rows(p: np.ndarray, taps: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """FFE as shifted sums of cursor-matrix rows: out[..., n, j] = sum_k c_k p[..., n - d_k, j].

    ``p``: (..., N, M); ``taps``: (..., K) matching ``offsets`` (K,) in UI (negative = pre-cursor).
    Rows shifted in from outside the window are zero.
    """
    out = np.zeros(np.broadcast_shapes(p.shape, taps.shape[:-1] + (1, 1)), dtype=float)
    n = p.shape[-2]
    for k, d in enumerate(np.asarray(offsets, dtype=int)):
        c = taps[..., k, None, None]
        if d >= 0:
            out[..., d:, :] += c * p[..., : n - d, :]
        else:
            out[..., :d, :] += c * p[..., -d:, :]
    return out


def dfe_zero_forcing(h0: np.ndarray, post: np.ndarray, b_min: np.ndarray, b_max: np.ndarray) -> np.ndarray:
    """Zero-forcing DFE within tap limits (93A-26/93A-27; 802.3ck adds b_min, 120F.3.1.3).

    ``h0``: (...,) cursor; ``post``: (..., N_b) post-cursors h(1..N_b). Returns the residual
    h(k) - b(k) h0 with b(k) = clip(h(k)/h0, b_min(k), b_max(k)).
    """
    h0s = np.where(np.abs(h0) > 1e-15, h0, 1e-15)[..., None]
    b = np.clip(post / h0s, b_min, b_max)
    return post - b * h0s


def floating_dfe_residual(h0: np.ndarray, tail: np.ndarray, groups: int, taps_per_group: int,
                          b_max: float) -> np.ndarray:
    """Floating DFE tap groups (802.3ck 163A.3.1.? KR receiver: 3 groups of 3 taps within 40 UI).

    ``tail``: (..., T) post-cursors after the fixed taps (within the floating span). Greedily places
    ``groups`` non-overlapping windows of ``taps_per_group`` consecutive taps where sum |h| is largest
    (the COM ``floating tap`` rule: the groups sit where the reflections are), and zero-forces inside
    them with |b| <= b_max. Returns the residual tail.
    """
    t = tail.shape[-1]
    w = taps_per_group
    if t < w or groups <= 0:
        return tail
    resid = tail.copy()
    used = np.zeros(tail.shape, dtype=bool)
    h0s = np.where(np.abs(h0) > 1e-15, h0, 1e-15)[..., None]
    pos = np.arange(t)
    for _ in range(groups):
        a = np.abs(np.where(used, 0.0, tail))
        csum = np.concatenate([np.zeros(a.shape[:-1] + (1,)), np.cumsum(a, axis=-1)], axis=-1)
        win = csum[..., w:] - csum[..., :-w]  # sum over each window of w taps
        # forbid windows overlapping an already used tap
        u = np.concatenate([np.zeros(used.shape[:-1] + (1,)), np.cumsum(used, axis=-1)], axis=-1)
        win = np.where((u[..., w:] - u[..., :-w]) > 0, -1.0, win)
        start = np.argmax(win, axis=-1)
        sel = (pos >= start[..., None]) & (pos < start[..., None] + w)
        b = np.clip(tail / h0s, -b_max, b_max)
        resid = np.where(sel, tail - b * h0s, resid)
        used |= sel
    return resid
