"""Margin sources: anything that turns an ``EqPoint`` into a margin (larger is better).

``MarginSource`` is the contract between the optimizer and the world. ``SimulationSource``
(``eqtune.tune.simulation``) measures with the eye engine (worst case over corners); ``LiveSource`` (``eqtune.tune.live``) measures a real or
emulated module. ``FunctionSource`` wraps a plain function (tests, synthetic objectives) and
``TableSource`` replays a precomputed grid (benchmarks: the exhaustive grid is evaluated once and every
optimizer then reads the same table).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import numpy as np

from eqtune.errors import TuneError
from eqtune.jsonutil import finite_or_none, to_json_value
from eqtune.serdes.knobs import (
    EqPoint,
    KnobSpace,
)
from eqtune.tune.space import IndexedSpace

if TYPE_CHECKING:  # the channel and eye rooms are imported lazily (eqtune --help stays fast)
    from os import PathLike

    from eqtune.channel.model import Channel

#: a channel as the sources take it: a loaded Channel, a library name, or a path (.toml, .sNp)
ChannelSpec: TypeAlias = "Channel | str | PathLike[str]"


@dataclass
class Measurement:
    """One measured margin: ``margin`` (objective units, negative for a closed eye), the metrics it came
    from (JSON-able: per-corner values, eye height, COM, ...), and what the measurement cost (s)."""

    margin: float
    metrics: dict[str, Any] = field(default_factory=dict)
    cost_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"margin": finite_or_none(self.margin), "metrics": to_json_value(self.metrics), "cost_s": finite_or_none(self.cost_s)}


@runtime_checkable
class MarginSource(Protocol):
    """``space`` (the knobs being tuned) and ``measure(point) -> Measurement``.

    A source may also offer ``measure_batch(points) -> list[Measurement]`` (vectorized simulation),
    ``default_point() -> EqPoint`` (where tuning starts by default), ``objective`` (str, for reports),
    ``units`` (str, e.g. "mV" or "dB") and ``deterministic`` (bool: the same point always measures the
    same, as in simulation; then ``tune()`` returns the best measured point instead of the GP's
    noise-aware pick).
    """

    space: KnobSpace

    def measure(self, point: EqPoint) -> Measurement: ...


def measure_many(source: MarginSource, points: Sequence[EqPoint]) -> list[Measurement]:
    """Measure several points, in one batch when the source can."""
    if not points:
        return []
    batch = getattr(source, "measure_batch", None)
    if batch is not None and len(points) > 1:
        out = list(batch(list(points)))
        if len(out) != len(points):
            raise TuneError(f"measure_batch returned {len(out)} measurements for {len(points)} points")
        return out
    return [source.measure(p) for p in points]


def source_start(source: MarginSource) -> EqPoint:
    """Where tuning starts by default: the source's ``default_point()`` or the knobs' defaults."""
    fn = getattr(source, "default_point", None)
    base: EqPoint = dict(source.space.fixed)
    if fn is not None:
        p = fn()
        base.update({k: float(v) for k, v in p.items()})
    for k in source.space.knobs:
        base.setdefault(k.name, float(k.default))
    return base


# ---------------------------------------------------------------------------------------------
# Simple sources
# ---------------------------------------------------------------------------------------------
class FunctionSource:
    """A source from a function ``f(point) -> margin`` (or ``-> Measurement``), optionally noisy."""

    def __init__(self, space: KnobSpace, fn: Callable[[EqPoint], float | Measurement], *, noise: float = 0.0,
                 seed: int = 0, objective: str = "margin", units: str = "") -> None:
        self.space = space
        self.fn = fn
        self.noise = float(noise)
        self._rng = np.random.default_rng(seed)
        self.objective = objective
        self.units = units
        self.deterministic = self.noise == 0
        self.calls = 0

    def measure(self, point: EqPoint) -> Measurement:
        t0 = time.perf_counter()
        r = self.fn(point)
        self.calls += 1
        m = r if isinstance(r, Measurement) else Measurement(float(r), {})
        if self.noise > 0:
            m = Measurement(m.margin + float(self._rng.normal(0.0, self.noise)), {**m.metrics, "true": m.margin})
        m.cost_s = m.cost_s or time.perf_counter() - t0
        return m


class TableSource:
    """Replays margins precomputed on every feasible grid point (rows in ``space.names`` order)."""

    def __init__(self, space: KnobSpace, grid: np.ndarray, margins: np.ndarray, *, objective: str = "margin",
                 units: str = "", start: EqPoint | None = None) -> None:
        self.space = space
        self.objective = objective
        self.units = units
        self._start = start
        self.deterministic = True
        grid = np.asarray(grid, dtype=float)
        self._table = {tuple(np.round(r, 9)): float(m) for r, m in zip(grid, np.asarray(margins, dtype=float))}
        self.calls = 0
        self._screen: tuple[np.ndarray, np.ndarray] | None = None

    def set_screen(self, grid: np.ndarray, values: np.ndarray) -> None:
        """Screened margins of the table's rows (benchmarks: the simulation's stage-A eye, precomputed)."""
        self._screen = (np.asarray(grid, dtype=float), np.asarray(values, dtype=float))

    def screen_margins(self, ispace: IndexedSpace) -> np.ndarray | None:
        if self._screen is None or ispace.grid is None:
            return None
        grid, values = self._screen
        rows = ispace.values(ispace.grid)
        if rows.shape != grid.shape or not np.allclose(rows, grid):
            raise TuneError("the table's screen was set for another grid: set_screen with the rows of "
                            "IndexedSpace(space).grid, in that order")
        return values

    def default_point(self) -> EqPoint:
        return dict(self._start) if self._start is not None else {k.name: k.default for k in self.space.knobs}

    def measure(self, point: EqPoint) -> Measurement:
        key = tuple(round(float(point[n]), 9) for n in self.space.names)
        if key not in self._table:
            raise TuneError(f"point {dict(zip(self.space.names, key))} is not in the precomputed table")
        self.calls += 1
        return Measurement(self._table[key], {})
