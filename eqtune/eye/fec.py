"""FEC-aware margin: DFE error bursts -> RS(544,514) "KP4" codeword (frame) error ratio.

A PAM4 receiver with a decision-feedback equalizer (DFE) feeds its own decisions back: one wrong
decision leaves a residual of ``2 b_k e`` (half level spacings) on the next symbols, which raises
their error probability, so errors come in bursts. The Reed-Solomon code of IEEE 802.3 clause 91
(RS(544,514), m = 10-bit symbols, t = 15 correctable symbols per codeword: 91.5.2.1; reused by the
200G/400G PCS of clause 119, 119.2.4.6, and by 802.3ck 100G/lane PHYs) corrects a codeword with at
most 15 wrong 10-bit symbols; a burst of a few PAM4 symbols hits one or two RS symbols, so bursts
cost far less than independent errors per bit but far more than independent errors per symbol.

The analysis (following the Markov-chain treatment of DFE error propagation: Duttweiler, Mazo and
Messerschmitt, "An upper bound on the error probability in decision-feedback equalization", IEEE
Trans. Inf. Theory 20(4), 1974; Altekar and Beaulieu, "Upper bounds to the error probability of
decision feedback equalization", IEEE Trans. Inf. Theory 39(1), 1993; applied to PAM4 + KP4 in the
802.3bj/bs/cd contributions on burst errors and precoding, e.g. Anslow/Healey "DFE error
propagation and FEC interleaving", 802.3bs 2015, and the 1/(1+D) mod 4 precoder of 802.3cd clause
135.5.7.2 / 802.3ck 120.5.7.2):

* The slicer sees PAM4 levels {-3, -1, 1, 3} (half-spacing units) plus Gaussian noise ``sigma``
  plus the DFE residual ``-2 sum_k b_k e_{n-k}`` of the previous decision errors ``e`` (in level
  indices, -2..2; a 3-level error, ~3 sigma rarer still, is counted as a 2-level one) on the first
  ``n_taps`` DFE taps ``b_k`` (normalized to the cursor). The data are i.i.d. uniform, so the last
  ``n_taps`` errors form a Markov chain (5**n_taps states).
  ``sigma`` is the Gaussian equivalent of the eye engine's symbol error ratio with correct
  feedback: SER = 1.5 Q(1 / sigma) (3 thresholds over 4 levels; Proakis, Digital Communications,
  5th ed., eq. 4.3-5 for M = 4).
* Precoding 1/(1+D) mod 4 (802.3cd 135.5.7.2): the decoder output error is (e_n + e_{n-1}) mod 4,
  so an alternating-sign DFE burst of any length costs only its first and last symbol.
* RS symbols are 10 bits = 5 PAM4 symbols; a codeword is 544 RS symbols. With ``interleave`` = I
  codewords symbol-interleaved on the lane (clause 119 interleaves two codewords 10 bits at a time),
  the codeword sees every I-th RS symbol. The per-codeword count of wrong RS symbols is computed
  exactly for the chain by dynamic programming over the codeword (counts saturated at t + 1);
  the codeword error ratio is P(count > t). Not modelled: bit-multiplexing of several PCS lanes
  onto one physical lane (it spreads a burst over more codewords, so the non-interleaved figure is
  the pessimistic one), DFE taps beyond ``n_taps`` (their residual is ignored), non-Gaussian ISI.

``fec_frame_error_ratio`` reported by ``eye --json`` is this codeword error ratio: an uncorrectable
codeword marks its frames bad (91.5.3.3), so it bounds the frame loss ratio from above for frames
shorter than a codeword (5440 bits).
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from eqtune.jsonutil import JsonValue, to_json_dict

if TYPE_CHECKING:
    from eqtune.eye.ffe_eye import FfeEye
    from eqtune.eye.result import EyeResult

RS_N = 544  # 802.3 91.5.2.1: RS(544,514) over GF(2^10)
RS_K = 514
RS_T = 15  # (n - k) / 2 correctable symbols per codeword
RS_SYMBOL_BITS = 10
PAM4_BITS = 2
PAM4_PER_RS_SYMBOL = RS_SYMBOL_BITS // PAM4_BITS  # 5 PAM4 symbols per RS symbol (no bit-mux)
PAM4_LEVELS = np.array([-3.0, -1.0, 1.0, 3.0])  # half-spacing units
PAM4_THRESHOLDS = np.array([-np.inf, -2.0, 0.0, 2.0, np.inf])
ERRORS = np.arange(-2, 3)  # decision error in level index; the rare 3-level errors are counted as 2-level


@dataclass(frozen=True)
class FecResult:
    """FEC-aware figures of one link.

    ``codeword_error_ratio``: probability that a RS(544,514) codeword has more than 15 wrong 10-bit
    symbols (uncorrectable); ``ser_slicer``: PAM4 symbol error ratio at the slicer including error
    propagation; ``ser_no_propagation``: the same with correct feedback (the eye engine's figure);
    ``rs_symbol_error_ratio``: probability a 10-bit RS symbol is wrong after precoding decode;
    ``burst_start`` probability a slicer error follows a correct decision, ``mean_burst_symbols``
    mean run length of consecutive slicer errors; ``sigma`` Gaussian-equivalent noise (half level
    spacings); ``taps`` the DFE taps used (normalized to the cursor)."""

    codeword_error_ratio: float
    ser_slicer: float
    ser_no_propagation: float
    rs_symbol_error_ratio: float
    burst_start: float
    mean_burst_symbols: float
    sigma: float
    taps: tuple[float, ...]
    precoding: bool
    interleave: int

    def to_dict(self) -> dict[str, JsonValue]:
        d = asdict(self)
        d["taps"] = list(self.taps)
        return to_json_dict(d)


def _q(x: np.ndarray | float) -> np.ndarray:
    """Gaussian tail Q(x) = 0.5 erfc(x / sqrt 2)."""
    from scipy.special import ndtr

    ret: np.ndarray = ndtr(-np.asarray(x, dtype=float))
    return ret


def sigma_for_ser(ser: float) -> float:
    """Gaussian noise (half level spacings) giving PAM4 symbol error ratio ``ser`` with correct
    feedback: SER = 1.5 Q(1/sigma) (Proakis 4.3-5, M = 4). ``ser`` in (0, 0.75)."""
    from scipy.special import ndtri

    if not 0.0 < ser < 0.75:
        raise ValueError(f"SER {ser!r} outside (0, 0.75)")
    return float(1.0 / -ndtri(ser / 1.5))


def _interval(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P(a < Z < b) for a standard normal Z, without cancellation: from the nearer tail
    (Q(a) - Q(b) above 0, Phi(b) - Phi(a) below), so an interval far in a tail keeps its tiny
    probability instead of the difference of two numbers near 1."""
    from scipy.special import ndtr

    a, b = np.asarray(a, float), np.asarray(b, float)
    ret: np.ndarray = np.where(a > 0, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))
    return ret


