"""Channel figures: IL/RL at Nyquist, ILD, ICN, propagation delay, and a plain pulse response.

All take a :class:`~eqtune.channel.model.Channel` (uniform grid from 0 Hz). Losses are positive dB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from eqtune.channel.grid import resample
from eqtune.channel.model import Channel


def _db(x: np.ndarray | float) -> np.ndarray:
    return -20.0 * np.log10(np.maximum(np.abs(x), 1e-30))


def _at(channel: Channel, arr: np.ndarray, f_hz: float) -> complex:
    return complex(np.interp(f_hz, channel.freqs_hz, arr.real) + 1j * np.interp(f_hz, channel.freqs_hz, arr.imag))


def il_db(channel: Channel, f_hz: float) -> float:
    """Insertion loss -20 log10 |SDD21(f)| (dB, positive for loss)."""
    return channel.insertion_loss_db(f_hz)


def rl_db(channel: Channel, f_hz: float, port: int = 1) -> float | None:
    """Return loss -20 log10 |SDDpp(f)| (dB) or None without reflection data."""
    s = channel.sdd11 if port == 1 else channel.sdd22
    if s is None:
        return None
    return float(_db(abs(_at(channel, s, f_hz))))


def ild(channel: Channel, f_min_hz: float = 50e6, f_max_hz: float | None = None
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Insertion-loss deviation: IL minus its 4-term fit over [f_min, f_max].

    Fit form IL_fit(f) = a0 + a1 sqrt(f) + a2 f + a3 f^2 (f in GHz), least squares, as the fitted
    attenuation of IEEE 802.3 Annex 69B.4.2 (also used by 802.3 clauses 85/92/93). Default
    ``f_max`` = 0.75 x baud (COM's receiver bandwidth f_r, 802.3 93A.1.4), capped at the grid.
    Returns (f_hz, il_db, ild_db) over the band.
    """
    f = channel.freqs_hz
    fmax = min(f_max_hz or 0.75 * channel.baud_gbd * 1e9, f[-1])
    sel = (f >= f_min_hz) & (f <= fmax)
    fg = f[sel] / 1e9
    il = _db(channel.sdd21[sel])
    a = np.stack([np.ones_like(fg), np.sqrt(fg), fg, fg**2], axis=1)
    coef, *_ = np.linalg.lstsq(a, il, rcond=None)
    return f[sel], il, il - a @ coef


def ild_rms_db(channel: Channel) -> float:
    """RMS of :func:`ild` over its band (dB)."""
    _, _, dev = ild(channel)
    return float(np.sqrt(np.mean(dev**2)))


def icn_mv(channel: Channel, *, amplitude_v: float = 0.6, rise_ps: float = 9.6) -> float | None:
    """Integrated crosstalk noise (mV RMS), the ICN definition of IEEE 802.3 85.10.7 / 92.10.7::

        W(f) = A^2 / f_b sinc^2(f / f_b) / (1 + (f / f_t)^4) / (1 + (f / f_r)^8),
        f_t = 0.2365 / T_rise, f_r = 0.75 f_b,
        sigma_x = sqrt(2 df sum_n W(f_n) |H_xt(f_n)|^2)   (power sum over aggressors; NEXT and FEXT)

    ``A`` is each aggressor's ``amplitude_v`` when set, else ``amplitude_v``; the defaults (600 mV,
    T_rise 9.6 ps) follow the 100GBASE-CR4 ICN parameters as we read 92.10.7 -- pass a clause's own
    figures when comparing against a limit. One weight for NEXT and FEXT (A_nt = A_ft, T_nt = T_ft).
    None when there are no aggressors.
    """
    if not channel.aggressors:
        return None
    f = channel.freqs_hz
    fb = channel.baud_gbd * 1e9
    sel = f > 0
    fs = f[sel]
    ft = 0.2365 / (rise_ps * 1e-12)
    shape = np.sinc(fs / fb) ** 2 / (1 + (fs / ft) ** 4) / (1 + (fs / (0.75 * fb)) ** 8) / fb
    total = 0.0
    for agg in channel.aggressors:
        a = agg.amplitude_v if agg.amplitude_v is not None else amplitude_v
        total += float(np.sum(a * a * shape * np.abs(agg.sdd21[sel]) ** 2))
    return float(np.sqrt(2.0 * channel.df_hz * total) * 1e3)


