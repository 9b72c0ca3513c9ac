"""Which lanes are losing margin, and why: trend and temperature-correlation tests with evidence.

Per lane, over the last ``window_s`` seconds of samples (time, module temperature, eSNR, pre-FEC BER):

* **trend** (``esnr_trend`` / ``ber_trend``): least-squares slope of eSNR (dB/s) or of log10 pre-FEC
  BER (decades/s) against time; flagged when the slope points toward the threshold, is significant
  (|slope / standard error| >= ``min_t_stat``; ordinary least squares, e.g. Montgomery & Runger,
  Applied Statistics, 11-4) and the fitted line reaches the threshold within ``horizon_s``;
* **thermal**: margin follows the temperature *slope*: Pearson correlation between the changes of
  the margin and of the temperature over a fifth of the window (d/dt of both), with at least ``min_temp_swing_c`` of
  swing in the window; flagged when |r| >= ``min_corr``, hotter is worse, and the margin extrapolated
  to ``hot_c`` along its temperature sensitivity (dB/C or decades/C, least squares vs temperature)
  crosses the threshold;
* **over_threshold**: the newest fitted value is already past the threshold.

Thresholds: pre-FEC BER 2.4e-4 (the KP4 RS(544,514) design pre-FEC BER of 802.3ck/df, the upper
end of eqtune's 1e-5..2.4e-4 target range) and the eSNR that gives it for PAM4 with Gaussian noise:
SER = 1.5 Q(sqrt(SNR / 5)) (Proakis, Digital Communications 5th ed., 4.3-5, M = 4), the same relation
the module emulator uses; real modules compute eSNR their own way, so give ``--esnr-min-db`` for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = ("over_threshold", "esnr_trend", "ber_trend", "thermal")


def esnr_for_ser(ser: float) -> float:
    """eSNR (dB) at which PAM4 with Gaussian noise has symbol error ratio ``ser``: SNR = 5 Qinv(ser/1.5)^2."""
    from statistics import NormalDist

    q = -NormalDist().inv_cdf(ser / 1.5)
    return 10.0 * math.log10(5.0 * q * q)


@dataclass(frozen=True)
class DetectConfig:
    """Detector settings (seconds, C, dB). ``esnr_threshold_db`` None = from ``ber_threshold``."""

    window_s: float = 300.0
    min_samples: int = 8
    ber_threshold: float = 2.4e-4
    esnr_threshold_db: float | None = None
    horizon_s: float = 900.0
    hot_c: float = 70.0
    min_corr: float = 0.7
    min_temp_swing_c: float = 2.0
    min_t_stat: float = 3.0
    max_points: int = 60

    @property
    def esnr_threshold(self) -> float:
        return self.esnr_threshold_db if self.esnr_threshold_db is not None else esnr_for_ser(self.ber_threshold)


@dataclass(frozen=True)
class Fit:
    slope: float
    intercept: float
    slope_stderr: float
    r: float

    @property
    def t_stat(self) -> float:
        return self.slope / self.slope_stderr if self.slope_stderr > 0 else (math.inf if self.slope else 0.0)


def linear_fit(x: np.ndarray, y: np.ndarray) -> Fit:
    """Ordinary least squares y = a x + b with the slope's standard error and Pearson r."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(x)
    xm, ym = x.mean(), y.mean()
    sxx = float(np.sum((x - xm) ** 2))
    syy = float(np.sum((y - ym) ** 2))
    if sxx <= 0:
        return Fit(0.0, ym, math.inf, 0.0)
    a = float(np.sum((x - xm) * (y - ym)) / sxx)
    b = ym - a * xm
    resid = y - (a * x + b)
    dof = max(n - 2, 1)
    se = math.sqrt(float(np.sum(resid**2)) / dof / sxx)
    r = a * math.sqrt(sxx / syy) if syy > 0 else 0.0
    return Fit(a, float(b), se, float(max(-1.0, min(1.0, r))))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, dtype=float) - np.mean(x)
    y = np.asarray(y, dtype=float) - np.mean(y)
    d = math.sqrt(float(np.sum(x * x) * np.sum(y * y)))
    return float(np.sum(x * y) / d) if d > 0 else 0.0


def _binned(t: np.ndarray, temp: np.ndarray, y: np.ndarray, max_points: int):
    """Average consecutive samples into at most ``max_points`` bins (a 300 s window at 1 s is 300
    samples; the fits need far fewer, and averaging lowers the per-sample noise)."""
    n = len(t)
    if n <= max_points:
        return t, temp, y
    edges = np.linspace(0, n, max_points + 1).astype(int)[:-1]
    counts = np.diff(np.append(edges, n))
    with np.errstate(invalid="ignore"):
        return tuple(np.add.reduceat(a, edges) / counts for a in (t, temp, y))


