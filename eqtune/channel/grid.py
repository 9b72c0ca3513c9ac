"""The simulation frequency grid: DC extrapolation, resampling, roll-off beyond the data.

Default grid (what ``load_channel`` returns and the eye engine uses): uniform from 0 Hz with
``df = 10 MHz`` (a 100 ns impulse-response window, the step of the IEEE 802.3 contribution channels and
of COM's default) up to ``max(data fmax, 2 x baud)`` rounded up to a whole step. ``2 x baud`` covers the
main lobe of the PAM4/NRZ symbol spectrum and its first side lobe; the eye engine zero-pads above it for
finer time steps.

Beyond the last data point the response is rolled off smoothly to zero: the magnitude of the last point
times a raised-cosine (Hann) taper over ``max(0.2 fmax, 5 GHz)``, the phase continued with the group delay
of the top 10 % of the data. This keeps the impulse response free of the ringing a hard cut would add.
"""

from __future__ import annotations

import numpy as np

from eqtune.errors import ChannelError

DEFAULT_DF_HZ = 10e6


MAX_GRID_POINTS = 1_000_000  # 10 THz at 10 MHz: far above any channel; bounds memory (~100 MB per 4-port)


def default_grid(data_fmax_hz: float | None, baud_gbd: float, df_hz: float = DEFAULT_DF_HZ) -> np.ndarray:
    """Uniform grid 0, df, ..., >= max(data fmax, 2 x baud) (Hz).

    The size is checked before anything is allocated: a Touchstone file whose option line says GHz but
    whose values are in Hz reaches 1e19 Hz, which would otherwise ask for a 1e12-point grid."""
    for name, v in (("data fmax (Hz)", data_fmax_hz or 0.0), ("baud (GBd)", baud_gbd), ("df (Hz)", df_hz)):
        if not np.isfinite(float(v)):
            raise ChannelError(f"{name} {v} is not a finite number; check the channel's frequencies and baud")
    if not df_hz > 0 or not baud_gbd > 0:
        raise ChannelError(f"grid step {df_hz:g} Hz and baud {baud_gbd:g} GBd must be > 0")
    fmax = max(float(data_fmax_hz or 0.0), 2.0 * baud_gbd * 1e9)
    n = int(np.ceil(fmax / df_hz - 1e-9)) + 1
    if n > MAX_GRID_POINTS:
        raise ChannelError(
            f"the frequency grid would have {n:.3g} points (up to {fmax / 1e9:.4g} GHz in {df_hz / 1e6:g} MHz steps, "
            f"at most {MAX_GRID_POINTS}): does a Touchstone option line say GHz while the values are in Hz? "
            "Fix the unit on its '#' line (or the baud / df)")
    return np.arange(n) * df_hz


def check_uniform_grid(freqs_hz: np.ndarray) -> None:
    f = np.asarray(freqs_hz, dtype=float)
    if f.ndim != 1 or f.size < 2 or f[0] != 0.0:
        raise ChannelError("frequency grid must be 1-D, start at 0 Hz and have at least 2 points")
    d = np.diff(f)
    if np.any(np.abs(d - d[0]) > 1e-6 * d[0]) or d[0] <= 0:
        raise ChannelError("frequency grid must be uniform and increasing (e.g. np.arange(n) * 10e6)")


def with_dc(freqs_hz: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prepend a DC point when the data starts above 0 Hz.

    Hermitian symmetry of a real impulse response (H(-f) = H*(f)) forces H(0) to be real; its magnitude
    is extrapolated linearly from the first two points and its sign taken from Re H at the first point
    (the same "real DC point" constraint scikit-rf's ``Network.extrapolate_to_dc`` applies).
    """
    f = np.asarray(freqs_hz, dtype=float)
    if f[0] <= 0.0:
        s = s.copy()
        s[0] = s[0].real  # a measured DC point must be real too
        return f, s
    m0, m1 = np.abs(s[0]), np.abs(s[1])
    mag = np.clip(m0 - f[0] * (m1 - m0) / (f[1] - f[0]), 0.0, 1.0)
    dc = np.where(s[0].real < 0, -mag, mag).astype(complex)
    return np.concatenate([[0.0], f]), np.concatenate([dc[None], s], axis=0)


def _lerp(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Linear interpolation along axis 0 of ``fp`` (any trailing shape); x inside [xp[0], xp[-1]]."""
    i = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, xp.size - 2)
    w = ((x - xp[i]) / (xp[i + 1] - xp[i])).reshape((-1,) + (1,) * (fp.ndim - 1))
    ret: np.ndarray = fp[i] * (1.0 - w) + fp[i + 1] * w
    return ret


def resample(freqs_hz: np.ndarray, s: np.ndarray, new_freqs_hz: np.ndarray, *,
             extend: str | None = None) -> np.ndarray:
    """Put S (n, ...) given at ascending ``freqs_hz`` onto ``new_freqs_hz`` (uniform, from 0 Hz).

    Inside the data: linear interpolation of magnitude and unwrapped phase (the ``coords='polar'``
    option of scikit-rf's ``Network.interpolate``; avoids the magnitude dips of Cartesian
    interpolation between coarse points). A missing DC point is added first (:func:`with_dc`).
    Above the data: the roll-off described in the module docstring, or with ``extend`` ("loss-fit",
    "hold") the explicit extrapolation of :mod:`eqtune.channel.band` up to the end of the grid.
    """
    f, s = with_dc(np.asarray(freqs_hz, dtype=float), np.asarray(s, dtype=complex))
    fn = np.asarray(new_freqs_hz, dtype=float)
    if f.size == fn.size and np.array_equal(f, fn):
        return s.copy()
    mag = np.abs(s)
    ph = np.unwrap(np.angle(s), axis=0)
    fmax = f[-1]
    inside = fn <= fmax
    out = np.zeros((fn.size,) + s.shape[1:], dtype=complex)
    fi = fn[inside]
    out[inside] = _lerp(fi, f, mag) * np.exp(1j * _lerp(fi, f, ph))
    if not np.all(inside):
        fo = fn[~inside]
        width = max(0.2 * fmax, 5e9)
        top = f >= 0.9 * fmax
        if np.count_nonzero(top) >= 2:
            ft = f[top] - f[top].mean()
            slope = (ft[:, None] * (ph[top] - ph[top].mean(0)).reshape(ft.size, -1)).sum(0) / (ft @ ft)
            slope = slope.reshape(s.shape[1:])
        else:
            slope = np.zeros(s.shape[1:])
        x = np.clip((fo - fmax) / width, 0.0, 1.0).reshape((-1,) + (1,) * (s.ndim - 1))
        dfo = (fo - fmax).reshape(x.shape)
        if extend is None:
            ext_mag = mag[-1] * 0.5 * (1.0 + np.cos(np.pi * x))
        else:
            from eqtune.channel.band import extend_magnitude

            ext_mag = extend_magnitude(f, mag, fo, extend)
        out[~inside] = ext_mag * np.exp(1j * (ph[-1] + slope * dfo))
    out[fn == 0.0] = out[fn == 0.0].real
    return out
