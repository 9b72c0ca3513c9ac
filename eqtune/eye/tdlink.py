"""The bit-by-bit simulator's own link: pulse, sampling phase, DFE and noise built from the channel.

``simulate_link`` checks the statistical eye without reusing the engine's pulse or noise:
everything the simulator needs is computed here from the channel's S-parameters, the SerDes profile and
the EQ point, with formulas written out again from the standard rather than imported from the engine:

* transfer function, on the channel's own frequency grid (no resampling; the grid is extended with zeros
  above the data under a raised-cosine taper over its last 10 %):
  H = H_pkg+channel (93A-18 cascade of ``eqtune.channel.package``, the package model checked against MATLAB
  COM 3.70 to 1e-6) x H_t (93A-46) x H_ctf (802.3ck two-stage CTLE, 120F) x H_r (93A-20);
* pulse: inverse FFT (no impulse truncation), convolved with a 1-UI box-car, the TX FFE applied as shifted
  copies (93A-21), times A_v;
* sampling phase: Mueller-Muller (93A-25/26) searched over +-0.5 UI around the equalized pulse's peak, or the
  peak itself (``sampling="peak"``);
* DFE: zero-forcing within [b_min, b_max] (93A-26/27) at that phase, plus floating tap groups (contiguous
  groups placed where the tail's magnitude is largest, |b| <= the profile's limit) for KR;
* noise: sigma_TX^2 = h(0)^2 10^(-SNR_TX/10) as MATLAB COM applies 93A-30 (or sigma_X^2 10^(-SNR_TX/10) sum_n h(n)^2, tx_noise="spectrum"), sigma_RX^2 = eta_0 int |H_ctf H_r|^2 df
  (93A-35); jitter (A_DD dual-Dirac + sigma_RJ) applied by the simulator as transmitter jitter.

Crosstalk is not simulated (the simulator has no aggressor sources): compare against the engine without
aggressors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqtune.channel.model import Channel, Modulation
from eqtune.channel.package import cascade, com_package_sparams, flip_ports
from eqtune.eye import timedomain as td
from eqtune.serdes.knobs import CTLE_GDC, CTLE_GDC2, TX_TAP_OFFSETS
from eqtune.serdes.profile import SerdesProfile, load_profile


@dataclass(frozen=True)
class SimLink:
    """The simulator's link at one EQ point (V, samples)."""

    pulse_v: np.ndarray
    samples_per_ui: int
    cursor_index: int
    dfe_taps_v: np.ndarray  # fixed taps then the floating span (zeros outside the chosen groups)
    sigma_noise_v: float
    a_dd_ui: float
    sigma_rj_ui: float
    modulation: Modulation
    rlm: float
    freqs_hz: np.ndarray | None = None  # the simulator's frequency grid (Hz) and receiver filter on it
    h_rx: np.ndarray | None = None  # CTLE x Butterworth (the RX noise's shaping, 93A-35)


def _h_t(f: np.ndarray, tr_s: float) -> np.ndarray:
    """93A-46 TX rise-time filter, Gaussian, |H| only (a pure delay does not change the eye)."""
    return np.exp(-2.0 * (np.pi * f * tr_s / 1.6832) ** 2)


def _h_r(f: np.ndarray, fr_hz: float) -> np.ndarray:
    """93A-20 fourth-order Butterworth receiver filter."""
    x = f / fr_hz
    return 1.0 / (1.0 - 3.414214 * x**2 + x**4 + 2.613126j * (x - x**3))


def _h_ctf(f: np.ndarray, gdc_db: float, gdc2_db: float, fz: float, fp1: float, fp2: float,
           flf: float | None) -> np.ndarray:
    """802.3ck CTLE (120F / 163A form of 93A-22): [(G + j f/fz) / ((1 + j f/fp1)(1 + j f/fp2))] x
    [(G2 + j f/fLF) / (1 + j f/fLF)], G = 10^(gDC/20), G2 = 10^(gDC2/20)."""
    g, g2 = 10 ** (gdc_db / 20.0), 10 ** (gdc2_db / 20.0)
    h = (g + 1j * f / fz) / ((1 + 1j * f / fp1) * (1 + 1j * f / fp2))
    if flf:
        h = h * (g2 + 1j * f / flf) / (1 + 1j * f / flf)
    return h


