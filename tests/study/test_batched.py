"""Batched evaluation gives the figures of the per-combination, per-point path, exactly.

Two batchings: a combination's code grid measured as arrays (``measure_grid``) instead of one dict
per point, and several combinations sent as one task (``TaskChunk``) instead of one task each.
Neither may change a figure: the rows are compared column by column (timing columns aside), as the
exact text the store and ``results.csv`` keep.
"""

from __future__ import annotations

import pytest

from eqtune.study import load_spec, run_study
from eqtune.study.compute import measure_grid, solve
from eqtune.study.runner import CHUNK_MAX, ChunkSizer, StudyTask, TaskChunk, _chunked
from eqtune.study.store import VOLATILE, ResultStore, comparable, format_value
from eqtune.study.synthetic import SyntheticModel, synthetic


class PerPoint:
    """The model without its vectorized grid: ``solve`` falls back to one ``measure`` dict per point."""

    def __init__(self, model: SyntheticModel) -> None:
        self._m = model
        self.space, self.corner_names = model.space, model.corner_names

    def default_point(self):
        return self._m.default_point()

    def measure(self, corner, points):
        return self._m.measure(corner, points)

    def floor(self, corner, point, bers):
        return self._m.floor(corner, point, bers)


def _text(row) -> dict[str, str]:
    return {k: format_value(v) for k, v in row.items() if k not in VOLATILE}


def test_the_vectorized_grid_gives_the_per_point_rows_exactly(synth_spec_path):
    spec = load_spec(synth_spec_path)
    for combo in spec.combinations:
        model = SyntheticModel(combo)
        assert hasattr(model, "measure_grid") and not hasattr(PerPoint(model), "measure_grid")
        batched, per_point = solve(combo, model), solve(combo, PerPoint(model))
        assert batched["method"] == "grid"
        assert _text(batched) == _text(per_point), combo.label


def test_measure_grid_columns_match_measure_point_by_point(synth_spec_path):
    combo = load_spec(synth_spec_path).combinations[5]
    model = SyntheticModel(combo)
    grid = model.space.grid()
    for corner in range(len(combo.corners)):
        cols = measure_grid(model, corner, grid)
        fallback = measure_grid(PerPoint(model), corner, grid)
        for j, point in enumerate(model.space.to_point(r) for r in grid):
            one = model.measure(corner, [point])[0]
            assert cols.row(j) == one == fallback.row(j)


def test_a_chunk_task_returns_each_combinations_own_row(synth_spec_path):
    spec = load_spec(synth_spec_path)
    task = StudyTask(synthetic, prepare=False)
    combos = spec.combinations[:7]
    chunked = task(TaskChunk(tuple(combos)))
    assert [r["id"] for r in chunked] == [c.id for c in combos]
    assert [_text(r) for r in chunked] == [_text(task(c)) for c in combos]


def test_a_chunked_process_pool_study_stores_the_rows_of_a_serial_one(synth_spec_path, tmp_path):
    spec = load_spec(synth_spec_path)
    serial = run_study(spec, tmp_path / "serial", workers=1, compute=synthetic, report=False)
    chunked = run_study(spec, tmp_path / "chunked", workers=2, compute=synthetic, report=False, chunk=5)
    assert serial.summary["complete"] and chunked.summary["complete"]
    a, b = ResultStore(tmp_path / "serial").rows(), ResultStore(tmp_path / "chunked").rows()
    assert len(b) == len({r["id"] for r in b}) == len(spec.combinations)
    assert comparable(a) == comparable(b)


def test_chunk_size_follows_the_measured_cost_within_bounds():
    sizer = ChunkSizer()
    assert sizer.size() == 1  # nothing measured yet: one combination per task
    for _ in range(10):
        sizer.observe({"elapsed_s": 0.01})
    assert sizer.size() == 50  # ~0.5 s of work at 10 ms a combination
    for _ in range(64):
        sizer.observe({"elapsed_s": 2.0})
    assert sizer.size() == 1  # slow combinations go one per task again
    for _ in range(64):
        sizer.observe({"elapsed_s": 0.0})
    assert sizer.size() == CHUNK_MAX
    sizer.observe({"elapsed_s": None})  # a row without timing changes nothing
    assert sizer.size() == CHUNK_MAX
    assert ChunkSizer(7).size() == 7


def test_chunks_keep_spec_order_and_every_item_once():
    sizer = ChunkSizer(3)
    chunks = list(_chunked(iter(range(10)), sizer))  # any items: the grouping does not look inside
    assert [c.items for c in chunks] == [(0, 1, 2), (3, 4, 5), (6, 7, 8), (9,)]


def test_chunk_below_one_is_refused_in_one_line(synth_spec_path, tmp_path):
    from eqtune.errors import InputError

    with pytest.raises(InputError, match="--chunk must be >= 1"):
        run_study(load_spec(synth_spec_path), tmp_path / "o", workers=2, compute=synthetic, chunk=0)
