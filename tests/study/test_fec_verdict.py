"""Study FEC verdict ("AI-ready"): the frame-loss figure of the robust codes at the worst temperature
corner, recomputed here through the eye engine directly, and the report column beside the BER floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqtune.study import load_spec, run_study
from eqtune.study.compute import EngineModel, simulate
from eqtune.study.store import ResultStore

SPEC = """
[study]
name = "fec-verdict"
seed = 1
ber_floor = [1e-12]

[corners]
temperature_c = [25, 85]
crosstalk = [false]

[[channels]]
base = "c2m-10in"
sweep.length_in = [6, 18]

[[pass]]
eye_height_min_mv = 15

[tune]
knobs = ["rx_post"]
"""


def test_study_rows_carry_the_fec_verdict(tmp_path: Path):
    from eqtune.eye.fec import FRAME_LOSS_TARGET, fec_from_eye

    p = tmp_path / "s.toml"
    p.write_text(SPEC, encoding="utf-8")
    spec = load_spec(p)
    res = run_study(spec, tmp_path / "out", workers=1, compute=simulate)
    rows = ResultStore(res.out_dir).rows()
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), rows
    by_id = spec.by_id()
    cers = {}
    for r in rows:
        cer = float(r["fec_frame_error_ratio"])
        assert r["ai_ready"] == ("yes" if cer < FRAME_LOSS_TARGET else "no")
        # independent path: the combination's engines at both corners, the robust codes, eqtune.eye.fec
        model = EngineModel(by_id[r["id"]])
        point = {**model.default_point(), **{k: float(v) for k, v in json.loads(r["robust_codes"]).items()}}
        per = [fec_from_eye(model.engines[ci].evaluate(point)).codeword_error_ratio
               for ci in range(len(model.corner_names))]
        assert cer == pytest.approx(max(per), rel=1e-9)
        assert r["fec_worst_corner"] == model.corner_names[per.index(max(per))]
        cers[r["channel"]] = cer
    # the 18 in link loses more frames than the 6 in one (more loss, more DFE, longer bursts)
    (short, c_short), (long_, c_long) = sorted(cers.items(), key=lambda kv: "18" in kv[0])
    assert c_long > c_short, cers
    html = (res.out_dir / "report.html").read_text()
    assert "AI-ready" in html and "KP4 CER" in html
