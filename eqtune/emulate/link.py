"""``EmulatedLink``: the one link model behind every emulator (CMIS module and SCPI instruments).

It holds a library channel, the active module EQ codes per lane, and the link quality per lane,
with Poisson-noised error counts. The module emulator calls :meth:`EmulatedLink.set_codes` when
an apply completes; the instrument emulator reads :meth:`ber`, :meth:`count_errors` and :meth:`eye`.

Directions (docs/ARCHITECTURE.md, "Link directions"):

* ``"module_rx"``: host TX -> channel -> module Tx input (knob ``tx_eq``). The module's own
  host-side PRBS checker (CMIS pages 13h/14h) sees this direction.
* ``"host_rx"``: module Rx-output driver (``rx_pre``, ``rx_post``, ``rx_amp``) -> channel -> host RX.
  A scope on the host side sees this direction.
* ``"loopback"``: a BERT through an optical loopback sees both directions in series. Errors in the
  two directions are independent, so BER_total = 1 - (1 - BER_in)(1 - BER_out) = BER_in + BER_out
  - BER_in * BER_out, which is BER_in + BER_out to within BER^2 (what this module uses, exactly).

Link quality comes from a *quality model*: a callable ``quality(direction, codes, lane) -> dict``
with at least ``ber_estimate`` and ``eye_height_min_mv`` (and optionally ``eye_height_mv`` list,
``eye_width_ui``). The default uses the eye engine (``eqtune.eye.EyeEngine``) on the library
channel with a small per-lane extra loss (seeded trace-length spread); when the eye engine itself is
not available (a broken install) it falls back to :func:`surrogate_quality`, a closed-form bowl
around a loss-dependent optimum (``quality_source`` says which). A channel that does not load, or that
the engine refuses (a damaged file, a sweep short of the band), raises its ``ChannelError``: a user's
channel is never replaced by the bowl in silence. Results are cached per
``(direction, lane, code tuple)``: evaluations are pure.

Thermal model (:meth:`EmulatedLink.set_thermal`): the module temperature follows a scripted
:class:`ThermalProfile` (piecewise-linear ramps, e.g. 10 C in 5 min at the back of a rack) and every
lane sees the extra Nyquist loss of the channel at that temperature, from the channel model itself
(:func:`channel_loss_vs_temperature`: the trace segments' copper resistivity and dielectric loss vs T,
eqtune/channel/trace.py), plus an optional per-lane excess temperature coefficient (a planted weak
lane: a marginal connector contact or via). The quality model is evaluated at that extra loss, so the
PRBS checker, the VDM pre-FEC BER and eSNR and the instrument readings all follow the temperature.
"""

from __future__ import annotations

import math
import re
import threading
import time as _time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from eqtune.drivers.measurement import BerCount
from eqtune.errors import ChannelError
from eqtune.serdes.knobs import (
    HOST_RX,
    MODULE_RX,
    RX_AMP,
    RX_POST,
    RX_PRE,
    TX_EQ,
    module_knobs_in_direction,
)

DIRECTIONS = (MODULE_RX, HOST_RX)
DIRECTION_KNOBS = {d: module_knobs_in_direction(d) for d in (MODULE_RX, HOST_RX)}
DEFAULT_CODES = {RX_PRE: 1, RX_POST: 2, RX_AMP: 2, TX_EQ: 3}
BITS_PER_SYMBOL = {"NRZ": 1, "PAM4": 2, "PAM6": 2.5}

QualityModel = Callable[[str, Mapping[str, int], int], Mapping[str, Any]]


