"""The 802.3dj (Annex 178A) COM link up to the Rx FFE input: grid, packages, filters, pulse responses.

Everything here is EQ independent except the CTLE, which :func:`ctle_dj` gives per setting. Sources:

* the COM time/frequency grid: one period of the frequency step, ``M`` samples per UI (93A.1.1; MATLAB
  COM and PyChOpMarg 3.4.0 ``COM.__init__``: t = 0 .. 1/f_step in steps of UI/M, f = 0 .. M f_b / 2);
* the device package (93A.1.2, P802.3dj Table 178-14 class A): per leg, a die ladder of shunt C_d /
  series L_s sections, a shunt C_b, the package line segments (93A-9..93A-14) and a shunt C_p at the ball;
  the receiver's is the mirror *element order* C_p, line segments, C_b, die ladder (PyChOpMarg 3.4.0
  ``COM._pkg_models``: the line segments keep their order, die side first at the TX, ball side first at
  the RX). R_d = R_0, so the voltage transfer function of the cascade is its S21 (93A-18/93A-19, Gamma = 0);
  with R_0 != 50 ohm the channel is first re-referenced to 2 R_0 (178A-4);
* the end-to-end transfer function H_t H_21 H_r (TX rise time 93A-46, Butterworth AFE 93A-20) formed at
  the channel's own frequencies, moved to the COM grid by MATLAB COM's ``interp_Sparam`` policies
  (magnitude linear, extended to DC by a linear fit of the first 10 points and above the data by a linear
  fit of the upper half, clamped to [eps, |H(f_max)|]; unwrapped phase linear, extrapolated from the end
  segments), and its impulse response truncated after the last sample above 1e-3 of its peak (MATLAB COM
  ``s21_to_impulse_DC``; PyChOpMarg 3.4.0 ``COM._add_pkg_vtf``);
* the CTLE of 178A (178A-14's H_ctf, two stages with zeros f_z1, f_z2 and poles f_p1, f_p2, f_p3):
  (g1 + j f/f_z1)(g2 + j f/f_z2) / ((1 + j f/f_p1)(1 + j f/f_p2)(1 + j f/f_p3)), g = 10^(g_DC/20);
* pulse responses: the inverse FFT of X_sinc H, X_sinc = M sinc(f T) (a 1-UI rectangle, 93A-24),
  times the TX amplitude (A_v, A_fe, A_ne).

Units: Hz, s, V. Arrays on the COM grid have ``n_f = n_t / 2 + 1`` points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqtune.arrays import ComplexArray, FloatArray
from eqtune.channel.elements import renormalize
from eqtune.channel.model import Channel
from eqtune.channel.package import PackageParams, cascade, line_sparams, series_l_sparams, shunt_c_sparams
from eqtune.errors import InputError
from eqtune.serdes.dj_profile import DjProfile

IR_TRUNCATE_REL = 1e-3  # impulse response cut after its last sample above this fraction of its peak


@dataclass(frozen=True)
class DjGrid:
    """The COM grid: ``n_t`` time samples of ``dt_s`` (``samples_per_ui`` per UI), ``freqs_hz`` its rfft bins."""

    freqs_hz: FloatArray
    n_t: int
    dt_s: float
    ui_s: float
    samples_per_ui: int

    @property
    def n_ui(self) -> int:
        return self.n_t // self.samples_per_ui


def dj_grid(baud_gbd: float, samples_per_ui: int, fstep_hz: float) -> DjGrid:
    """t = 0 .. 1/f_step (exclusive) in steps of UI/M; f = 0 .. M f_b / 2 in steps of f_step (module docstring)."""
    ui = 1e-9 / baud_gbd
    dt = ui / samples_per_ui
    n_t = len(np.arange(0.0, 1.0 / fstep_hz, dt))
    if n_t % 2 or n_t % samples_per_ui:
        raise InputError(f"frequency step {fstep_hz / 1e6:g} MHz gives {n_t} samples, not a whole even number of "
                         "UI: use a step that divides the baud rate")
    f = np.arange(n_t // 2 + 1) / (n_t * dt)
    return DjGrid(freqs_hz=f, n_t=n_t, dt_s=dt, ui_s=ui, samples_per_ui=samples_per_ui)


def tx_rise_filter(f: FloatArray, rise_ps: float) -> FloatArray:
    """93A-46: H_t(f) = exp(-2 (pi f T_r / 1.6832)^2), f in GHz, T_r in ns."""
    x = np.pi * (f / 1e9) * (rise_ps / 1e3) / 1.6832
    return np.asarray(np.exp(-2.0 * x**2), dtype=float)


def afe_filter(f: FloatArray, fr_hz: float) -> ComplexArray:
    """93A-20: 4th-order Butterworth, H_r = 1 / (1 - 3.414214 u^2 + u^4 + j 2.613126 (u - u^3)), u = f / f_r."""
    u = f / fr_hz
    out: ComplexArray = np.asarray(1.0 / (1 - 3.414214 * u**2 + u**4 + 2.613126j * (u - u**3)), dtype=complex)
    return out


def ctle_dj(f: FloatArray, gdc_db: float, gdc2_db: float, prof: DjProfile) -> ComplexArray:
    """The 178A CTLE at one (g_DC, g_DC2) setting (module docstring)."""
    c = prof.ctle
    g1, g2 = 10 ** (gdc_db / 20.0), 10 ** (gdc2_db / 20.0)
    jf = 1j * f / 1e9
    out: ComplexArray = ((g1 + jf / c["fz1_ghz"]) * (g2 + jf / c["fz2_ghz"])
                         / ((1 + jf / c["fp1_ghz"]) * (1 + jf / c["fp2_ghz"]) * (1 + jf / c["fp3_ghz"])))
    return out


def _line_params(prof: DjProfile) -> PackageParams:
    p = prof.package
    return PackageParams(tau_ns_per_mm=p["tau_ns_per_mm"], gamma0_per_mm=p["gamma0_per_mm"], a1=p["a1"], a2=p["a2"])


def package_sparams(f: FloatArray, prof: DjProfile, zp1_mm: float, side: str) -> np.ndarray:
    """(n, 2, 2) package of ``side`` ("tx": die -> ball; "rx": ball -> die), per leg at R_0 (module docstring)."""
    p, r0 = prof.package, prof.r0_ohm
    die = None
    for cd, ls in zip(p["cd_pf"], p["ls_nh"]):
        seg = cascade(shunt_c_sparams(f, cd * 1e-12, r0), series_l_sparams(f, ls * 1e-9, r0))
        die = seg if die is None else cascade(die, seg)
    bump = shunt_c_sparams(f, p["cb_pf"] * 1e-12, r0)
    die = bump if die is None else cascade(die, bump)
    lp = _line_params(prof)
    lines = None
    for zc, zp in zip(p["zc_ohm"], (zp1_mm, p["zp2_mm"])):
        seg = line_sparams(f, zp, zc, lp, r0)
        lines = seg if lines is None else cascade(lines, seg)
    ball = shunt_c_sparams(f, p["cp_pf"] * 1e-12, r0)
    if side == "tx":
        return cascade(die, cascade(lines, ball)) if lines is not None else cascade(die, ball)
    die_rx = die[:, ::-1, ::-1]
    return cascade(ball, cascade(lines, die_rx)) if lines is not None else cascade(ball, die_rx)


def _two_port(s21: ComplexArray, s11: ComplexArray | None = None, s22: ComplexArray | None = None) -> np.ndarray:
    s = np.zeros((len(s21), 2, 2), dtype=complex)
    s[:, 1, 0] = s[:, 0, 1] = s21
    if s11 is not None:
        s[:, 0, 0] = s11
    if s22 is not None:
        s[:, 1, 1] = s22
    return s


def packaged_vtf(fc: FloatArray, s: np.ndarray, prof: DjProfile, zp1_tx_mm: float, zp1_rx_mm: float) -> ComplexArray:
    """S21 of TX package -> channel -> RX package at the channel's frequencies (93A-18, R_d = R_0)."""
    if abs(prof.r0_ohm - 50.0) > 1e-12:
        s = renormalize(s, 2.0 * prof.r0_ohm)  # 178A-4: the channel at the devices' reference impedance
    tx = package_sparams(fc, prof, zp1_tx_mm, "tx")
    rx = package_sparams(fc, prof, zp1_rx_mm, "rx")
    out: ComplexArray = cascade(cascade(tx, s), rx)[:, 1, 0]
    return out


