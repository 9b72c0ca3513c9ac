"""Live tuning hands each BER measurement's counting noise to the GP:
the variance comes from the journaled error count, so a resumed session rebuilds the same optimizer."""

from __future__ import annotations

import math

from eqtune.session.live import LiveConfig, LiveTuner
from eqtune.session.view import _lane_map
from eqtune.tune.live import counts_variance
from eqtune.tune.optimizer import GPOptimizer


def test_ber_session_tells_the_gp_each_counts_variance(tmp_path):
    res = "emu:c2m-10in?seed=5&settle_ms=0&fast=1&name=t-live-noise&adaptive=0"
    # a short dwell: finite error counts, so every BER margin carries a known (binomial) variance
    cfg = LiveConfig(module=res, lanes=[1], dwell_s=1e-4, budget=14, seed=7, knobs=["rx_pre", "rx_post"])
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path)
    result = tuner.run()
    assert result.status == "done"
    opts = tuner._optimizers(0)  # rebuilt from the journal alone, as a resume does
    opt = opts[1]
    assert isinstance(opt, GPOptimizer)
    measured = [_lane_map(m["lanes"])[1] for m in tuner.view.measurements(0)]
    want = [counts_variance(r.get("counts"), "ber") for r in measured]
    assert len(opt.margin_vars) == len(want) == len(opt.state()["margins"])
    assert any(v is not None and v > 0 for v in want), "the dwell should leave finite error counts"
    for got, exp in zip(opt.margin_vars, want):
        assert (got is None and exp is None) or math.isclose(got, exp, rel_tol=1e-12)
