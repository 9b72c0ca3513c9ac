"""A tune run's history, stored compactly: one row of flat arrays per measurement, never one object per code.

An exhaustive grid on the 6-knob serdes space measures 383,180 codes; as ``Evaluation`` objects (a codes dict,
a metrics dict and five floats each, about 1.1 kB a code) the history alone took about 420 MB. ``History``
keeps per measurement: the knobs' level indices (the codes are re-made from them by ``IndexedSpace.codes``,
exactly as the loop made them), the index, margin, cost and time as 8-byte numbers, the phase as one byte,
and the metrics as a tuple of values under an interned tuple of names when they are flat (scalars and
strings; else the dict itself) - about 200 B a code. Reading it (``h[i]``, iterating) gives ``Evaluation``
objects equal, field for field, to those the loop measured; so ``--json`` writes the same characters.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from eqtune.tune.space import IndexedSpace, Key
    from eqtune.tune.tune import Evaluation

_FLAT = (float, int, str, bool, type(None))


class History(Sequence["Evaluation"]):
    """Append-only, compact sequence of ``Evaluation`` (see the module docstring)."""

    def __init__(self, ispace: IndexedSpace) -> None:
        self._isp = ispace
        self._d = len(ispace.names)
        self._keys = array("i")  # level indices, d per row
        self._index = array("q")
        self._num = array("d")  # margin, cost_s, t_s per row
        self._phase = array("B")
        self._phases: list[str] = []
        self._metrics: list[Any] = []  # (schema number, values tuple) or a dict (not flat)
        self._schemas: dict[tuple[str, ...], int] = {}
        self._schema_names: list[tuple[str, ...]] = []

    def add(self, index: int, key: Key, margin: float, metrics: Mapping[str, Any], cost_s: float, t_s: float,
            phase: str) -> None:
        """Record one measurement (``key``: the tuned knobs' level indices)."""
        self._keys.extend(int(i) for i in key)
        self._index.append(int(index))
        self._num.extend((float(margin), float(cost_s), float(t_s)))
        if phase not in self._phases:
            self._phases.append(phase)
        self._phase.append(self._phases.index(phase))
        names = tuple(metrics)
        if all(type(v) in _FLAT for v in metrics.values()):  # exact types: a numpy scalar keeps its dict
            sid = self._schemas.setdefault(names, len(self._schema_names))
            if sid == len(self._schema_names):
                self._schema_names.append(names)
            self._metrics.append((sid, tuple(metrics.values())))
        else:
            self._metrics.append(dict(metrics))

    def key(self, i: int) -> Key:
        """Level indices of row ``i``."""
        return tuple(self._keys[i * self._d:(i + 1) * self._d])

    def metrics(self, i: int) -> dict[str, Any]:
        """The metrics of row ``i`` (a new dict)."""
        m = self._metrics[i]
        if isinstance(m, dict):
            return dict(m)
        return dict(zip(self._schema_names[m[0]], m[1]))

    def last_metrics(self, key: Key) -> dict[str, Any]:
        """Metrics of the last measurement of ``key`` ({} if never measured)."""
        k = tuple(int(v) for v in key)
        for i in range(len(self) - 1, -1, -1):
            if self.key(i) == k:
                return self.metrics(i)
        return {}

    def pooled_counts(self) -> dict[Key, tuple[int, int]]:
        """Per measured code, its bit-error counts summed over every measurement that carries them
        (metrics ``bits`` > 0 and ``errors``): (bits, errors). {} when no measurement counts errors."""
        out: dict[Key, tuple[int, int]] = {}
        for i in range(len(self)):
            m = self.metrics(i)
            bits, errors = m.get("bits"), m.get("errors")
            if not isinstance(bits, (int, float)) or not isinstance(errors, (int, float)) or bits <= 0:
                continue
            b, e = out.get(self.key(i), (0, 0))
            out[self.key(i)] = (b + int(bits), e + int(errors))
        return out

    def __len__(self) -> int:
        return len(self._index)

    def _row(self, i: int) -> Evaluation:
        from eqtune.tune.tune import Evaluation

        margin, cost, t = self._num[3 * i:3 * i + 3]
        return Evaluation(self._index[i], self._isp.codes(self.key(i)), margin, self.metrics(i), cost, t,
                          self._phases[self._phase[i]])

    @overload
    def __getitem__(self, i: int) -> Evaluation: ...

    @overload
    def __getitem__(self, i: slice) -> list[Evaluation]: ...

    def __getitem__(self, i: int | slice) -> Evaluation | list[Evaluation]:
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("history index out of range")
        return self._row(i % n)

    def __iter__(self) -> Iterator[Evaluation]:
        for i in range(len(self)):
            yield self._row(i)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"History({len(self)} evaluations)"
