"""The 802.3dj (Annex 178A) joint TX FFE / CTLE search with an MMSE Rx FFE + DFE at every point.

178A's reference receiver search (178A.1.8; Healey & Hegde, Jan. 2024 [HH24], slide 11): for every CTLE
setting (g_DC, g_DC2) and every TX FFE of the sheet's grid (c0 = 1 - sum |c_k| >= c0_min), and for every
sampling time within +-UI/2 of the pulse peak, the MMSE Rx FFE + DFE (:func:`eqtune.eye.mmse.mmse_solve`,
178A-33..36) and its figure of merit 20 log10(R_LM / (L - 1) / sqrt(MSE)); the point with the best FOM wins
(the first of equal ones, in the sheet's order: g_DC, then g_DC2, then the TX taps, first tap slowest).

Every quantity the solve needs is a quadratic form of the TX taps c (K = 7 taps, delays 0..6 UI, as
93A-21) on sequences prepared once per CTLE setting and sampling phase phi, because the equalized
UI-sampled pulse is h = c * s_phi (a convolution):

* R = H'H + toeplitz(R_nn) / var_x (178A-33) with H'H = toeplitz(r_hh) and
  r_hh[k] = sum_ij c_i c_j r_s[k + i - j], r_s the autocorrelation of s_phi (:func:`eqtune.eye.mmse.toeplitz_gram`);
* the cursor and DFE rows of H: h[d + r - i] = sum_k c_k s_phi[d + r - i - k];
* R_nn (178A-17/18, :mod:`eqtune.eye.dj_noise`): RX noise (CTLE only), TX noise (178A-21/22: the pulse
  without TX FFE, so r_s itself times 10^(-SNR_TX/10)), jitter (178A-23: the slope sequence is c * j_phi,
  so a quadratic form of its autocorrelation, times var_x (A_DD^2 + sigma_RJ^2)), crosstalk (178A-20:
  each FEXT aggressor through the victim's TX FFE at the phase maximizing c' T_phi[0] c, its energy;
  NEXT aggressors without TX FFE).

So one CTLE setting costs a few inverse FFTs plus, per TX point, small tensor contractions and one batch
of (n_taps x n_taps) solves over the sampling phases. The pulse of a TX tap delayed by k UI is the base
pulse rolled by k M samples, exactly what the frequency-domain delay gives on the periodic COM record.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from eqtune.arrays import ComplexArray, FloatArray, IntArray
from eqtune.errors import InputError
from eqtune.eye.dj_link import DjLink, pulse
from eqtune.eye.mmse import mmse_solve, pam_symbol_variance, toeplitz_gram
from eqtune.serdes.dj_profile import DjProfile
from eqtune.serdes.knobs import TX_C1, TX_C2, TX_CM1, TX_CM2, TX_CM3

TX_TAP_NAMES = (TX_CM3, TX_CM2, TX_CM1, TX_C1, TX_C2, "tx_c3")  # c(-3)..c(3) without c(0)
N_TX = 7          # TX FFE taps c(-3)..c(3), delays 0..6 UI
COMBO_CHUNK = 128  # TX points per vectorized pass


def grid_values(lo: float, hi: float, step: float) -> list[float]:
    """A sheet's [min, max, step] from ``hi`` down to ``lo`` (0 dB first, the sheets' order); one value when
    the step is 0. Counted as round((max - min) / step) + 1 values, so rounding never adds one past max."""
    if not step:
        return [float(hi)]
    n = int(round((hi - lo) / step)) + 1
    return [float(hi - step * k) for k in range(n)]


def tap_values(lo: float, hi: float, step: float) -> list[float]:
    """A TX tap's [min, max, step] from ``min`` up (step 0: the tap is not swept and stays 0)."""
    if not step:
        return [0.0]
    n = int(round((hi - lo) / step)) + 1
    return [float(lo + step * k) for k in range(n)]