def _q(x: float) -> float:
    """Gaussian tail Q(x) = 0.5 erfc(x / sqrt 2)."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def channel_loss_guess_db(name: str) -> float:
    """Nyquist loss guess from a library channel *name* (``c2m-10in`` -> 10 inch of PCB): used only
    by the surrogate when the channel itself cannot be loaded. ~1.2 dB/in at 26.6 GHz plus 4 dB of
    package/connector loss (typical host PCB numbers; IEEE 802.3ck C2M host budget is 16-20 dB)."""
    m = re.search(r"(\d+(?:\.\d+)?)\s*in", name)
    if m:
        return 4.0 + 1.2 * float(m.group(1))
    m = re.search(r"(\d+(?:\.\d+)?)\s*db", name, re.IGNORECASE)
    return float(m.group(1)) if m else 14.0


def surrogate_quality(loss_db: float, tx_eq_max: int = 10, noise_mv: float = 5.5) -> QualityModel:
    """A closed-form stand-in for the eye engine (tests, and when the engine is unavailable).

    Eye height falls quadratically away from a loss-dependent optimum code (post-cursor about
    loss/3 dB, pre-cursor about loss/12, Tx input peaking about 0.55 * loss); PAM4 symbol error
    probability 1.5 * Q(EH / (2 sigma)) (three eyes, two error neighbours per inner level).
    """

    def model(direction: str, codes: Mapping[str, int], lane: int, extra_loss_db: float = 0.0) -> dict[str, Any]:
        loss = loss_db + float(extra_loss_db)
        if direction == "host_rx":
            amp_mv = {0: 250.0, 1: 450.0, 2: 600.0, 3: 800.0}[int(codes.get(RX_AMP, 2))]
            post_opt = min(7.0, loss / 3.0)
            pre_opt = min(7.0, loss / 12.0)
            pen = 0.035 * (codes.get(RX_POST, 0) - post_opt) ** 2 + 0.06 * (codes.get(RX_PRE, 0) - pre_opt) ** 2
            # large swing into a short channel overdrives the host CTLE a little
            pen += 0.04 * max(0.0, amp_mv / 600.0 - 1.0) * max(0.0, 14.0 - loss)
            base = amp_mv / 3.0 * 10 ** (-loss / 40.0)
        else:
            tx_opt = min(float(tx_eq_max), 0.55 * loss)
            pen = 0.01 * (codes.get(TX_EQ, 0) - tx_opt) ** 2
            base = 600.0 / 3.0 * 10 ** (-loss / 40.0)
        eh3 = [base * (1.0 - pen) * f for f in (0.97, 1.0, 0.98)]
        eh_min = min(eh3)
        ber = 1.5 * _q(max(eh_min, 0.0) / (2.0 * noise_mv)) if eh_min > 0 else 0.5
        return {
            "ber_estimate": min(max(ber, 1e-30), 0.5),
            "eye_height_mv": [max(e, 0.0) for e in eh3],
            "eye_height_min_mv": max(eh_min, 0.0),
            "eye_width_ui": max(0.0, 0.45 * (1.0 - pen) - 0.004 * loss),
            "closed": eh_min <= 0,
        }

    model.supports_extra_loss = True  # type: ignore[attr-defined]
    return model


#: The module's Tx-input receiver models (``EmulatedLink(receiver=...)``, image key ``module_receiver``):
#: "ctle" = the peaking CTLE code ``tx_eq`` only (the eye engine's module_rx direction, a 100G-class CDR);
#: "mmse-ffe" = that CTLE, then a DSP receiver: a 15-tap Rx FFE (6 pre-cursor taps) + 1-tap DFE whose taps the
#: module adapts itself by minimum mean-squared error at every code and lane (the 802.3dj / 178A reference
#: receiver's structure, ``eqtune.eye.ffe_eye``). Its BER estimate is the symbol error ratio with thresholds
#: mid-way, the eye engine's ``ber_estimate`` convention.
MODULE_RECEIVERS = ("ctle", "mmse-ffe")


def _eye_engine_quality(channel_name_or_obj: Any, lanes: int, spread_db: np.ndarray,
                        host_tx: Mapping[str, float] | None = None,
                        receiver: str = "ctle") -> tuple[QualityModel, Any, dict]:
    """Quality model from the eye engine; raises ImportError/Exception when unavailable."""
    from eqtune.eye import EyeEngine  # noqa: F401 - availability probe
    from eqtune.eye.host_tx import pick_host_tx

    if isinstance(channel_name_or_obj, str):
        from eqtune.channel import load_channel

        channel = load_channel(channel_name_or_obj)
    else:
        channel = channel_name_or_obj
    engines: dict[tuple[str, int], Any] = {}
    f = np.asarray(channel.freqs_hz, dtype=float)
    lock = threading.Lock()

    def engine(direction: str, lane: int, extra_loss_db: float = 0.0):
        key = (direction, lane, round(float(extra_loss_db), 2))
        with lock:
            if key not in engines:
                extra = float(spread_db[lane - 1]) + key[2]
                # extra trace loss ~ proportional to frequency, normalized at Nyquist
                scale = 10 ** (-(extra * f / channel.nyquist_hz) / 20.0)
                ch = replace(channel, sdd21=np.asarray(channel.sdd21) * scale, name=f"{channel.name}#lane{lane}")
                engines[key] = EyeEngine(ch, direction=direction)
            return engines[key]

    if host_tx is None:
        try:
            nominal = EyeEngine(channel, direction="module_rx")
            codes = [float(v) for v in nominal.knob_space([TX_EQ]).knobs[0].values]
            host_tx = pick_host_tx(nominal, codes)
        except Exception:  # noqa: BLE001 - keep the profile's default host TX
            host_tx = {}
    host_tx = dict(host_tx)

    def model(direction: str, codes: Mapping[str, int], lane: int, extra_loss_db: float = 0.0) -> dict[str, Any]:
        point = {k: float(v) for k, v in codes.items()}
        if direction == "module_rx":
            point = {**host_tx, **point}
        eng = engine(direction, lane, extra_loss_db)
        if direction == "module_rx" and receiver == "mmse-ffe":
            from eqtune.eye.ffe_eye import ffe_eye

            fe = ffe_eye(eng, point)  # the module's own MMSE adaptation of its FFE and DFE at this code
            return {**fe.to_dict(), "ber_estimate": min(max(fe.ser_estimate, 1e-30), 0.5), "receiver": receiver}
        res = eng.evaluate(point)
        d = res.to_dict() if hasattr(res, "to_dict") else dict(vars(res))
        d.setdefault("ber_estimate", getattr(res, "ber_estimate", 0.5))
        d.setdefault("eye_height_min_mv", getattr(res, "eye_height_min_mv", 0.0))
        if d.get("ber_estimate") is None:
            d["ber_estimate"] = 0.5
        return d

    model.supports_extra_loss = True  # type: ignore[attr-defined]
    return model, channel, host_tx


@dataclass(frozen=True)
class ThermalProfile:
    """A scripted module temperature: piecewise-linear through ``points`` = ((t_s, temp_c), ...) in
    seconds from the start of the profile, held at the last value afterwards; with ``period_s`` the
    script repeats (a rack's fan/load cycle).

    Text form (``parse``): ``"35"`` (constant), ``"0:25,300:35,600:35"`` (t_s:temp_c pairs), with an
    optional ``"@PERIOD"`` suffix to repeat every PERIOD seconds."""

    points: tuple[tuple[float, float], ...]
    period_s: float | None = None

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError("a thermal profile needs at least one (t_s, temp_c) point")
        ts = [p[0] for p in self.points]
        if any(b < a for a, b in zip(ts, ts[1:])) or ts[0] < 0:
            raise ValueError("thermal profile times must start at >= 0 s and not decrease")
        if any(not -55.0 <= p[1] <= 150.0 for p in self.points):
            raise ValueError("thermal profile temperatures must be within -55..150 C")
        if self.period_s is not None and self.period_s <= 0:
            raise ValueError("thermal profile period must be > 0 s")

    @classmethod
    def parse(cls, text: str) -> ThermalProfile:
        body, _, period = str(text).strip().partition("@")
        try:
            if ":" not in body:
                return cls(((0.0, float(body)),), float(period) if period else None)
            pts = tuple((float(a), float(b)) for a, b in (p.split(":") for p in body.split(",") if p.strip()))
            return cls(pts, float(period) if period else None)
        except ValueError as exc:
            raise ValueError(f"thermal profile {text!r}: {exc}; give e.g. '0:25,300:35' (t_s:temp_c pairs) "
                             "or '35'") from None

    @classmethod
    def ramp(cls, start_c: float, end_c: float, *, hold_s: float, ramp_s: float) -> ThermalProfile:
        """Hold ``start_c`` for ``hold_s``, then ramp to ``end_c`` in ``ramp_s`` and stay there."""
        return cls(((0.0, start_c), (hold_s, start_c), (hold_s + ramp_s, end_c)))

    def temperature_c(self, t_s: float) -> float:
        if self.period_s:
            t_s = t_s % self.period_s
        pts = self.points
        if t_s <= pts[0][0]:
            return pts[0][1]
        for (t0, c0), (t1, c1) in zip(pts, pts[1:]):
            if t_s <= t1:
                return c0 if t1 == t0 else c0 + (c1 - c0) * (t_s - t0) / (t1 - t0)
        return pts[-1][1]


_LOSS_VS_T: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def channel_loss_vs_temperature(channel: Any, temps_c: tuple[float, ...] = (0.0, 25.0, 55.0, 85.0, 105.0),
                                ref_c: float = 25.0) -> Callable[[float], float]:
    """Extra Nyquist insertion loss (dB) of a library channel at temperature T relative to ``ref_c``,
    from the channel model itself (``load_channel(name, temperature_c=T)``: trace copper resistivity
    and dielectric loss tangent vs T, eqtune/channel/trace.py), linear between ``temps_c`` (cached
    per channel name). Raises when the channel cannot be loaded."""
    name = channel if isinstance(channel, str) else getattr(channel, "name", None)
    if name not in _LOSS_VS_T:
        from eqtune.channel import load_channel

        il = []
        for t in temps_c:
            ch = load_channel(name, temperature_c=t, aggressors=False)
            il.append(float(ch.insertion_loss_db(ch.nyquist_hz)))
        _LOSS_VS_T[name] = (np.asarray(temps_c, dtype=float), np.asarray(il))
    ts, il = _LOSS_VS_T[name]
    ref = float(np.interp(ref_c, ts, il))

    def loss(temp_c: float) -> float:
        # linear extrapolation outside the table (slope of the nearest segment)
        if temp_c < ts[0] or temp_c > ts[-1]:
            i = 0 if temp_c < ts[0] else len(ts) - 2
            slope = (il[i + 1] - il[i]) / (ts[i + 1] - ts[i])
            return float(il[i] + slope * (temp_c - ts[i]) - ref)
        return float(np.interp(temp_c, ts, il)) - ref

    return loss


@dataclass
class ThermalState:
    """What :meth:`EmulatedLink.set_thermal` installed: the profile, its clock and start, the
    channel's loss-vs-temperature and the per-lane excess coefficients (dB/C above ``ref_c``)."""

    profile: ThermalProfile
    clock: Callable[[], float]
    t0: float
    loss_vs_t: Callable[[float], float]
    lane_tempco_db_per_c: dict[int, float]
    ref_c: float = 25.0
    time_scale: float = 1.0


class EmulatedLink:
    """The emulated physical link: codes per lane -> BER and eye per lane.

    ``EmulatedLink(channel="c2m-10in", lanes=8, seed=None, noise=True)``; ``quality=`` injects a
    quality model (see module docstring); ``lane_spread_db`` is the 1-sigma extra Nyquist loss
    per lane (seeded, so lanes differ slightly but reproducibly for a given seed).
    """

    def __init__(self, channel: Any = "c2m-10in", lanes: int = 8, seed: int | None = None, noise: bool = True,
                 *, quality: QualityModel | None = None, lane_spread_db: float = 0.6,
                 rate_gbd: float | None = None, modulation: str | None = None, tx_eq_max: int = 10,
                 host_tx: Mapping[str, float] | None = None, receiver: str = "ctle") -> None:
        if not 1 <= lanes <= 8:
            raise ValueError("lanes must be 1..8")
        if receiver not in MODULE_RECEIVERS:
            raise ValueError(f"module receiver {receiver!r}: use one of {', '.join(MODULE_RECEIVERS)}")
        self.receiver = receiver
        self.lanes = lanes
        self.noise = noise
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        spread_rng = np.random.default_rng(12345 if seed is None else seed)
        self.lane_spread_db = spread_rng.normal(0.0, lane_spread_db, size=lanes) if lane_spread_db else np.zeros(lanes)
        self.channel_name = channel if isinstance(channel, str) else getattr(channel, "name", "channel")
        self._lock = threading.RLock()
        self._qlock = threading.RLock()
        self._codes = {lane: dict(DEFAULT_CODES) for lane in range(1, lanes + 1)}
        self._cache: dict[tuple, Mapping[str, Any]] = {}
        self._adaptive = {lane: False for lane in range(1, lanes + 1)}
        self.tx_eq_max = tx_eq_max
        self.host_tx: dict[str, float] = dict(host_tx or {})
        baud, mod = 53.125, "PAM4"
        if quality is not None:
            self._quality = quality
            self.quality_source = "injected"
        else:
            try:
                self._quality, ch, self.host_tx = _eye_engine_quality(channel, lanes, self.lane_spread_db, host_tx,
                                                                      receiver)
                baud, mod = float(ch.baud_gbd), str(ch.modulation)
                self.quality_source = "eye-engine"
            except ChannelError:
                # a channel that does not load, or that the engine refuses (a damaged file, a sweep short
                # of the band): the user's input, said in one line, never replaced by the surrogate
                raise
            except Exception as exc:  # noqa: BLE001 - engine or channel library not available
                loss = channel_loss_guess_db(self.channel_name)
                if not isinstance(channel, str):
                    try:
                        loss = channel.insertion_loss_db(channel.nyquist_hz)
                        baud, mod = float(channel.baud_gbd), str(channel.modulation)
                    except Exception:  # noqa: BLE001
                        pass
                base = surrogate_quality(loss, tx_eq_max=tx_eq_max)
                spread = self.lane_spread_db

                def q(direction, codes, lane, extra_loss_db=0.0, _b=base, _loss=loss):
                    return surrogate_quality(_loss + float(spread[lane - 1]), tx_eq_max=tx_eq_max)(
                        direction, codes, lane, extra_loss_db)

                q.supports_extra_loss = True  # type: ignore[attr-defined]
                del base
                self._quality = q
                self.quality_source = f"surrogate ({type(exc).__name__}: {exc})"[:200]
        self.rate_gbd = float(rate_gbd) if rate_gbd else baud
        self.modulation = modulation or mod
        self.thermal: ThermalState | None = None
        self._fec_acc: dict[tuple[int, str], dict[str, float]] = {}

    # ------------------------------------------------------------------ thermal model
    def set_thermal(self, profile: ThermalProfile | str, *, clock: Callable[[], float] | None = None,
                    lane_tempco_db_per_c: Mapping[int, float] | None = None,
                    loss_vs_t: Callable[[float], float] | None = None, ref_c: float = 25.0,
                    time_scale: float = 1.0) -> None:
        """Make the module temperature follow ``profile`` from now on (``clock`` seconds, default
        ``time.monotonic``; ``time_scale`` profile seconds per clock second, to run a 5-minute ramp
        in seconds). Every lane gets the channel's extra loss at that temperature (``loss_vs_t``,
        default :func:`channel_loss_vs_temperature` of the link's channel; 0 dB/C when the channel
        model cannot be loaded) plus ``lane_tempco_db_per_c[lane] * (T - ref_c)`` (planted weak lanes)."""
        if isinstance(profile, str):
            profile = ThermalProfile.parse(profile)
        clock = clock or _time.monotonic
        if loss_vs_t is None:
            try:
                loss_vs_t = channel_loss_vs_temperature(self.channel_name, ref_c=ref_c)
            except Exception:  # noqa: BLE001 - e.g. a channel object not in the library
                loss_vs_t = lambda t: 0.0  # noqa: E731
        tempco = {int(k): float(v) for k, v in (lane_tempco_db_per_c or {}).items()}
        for lane in tempco:
            self._check_lane(lane)
        with self._lock:
            self.thermal = ThermalState(profile, clock, clock(), loss_vs_t, tempco, ref_c, float(time_scale))

    def temperature_c(self) -> float | None:
        """Module temperature now (C), or None without a thermal profile."""
        th = self.thermal
        if th is None:
            return None
        return th.profile.temperature_c((th.clock() - th.t0) * th.time_scale)

    def extra_loss_db(self, lane: int, temp_c: float | None = None) -> float:
        """Extra Nyquist loss (dB) of ``lane`` at ``temp_c`` (default: now) relative to ``ref_c``."""
        th = self.thermal
        if th is None:
            return 0.0
        t = self.temperature_c() if temp_c is None else float(temp_c)
        return float(th.loss_vs_t(t)) + th.lane_tempco_db_per_c.get(lane, 0.0) * (t - th.ref_c)

    def fec_counters(self, lane: int, path: str = "module_rx") -> dict[str, int]:
        """Cumulative FEC-side counters of ``lane`` (what a module's VDM FEC/errored-frame observables
        count): ``bits``, pre-FEC ``bit_errors``, RS(544,514) ``codewords`` (5440 bits each) and
        ``uncorrectable`` codewords, accumulated since the first call over the link's clock (the
        thermal clock and time scale when set). Each call adds the time since the previous one at the
        mean of the BER then and now (trapezoid: the BER follows the temperature), Poisson-noised
        unless ``noise=False``; uncorrectable codewords at the codeword error ratio of independent
        symbol errors (``eqtune.eye.fec``; the module's host-input DSP taps are unknown)."""
        from eqtune.eye.fec import fec_analysis

        self._check_lane(lane)
        th = self.thermal
        now = (th.clock() - th.t0) * th.time_scale if th is not None else _time.monotonic()
        ber = self.ber(lane, path)
        bps = self.bit_rate_bps
        # PAM4 symbol error ratio ~ 2 x BER with Gray coding (one bit per symbol error)
        cer = fec_analysis([], min(2.0 * ber, 0.7)).codeword_error_ratio if ber > 0 else 0.0
        with self._lock:
            acc = self._fec_acc.setdefault((lane, path), {"t": now, "ber": ber, "cer": cer, "bits": 0,
                                                          "bit_errors": 0, "codewords": 0, "uncorrectable": 0,
                                                          "frac_bits": 0.0})
            dt = max(0.0, now - acc["t"])
            bits_f = bps * dt + acc["frac_bits"]
            bits = int(bits_f)
            acc["frac_bits"] = bits_f - bits
            mean_err = 0.5 * (acc["ber"] + ber) * bits
            cw_before = acc["bits"] // 5440
            acc["bits"] += bits
            new_cw = acc["bits"] // 5440 - cw_before
            mean_unc = 0.5 * (acc["cer"] + cer) * new_cw
            if self.noise:
                acc["bit_errors"] += int(self._rng.poisson(mean_err))
                acc["uncorrectable"] += int(self._rng.poisson(mean_unc))
            else:
                acc["bit_errors"] += int(round(mean_err))
                acc["uncorrectable"] += int(round(mean_unc))
            acc["codewords"] += new_cw
            acc["t"], acc["ber"], acc["cer"] = now, ber, cer
            return {k: int(acc[k]) for k in ("bits", "bit_errors", "codewords", "uncorrectable")}

    # ------------------------------------------------------------------ codes
    def _check_lane(self, lane: int) -> None:
        if not 1 <= lane <= self.lanes:
            raise ValueError(f"lane {lane} outside 1..{self.lanes}")

    def active_codes(self, lane: int) -> dict[str, int]:
        self._check_lane(lane)
        with self._lock:
            return dict(self._codes[lane])

    def set_codes(self, lane: int, codes: Mapping[str, int]) -> None:
        """Set (merge) the active codes of ``lane`` (knobs rx_pre, rx_post, rx_amp, tx_eq)."""
        self._check_lane(lane)
        bad = set(codes) - set(DEFAULT_CODES)
        if bad:
            raise ValueError(f"unknown knob(s) {sorted(bad)}; use {sorted(DEFAULT_CODES)}")
        with self._lock:
            self._codes[lane].update({k: int(v) for k, v in codes.items()})

    def set_tx_adaptive(self, lane: int, enabled: bool) -> None:
        """Module Tx input adaptive EQ on/off: when on, the module-input direction uses the best
        ``tx_eq`` code (what an adaptive CTLE converges to) instead of the fixed code."""
        self._check_lane(lane)
        with self._lock:
            self._adaptive[lane] = bool(enabled)

    def tx_adaptive(self, lane: int) -> bool:
        return self._adaptive[lane]

    def _adapted_tx_eq(self, lane: int) -> int:
        return min(range(self.tx_eq_max + 1),
                   key=lambda c: float(self.quality(lane, "module_rx", {TX_EQ: c})["ber_estimate"]))

    # ------------------------------------------------------------------ quality
    def quality(self, lane: int, direction: str, codes: Mapping[str, int] | None = None) -> Mapping[str, Any]:
        """Quality-model result for one direction at ``codes`` (default: the lane's active codes,
        with the adapted ``tx_eq`` when Tx adaptive EQ is on)."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}")
        self._check_lane(lane)
        if codes is None:
            codes = self.active_codes(lane)
            if direction == "module_rx" and self._adaptive[lane]:
                codes[TX_EQ] = self._adapted_tx_eq(lane)
        codes = dict(codes)
        sub: dict[str, int] = {k: int(codes[k]) for k in DIRECTION_KNOBS[direction] if k in codes}
        extra = round(self.extra_loss_db(lane), 2) if self.thermal is not None else 0.0
        key = (direction, lane, tuple(sorted(sub.items())), extra)
        with self._lock:
            hit = self._cache.get(key)
        if hit is None:
            with self._qlock:  # one evaluation at a time (emulator server threads share the engine)
                hit = self._cache.get(key)
                if hit is None:
                    if extra and not getattr(self._quality, "supports_extra_loss", False):
                        raise ValueError("the injected quality model has no extra_loss_db argument: "
                                         "it cannot follow a thermal profile")
                    hit = (self._quality(direction, sub, lane, extra_loss_db=extra) if extra
                           else self._quality(direction, sub, lane))
            with self._lock:
                if len(self._cache) > 50_000:  # a long thermal run visits many loss bins
                    self._cache.clear()
                self._cache[key] = hit
        return hit

    def ber(self, lane: int, path: str = "loopback", codes: Mapping[str, int] | None = None) -> float:
        """True (noise-free) BER of ``lane``: ``path`` is "loopback" (both directions, what a BERT
        through an optical loopback sees), "module_rx" (module checker) or "host_rx"."""
        if path == "loopback":
            a = float(self.quality(lane, "module_rx", codes)["ber_estimate"])
            b = float(self.quality(lane, "host_rx", codes)["ber_estimate"])
            return min(0.5, a + b - a * b)
        return min(0.5, float(self.quality(lane, path, codes)["ber_estimate"]))

    @property
    def bit_rate_bps(self) -> float:
        return self.rate_gbd * 1e9 * BITS_PER_SYMBOL.get(self.modulation, 2)

    def count_errors(self, lane: int, dwell_s: float, rate_gbd: float | None = None,
                     path: str = "loopback") -> BerCount:
        """Errors a checker counts in ``dwell_s`` seconds: Poisson(BER * bits) (exact mean when noise=False)."""
        if dwell_s < 0:
            raise ValueError("dwell_s must be >= 0")
        rate = (rate_gbd * 1e9 * BITS_PER_SYMBOL.get(self.modulation, 2)) if rate_gbd else self.bit_rate_bps
        bits = int(round(rate * dwell_s))
        mean = self.ber(lane, path) * bits
        if self.noise:
            with self._lock:
                errors = int(self._rng.poisson(mean)) if mean < 1e15 else int(round(self._rng.normal(mean, math.sqrt(mean))))
        else:
            errors = int(round(mean))
        return BerCount(bits=bits, errors=min(errors, bits), dwell_s=float(dwell_s))

    def eye(self, lane: int, direction: str = "host_rx") -> dict[str, Any]:
        """Eye metrics a scope on the host side sees (default ``host_rx``): eye_height_mv (list per eye,
        bottom to top), eye_height_min_mv, eye_width_ui, ber_estimate, and a TDECQ-like penalty (dB)
        10 log10(EH_ideal / EH_min) relative to a 3-eye ideal of the module's launch amplitude.
        With ``noise`` each reading jitters by ~1 %, like a real scope acquisition."""
        q = self.quality(lane, direction)
        eh = [float(x) for x in (q.get("eye_height_mv") or [q.get("eye_height_min_mv", 0.0)] * 3)]
        ew = float(q.get("eye_width_ui", 0.0) or 0.0)
        if self.noise:
            with self._lock:
                eh = [max(0.0, x * (1 + 0.01 * self._rng.standard_normal())) for x in eh]
                ew = max(0.0, ew * (1 + 0.01 * self._rng.standard_normal()))
        eh_min = min(eh) if eh else 0.0
        amp = {0: 250.0, 1: 450.0, 2: 600.0, 3: 800.0}[self.active_codes(lane).get(RX_AMP, 2)]
        tdecq = 10 * math.log10((amp / 3.0) / eh_min) if eh_min > 0 else None
        return {
            "lane": lane,
            "direction": direction,
            "eye_height_mv": eh,
            "eye_height_min_mv": eh_min,
            "eye_width_ui": ew,
            "ber_estimate": float(q.get("ber_estimate", 0.5)),
            "tdecq_db": tdecq,
        }
