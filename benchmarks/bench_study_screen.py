"""Study Bayesian search (``eqtune study``, method bayes) with and without the stage-A screen
(eqtune.tune.screen): worst-corner margin (25C / 85C) reached with budget 12 on 4 knobs, median of seeds
0-4, against the exhaustive worst-corner optimum; same run. The screen is switched off by replacing
``_WorstSource.screen_margins`` (the study has no optimizer options).

Run:  nice python benchmarks/bench_study_screen.py
"""
import time
from pathlib import Path

import numpy as np

import eqtune.study.compute as comp
from eqtune.study.compute import EngineModel, _bayes, _WorstSource
from eqtune.study.spec import parse_spec

for ch in ["c2m-4in", "c2m-10in", "c2m-16in", "c2m-10in-xtalk"]:
    spec = parse_spec({"channels": [ch], "corners": {"temperature_c": [25, 85]},
                       "tune": {"knobs": ["rx_pre", "rx_post", "rx_amp", "ctle_gdc"], "method": "bayes", "budget": 12}},
                      base_dir=Path("."))
    model = EngineModel(spec.combinations[0])
    src = _WorstSource(model, [0, 1])
    out = {}
    for mode in ("screen", "no screen"):
        if mode == "no screen":
            comp._WorstSource.screen_margins, saved = (lambda self, isp: None), comp._WorstSource.screen_margins
        t0 = time.perf_counter()
        ms = [src.measure(_bayes(model, [0, 1], 12, seed)[0]).margin for seed in range(5)]
        out[mode] = (np.median(ms), time.perf_counter() - t0)
        if mode == "no screen":
            comp._WorstSource.screen_margins = saved
    # exhaustive optimum of the worst corner
    from eqtune.tune.space import IndexedSpace
    isp = IndexedSpace(model.space)
    pts = [isp.point(k) for k in isp.grid]
    opt = max(m.margin for m in src.measure_batch(pts))
    print(f"{ch}: worst-corner optimum {opt:.2f} mV; bayes budget 12, median of seeds 0-4: screen {out['screen'][0]:.2f} mV ({out['screen'][1]/5:.2f} s a run), no screen {out['no screen'][0]:.2f} mV ({out['no screen'][1]/5:.2f} s)", flush=True)
