"""The 178A MMSE Rx FFE + DFE solve with its sampling-phase search: eqtune's batched solver against
PyChOpMarg 3.4.0 ``optimize.mmse`` (one phase at a time), on identical inputs, in the same run.

    nice -n 10 python benchmarks/bench_mmse.py [--rounds 5] [--taps 15] [--pre 6] [--spui 32]

Inputs: the test pulse of tests/eye/test_mmse.py (40 UI), a coloured-noise autocorrelation, the
802.3dj KR FFE shape (``--taps``/``--pre``, limits +-0.7 of the cursor tap), one DFE tap 0..0.85, a
search over +-UI/2 (``--spui`` + 1 phases). Both sides give the same phase and FOM (checked here too).
Per side the fastest of ``--rounds`` alternating rounds is kept (the machine is shared); the ratio is
PyChOpMarg / eqtune. This times the FFE solve alone, not a COM search (no CTLE/TX FFE sweep here).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--taps", type=int, default=15)
    ap.add_argument("--pre", type=int, default=6)
    ap.add_argument("--spui", type=int, default=32)
    a = ap.parse_args()
    try:
        from pychopmarg import optimize
        from pychopmarg.common import NormMode
    except ImportError:
        print("skipped: pychopmarg 3.4.0 is not installed (pip install -e '.[bench]')")
        return 0
    sys.path.insert(0, str(ROOT / "tests" / "eye"))
    import test_mmse as t

    from eqtune.eye.mmse import autocorrelation_from_psd, mmse_best_phase

    pulse = t._pulse(a.spui, 40, 8)
    fb = 106.25e9
    f = np.linspace(0.0, fb / 2, 65)
    rn = autocorrelation_from_psd(2e-5 * (1 + 0.6 * np.cos(2 * np.pi * f / fb)) / fb, fb / 2 / 64, 64)
    w_max = np.array([0.7] * a.pre + [1.0] + [0.7] * (a.taps - a.pre - 1))
    w_min = -w_max
    w_min[a.pre] = 1.0
    b_min, b_max = np.zeros(1), np.full(1, 0.85)

    def ours():
        return mmse_best_phase(pulse, rn, samples_per_ui=a.spui, n_taps=a.taps, n_pre=a.pre, n_dfe=1,
                               var_x=t.VAR_X, b_min=b_min, b_max=b_max, w_min=w_min, w_max=w_max, rlm=0.95)

    def theirs():
        return optimize.mmse(t._FixedNoise(pulse, a.spui, rn), a.taps, a.pre, 1, 0.95, 4, b_min, b_max,
                             w_min, w_max, norm_mode=NormMode.P8023dj, noise_vars=False)

    o, r = ours(), theirs()
    assert o.sample_index == int(r["cursor_ix"]) and abs(float(o.solution.fom_db) - float(r["fom"])) < 1e-8
    best = {"eqtune": float("inf"), "pychopmarg": float("inf")}
    for _ in range(a.rounds):
        for name, fn in (("eqtune", ours), ("pychopmarg", theirs)):
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    print(f"load {os.getloadavg()[0]:.2f} (1 min); {a.taps} taps ({a.pre} pre), {a.spui + 1} phases, "
          f"FOM {float(o.solution.fom_db):.4f} dB both sides")
    print(f"eqtune {best['eqtune'] * 1e3:.2f} ms  pychopmarg {best['pychopmarg'] * 1e3:.2f} ms  "
          f"ratio pychopmarg/eqtune {best['pychopmarg'] / best['eqtune']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
