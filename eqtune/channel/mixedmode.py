"""Single-ended 4-port -> differential (mixed-mode) 2-port, and 4-port port-order detection.

Port orders (1-based single-ended port numbers):

* ``"1-2/3-4"``: legs 1->2 and 3->4, i.e. port 1 = TX+, 2 = RX+, 3 = TX-, 4 = RX-
  (the IEEE 802.3 contribution convention);
* ``"1-3/2-4"``: legs 1->3 and 2->4, i.e. port 1 = TX+, 3 = RX+, 2 = TX-, 4 = RX- (scikit-rf's
  ``se2gmm`` convention: pairs (1,2) and (3,4), legs s0==s2 and s1==s3);
* any other ``"a-b/c-d"``: legs a->b (TX+ -> RX+) and c->d (TX- -> RX-), e.g. ``"1-4/3-2"`` for a 1-2/3-4
  file whose RX P and N were swapped (all 24 numberings of the four ports).

Detection: a thru by its legs (the dominant LF transmission), its ends (in-end couplings arrive first) and
its DC gain (> 0); a crosstalk file by its two pairs (the strongest in-pair coupling).

Mixed-mode formula (Bockelman & Eisenstadt, "Combined differential and common-mode scattering
parameters: theory and simulation", IEEE T-MTT 43(7), 1995, eq. (9)), with logical port i made of
single-ended ports (i+, i-)::

    Sdd_ij = 1/2 * (S[i+, j+] - S[i+, j-] - S[i-, j+] + S[i-, j-])

The reference impedance is the file's (normally 50 ohm single-ended, so 100 ohm differential).
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np

from eqtune.arrays import ComplexArray, IntArray
from eqtune.errors import ChannelError


def order_name(ports: tuple[int, int, int, int]) -> str:
    """The name "a-b/c-d" of 0-based ports (tx+, tx-, rx+, rx-): legs a->b (TX+ -> RX+) and c->d (TX- -> RX-),
    1-based."""
    tp, tn, rp, rn = ports
    return f"{tp + 1}-{rp + 1}/{tn + 1}-{rn + 1}"


PORT_ORDERS: dict[str, tuple[int, int, int, int]] = {
    # (tx+, tx-, rx+, rx-), 0-based; the two common conventions first, then every other numbering
    "1-2/3-4": (0, 2, 1, 3),
    "1-3/2-4": (0, 1, 2, 3),
}
for _perm in itertools.permutations(range(4)):
    PORT_ORDERS.setdefault(order_name(_perm), _perm)  # type: ignore[arg-type]  # 4-tuples of a 4-permutation
STANDARD_ORDERS = ("1-2/3-4", "1-3/2-4")
# the three ways to split 4 ports into two pairs (legs of a thru, or the two pairs of a crosstalk file)
PAIRINGS: tuple[tuple[tuple[int, int], tuple[int, int]], ...] = (((0, 2), (1, 3)), ((0, 1), (2, 3)), ((0, 3), (1, 2)))

# Thru legs dominate the low-frequency transmission "by far"; below this ratio we call it ambiguous.
_DETECT_RATIO = 3.0
_DETECT_FMAX_HZ = 1e9
# a thru's in-end / cross-end couplings below this fraction of its legs are numerical zeros (no timing)
_COUPLING_FLOOR = 1e-6
# a thru's legs carry |S| near 1 below 1 GHz (0.9-0.99 on the shared 802.3ck thrus); a crosstalk file's
# strongest LF transmission (the in-pair coupling) is ~0.16 there
_THRU_MIN_LF = 0.3
# Crosstalk files: the coupling's delay (impulse peak of the candidate SDD21) decides. Read in the right
# order, a FEXT/NEXT file's SDD21 is the pair-to-pair coupling, which travels through the channel (1.4-4.8 ns
# on the shared 802.3ck sets); read in the wrong order it is dominated by the + to - couplings of each
# pair at one end of the channel (delay < 0.1 ns there). The orders' delays must differ by at least this
# much, and by a quarter of the thru's delay when that is known, or the answer is "ambiguous".
_XT_MIN_DELAY_GAP_S = 50e-12
_XT_THRU_FRACTION = 0.25
# Crosstalk files: the in-pair coupling of the right split is 4x-100x the next split's on the shared sets
_XT_PAIR_RATIO = 2.0
_XT_PAIR_FMAX_HZ = 26.5625e9


def sdd_from_se(s: np.ndarray, ports: tuple[int, int, int, int]) -> np.ndarray:
    """Differential 2x2 S-matrix (n,2,2) from single-ended S (n,N,N).

    ``ports`` = (tx+, tx-, rx+, rx-), 0-based indices into the N ports. Formula: Bockelman &
    Eisenstadt 1995 eq. (9) (see the module docstring).
    """
    p = np.asarray(ports)
    pos = p[[0, 2]]  # logical port 1 = TX pair, logical port 2 = RX pair
    neg = p[[1, 3]]
    def sub(a: IntArray, b: IntArray) -> ComplexArray:  # (n, 2, 2) block
        return s[:, a[:, None], b[None, :]]

    ret: ComplexArray = 0.5 * (sub(pos, pos) - sub(pos, neg) - sub(neg, pos) + sub(neg, neg))
    return ret


@dataclass(frozen=True)
class ThruOrder:
    """What the data of a thru 4-port say about its port order (see :func:`detect_thru_port_order`).

    ``order`` the order read ("a-b/c-d", legs a->b and c->d, TX+ = a) or None when the file gives no clear
    answer; ``legs_ratio`` how much larger the winning legs' LF transmission is than the next pairing's;
    ``leg_balance`` the weaker leg's LF |S| over the stronger's (1 = symmetric pair); ``ends_gap_s`` how much
    later the couplings between the ends of the two legs arrive than those within an end; ``dc_gain`` Re
    SDD21 at the lowest frequency in that order (+1 for a thru read right, -1 with P and N swapped at one
    end); ``why`` the reason when ``order`` is None."""

    order: str | None
    legs_ratio: float
    leg_balance: float
    ends_gap_s: float
    dc_gain: float
    why: str = ""
    evidence: dict[str, float] = field(default_factory=dict)


def _sym_abs(s: np.ndarray) -> np.ndarray:
    """(|S_ij| + |S_ji|) / 2: a coupling's size whichever way the file stores it."""
    a = np.abs(s)
    out: np.ndarray = 0.5 * (a + np.swapaxes(a, -1, -2))
    return out