def _error_given_shift(shift: float, sigma: float) -> np.ndarray:
    """P(e) for e in -3..3, averaged over the 4 equiprobable levels, for a slicer input offset
    ``shift`` (half spacings) plus Gaussian noise ``sigma``."""
    p = np.zeros(len(ERRORS))
    emax = int(ERRORS[-1])
    for d, level in enumerate(PAM4_LEVELS):
        edges = (PAM4_THRESHOLDS - level - shift) / sigma
        probs = _interval(edges[:-1], edges[1:])
        for j in range(4):
            e = max(-emax, min(emax, j - d))
            p[e + emax] += 0.25 * probs[j]
    return p


@dataclass(frozen=True)
class ErrorChain:
    """Markov chain of the last ``n`` slicer errors. ``states[i]`` = (e_{n-1}, ..., e_{n-N});
    ``t_err[i, j]`` / ``t_ok[i, j]``: probability of moving from i to j with a wrong / correct
    *decoded* symbol (after the 1/(1+D) decoder when precoding); ``slicer_err[j]``: state j's newest
    slicer error is nonzero."""

    states: list[tuple[int, ...]]
    t_err: np.ndarray
    t_ok: np.ndarray
    slicer_err: np.ndarray


def error_chain(taps: list[float] | tuple[float, ...], sigma: float, *, precoding: bool = False,
                n_taps: int = 3) -> ErrorChain:
    """Build the DFE error-propagation chain on the first ``n_taps`` taps (at least 1 state of
    memory: precoding needs the previous error)."""
    b = [float(x) for x in list(taps)[:n_taps]]
    n = max(1, len(b))
    b = b + [0.0] * (n - len(b))
    states = list(product(ERRORS.tolist(), repeat=n))
    index = {s: i for i, s in enumerate(states)}
    size = len(states)
    t_err = np.zeros((size, size))
    t_ok = np.zeros((size, size))
    for i, s in enumerate(states):
        shift = -2.0 * sum(bk * ek for bk, ek in zip(b, s))
        p = _error_given_shift(shift, sigma)
        for e, pe in zip(ERRORS.tolist(), p):
            j = index[(e, *s[:-1])]
            wrong = ((e + s[0]) % 4 != 0) if precoding else (e != 0)
            (t_err if wrong else t_ok)[i, j] += pe
    slicer_err = np.array([s[0] != 0 for s in states])
    return ErrorChain(states, t_err, t_ok, slicer_err)