def _interp_extrap(x: FloatArray, y: FloatArray, xq: FloatArray) -> FloatArray:
    """Linear interpolation, linear extrapolation from the end segments."""
    yq = np.interp(xq, x, y)
    lo, hi = xq < x[0], xq > x[-1]
    yq[lo] = y[0] + (xq[lo] - x[0]) * (y[1] - y[0]) / (x[1] - x[0])
    yq[hi] = y[-1] + (xq[hi] - x[-1]) * (y[-1] - y[-2]) / (x[-1] - x[-2])
    return yq


def _trend_mean(x: FloatArray) -> float:
    """Mean of ``x`` without the values more than one standard deviation from its median."""
    return float(np.mean(x[np.abs(x - np.median(x)) < np.std(x, ddof=1)]))


def interp_transfer(h: ComplexArray, fin: FloatArray, fout: FloatArray) -> ComplexArray:
    """``h`` at ``fin`` onto ``fout`` by MATLAB COM's ``interp_Sparam`` policies (module docstring)."""
    eps = np.finfo(float).eps
    mag = np.maximum(np.abs(h), eps)
    fx, mx = fin, mag
    if fin[0] > 0:
        p = np.polyfit(fin[:10], mag[:10], 1)
        fx, mx = np.concatenate(([0.0], fx)), np.concatenate(([np.polyval(p, 0.0)], mx))
    if fin[-1] < fout[-1]:
        mid = int(np.floor(len(fin) / 2 + 0.5)) - 1
        p = np.polyfit(fin[mid:], mag[mid:], 1)
        top = min(max(float(np.polyval(p, fout[-1])), eps), float(mag[-1]))
        fx, mx = np.concatenate((fx, [fout[-1]])), np.concatenate((mx, [top]))
    mag_i = _interp_extrap(fx, mx, fout)
    ph = np.unwrap(np.angle(h))
    if fin[0] != 0:
        gd = -np.diff(ph) / np.diff(fin)
        lf = _trend_mean(gd[:50])
        for k in range(9, -1, -1):
            ph[k] = ph[k + 1] + lf * (fin[k + 1] - fin[k])
        ph_i = _interp_extrap(fin, ph, fout)
        hf = fout > fin[-1]
        if np.any(hf):
            last = int(np.argmax(hf)) - 1
            ph_i[hf] = ph_i[last] + (fout[hf] - fout[last]) * (-_trend_mean(gd[-51:]))
    else:
        ph_i = _interp_extrap(fin, ph, fout)
    out: ComplexArray = mag_i * np.exp(1j * ph_i)
    return out


