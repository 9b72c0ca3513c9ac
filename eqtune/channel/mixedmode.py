"""Single-ended 4-port -> differential (mixed-mode) 2-port, and 4-port port-order detection.

Port orders (1-based single-ended port numbers):

* ``"1-2/3-4"``: legs 1->2 and 3->4, i.e. port 1 = TX+, 2 = RX+, 3 = TX-, 4 = RX-
  (the IEEE 802.3 contribution convention);
* ``"1-3/2-4"``: legs 1->3 and 2->4, i.e. port 1 = TX+, 3 = RX+, 2 = TX-, 4 = RX- (scikit-rf's
  ``se2gmm`` convention: pairs (1,2) and (3,4), legs s0==s2 and s1==s3).

Mixed-mode formula (Bockelman & Eisenstadt, "Combined differential and common-mode scattering
parameters: theory and simulation", IEEE T-MTT 43(7), 1995, eq. (9)), with logical port i made of
single-ended ports (i+, i-)::

    Sdd_ij = 1/2 * (S[i+, j+] - S[i+, j-] - S[i-, j+] + S[i-, j-])

The reference impedance is the file's (normally 50 ohm single-ended, so 100 ohm differential).
"""

from __future__ import annotations

import warnings

import numpy as np

from eqtune.arrays import ComplexArray, IntArray
from eqtune.errors import ChannelError

PORT_ORDERS: dict[str, tuple[int, int, int, int]] = {
    # (tx+, tx-, rx+, rx-), 0-based
    "1-2/3-4": (0, 2, 1, 3),
    "1-3/2-4": (0, 1, 2, 3),
}

# Thru legs dominate the low-frequency transmission "by far"; below this ratio we call it ambiguous.
_DETECT_RATIO = 3.0
_DETECT_FMAX_HZ = 1e9
# Crosstalk files: the coupling's delay (impulse peak of the candidate SDD21) decides. Read in the right
# order, a FEXT/NEXT file's SDD21 is the pair-to-pair coupling, which travels through the channel (1.4-4.8 ns
# on the shared 802.3ck sets); read in the wrong order it is dominated by the + to - couplings of each
# pair at one end of the channel (delay < 0.1 ns there). The orders' delays must differ by at least this
# much, and by a quarter of the thru's delay when that is known, or the answer is "ambiguous".
_XT_MIN_DELAY_GAP_S = 50e-12
_XT_THRU_FRACTION = 0.25


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


def detect_port_order(freqs_hz: np.ndarray, s: np.ndarray) -> tuple[str, float]:
    """Port order of a 4-port from the data: the thru legs have by far the largest LF transmission.

    Returns ``(order, ratio)`` where ``ratio`` >= 1 is how much larger the winning legs' mean
    |S| below 1 GHz is; ``ratio < 3`` means the file gives no clear answer (crosstalk files, for one).
    """
    f = np.asarray(freqs_hz)
    sel = f <= max(_DETECT_FMAX_HZ, f[min(4, f.size - 1)])
    a = np.abs(s[sel])
    t12 = float(np.mean(a[:, 1, 0] + a[:, 3, 2]))  # legs 1->2, 3->4
    t13 = float(np.mean(a[:, 2, 0] + a[:, 3, 1]))  # legs 1->3, 2->4
    hi, lo = max(t12, t13), min(t12, t13)
    ratio = hi / lo if lo > 0 else float("inf")
    return ("1-2/3-4" if t12 >= t13 else "1-3/2-4"), ratio


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


def detect_crosstalk_port_order(freqs_hz: np.ndarray, s: np.ndarray,
                                thru_delay_s: float | None = None) -> tuple[str | None, dict[str, float]]:
    """Port order of a crosstalk (FEXT/NEXT) 4-port, from the coupling's delay.

    In the right order SDD21 is the pair-to-pair coupling, which has travelled along the channel; in the
    wrong order it is dominated by the couplings between the + and - ports of each pair at one end
    (S31 and S42 of a 1-2/3-4 file), which arrive at once. The order whose SDD21 peaks later wins when
    the two delays differ by more than 50 ps and a quarter of ``thru_delay_s`` (when known); otherwise
    the answer is ``None`` (ambiguous). Returns ``(order or None, {order: delay_s})``.

    The LF-transmission rule of :func:`detect_port_order` is wrong on these files: the strongest LF
    transmission of a crosstalk file is the near-end coupling inside a pair (eqtune issue 16).
    """
    delays = {o: coupling_delay_s(freqs_hz, s, o) for o in PORT_ORDERS}
    (o_hi, d_hi), (_, d_lo) = sorted(delays.items(), key=lambda kv: -kv[1])
    gap = max(_XT_MIN_DELAY_GAP_S, _XT_THRU_FRACTION * thru_delay_s if thru_delay_s else 0.0)
    return (o_hi if d_hi - d_lo >= gap else None), delays


def resolve_port_order(freqs_hz: np.ndarray, s: np.ndarray, port_order: str | None, *,
                       fallback: str | None = None, where: str = "", crosstalk: bool = False,
                       thru_delay_s: float | None = None) -> tuple[str, bool]:
    """The port order to use: explicit, else detected, else ``fallback`` (or 1-2/3-4 with a warning).

    ``crosstalk=True`` (an aggressor file) detects from the coupling's delay
    (:func:`detect_crosstalk_port_order`, ``thru_delay_s`` = the victim thru's delay if known); when
    that is ambiguous it warns and takes ``fallback`` (the thru's order) or 1-2/3-4.
    Returns ``(order, detected)``.
    """
    if port_order not in (None, "auto"):
        return normalize_port_order(port_order, where), False
    if crosstalk:
        xorder, delays = detect_crosstalk_port_order(freqs_hz, s, thru_delay_s)
        if xorder is not None:
            return xorder, True
        use = fallback or "1-2/3-4"
        shown = ", ".join(f"{o}: {d * 1e9:.3f} ns" for o, d in delays.items())
        why = " (the thru's order)" if fallback else ""
        warnings.warn(f"{where}: crosstalk port order is ambiguous (coupling delay {shown}); assuming {use}{why}"
                      " -- set port_order = '1-2/3-4' or '1-3/2-4' on the aggressor if that is wrong", stacklevel=3)
        return use, False
    order, ratio = detect_port_order(freqs_hz, s)
    if ratio >= _DETECT_RATIO:
        return order, True
    if fallback is not None:
        return fallback, False
    warnings.warn(f"{where}: port order is ambiguous (thru legs only {ratio:.1f}x stronger); assuming "
                  "1-2/3-4 -- pass port_order='1-3/2-4' if that is wrong", stacklevel=3)
    return "1-2/3-4", False


def normalize_port_order(port_order: str, where: str = "") -> str:
    key = str(port_order).strip().replace(" ", "")
    aliases = {"12/34": "1-2/3-4", "13/24": "1-3/2-4", "1-2,3-4": "1-2/3-4", "1-3,2-4": "1-3/2-4"}
    key = aliases.get(key, key)
    if key not in PORT_ORDERS:
        raise ChannelError(f"{where}: port order {port_order!r} is unknown; use '1-2/3-4' (legs 1->2, "
                           "3->4) or '1-3/2-4' (legs 1->3, 2->4)")
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