def _lag(n: int) -> int:
    """Difference span (samples) for the d/dt series: a fifth of the window, so the per-sample
    measurement noise (eSNR ~0.05-0.1 dB, Poisson BER) does not drown a slow ramp's slope."""
    return max(1, n // 5)


@dataclass(frozen=True)
class Finding:
    """One reason to flag a lane: ``kind`` (see KINDS), ``metric`` ("esnr_db" or "log10_prefec_ber")
    and ``evidence`` (window, slope, correlation, projections; JSON-safe)."""

    kind: str
    metric: str
    evidence: dict[str, Any]


def _as_array(history: list[tuple[float, float | None, float | None, float | None]]) -> np.ndarray:
    """History rows -> float array (n, 4), None -> NaN."""
    nan = math.nan
    return np.array([(ts, nan if tc is None else tc, nan if e is None else e, nan if b is None else b)
                     for ts, tc, e, b in history], dtype=float).reshape(-1, 4)


def _series(arr: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, temp, y) for ``metric`` where the value is present; y is "higher is better":
    eSNR dB, or -log10(pre-FEC BER) (BER readings of 0, no errors counted, are left out)."""
    if metric == "esnr_db":
        y = arr[:, 2]
        ok = ~np.isnan(y)
    else:
        ber = arr[:, 3]
        ok = ber > 0  # NaN compares False
        y = np.full(len(ber), np.nan)
        y[ok] = -np.log10(ber[ok])
    return arr[ok, 0], arr[ok, 1], y[ok]


def assess_lane(history: list[tuple[float, float | None, float | None, float | None]] | np.ndarray,
                cfg: DetectConfig = DetectConfig()) -> list[Finding]:
    """Findings for one lane. ``history`` = [(ts_s, temperature_c, esnr_db, prefec_ber)], oldest first
    (None where not advertised or unreadable), or the same as an (n, 4) float array with NaN; only
    the last ``window_s`` seconds are used."""
    if len(history) == 0:
        return []
    arr = history if isinstance(history, np.ndarray) else _as_array(history)
    recent = arr[arr[:, 0] >= arr[-1, 0] - cfg.window_s]
    out: list[Finding] = []
    for metric, thr, units in (("esnr_db", cfg.esnr_threshold, "dB"),
                               ("log10_prefec_ber", -math.log10(cfg.ber_threshold), "decades")):
        t, temp, y = _series(recent, metric)
        if len(t) < cfg.min_samples:
            continue
        n_raw = len(t)
        t, temp, y = _binned(t, temp, y, cfg.max_points)
        fit = linear_fit(t - t[0], y)
        now = fit.intercept + fit.slope * (t[-1] - t[0])
        shown_thr = thr if metric == "esnr_db" else cfg.ber_threshold
        shown_now = now if metric == "esnr_db" else 10 ** -now
        base = {"metric": metric, "window_s": [float(t[0]), float(t[-1])], "samples": int(n_raw),
                "threshold": float(shown_thr), "fitted_now": float(shown_now)}
        if now < thr:
            out.append(Finding("over_threshold", metric, {**base, "units": units}))
            continue
        ok = ~np.isnan(temp)
        # trend toward the threshold (with what the temperature did meanwhile)
        if fit.slope < 0 and abs(fit.t_stat) >= cfg.min_t_stat:
            tt = (now - thr) / -fit.slope
            if tt <= cfg.horizon_s:
                kind = "esnr_trend" if metric == "esnr_db" else "ber_trend"
                sign = 1.0 if metric == "esnr_db" else -1.0  # report BER slope as decades/s upward
                ev = {**base, "slope_per_s": sign * fit.slope,
                      "slope_units": f"{units}/s" if metric == "esnr_db" else "decades/s",
                      "t_stat": abs(fit.t_stat), "time_to_threshold_s": float(tt)}
                if ok.sum() >= 3:
                    tc = temp[ok]
                    ev["temp_change_c"] = float(tc[-1] - tc[0])
                    yk, lag = y[ok], _lag(int(ok.sum()))
                    ev["corr_with_dT_dt"] = pearson(yk[lag:] - yk[:-lag], tc[lag:] - tc[:-lag])
                out.append(Finding(kind, metric, ev))
        # margin vs temperature slope
        if ok.sum() >= cfg.min_samples:
            tt_, tc, yy = t[ok], temp[ok], y[ok]
            swing = float(tc.max() - tc.min())
            if swing >= cfg.min_temp_swing_c:
                lag = _lag(len(yy))
                r_dt = pearson(yy[lag:] - yy[:-lag], tc[lag:] - tc[:-lag])
                sens = linear_fit(tc, yy)
                t_now = float(tc[-1])
                projected = now + sens.slope * (cfg.hot_c - t_now)
                if r_dt <= -cfg.min_corr and sens.slope < 0 and projected < thr:
                    out.append(Finding("thermal", metric, {
                        **base,
                        "corr_with_dT_dt": r_dt,
                        "sensitivity_per_c": (sens.slope if metric == "esnr_db" else -sens.slope),
                        "sensitivity_units": "dB/C" if metric == "esnr_db" else "decades/C",
                        "temp_range_c": [float(tc.min()), float(tc.max())],
                        "dT_dt_c_per_min": float(linear_fit(tt_ - tt_[0], tc).slope * 60.0),
                        "hot_c": cfg.hot_c,
                        "projected_at_hot": float(projected if metric == "esnr_db" else 10 ** -projected),
                    }))
    return out


def suggest_action(findings: list[Finding], *, channel: str | None = None, profile: str | None = None,
                   hot_c: float = 70.0) -> str:
    """What to do: thermal (or a trend while the module warms and the margin follows) -> re-tune
    with temperature corners from the lane's profile/channel; a drift without a temperature cause, or a lane already past the threshold with no thermal
    component -> swap (or reseat/clean) the module."""
    kinds = {f.kind for f in findings}
    hot = int(round(max(hot_c, 85.0)))
    warming = any(f.evidence.get("temp_change_c", 0.0) >= 1.0 and f.evidence.get("corr_with_dT_dt", 0.0) <= -0.5
                  for f in findings)
    if "thermal" in kinds or warming:
        target = channel or "CHANNEL"
        src = f" (channel of profile {profile})" if profile and channel else (
            f" (use the channel of profile {profile})" if profile else "")
        return (f"re-tune with temperature corners: eqtune tune {target} --knobs module "
                f"--corners 25C,{hot}C{src}; push the new profile, then watch again")
    if kinds & {"esnr_trend", "ber_trend", "over_threshold"}:
        return ("swap the module (or reseat/clean the connector): the margin falls without a "
                "temperature cause")
    return ""
