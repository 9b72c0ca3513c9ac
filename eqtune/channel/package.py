"""The IEEE 802.3 COM device package model (Annex 93A.1.2, as extended by 802.3ck 120F/163A).

A package is a cascade of differential 2-ports, die side = port 1 (93A.1.2.1, Figure 93A-2)::

    die -- shunt C_d -- series L_s -- shunt C_b -- line z_p[0] @ Z_c[0] -- line z_p[1] @ Z_c[1] -- shunt C_p -- board

All S-parameters are differential, normalized to R_0 = 50 ohm per leg (100 ohm differential); capacitances
and inductances are per leg as in the COM configuration tables (93A-8/93A-9 use R_0 with single-ended
values, which is the same thing).

Sources:
* 93A-8 (shunt capacitor), 802.3ck 120F series inductor (the L_s of the "tuned" package, MATLAB COM
  ``series_inductor``), 93A-10..93A-14 (lossy transmission line), 93A-18 (cascade).
* Checked against MATLAB COM 3.70 figures (``../shared/com-golden/README.md``): one package block and the
  full TX/RX packages of case 1 agree to rel 1e-6 (tests/eye/test_golden.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqtune.errors import InputError

R0_OHM = 50.0  # 93A.1.2: reference impedance per leg


@dataclass(frozen=True)
class PackageParams:
    """COM package parameters (802.3ck Table 120F-? / 163A-?; per leg capacitances and inductance).

    ``zp_mm`` and ``zc_ohm`` list the transmission-line segments from die to ball (differential Z_c).
    Line model constants are those of Table 93A-3 / 120F: tau (ns/mm), gamma0 (1/mm),
    a1 (1/(mm sqrt(GHz))), a2 (1/(mm GHz)).
    """

    cd_f: float = 0.12e-12  # die pad capacitance C_d
    ls_h: float = 0.12e-9  # die compensation inductance L_s
    cb_f: float = 0.03e-12  # bump capacitance C_b
    zp_mm: tuple[float, ...] = (13.0, 1.8)
    zc_ohm: tuple[float, ...] = (87.5, 92.5)
    cp_f: float = 0.087e-12  # ball capacitance C_p
    tau_ns_per_mm: float = 6.141e-3
    gamma0_per_mm: float = 0.0
    a1: float = 9.909e-4
    a2: float = 2.772e-4


# 802.3ck C2C/KR package case 1 (config_com_ieee8023_93a=3ck_*): TX 13 mm + 1.8 mm, RX 11 mm + 1.8 mm;
# case 2 (long package) uses 31 mm / 29 mm first segments.
_CASES_MM: dict[tuple[int, str], float] = {(1, "tx"): 13.0, (1, "rx"): 11.0, (2, "tx"): 31.0, (2, "rx"): 29.0}


def package_params(case: int = 1, side: str = "tx", zp1_mm: float | None = None) -> PackageParams:
    """The 802.3ck reference package of ``case`` (1 or 2) for ``side`` ("tx" or "rx").

    ``zp1_mm`` overrides the first line segment (die side), e.g. the KR sheet's 12 mm on every side
    (``config_com_ieee8023_93a=3ck_d3p1_KR_11_30_21``, as transcribed in cortalo/serdeskit
    examples/compute_com_kr_backplane.py); the defaults are the C2C sheet's (TX 13, RX 11 mm).
    """
    key = (int(case), str(side).lower())
    if key not in _CASES_MM:
        raise InputError(f"package case={case!r} side={side!r} is unknown: use case 1 or 2 and side 'tx' or 'rx'")
    if zp1_mm is not None and not (0.0 <= float(zp1_mm) <= 1000.0):
        raise InputError(f"package line length {zp1_mm!r} mm is invalid: give 0..1000 mm")
    return PackageParams(zp_mm=(_CASES_MM[key] if zp1_mm is None else float(zp1_mm), 1.8))


def _two_port(s11: np.ndarray, s21: np.ndarray, s22: np.ndarray | None = None) -> np.ndarray:
    """Assemble a reciprocal (n,2,2) S-matrix."""
    s22 = s11 if s22 is None else s22
    out = np.empty(s11.shape + (2, 2), dtype=complex)
    out[..., 0, 0] = s11
    out[..., 0, 1] = s21
    out[..., 1, 0] = s21
    out[..., 1, 1] = s22
    return out


def shunt_c_sparams(freqs_hz: np.ndarray, c_f: float, r0_ohm: float = R0_OHM) -> np.ndarray:
    """Shunt capacitor 2-port, 93A-8: s11 = -j2pi f C R0/(2 + j2pi f C R0), s21 = 2/(2 + j2pi f C R0)."""
    x = 2j * np.pi * np.asarray(freqs_hz, dtype=float) * c_f * r0_ohm
    return _two_port(-x / (2.0 + x), 2.0 / (2.0 + x))


def series_l_sparams(freqs_hz: np.ndarray, l_h: float, r0_ohm: float = R0_OHM) -> np.ndarray:
    """Series inductor 2-port (802.3ck 120F package L_s; MATLAB COM ``series_inductor``).

    Per-leg impedance j2pi f L in a 100 ohm differential system: s11 = jwL/(jwL + 2 R0), s21 = 2 R0/(jwL + 2 R0).
    """
    z = 2j * np.pi * np.asarray(freqs_hz, dtype=float) * l_h
    return _two_port(z / (z + 2.0 * r0_ohm), 2.0 * r0_ohm / (z + 2.0 * r0_ohm))


def line_gamma_per_mm(freqs_hz: np.ndarray, p: PackageParams) -> np.ndarray:
    """Propagation constant gamma(f) in 1/mm, 93A-10..93A-12 (f in GHz inside the formula)."""
    f_ghz = np.asarray(freqs_hz, dtype=float) / 1e9
    safe = np.where(f_ghz > 0, f_ghz, 1.0)
    g1 = p.a1 * (1 + 1j) * np.sqrt(f_ghz)  # 93A-11: skin effect
    g2 = p.a2 * f_ghz * (1 - 1j * (2 / np.pi) * np.log(safe)) + 1j * 2 * np.pi * f_ghz * p.tau_ns_per_mm  # 93A-12
    g2 = np.where(f_ghz > 0, g2, 0.0)
    return p.gamma0_per_mm + g1 + g2


def line_sparams(freqs_hz: np.ndarray, length_mm: float, zc_ohm: float, p: PackageParams,
                 r0_ohm: float = R0_OHM) -> np.ndarray:
    """Lossy transmission line 2-port, 93A-13/93A-14 (rho with the 2 R0 = 100 ohm differential reference)."""
    gz = line_gamma_per_mm(freqs_hz, p) * length_mm
    rho = (zc_ohm - 2 * r0_ohm) / (zc_ohm + 2 * r0_ohm)  # 93A-14
    e1 = np.exp(-gz)
    e2 = e1 * e1
    den = 1 - rho**2 * e2
    return _two_port(rho * (1 - e2) / den, (1 - rho**2) * e1 / den)  # 93A-13


def cascade(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cascade two (n,2,2) S-matrices, port 2 of ``a`` to port 1 of ``b`` (93A-18 / Redheffer star)."""
    d = 1.0 / (1.0 - a[:, 1, 1] * b[:, 0, 0])
    out = np.empty_like(a, dtype=complex)
    out[:, 0, 0] = a[:, 0, 0] + a[:, 0, 1] * b[:, 0, 0] * a[:, 1, 0] * d
    out[:, 0, 1] = a[:, 0, 1] * b[:, 0, 1] * d
    out[:, 1, 0] = a[:, 1, 0] * b[:, 1, 0] * d
    out[:, 1, 1] = b[:, 1, 1] + b[:, 1, 0] * a[:, 1, 1] * b[:, 0, 1] * d
    return out


