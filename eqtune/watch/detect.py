"""Which lanes are losing margin, and why: a streaming detector over a whole fleet at once.

Every lane has two series, "worse is higher": ``log10_prefec_ber`` (log10 of the VDM pre-FEC BER,
readings of 0 held at 1e-13) and ``esnr_db`` (kept internally as -eSNR). The state of every series
is a numpy array over (metric, module, lane), so one poll costs the same few array operations for
8 or 8,000 lanes, and the benchmark can run 100,000 simulated lane-hours (benchmarks/bench_watch.py).

Tests, each with the evidence it reports:

* **step** (change point): the lane's baseline (exponentially weighted mean with time constant
  ``baseline_s`` and its mean absolute deviation, learnt over a warm-up of ``warmup_s``) and the
  last K samples, K = ``persist_s`` / interval (at least 2). A step is flagged when all K lie above
  the baseline by more than max(``step_min``, ``step_z`` x scale) (a persistence rule: with iid
  noise the false-alarm probability per poll is P(z > step_z)^K; Page's CUSUM, Biometrika 1954, is
  the classical alternative). The level before and the level after are kept, and the finding holds
  until the lane returns to its level before (then it clears, saying so) or is acknowledged
  (``eqtune watch ack``: the level after becomes the baseline). A BER step is only flagged when the
  level after is within ``attention_decades`` of the module's BER warning level (below, a reading
  is a handful of counted errors and a x10 "step" is counting noise).
* **trend**: exponentially weighted least squares on time over ``window_s`` of the series less the
  module's common temperature response (the median lane's dB/C times the temperature: a rack swing
  is not a trend), with the slope's standard error (eqtune/watch/stats.py); only after half a window
  of data, and while the module temperature swings only when the lane's trend over its siblings'
  median is significant too; flagged when |slope / se| >= ``trend_t``,
  the change over one window is at least ``step_min``, and the line reaches the module's warning
  level within ``horizon_s``.
* **thermal** (on eSNR; on log10 BER only for lanes without eSNR): the lane's excess temperature
  sensitivity over its siblings on the module
  (regression on the module temperature of the lane minus the median of the module's lanes, which
  removes what all lanes share: the channel's own tempco); flagged when the excess is significant
  (|t| >= ``thermal_t``), at least ``thermal_min_per_c`` and ``sibling_ratio`` - 1 times the
  siblings' own sensitivity, over a swing of at least ``min_temp_swing_c``. The projection to the
  module's TempHighWarning (page 02h) uses the lane's own sensitivity, with its 95 % interval; held
  until a later swing shows the excess gone.
* **over_alarm**: all K samples past the module's VDM alarm level. A lane past its *warning* level
  but stable is not a finding (the module raises its own VDM warning flag; ``status`` says so): a
  marginal lane that does not move needs no action.

Thresholds come from the module where it advertises them (VDM threshold sets, page 28h; TempHighWarning,
page 02h bytes 132-133, sonic-platform-common mem_maps/public/cmis/pages/page02.py); else the
defaults below (pre-FEC BER warning 1e-5, alarm 2.4e-4, the KP4 design BER of 802.3ck/df; eSNR
at those BERs for PAM4: SER = 1.5 Q(sqrt(SNR / 5)), Proakis, Digital Communications 5th ed., 4.3-5).
Projected BERs are bounded at 0.5 (a probability).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from eqtune.jsonutil import finite_or_none
from eqtune.watch.stats import EWRegression

KINDS = ("step", "trend", "thermal", "over_alarm")
METRICS = ("log10_prefec_ber", "esnr_db")
BER_FLOOR = 1e-13
LOG_BER_MAX = math.log10(0.5)
Z95 = 1.959964


def esnr_for_ser(ser: float) -> float:
    """eSNR (dB) at which PAM4 with Gaussian noise has symbol error ratio ``ser``: SNR = 5 Qinv(ser/1.5)^2."""
    from statistics import NormalDist

    q = -NormalDist().inv_cdf(ser / 1.5)
    return 10.0 * math.log10(5.0 * q * q)


@dataclass(frozen=True)
class DetectConfig:
    """Detector settings (seconds, C, dB, decades). The thresholds are the fallbacks for modules that
    do not advertise their own (VDM thresholds, TempHighWarning); ``hot_c`` likewise."""

    window_s: float = 1800.0
    min_samples: int = 10
    warmup_s: float = 600.0
    baseline_s: float = 3600.0
    persist_s: float = 30.0
    max_persist: int = 32
    horizon_s: float = 3600.0
    ber_warning: float = 1e-5
    ber_alarm: float = 2.4e-4
    esnr_warning_db: float | None = None
    esnr_alarm_db: float | None = None
    hot_c: float = 70.0
    step_min_decades: float = 0.5
    step_min_db: float = 1.0
    step_z: float = 5.0
    scale_floor_decades: float = 0.05
    scale_floor_db: float = 0.05
    attention_decades: float = 3.0
    trend_t: float = 7.0
    thermal_t: float = 7.0
    thermal_min_per_c: float = 0.02
    sibling_ratio: float = 3.0
    min_temp_swing_c: float = 2.0

    def esnr_warning(self) -> float:
        return self.esnr_warning_db if self.esnr_warning_db is not None else esnr_for_ser(self.ber_warning)

    def esnr_alarm(self) -> float:
        return self.esnr_alarm_db if self.esnr_alarm_db is not None else esnr_for_ser(self.ber_alarm)

    def for_interval(self, interval_s: float) -> tuple[DetectConfig, list[str]]:
        """The settings for polls every ``interval_s``, and what was changed: a window that holds
        fewer than ``min_samples`` polls is widened to ``interval_s * min_samples``, and so is the warm-up."""
        notes: list[str] = []
        need = interval_s * self.min_samples
        cfg = self
        if self.window_s < need:
            notes.append(f"--window {self.window_s:g} s holds {int(self.window_s // interval_s)} polls at "
                         f"--interval {interval_s:g} s, fewer than the {self.min_samples} the detector needs: "
                         f"widened to {need:g} s")
            cfg = replace(cfg, window_s=need)
        if self.warmup_s < need:
            cfg = replace(cfg, warmup_s=need)
        if self.baseline_s < 2 * cfg.window_s:
            cfg = replace(cfg, baseline_s=2 * cfg.window_s)
        return cfg, notes

    def persist_count(self, interval_s: float) -> int:
        return int(min(self.max_persist, max(2, math.ceil(self.persist_s / interval_s - 1e-9))))


@dataclass(frozen=True)
class Finding:
    """One reason to flag a lane: ``kind`` (see KINDS), ``metric`` (see METRICS), ``evidence``
    (levels, slope with standard error and 95 % interval, projections, thresholds used; JSON-safe)."""

    kind: str
    metric: str
    evidence: dict[str, Any]


@dataclass
class ModuleThresholds:
    """A module's own levels (None = not advertised: the detector's defaults are used and said so)."""

    ber_warning: float | None = None
    ber_alarm: float | None = None
    esnr_warning_db: float | None = None
    esnr_alarm_db: float | None = None
    temp_high_warning_c: float | None = None
    source: dict[str, str] = field(default_factory=dict)


def _y(metric: int, v: np.ndarray) -> np.ndarray:
    """Raw values -> "worse is higher" series values."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric == 0:
            return np.where(np.isnan(v), np.nan, np.log10(np.maximum(v, BER_FLOOR)))
        return -v


