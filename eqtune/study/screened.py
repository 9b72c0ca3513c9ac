"""A screening study: every code of a combination ranked by the eye engine's stage-A eye, the best few exact.

An SI engineer screens 10^5 channel variants to find the few that need a closer look. At full
fidelity a combination costs ~0.4-0.6 s of CPU on the library's C2M channels (a prepared engine per
corner at 32 samples a UI, every code of the grid through the exact stage B, the FEC and floor
views); ``[tune] fidelity = "screen"`` makes it ~10x cheaper, with the same engine and the same
equations, by doing less of it:

* the engines run at ``SCREEN_SAMPLES_PER_UI`` (8) samples a UI instead of 32 (the sampling phase is
  searched on a 1/8 UI step), on a channel built at a 100 MHz step with a 512 UI FFT period instead
  of 10 MHz and 1024 UI; the pulse, ISI, crosstalk and noise terms are those of the full engine;
* every code of the grid is scored by the stage-A eye (``EyeEngine.screen``: the 93A-30..35 Gaussian
  variances and the peak distortion of the largest cursors) at every corner, and only the
  ``screen_keep`` best by worst corner, the ``screen_keep`` best at the nominal corner and the
  profile's default are evaluated exactly (stage B) at every corner; tuned and robust codes are
  picked among those by their exact margins, so a row's figures are exact eye figures of its codes
  (at the coarser time step), never stage-A estimates;
* the floor (eye height at the floor BERs) is taken direct from the statistical eye, as at full
  fidelity, without its bathtub extrapolation cross-check; the FEC columns are left empty (a FEC view
  costs a third of a screened combination): both come with refinement.

Rows say ``method = "screen"``. ``refine_worst = N`` computes the N worst combinations again at full
fidelity once the screen is done (``refine_combination``): the refined row is the row a full-fidelity
study of that combination would store, under that study's id, and the store links it to its screened
row (``ResultStore.link_refined``), so the "worst links" query reads refined figures where there are
some. How far a screened row is from the full one was measured on a held-out sample of the
combinations (docs/studies.md, ``benchmarks/bench_study_fidelity.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from eqtune.study.compute import EngineModel, result_row
from eqtune.study.spec import Combination, seed_for

#: the screen's time step: samples per UI of its engines (the full engine's default is 32)
SCREEN_SAMPLES_PER_UI = 8
#: the screen's FFT period (UI; the full engine keeps 1024) and channel frequency step (Hz; the library's
#: channels are defined at 10 MHz): 512 UI is 9.6 ns at 53.125 GBd, over three times the delay of the
#: longest trace a C2M screen sweeps (15.5 in, ~2.7 ns), and above the engine's longest pulse window
SCREEN_PERIOD_UI = 512
SCREEN_CHANNEL_DF_HZ = 100e6


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` largest scores, best first (ties: the first grid point, as ``np.argmax``)."""
    order = np.argsort(-scores, kind="stable")
    return [int(j) for j in order[:k]]


def solve_screened(combo: Combination, model: EngineModel) -> dict[str, Any]:
    """Baseline, tuned and robust codes of one combination, ranked by the stage-A screen at every corner
    and decided by the exact eye of the ``combo.tune.screen_keep`` best (see the module docstring)."""
    names = list(model.corner_names)
    nc = len(names)
    space = model.space
    default = model.default_point()
    grid = space.grid()
    fixed = dict(space.fixed)
    scores = np.array([model.engines[ci].screen(grid, space.names, fixed=fixed) for ci in range(nc)])
    keep = min(int(combo.tune.screen_keep), len(grid))
    candidates = list(dict.fromkeys(_top(scores.min(axis=0), keep) + _top(scores[0], keep)))
    points = [space.to_point(grid[j]) for j in candidates] + [default]
    per = [model.measure(ci, points) for ci in range(nc)]  # exact (stage B) at every corner
    margins = np.array([[m["margin"] for m in per[ci]] for ci in range(nc)])
    base_pc = [per[ci][-1] for ci in range(nc)]
    # the default is a candidate too, so neither pick is worse than where the link started
    j_tuned = int(np.argmax(margins[0]))
    j_robust = int(np.argmax(margins.min(axis=0)))
    tuned_pt, robust_pt = points[j_tuned], points[j_robust]
    tuned_m = per[0][j_tuned]
    robust_pc = [per[ci][j_robust] for ci in range(nc)]
    no_fec = {"fec_frame_error_ratio": None, "fec_worst_corner": None, "ai_ready": None}
    return result_row(combo, model, method="screen", n_evals=len(grid) * nc + len(points) * nc, default=default,
                      base_pc=base_pc, tuned=(tuned_pt, tuned_m), robust=(robust_pt, robust_pc), fec=no_fec,
                      floor_cross_check=False)


def simulate_screened(combo: Combination) -> dict[str, Any]:
    """The screened eye-engine computation of one combination (``fidelity = "screen"``)."""
    return solve_screened(combo, EngineModel(combo, samples_per_ui=SCREEN_SAMPLES_PER_UI, period_ui=SCREEN_PERIOD_UI,
                                             channel_df_hz=SCREEN_CHANNEL_DF_HZ))


def refine_combination(combo: Combination, base_seed: int) -> Combination:
    """The full-fidelity twin of a screened combination: the combination a full-fidelity study of the same
    channel, profile and settings would have, with its id and seed (``eqtune.study.spec``)."""
    from eqtune.study.spec import combination_id

    tune = dataclasses.replace(combo.tune, fidelity="full", refine_worst=0)
    twin = dataclasses.replace(combo, tune=tune)
    cid = combination_id(twin, base_seed)
    return dataclasses.replace(twin, id=cid, seed=seed_for(base_seed, cid))


__all__ = ["SCREEN_SAMPLES_PER_UI", "refine_combination", "simulate_screened", "solve_screened"]