def tx_grid(prof: DjProfile) -> FloatArray:
    """(B, 7) TX FFE taps c(-3)..c(3) of the sheet's grid with c0 = 1 - sum |c_k| >= c0_min, in grid order
    (first tap slowest); the all-zero point first when the grid lacks it (the search always tries it)."""
    taps = prof.tx["taps"]
    unknown = sorted(set(taps) - set(TX_TAP_NAMES))
    if unknown:
        raise InputError(f"profile {prof.name!r}: unknown TX tap {unknown[0]!r}; use {', '.join(TX_TAP_NAMES)}")
    ranges = [tap_values(*taps[n]) if n in taps else [0.0] for n in TX_TAP_NAMES]
    rows = []
    for combo in itertools.product(*ranges):
        c0 = 1.0 - float(np.abs(combo).sum())
        if c0 >= prof.tx["c0_min"] - 1e-12:
            rows.append([*combo[:3], c0, *combo[3:]])
    out = np.array(rows, dtype=float).reshape(-1, N_TX)
    if not np.any(np.all(np.delete(out, 3, axis=1) == 0.0, axis=1)):
        out = np.vstack([[0, 0, 0, 1.0, 0, 0, 0], out])
    return out


def ctle_settings(prof: DjProfile) -> list[tuple[float, float]]:
    """(g_DC, g_DC2) in the search order: g_DC outer, each from 0 dB down."""
    c = prof.ctle
    return [(a, b) for a in grid_values(*c["gdc_db"]) for b in grid_values(*c["gdc2_db"])]


@dataclass(frozen=True)
class RxConfig:
    """The 178A receiver of a profile: FFE of ``n_taps`` (``n_pre`` before the cursor), ``n_dfe`` DFE taps."""

    n_taps: int
    n_pre: int
    b_min: FloatArray
    b_max: FloatArray
    w_min: FloatArray
    w_max: FloatArray
    var_x: float
    levels: int
    rlm: float

    @property
    def n_dfe(self) -> int:
        return len(self.b_min)

    @classmethod
    def from_profile(cls, prof: DjProfile) -> RxConfig:
        lo, hi = prof.ffe_limits()
        return cls(n_taps=prof.ffe.n_taps, n_pre=prof.ffe.n_pre, b_min=np.array(prof.b_min),
                   b_max=np.array(prof.b_max), w_min=lo, w_max=hi, var_x=pam_symbol_variance(prof.levels),
                   levels=prof.levels, rlm=float(prof.noise["rlm"]))


def _autocorr_lags(x: FloatArray, max_lag: int) -> FloatArray:
    """Linear autocorrelation sum_n x[n] x[n + m] of the rows of ``x`` (P, N) at lags -max_lag..max_lag:
    (P, 2 max_lag + 1), by direct sums (a few lags of long rows: cheaper and exact)."""
    n = x.shape[-1]
    pos = np.stack([np.einsum("pn,pn->p", x[:, :n - k], x[:, k:]) for k in range(max_lag + 1)], axis=-1)
    out: FloatArray = np.concatenate([pos[:, :0:-1], pos], axis=-1)
    return out


def _lag_tensor(r: FloatArray, max_lag: int, n_lags: int) -> FloatArray:
    """T[p, k, i, j] = r[p, k + i - j] for k < n_lags, i, j < 7 (r indexed from -max_lag)."""
    k = np.arange(n_lags)[:, None, None] + np.arange(N_TX)[None, :, None] - np.arange(N_TX)[None, None, :]
    out: FloatArray = r[:, k + max_lag]
    return out


def ui_phases(p: FloatArray, m: int) -> FloatArray:
    """(M, n_ui) samples of ``p`` at each phase 0..M-1 (whole UIs of the record)."""
    n_ui = p.size // m
    out: FloatArray = p[:n_ui * m].reshape(n_ui, m).T.copy()
    return out


def slope_phases(p: FloatArray, m: int) -> FloatArray:
    """(M, n_ui) central differences at every UI sample of each phase, V per UI (178A-23), zero-padded ends."""
    padded = np.pad(p, 1)
    n_ui = p.size // m
    idx = np.arange(m)[:, None] + m * np.arange(n_ui)[None, :]
    out: FloatArray = (padded[idx + 2] - padded[idx]) * (m / 2.0)
    return out


