"""A live BER session's pick is never refuted by its own pooled error counts (the count guard of
eqtune.tune.recommend.count_guard, wired in session/live_counts.py), whatever the model prefers."""

from __future__ import annotations

from typing import Any

import pytest

from eqtune.session.config import LiveConfig
from eqtune.session.live import LiveTuner, load_session
from eqtune.tune import recommend
from eqtune.tune.recommend import rate_better_p

DWELL = 28.2  # s on the emulator's virtual clock: 3e12 bits at 106.25 Gb/s, a 1e-12 BER target
LEVEL = recommend.COUNT_GUARD_ALPHA  # the guard's level, kept here: the guard-off run sets the module's to 0


def _worst_measured(opt: Any) -> dict[str, float] | None:
    """A model that recommends its worst measured code (lowest mean margin): what the guard must catch."""
    means = opt.mean_by_point()
    if not means:
        return None
    return opt.ispace.point(min(means, key=lambda k: means[k][0]))


def _refuted_lanes(view: Any, result: Any) -> list[int]:
    """Lanes whose final pick another measured code beats on the pooled counts (bits, errors) of the
    journal, at the guard's one-sided level."""
    out = []
    for ln, lane in result.lanes.items():
        counts: dict[tuple, list[int]] = {}
        for m in view.measurements():
            r = m["lanes"].get(str(ln))
            if r and r["counts"].get("bits"):
                c = counts.setdefault(tuple(sorted(r["codes"].items())), [0, 0])
                c[0] += int(r["counts"]["bits"])
                c[1] += int(r["counts"].get("errors") or 0)
        pick = tuple(sorted((lane.recommended or lane.original).items()))
        if pick in counts and any(rate_better_p(tuple(c), tuple(counts[pick])) < LEVEL
                                  for k, c in counts.items() if k != pick):
            out.append(ln)
    return out


@pytest.mark.parametrize("guard", [True, False])
def test_the_pick_gives_way_to_a_code_its_counts_show_better(tmp_path, monkeypatch, guard):
    """With a model that recommends its worst code, the session's picks still stand up to the pooled
    counts; with the guard off (level 0) the same session keeps refuted picks (the test can fail)."""
    from eqtune.session import live_counts

    monkeypatch.setattr(live_counts, "_pick", _worst_measured)
    if not guard:
        monkeypatch.setattr(recommend, "COUNT_GUARD_ALPHA", 0.0)
    res = f"emu:c2m-10in?seed=33&settle_ms=0&fast=1&adaptive=0&name=count-guard-{guard}"
    cfg = LiveConfig(module=res, lanes=[1, 2, 3, 4], dwell_s=DWELL, budget=12, seed=5, screen="off")
    t = LiveTuner.create(cfg, sessions_dir=tmp_path)
    result = t.run()
    assert result.status == "done"
    refuted = _refuted_lanes(load_session(t.session_id, tmp_path), result)
    if guard:
        assert refuted == []
    else:
        assert refuted, "the worst-code model should leave some pick refuted without the guard"