def truncated_response(h: ComplexArray) -> ComplexArray:
    """``h`` with its impulse response cut after the last sample above IR_TRUNCATE_REL of its peak."""
    imp = np.fft.irfft(h)
    a = np.abs(imp)
    imp[int(np.nonzero(a > IR_TRUNCATE_REL * a.max())[0][-1]) + 1:] = 0.0
    out: ComplexArray = np.fft.rfft(imp)
    return out


@dataclass(frozen=True)
class DjPath:
    """One signal path on the COM grid: H_t H_21 H_r (truncated), its kind and TX amplitude (V)."""

    name: str
    kind: str            # "THRU", "FEXT" or "NEXT"
    h: ComplexArray
    amplitude_v: float


@dataclass(frozen=True)
class DjLink:
    """The EQ-independent link of one package case: the grid, H_r, the victim and aggressor paths."""

    grid: DjGrid
    h_r: ComplexArray
    xsinc: FloatArray
    victim: DjPath
    aggressors: tuple[DjPath, ...]
    zp1_mm: tuple[float, float]


def prepare_link(channel: Channel, prof: DjProfile, zp1_tx_mm: float, zp1_rx_mm: float, *,
                 samples_per_ui: int | None = None, fstep_hz: float | None = None) -> DjLink:
    """The paths of ``channel`` (thru and aggressors) with the packages of one case (module docstring)."""
    grid = dj_grid(prof.baud_gbd, samples_per_ui or prof.samples_per_ui,
                   fstep_hz or prof.frequency_step_ghz * 1e9)
    f, fc = grid.freqs_hz, np.asarray(channel.freqs_hz, dtype=float)
    fb = prof.baud_gbd * 1e9
    h_r = afe_filter(f, prof.fr_fb * fb)
    ht_c = tx_rise_filter(fc, prof.tx["rise_time_ps"])
    hr_c = afe_filter(fc, prof.fr_fb * fb)

    def path(name: str, kind: str, s: np.ndarray, amp: float) -> DjPath:
        vtf = packaged_vtf(fc, s, prof, zp1_tx_mm, zp1_rx_mm)
        # H_t and H_r stay in h (PyChOpMarg divides them out and multiplies them back: the same product)
        return DjPath(name, kind, truncated_response(interp_transfer(ht_c * vtf * hr_c, fc, f)), amp)

    tx = prof.tx
    victim = path(channel.name, "THRU", _two_port(channel.sdd21, channel.sdd11, channel.sdd22), tx["amplitude_v"])
    aggs = tuple(path(a.name, a.kind, _two_port(a.sdd21), a.amplitude_v if a.amplitude_v is not None else
                      (tx["amplitude_fe_v"] if a.kind == "FEXT" else tx["amplitude_ne_v"]))
                 for a in channel.aggressors)
    xsinc = grid.samples_per_ui * np.sinc(grid.ui_s * f)
    return DjLink(grid=grid, h_r=h_r, xsinc=xsinc, victim=victim, aggressors=aggs, zp1_mm=(zp1_tx_mm, zp1_rx_mm))


def pulse(link: DjLink, h: ComplexArray, amplitude_v: float) -> FloatArray:
    """The pulse response (n_t,) of a transfer function on the COM grid (93A-24), times the TX amplitude."""
    out: FloatArray = np.fft.irfft(link.xsinc * h, link.grid.n_t) * amplitude_v
    return out
