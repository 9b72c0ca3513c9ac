"""EQ-point parsing of the eye engine: knob mappings -> validated arrays.

A point is a mapping knob name -> value (``eqtune.serdes.knobs``); missing knobs take the profile's
defaults, knobs of other directions are ignored, unknown names and values off a knob's grid raise
``EqRangeError``. The host TX FFE main tap c0 follows from the others (93A.1.6: c0 = 1 - sum |c_k|) and is
reported as the derived key ``tx_c0``. ``PointParser`` is a mixin of ``eqtune.eye.engine.EyeEngine``
(it reads ``_tx``, ``_rx``, ``_knobs`` and ``profile``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from eqtune.arrays import FloatArray, IntArray
from eqtune.errors import EqRangeError, InputError
from eqtune.eye.state import EngineState
from eqtune.serdes import equalizers as eqz
from eqtune.serdes.knobs import (
    CTLE_GDC,
    CTLE_GDC2,
    CTLE_KNOBS,
    KNOB_NAMES,
    RX_AMP,
    RX_POST,
    RX_PRE,
    TX_EQ,
    TX_TAP_OFFSETS,
)

KNOWN_KNOBS = KNOB_NAMES
DERIVED_KEYS = ("tx_c0",)  # reported in EyeResult.eq, accepted (and ignored) on input


class PointParser(EngineState):
    """EQ points -> (TX FFE taps, TX amplitude, RX setting index) arrays (mixin of ``EyeEngine``)."""

    def _parse(self, points: Sequence[Mapping[str, float]]) -> tuple[FloatArray, FloatArray, IntArray, list[dict[str, float]]]:
        """Points -> (taps (B, K) incl. main, amplitude (B,), rx setting index (B,) or -1 = adapt, points)."""
        B = len(points)
        names = list(self._tx.knob_names)
        rx_names = [TX_EQ] if self._rx.kind == "module" else [k for k in CTLE_KNOBS if k in self._knobs]
        cols = {n: np.empty(B) for n in names + rx_names}
        given_rx = np.zeros(B, dtype=bool)
        clean: list[dict[str, float]] = []
        for i, p in enumerate(points):
            if not isinstance(p, Mapping):
                raise InputError(f"EQ point {i} is {type(p).__name__}: give a mapping knob name -> value")
            unknown = [k for k in p if k not in KNOWN_KNOBS and k not in DERIVED_KEYS]
            if unknown:
                raise EqRangeError(f"unknown knob(s) {', '.join(map(str, unknown))}: use {', '.join(KNOWN_KNOBS)}")
            q: dict[str, float] = {}
            for n in names:
                q[n] = float(p[n]) if n in p else float(self._knobs[n].default)
            has = [n for n in rx_names if n in p]
            if self._rx.kind == "module":
                q[TX_EQ] = float(p.get(TX_EQ, self._knobs[TX_EQ].default))
                given_rx[i] = True
            elif has:
                given_rx[i] = True
                for n in rx_names:
                    q[n] = float(p[n]) if n in p else float(self._knobs[n].default)
            for n, v in q.items():
                if not math.isfinite(v):
                    raise EqRangeError(f"{n}={v} is not a number: give a finite value")
                cols[n][i] = v
            clean.append(q)
        for n in list(cols):
            vals = cols[n] if n not in rx_names or self._rx.kind == "module" else cols[n][given_rx]
            self._check_values(n, vals)
        # taps
        if self._tx.kind == "host":
            other = np.stack([cols[n] for n in names], axis=-1) if names else np.zeros((B, 0))
            eqz.check_ffe(other, self.profile.tx.c0_min, tuple(names))
            c0 = eqz.ffe_main_tap(other)
            offs = [TX_TAP_OFFSETS[n] for n in names]
            full = np.empty((B, len(self._tx.offsets)))
            for k, d in enumerate(self._tx.offsets):
                full[:, k] = c0 if d == 0 else other[:, offs.index(d)]
            amp = np.full(B, self._tx.amplitude_v)
            for i, q in enumerate(clean):
                q["tx_c0"] = float(c0[i])
        else:
            m = self.profile.module
            full = eqz.module_ffe_taps(cols[RX_PRE] * m.rx_pre_db_per_code, cols[RX_POST] * m.rx_post_db_per_code)
            amp = np.array([m.rx_amp_swing_mv_ppd(int(round(a))) for a in cols[RX_AMP]]) / 2000.0
        # rx setting index
        idx = np.full(B, -1, dtype=int)
        if given_rx.any():
            s = self._rx.settings
            if self._rx.kind == "module":
                idx = np.rint(cols[TX_EQ]).astype(int)
            else:
                g1 = cols[CTLE_GDC]
                g2 = cols[CTLE_GDC2] if CTLE_GDC2 in cols else np.zeros(B)
                d = np.abs(s[None, :, 0] - g1[:, None]) + np.abs(s[None, :, 1] - g2[:, None])
                idx = np.where(given_rx, np.argmin(d, axis=1), -1)
        return full, amp, idx, clean

    def _check_values(self, name: str, vals: np.ndarray) -> None:
        if len(vals) == 0:
            return
        allowed = np.asarray(self._knobs[name].values)
        ok = np.min(np.abs(vals[:, None] - allowed[None, :]), axis=1) <= 1e-9
        if not ok.all():
            self._knobs[name].check(float(vals[~ok][0]))  # raises EqRangeError with the allowed range
