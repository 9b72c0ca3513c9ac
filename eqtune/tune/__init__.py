"""Tuning: search spaces, the optimizer interface and its skopt GP adapter, baselines, margin sources.

Public API::

    from eqtune.tune import SimulationSource, tune
    src = SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"], corners=["25C", "85C"])
    result = tune(src, budget=60, seed=1)
    result.tuned.codes, result.tuned.margin, result.baseline.margin, result.evaluations
"""

from __future__ import annotations

from eqtune.tune.base import BaseOptimizer, Optimizer, make_optimizer, optimizer_from_state
from eqtune.tune.baselines import GridSearch, RandomSearch
from eqtune.tune.optimizer import GPOptimizer
from eqtune.tune.simulation import SimulationSource, parse_corners, parse_objective, resolve_knob_names
from eqtune.tune.source import FunctionSource, MarginSource, Measurement, TableSource, measure_many
from eqtune.tune.space import IndexedSpace
from eqtune.tune.tune import Evaluation, Outcome, Progress, TuneResult, first_within, threshold, tune

__all__ = [
    "BaseOptimizer", "Evaluation", "FunctionSource", "GPOptimizer", "GridSearch", "IndexedSpace",
    "MarginSource", "Measurement", "Optimizer", "Outcome", "Progress", "RandomSearch", "SimulationSource",
    "TableSource", "TuneResult", "first_within", "make_optimizer", "measure_many", "optimizer_from_state",
    "parse_corners", "parse_objective", "resolve_knob_names", "threshold", "tune",
]
