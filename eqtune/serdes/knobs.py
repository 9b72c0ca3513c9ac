"""Knobs: the named equalization settings a tuner can change, and the spaces they form.

An ``EqPoint`` is a plain ``dict[str, float]`` mapping knob name -> value (an integer code for
CMIS codes, a stepped physical value for SerDes taps or CTLE gains). Knob names are fixed:

Module (CMIS, per lane), see CMIS 5.2 Table 8-47..8-52 (page 10h Staged Control Set):
    ``rx_pre``  Rx output pre-cursor code 0..7  (0..3.5 dB, 0.5 dB/code)
    ``rx_post`` Rx output post-cursor code 0..7 (0..7 dB, 1 dB/code)
    ``rx_amp``  Rx output amplitude code 0..3   (100-400, 300-600, 400-800, 600-1200 mV ppd)
    ``tx_eq``   Tx input fixed EQ code 0..N     (N dB of peaking)
Host SerDes (from the SerDes profile):
    ``tx_cm3``, ``tx_cm2``, ``tx_cm1``  TX FFE pre-cursor taps c(-3), c(-2), c(-1) (linear, signed)
    ``tx_c1``, ``tx_c2``                 TX FFE post-cursor taps c(1), c(2)
        (main tap c(0) = 1 - sum|others|, IEEE 802.3 93A.1.6 normalization)
    ``ctle_gdc``, ``ctle_gdc2``          RX CTLE DC gains (dB), 802.3ck 120F form
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

EqPoint = dict[str, float]


@dataclass(frozen=True)
class Knob:
    """One tunable setting: its allowed values (ascending), default, unit and meaning."""

    name: str
    values: tuple[float, ...]
    default: float
    unit: str = "code"
    description: str = ""

    @property
    def is_code(self) -> bool:
        return self.unit == "code"

    def check(self, value: float) -> float:
        """Return ``value`` if it is an allowed value (within 1e-9), else raise EqRangeError."""
        from eqtune.errors import EqRangeError

        arr = np.asarray(self.values)
        idx = int(np.argmin(np.abs(arr - value)))
        if abs(arr[idx] - value) > 1e-9:
            lo, hi = self.values[0], self.values[-1]
            step = (self.values[1] - self.values[0]) if len(self.values) > 1 else 0
            raise EqRangeError(
                f"{self.name}={value:g} is not allowed: use {lo:g}..{hi:g}"
                + (f" in steps of {step:g}" if step else "")
                + (f" {self.unit}" if self.unit != "code" else "")
            )
        return float(arr[idx])


# A constraint takes a matrix of points (n_points x n_knobs, columns in ``KnobSpace.names`` order)
# and returns a boolean mask of feasible rows.
Constraint = Callable[[np.ndarray, Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class KnobSpace:
    """The knobs being tuned (others fixed) plus feasibility constraints."""

    knobs: tuple[Knob, ...]
    constraints: tuple[Constraint, ...] = ()
    fixed: Mapping[str, float] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    def feasible(self, matrix: np.ndarray) -> np.ndarray:
        """Boolean mask of rows of ``matrix`` that satisfy every constraint."""
        matrix = np.atleast_2d(np.asarray(matrix, dtype=float))
        mask = np.ones(len(matrix), dtype=bool)
        for c in self.constraints:
            mask &= np.asarray(c(matrix, self.names), dtype=bool)
        return mask

    def size(self) -> int:
        return int(np.prod([len(k.values) for k in self.knobs])) if self.knobs else 0

    def grid(self) -> np.ndarray:
        """Every feasible point as a matrix (rows in ``names`` column order)."""
        if not self.knobs:
            return np.zeros((0, 0))
        axes = [np.asarray(k.values, dtype=float) for k in self.knobs]
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
        return mesh[self.feasible(mesh)]

    def to_point(self, row: Sequence[float]) -> EqPoint:
        """A full ``EqPoint``: the fixed knobs plus this row's tuned values."""
        point: EqPoint = dict(self.fixed)
        point.update({k.name: float(v) for k, v in zip(self.knobs, row)})
        return point