@dataclass(frozen=True)
class CtleBasis:
    """The CTLE as a combination of fixed parts, so a setting costs no inverse FFT.

    H_ctf = (g1 + j f/f_z1)(g2 + j f/f_z2) / D(f) = (g1 g2 + g1 j f/f_z2 + g2 j f/f_z1 + (j f)^2/(f_z1 f_z2)) / D
    (D the three poles), so every pulse is g1 g2 p_0 + g1 p_1 + g2 p_2 + p_3 with the four p_i the pulses of
    the four terms (the inverse FFT is linear), and the RX noise autocorrelation (|H_r H_ctf|^2, quadratic in
    the terms) a combination of the 10 autocorrelations of term pairs."""

    victim: FloatArray            # (4, n_t)
    aggressors: list[FloatArray]  # per aggressor (4, n_t)
    rx_noise: FloatArray          # (4, 4, n_taps): autocorrelation of Re(term_i conj(term_j)) |H_r / D|^2


def _ctle_terms(f: FloatArray, prof: DjProfile) -> ComplexArray:
    c = prof.ctle
    jf = 1j * f / 1e9
    den = (1 + jf / c["fp1_ghz"]) * (1 + jf / c["fp2_ghz"]) * (1 + jf / c["fp3_ghz"])
    out: ComplexArray = np.stack([np.ones_like(jf), jf / c["fz2_ghz"], jf / c["fz1_ghz"],
                                  jf * jf / (c["fz1_ghz"] * c["fz2_ghz"])]) / den
    return out


def ctle_basis(link: DjLink, prof: DjProfile, n_taps: int) -> CtleBasis:
    """The four basis pulses of every path and the RX noise pair terms (:class:`CtleBasis`)."""
    g = link.grid
    terms = _ctle_terms(g.freqs_hz, prof)
    vic = np.stack([pulse(link, link.victim.h * t, link.victim.amplitude_v) for t in terms])
    aggs = [np.stack([pulse(link, a.h * t, a.amplitude_v) for t in terms]) for a in link.aggressors]
    rxn = np.zeros((4, 4, n_taps))
    eta0 = prof.noise["eta0_v2_per_ghz"]
    for i in range(4):
        for j in range(i, 4):
            # |H_r sum_i a_i T_i|^2 = sum_ij a_i a_j Re(T_i conj T_j) |H_r|^2 (a_i real)
            cross = np.real(terms[i] * np.conj(terms[j])) * np.abs(link.h_r) ** 2
            r = _rx_autocorr(eta0, cross, g.dt_s, g.samples_per_ui, n_taps)
            rxn[i, j] = rxn[j, i] = r
    return CtleBasis(victim=vic, aggressors=aggs, rx_noise=rxn)


def _rx_autocorr(eta0: float, gain2: FloatArray, dt: float, m: int, n_lags: int) -> FloatArray:
    """:func:`eqtune.eye.dj_noise.rx_noise_autocorrelation` for a real |H|^2 (may be negative: a pair term)."""
    n = 2 * (len(gain2) - 1)
    r = np.fft.irfft(eta0 / 2 * 1e-9 * gain2, n) / dt
    out: FloatArray = r[::m][:n_lags]
    return out


def ctle_weights(gdc_db: float, gdc2_db: float) -> FloatArray:
    """The weights (g1 g2, g1, g2, 1) of the basis terms at one setting."""
    g1, g2 = 10 ** (gdc_db / 20.0), 10 ** (gdc2_db / 20.0)
    return np.array([g1 * g2, g1, g2, 1.0])


@dataclass(frozen=True)
class CtleSetup:
    """What one CTLE setting's TX points share (see the module docstring)."""

    gdc_db: float
    gdc2_db: float
    s: FloatArray          # (M, n_ui) victim base (no TX FFE, Rx FFE cursor delay n_pre UI) per phase
    t_h: FloatArray        # (M, n_taps, 7, 7) lag tensor of s
    t_j: FloatArray        # (M, n_taps, 7, 7) lag tensor of the slope sequences
    t_fext: list[FloatArray]  # per FEXT aggressor, (M, n_taps, 7, 7)
    rn_fixed: FloatArray   # (M, n_taps): RX + TX + NEXT noise autocorrelation (V^2)
    p_win: FloatArray      # (7, W) the oversampled pre-FFE pulse around its peak, per TX tap
    win_start: int         # sample index of p_win[:, 0]