def _lf(freqs_hz: np.ndarray) -> np.ndarray:
    f = np.asarray(freqs_hz)
    sel: np.ndarray = f <= max(_DETECT_FMAX_HZ, f[min(4, f.size - 1)])
    return sel


def dc_gain(freqs_hz: np.ndarray, s: np.ndarray, order: str) -> float:
    """Re SDD21 at the lowest frequency of a 4-port read in ``order`` (a thru: about +1 read right, about -1
    with P and N swapped at one end)."""
    return float(sdd_from_se(s[:1], PORT_ORDERS[order])[0, 1, 0].real)


def detect_thru_port_order(freqs_hz: np.ndarray, s: np.ndarray) -> ThruOrder:
    """Port order of a thru 4-port from its data, whatever the numbering (all 24 are recognized).

    1. legs: of the three ways to pair the ports, the thru legs carry by far the largest transmission
       below 1 GHz (at least ``_DETECT_RATIO`` times the next pairing), and both legs carry it (the weaker
       at least half the stronger: a differential pair is symmetric);
    2. ends: the couplings between the two ports at one end (a pair's near-end coupling) arrive at once,
       those between ports at opposite ends only after the channel's delay: the split of the four ports into
       two ends whose couplings arrive first wins, by at least half the thru's delay;
    3. the end that holds port 1 is the TX end and port 1 is TX+ (the file's own numbering: a reversed
       file cannot be told from its data, a reciprocal thru has SDD12 = SDD21), TX- is the other port there,
       RX+/RX- are the legs' far ends. P and N are then consistent by construction: the DC gain is checked
       to be positive (a thru read with one end's P/N swapped has SDD21 = -1 at DC).
    """
    f = np.asarray(freqs_hz)
    a = _sym_abs(s[_lf(f)])
    trans = [float(np.mean(a[:, i, j] + a[:, k, m])) for (i, j), (k, m) in PAIRINGS]
    rank = np.argsort(trans)[::-1]
    best, second = trans[rank[0]], trans[rank[1]]
    ratio = best / second if second > 0 else float("inf")
    (p, q), (r, t) = PAIRINGS[int(rank[0])]
    l1, l2 = float(np.mean(a[:, p, q])), float(np.mean(a[:, r, t]))
    balance = min(l1, l2) / max(l1, l2) if max(l1, l2) > 0 else 0.0
    if ratio < _DETECT_RATIO or balance < 0.5 or max(l1, l2) < _THRU_MIN_LF:
        if ratio < _DETECT_RATIO:
            why = f"no pair of legs dominates (best {ratio:.1f}x the next, {_DETECT_RATIO:g}x needed)"
        elif balance < 0.5:
            why = f"its two legs are unbalanced ({balance:.2f}, a pair is symmetric)"
        else:
            why = (f"its strongest transmission below 1 GHz is |S| = {max(l1, l2):.2f}, a thru's is near 1: a "
                   "crosstalk file? (eqtune channel show FILE --role fext|next)")
        return ThruOrder(None, ratio, balance, 0.0, float("nan"), why)
    thru_delay = impulse_peak_delay_s(f, s[:, q, p])

    def dl(i: int, j: int) -> float:
        return impulse_peak_delay_s(f, s[:, i, j])

    # legs (p, q) and (r, t): ends {p, r} | {q, t}, or {p, t} | {q, r}
    d_a = dl(p, r) + dl(q, t)
    d_b = dl(p, t) + dl(q, r)
    gap = abs(d_a - d_b) / 2.0
    leg_max = float(np.max(np.abs(s[:, q, p])))
    weakest = min(float(np.max(np.abs(s[:, i, j]))) for i, j in ((p, r), (q, t), (p, t), (q, r)))
    if weakest < _COUPLING_FLOOR * leg_max:  # no coupling to time (an ideal or generated model): undecided
        gap = 0.0
    cands = [(p, r, q, t), (p, t, q, r)]  # (x, x's end partner, leg partner of x, leg partner of the other)
    if gap >= max(_XT_MIN_DELAY_GAP_S, 0.5 * thru_delay):
        x, y, xq, yq = cands[0] if d_a < d_b else cands[1]
    else:
        std = [c for c in cands if order_name(_orient(*c)) in STANDARD_ORDERS]
        if len(std) != 1:
            return ThruOrder(None, ratio, balance, gap, float("nan"),
                             f"its ends cannot be told apart (couplings {gap * 1e9:.3f} ns apart)")
        x, y, xq, yq = std[0]
    ports = _orient(x, y, xq, yq)
    order = order_name(ports)
    g = dc_gain(f, s, order)
    if not g > 0:
        return ThruOrder(None, ratio, balance, gap, g, f"its DC gain is {g:.2f} in every reading")
    return ThruOrder(order, ratio, balance, gap, g, evidence={"thru_delay_s": thru_delay})


