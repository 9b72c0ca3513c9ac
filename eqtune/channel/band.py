"""Frequency coverage of measured data: what the eye engine needs, and the explicit ways to extend it.

Needed band: data up to ``0.75 x baud``, COM's receiver bandwidth f_r (IEEE 802.3 93A.1.4.1, the
4th-order Butterworth H_r of eq. 93A-20; the ICN weight of 85.10.7/92.10.7 uses the same f_r). Below it
the receiver passes the channel almost unattenuated, so a channel that stops there leaves the eye
engine with a response it did not measure. A Touchstone file that ends below the band is refused with
the band it has and the band it needs (``eqtune.channel.library``), unless an extrapolation is asked for:

``loss-fit``
    The insertion loss is continued with the fitted-attenuation form of IEEE 802.3 Annex 69B.4.2
    (``IL(f) = a0 + a1 sqrt(f) + a2 f + a3 f^2``), kept to its skin-effect (sqrt f) and dielectric (f)
    terms with a1, a2 >= 0 so the loss cannot fall with frequency (a3 f^2 diverges outside the fit),
    fitted by non-negative least squares to the upper half of the data and joined continuously at the
    last point. Applied to every S-parameter element (a rising |S11| or crosstalk gives a1 = a2 = 0: its
    last magnitude is held). The phase continues with the group delay of the top 10 % of the data, as the
    roll-off of ``eqtune.channel.grid`` does.
``hold``
    Every element keeps its last measured value (magnitude and the delay's phase), what PyChOpMarg
    does beyond a channel's data (github.com/capn-freako/PyChOpMarg, ``src/pychopmarg/com.py``,
    commit be13774, lines 416-428: the interpolated channel is padded with its last point). It
    overstates the channel's high-frequency transmission: an optimistic bound next to ``loss-fit``.

Either way the result says so (``Channel.meta["extrapolated"]``: method, data end, needed band).
"""

from __future__ import annotations

import numpy as np

from eqtune.errors import ChannelError

RX_BANDWIDTH_FRACTION = 0.75  # f_r / f_b (IEEE 802.3 93A.1.4.1, Table 93A-1 f_r = 0.75 f_b)
EXTRAPOLATIONS = ("loss-fit", "hold")
_HINT = ("measure to at least that frequency, or extrapolate explicitly: --extrapolate loss-fit (or hold), "
         "extrapolate = \"loss-fit\" in a channel TOML (see docs/hardening.md)")


def needed_hz(baud_gbd: float) -> float:
    """The band the eye engine needs data for (Hz): the receiver bandwidth ``0.75 x baud``."""
    return RX_BANDWIDTH_FRACTION * float(baud_gbd) * 1e9


def check_extrapolate(method: str | None, where: str = "--extrapolate") -> str | None:
    if method in (None, "", "none"):
        return None
    if method not in EXTRAPOLATIONS:
        raise ChannelError(f"{where}: {method!r} is not an extrapolation; use {', '.join(EXTRAPOLATIONS)} or none")
    return method


def check_coverage(fmax_hz: float, baud_gbd: float, where: str, extrapolate: str | None) -> dict[str, float | str] | None:
    """None when data reach the needed band; the extrapolation record when they do not and one is asked
    for; else ChannelError naming the band the data have and the band needed."""
    need = needed_hz(baud_gbd)
    if fmax_hz >= need * (1 - 1e-9):
        return None
    method = check_extrapolate(extrapolate)
    if method is None:
        raise ChannelError(f"{where}: data end at {fmax_hz / 1e9:.4g} GHz but the eye at {baud_gbd:g} GBd needs "
                           f"data up to {need / 1e9:.4g} GHz (0.75 x baud, the receiver bandwidth of IEEE 802.3 "
                           f"93A.1.4); {_HINT}")
    return {"method": method, "data_fmax_ghz": round(fmax_hz / 1e9, 6), "needed_ghz": round(need / 1e9, 6)}


def _loss_slopes(f: np.ndarray, mag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per element (a1, a2) >= 0 of IL_dB = a0 + a1 sqrt(f_GHz) + a2 f_GHz over the upper half of the data."""
    from scipy.optimize import nnls

    top = f >= 0.5 * f[-1]
    if np.count_nonzero(top) < 3:
        top = f > 0
    fg = f[top] / 1e9
    il = -20.0 * np.log10(np.maximum(mag[top], 1e-30)).reshape(fg.size, -1)
    a = np.stack([np.ones_like(fg), -np.ones_like(fg), np.sqrt(fg), fg], axis=1)
    a1 = np.zeros(il.shape[1])
    a2 = np.zeros(il.shape[1])
    for j in range(il.shape[1]):
        coef, _ = nnls(a, il[:, j])
        a1[j], a2[j] = coef[2], coef[3]
    shape = mag.shape[1:]
    return a1.reshape(shape), a2.reshape(shape)


def extend_magnitude(f: np.ndarray, mag: np.ndarray, fo: np.ndarray, method: str) -> np.ndarray:
    """|S| at frequencies ``fo`` above the data (``f`` ascending with DC, ``mag`` (n, ...)), per ``method``."""
    last = mag[-1]
    shape = (-1,) + (1,) * (mag.ndim - 1)
    if method == "hold":
        return np.broadcast_to(last, (fo.size,) + mag.shape[1:]).copy()
    if method != "loss-fit":  # pragma: no cover - checked by check_extrapolate
        raise ChannelError(f"unknown extrapolation {method!r}")
    a1, a2 = _loss_slopes(f, mag)
    fg, fl = fo.reshape(shape) / 1e9, f[-1] / 1e9
    extra_db = a1 * (np.sqrt(fg) - np.sqrt(fl)) + a2 * (fg - fl)
    ret: np.ndarray = last * 10.0 ** (-extra_db / 20.0)
    return ret
