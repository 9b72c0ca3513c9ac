"""The optimizer interface of eqtune: ``ask`` / ``tell`` / ``recommend`` / ``state``.

Every optimizer (the Gaussian-process one in :mod:`eqtune.tune.optimizer`, the grid and random
baselines in :mod:`eqtune.tune.baselines`) *maximizes* a margin over a ``KnobSpace`` and keeps its
state as plain JSON-able data, so that a run can be journaled and resumed: ``from_state(state(),
space)`` continues the same run (same next proposal). Seeds are drawn once and stored in the state;
every random decision is derived from ``(seed, number of observations)``, never from a hidden RNG.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Self, cast, overload, runtime_checkable

import numpy as np

from eqtune.errors import TuneError
from eqtune.serdes.knobs import EqPoint, KnobSpace
from eqtune.tune.space import IndexedSpace, Key

STATE_VERSION = 1


@runtime_checkable
class Optimizer(Protocol):
    """What ``tune()`` needs from an optimizer (margins are maximized)."""

    space: KnobSpace

    def ask(self) -> EqPoint | None:
        """The next point to measure, or ``None`` when every feasible point has been measured."""

    def ask_many(self, n: int) -> list[EqPoint]:
        """Up to ``n`` points that can be measured together (e.g. the initial design); at least one
        unless the space is exhausted."""

    def tell(self, point: Mapping[str, float], margin: float) -> None:
        """Record a measured margin (any feasible point, asked or not; repeats are averaged/modelled)."""

    def recommend(self) -> EqPoint | None:
        """The point to use now (``None`` before any observation)."""

    def state(self) -> dict[str, Any]:
        """Plain JSON-able data; ``type(self).from_state(state, space)`` continues the run."""


def new_seed() -> int:
    """A fresh 32-bit seed (stored in the optimizer state so that a resumed run stays reproducible)."""
    return int(cast(int, np.random.SeedSequence().entropy) % (2**32))  # entropy: an int when drawn here


def rng_for(seed: int, *stream: int) -> np.random.Generator:
    """A generator determined by the seed and a stream id (e.g. the number of observations)."""
    return np.random.default_rng([int(seed), *[int(s) for s in stream]])


class BaseOptimizer:
    """Shared bookkeeping: observations in level-index space, pending asks, state (de)serialization."""

    kind = "base"

    def __init__(self, space: KnobSpace, *, seed: int | None = None, start: Mapping[str, float] | None = None,
                 ispace: IndexedSpace | None = None) -> None:
        self.space = space
        self.ispace = ispace if ispace is not None else IndexedSpace(space)
        self.seed = int(seed) if seed is not None else new_seed()
        self.start_key: Key | None = (
            self.ispace.key_of(start, option="start point") if start is not None else None
        )
        self.keys: list[Key] = []  # one per observation (repeats allowed)
        self.ys: list[float] = []
        self.pending: list[Key] = []
        self._seen: set[Key] = set()  # distinct evaluated keys (derived from ``keys``)
        self._pending_set: set[Key] = set()

    # -- observations --------------------------------------------------------------------------
    @property
    def n_observations(self) -> int:
        return len(self.ys)

    def evaluated(self) -> set[Key]:
        return set(self._seen)

    def _taken(self) -> set[Key]:
        if not self.pending:
            return self._seen
        return self._seen | self._pending_set

    def is_taken(self, key: Key) -> bool:
        return key in self._seen or key in self._pending_set

    def tell(self, point: Mapping[str, float], margin: float) -> None:
        margin = float(margin)
        if not math.isfinite(margin):
            raise TuneError(f"margin must be a finite number, got {margin!r} (a closed eye is a negative margin)")
        key = self.ispace.key_of(point, option="told point")
        if key in self._pending_set:
            if key == self.pending[0]:
                self.pending.pop(0)
            else:
                self.pending.remove(key)
            if key not in self.pending:
                self._pending_set.discard(key)
        self.keys.append(key)
        self._seen.add(key)
        self.ys.append(margin)
        self._on_tell()

    def _on_tell(self) -> None:  # hook
        pass

    def mean_by_point(self) -> dict[Key, tuple[float, int]]:
        """Observed mean margin and count per distinct point (insertion order)."""
        acc: dict[Key, list[float]] = {}
        for k, y in zip(self.keys, self.ys):
            acc.setdefault(k, []).append(y)
        return {k: (float(np.mean(v)), len(v)) for k, v in acc.items()}

    def best_observed(self) -> tuple[Key, float] | None:
        means = self.mean_by_point()
        if not means:
            return None
        key = max(means, key=lambda k: means[k][0])  # first of equal means wins (stable)
        return key, means[key][0]

    def recommend(self) -> EqPoint | None:
        best = self.best_observed()
        return None if best is None else self.ispace.point(best[0])

    def ranked(self) -> list[Key]:
        """Distinct evaluated points, best first (by the optimizer's own estimate)."""
        means = self.mean_by_point()
        return sorted(means, key=lambda k: -means[k][0])

    # -- asking --------------------------------------------------------------------------------
    def _next_key(self) -> Key | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def ask(self) -> EqPoint | None:
        key = self._next_key()
        if key is None:
            return None
        self._add_pending([key])
        return self.ispace.point(key)

    def _add_pending(self, keys: list[Key]) -> None:
        self.pending.extend(keys)
        self._pending_set.update(keys)

    def ask_many(self, n: int) -> list[EqPoint]:
        out = []
        for _ in range(max(1, int(n))):
            p = self.ask()
            if p is None:
                break
            out.append(p)
        return out

    # -- state ---------------------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        return {}

    def state(self) -> dict[str, Any]:
        isp = self.ispace
        return {
            "kind": self.kind,
            "version": STATE_VERSION,
            "seed": self.seed,
            "knobs": {n: [float(v) for v in lv] for n, lv in zip(isp.names, isp.levels)},
            "start": None if self.start_key is None else isp.codes(self.start_key),
            "points": [isp.codes(k) for k in self.keys],
            "margins": [float(y) for y in self.ys],
            "pending": [isp.codes(k) for k in self.pending],
            "config": self._config(),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], space: KnobSpace) -> Self:
        check_state(state, space, cls.kind)
        opt = cls(space, seed=state["seed"], start=_full(space, state.get("start")), **dict(state.get("config") or {}))
        opt._restore(state)
        return opt

    def _restore(self, state: Mapping[str, Any]) -> None:
        isp = self.ispace
        self.keys = [isp.key_of(_full(self.space, p), option="state point") for p in state.get("points", [])]
        self.ys = [float(y) for y in state.get("margins", [])]
        self._seen = set(self.keys)
        self._pending_set = set(self.pending)
        self.pending = [isp.key_of(_full(self.space, p), option="state point") for p in state.get("pending", [])]