def _orient(x: int, y: int, xq: int, yq: int) -> tuple[int, int, int, int]:
    """(tx+, tx-, rx+, rx-) from one end {x, y} and the legs x->xq, y->yq: the end holding port 1 (index 0)
    is TX and port 1 is TX+; otherwise the lower-numbered port of the TX end."""
    if 0 in (xq, yq):  # port 1 is at the far end of this split: swap ends
        x, y, xq, yq = xq, yq, x, y
    if y < x:
        x, y, xq, yq = y, x, yq, xq
    return (x, y, xq, yq)


def detect_port_order(freqs_hz: np.ndarray, s: np.ndarray) -> tuple[str, float]:
    """Port order of a thru 4-port (:func:`detect_thru_port_order`) as ``(order, ratio)``; ``ratio`` >= 1
    is how much larger the winning legs' mean |S| below 1 GHz is than the next pairing's; ``ratio < 3``
    means the file gives no clear answer (crosstalk files, for one). An undecided file reports the
    stronger of the two common orders."""
    d = detect_thru_port_order(freqs_hz, s)
    if d.order is not None:
        return d.order, d.legs_ratio
    a = np.abs(s[_lf(np.asarray(freqs_hz))])
    t12 = float(np.mean(a[:, 1, 0] + a[:, 3, 2]))
    t13 = float(np.mean(a[:, 2, 0] + a[:, 3, 1]))
    return ("1-2/3-4" if t12 >= t13 else "1-3/2-4"), min(d.legs_ratio, _DETECT_RATIO - 1e-9)


