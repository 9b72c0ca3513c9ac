"""Index view of a ``KnobSpace``: what every optimizer in this package works on.

A knob's allowed values are stepped (integer CMIS codes, or tap values in fixed steps), so the
optimizers work on the *level index* of each knob (0 .. n_levels-1) and scale it to [0, 1] for the
Gaussian process (input scaling: one unit length-scale per full knob range, whatever the knob's unit).
Constraints are honoured by construction: every point handed out here is feasible
(``KnobSpace.feasible``); nothing is ever penalized.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from eqtune.errors import EqRangeError, TuneError
from eqtune.serdes.knobs import EqPoint, KnobSpace

#: Spaces up to this many grid points are enumerated once (feasible index matrix kept in memory as
#: small integers: 4 M points x 6 knobs is 24 MB in int8). Enumerated in chunks of ``ENUM_CHUNK``.
MAX_ENUMERATE = 4_000_000
ENUM_CHUNK = 262_144

Key = tuple[int, ...]


class IndexedSpace:
    """Feasible level-index grid of a ``KnobSpace`` (enumerated when small enough, else sampled)."""

    def __init__(self, space: KnobSpace, *, max_enumerate: int = MAX_ENUMERATE) -> None:
        if not space.knobs:
            raise TuneError("no knobs to tune: choose at least one with --knobs")
        self.space = space
        self.names: tuple[str, ...] = space.names
        self.levels: list[np.ndarray] = [np.asarray(k.values, dtype=float) for k in space.knobs]
        self.n_levels = np.array([len(v) for v in self.levels], dtype=int)
        if np.any(self.n_levels == 0):
            empty = [k.name for k in space.knobs if not k.values]
            raise TuneError(f"knob(s) {', '.join(empty)} have no allowed values: check --knobs and the profile")
        self.d = len(self.levels)
        self._den = np.maximum(self.n_levels - 1, 1).astype(float)
        self._lookup = [{round(float(v), 9): i for i, v in enumerate(lv)} for lv in self.levels]
        self.grid: np.ndarray | None = None  # feasible index matrix (rows), when enumerated
        self._col0: np.ndarray | None = None  # the grid's first column, contiguous (``in_box``)
        total = int(np.prod(self.n_levels.astype(float)))
        self.size = total
        if total <= max_enumerate:
            self.grid = self._enumerate(total)
            if len(self.grid) == 0:
                raise TuneError(
                    f"the knob space ({', '.join(self.names)}) is empty after its constraints: "
                    "tune fewer knobs (--knobs) or fix others to feasible values"
                )
        else:
            probe = self._sample_raw(np.random.default_rng(0), 20_000)
            if len(probe) == 0:
                raise TuneError(
                    f"no feasible point found in the knob space ({', '.join(self.names)}) after its "
                    "constraints: tune fewer knobs (--knobs) or fix others to feasible values"
                )

    def _enumerate(self, total: int) -> np.ndarray:
        """Feasible level-index rows of the whole box (C order), in the smallest integer type that holds
        the largest level index, checked against the constraints ``ENUM_CHUNK`` points at a time."""
        dtype = np.int8 if int(self.n_levels.max()) <= 127 else (np.int16 if int(self.n_levels.max()) <= 32767
                                                                 else np.int32)
        shape = tuple(int(n) for n in self.n_levels)
        parts = []
        for a in range(0, total, ENUM_CHUNK):
            flat = np.arange(a, min(a + ENUM_CHUNK, total), dtype=np.int64)
            idx = np.stack(np.unravel_index(flat, shape), axis=1).astype(dtype)
            parts.append(idx[self.space.feasible(self.values(idx))])
        return np.concatenate(parts) if parts else np.zeros((0, self.d), dtype=dtype)

    # -- conversions ---------------------------------------------------------------------------
    @property
    def n_feasible(self) -> int | None:
        return None if self.grid is None else len(self.grid)

    def values(self, idx: np.ndarray) -> np.ndarray:
        """Knob values for a matrix of level indices (rows in ``names`` order)."""
        idx = np.atleast_2d(np.asarray(idx, dtype=int))
        out = np.empty(idx.shape, dtype=float)
        for j, lv in enumerate(self.levels):
            out[:, j] = lv[idx[:, j]]
        return out

    def scaled(self, idx: np.ndarray) -> np.ndarray:
        """Level indices scaled to [0, 1] per knob (the GP's input space)."""
        out: np.ndarray = np.atleast_2d(np.asarray(idx, dtype=float)) / self._den
        return out

    def key_of(self, point: Mapping[str, float], *, option: str = "point") -> Key:
        """Level indices of a point (only the tuned knobs are read; others are ignored)."""
        missing = [n for n in self.names if n not in point]
        if missing:
            raise TuneError(f"{option} has no value for knob(s) {', '.join(missing)}")
        try:  # fast path: exact allowed values
            k = tuple(lk[round(float(point[n]), 9)] for n, lk in zip(self.names, self._lookup))
        except (KeyError, TypeError, ValueError):
            k = None
        if k is not None:
            if not self.is_feasible(k):
                raise TuneError(
                    f"{option} {self.describe(k)} violates the knob constraints: choose a feasible point")
            return k
        key = []
        for knob, lv in zip(self.space.knobs, self.levels):
            try:
                v = knob.check(float(point[knob.name]))
            except EqRangeError as exc:
                raise TuneError(f"{option}: {exc}") from exc
            key.append(int(np.argmin(np.abs(lv - v))))
        k = tuple(key)
        if not self.is_feasible(k):
            raise TuneError(f"{option} {self.describe(k)} violates the knob constraints: choose a feasible point")
        return k

    def point(self, key: Sequence[int]) -> EqPoint:
        """The full ``EqPoint`` (fixed knobs included) for level indices ``key``."""
        # python floats (never numpy scalars) so that points are JSON-able as they are
        return self.space.to_point([float(lv[int(i)]) for lv, i in zip(self.levels, key)])

    def codes(self, key: Sequence[int]) -> dict[str, float | int]:
        """Tuned knob values only; integer codes as ``int``."""
        out: dict[str, float | int] = {}
        for knob, lv, i in zip(self.space.knobs, self.levels, key):
            v = float(lv[int(i)])
            out[knob.name] = int(round(v)) if knob.is_code and float(v).is_integer() else v
        return out

    def describe(self, key: Sequence[int]) -> str:
        return ", ".join(f"{n}={v:g}" for n, v in self.codes(key).items())

    def is_feasible(self, key: Sequence[int]) -> bool:
        return bool(self.space.feasible(self.values(np.asarray(key)[None, :]))[0])

    def in_box(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Rows of the enumerated grid with lo <= level <= hi in every knob. The grid is in C order, so
        the rows within the first knob's range are one contiguous slice (binary search); the other
        knobs are then compared column by column on that slice only."""
        assert self.grid is not None
        if self._col0 is None:
            self._col0 = np.ascontiguousarray(self.grid[:, 0])
        a = int(np.searchsorted(self._col0, lo[0], side="left"))
        b = int(np.searchsorted(self._col0, hi[0], side="right"))
        part = self.grid[a:b]
        mask = np.ones(len(part), dtype=bool)
        for j in range(1, self.d):
            col = part[:, j]
            mask &= (col >= lo[j]) & (col <= hi[j])
        return part[mask]

    # -- sampling ------------------------------------------------------------------------------
    def _sample_raw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        idx = np.stack([rng.integers(0, m, size=n) for m in self.n_levels], axis=1).astype(np.int32)
        out: np.ndarray = idx[self.space.feasible(self.values(idx))]
        return out

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Up to ``n`` distinct feasible index rows drawn uniformly over the feasible set."""
        if self.grid is not None:
            if n >= len(self.grid):
                return self.grid.copy()
            return self.grid[np.sort(rng.choice(len(self.grid), size=n, replace=False))]
        rows = self._sample_raw(rng, 4 * n)
        rows = np.unique(rows, axis=0)
        if len(rows) > n:
            rows = rows[np.sort(rng.choice(len(rows), size=n, replace=False))]
        return rows

    def neighbours(self, keys: Iterable[Sequence[int]], radius: int = 1, *, axis_only: bool = False) -> np.ndarray:
        """Feasible points within ``radius`` levels of any of ``keys`` in every knob (Chebyshev ball);
        ``axis_only``: only the moves of one knob at a time (coordinate neighbours)."""
        centres = [np.asarray(k, dtype=np.int32) for k in keys]
        if not centres:
            return np.zeros((0, self.d), dtype=np.int32)
        steps = np.arange(-radius, radius + 1)
        offs = np.stack(np.meshgrid(*([steps] * self.d), indexing="ij"), axis=-1).reshape(-1, self.d)
        if len(offs) > 4096 or axis_only:  # high dimension: axis moves only
            eye = np.eye(self.d, dtype=int)
            offs = np.concatenate([eye * s for s in steps if s != 0])
        rows = np.concatenate([k[None, :] + offs for k in centres])
        ok = np.all((rows >= 0) & (rows < self.n_levels[None, :]), axis=1)
        rows = np.unique(rows[ok], axis=0).astype(np.int32)
        out: np.ndarray = rows[self.space.feasible(self.values(rows))]
        return out

    def nearest_feasible(self, target: np.ndarray, exclude: set[Key], rng: np.random.Generator) -> Key | None:
        """The feasible point nearest (scaled Euclidean) to fractional index ``target`` not in ``exclude``."""
        pool = self.grid if self.grid is not None else np.concatenate(
            [self.sample(rng, 20_000), self.neighbours([np.clip(np.rint(target), 0, self.n_levels - 1)], 2)]
        )
        dist = np.sum((self.scaled(pool) - self.scaled(target[None, :])) ** 2, axis=1)
        # the len(exclude) + 1 nearest are enough (stable order among them); a full sort of a large
        # grid costs tens of ms
        m = min(len(exclude) + 1, len(dist))
        cut = np.partition(dist, m - 1)[m - 1]
        near = np.flatnonzero(dist <= cut)  # every tie at the cut too: the same order as a stable sort
        near = near[np.lexsort((near, dist[near]))]
        for i in near:
            k = tuple(int(v) for v in pool[i])
            if k not in exclude:
                return k
        return None


def default_key(ispace: IndexedSpace) -> Key:
    """Level indices of the knobs' defaults (the nearest feasible point if the defaults violate a constraint)."""
    target = np.array(
        [int(np.argmin(np.abs(lv - k.default))) for k, lv in zip(ispace.space.knobs, ispace.levels)], dtype=float
    )
    key = tuple(int(v) for v in target)
    if ispace.is_feasible(key):
        return key
    near = ispace.nearest_feasible(target, set(), np.random.default_rng(0))
    assert near is not None  # the space is not empty (checked in IndexedSpace)
    return near