def _time_grid_channel(channel: Channel, samples_per_ui: int) -> tuple[np.ndarray, int, float]:
    """SDD21 on the FFT grid of a samples_per_ui x baud sample rate (zero above the channel band)."""
    fs = samples_per_ui * channel.baud_gbd * 1e9
    n = int(round(fs / channel.df_hz))
    n += n % 2
    df = fs / n
    nf = n // 2 + 1
    if abs(df - channel.df_hz) <= 1e-9 * df:
        h = np.zeros(nf, dtype=complex)
        m = min(nf, channel.freqs_hz.size)
        h[:m] = channel.sdd21[:m]
    else:
        fk = np.arange(nf) * df
        h = np.zeros(nf, dtype=complex)
        inside = fk <= channel.freqs_hz[-1]
        h[inside] = resample(channel.freqs_hz, channel.sdd21, fk[inside])
    return h, n, 1.0 / fs


@dataclass(frozen=True)
class PulseResponse:
    t_s: np.ndarray
    v: np.ndarray  # response to a 1 V, 1-UI rectangular pulse
    samples_per_ui: int
    ui_s: float

    @property
    def peak_v(self) -> float:
        return float(self.v.max())

    @property
    def peak_time_s(self) -> float:
        return float(self.t_s[int(np.argmax(self.v))])


def pulse_response(channel: Channel, samples_per_ui: int = 32) -> PulseResponse:
    """Unequalized response to a 1 V rectangular pulse one UI long (no TX/RX filters).

    p = irfft(H(f) B(f)) with B the DFT of a boxcar of ``samples_per_ui`` ones, so an ideal
    channel (H = 1) returns the boxcar itself: the discrete form of p(t) = h(t) * rect(t/UI).
    The window is 1/df (100 ns on the default grid).
    """
    h, n, dt = _time_grid_channel(channel, samples_per_ui)
    k = np.arange(h.size)
    z = np.exp(-2j * np.pi * k / n)
    with np.errstate(invalid="ignore", divide="ignore"):
        box = np.where(k == 0, samples_per_ui, (1 - z**samples_per_ui) / (1 - z))
    v = np.fft.irfft(h * box, n=n)
    return PulseResponse(t_s=np.arange(n) * dt, v=v, samples_per_ui=samples_per_ui,
                         ui_s=1.0 / (channel.baud_gbd * 1e9))


def impulse_response(channel: Channel) -> tuple[np.ndarray, np.ndarray]:
    """(t_s, h) on the channel's own grid: h = irfft(SDD21), dt = 1/(2 fmax); sum(h) = H(0)."""
    n = 2 * (channel.freqs_hz.size - 1)
    h = np.fft.irfft(channel.sdd21, n=n)
    return np.arange(n) / (n * channel.df_hz), h


def delay_s(channel: Channel) -> float:
    """Propagation delay: time the step response reaches 50 % of its final (DC) value (s)."""
    t, h = impulse_response(channel)
    step = np.cumsum(h) - 0.5 * h  # trapezoidal running integral: sample n holds half of h[n]
    final = float(np.real(channel.sdd21[0])) or float(step[-1])
    i = int(np.argmax(step >= 0.5 * final))
    if i == 0:
        return 0.0
    y0, y1 = step[i - 1], step[i]
    return float(t[i - 1] + (0.5 * final - y0) / (y1 - y0) * (t[i] - t[i - 1]))


def summary(channel: Channel) -> dict[str, Any]:  # JSON-safe figures (eqtune channel show)
    """The figures ``eqtune channel show`` prints (JSON-safe)."""
    fn = channel.nyquist_hz
    out = {
        "name": channel.name,
        "source": channel.source,
        "baud_gbd": channel.baud_gbd,
        "modulation": channel.modulation,
        "serdes_profile": channel.serdes_profile,
        "nyquist_ghz": fn / 1e9,
        "il_nyquist_db": round(il_db(channel, fn), 3),
        "rl_nyquist_db": _round(rl_db(channel, fn, 1), 3),
        "rl2_nyquist_db": _round(rl_db(channel, fn, 2), 3),
        "ild_rms_db": round(ild_rms_db(channel), 4),
        "port_order": channel.port_order,
        "port_order_detected": bool(channel.meta.get("port_order_detected", False)),
        "delay_ns": round(delay_s(channel) * 1e9, 4),
        "temperature_c": channel.temperature_c,
        "df_mhz": channel.df_hz / 1e6,
        "fmax_ghz": float(channel.freqs_hz[-1] / 1e9),
        "aggressors": [{"name": a.name, "kind": a.kind, "amplitude_v": a.amplitude_v,
                        "xt_nyquist_db": round(float(_db(np.interp(fn, channel.freqs_hz, np.abs(a.sdd21)))), 3)}
                       for a in channel.aggressors],
    }
    icn = icn_mv(channel)
    if icn is not None:
        out["icn_mv"] = round(icn, 4)
    return out


def _round(x: float | None, digits: int) -> float | None:
    """``round`` that passes None through (no reflection data)."""
    return None if x is None else round(x, digits)