@overload
def _full(space: KnobSpace, codes: Mapping[str, float]) -> EqPoint: ...
@overload
def _full(space: KnobSpace, codes: None) -> None: ...
@overload
def _full(space: KnobSpace, codes: Mapping[str, float] | None) -> EqPoint | None: ...
def _full(space: KnobSpace, codes: Mapping[str, float] | None) -> EqPoint | None:
    if codes is None:
        return None
    p: EqPoint = dict(space.fixed)
    p.update({k: float(v) for k, v in codes.items()})
    return p


def check_state(state: Mapping[str, Any], space: KnobSpace, kind: str | None = None) -> None:
    """Refuse a state that was saved for another optimizer or another knob space."""
    if not isinstance(state, Mapping) or "kind" not in state:
        raise TuneError("optimizer state is not an eqtune optimizer state (no 'kind')")
    if kind is not None and state["kind"] != kind:
        raise TuneError(f"optimizer state is for a '{state['kind']}' optimizer, not '{kind}'")
    if int(state.get("version", 0)) > STATE_VERSION:
        raise TuneError(f"optimizer state version {state.get('version')} is newer than this eqtune supports")
    knobs = state.get("knobs", {})
    mine = {k.name: [float(v) for v in k.values] for k in space.knobs}
    if list(knobs) != list(mine) or any(
        not np.allclose(knobs[n], mine[n]) if len(knobs[n]) == len(mine[n]) else True for n in mine
    ):
        raise TuneError(
            f"optimizer state was saved for knobs {list(knobs)} with other allowed values; "
            f"this space tunes {list(mine)}: resume with the same --knobs and profile"
        )


#: the GP's options for measured (noisy) margins, as ``tune()`` and live BER sessions use them unless the
#: caller gives their own: local steps try the incumbent's one-knob moves first and score the neighbours
#: by expected improvement (``eqtune.tune.acquisition.local_step``). Why: counted readings sit on
#: plateaus of equal values (a loopback's errors from the other direction, error-free codes), where the
#: upper-bound step re-measured the plateau; and on the library's noisy benchmark (Poisson counts,
#: ``benchmarks/bench_tune_noisy.py``, c2m-4in / c2m-10in / c2m-10in-xtalk / c2m-16in / c2m-224g-6in host_rx,
#: 8 seeds, 25 measurements) they put more final picks within 0.1 dB (docs/tuning.md). Exact margins
#: (simulation) keep the defaults: there the one-knob moves lose on the plateau ridges (c2m-16in host_rx,
#: 25.5 -> 46 evaluations to 0.1 dB).
MEASURED_GP_OPTIONS: dict[str, Any] = {"axis_first": True, "local_acq": "ei"}