def impulse_peak_delay_s(freqs_hz: np.ndarray, x: np.ndarray) -> float:
    """Delay (s) of the largest |h(t)| of a transfer function ``x`` sampled at ``freqs_hz``.

    The points are put on a uniform grid from 0 Hz with the data's smallest step (linear interpolation
    of real and imaginary parts, flat below the first point), inverse-FFT'd, and the peak is looked for in
    the first half of the record (the second half is negative time).
    """
    f = np.asarray(freqs_hz, dtype=float)
    x = np.asarray(x, dtype=complex)
    df = float(np.min(np.diff(f))) if f.size > 1 else 1.0
    n = int(min(max(round(f[-1] / df), 8), 1 << 16))
    grid = np.linspace(0.0, f[-1], n + 1)
    xu = np.interp(grid, f, x.real) + 1j * np.interp(grid, f, x.imag)
    h = np.abs(np.fft.irfft(xu, 2 * n))
    return int(np.argmax(h[:n])) / (2 * n * float(grid[1] - grid[0]))


def coupling_delay_s(freqs_hz: np.ndarray, s: np.ndarray, order: str) -> float:
    """Delay (s) of the impulse-response peak of SDD21 of a 4-port ``s`` read in ``order``."""
    return impulse_peak_delay_s(freqs_hz, sdd_from_se(s, PORT_ORDERS[order])[:, 1, 0])


def crosstalk_order_by_delay(freqs_hz: np.ndarray, s: np.ndarray,
                             thru_delay_s: float | None = None) -> tuple[str | None, dict[str, float]]:
    """The coupling-delay rule for a crosstalk 4-port, between the two common orders.

    In the right order SDD21 is the pair-to-pair coupling, which has travelled along the channel; in the
    wrong order it is dominated by the couplings between the + and - ports of each pair at one end
    (S31 and S42 of a 1-2/3-4 file), which arrive at once. The order whose SDD21 peaks later wins when
    the two delays differ by more than 50 ps and a quarter of ``thru_delay_s`` (when known); otherwise
    the answer is ``None``. It cannot decide NEXT files, whose coupling is near-end too. Returns
    ``(order or None, {order: delay_s})``."""
    delays = {o: coupling_delay_s(freqs_hz, s, o) for o in STANDARD_ORDERS}
    (o_hi, d_hi), (_, d_lo) = sorted(delays.items(), key=lambda kv: -kv[1])
    gap = max(_XT_MIN_DELAY_GAP_S, _XT_THRU_FRACTION * thru_delay_s if thru_delay_s else 0.0)
    return (o_hi if d_hi - d_lo >= gap else None), delays


def pair_couplings(freqs_hz: np.ndarray, s: np.ndarray) -> list[float]:
    """For each split of the four ports into two pairs (``PAIRINGS``): the geometric mean of the RMS |S|
    (over the band up to 26.5625 GHz, or the data) between the two ports of each pair."""
    f = np.asarray(freqs_hz)
    sel = (f > 0) & (f <= max(_XT_PAIR_FMAX_HZ, f[min(4, f.size - 1)]))
    a = _sym_abs(s[sel])
    out = []
    for (i, j), (k, m) in PAIRINGS:
        out.append(float(np.sqrt(np.sqrt(np.mean(a[:, i, j] ** 2)) * np.sqrt(np.mean(a[:, k, m] ** 2)))))
    return out