def _nanmedian(a: np.ndarray) -> np.ndarray:
    """Median over the lanes of each module (last axis, kept), NaN for a module with no value
    (sorting puts NaN last; the middle of the present values; numpy's nanmedian is 10x slower)."""
    srt = np.sort(a, axis=-1)
    cnt = np.sum(~np.isnan(a), axis=-1, keepdims=True)
    lo = np.take_along_axis(srt, np.maximum((cnt - 1) // 2, 0), axis=-1)
    hi = np.where(cnt % 2 == 0, np.take_along_axis(srt, np.minimum(cnt // 2, a.shape[-1] - 1), axis=-1), lo)
    with np.errstate(invalid="ignore"):
        return np.where(cnt > 0, 0.5 * (lo + hi), np.nan)


def _shown(metric: int, y: float) -> float:
    """Series value -> the unit a user reads (BER, dB)."""
    return float(10.0 ** min(y, LOG_BER_MAX)) if metric == 0 else float(-y)


class FleetDetector:
    """Detector state for ``modules`` x ``lanes`` lanes polled every ``interval_s``.

    ``update(ts, temp, ber, esnr)`` with arrays: ``ts``/``temp`` (modules,), ``ber``/``esnr``
    (modules, lanes), NaN where missing (failed poll, not advertised); ``findings(m, l)`` then
    lists what holds for lane slot l of module slot m. ``set_thresholds(m, ModuleThresholds)``
    puts a module's own levels in; ``acknowledge(m, l)`` accepts a step as the new normal."""

    def __init__(self, modules: int, lanes: int, interval_s: float, cfg: DetectConfig | None = None) -> None:
        base = cfg or DetectConfig()
        self.cfg, self.notes = base.for_interval(interval_s)
        self.interval_s = float(interval_s)
        c = self.cfg
        shape = (2, modules, lanes)
        self.shape = shape
        self.k = c.persist_count(interval_s)
        self.warm_n = max(c.min_samples, math.ceil(c.warmup_s / interval_s - 1e-9))
        nan = np.full(shape, np.nan)
        self.n = np.zeros(shape)
        self.last_t = nan.copy()
        self.mean, self.m2 = np.zeros(shape), np.zeros(shape)  # warm-up (Welford)
        self.base, self.scale = nan.copy(), nan.copy()
        self.base_t = nan.copy()  # module temperature at the baseline (EW mean)
        # runs of consecutive present samples: above / below the baseline by the step threshold,
        # back at the level before a step, past the alarm / warning level (O(1) per poll, no ring)
        z = np.zeros(shape)
        self.run_up, self.run_up_sum, self.run_up_t0 = z.copy(), z.copy(), nan.copy()
        self.run_down, self.run_down_sum = z.copy(), z.copy()
        self.run_back, self.run_alarm, self.run_warn = z.copy(), z.copy(), z.copy()
        self.short = nan.copy()  # EW mean over K polls: the level shown now
        self.step = np.zeros(shape, bool)
        self.before, self.after_sum, self.after_n = nan.copy(), np.zeros(shape), np.zeros(shape)
        self.step_ts = nan.copy()
        self.trend = EWRegression(shape)
        self.trend_c = EWRegression(shape)  # on the series less the module's common temperature response
        self._s_mod = np.zeros((2, modules, 1))
        self.trend_x = EWRegression(shape)  # on the series less the module's median lane
        self.own_t = EWRegression(shape)
        self.excess_t = EWRegression(shape)
        self.temp_t = EWRegression((modules,))
        self.thermal_held = np.zeros(shape, bool)
        self.held: dict[tuple[int, int, int], dict[str, Any]] = {}
        self.now_temp = np.full(modules, np.nan)
        self.step_min = np.array([c.step_min_decades, c.step_min_db]).reshape(2, 1, 1)
        self.floor = np.array([c.scale_floor_decades, c.scale_floor_db]).reshape(2, 1, 1)
        self.warn = np.empty(shape)
        self.alarm = np.empty(shape)
        self.warn[0], self.alarm[0] = math.log10(c.ber_warning), math.log10(c.ber_alarm)
        self.warn[1], self.alarm[1] = -c.esnr_warning(), -c.esnr_alarm()
        self.hot = np.full(modules, c.hot_c)
        self.threshold_source: dict[int, dict[str, str]] = {}
        #: (metric, module, lane, level before, level after, ts) of lanes that got better than their
        #: baseline for K polls (a re-tune, a reseat): the caller drains it (``take_improved``)
        self.improved: list[tuple[int, int, int, float, float, float]] = []

    # ------------------------------------------------------------------ configuration
    def set_thresholds(self, m: int, th: ModuleThresholds) -> None:
        """Use module ``m``'s own warning/alarm levels and TempHighWarning where it advertises them."""
        c = self.cfg
        src = {"ber": "default", "esnr": "default", "hot_c": "--hot-c"}
        if th.ber_warning is not None and 0 < th.ber_warning < 0.5:
            self.warn[0, m] = math.log10(th.ber_warning)
            src["ber"] = th.source.get("ber", "module")
        if th.ber_alarm is not None and 0 < th.ber_alarm < 0.5:
            self.alarm[0, m] = math.log10(th.ber_alarm)
        if th.esnr_warning_db is not None and math.isfinite(th.esnr_warning_db):
            self.warn[1, m] = -th.esnr_warning_db
            src["esnr"] = th.source.get("esnr", "module")
        if th.esnr_alarm_db is not None and math.isfinite(th.esnr_alarm_db):
            self.alarm[1, m] = -th.esnr_alarm_db
        if th.temp_high_warning_c is not None and -40.0 < th.temp_high_warning_c < 150.0:
            self.hot[m] = th.temp_high_warning_c
            src["hot_c"] = "TempHighWarning (page 02h)"
        else:
            self.hot[m] = c.hot_c
        self.threshold_source[m] = src

    # ------------------------------------------------------------------ one poll
    def update(self, ts: np.ndarray, temp: np.ndarray, ber: np.ndarray, esnr: np.ndarray) -> None:
        c = self.cfg
        ts = np.asarray(ts, float)
        temp = np.asarray(temp, float)
        y = np.stack([_y(0, np.asarray(ber, float)), _y(1, np.asarray(esnr, float))])
        tsb = np.broadcast_to(ts[None, :, None], self.shape)
        tb = np.broadcast_to(temp[None, :, None], self.shape)
        ok = ~np.isnan(y) & ~np.isnan(tsb)
        dt = np.where(np.isnan(self.last_t), 0.0, tsb - self.last_t)
        dt = np.where(ok, np.maximum(dt, 0.0), 0.0)
        # trend on time (x = seconds before now)
        lam_w = np.exp(-dt / c.window_s)
        self.trend.shift_x(dt, ok)
        self.trend.decay(lam_w, ok)
        self.trend.add(np.zeros(self.shape), y, ok)
        self.trend_c.shift_x(dt, ok)
        self.trend_c.decay(lam_w, ok)
        self.trend_c.add(np.zeros(self.shape), y - self._s_mod * (np.nan_to_num(tb, nan=30.0) - 30.0), ok)
        # temperature regressions: own and in excess of the module's median lane
        okt = ok & ~np.isnan(tb)
        med = _nanmedian(np.where(ok, y, np.nan))
        self.trend_x.shift_x(dt, ok)
        self.trend_x.decay(lam_w, ok)
        self.trend_x.add(np.zeros(self.shape), y - med, ok)
        self.own_t.decay(lam_w, okt)
        self.own_t.add(tb, y, okt)
        self.excess_t.decay(lam_w, okt)
        self.excess_t.add(tb, y - med, okt)
        okm = ~np.isnan(ts) & ~np.isnan(temp)
        dtm = np.where(okm, dt.max(axis=(0, 2)), 0.0)
        self.temp_t.decay(np.exp(-dtm / c.window_s), okm)
        self.temp_t.add(temp, temp, okm)
        self.now_temp = np.where(okm, temp, self.now_temp)
        a_short = np.where(np.isnan(self.short), 1.0, 1.0 - np.exp(-dt / (self.k * self.interval_s)))
        self.short = np.where(ok, np.where(np.isnan(self.short), y, self.short + a_short * (y - self.short)), self.short)
        self.run_alarm = np.where(ok, np.where(y > self.alarm, self.run_alarm + 1, 0), self.run_alarm)
        self.run_warn = np.where(ok, np.where(y > self.warn, self.run_warn + 1, 0), self.run_warn)
        self.last_t = np.where(ok, tsb, self.last_t)
        self.n += ok
        # warm-up: Welford mean/variance of the first warm_n samples, then the EW baseline
        warm = ok & (self.n <= self.warm_n)
        d = np.where(warm, y - self.mean, 0.0)
        self.mean += np.where(warm, d / np.maximum(self.n, 1), 0.0)
        self.m2 += np.where(warm, d * (y - self.mean), 0.0)
        armed_now = warm & (self.n == self.warm_n)
        sd = np.sqrt(self.m2 / np.maximum(self.n - 1, 1))
        self.base = np.where(armed_now, self.mean, self.base)
        self.scale = np.where(armed_now, np.maximum(sd, self.floor), self.scale)
        self.base_t = np.where(armed_now, tb, self.base_t)
        self._steps(ok & (self.n > self.warm_n), y, dt, tb)
        self._tf = self.trend.fit()
        self._tcf = self.trend_c.fit()
        self._txf = self.trend_x.fit()
        self._tempf = self.temp_t.fit()
        self._thermal_release()

    def _steps(self, live: np.ndarray, y: np.ndarray, dt: np.ndarray, tb: np.ndarray) -> None:
        c, k = self.cfg, self.k
        thr = np.maximum(self.step_min, c.step_z * np.nan_to_num(self.scale, nan=np.inf))
        with np.errstate(invalid="ignore"):
            dev = y - self.base
            above, below = live & (dev > thr), live & (dev < -thr)
            near_before = np.abs(y - self.before) < 0.5 * thr
        self.run_up_t0 = np.where(above & (self.run_up == 0), np.broadcast_to(self.last_t, self.shape), self.run_up_t0)
        self.run_up = np.where(live, np.where(above, self.run_up + 1, 0), self.run_up)
        self.run_up_sum = np.where(live, np.where(above, self.run_up_sum + y, 0.0), self.run_up_sum)
        self.run_down = np.where(live, np.where(below, self.run_down + 1, 0), self.run_down)
        self.run_down_sum = np.where(live, np.where(below, self.run_down_sum + y, 0.0), self.run_down_sum)
        self.run_back = np.where(live & self.step, np.where(near_before, self.run_back + 1, 0), 0)
        up, down = self.run_up >= k, self.run_down >= k
        with np.errstate(invalid="ignore", divide="ignore"):
            level_up = self.run_up_sum / self.run_up
            level_down = self.run_down_sum / self.run_down
        attention = np.ones(self.shape, bool)
        attention[0] = np.nan_to_num(level_up[0], nan=-99.0) >= self.warn[0] - c.attention_decades
        # a lane held for a thermal excess (on either series) steps with every swing: that is the
        # thermal finding's evidence, not a new change point
        new = live & up & ~self.step & attention & ~self.thermal_held.any(axis=0)
        if new.any():
            self.step |= new
            self.before = np.where(new, self.base, self.before)
            self.after_sum = np.where(new, self.run_up_sum - y, self.after_sum)
            self.after_n = np.where(new, self.run_up - 1, self.after_n)
            self.step_ts = np.where(new, self.run_up_t0, self.step_ts)
        self.after_sum += np.where(live & self.step, y, 0.0)
        self.after_n += live & self.step
        # back at the level before for K polls: the step clears (a transient; the report says so)
        back = self.step & (self.run_back >= k)
        self.step &= ~back
        # better than the baseline for K polls (a re-tune, a cooler day): the baseline follows at once
        rebase = live & down & ~self.step
        for k_, m_, l_ in zip(*np.nonzero(rebase), strict=True):
            i = (int(k_), int(m_), int(l_))
            self.improved.append((*i, float(self.base[i]), float(level_down[i]), float(self.last_t[i])))
        self.base = np.where(rebase, level_down, self.base)
        self.run_down = np.where(rebase, 0, self.run_down)
        # the EW baseline and scale, outliers clipped, frozen while a step holds or a run is building
        upd = live & ~self.step & ~above & ~rebase
        a = 1.0 - np.exp(-dt / c.baseline_s)
        sc = np.nan_to_num(self.scale)
        dev1 = np.clip(np.nan_to_num(dev), -4.0 * sc, 4.0 * sc)
        self.base = np.where(upd, self.base + a * dev1, self.base)
        self.scale = np.where(upd, np.maximum(sc + a * (1.2533 * np.abs(dev1) - sc), self.floor), self.scale)
        self.base_t = np.where(upd & ~np.isnan(tb), self.base_t + a * (tb - self.base_t), self.base_t)

    def _swing_ok(self) -> np.ndarray:
        """(modules,) True where the module temperature swung enough in the window (sd x sqrt 12 =
        the span of a uniform ramp with that standard deviation)."""
        return np.nan_to_num(self._tempf.sd_x) * math.sqrt(12.0) >= self.cfg.min_temp_swing_c

    def _thermal_stats(self) -> dict[str, np.ndarray]:
        c = self.cfg
        own, exc = self.own_t.fit(), self.excess_t.fit()
        sib = _nanmedian(np.abs(own.slope))
        # the module's common response (median lane, signed) where a swing makes it measurable
        s_mod = np.nan_to_num(_nanmedian(own.slope))
        t_mod = np.nan_to_num(_nanmedian(own.t_stat))
        self._s_mod = np.where(self._swing_ok()[None, :, None] & (np.abs(t_mod) >= 3.0), s_mod, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            t_mean = self.temp_t.sx / self.temp_t.w
        # the module temperature swings (or has just started to move): trends there need siblings' support
        swing_ok = self._swing_ok()
        self._swing = swing_ok | (np.abs(np.nan_to_num(self.now_temp - t_mean)) >= 0.5)
        swing = swing_ok[None, :, None]
        n_ok = np.nan_to_num(exc.n_eff) >= c.min_samples
        many = self.shape[2] >= 3
        need = np.maximum(c.thermal_min_per_c, (c.sibling_ratio - 1.0) * np.nan_to_num(sib))
        if many:
            sig = (np.nan_to_num(exc.t_stat) >= c.thermal_t) & (np.nan_to_num(exc.slope) >= need)
        else:  # no siblings to compare with: the lane's own sensitivity
            sig = (np.nan_to_num(own.t_stat) >= c.thermal_t) & (np.nan_to_num(own.slope) >= c.thermal_min_per_c)
        flag = swing & n_ok & sig & (np.nan_to_num(own.slope) > 0) & ~self.step.any(axis=0)
        # log10 BER: lanes at different BERs move at different rates in decades/C (the slope of the Q
        # function), and a reading of 0 holds no level; the eSNR series is the one to compare, so
        # the BER series is tested only on lanes without eSNR, and where errors are counted
        level = self._tf.level[0]
        flag[0] &= (self.n[1] == 0) & (np.nan_to_num(level, nan=-99.0) >= self.warn[0] - c.attention_decades)
        gone = swing & n_ok & (np.abs(np.nan_to_num(exc.t_stat)) < 2.0)
        return {"flag": flag, "gone": gone, "own": own, "exc": exc, "sib": sib}

    def _thermal_release(self) -> None:
        st = self._thermal_stats()
        new = st["flag"] & ~self.thermal_held
        for k, m, ln in zip(*np.nonzero(new), strict=True):
            key = (int(k), int(m), int(ln))
            self.held[key] = self._thermal_evidence(key, st)
        self.thermal_held |= st["flag"]
        released = self.thermal_held & st["gone"] & ~st["flag"]
        for k, m, ln in zip(*np.nonzero(released), strict=True):
            self.held.pop((int(k), int(m), int(ln)), None)
        self.thermal_held &= ~released
        self._tstats = st

    def take_improved(self) -> list[dict[str, Any]]:
        """Lanes that improved since the last call, with the levels before and after (user units)."""
        out = [{"module": m, "lane": ln, "metric": METRICS[k], "before": _shown(k, b), "after": _shown(k, a), "ts": t}
               for k, m, ln, b, a, t in self.improved]
        self.improved = []
        return out

    # ------------------------------------------------------------------ acknowledgement
    def acknowledge(self, m: int, lane: int) -> bool:
        """Accept the lane's current level as normal (a step's level after becomes the baseline,
        a held thermal finding is dropped). True when something was held."""
        had = bool(self.step[:, m, lane].any() or self.thermal_held[:, m, lane].any())
        for k in range(2):
            if self.step[k, m, lane] and self.after_n[k, m, lane] > 0:
                self.base[k, m, lane] = self.after_sum[k, m, lane] / self.after_n[k, m, lane]
            self.held.pop((k, m, lane), None)
        self.step[:, m, lane] = False
        self.thermal_held[:, m, lane] = False
        return had

    def release(self, m: int, lane: int) -> bool:
        """A verified repair (a re-tune the watch verified, eqtune/watch/retune.py): drop the lane's held
        step and thermal findings and keep its baseline from before the step (frozen while the step
        held), so the lane is judged against its healthy level again. True when something was held."""
        had = bool(self.step[:, m, lane].any() or self.thermal_held[:, m, lane].any())
        for k in range(2):
            self.held.pop((k, m, lane), None)
        self.step[:, m, lane] = False
        self.thermal_held[:, m, lane] = False
        self.run_up[:, m, lane] = 0
        self.run_up_sum[:, m, lane] = 0.0
        self.run_back[:, m, lane] = 0
        return had

    # ------------------------------------------------------------------ findings
    def status(self, m: int, lane: int) -> dict[str, Any]:
        """Not findings: whether the lane is armed, its baseline and the smallest step it can see."""
        out: dict[str, Any] = {"armed": bool(self.n[0, m, lane] > self.warm_n or self.n[1, m, lane] > self.warm_n),
                               "warmup_polls": int(self.warm_n)}
        for k, name in enumerate(METRICS):
            if not np.isnan(self.base[k, m, lane]):
                thr = max(float(self.step_min[k, 0, 0]), self.cfg.step_z * float(self.scale[k, m, lane]))
                out[name] = {"baseline": _shown(k, float(self.base[k, m, lane])),
                             "past_warning": bool(self.run_warn[k, m, lane] >= self.k),
                             "smallest_step": (f"x{10 ** thr:.3g}" if k == 0 else f"{thr:.2f} dB")}
        return out

    def flag_mask(self) -> np.ndarray:
        """(modules, lanes) True where :meth:`findings` would list something (vectorized: the
        benchmark's error rates over 100,000 lane-hours, and the poller's fast path)."""
        c = self.cfg
        full = self.n >= c.min_samples
        over = full & (self.run_alarm >= self.k)
        f, fc = self._tf, self._tcf
        with np.errstate(invalid="ignore", divide="ignore"):
            slope, se, lvl = fc.slope, fc.se, f.level
            ok = (np.nan_to_num(f.n_eff) >= c.min_samples) & (np.nan_to_num(slope) > 0)
            ok &= self.n * self.interval_s >= 0.5 * c.window_s
            ok &= ~self._swing[None, :, None] | (np.nan_to_num(self._txf.t_stat) >= c.trend_t)
            ok &= np.where(np.nan_to_num(se) > 0, np.nan_to_num(slope / se) >= c.trend_t, True)
            ok &= np.nan_to_num(slope) * c.window_s >= self.step_min
            ok &= np.nan_to_num(lvl, nan=np.inf) < self.warn
            ok[0] &= np.nan_to_num(lvl[0], nan=-np.inf) >= self.warn[0] - c.attention_decades
            tt = (self.warn - lvl) / slope
            ok &= np.nan_to_num(tt, nan=np.inf) <= c.horizon_s
        return (full & (self.step | ok) | over | self.thermal_held).any(axis=0)

    def findings(self, m: int, lane: int) -> list[Finding]:
        c = self.cfg
        out: list[Finding] = []
        st = getattr(self, "_tstats", None)
        for k, metric in enumerate(METRICS):
            if self.n[k, m, lane] < c.min_samples:
                continue
            warn, alarm = float(self.warn[k, m, lane]), float(self.alarm[k, m, lane])
            level = float(self.short[k, m, lane])
            common = {"metric": metric, "level_now": _shown(k, level), "warning": _shown(k, warn),
                      "alarm": _shown(k, alarm), "polls": int(self.k),
                      "thresholds_from": self.threshold_source.get(m, {}).get("ber" if k == 0 else "esnr", "default")}
            if self.run_alarm[k, m, lane] >= self.k:
                out.append(Finding("over_alarm", metric, dict(common)))
            if self.step[k, m, lane]:
                after = self.after_sum[k, m, lane] / max(self.after_n[k, m, lane], 1.0)
                before = float(self.before[k, m, lane])
                out.append(Finding("step", metric, {
                    **common, "since_ts": float(self.step_ts[k, m, lane]),
                    "before": _shown(k, before), "after": _shown(k, float(after)),
                    "change": (f"x{10 ** (after - before):.3g}" if k == 0 else f"{-(after - before):+.2f} dB"),
                    "held": "until the lane returns to its level before or `eqtune watch ack`"}))
            tr = self._trend_evidence(k, m, lane, warn)
            if tr is not None:
                out.append(Finding("trend", metric, {**common, **tr}))
            if self.thermal_held[k, m, lane] and st is not None:
                ev = self._thermal_evidence((k, m, lane), st) if st["flag"][k, m, lane] else \
                    {**self.held.get((k, m, lane), {}), "held": "from an earlier swing, until a swing shows it gone or ack"}
                out.append(Finding("thermal", metric, {**common, **ev}))
        return out

    def _trend_evidence(self, k: int, m: int, lane: int, warn: float) -> dict[str, Any] | None:
        c = self.cfg
        f, fc = self._tf, self._tcf
        slope, se, n_eff = float(fc.slope[k, m, lane]), float(fc.se[k, m, lane]), float(f.n_eff[k, m, lane])
        level = float(f.level[k, m, lane])
        if self.n[k, m, lane] * self.interval_s < 0.5 * c.window_s:
            return None
        if self._swing[m] and not float(np.nan_to_num(self._txf.t_stat[k, m, lane])) >= c.trend_t:
            return None  # the module's temperature moves: only a trend its siblings do not share
        if not (math.isfinite(slope) and math.isfinite(se)) or n_eff < c.min_samples or slope <= 0:
            return None
        if se > 0 and slope / se < c.trend_t:
            return None
        if slope * c.window_s < float(self.step_min[k, 0, 0]) or level >= warn:
            return None
        if k == 0 and level < warn - c.attention_decades:
            return None
        tt = (warn - level) / slope
        if tt > c.horizon_s:
            return None
        lo, hi = slope - Z95 * se, slope + Z95 * se
        per_min = 60.0 * (slope if k == 0 else -slope)
        return {"slope_per_min": per_min, "slope_se_per_min": 60.0 * se,
                "slope_ci95_per_min": sorted([60.0 * (lo if k == 0 else -lo), 60.0 * (hi if k == 0 else -hi)]),
                "slope_units": "decades/min" if k == 0 else "dB/min", "t_stat": slope / se if se > 0 else math.inf,
                "effective_samples": n_eff, "window_s": c.window_s, "time_to_warning_s": tt,
                "time_to_warning_ci95_s": [(warn - level) / hi, (warn - level) / lo if lo > 0 else None]}

    def _thermal_evidence(self, idx: tuple[int, int, int], st: dict[str, Any]) -> dict[str, Any]:
        k, m, lane = idx
        own, exc = st["own"], st["exc"]
        s, se = float(own.slope[idx]), float(own.se[idx])
        xs, xse = float(exc.slope[idx]), float(exc.se[idx])
        sib = float(st["sib"][k, m, 0])
        t_now = float(self.now_temp[m])
        hot = float(self.hot[m])
        level = float(self._tf.level[idx])
        span = max(hot - t_now, 0.0)
        proj, proj_se = level + s * span, se * span
        sign = 1.0 if k == 0 else -1.0
        units = "decades/C" if k == 0 else "dB/C"
        tf = self._tempf
        return {"sensitivity_per_c": sign * s, "sensitivity_se_per_c": se,
                "sensitivity_ci95_per_c": sorted([sign * (s - Z95 * se), sign * (s + Z95 * se)]),
                "excess_over_siblings_per_c": sign * xs, "excess_se_per_c": xse,
                "excess_t_stat": xs / xse if xse > 0 else math.inf,
                "siblings_median_per_c": finite_or_none(sign * sib),
                "ratio_to_siblings": finite_or_none(abs(s) / sib) if sib > 0 else None,
                "sensitivity_units": units, "temp_now_c": t_now,
                "temp_swing_c": float(np.nan_to_num(tf.sd_x[m])) * math.sqrt(12.0),
                "hot_c": hot, "hot_c_from": self.threshold_source.get(m, {}).get("hot_c", "--hot-c"),
                "projected_at_hot": _shown(k, proj),
                "projected_at_hot_ci95": sorted([_shown(k, proj - Z95 * proj_se), _shown(k, proj + Z95 * proj_se)]),
                "projected_past_warning": bool(proj > float(self.warn[idx])),
                "window_s": self.cfg.window_s}