def stationary(t: np.ndarray) -> np.ndarray:
    """Stationary distribution of the row-stochastic matrix ``t`` by the GTH algorithm (Grassmann,
    Taksar & Heyman, "Regenerative analysis and steady state distributions for Markov chains",
    Operations Research 33(5), 1985): state reduction using only additions, multiplications and
    divisions of non-negative numbers, so a state of probability 1e-200 keeps its relative accuracy
    (a least-squares or eigenvector solve leaves an absolute floor of ~1e-16 under it)."""
    t = np.asarray(t, dtype=float)
    n = t.shape[0]
    # the most persistent state (here: no recent error) first, so every pi[k] / pi[0] stays <= ~1
    first = int(np.argmax(np.diag(t)))
    order = np.array([first, *[i for i in range(n) if i != first]])
    a = t[np.ix_(order, order)].copy()
    for k in range(n - 1, 0, -1):
        s = a[k, :k].sum()
        if s <= 0.0:  # state k is reached only from itself: nothing to fold
            continue
        a[:k, :k] += np.outer(a[:k, k] / s, a[k, :k])
        a[:k, k] /= s
    pi = np.zeros(n)
    pi[0] = 1.0
    for k in range(1, n):
        pi[k] = pi[:k] @ a[:k, k]
    ret = np.empty(n)
    ret[order] = pi / pi.sum()
    return ret


def rs_symbol_matrices(chain: ErrorChain, m: int = PAM4_PER_RS_SYMBOL) -> tuple[np.ndarray, np.ndarray]:
    """(a_ok, a_bad) over one RS symbol of ``m`` PAM4 symbols: a_ok = T_ok^m (no decoded error),
    a_bad = the paths with at least one, built forward (bad' = bad T + ok T_err) instead of as
    (T_ok + T_err)^m - T_ok^m, which cancels to nothing at small error ratios."""
    full = chain.t_ok + chain.t_err
    ok = np.eye(len(chain.states))
    bad = np.zeros_like(ok)
    for _ in range(m):
        bad = bad @ full + ok @ chain.t_err
        ok = ok @ chain.t_ok
    return ok, bad


def codeword_error_distribution(chain: ErrorChain, *, n: int = RS_N, t: int = RS_T,
                                symbols_per_rs: int = PAM4_PER_RS_SYMBOL, interleave: int = 1) -> np.ndarray:
    """P(k wrong RS symbols in one codeword) for k = 0..t, and P(> t) as the last entry.

    Exact for the chain: per RS symbol, ``a_ok`` = T_ok^m (no decoded error in its m PAM4 symbols)
    and ``a_bad`` the paths with at least one (:func:`rs_symbol_matrices`); every term is a sum of
    non-negative products, and P(> t) is the saturated count itself, never 1 - P(<= t); the codeword's symbols are every
    ``interleave``-th RS symbol on the lane, the others only advance the chain."""
    full = chain.t_ok + chain.t_err
    a_ok, a_bad = rs_symbol_matrices(chain, symbols_per_rs)
    a_all = a_ok + a_bad
    a_both = np.hstack([a_ok, a_bad])  # one product gives the no-error and error parts
    a_skip = np.linalg.matrix_power(a_all, max(interleave - 1, 0))
    size = len(chain.states)
    v = np.zeros((t + 2, size))
    v[0] = stationary(full)
    for k in range(n):
        rows = min(k + 1, t + 2)  # counts above k are still zero
        prod = v[:rows] @ a_both
        nv = np.zeros_like(v)
        nv[:rows] = prod[:, :size]
        bad = prod[:, size:]
        top = min(rows, t + 1)
        nv[1:top + 1] += bad[:top]
        if rows == t + 2:
            nv[-1] += bad[-1]  # saturate at t + 1
        v = nv @ a_skip if interleave > 1 else nv
    ret: np.ndarray = v.sum(axis=1)
    return ret


