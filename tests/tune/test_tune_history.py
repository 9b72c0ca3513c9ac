"""The compact history (eqtune.tune.history.History): reads back exactly what the loop measured."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.serdes.knobs import Knob, KnobSpace
from eqtune.tune import FunctionSource, tune
from eqtune.tune.history import History
from eqtune.tune.space import IndexedSpace
from eqtune.tune.tune import Evaluation


def _space() -> KnobSpace:
    return KnobSpace((Knob("a", tuple(float(i) for i in range(5)), 0.0), Knob("b", (-0.5, 0.0, 0.25), 0.0)))


def test_rows_read_back_field_for_field():
    isp = IndexedSpace(_space())
    h = History(isp)
    rows = [
        ((0, 1), 1.5, {"objective": "eye_height", "units": "mV", "margin": 1.5, "n": 3, "ok": True, "ber": None}),
        ((4, 2), -2.0, {"objective": "eye_height", "units": "mV", "margin": -2.0, "n": 4, "ok": False, "ber": 1e-9}),
        ((0, 1), 0.5, {"margin": 0.5, "corners": {"slow": {"margin": 0.5}}}),  # nested: kept as a dict
        ((3, 0), 2.0, {"margin": np.float64(2.0)}),  # a numpy scalar keeps its type
    ]
    expected = []
    for i, (key, margin, metrics) in enumerate(rows, 1):
        h.add(i, key, margin, metrics, 0.01 * i, 0.1 * i, "grid" if i > 1 else "baseline")
        expected.append(Evaluation(i, isp.codes(key), margin, dict(metrics), 0.01 * i, 0.1 * i,
                                   "grid" if i > 1 else "baseline"))
    assert len(h) == 4 and list(h) == expected and h == expected
    assert h[-1] == expected[-1] and h[1:3] == expected[1:3]
    assert type(h[3].metrics["margin"]) is np.float64
    assert [list(e.metrics) for e in h] == [list(m) for _, _, m in rows]  # key order kept (the --json text)
    assert [e.to_dict() for e in h] == [e.to_dict() for e in expected]
    assert h.last_metrics((0, 1)) == rows[2][2]  # the last measurement of a repeated code
    assert h.last_metrics((1, 1)) == {}
    with pytest.raises(IndexError):
        h[4]
    h[1].metrics["n"] = 99  # a read gives a copy: the stored row is unchanged
    assert h[1].metrics["n"] == 4


def test_grid_run_history_is_every_code_measured_once():
    """A grid run's history against an independent evaluation of the function at every code."""
    space = _space()

    def f(p):
        return -(p["a"] - 3.0) ** 2 - 4.0 * (p["b"] - 0.25) ** 2

    r = tune(FunctionSource(space, f), budget=100, seed=1, optimizer="grid")
    isp = IndexedSpace(space)
    assert isinstance(r.history, History)
    assert r.evaluations == len(r.history) == isp.size  # the start is one of the codes: measured once
    seen = {tuple(sorted(e.codes.items())): e.margin for e in r.history}
    assert len(seen) == isp.size
    assert all(m == f(dict(c)) for c, m in seen.items())
    assert [e.index for e in r.history] == list(range(1, isp.size + 1))
    assert r.history[0].phase == "baseline" and {e.phase for e in r.history[1:]} == {"grid"}
    assert r.tuned.codes == {"a": 3.0, "b": 0.25} and r.tuned.margin == 0.0
    assert r.tuned.metrics == r.history[[e.codes for e in r.history].index(r.tuned.codes)].metrics
    assert r.to_dict()["history"] == [e.to_dict() for e in r.history]
