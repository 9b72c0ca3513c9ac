"""Seeded synthetic fleets in simulated time, for the detector's error rates (benchmarks/bench_watch.py)
and its tests: no sockets, no sleeping, every lane of every module at once.

Per module: a temperature that wanders slowly (a random walk of 0.02 C per sqrt(s), held within
25..45 C) with rack swings of ``swing_c`` (up ``ramp_s``, hold, down ``ramp_s``) at random times.
Per lane: a true eSNR (dB) at 30 C with a temperature coefficient (the channel's common one, all
lanes alike to +/-20 %), the true pre-FEC BER from it (PAM4 with Gaussian noise, Gray coding:
BER taken as the SER = 1.5 Q(sqrt(SNR / 5)), Proakis 4.3-5, as the module emulator does) and readings as the module makes them:
BER = Poisson(BER x bits) / bits over a 0.1 s VDM window at 106.25 Gb/s, eSNR + Gaussian 0.05 dB.

Planted lanes (``Plant``, at BER ``ber`` before the fault): ``step`` (BER x ``factor`` from ``at_s`` on), ``thermal`` (temperature
coefficient ``factor`` x the siblings'), ``noisy`` (healthy BER ~4e-9 with extra read noise: 0.25
decades log-normal on BER, 0.2 dB on eSNR), ``marginal`` (BER ~3e-6, under the 1e-5 warning, stable).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_ndtr, ndtri

BITS_PER_READING = 106.25e9 * 0.1


@dataclass(frozen=True)
class Plant:
    kind: str  # step | thermal | noisy | marginal
    module: int
    lane: int
    factor: float = 10.0
    at_s: float = 0.0
    ber: float | None = None  # the lane's BER before the fault (default: drawn like any lane's)


@dataclass
class SimSpec:
    modules: int = 64
    lanes: int = 8
    interval_s: float = 60.0
    hours: float = 24.0
    seed: int = 0
    swing_c: float = 10.0
    ramp_s: float = 300.0
    hold_s: float = 300.0
    swings_per_hour: float = 0.5
    esnr_range_db: tuple[float, float] = (21.0, 26.0)
    tempco_db_per_c: float = -0.012
    plants: list[Plant] = field(default_factory=list)


def log10_ber_of_esnr(esnr_db: np.ndarray) -> np.ndarray:
    """log10 BER at eSNR (dB), the module emulator's convention (eqtune/emulate/vdm.py): BER taken as
    the PAM4 SER = 1.5 Q(sqrt(SNR/5)) (log domain: no underflow)."""
    x = np.sqrt(10.0 ** (np.asarray(esnr_db) / 10.0) / 5.0)
    return (np.log(1.5) + log_ndtr(-x)) / math.log(10.0)


def esnr_of_log10_ber(lb: np.ndarray) -> np.ndarray:
    """Inverse of :func:`log10_ber_of_esnr`."""
    x = -ndtri(np.minimum(10.0 ** np.asarray(lb) / 1.5, 0.999))
    return 10.0 * np.log10(5.0 * x * x)


class SimFleet:
    """Iterate ``for ts, temp, ber, esnr in SimFleet(spec)``: arrays per poll (modules,), (modules, lanes)."""

    def __init__(self, spec: SimSpec) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(spec.seed)
        m, n = spec.modules, spec.lanes
        r = self.rng
        self.esnr0 = r.uniform(*spec.esnr_range_db, size=(m, n))
        self.tempco = spec.tempco_db_per_c * r.uniform(0.8, 1.2, size=(m, n))
        self.ber_mult = np.zeros((m, n))  # log10 multiplier after a step
        self.step_at = np.full((m, n), np.inf)
        self.extra_noise = np.zeros((m, n), bool)
        for p in spec.plants:
            if p.ber is not None:
                self.esnr0[p.module, p.lane] = float(esnr_of_log10_ber(np.array(math.log10(p.ber))))
            if p.kind == "step":
                self.step_at[p.module, p.lane] = p.at_s
                self.ber_mult[p.module, p.lane] = math.log10(p.factor)
            elif p.kind == "thermal":
                self.tempco[p.module, p.lane] = spec.tempco_db_per_c * p.factor
            elif p.kind == "noisy":
                self.esnr0[p.module, p.lane] = float(esnr_of_log10_ber(np.array(math.log10(4e-9))))
                self.extra_noise[p.module, p.lane] = True
            elif p.kind == "marginal":
                self.esnr0[p.module, p.lane] = float(esnr_of_log10_ber(np.array(math.log10(3e-6))))
            else:
                raise ValueError(f"unknown plant kind {p.kind!r}")
        self.walk = r.uniform(28.0, 36.0, size=m)
        period = spec.ramp_s * 2 + spec.hold_s
        self.swing_period = period
        self.next_swing = r.exponential(3600.0 / max(spec.swings_per_hour, 1e-9), size=m)
        self.swing_start = np.full(m, -np.inf)
        self.swings: list[tuple[int, float]] = []  # (module, start s) of every swing

    def swing_offset(self, t: float) -> np.ndarray:
        s = self.spec
        u = t - self.swing_start
        up = np.clip(u / s.ramp_s, 0.0, 1.0)
        down = np.clip((u - s.ramp_s - s.hold_s) / s.ramp_s, 0.0, 1.0)
        return s.swing_c * (up - down) * (u >= 0)

    def __iter__(self):
        s, r = self.spec, self.rng
        steps = int(round(s.hours * 3600.0 / s.interval_s))
        m, n = s.modules, s.lanes
        for i in range(steps):
            t = i * s.interval_s
            start = (t >= self.next_swing) & (t - self.swing_start >= self.swing_period)
            if start.any():
                self.swing_start = np.where(start, t, self.swing_start)
                self.swings += [(int(k), t) for k in np.nonzero(start)[0]]
                self.next_swing = np.where(start, t + self.swing_period + r.exponential(
                    3600.0 / max(s.swings_per_hour, 1e-9), size=m), self.next_swing)
            self.walk = np.clip(self.walk + 0.02 * math.sqrt(s.interval_s) * r.standard_normal(m), 25.0, 45.0)
            temp = self.walk + self.swing_offset(t)
            esnr = self.esnr0 + self.tempco * (temp[:, None] - 30.0)
            lb = log10_ber_of_esnr(esnr) + np.where(t >= self.step_at, self.ber_mult, 0.0)
            lb = np.minimum(lb, math.log10(0.5))
            true_esnr = esnr_of_log10_ber(lb)
            counts = r.poisson(10.0 ** lb * BITS_PER_READING)
            ber = counts / BITS_PER_READING
            noisy = self.extra_noise
            if noisy.any():
                ber = np.where(noisy, ber * 10.0 ** (0.25 * r.standard_normal((m, n))), ber)
            e_read = true_esnr + 0.05 * r.standard_normal((m, n)) + np.where(noisy, 0.2 * r.standard_normal((m, n)), 0.0)
            ts = np.full(m, t)
            yield ts, temp + 0.125 * r.standard_normal(m), ber, e_read