OPTIMIZERS = {"gp": "eqtune.tune.optimizer:GPOptimizer", "grid": "eqtune.tune.baselines:GridSearch",
              "random": "eqtune.tune.baselines:RandomSearch"}


def _cls(kind: str) -> type[BaseOptimizer]:
    import importlib

    if kind not in OPTIMIZERS:
        raise TuneError(f"unknown optimizer '{kind}': use one of {', '.join(OPTIMIZERS)}")
    mod, attr = OPTIMIZERS[kind].split(":")
    cls: type[BaseOptimizer] = getattr(importlib.import_module(mod), attr)
    return cls


def make_optimizer(kind: str, space: KnobSpace, *, seed: int | None = None,
                   start: Mapping[str, float] | None = None, **options: Any) -> BaseOptimizer:
    """An optimizer by name: ``"gp"`` (default Bayesian), ``"grid"`` (exhaustive), ``"random"``."""
    return _cls(kind)(space, seed=seed, start=start, **options)


# constructor arguments that are not tuning options (set by tune() / the session, never by the user)
_NOT_OPTIONS = ("self", "space", "seed", "start", "ispace")


def optimizer_option_types(kind: str) -> dict[str, type]:
    """The options of optimizer ``kind`` and their types (from the constructor's defaults; ``None``
    defaults are integers, e.g. ``n_initial``)."""
    import inspect

    out: dict[str, type] = {}
    for name, par in inspect.signature(_cls(kind).__init__).parameters.items():
        if name in _NOT_OPTIONS or par.kind not in (par.KEYWORD_ONLY, par.POSITIONAL_OR_KEYWORD):
            continue
        out[name] = int if par.default is None else type(par.default)
    return out


def check_optimizer_option_names(kind: str, names: Sequence[str], option: str = "--optimizer-option") -> dict[str, type]:
    """The option types of optimizer ``kind`` (``optimizer_option_types``); a ``TuneError`` naming the
    unknown ones among ``names`` and listing the known ones."""
    types = optimizer_option_types(kind)
    bad = [n for n in names if n not in types]
    if bad:
        raise TuneError(f"{option} {', '.join(bad)}: the '{kind}' optimizer has no such option "
                        f"(options: {', '.join(sorted(types)) or 'none'})")
    return types


def parse_optimizer_options(kind: str, items: Sequence[str], option: str = "--optimizer-option") -> dict[str, Any]:
    """``["ls_prior=0", "directions=axes"]`` -> ``{"ls_prior": 0.0, "directions": "axes"}``, typed and
    checked against the options of optimizer ``kind`` (see ``GPOptimizer``). Unknown names and values
    of the wrong type are a ``TuneError`` that names them and lists what is allowed."""
    out: dict[str, Any] = {}
    for item in items:
        name, eq, text = (p.strip() for p in str(item).partition("="))
        if not eq or not name or not text:
            raise TuneError(f"{option} {item!r}: give name=value, e.g. {option} ls_prior=0")
        typ = check_optimizer_option_names(kind, [name], option)[name]
        try:
            if typ is bool:
                low = text.lower()
                if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError
                value: Any = low in ("1", "true", "yes", "on")
            elif typ is int:
                value = int(text)
            elif typ is float:
                value = float(text)
                if not math.isfinite(value):
                    raise ValueError
            else:
                value = text
        except ValueError:
            what = {bool: "true or false", int: "an integer", float: "a finite number"}.get(typ, "a value")
            raise TuneError(f"{option} {name}={text}: expected {what}") from None
        if typ in (int, float) and value < 0:
            raise TuneError(f"{option} {name}={text}: must be >= 0")
        out[name] = value
    return out


def optimizer_from_state(state: Mapping[str, Any], space: KnobSpace) -> BaseOptimizer:
    """Restore any optimizer from its ``state()``."""
    check_state(state, space)
    return _cls(state["kind"]).from_state(state, space)


def keys_array(keys: Sequence[Key], d: int) -> np.ndarray:
    return np.asarray(keys, dtype=np.int32).reshape(-1, d)