def prepare_ctle(link: DjLink, prof: DjProfile, rx: RxConfig, gdc_db: float, gdc2_db: float,
                 basis: CtleBasis | None = None) -> CtleSetup:
    """Pulses and lag tensors of one CTLE setting (module docstring)."""
    g, nz = link.grid, prof.noise
    m, n = g.samples_per_ui, rx.n_taps
    basis = basis or ctle_basis(link, prof, n)
    a = ctle_weights(gdc_db, gdc2_db)
    p0 = a @ basis.victim
    p0d = np.roll(p0, rx.n_pre * m)  # the Rx FFE's cursor tap delays the pulse by n_pre UI
    s = ui_phases(p0d, m)
    max_lag = n + N_TX
    r_s = _autocorr_lags(s, max_lag)
    r_j = _autocorr_lags(slope_phases(p0d, m), max_lag)
    rn = np.zeros((m, n))
    rn += np.einsum("i,ijk,j->k", a, basis.rx_noise, a)[None, :]               # [HH24] eta_0/2 |H_r H_ctf|^2
    rn += 10 ** (-nz["snr_tx_db"] / 10) * r_s[:, max_lag:max_lag + n]           # 178A-21/22: no var_x
    t_fext = []
    for agg, pb in zip(link.aggressors, basis.aggressors):
        ua = ui_phases(a @ pb, m)
        r_a = _autocorr_lags(ua, max_lag)
        if agg.kind == "FEXT":
            t_fext.append(_lag_tensor(r_a, max_lag, n))
        else:  # NEXT: no TX FFE; its phase maximizes its own energy (178A-20)
            best = int(np.argmax(r_a[:, max_lag]))
            rn += rx.var_x * r_a[best, max_lag:max_lag + n][None, :]
    ipk = int(np.argmax(p0d))
    start = ipk - 2 * m
    t = start + np.arange(10 * m)
    p_win = np.stack([p0d[(t - k * m) % p0d.size] for k in range(N_TX)])
    return CtleSetup(gdc_db=gdc_db, gdc2_db=gdc2_db, s=s, t_h=_lag_tensor(r_s, max_lag, n),
                     t_j=_lag_tensor(r_j, max_lag, n), t_fext=t_fext, rn_fixed=rn, p_win=p_win, win_start=start)


@dataclass(frozen=True)
class PointSolutions:
    """The best sampling time of each TX point of one CTLE setting and the MMSE receiver there."""

    fom_db: FloatArray     # (B,)
    sample_index: IntArray  # (B,) cursor sample of the pre-FFE pulse (with the n_pre UI delay)
    ffe: FloatArray        # (B, n_taps), equalized cursor 1
    dfe: FloatArray        # (B, n_dfe)
    mse: FloatArray        # (B,)