def flip_ports(s: np.ndarray) -> np.ndarray:
    """Swap ports 1 and 2 (e.g. an RX package with die = port 1 placed after the channel)."""
    return s[:, ::-1, ::-1].copy()


def package_block_sparams(freqs_hz: np.ndarray, p: PackageParams, *, segments: int | None = None,
                          ball: bool = True) -> np.ndarray:
    """The package of ``p`` as an (n,2,2) S-matrix, die side = port 1.

    ``segments`` limits the number of line segments used (``None``: all); ``ball=False`` leaves out C_p.
    """
    f = np.asarray(freqs_hz, dtype=float)
    s = shunt_c_sparams(f, p.cd_f)
    if p.ls_h:
        s = cascade(s, series_l_sparams(f, p.ls_h))
    if p.cb_f:
        s = cascade(s, shunt_c_sparams(f, p.cb_f))
    n = len(p.zp_mm) if segments is None else segments
    for length_mm, zc in list(zip(p.zp_mm, p.zc_ohm))[:n]:
        if length_mm > 0:
            s = cascade(s, line_sparams(f, length_mm, zc, p))
    if ball and p.cp_f:
        s = cascade(s, shunt_c_sparams(f, p.cp_f))
    return s


@dataclass(frozen=True)
class HostBoard:
    """A host board trace between a device package and the channel: shunt C_0 at the package, a lossy line
    of ``zp_mm`` at ``zc_ohm`` (differential), shunt C_1 at the channel (MATLAB COM ``add_brd``, used when
    the config sheet's "Include PCB" is 1, e.g. the 802.3ck CR cable-assembly sheet; line 93A-9..93A-14 with
    the board's own constants: the sheet's board_tl_tau and board_tl_gamma0_a1_a2). Per leg C (F)."""

    zp_mm: float
    zc_ohm: float
    c0_f: float
    c1_f: float
    tau_ns_per_mm: float
    gamma0_per_mm: float
    a1: float
    a2: float


def host_board_sparams(freqs_hz: np.ndarray, board: HostBoard) -> np.ndarray:
    """(n,2,2) S-matrix of ``board``, package side = port 1 (C_0, line, C_1). MATLAB COM's ``add_brd`` builds
    the TX board as C_0 -> line -> C_1 towards the channel and the RX board as C_1 -> line -> C_0 from the
    channel: the same network seen from each package."""
    f = np.asarray(freqs_hz, dtype=float)
    line = PackageParams(tau_ns_per_mm=board.tau_ns_per_mm, gamma0_per_mm=board.gamma0_per_mm, a1=board.a1,
                         a2=board.a2)
    s = shunt_c_sparams(f, board.c0_f)
    if board.zp_mm > 0:
        s = cascade(s, line_sparams(f, board.zp_mm, board.zc_ohm, line))
    return cascade(s, shunt_c_sparams(f, board.c1_f))


def com_package_sparams(freqs_hz: np.ndarray, *, case: int = 1, side: str = "tx",
                        params: PackageParams | None = None, zp1_mm: float | None = None,
                        board: HostBoard | None = None) -> np.ndarray:
    """Differential S-matrix (n,2,2) of the 802.3ck COM package, die side = port 1.

    ``case`` 1/2 and ``side`` "tx"/"rx" choose the reference package (``zp1_mm``: its first line
    segment, see ``package_params``); ``params`` overrides it entirely (the parameterized variant);
    ``board``: a host board after the ball (port 2 is then the board's channel end). To put an RX package
    after a channel, use ``flip_ports``.
    """
    p = params if params is not None else package_params(case, side, zp1_mm)
    s = package_block_sparams(freqs_hz, p)
    return cascade(s, host_board_sparams(freqs_hz, board)) if board is not None else s