def _one_blas_thread() -> AbstractContextManager[object]:
    """threadpoolctl's limit to one BLAS thread (a no-op context when it is not installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn brings it
        from contextlib import nullcontext

        return nullcontext()
    limits: AbstractContextManager[object] = threadpool_limits(1)
    return limits


def fec_analysis(taps: list[float] | tuple[float, ...], ser: float, *, precoding: bool = False,
                 n_taps: int = 3, interleave: int = 1) -> FecResult:
    """FEC figures for DFE ``taps`` (normalized to the cursor; empty = no DFE) and the symbol error
    ratio ``ser`` with correct feedback (the eye engine's ``ber_estimate``)."""
    # hundreds of small matrix products: extra BLAS threads only contend (10x slower on a busy machine)
    with _one_blas_thread():
        return _fec_analysis(taps, ser, precoding=precoding, n_taps=n_taps, interleave=interleave)


def _fec_analysis(taps: list[float] | tuple[float, ...], ser: float, *, precoding: bool,
                  n_taps: int, interleave: int) -> FecResult:
    if interleave < 1:
        raise ValueError("interleave must be >= 1")
    ser = float(ser)
    if ser <= 0.0 or not math.isfinite(ser):
        return FecResult(0.0, 0.0, max(ser, 0.0), 0.0, 0.0, 0.0, 0.0, tuple(float(x) for x in taps),
                         precoding, interleave)
    ser = min(ser, 0.74)
    sigma = sigma_for_ser(ser)
    chain = error_chain(taps, sigma, precoding=precoding, n_taps=n_taps)
    full = chain.t_ok + chain.t_err
    pi = stationary(full)
    ser_slicer = float(pi[chain.slicer_err].sum())
    # burst start: previous slicer decision right, this one wrong
    p_start = float(sum(pi[i] * full[i, j] for i in np.flatnonzero(~chain.slicer_err)
                        for j in np.flatnonzero(chain.slicer_err)))
    _a_ok, a_bad = rs_symbol_matrices(chain)
    rs_ser = float(pi @ a_bad.sum(axis=1))
    dist = codeword_error_distribution(chain, interleave=interleave)
    return FecResult(
        codeword_error_ratio=float(min(max(dist[-1], 0.0), 1.0)),
        ser_slicer=ser_slicer,
        ser_no_propagation=ser,
        rs_symbol_error_ratio=rs_ser,
        burst_start=p_start,
        mean_burst_symbols=ser_slicer / p_start if p_start > 0 else 0.0,
        sigma=sigma,
        taps=tuple(float(x) for x in list(taps)[:n_taps]),
        precoding=precoding,
        interleave=interleave,
    )


def fec_from_eye(result: EyeResult, *, precoding: bool = False, n_taps: int = 3,
                 interleave: int | None = None) -> FecResult:
    """:func:`fec_analysis` of an :class:`~eqtune.eye.result.EyeResult` (its ``dfe_taps`` and
    ``ber_estimate``; a closed eye gives codeword error ratio 1). ``interleave`` None: the lane's default
    (:func:`lane_interleave` of the result's baud: 4 codewords at 200G per lane, 1 below)."""
    if interleave is None:
        interleave = lane_interleave(float(result.baud_gbd))[0]
    if getattr(result, "closed", False) and float(result.ber_estimate) >= 0.5:
        return FecResult(1.0, float(result.ber_estimate), float(result.ber_estimate), 1.0, 0.0, 0.0,
                         math.inf, tuple(result.dfe_taps[:n_taps]), precoding, interleave)
    return fec_analysis(list(result.dfe_taps or []), float(result.ber_estimate), precoding=precoding,
                        n_taps=n_taps, interleave=interleave)


def fec_from_ffe_eye(fe: FfeEye, *, precoding: bool = False, interleave: int = 1) -> FecResult:
    """:func:`fec_analysis` of the DSP receiver's eye (:func:`eqtune.eye.ffe_eye.ffe_eye`): its SER with
    ideal feedback and its DFE taps (the MMSE solution's, in units of the cursor). Only the DFE's error
    propagation makes bursts here: the FFE is linear (no feedback) and MLSE is not modelled."""
    return fec_analysis(list(fe.dfe_taps), float(fe.ser_estimate), precoding=precoding, interleave=interleave)


#: RS(544,514) codewords 10-bit-symbol interleaved (round robin) on one physical lane, per host electrical
#: interface, and the source of each figure. The P802.3dj PMA clause that maps the PCS's codewords onto
#: 200 Gb/s lanes is not publicly readable here; these are the public statements found:
#: * 200GAUI-1, 400GAUI-2 (and the 100G/lane 200GAUI-2, 400GAUI-4): the 200GBASE-R / 400GBASE-R PCS forms
#:   two codewords, distributed 10 bits at a time (IEEE 802.3 119.2.4.6; Ethernet Alliance, "A deep dive
#:   into the 802.3bs 200GBASE-R and 400GBASE-R PCS/PMA", 2018), kept on every lane by symbol multiplexing;
#:   SONiC's FEC FLR table (sonic-swss orchagent/port_flr.lua ``interleaving_map``) gives 2 for 200G/400G;
#: * 1.6TAUI-8: 4, SONiC's ``interleaving_map['1600000_8'] = 4`` and its FEC FLR HLD 4.4 ("symbols from 4
#:   different FEC codewords are transmitted in a round-robin fashion over the physical medium");
#: * 800GAUI-4: 4, the 800GBASE-R PCS's four codewords (two 400G flows of two, IEEE 802.3df), as SONiC's
#:   800G entry (``'800000_8'] = 4``); that all four reach each of the four 200G lanes is assumed, not read;
#: * 100GAUI-1: 1 (one clause 91 codeword stream).
#: A burst on the lane then hits every interleave-th RS symbol of one codeword (``codeword_error_distribution``).
LANE_INTERLEAVE: dict[str, tuple[int, str]] = {
    "100GAUI-1": (1, "IEEE 802.3 clause 91: one RS(544,514) codeword stream"),
    "200GAUI-2": (2, "IEEE 802.3 119.2.4.6 (two codewords, 10-bit round robin); SONiC port_flr.lua 200000_2"),
    "400GAUI-4": (2, "IEEE 802.3 119.2.4.6; SONiC port_flr.lua 400000_4"),
    "200GAUI-1": (2, "IEEE 802.3 119.2.4.6 (two codewords), symbol-multiplexed onto one lane"),
    "400GAUI-2": (2, "IEEE 802.3 119.2.4.6 (two codewords), symbol-multiplexed onto two lanes"),
    "800GAUI-4": (4, "802.3df 800GBASE-R PCS: four codewords; SONiC port_flr.lua 800000_8 (assumed for 4 lanes)"),
    "1.6TAUI-8": (4, "SONiC port_flr.lua interleaving_map['1600000_8'] = 4; SONiC FEC FLR HLD 4.4"),
}
DEFAULT_200G_INTERFACE = "1.6TAUI-8"  # the 1.6T module eqtune's demo tunes
DEFAULT_100G_INTERFACE = "100GAUI-1"  # the figure eqtune's 100G reports have always given (no interleaving)


def lane_interleave(baud_gbd: float, interface: str | None = None) -> tuple[int, str]:
    """(codewords interleaved per lane, host interface) for a lane of ``baud_gbd`` (:data:`LANE_INTERLEAVE`);
    ``interface`` overrides the default (1.6TAUI-8 at 200 Gb/s per lane, i.e. above 80 GBd; 100GAUI-1 below)."""
    name = interface or (DEFAULT_200G_INTERFACE if baud_gbd > 80.0 else DEFAULT_100G_INTERFACE)
    if name not in LANE_INTERLEAVE:
        from eqtune.errors import InputError

        raise InputError(f"host interface {name!r} is unknown: use one of {', '.join(LANE_INTERLEAVE)}")
    return LANE_INTERLEAVE[name][0], name


def frame_loss_ratio(codeword_error_ratio: float, interleave: int) -> float:
    """FLR of short frames spread over ``interleave`` interleaved codewords: 1 - (1 - CER)^X, a frame lost
    when any of its X codewords is uncorrectable (SONiC FEC FLR HLD 4.4), computed without cancellation."""
    return float(-math.expm1(interleave * math.log1p(-min(codeword_error_ratio, 1.0 - 1e-16))))


#: frame-loss target for ``--objective fec``: the 802.3bs/802.3ck task-force objective "frame loss
#: ratio less than 6.2e-11 for 64-octet frames" (an uncorrectable codeword loses every frame in it, so
#: FLR ~ codeword error ratio for short frames). Cited from the objectives; not checked here.
FRAME_LOSS_TARGET = 6.2e-11


def fec_objective(result: EyeResult, target: float = FRAME_LOSS_TARGET) -> float:
    """Tuning objective ``fec``: :func:`fec_margin_decades` of the eye result's codeword error ratio
    (DFE bursts, no precoding, the lane's codeword interleave), larger is better. Three taps, as in the
    reports: with two, the c2m-16in ranking of rx_post 0 vs 4 inverts (its third tap is -0.14)."""
    return fec_margin_decades(fec_from_eye(result).codeword_error_ratio, target)


def fec_margin_decades(codeword_error_ratio: float, target: float = FRAME_LOSS_TARGET) -> float:
    """Margin to a frame-loss target in decades: log10(target / CER), positive = better than the
    target (floored at CER 1e-300 so a perfect link gives a finite, large margin)."""
    return math.log10(target) - math.log10(max(codeword_error_ratio, 1e-300))
