"""Differential 2-port building blocks and their cascade, as (n, 2, 2) S-matrices.

Reference impedance: R0 = 100 ohm differential (50 ohm per leg), the Touchstone/COM convention.
Lumped values are per leg, as in IEEE 802.3 Annex 93A (a capacitance C from each leg to ground is a
differential shunt admittance j w C / 2).
"""

from __future__ import annotations

import numpy as np

R0_DIFF_OHM = 100.0


def two_port(s11: np.ndarray, s21: np.ndarray, s22: np.ndarray | None = None,
             s12: np.ndarray | None = None) -> np.ndarray:
    """Assemble an (n, 2, 2) S-matrix (reciprocal and symmetric unless given)."""
    s11 = np.asarray(s11, dtype=complex)
    out = np.empty(s11.shape + (2, 2), dtype=complex)
    out[..., 0, 0] = s11
    out[..., 1, 0] = s21
    out[..., 0, 1] = s21 if s12 is None else s12
    out[..., 1, 1] = s11 if s22 is None else s22
    return out


def cascade(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Port 2 of ``a`` into port 1 of ``b``: the Redheffer star product of S-matrices.

    Equivalent to multiplying T (transfer) parameters (Pozar, Microwave Engineering 4th ed., 4.4), but
    never divides by S21, so it stays exact through deep suck-outs and the rolled-off band where S21 = 0.
    (Redheffer, J. Math. Phys. 1959; same algebra as IEEE 802.3 eq. 93A-18.)
    """
    d = 1.0 - a[:, 1, 1] * b[:, 0, 0]
    out = np.empty_like(a, dtype=complex)
    out[:, 0, 0] = a[:, 0, 0] + a[:, 0, 1] * b[:, 0, 0] * a[:, 1, 0] / d
    out[:, 0, 1] = a[:, 0, 1] * b[:, 0, 1] / d
    out[:, 1, 0] = b[:, 1, 0] * a[:, 1, 0] / d
    out[:, 1, 1] = b[:, 1, 1] + b[:, 1, 0] * a[:, 1, 1] * b[:, 0, 1] / d
    return out


def cascade_all(blocks: list[np.ndarray]) -> np.ndarray:
    out = blocks[0]
    for b in blocks[1:]:
        out = cascade(out, b)
    return out


def flip(s: np.ndarray) -> np.ndarray:
    """Swap ports 1 and 2."""
    return s[:, ::-1, ::-1].copy()


def line_from_gamma(gamma_l: np.ndarray, zc_ohm: np.ndarray | float, r0_ohm: float = R0_DIFF_OHM) -> np.ndarray:
    """Uniform line of total propagation ``gamma_l`` = gamma * length and impedance ``zc``, referenced to r0.

    rho = (Zc - R0)/(Zc + R0), P = exp(-gamma l):
    S11 = rho (1 - P^2)/(1 - rho^2 P^2), S21 = P (1 - rho^2)/(1 - rho^2 P^2)
    (Pozar 4th ed. Table 4.2 via ABCD; the same form as IEEE 802.3 eqs. 93A-13/93A-14).
    """
    rho = (np.asarray(zc_ohm) - r0_ohm) / (np.asarray(zc_ohm) + r0_ohm)
    p = np.exp(-np.asarray(gamma_l))
    den = 1.0 - rho**2 * p**2
    return two_port(rho * (1.0 - p**2) / den, p * (1.0 - rho**2) / den)


def short_line(freqs_hz: np.ndarray, *, delay_s: float, zdiff_ohm: float = R0_DIFF_OHM,
               loss_db: float = 0.0, loss_f_hz: float = 26.5625e9) -> np.ndarray:
    """A short line (via, connector, cable stub): delay, impedance, skin-effect-like loss.

    gamma l = j w tau + k sqrt(j f / f_ref): the sqrt(j w) term is the causal skin-effect loss of
    Johnson & Graham, "High-Speed Signal Propagation" (2003) sec. 3.7 (analytic in the right half
    s-plane); k is set so the loss at ``loss_f_hz`` is ``loss_db`` (Re sqrt(j) = 1/sqrt 2).
    """
    f = np.asarray(freqs_hz, dtype=float)
    k = np.sqrt(2.0) * loss_db / (20.0 * np.log10(np.e))
    gl = 2j * np.pi * f * delay_s + k * np.sqrt(1j * f / loss_f_hz)
    return line_from_gamma(gl, zdiff_ohm)


def shunt_c(freqs_hz: np.ndarray, c_f: float, r0_ohm: float = R0_DIFF_OHM) -> np.ndarray:
    """Capacitance ``c_f`` from each leg to ground: Y_d = j w C / 2.

    Shunt admittance 2-port: S11 = -Y R0/(2 + Y R0), S21 = 2/(2 + Y R0) (Pozar Table 4.2); with
    R0 = 100 ohm this is IEEE 802.3 eq. 93A-8 (C R0/2 = C x 50 ohm).
    """
    y = 1j * np.pi * np.asarray(freqs_hz, dtype=float) * c_f  # j w C / 2
    yr = y * r0_ohm
    return two_port(-yr / (2.0 + yr), 2.0 / (2.0 + yr))


def series_l(freqs_hz: np.ndarray, l_h: float, r0_ohm: float = R0_DIFF_OHM) -> np.ndarray:
    """Inductance ``l_h`` in series with each leg: Z_d = 2 j w L.

    Series impedance 2-port: S11 = Z/(Z + 2 R0), S21 = 2 R0/(Z + 2 R0) (Pozar Table 4.2).
    """
    z = 4j * np.pi * np.asarray(freqs_hz, dtype=float) * l_h
    return two_port(z / (z + 2.0 * r0_ohm), 2.0 * r0_ohm / (z + 2.0 * r0_ohm))


def renormalize(s: np.ndarray, z_new_ohm: float, r0_ohm: float = R0_DIFF_OHM) -> np.ndarray:
    """Re-reference a 2-port from r0 to ``z_new`` on both ports (e.g. TX/RX termination impedance).

    S' = (S - G)(I - G S)^-1 with G = (Z_new - R0)/(Z_new + R0) I (real reference impedances;
    Kurokawa, IEEE T-MTT 13(2), 1965; scikit-rf ``renormalize_s`` with s_def='power').
    """
    g = (z_new_ohm - r0_ohm) / (z_new_ohm + r0_ohm)
    eye = np.eye(2)
    return (s - g * eye) @ np.linalg.inv(eye - g * s)
