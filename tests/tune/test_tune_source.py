"""SimulationSource: objectives, corners (worst case), closed eyes, bad input."""

from __future__ import annotations

import pytest

from eqtune.errors import TuneError
from eqtune.tune import MarginSource, SimulationSource, parse_corners, parse_objective

KNOBS = ["rx_pre", "rx_post", "rx_amp"]


def test_is_a_margin_source_with_defaults(src_10in):
    assert isinstance(src_10in, MarginSource)
    assert src_10in.space.names == tuple(KNOBS)
    p = src_10in.default_point()
    m = src_10in.measure(p)
    assert m.units if hasattr(m, "units") else True
    assert m.metrics["objective"] == "eye_height" and m.metrics["units"] == "mV"
    assert m.cost_s > 0
    batch = src_10in.measure_batch([p, {**p, "rx_post": 2.0}])
    assert batch[0].margin == pytest.approx(m.margin, abs=1e-9)


def test_margin_is_the_engines_min_eye_height(src_10in):
    from eqtune.channel import load_channel
    from eqtune.eye import EyeEngine

    p = {"rx_pre": 2.0, "rx_post": 3.0, "rx_amp": 2.0}
    eng = EyeEngine(load_channel("c2m-10in"), direction="host_rx")
    assert src_10in.measure(p).margin == pytest.approx(eng.evaluate(p).eye_height_min_mv, rel=1e-9)


def test_worst_case_over_temperature_corners():
    src = SimulationSource("c2m-10in", KNOBS, corners=["25C", "85C"])
    p = {"rx_pre": 2.0, "rx_post": 3.0, "rx_amp": 2.0}
    m = src.measure(p)
    per = m.metrics["corners"]
    assert set(per) == {"25C", "85C"}
    assert m.margin == pytest.approx(min(v["margin"] for v in per.values()))
    assert m.metrics["worst_corner"] in per
    # a hotter trace is lossier: 85 C is the worse corner on this channel
    assert per["85C"]["margin"] < per["25C"]["margin"]


def test_crosstalk_corners_and_errors():
    src = SimulationSource("c2m-10in-xtalk", KNOBS, corners="xtalk-off,xtalk-on")
    m = src.measure(src.default_point())
    assert m.metrics["corners"]["xtalk-on"]["margin"] <= m.metrics["corners"]["xtalk-off"]["margin"] + 1e-9
    with pytest.raises(TuneError, match="--corners.*no aggressors"):
        SimulationSource("c2m-10in", KNOBS, corners=["xtalk-on"])
    with pytest.raises(TuneError, match="--corners: unknown corner 'hot'"):
        SimulationSource("c2m-10in", KNOBS, corners=["25C", "hot"])
    with pytest.raises(TuneError, match="--corners"):
        parse_corners("500C")


def test_closed_eyes_still_rank():
    """TX FFE into the module with no peaking: eyes closed, yet margins differ (negative, not flat 0)."""
    src = SimulationSource("c2m-16in", ["tx_cm1", "tx_c1"], fixed={"tx_eq": 0})
    pts = [{**src.default_point(), "tx_cm1": c1, "tx_c1": c2} for c1, c2 in ((0.0, 0.0), (-0.1, -0.1), (-0.2, 0.0))]
    ms = [m.margin for m in src.measure_batch(pts)]
    assert all(m < 0 for m in ms)
    assert len({round(m, 6) for m in ms}) == 3


def test_objectives_and_weights():
    assert parse_objective("eye_height:1,com:10") == {"eye_height": 1.0, "com": 10.0}
    p = {"rx_pre": 1.0, "rx_post": 2.0, "rx_amp": 2.0}
    eh = SimulationSource("c2m-10in", KNOBS).measure(p)
    com = SimulationSource("c2m-10in", KNOBS, objective="com").measure(p)
    both = SimulationSource("c2m-10in", KNOBS, objective={"eye_height": 1.0, "com": 10.0}).measure(p)
    assert com.metrics["units"] == "dB"
    assert both.margin == pytest.approx(eh.margin + 10 * com.margin, rel=1e-9)
    ew = SimulationSource("c2m-10in", KNOBS, objective="eye_width").measure(p)
    assert 0 < ew.margin < 1
    with pytest.raises(TuneError, match="--objective"):
        SimulationSource("c2m-10in", KNOBS, objective="snr")


def test_knob_errors_and_aliases():
    with pytest.raises(TuneError, match="--knobs: unknown knob 'rx_gain'"):
        SimulationSource("c2m-10in", ["rx_pre", "rx_gain"])
    with pytest.raises(TuneError, match="--fix"):
        SimulationSource("c2m-10in", KNOBS, fixed={"bogus": 1})
    # tx_ffe expands to the taps this channel's SerDes profile has (c2m-4in: fewer taps)
    src = SimulationSource("c2m-4in", ["tx_ffe", "tx_eq"])
    assert src.space.names == ("tx_cm1", "tx_c1", "tx_eq")
    # knobs of both directions: the worse of the two links
    both = SimulationSource("c2m-10in", ["rx_post", "tx_eq"])
    m = both.measure(both.default_point())
    assert set(m.metrics["corners"]) == {"nominal/host_rx", "nominal/module_rx"}
    assert m.margin == min(v["margin"] for v in m.metrics["corners"].values())


def test_evaluate_gives_a_result_when_no_corner_scores_below_infinity(monkeypatch):
    """Found by mypy: ``SimulationSource.evaluate`` returned None when every corner's score was
    NaN (no ``s < inf``); it now gives the first corner's result, as ``engine_for`` gives the first engine.
    With finite scores it still picks the worst corner."""
    src = SimulationSource("c2m-10in", ["rx_post", "tx_eq"])  # two engines: host_rx and module_rx
    pt = src.default_point()
    worst = src.evaluate(pt)
    per_dir = {d: eng.evaluate(src._engine_point(pt, d)) for _, d, eng in src._engines}
    assert worst.eye_height_min_mv == min(r.eye_height_min_mv for r in per_dir.values())
    monkeypatch.setattr(src, "_score", lambda res: (float("nan"), {}))
    res = src.evaluate(pt)
    assert res is not None and res.direction == src._engines[0][1]
    assert res.eye_height_mv == per_dir[src._engines[0][1]].eye_height_mv
