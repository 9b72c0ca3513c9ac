"""The hostile-input fuzz (tests/fuzz/hostile.py) in CI: a seeded subset of every kind.

The full count (>= 5,000 inputs, the per-kind table in docs/hardening.md) is a benchmark:
``python benchmarks/fuzz_hostile.py --count 5000``. Here ``HOSTILE_COUNT`` inputs (default 200, 20 per
kind) at a fixed seed: 0 tracebacks and 0 hangs.
"""

from __future__ import annotations

import os

import pytest

from tests.fuzz.hostile import KINDS, run, table

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_hostile_inputs_give_no_traceback_and_no_hang():
    count = int(os.environ.get("HOSTILE_COUNT", "200"))
    tallies = run(count, seed=int(os.environ.get("HOSTILE_SEED", "34")))
    assert set(tallies) == set(KINDS)
    bad = {k: t.examples[:3] for k, t in tallies.items() if t.tracebacks or t.hangs}
    assert not bad, table(tallies) + "\n" + "\n".join(f"{k}: {v}" for k, v in bad.items())
    # every kind is exercised both ways: something is refused, nothing slips through unchecked
    assert all(t.refused > 0 for t in tallies.values()), table(tallies)
