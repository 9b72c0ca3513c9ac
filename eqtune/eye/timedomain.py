"""Bit-by-bit time-domain simulator: the independent check of the statistical eye.

A PRBS / PRBS-Q symbol sequence goes through the same sampled pulse response the statistical eye
uses (linear superposition of shifted pulses = convolution of the symbol sequence with the pulse,
done per sampling phase as an FFT convolution), with optional ideal DFE, Gaussian noise and jitter.
The received samples at every phase of one UI give, per transmitted level, an *empirical* distribution
of the sampled voltage; Gaussian noise is added to it analytically (convolution with the Gaussian
pdf) so a target BER of 1e-3 is read with little statistical scatter, and is also added by sampling
(seeded) to *count* symbol errors at the chosen sampling point and thresholds.

Nothing here shares code with the statistical eye: the ISI distribution comes from simulated symbol
sequences, not from convolving per-cursor distributions (IEEE 802.3 93A.1.7).

Patterns (bit sequences from Fibonacci LFSRs; ``a[n] = XOR_k a[n - t_k]`` for the generator
polynomial ``1 + sum_k x^t_k``):

* PRBS7  ``x^7 + x^6 + 1``            (the PRBS7 test pattern of IEEE 802.3 and OIF-CEI PHYs)
* PRBS9  ``x^9 + x^5 + 1``            (ITU-T O.150 clause 5.1)
* PRBS13 ``x^13 + x^12 + x^2 + x + 1`` (IEEE 802.3 Clause 94 PRBS13; the PRBS13 of 120.5.11.2.1)
* PRBS15 ``x^15 + x^14 + 1``          (ITU-T O.150 clause 5.3)
* PRBS31 ``x^31 + x^28 + 1``          (ITU-T O.150 clause 5.8; IEEE 802.3 Clause 49 test pattern)
* PRBS13Q / PRBS31Q (PAM4): the PRBS13 / PRBS31 bit stream taken in pairs {A, B} (A first) and
  Gray-coded {0,0}->0, {0,1}->1, {1,1}->2, {1,0}->3 (IEEE 802.3 120.5.7.1 Gray mapping; test patterns
  120.5.11.2.1 PRBS13Q and 120.5.11.2.2 PRBS31Q). PRBS13Q repeats every 8191 symbols (two bit periods).

O.150 inverts the PRBS15/PRBS31 output for some uses; inversion does not change any statistic here,
and the LFSR seed (all ones) differs from 802.3's per-lane seeds: the *sequences* are shifts/inversions
of the standard ones, with the same period and window statistics.

PAM6 has no standard PRBS mapping: eqtune takes 5 bits (0..31) -> one of the 32 pairs of PAM6 symbols
left when the 4 highest-energy corners of the 6 x 6 pair grid are dropped (eqtune's own mapping, in
the spirit of 2-D PAM6 proposals): outer levels then occur with probability 1/8, inner ones 3/16. Use
``pattern="random"`` for uniform PAM6 symbols (what a statistical eye assumes).

Levels (normalized to a peak of 1): NRZ {-1, +1}; PAM4 {-1, -R_LM/3, +R_LM/3, +1} (level mismatch
R_LM as defined in IEEE 802.3 120D.3.1.2, applied as COM does); PAM6 {-1, -3/5, -1/5, 1/5, 3/5, 1}
with the inner levels scaled by R_LM the same way.

Jitter (dual-Dirac ``A_DD`` + Gaussian ``sigma_RJ``, UI, per symbol ``delta_n = +-A_DD + N(0, sigma_RJ^2)``):

* ``jitter="tx"`` (default): transmitter jitter, as COM's sigma_RJ and A_DD are (IEEE 802.3 93A.1.6,
  Table 93A-1): every symbol's pulse is displaced by its own ``delta_k``; to first order the error is
  ``sum_k x_k delta_k h_J(k)`` with the slope h_J of 93A-28 (central difference over one sample, V/UI).
  Its variance is the 93A-32 one, (A_DD^2 + sigma_RJ^2) sigma_X^2 sum h_J^2.
* ``jitter="slope"``: receiver sampling jitter, first order: one ``delta_n`` per sampling instant,
  ``y(t + delta_n) ~ y(t) + delta_n dy/dt`` (same central difference). Same variance, but the error is
  correlated with the symbol being decided.
* ``jitter="sampling"``: receiver sampling jitter, exact: the waveform re-sampled at ``t + delta_n``
  (linear interpolation between samples).

BER convention: ``ber_target`` is the probability, *per transmitted level*, that a sample of that level
crosses into a given neighbour (the conditional tail probability at an eye edge). ``eye_height_v[i]`` is
then ``lower_edge(level i+1) - upper_edge(level i)``, both at that tail probability.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
from scipy.special import ndtr  # standard normal CDF Phi(x); Q(x) = ndtr(-x)

from eqtune.errors import InputError
from eqtune.jsonutil import finite_or_none

if TYPE_CHECKING:
    from eqtune.eye.engine import EyeEngine

# Generator polynomial exponents (t_k of 1 + sum x^t_k), see the module docstring for sources.
PRBS_TAPS: dict[int, tuple[int, ...]] = {
    7: (6, 7),
    9: (5, 9),
    11: (9, 11),  # ITU-T O.150 clause 5.2: x^11 + x^9 + 1
    13: (1, 2, 12, 13),
    15: (14, 15),
    23: (18, 23),  # ITU-T O.150 clause 5.6: x^23 + x^18 + 1
    31: (28, 31),
}

# IEEE 802.3 120.5.7.1: Gray coding of the bit pair {A, B} (A = first bit) -> PAM4 symbol 0..3.
_GRAY_PAM4 = np.array([0, 1, 3, 2], dtype=np.int8)  # index 2*A + B -> symbol

_POPCOUNT8 = np.array([bin(i).count("1") for i in range(8)], dtype=np.int64)

Modulation = Literal["NRZ", "PAM4", "PAM6"]
_N_LEVELS = {"NRZ": 2, "PAM4": 4, "PAM6": 6}


# --------------------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------------------


def prbs_bits(order: int, n_bits: int | None = None) -> np.ndarray:
    """PRBS bit sequence (uint8 0/1) of the given order; ``n_bits`` defaults to one period 2^order - 1.

    The recurrence ``a[n] = XOR_k a[n - t_k]`` is vectorized by repeated squaring over GF(2):
    ``g(x)^(2^s) = g(x^(2^s))``, so ``a[n] = XOR_k a[n - 2^s t_k]`` also holds, and a chunk of
    ``2^s * min(t_k)`` bits is computed per numpy step. Seed: the first ``order`` bits are ones.
    """
    if order not in PRBS_TAPS:
        raise InputError(f"PRBS{order} is not supported: use one of {sorted(PRBS_TAPS)}")
    period = (1 << order) - 1
    n = period if n_bits is None else int(n_bits)
    if n < 0:
        raise InputError(f"n_bits={n} is negative: give a positive number of bits")
    taps = PRBS_TAPS[order]
    s = 0
    while (1 << s) * min(taps) < 64 and (1 << s) < 1024:
        s += 1
    lags = [(1 << s) * t for t in taps]
    head = max(lags) + order
    out = np.zeros(max(n, head), dtype=np.uint8)
    # plain LFSR for the head (Python ints; a few hundred bits at most)
    a = [1] * order
    for i in range(order, head):
        v = 0
        for t in taps:
            v ^= a[i - t]
        a.append(v)
    out[:head] = a
    step = min(lags)
    i = head
    while i < n:
        j = min(i + step, n)
        acc = out[i - lags[0] : j - lags[0]].copy()
        for lag in lags[1:]:
            acc ^= out[i - lag : j - lag]
        out[i:j] = acc
        i = j
    return out[:n]


def prbs_q(order: int, n_symbols: int | None = None) -> np.ndarray:
    """PRBS13Q / PRBS31Q PAM4 symbol indices 0..3 (IEEE 802.3 120.5.11.2.1/2, Gray per 120.5.7.1).

    ``n_symbols`` defaults to one pattern period (2^order - 1 symbols = two bit periods).
    """
    if order not in (13, 31):
        raise InputError(f"PRBS{order}Q is not defined: IEEE 802.3 has PRBS13Q and PRBS31Q")
    n = (1 << order) - 1 if n_symbols is None else int(n_symbols)
    bits = prbs_bits(order, 2 * n)
    ret: np.ndarray = _GRAY_PAM4[2 * bits[0::2] + bits[1::2]]
    return ret


def pattern_symbols(pattern: str, modulation: Modulation, n_symbols: int | None = None,
                    *, seed: int = 0) -> np.ndarray:
    """Symbol indices 0..L-1 for ``pattern`` ("PRBS7".."PRBS31", "PRBS13Q", "PRBS31Q", "random")."""
    mod = _check_mod(modulation)
    L = _N_LEVELS[mod]
    p = pattern.upper()
    if p == "RANDOM":
        if n_symbols is None:
            raise InputError("pattern 'random' needs n_symbols")
        return np.random.default_rng(seed).integers(0, L, int(n_symbols)).astype(np.int8)
    if p.endswith("Q"):
        if mod != "PAM4":
            raise InputError(f"{pattern} is a PAM4 pattern: use a PRBSn pattern for {mod}")
        return prbs_q(_order(p[:-1], pattern), n_symbols)
    order = _order(p, pattern)
    if mod == "NRZ":
        return prbs_bits(order, n_symbols).astype(np.int8)
    if mod == "PAM4":  # 2 bits per symbol, Gray-coded (120.5.7.1)
        n = ((1 << order) - 1) if n_symbols is None else int(n_symbols)
        bits = prbs_bits(order, 2 * n)
        ret: np.ndarray = _GRAY_PAM4[2 * bits[0::2] + bits[1::2]]
        return ret
    # PAM6: 5 bits -> two symbols (eqtune's own mapping, see module docstring)
    n = ((1 << order) - 1) if n_symbols is None else int(n_symbols)
    n_groups = (n + 1) // 2
    bits = prbs_bits(order, 5 * n_groups).reshape(n_groups, 5)
    v = bits @ (1 << np.arange(4, -1, -1))
    pam6: np.ndarray = _PAM6_PAIRS[v].reshape(-1)[:n].astype(np.int8)
    return pam6


def _pam6_pairs() -> np.ndarray:
    """The 32 of the 36 PAM6 symbol pairs left after dropping the 4 highest-energy corners."""
    a, b = np.meshgrid(np.arange(6), np.arange(6), indexing="ij")
    pairs = np.stack([a.ravel(), b.ravel()], axis=1)
    corner = np.isin(pairs[:, 0], (0, 5)) & np.isin(pairs[:, 1], (0, 5))
    return pairs[~corner]


_PAM6_PAIRS = _pam6_pairs()


def _order(p: str, original: str) -> int:
    if not p.startswith("PRBS") or not p[4:].isdigit():
        raise InputError(f"unknown pattern {original!r}: use PRBS7/9/11/13/15/23/31, PRBS13Q, PRBS31Q or random")
    return int(p[4:])


def _check_mod(modulation: str) -> Modulation:
    m = str(modulation).upper()
    if m not in _N_LEVELS:
        raise InputError(f"modulation {modulation!r} is not supported: use NRZ, PAM4 or PAM6")
    return m  # type: ignore[return-value]


def pam_levels(modulation: Modulation, rlm: float = 1.0) -> np.ndarray:
    """Normalized symbol levels, bottom to top (see module docstring; R_LM as in IEEE 802.3 COM)."""
    mod = _check_mod(modulation)
    L = _N_LEVELS[mod]
    if not 0.0 < rlm <= 1.0:
        raise InputError(f"rlm={rlm:g} is outside (0, 1]: give the level-mismatch ratio R_LM")
    lv = (2.0 * np.arange(L) - (L - 1)) / (L - 1)
    inner = np.abs(lv) < 1.0
    lv[inner] *= rlm
    return lv


def gray_bits(symbols: np.ndarray, n_levels: int) -> np.ndarray:
    """Binary-reflected Gray code of each symbol index (adjacent levels differ by one bit)."""
    s = np.asarray(symbols, dtype=np.int64)
    return s ^ (s >> 1) if n_levels > 2 else s


# --------------------------------------------------------------------------------------------------
# Simulator
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeDomainResult:
    """Counted-BER eye of one simulation (voltages in V at the pulse's scale)."""

    modulation: str
    pattern: str
    n_symbols: int  # symbols used in the statistics (edges of the linear convolution removed)
    ber_target: float
    samples_per_ui: int
    eye_height_v: np.ndarray  # per eye, bottom to top, at ber_target and the best phase
    eye_height_min_v: float
    eye_width_ui: float  # span of phases with every eye open at ber_target
    best_phase: int  # sample offset from the pulse cursor (-M/2 .. M/2-1) with the largest min EH
    sample_phase_ui: float  # best_phase / M
    thresholds_v: np.ndarray  # decision thresholds used for counting (eye centres at best_phase)
    ser_counted: float  # symbol errors / symbols, Gaussian noise sampled (seeded)
    ber_counted: float  # bit errors (Gray-coded) / bits
    symbol_errors: int
    ser_analytic: float  # same decisions, Gaussian noise integrated analytically
    phases: np.ndarray = field(repr=False)  # sample offsets of eye_height_vs_phase rows
    eye_height_vs_phase_v: np.ndarray = field(repr=False)  # (M, n_eyes)
    upper_edge_v: np.ndarray = field(repr=False)  # (M, L) level upper edges at ber_target
    lower_edge_v: np.ndarray = field(repr=False)  # (M, L) level lower edges at ber_target

    @property
    def eye_height_mv(self) -> list[float]:
        return [1e3 * float(x) for x in self.eye_height_v]

    def to_dict(self) -> dict[str, object]:
        return {
            "modulation": self.modulation,
            "pattern": self.pattern,
            "n_symbols": self.n_symbols,
            "ber_target": self.ber_target,
            "eye_height_mv": [finite_or_none(1e3 * x) for x in self.eye_height_v],
            "eye_height_min_mv": finite_or_none(1e3 * self.eye_height_min_v),
            "eye_width_ui": finite_or_none(self.eye_width_ui),
            "sample_phase_ui": finite_or_none(self.sample_phase_ui),
            "ser_counted": finite_or_none(self.ser_counted),
            "ber_counted": finite_or_none(self.ber_counted),
            "symbol_errors": self.symbol_errors,
            "ser_analytic": finite_or_none(self.ser_analytic),
        }


def cursor_matrix(pulse_v: np.ndarray, samples_per_ui: int, cursor_index: int) -> tuple[np.ndarray, int]:
    """Pulse samples arranged as P[k, j] = p[cursor + (j - M//2) + (k - k0) * M] (zero outside).

    Row k0 is the cursor UI; rows above are pre-cursors, below post-cursors. Returns (P, k0).
    """
    p = np.asarray(pulse_v, dtype=float)
    M = int(samples_per_ui)
    c = int(cursor_index)
    off = np.arange(M) - M // 2
    k_pre = (c + M) // M + 1
    k_post = (len(p) - c + M) // M + 1
    k = np.arange(-k_pre, k_post + 1)
    idx = c + off[None, :] + k[:, None] * M
    valid = (idx >= 0) & (idx < len(p))
    P = np.where(valid, p[np.clip(idx, 0, len(p) - 1)], 0.0)
    # trim all-zero rows at both ends (keeps k0 consistent)
    nz = np.flatnonzero(np.any(P != 0.0, axis=1))
    k0 = k_pre
    if nz.size:
        P = P[nz[0] : nz[-1] + 1]
        k0 -= nz[0]
    return P, k0


def cursor_matrix_fixed(pulse_v: np.ndarray, samples_per_ui: int, cursor_index: int, n_rows: int,
                        k0: int) -> tuple[np.ndarray, int]:
    """Like ``cursor_matrix`` but with a given shape (``n_rows`` UIs, cursor row ``k0``), no trimming."""
    p = np.asarray(pulse_v, dtype=float)
    M = int(samples_per_ui)
    k = np.arange(n_rows) - k0
    idx = int(cursor_index) + (np.arange(M) - M // 2)[None, :] + k[:, None] * M
    valid = (idx >= 0) & (idx < len(p))
    return np.where(valid, p[np.clip(idx, 0, len(p) - 1)], 0.0), k0


def simulate(
    pulse_v: np.ndarray,
    samples_per_ui: int,
    *,
    cursor_index: int | None = None,
    modulation: Modulation = "PAM4",
    rlm: float = 1.0,
    pattern: str | None = None,
    n_symbols: int | None = None,
    dfe_taps_v: np.ndarray | None = None,
    sigma_noise_v: float = 0.0,
    a_dd_ui: float = 0.0,
    sigma_rj_ui: float = 0.0,
    jitter: Literal["tx", "slope", "sampling"] = "tx",
    ber_target: float = 1e-3,
    phase: int | None = None,
    n_bins: int = 4096,
    seed: int = 0,
) -> TimeDomainResult:
    """Bit-by-bit simulation of ``pulse_v`` (V, ``samples_per_ui`` samples per UI) -> counted-BER eye.

    ``pulse_v`` is the response to one isolated symbol of unit normalized amplitude (level +1 vs 0),
    so a symbol of level ``x`` contributes ``x * pulse_v``. ``cursor_index`` (default: the peak) is the
    sample the receiver's nominal phase points at; phases are scanned over one UI around it.
    ``dfe_taps_v[i]`` is subtracted as ``dfe_taps_v[i] * x[n - 1 - i]`` at every phase (ideal feedback of
    the transmitted = correctly decided symbols; no error propagation). ``sigma_noise_v`` is Gaussian
    noise referred to the sampler. ``phase`` forces the sampling offset (samples from the cursor)
    used for the reported EH, thresholds and counted errors; default: the best phase.
    """
    mod = _check_mod(modulation)
    L = _N_LEVELS[mod]
    M = int(samples_per_ui)
    if M < 2:
        raise InputError(f"samples_per_ui={M} is too small: give at least 2 samples per UI")
    p = np.asarray(pulse_v, dtype=float).ravel()
    if p.size < M or not np.all(np.isfinite(p)):
        raise InputError("pulse_v must be a finite array of at least one UI of samples")
    if not 0.0 < ber_target < 0.5:
        raise InputError(f"ber_target={ber_target:g} is outside (0, 0.5): give e.g. 1e-3")
    if sigma_noise_v < 0 or a_dd_ui < 0 or sigma_rj_ui < 0:
        raise InputError("noise and jitter amplitudes must be >= 0")
    if jitter not in ("tx", "slope", "sampling"):
        raise InputError(f"jitter={jitter!r}: use 'tx', 'slope' or 'sampling'")
    c = int(np.argmax(p)) if cursor_index is None else int(cursor_index)
    if not 0 <= c < p.size:
        raise InputError(f"cursor_index={c} is outside the pulse (0..{p.size - 1})")

    pat = pattern or ("PRBS31Q" if mod == "PAM4" else "PRBS31")
    P, k0 = cursor_matrix(p, M, c)
    K = P.shape[0]
    if n_symbols is None:
        n_symbols = max(1 << 16, 64 * K)
    n_tot = int(n_symbols) + K  # the first/last K-1 outputs lack full ISI: dropped below
    sym = pattern_symbols(pat, mod, n_tot, seed=seed).astype(np.int64)
    lv = pam_levels(mod, rlm)
    x = lv[sym]

    # y[n, j] = sum_k x[n - (k - k0)] P[k, j]: a linear convolution along the symbol axis, via FFT.
    # Convolution index m holds symbol n = m - k0; rows m = K-1 .. n_tot-1 have every cursor filled.
    nfft = 1 << int(np.ceil(np.log2(n_tot + K)))
    Y = np.fft.irfft(np.fft.rfft(x, nfft)[:, None] * np.fft.rfft(P, nfft, axis=0), nfft, axis=0)[:n_tot]
    lo, hi = K - 1, n_tot
    y = Y[lo:hi]
    s = sym[lo - k0 : hi - k0]
    n_used = y.shape[0]

    rng = np.random.default_rng(seed + 1)
    if (a_dd_ui > 0 or sigma_rj_ui > 0) and jitter == "tx":
        # transmitter jitter: symbol k's pulse is displaced by its own delta_k, so (first order)
        # e[n, j] = sum_k x[n-k] delta[n-k] h_J(k, j), a convolution of x * delta with the pulse slope
        # h_J = (h(t + T/M) - h(t - T/M)) M / 2 (V/UI, IEEE 802.3 93A-28).
        dl = a_dd_ui * np.where(rng.random(n_tot) < 0.5, -1.0, 1.0) + sigma_rj_ui * rng.standard_normal(n_tot)
        pj = np.zeros_like(p)
        pj[1:-1] = (p[2:] - p[:-2]) * (M / 2.0)
        PJ, _ = cursor_matrix_fixed(pj, M, c, K, k0)
        E = np.fft.irfft(np.fft.rfft(x * dl, nfft)[:, None] * np.fft.rfft(PJ, nfft, axis=0), nfft, axis=0)
        y = y + E[lo:hi]
    elif a_dd_ui > 0 or sigma_rj_ui > 0:
        # receiver sampling jitter: one delta_n per decision, on the continuous received waveform
        # w[m*M + j] = Y[m, j] (the phases tile one UI contiguously)
        delta = a_dd_ui * np.where(rng.random(n_used) < 0.5, -1.0, 1.0) + sigma_rj_ui * rng.standard_normal(n_used)
        w = Y.reshape(-1)
        t0 = (lo + np.arange(n_used))[:, None] * M + np.arange(M)[None, :]
        if jitter == "slope":
            # slope per UI by a central difference over one sample (the h_J of IEEE 802.3 93A-28)
            slope_per_ui = (w[np.minimum(t0 + 1, w.size - 1)] - w[np.maximum(t0 - 1, 0)]) * (M / 2.0)
            y = y + delta[:, None] * slope_per_ui
        else:
            tf = t0 + delta[:, None] * M
            i0 = np.clip(np.floor(tf).astype(np.int64), 0, w.size - 2)
            fr = tf - i0
            y = (1.0 - fr) * w[i0] + fr * w[i0 + 1]

    # DFE, ideal feedback of the transmitted (= correctly decided) symbols: y[n] -= sum_i b_i x[n-1-i].
    # Subtracted after the jitter: the fed-back value is held over the UI, it is not jittered.
    if dfe_taps_v is not None:
        bt = np.asarray(dfe_taps_v, dtype=float).ravel()
        if bt.size:
            fb = np.convolve(x, np.concatenate([[0.0], bt]))[: n_tot]  # fb[n] = sum_i b_i x[n-1-i]
            y = y - fb[lo - k0 : hi - k0, None]

    phases = np.arange(M) - M // 2
    upper, lower = _level_edges(y, s, L, sigma_noise_v, ber_target, n_bins)  # (M, L) each
    eh = lower[:, 1:] - upper[:, :-1]  # (M, L-1)
    eh_min = eh.min(axis=1)
    if phase is None:
        # the largest minimum EH; among (numerically) equal ones, the phase nearest the cursor
        tie = eh_min >= eh_min.max() - 1e-9 * max(1.0, float(np.abs(eh_min).max()))
        j_best = int(np.flatnonzero(tie)[np.argmin(np.abs(phases[tie]))])
    else:
        j_best = int(phase) + M // 2
        if not 0 <= j_best < M:
            raise InputError(f"phase={phase} is outside one UI ({-(M // 2)}..{M - 1 - M // 2} samples)")
    ew = _eye_width(eh_min, j_best) / M

    thr = 0.5 * (lower[j_best, 1:] + upper[j_best, :-1])
    ys = y[:, j_best]
    noisy = ys + sigma_noise_v * rng.standard_normal(n_used) if sigma_noise_v > 0 else ys
    dec = np.searchsorted(thr, noisy)  # level index decided
    errs = dec != s
    n_err = int(errs.sum())
    bits_per_sym = max(1.0, np.log2(L))
    bit_err = int(_POPCOUNT8[gray_bits(dec, L) ^ gray_bits(s, L)].sum())
    # analytic: P(error | y) = P(y + n < thr_below) + P(y + n > thr_above)
    if sigma_noise_v > 0:
        lo_t = np.concatenate([[-np.inf], thr])[s]
        hi_t = np.concatenate([thr, [np.inf]])[s]
        pe = ndtr((lo_t - ys) / sigma_noise_v) + ndtr((ys - hi_t) / sigma_noise_v)
        ser_an = float(pe.mean())
    else:
        ser_an = float(errs.mean())

    return TimeDomainResult(
        modulation=mod,
        pattern=pat.upper(),
        n_symbols=n_used,
        ber_target=float(ber_target),
        samples_per_ui=M,
        eye_height_v=eh[j_best].copy(),
        eye_height_min_v=float(eh_min[j_best]),
        eye_width_ui=float(ew),
        best_phase=int(phases[j_best]),
        sample_phase_ui=float(phases[j_best] / M),
        thresholds_v=thr,
        ser_counted=n_err / n_used,
        ber_counted=bit_err / (n_used * bits_per_sym),
        symbol_errors=n_err,
        ser_analytic=ser_an,
        phases=phases,
        eye_height_vs_phase_v=eh,
        upper_edge_v=upper,
        lower_edge_v=lower,
    )


def _level_edges(y: np.ndarray, s: np.ndarray, L: int, sigma: float, p: float,
                 n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Per phase and level: the voltages where the upper / lower tail probability equals ``p``.

    The samples of each (phase, level) are histogrammed on a common grid and, for sigma > 0, convolved
    with the Gaussian noise pmf (the pmf of a sum of independent variables is the convolution of theirs);
    the tails are read off the cumulative sums and interpolated between bins.
    """
    M = y.shape[1]
    if sigma == 0.0:
        # no noise: the empirical quantiles themselves (exact order statistics, no binning)
        upper = np.empty((M, L))
        lower = np.empty((M, L))
        for lev in range(L):
            yg = y[s == lev]
            if yg.shape[0] == 0:
                upper[:, lev] = -np.inf
                lower[:, lev] = np.inf
                continue
            upper[:, lev] = np.quantile(yg, 1.0 - p, axis=0, method="inverted_cdf")
            lower[:, lev] = np.quantile(yg, p, axis=0, method="inverted_cdf")
        return upper, lower
    pad = 6.0 * sigma
    vmin, vmax = float(y.min()) - pad, float(y.max()) + pad
    if vmax - vmin <= 0:
        vmax = vmin + 1e-12
    dv = (vmax - vmin) / (n_bins - 1)
    grid = vmin + dv * np.arange(n_bins)
    # linear ("cloud-in-cell") binning: each sample split between its two neighbouring grid points,
    # so the histogram's mean is exact and quantization of the edges is second order in dv
    u = np.clip((y - vmin) / dv, 0.0, n_bins - 1.000001)
    b = np.floor(u).astype(np.int64)  # (N, M)
    f = u - b
    key = (np.arange(M)[None, :] * L + s[:, None]) * n_bins + b
    size = M * L * n_bins
    hist = (np.bincount(key.ravel(), weights=(1.0 - f).ravel(), minlength=size)
            + np.bincount(key.ravel() + 1, weights=f.ravel(), minlength=size + 1)[:size])
    hist = hist.reshape(M, L, n_bins)
    counts = hist.sum(axis=2, keepdims=True)
    pmf = hist / np.maximum(counts, 1.0)
    if sigma > 0:
        half = int(np.ceil(pad / dv))
        edges = (np.arange(-half, half + 2) - 0.5) * dv
        g = np.diff(ndtr(edges / sigma))  # Gaussian pmf on the grid (bin-integrated)
        nfft = 1 << int(np.ceil(np.log2(n_bins + g.size)))
        conv = np.fft.irfft(np.fft.rfft(pmf, nfft, axis=2) * np.fft.rfft(g, nfft), nfft, axis=2)
        pmf = np.clip(conv[:, :, half : half + n_bins], 0.0, None)
    # upper tail: P(V > v) decreasing; lower tail: P(V < v) increasing
    cdf = np.cumsum(pmf, axis=2)
    tot = cdf[:, :, -1:]
    upper_tail = tot - cdf  # P(V > grid[i]) (bin i counted as <=)
    lower_tail = cdf - pmf  # P(V < grid[i])
    upper = _first_crossing(grid, upper_tail, p, descending=True)
    lower = _first_crossing(grid, lower_tail, p, descending=False)
    return upper, lower


def _first_crossing(grid: np.ndarray, tail: np.ndarray, p: float, *, descending: bool) -> np.ndarray:
    """Voltage where ``tail`` (M, L, n) crosses ``p``, linearly interpolated; vectorized."""
    n = grid.size
    if descending:  # first index where tail <= p
        idx = np.argmax(tail <= p, axis=2)
        i1 = np.clip(idx, 1, n - 1)
        i0 = i1 - 1
    else:  # last index where tail <= p
        idx = n - 1 - np.argmax(tail[:, :, ::-1] <= p, axis=2)
        i0 = np.clip(idx, 0, n - 2)
        i1 = i0 + 1
    t0 = np.take_along_axis(tail, i0[..., None], axis=2)[..., 0]
    t1 = np.take_along_axis(tail, i1[..., None], axis=2)[..., 0]
    den = t1 - t0
    with np.errstate(invalid="ignore", divide="ignore"):
        # den == 0: both ends already beyond p (a zero-noise delta at the grid end): take the outer one
        fr = np.where(np.abs(den) > 0, (p - t0) / den, 0.0 if descending else 1.0)
    fr = np.clip(fr, 0.0, 1.0)
    ret: np.ndarray = grid[i0] + fr * (grid[i1] - grid[i0])
    return ret


def _eye_width(eh_min: np.ndarray, j: int) -> float:
    """Width (samples) of the contiguous open region around phase ``j``, with linear edge crossings."""
    M = eh_min.size
    if eh_min[j] <= 0:
        return 0.0
    left = j
    while left > 0 and eh_min[left - 1] > 0:
        left -= 1
    right = j
    while right < M - 1 and eh_min[right + 1] > 0:
        right += 1
    w = float(right - left)
    if left > 0:
        a, b = eh_min[left - 1], eh_min[left]
        w += b / (b - a)
    else:
        w += 0.5
    if right < M - 1:
        a, b = eh_min[right], eh_min[right + 1]
        w += a / (a - b)
    else:
        w += 0.5
    return min(w, float(M))


def simulate_point(engine: EyeEngine, point: dict[str, float] | None = None, *, ber_target: float = 1e-3,
                   jitter: Literal["tx", "slope", "sampling"] = "tx", n_symbols: int = 1 << 17,
                   pattern: str | None = None, seed: int = 0) -> TimeDomainResult:
    """The simulator on an ``EyeEngine``'s own inputs for ``point`` (public engine API only).

    Uses ``engine.pulse_response(point)`` (equalized pulse, sampling instant), the DFE feedback the engine
    adapted there (``engine.point_detail(point).fixed``: the fixed taps and, with a KR-style receiver, the
    floating tap groups it placed, in volts, held for every symbol), and ``engine.noise_sigma_v(point)``:
    Gaussian noise sqrt(sigma_tx^2 + sigma_rx^2) (93A-30, 93A-35), jitter applied here from sigma_RJ and
    A_DD in UI. Crosstalk is not simulated (no aggressor sources). EH is read at the engine's phase.
    """
    r = engine.evaluate(point, ber=ber_target)
    pr = engine.pulse_response(point)
    nb = engine.noise_sigma_v(point)
    lv = np.asarray(nb.levels, dtype=float)
    n = lv.size
    rlm = float(lv[-2] * (n - 1) / (n - 3)) if n > 2 else 1.0  # inner level = R_LM (n-3)/(n-1)
    mod: Modulation = {2: "NRZ", 4: "PAM4", 6: "PAM6"}[n]  # type: ignore[assignment]  # literal values
    h0 = r.cursor_mv / 1e3
    fixed = engine.point_detail(point, ber=ber_target).fixed  # fixed + floating feedback (V), as adapted
    taps_v = np.asarray(fixed, dtype=float) if fixed is not None else np.asarray(r.dfe_taps, dtype=float) * h0
    return simulate(pr.pulse_v, pr.samples_per_ui, cursor_index=pr.cursor_index, modulation=mod, rlm=rlm,
                    pattern=pattern, n_symbols=n_symbols, dfe_taps_v=taps_v,
                    sigma_noise_v=float(np.hypot(nb.sigma_tx_v, nb.sigma_rx_v)), a_dd_ui=nb.a_dd_ui,
                    sigma_rj_ui=nb.sigma_rj_ui, jitter=jitter, ber_target=ber_target, phase=0, seed=seed)