def _mm_cursor(p: np.ndarray, m: int, b_min1: float | None, b_max1: float | None) -> int:
    """93A-25/26 over +-M/2 samples around the peak: smallest |h(-1) - (h(1) - b1 h(0))|, exact (< 1 mV)
    solutions first, the last one at or before the peak (MATLAB COM 3.70 as in PyChOpMarg 3.4.0)."""
    pk = int(np.argmax(p))
    cands = range(max(m, pk - m // 2), min(len(p) - m, pk + m - m // 2))
    exact, best, best_res = [], pk, np.inf
    for i in cands:
        if p[i] <= 0:
            continue
        b1 = 0.0 if b_max1 is None else min(b_max1, max(b_min1, p[i + m] / p[i]))
        res = abs(p[i - m] - (p[i + m] - b1 * p[i]))
        if res < 1e-3:
            exact.append(i)
        elif res < best_res:
            best, best_res = i, res
    if exact:
        pre = [i for i in exact if i <= pk]
        return pre[-1] if pre else exact[0]
    return best


def _floating(tail: np.ndarray, h0: float, groups: int, per: int, limit: float) -> np.ndarray:
    """Feedback (V) of ``groups`` non-overlapping groups of ``per`` consecutive taps on ``tail``, placed one
    by one where the remaining |tail| sum is largest, each tap clip(h/h0, -limit, limit) h0."""
    fb = np.zeros_like(tail)
    free = np.ones(len(tail), dtype=bool)
    for _ in range(groups):
        best, start = -1.0, None
        for s in range(0, len(tail) - per + 1):
            if free[s:s + per].all():
                e = float(np.abs(tail[s:s + per]).sum())
                if e > best:
                    best, start = e, s
        if start is None:
            break
        sl = slice(start, start + per)
        fb[sl] = np.clip(tail[sl] / h0, -limit, limit) * h0
        free[sl] = False
    return fb


def build_link(channel: Channel, profile: str | SerdesProfile | None, point: dict[str, float], *, samples_per_ui: int = 32,
               package_case: int | None = None, sampling: str = "mm", truncate_rel: float = 0.0,
               cursor_time_s: float | None = None, tx_noise: str = "cursor", tr_delay: bool = False,
               delay_s: float = 0.0) -> SimLink:
    """The serdes-direction link (host TX FFE -> packages + channel -> CTLE + Butterworth -> DFE) of
    ``point`` (every TX tap of the profile and ``ctle_gdc``/``ctle_gdc2`` given), built from scratch.

    ``cursor_time_s``: sample at this time after the symbol's launch (the channel's own time axis, no
    filter delay added) instead of the simulator's own MM phase, e.g. another tool's sampling instant;
    ``truncate_rel`` > 0 truncates the impulse at that fraction of its peak (MATLAB COM does at 1e-3).
    ``tr_delay``: give the T_r filter MATLAB COM's 3 T_r delay (../shared/com-golden README), so that the
    time axis is the engine's and ``cursor_time_s`` falls on the same sample (3 T_r is not a whole number of
    samples: 38.25 at 7.5 ps and 32 per UI).
    ``tx_noise``: the 93A-30 TX noise as MATLAB COM applies it, on the sampled cursor (``"cursor"``:
    sigma_TX^2 = h(0)^2 10^(-SNR_TX/10), the COM default), or on every cursor (``"spectrum"``:
    sigma_X^2 10^(-SNR_TX/10) sum_n h(n)^2). ``delay_s``: a pure delay exp(-j 2 pi f delay) on the whole link,
    to put the pulse on another tool's time axis to a fraction of a sample (e.g. the engine's, which
    carries MATLAB COM's 3 T_r delay; ``cursor_time_s`` is then read on that axis)."""
    if tx_noise not in ("cursor", "spectrum"):
        raise ValueError(f"tx_noise {tx_noise!r}: use 'cursor' or 'spectrum'")
    prof = load_profile(profile)
    m = int(samples_per_ui)
    fb = prof.baud_gbd * 1e9
    fc = np.asarray(channel.freqs_hz, dtype=float)
    df = float(fc[1] - fc[0])
    n_fft = int(round(fb * m / df))
    n_fft += n_fft % 2
    f = np.arange(n_fft // 2 + 1) * df
    case = prof.package_case if package_case is None else int(package_case)
    h_ch = np.asarray(channel.sdd21, dtype=complex)
    if case:
        s = np.zeros((len(fc), 2, 2), dtype=complex)
        s[:, 1, 0] = s[:, 0, 1] = channel.sdd21
        if channel.sdd11 is not None:
            s[:, 0, 0] = channel.sdd11
        if channel.sdd22 is not None:
            s[:, 1, 1] = channel.sdd22
        tx = com_package_sparams(fc, case=case, side="tx", zp1_mm=prof.package_zp1_mm("tx", case))
        rx = flip_ports(com_package_sparams(fc, case=case, side="rx", zp1_mm=prof.package_zp1_mm("rx", case)))
        h_ch = cascade(cascade(tx, s), rx)[:, 1, 0]  # R_d = R_0: S21 is the voltage transfer (93A-19)
    h = np.zeros(len(f), dtype=complex)
    n = min(len(fc), len(f))
    taper = np.ones(n)
    k0 = int(0.9 * n)
    taper[k0:] = 0.5 * (1 + np.cos(np.pi * np.arange(n - k0) / (n - k0)))
    h[:n] = h_ch[:n] * taper
    c = prof.rx.ctle
    gdc, gdc2 = float(point[CTLE_GDC]), float(point.get(CTLE_GDC2, 0.0))
    h_eq = _h_ctf(f, gdc, gdc2, c.fz_ghz * 1e9, c.fp1_ghz * 1e9, c.fp2_ghz * 1e9,
                  c.flf_ghz * 1e9 if c.flf_ghz else None) * _h_r(f, prof.rx.fr_fb * fb)
    h_t = _h_t(f, prof.tx.rise_time_ps * 1e-12)
    if tr_delay:
        h_t = h_t * np.exp(-2j * np.pi * f * 3.0 * prof.tx.rise_time_ps * 1e-12)
    delay = np.exp(-2j * np.pi * f * delay_s) if delay_s else 1.0
    imp = np.fft.irfft(h * h_t * h_eq * delay, n_fft)
    if truncate_rel > 0:  # diagnostics: MATLAB COM's truncation of the impulse at a fraction of its peak
        above = np.nonzero(np.abs(imp) > truncate_rel * np.abs(imp).max())[0]
        imp[: above[0]] = 0.0
        imp[above[-1] + 1:] = 0.0
    pulse = np.convolve(imp, np.ones(m))[:n_fft]  # response to one UI of level 1
    taps = {TX_TAP_OFFSETS[k]: float(point[k]) for k in prof.tx.taps}
    taps[0] = 1.0 - sum(abs(v) for v in taps.values())
    p = np.zeros_like(pulse)
    for d, cval in taps.items():
        p += cval * np.roll(pulse, d * m)  # the record is periodic (and the pulse is short in it)
    p *= prof.tx.amplitude_v
    dfe = prof.rx.dfe
    nb = len(dfe.b_max)
    if cursor_time_s is not None:
        k = int(round(cursor_time_s * fb * m))
    elif sampling == "mm":
        k = _mm_cursor(p, m, dfe.b_min[0] if nb else None, dfe.b_max[0] if nb else None)
    elif sampling == "peak":
        k = int(np.argmax(p))
    else:
        raise ValueError(f"sampling {sampling!r}: use 'mm' or 'peak'")
    h0 = float(p[k])
    post = p[k + m * np.arange(1, max(nb, dfe.float_span_ui if dfe.float_groups else 0) + 1)]
    fbk = np.zeros(len(post))
    if nb:
        fbk[:nb] = np.clip(post[:nb] / h0, dfe.b_min, dfe.b_max) * h0
    if dfe.float_groups and len(post) > nb:
        fbk[nb:] = _floating(post[nb:], h0, dfe.float_groups, dfe.float_taps_per_group, dfe.float_b_max)
    # noise: 93A-30 (TX, over every cursor at the sampling phase) and 93A-35 (RX, eta_0 through CTLE + H_r)
    sigma_x2 = float(np.mean(td.pam_levels(prof.modulation, 1.0) ** 2))  # 93A: sigma_X^2 = (L+1)/(3(L-1))
    cur = p[k % m::m]
    snr_tx = 10 ** (-prof.noise.snr_tx_db / 10)
    s_tx2 = snr_tx * (h0**2 if tx_noise == "cursor" else sigma_x2 * float(np.sum(cur**2)))
    s_rx2 = prof.noise.eta0_v2_per_ghz * float(np.sum(np.abs(h_eq) ** 2)) * df / 1e9
    return SimLink(pulse_v=p, samples_per_ui=m, cursor_index=k, dfe_taps_v=fbk,
                   sigma_noise_v=float(np.sqrt(s_tx2 + s_rx2)), a_dd_ui=prof.noise.a_dd_ui,
                   sigma_rj_ui=prof.noise.sigma_rj_ui, modulation=prof.modulation, rlm=float(prof.noise.rlm),
                   freqs_hz=f, h_rx=h_eq)


def simulate_link(channel: Channel, profile: str | SerdesProfile | None, point: dict[str, float], *, ber_target: float = 1e-3,
                  n_symbols: int = 1 << 17, seed: int = 0, sampling: str = "mm",
                  package_case: int | None = None, truncate_rel: float = 0.0,
                  cursor_time_s: float | None = None, tx_noise: str = "cursor",
                  tr_delay: bool = False) -> td.TimeDomainResult:
    """Bit-by-bit eye of ``point`` on the simulator's own link (``build_link``), read at its phase."""
    lk = build_link(channel, profile, point, package_case=package_case, sampling=sampling,
                    truncate_rel=truncate_rel, cursor_time_s=cursor_time_s, tx_noise=tx_noise, tr_delay=tr_delay)
    p = _window(lk.pulse_v, lk.cursor_index, lk.samples_per_ui, len(lk.dfe_taps_v))
    return td.simulate(p, lk.samples_per_ui, cursor_index=lk.cursor_index, modulation=lk.modulation, rlm=lk.rlm,
                       n_symbols=n_symbols, dfe_taps_v=lk.dfe_taps_v, sigma_noise_v=lk.sigma_noise_v,
                       a_dd_ui=lk.a_dd_ui, sigma_rj_ui=lk.sigma_rj_ui, jitter="tx", ber_target=ber_target,
                       phase=0, seed=seed)


def _window(p: np.ndarray, k: int, m: int, n_fb: int) -> np.ndarray:
    """Every pre-cursor (as COM counts them: a measured channel's non-causal tail far before the cursor
    adds ISI), and the rest of the pulse after ``k`` until it has decayed below 1e-4 of the cursor."""
    after = np.nonzero(np.abs(p[k:k + 500 * m]) > 1e-4 * abs(p[k]))[0]
    hi = min(k + max(int(after[-1]) + m, (n_fb + 2) * m), len(p))
    return p[:hi]


@dataclass(frozen=True)
class FfeSimulation:
    """The bit-by-bit eye of a CTLE -> Rx FFE -> DFE receiver on the simulator's own link."""

    result: td.TimeDomainResult
    cursor_v: float  # the simulator's equalized cursor
    sigma_rx_v: float  # receiver noise after the FFE (frequency-domain integral)
    sigma_tx_v: float  # transmitter noise after the FFE (178A-21 form, on the simulator's own pulse)


def simulate_ffe_link(channel: Channel, profile: str | SerdesProfile | None, point: dict[str, float], *,
                      ffe_taps: np.ndarray, n_pre: int, dfe_taps: np.ndarray, cursor_time_s: float,
                      ber_target: float = 1e-3, n_symbols: int = 1 << 17, seed: int = 0,
                      truncate_rel: float = 0.0, delay_s: float = 0.0, pattern: str | None = None,
                      post_ui: int | None = None) -> FfeSimulation:
    """Bit-by-bit eye of ``point`` through a UI-spaced Rx FFE (``ffe_taps``, V/V, tap ``n_pre`` the cursor
    tap) and a DFE (``dfe_taps`` in units of the equalized cursor), sampled at ``cursor_time_s`` (after the
    link's ``delay_s``, see ``build_link``).

    Independent of ``eqtune.eye.ffe_eye`` in everything but the receiver's settings (the taps and the
    sampling instant, given): the pulse is this module's own (``build_link``); the FFE is applied to the
    waveform as delayed copies (the record is periodic); symbols, ISI, DFE feedback and transmitter jitter
    come from the PRBS31Q simulation; the receiver noise after the FFE is integrated in frequency,
    sigma^2 = eta_0 int |H_ctf H_r|^2 |W(f)|^2 df with W(f) = sum_k w_k exp(-j 2 pi f (k - n_pre) T) (93A-35
    through the FFE; ``ffe_eye`` uses the lag-domain w' R w instead); the transmitter noise is 178A-21/22's
    (10^(-SNR_TX/10) x the energy of the FFE-equalized pulse without TX FFE at the UI samples).
    ``pattern``: the simulator's (default PRBS31Q; "random" for i.i.d. symbols, what a statistical eye
    assumes); ``post_ui``: end the ISI span that many UI after the cursor (default: where it decays).
    """
    prof = load_profile(profile)
    w = np.asarray(ffe_taps, dtype=float)
    if not 0 <= n_pre < w.size:
        raise ValueError(f"n_pre={n_pre} must index one of the {w.size} FFE taps")
    lk = build_link(channel, prof, point, cursor_time_s=cursor_time_s, truncate_rel=truncate_rel, delay_s=delay_s)
    lk0 = build_link(channel, prof, {**point, **{t: 0.0 for t in prof.tx.taps}}, cursor_time_s=cursor_time_s,
                     truncate_rel=truncate_rel, delay_s=delay_s)
    m, k = lk.samples_per_ui, lk.cursor_index

    def ffe(x: np.ndarray) -> np.ndarray:  # q[i] = sum_j w_j x[i - (j - n_pre) M]
        return np.asarray(sum(wj * np.roll(x, (j - n_pre) * m) for j, wj in enumerate(w)), dtype=float)

    q, q0 = ffe(lk.pulse_v), ffe(lk0.pulse_v)
    assert lk.freqs_hz is not None and lk.h_rx is not None  # build_link sets both
    f = lk.freqs_hz
    w_f = np.exp(-2j * np.pi * np.outer(f, np.arange(w.size) - n_pre) / (prof.baud_gbd * 1e9)) @ w
    df_ghz = float(f[1] - f[0]) / 1e9
    s_rx2 = prof.noise.eta0_v2_per_ghz * float(np.sum(np.abs(lk.h_rx * w_f) ** 2)) * df_ghz
    s_tx2 = 10 ** (-prof.noise.snr_tx_db / 10) * float(np.sum(q0[k % m::m] ** 2))
    b = np.asarray(dfe_taps, dtype=float) * q[k]
    p = _window(q, k, m, b.size)
    if post_ui is not None:  # the ISI span of another tool (e.g. the engine's post-cursor window)
        p = p[:k + int(post_ui) * m + m // 2]
    r = td.simulate(p, m, cursor_index=k, modulation=lk.modulation, rlm=lk.rlm, n_symbols=n_symbols, pattern=pattern,
                    dfe_taps_v=b, sigma_noise_v=float(np.sqrt(s_rx2 + s_tx2)), a_dd_ui=lk.a_dd_ui,
                    sigma_rj_ui=lk.sigma_rj_ui, jitter="tx", ber_target=ber_target, phase=0, seed=seed)
    return FfeSimulation(result=r, cursor_v=float(q[k]), sigma_rx_v=float(np.sqrt(s_rx2)),
                         sigma_tx_v=float(np.sqrt(s_tx2)))