def solve_points(cs: CtleSetup, taps: FloatArray, prof: DjProfile, rx: RxConfig, m: int,
                 ts_half: int) -> PointSolutions:
    """MMSE at every TX point of ``taps`` (B, 7) and every sampling time peak-``ts_half``..peak+``ts_half``."""
    nz = prof.noise
    b = len(taps)
    peak = cs.win_start + np.argmax(taps @ cs.p_win, axis=-1)                      # (B,)
    offs = np.arange(-ts_half, ts_half + 1)
    ts = peak[:, None] + offs[None, :]                                            # (B, O)
    phase, dh = ts % m, ts // m
    # R_nn per TX point and phase: fixed terms + jitter + FEXT (at each aggressor's own best phase)
    rn = cs.rn_fixed[None, :, :] + rx.var_x * (nz["a_dd_ui"] ** 2 + nz["sigma_rj_ui"] ** 2) * np.einsum(
        "bi,pkij,bj->bpk", taps, cs.t_j, taps)
    for t_a in cs.t_fext:
        energy = np.einsum("bi,pij,bj->bp", taps, t_a[:, 0], taps)
        best = np.argmax(energy, axis=-1)
        rn += rx.var_x * np.einsum("bi,bkij,bj->bk", taps, t_a[best], taps)[:, None, :]
    r_hh = np.einsum("bi,pkij,bj->bpk", taps, cs.t_h, taps)                        # (B, M, n)
    bi = np.arange(b)[:, None]
    r_full = toeplitz_gram(r_hh[bi, phase], rn[bi, phase], rx.var_x)               # (B, O, n, n)
    # H rows d..d+n_dfe (d = dh + n_pre): h[u] = sum_k c_k s_phi[u - k] on the UI window the rows use
    u = (dh + rx.n_pre)[:, :, None, None] + np.arange(rx.n_dfe + 1)[:, None] - np.arange(rx.n_taps)[None, :]
    u_lo = int(u.min())
    width = int(u.max()) - u_lo + 1
    n_ui = cs.s.shape[1]
    src = u_lo + np.arange(width)[None, :] - np.arange(N_TX)[:, None]                # (7, W)
    s_win = np.where((src >= 0) & (src < n_ui), cs.s[:, np.clip(src, 0, n_ui - 1)], 0.0)   # (M, 7, W)
    h_win = np.einsum("bk,pkw->bpw", taps, s_win)                                  # (B, M, W)
    rows = h_win[np.arange(b)[:, None, None, None], phase[:, :, None, None], u - u_lo]   # (B, O, R, n)
    sol = mmse_solve(r_full, rows[:, :, 0], rows[:, :, 1:], n_pre=rx.n_pre, var_x=rx.var_x, b_min=rx.b_min,
                     b_max=rx.b_max, w_min=rx.w_min, w_max=rx.w_max, rlm=rx.rlm, levels=rx.levels)
    pick = np.argmax(sol.fom_db, axis=-1)                                          # first of equal ones
    ar = np.arange(b)
    return PointSolutions(fom_db=sol.fom_db[ar, pick], sample_index=ts[ar, pick], ffe=sol.ffe[ar, pick],
                          dfe=sol.dfe[ar, pick], mse=sol.mse[ar, pick])


@dataclass(frozen=True)
class SearchResult:
    """The winning EQ of a 178A search and its MMSE receiver."""

    gdc_db: float
    gdc2_db: float
    tx_taps: FloatArray   # (7,) c(-3)..c(3)
    fom_db: float
    sample_index: int     # cursor sample of the pre-FFE pulse (with the n_pre UI delay)
    ffe: FloatArray       # (n_taps,) equalized cursor 1
    dfe: FloatArray
    mse: float
    points: int
    per_ctle: tuple[SearchResult, ...] = ()  # the best point of each CTLE setting (for re-ranking)


def search(link: DjLink, prof: DjProfile, *, progress: Callable[[int], None] | None = None) -> SearchResult:
    """The full 178A search over the profile's grid (module docstring). ``progress(points_done)``."""
    rx = RxConfig.from_profile(prof)
    taps = tx_grid(prof)
    m = link.grid.samples_per_ui
    done = 0
    basis = ctle_basis(link, prof, rx.n_taps)
    per_ctle: list[SearchResult] = []
    for gdc, gdc2 in ctle_settings(prof):
        cs = prepare_ctle(link, prof, rx, gdc, gdc2, basis)
        here: SearchResult | None = None
        for lo in range(0, len(taps), COMBO_CHUNK):
            part = taps[lo:lo + COMBO_CHUNK]
            ps = solve_points(cs, part, prof, rx, m, m // 2)
            k = int(np.argmax(ps.fom_db))
            if here is None or ps.fom_db[k] > here.fom_db:
                here = SearchResult(gdc_db=gdc, gdc2_db=gdc2, tx_taps=part[k].copy(), fom_db=float(ps.fom_db[k]),
                                    sample_index=int(ps.sample_index[k]), ffe=ps.ffe[k].copy(),
                                    dfe=ps.dfe[k].copy(), mse=float(ps.mse[k]), points=0)
            done += len(part)
            if progress is not None:
                progress(done)
        assert here is not None
        per_ctle.append(here)
    best = per_ctle[int(np.argmax([r.fom_db for r in per_ctle]))]  # the first of equal ones
    return replace(best, points=done, per_ctle=tuple(per_ctle))