def detect_crosstalk_port_order(freqs_hz: np.ndarray, s: np.ndarray,
                                thru_delay_s: float | None = None) -> tuple[str | None, dict[str, float]]:
    """Port order of a crosstalk (FEXT/NEXT) 4-port: which ports form the two pairs.

    A crosstalk file holds two differential pairs (the aggressor's and the victim's). The + and - ports of
    one pair are coupled far more strongly to each other (the pair's own coupling, -15 to -25 dB on the
    shared 802.3ck files) than to either port of the other pair (the crosstalk, -40 dB and below): the split
    into pairs with the strongest in-pair coupling wins when it is at least ``_XT_PAIR_RATIO`` times the
    next split's. With the pairs known the order is fixed up to the signs of P and N, which do not matter
    for crosstalk (COM's crosstalk distribution is symmetric; a reciprocal file has SDD12 = SDD21): the pair
    holding port 1 is read as the first, each pair's lower port as its +. When the couplings do not decide
    (synthetic or strange files), the coupling-delay rule (:func:`crosstalk_order_by_delay`) is tried. An
    order in which SDD21 is a numerical zero is never returned; when only one common order holds any
    differential coupling, that one is (``pair_rule_void`` = 1 when it overruled the in-pair rule).
    Returns ``(order or None, {common order: coupling delay_s, "pair_coupling_ratio": ratio,
    "pair_rule_void": 0 or 1})``.

    The LF-transmission rule of :func:`detect_port_order` is wrong on these files: the strongest LF
    transmission of a crosstalk file is the near-end coupling inside a pair."""
    by_delay, delays = crosstalk_order_by_delay(freqs_hz, s, thru_delay_s)
    c = pair_couplings(freqs_hz, s)
    rank = np.argsort(c)[::-1]
    ratio = c[rank[0]] / c[rank[1]] if c[rank[1]] > 0 else float("inf")
    info = {**delays, "pair_coupling_ratio": ratio}
    # An order in which the file's differential coupling (SDD21) is a numerical zero cannot be right: the
    # file would then hold no crosstalk at all. Idealised files (a model's coupling written as S21 = S43,
    # no coupling inside either pair) fool the in-pair rule: their strongest "in-pair" coupling is the
    # crosstalk itself, and read that way SDD21 vanishes.
    coupling = {o: crosstalk_rms(freqs_hz, s, o) for o in STANDARD_ORDERS}
    live = [o for o in STANDARD_ORDERS if coupling[o] > _COUPLING_FLOOR * max(coupling.values())]
    info["pair_rule_void"] = 0.0
    if ratio >= _XT_PAIR_RATIO:
        (i, j), (k, m) = PAIRINGS[int(rank[0])]
        if 0 in (k, m):
            (i, j), (k, m) = (k, m), (i, j)
        order = order_name((min(i, j), max(i, j), min(k, m), max(k, m)))
        if crosstalk_rms(freqs_hz, s, order) > _COUPLING_FLOOR * max(coupling.values()):
            return order, info
        info["pair_rule_void"] = 1.0
    if by_delay in live:
        return by_delay, info
    return (live[0] if len(live) == 1 else None), info


def crosstalk_rms(freqs_hz: np.ndarray, s: np.ndarray, order: str) -> float:
    """RMS |SDD21| of a crosstalk 4-port read in ``order`` (over the band up to 26.5625 GHz, or the data)."""
    f = np.asarray(freqs_hz)
    sel = (f > 0) & (f <= max(_XT_PAIR_FMAX_HZ, f[min(4, f.size - 1)]))
    return float(np.sqrt(np.mean(np.abs(sdd_from_se(s[sel], PORT_ORDERS[order])[:, 1, 0]) ** 2)))


def resolve_port_order(freqs_hz: np.ndarray, s: np.ndarray, port_order: str | None, *,
                       fallback: str | None = None, where: str = "", crosstalk: bool = False,
                       thru_delay_s: float | None = None) -> tuple[str, bool]:
    """The port order to use: explicit, else detected, else ``fallback`` (or 1-2/3-4 with a warning).

    ``crosstalk=True`` (an aggressor file) detects its pairs (:func:`detect_crosstalk_port_order`,
    ``thru_delay_s`` = the victim thru's delay if known); when that is ambiguous it warns and takes
    ``fallback`` (the thru's order) or 1-2/3-4. A thru (``crosstalk=False``) is detected in any numbering
    (:func:`detect_thru_port_order`); a given or assumed order in which its DC gain is negative (P/N
    swapped at one end) is refused.
    Returns ``(order, detected)``.
    """
    if port_order not in (None, "auto"):
        order = normalize_port_order(port_order, where)
        if not crosstalk:
            _refuse_inverted(freqs_hz, s, order, where, "given")
        return order, False
    if crosstalk:
        xorder, delays = detect_crosstalk_port_order(freqs_hz, s, thru_delay_s)
        if xorder is not None:
            return xorder, True
        use = fallback or "1-2/3-4"
        shown = ", ".join(f"{o}: {d * 1e9:.3f} ns" for o, d in delays.items() if o in PORT_ORDERS)
        why = " (the thru's order)" if fallback else ""
        warnings.warn(f"{where}: crosstalk port order is ambiguous (coupling delay {shown}); assuming {use}{why}"
                      " -- set port_order = '1-2/3-4' or '1-3/2-4' on the aggressor if that is wrong", stacklevel=3)
        return use, False
    found = detect_thru_port_order(freqs_hz, s)
    if found.order is not None:
        return found.order, True
    use = fallback if fallback is not None else "1-2/3-4"
    _refuse_inverted(freqs_hz, s, use, where, "assumed")
    if fallback is not None:
        return fallback, False
    warnings.warn(f"{where}: port order is ambiguous ({found.why}); assuming "
                  "1-2/3-4 -- pass port_order='1-3/2-4' if that is wrong", stacklevel=3)
    return "1-2/3-4", False


