"""The analytic stand-in link of a study (``--backend synthetic``): the same algorithm as the eye-engine
backend (``eqtune.study.compute.solve``) on a closed-form model, to exercise the study machinery
(executors, resume, reports) quickly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eqtune.errors import ConfigError
from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ, EqPoint, Knob, KnobSpace
from eqtune.study.berfloor import ber_key, extrapolate
from eqtune.study.compute import (
    OBJECTIVE_METRIC,
    GridMeasures,
    _hold_for_tests,
    _log_for_tests,
    _row_point,
    _worst_corner_index,
    corner_conditions,
    solve,
)
from eqtune.study.spec import Combination, Corner

_SYNTH_LENGTH = {"c2m-4in": 4.0, "c2m-10in": 10.0, "c2m-16in": 16.0, "c2m-10in-xtalk": 10.0}


class SyntheticModel:
    """An analytic link: eye height falls with trace length/temperature; the best codes move with length.

    Used to test the study machinery without the eye engine (and by ``--backend synthetic``). The
    bathtub is Gaussian, so the Q-scale extrapolation is exact here.
    """

    SIGMA_MV = 1.3  # Gaussian noise per eye edge (mV)

    def __init__(self, combo: Combination):
        self.combo = combo
        self.corner_names = [c.name for c in combo.corners]
        ref = combo.channel
        length = ref.param("length_in")
        if length is None and ref.param("length_mm") is not None:
            length = ref.param("length_mm") / 25.4
        if length is None:
            length = _SYNTH_LENGTH.get(Path(ref.ref).stem, 8.0)
        if ref.param("material") not in (None, "megtron6", "megtron7", "tachyon100g", "fr4"):
            raise ConfigError(f"unknown material {ref.param('material')!r}: use megtron6, megtron7, tachyon100g, fr4")
        self.loss_per_in = 1.6 if ref.param("material") == "fr4" else 1.0
        self.length = float(length)
        knobs = []
        for name in combo.tune.knobs:
            n = {RX_PRE: 8, RX_POST: 8, RX_AMP: 4, TX_EQ: 8}.get(name, 5)
            knobs.append(Knob(name, tuple(float(i) for i in range(n)), default=float(min(2, n - 1))))
        self.space = KnobSpace(tuple(knobs))
        self._prof = 0.0 if combo.profile in (None, "host-lr-112g") else -3.0

    def default_point(self) -> EqPoint:
        return {k.name: k.default for k in self.space.knobs}

    def _eh(self, corner: Corner, x: np.ndarray) -> np.ndarray:
        temp, xt = corner_conditions(self.combo.channel, corner)
        loss = self.length * self.loss_per_in * (1 + 0.002 * ((temp if temp is not None else 25.0) - 25.0))
        eh = np.full(len(x), 70.0 - 2.6 * loss + self._prof - (4.0 if xt and self.combo.channel.param(
            "crosstalk", True) else 0.0))
        for j, k in enumerate(self.space.knobs):
            opt = {RX_PRE: loss / 7.0, RX_POST: loss / 3.0, RX_AMP: 2.2}.get(k.name, 1.0 + loss / 10.0)
            eh -= (1.8 if k.name != RX_AMP else 3.0) * (x[:, j] - opt) ** 2
        return eh

    def measure_grid(self, corner: int, grid: np.ndarray) -> GridMeasures:
        """Every row of ``grid`` (columns ``space.names``) at ``corner``, vectorized."""
        x = np.asarray(grid, dtype=float).reshape(len(grid), -1)
        eh = self._eh(self.combo.corners[corner], x)
        cols = {"eye_height_min_mv": eh, "vec_db": 20 * np.log10(200.0 / np.maximum(eh, 1.0)),
                "com_db": eh / 8.0, "eye_width_ui": np.clip(0.2 + eh / 250.0, 0, 1)}
        cols["margin"] = cols[OBJECTIVE_METRIC[self.combo.tune.objective]]
        return GridMeasures(cols)

    def measure(self, corner: int, points: Sequence[EqPoint]) -> list[dict[str, float]]:
        x = np.array([[float(p[n]) for n in self.space.names] for p in points]).reshape(len(points), -1)
        got = self.measure_grid(corner, x)
        return [{k: float(v[j]) for k, v in got.columns.items()} for j in range(len(points))]

    def floor(self, corner: int, point: EqPoint, bers: Sequence[float]) -> dict[str, dict[str, Any]]:
        from eqtune.study.berfloor import q_of_ber

        eh6 = self.measure(corner, [point])[0]["eye_height_min_mv"]
        tub_ber = np.logspace(-3, -9, 13)
        q6 = float(q_of_ber(self.combo.target_ber))
        tub_eh = eh6 - 2 * self.SIGMA_MV * (q_of_ber(tub_ber) - q6)
        extra = extrapolate(tub_ber, tub_eh, bers)
        out = {}
        for b in bers:
            key = ber_key(b)
            direct = float(eh6 - 2 * self.SIGMA_MV * (float(q_of_ber(b)) - q6))
            ex = extra[key]["extrapolated"]
            out[key] = {"direct": direct, "extrapolated": ex, "delta": None if ex is None else ex - direct,
                        "fit_r2": extra[key]["r2"]}
        return out

    def bathtub(self, corner: int, point: EqPoint) -> tuple[np.ndarray, np.ndarray]:
        from eqtune.study.berfloor import q_of_ber

        eh6 = self.measure(corner, [point])[0]["eye_height_min_mv"]
        ber = np.logspace(-2, -15, 27)
        return ber, eh6 - 2 * self.SIGMA_MV * (q_of_ber(ber) - float(q_of_ber(self.combo.target_ber)))


def synthetic(combo: Combination) -> dict[str, Any]:
    """Analytic stand-in for ``simulate`` (same algorithm, no eye engine).

    Test hooks (both backends): ``EQTUNE_STUDY_TEST_DELAY`` (seconds) slows each combination down, and
    ``EQTUNE_STUDY_TEST_LOG`` (a file) gets one line per finished computation: the study tests use
    them to interrupt a running study and to count computations. ``EQTUNE_STUDY_TEST_GATE``
    (``N:FILE``) holds every computation that starts after N have finished until FILE exists: an
    interruption test makes its window this way, so the study cannot finish before the signal lands
    however loaded the machine is.
    """
    _hold_for_tests()
    row = solve(combo, SyntheticModel(combo))
    _log_for_tests(combo)
    return row


def synthetic_detail(combo: Combination, row: Mapping[str, str]) -> dict[str, Any]:
    """Bathtub of the robust codes at the worst corner (synthetic model; no 2-D eye)."""
    model = SyntheticModel(combo)
    ber, eh = model.bathtub(_worst_corner_index(combo, row), _row_point(model, row))
    return {"bathtub": {"ber": ber.tolist(), "eye_height_mv": eh.tolist()}, "floor_bers": list(combo.ber_floor),
            "fit_ber": [1e-3, 1e-9]}
