"""Crash-safe results CSV: exact float round trip, partial last line cut off, single header."""

from __future__ import annotations

import pytest

from eqtune.errors import InputError
from eqtune.study.store import COLUMNS, ResultStore, format_value


def test_values_round_trip_exactly(tmp_path):
    x = 0.1 + 0.2
    with ResultStore(tmp_path) as st:
        st.append({"id": "a", "baseline_margin": x, "tuned_codes": {"rx_pre": 1}, "link": None})
    (row,) = ResultStore(tmp_path).rows()
    assert float(row["baseline_margin"]) == x
    assert row["tuned_codes"] == '{"rx_pre":1}'
    assert row["link"] == ""
    assert format_value(float("nan")) == ""


def test_partial_last_line_is_dropped_and_truncated(tmp_path):
    with ResultStore(tmp_path) as st:
        st.append({"id": "a"})
        st.append({"id": "b"})
    p = tmp_path / "results.csv"
    with open(p, "a") as fh:
        fh.write("c,3,half-a-ro")  # what a SIGKILL mid-write could leave
    assert [r["id"] for r in ResultStore(tmp_path).rows()] == ["a", "b"]
    with ResultStore(tmp_path) as st:  # reopening cuts the partial line off before appending
        st.append({"id": "c"})
    assert [r["id"] for r in ResultStore(tmp_path).rows()] == ["a", "b", "c"]
    assert p.read_text().count("\n") == 4 and p.read_text().count(COLUMNS[0] + ",") == 1


def test_foreign_columns_are_refused(tmp_path):
    (tmp_path / "results.csv").write_text("x,y\n1,2\n")
    with pytest.raises(InputError, match="another eqtune version"):
        ResultStore(tmp_path).rows()