def _refuse_inverted(freqs_hz: np.ndarray, s: np.ndarray, order: str, where: str, how: str) -> None:
    """Refuse a thru read in ``order`` whose DC gain is negative (P and N swapped at one end: SDD21 = -1 at
    DC), naming the order the data give."""
    g = dc_gain(freqs_hz, s, order)
    if g < -0.5:
        found = detect_thru_port_order(freqs_hz, s)
        hint = f"the data say {found.order}" if found.order else "check which ports are P and N"
        raise ChannelError(f"{where}: in the {how} port order {order} this thru has SDD21 = {g:.2f} at DC (P and "
                           f"N swapped at one end); {hint}: set port_order = '{found.order or 'a-b/c-d'}'")


def normalize_port_order(port_order: str, where: str = "") -> str:
    key = str(port_order).strip().replace(" ", "")
    aliases = {"12/34": "1-2/3-4", "13/24": "1-3/2-4", "1-2,3-4": "1-2/3-4", "1-3,2-4": "1-3/2-4"}
    key = aliases.get(key, key)
    if key not in PORT_ORDERS:
        raise ChannelError(f"{where}: port order {port_order!r} is unknown; use '1-2/3-4' (legs 1->2, "
                           "3->4), '1-3/2-4' (legs 1->3, 2->4) or any 'a-b/c-d' (legs a->b = TX+ -> RX+, "
                           "c->d = TX- -> RX-)")
    return key


def lane_ports(nports: int, lane: int, order: str) -> tuple[int, int, int, int]:
    """Single-ended port indices (0-based) of ``lane`` (1-based) in a multi-lane file.

    Convention: lane k uses the four consecutive ports 4(k-1)+1 .. 4(k-1)+4, in ``order``.
    """
    base = 4 * (lane - 1)
    return tuple(base + i for i in PORT_ORDERS[order])  # type: ignore[return-value]


def se_from_sdd(sdd: np.ndarray, scc: np.ndarray | None = None) -> np.ndarray:
    """Single-ended 4-port (order 1-2/3-4) of a pure differential 2-port (no mode conversion).

    Inverse of :func:`sdd_from_se` with Scc = ``scc`` (defaults to ``sdd``): S_se = M^T S_mm M,
    M orthonormal (Bockelman & Eisenstadt 1995, eq. (5)).
    """
    scc = sdd if scc is None else scc
    r = 1.0 / np.sqrt(2.0)
    # rows: d1, d2, c1, c2; columns: se ports 1(tx+), 2(rx+), 3(tx-), 4(rx-)
    m = r * np.array([[1, 0, -1, 0], [0, 1, 0, -1], [1, 0, 1, 0], [0, 1, 0, 1]], dtype=float)
    n = sdd.shape[0]
    smm = np.zeros((n, 4, 4), dtype=complex)
    smm[:, :2, :2] = sdd
    smm[:, 2:, 2:] = scc
    ret: np.ndarray = m.T @ smm @ m
    return ret


def pairs_of(order: str) -> frozenset[frozenset[int]]:
    """The two port pairs of ``order`` (0-based): a thru's two ends, a crosstalk file's two pairs."""
    tp, tn, rp, rn = PORT_ORDERS[order]
    return frozenset({frozenset({tp, tn}), frozenset({rp, rn})})


def check_set_agrees(thru_order: str | None, aggressor_order: str | None, where: str) -> None:
    """Refuse, in one line, an aggressor whose detected pairs are not the thru's ends: the files of one set
    come from one export, so a disagreement means one of them is misread (or exported differently, which an
    explicit ``port_order`` on the aggressor then states)."""
    if thru_order is None or aggressor_order is None or pairs_of(thru_order) == pairs_of(aggressor_order):
        return
    raise ChannelError(f"{where}: this aggressor's ports pair as {aggressor_order} but the thru's as {thru_order}: "
                       f"the files of a set are exported in one order; if this one really differs, set port_order "
                       f"= '{aggressor_order}' on it (eqtune com: --aggressor-port-order)")

