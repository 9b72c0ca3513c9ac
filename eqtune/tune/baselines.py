"""Baselines through the same ask/tell interface: exhaustive grid and random search.

``GridSearch`` visits every feasible point (the start point first, then the grid in lexicographic
level order) and is the reference optimum. ``RandomSearch`` samples feasible points uniformly
without replacement (the start point first). Both recommend the best observed mean.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from eqtune.errors import TuneError
from eqtune.serdes.knobs import KnobSpace
from eqtune.tune.base import BaseOptimizer, rng_for
from eqtune.tune.space import IndexedSpace, Key


class GridSearch(BaseOptimizer):
    """Exhaustive search over the feasible grid (needs an enumerable space)."""

    kind = "grid"

    def __init__(self, space: KnobSpace, *, seed: int | None = None, start: Mapping[str, float] | None = None,
                 ispace: IndexedSpace | None = None) -> None:
        super().__init__(space, seed=seed if seed is not None else 0, start=start, ispace=ispace)
        if self.ispace.grid is None:
            raise TuneError(
                f"the knob space has {self.ispace.size} grid points, too many for an exhaustive grid: "
                "tune fewer knobs or use the Bayesian optimizer"
            )
        self._cursor = 0  # derived data: recomputed on restore

    def _next_key(self) -> Key | None:
        if self.start_key is not None and not self.is_taken(self.start_key):
            return self.start_key
        grid = self.ispace.grid
        assert grid is not None  # the grid optimizer runs on enumerable spaces only
        while self._cursor < len(grid):
            key = tuple(int(v) for v in grid[self._cursor])
            if not self.is_taken(key):
                return key
            self._cursor += 1
        return None


class RandomSearch(BaseOptimizer):
    """Uniform random search over the feasible set, without repeats (start point first)."""

    kind = "random"

    def __init__(self, space: KnobSpace, *, seed: int | None = None, start: Mapping[str, float] | None = None,
                 ispace: IndexedSpace | None = None) -> None:
        super().__init__(space, seed=seed, start=start, ispace=ispace)
        self._order: np.ndarray | None = None
        if self.ispace.grid is not None:
            self._order = rng_for(self.seed, 0, 11).permutation(len(self.ispace.grid))
        self._cursor = 0

    def _next_key(self) -> Key | None:
        if self.start_key is not None and not self.is_taken(self.start_key):
            return self.start_key
        if self._order is not None:
            grid = self.ispace.grid
            assert grid is not None  # _order is a permutation of the grid
            while self._cursor < len(self._order):
                key = tuple(int(v) for v in grid[self._order[self._cursor]])
                if not self.is_taken(key):
                    return key
                self._cursor += 1
            return None
        rng = rng_for(self.seed, len(self.ys), len(self.pending), 5)
        for row in self.ispace.sample(rng, 256):
            key = tuple(int(v) for v in row)
            if not self.is_taken(key):
                return key
        return None
