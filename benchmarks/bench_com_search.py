"""The standard's EQ search (93A-36 FOM over the 802.3ck C2C TX FFE x CTLE grid): ``eqtune com`` vs PyChOpMarg.

One run, one channel (gore C2C 12 dB thru), one package case, the same 50 MHz frequency step on both
sides, BLAS/OpenMP threads pinned to 1 on both (set here before numpy is imported, inherited by every child).
Measured, in this order, never concurrently:

1. eqtune: ``compute_com`` (engine preparation + FOM of every point of the 168,525-point grid + COM at
   the best), and the FOM search alone on PyChOpMarg's sub-grid (the same points PyChOpMarg searches);
2. PyChOpMarg 3.4.0 PRZF ``opt_eq`` serial (``n_procs=1``) on the sub-grid (the first ``--pcm-gdc`` g_DC
   values x every g_DC2 x every TX setting), in a child process (CPU time from its rusage);
3. PyChOpMarg's own process pool (``n_procs=--procs``) on the same sub-grid.

Ratios are per point (CPU and wall) and, for the full grid, eqtune's measured full search against
PyChOpMarg's per-point cost times its 167,895 points (labelled EXTRAPOLATED unless ``--pcm-gdc 21``), and,
measured with nothing extrapolated, PyChOpMarg's sub-grid alone against eqtune's whole grid
(``measured_lower_bound``: the full-grid ratios are at least these).
Peak memory: eqtune's own process (ru_maxrss). Usage::

    nice -n 10 python benchmarks/bench_com_search.py [--pcm-gdc 2] [--procs 2]

Writes ``benchmarks/results/bench_com_search.json``.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
N_PCM_FULL = 167_895
_PARENT_COM: list = []


def _install_one_tap_patch() -> None:
    """PyChOpMarg 3.4.0's PRZF path asserts on the one-tap unity Rx FFE (see pychopmarg_compare.py): hand back
    the COM's own null FFE. Installed at import in the child and, because PyChOpMarg's pool spawns workers that
    re-import this file as ``__mp_main__``, in each of its workers too (each returns its own COM copy's)."""
    import pychopmarg.com as pcm_com

    if getattr(pcm_com.przf, "_one_tap", False):
        return
    orig = pcm_com.przf

    def przf_one_tap(pr, M, nTaps, *a, **k):  # noqa: N803 (PyChOpMarg's names)
        if nTaps != 1:
            return orig(pr, M, nTaps, *a, **k)
        com = pcm_com._WORKER_COM or _PARENT_COM[0]
        return com.null_rx_ffe, None, None

    przf_one_tap._one_tap = True  # type: ignore[attr-defined]
    pcm_com.przf = przf_one_tap


if __name__ == "__mp_main__" or os.environ.get("EQTUNE_PCM_CHILD"):
    _install_one_tap_patch()


def pcm_child(n_gdc: int, procs: int) -> dict:
    """Inside a child process: PyChOpMarg's PRZF search on the sub-grid (see bench_exhaustive.pcm_worker)."""
    sys.path.insert(0, str(HERE))
    from pychopmarg.com import COM
    from pychopmarg.common import OptMode
    from pychopmarg_compare import C2C, channel_sets, pcm_params

    C2C["g_DC"] = C2C["g_DC"][:n_gdc]
    params = pcm_params(0.05, 0)
    t0 = time.perf_counter()
    com = COM(params, channel_sets()["gore_c2c_12db"])
    t_init = time.perf_counter() - t0
    _PARENT_COM.append(com)
    _install_one_tap_patch()
    t1 = time.perf_counter()
    com.opt_eq(opt_mode=OptMode.PRZF, n_procs=procs)
    return {"init_s": t_init, "search_s": time.perf_counter() - t1, "n_points": int(getattr(com, "n_fom_evals", 0))
            or n_gdc * len(C2C["g_DC2"]) * (len(com._tx_combs) - 1), "procs": procs}


def run_pcm(n_gdc: int, procs: int) -> dict:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--pcm-child", str(n_gdc), str(procs)], capture_output=True,
                         text=True, check=True, env={**os.environ, "EQTUNE_PCM_CHILD": "1"})
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    d = json.loads(out.stdout.strip().splitlines()[-1])
    d["process_wall_s"] = wall
    d["process_cpu_s"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return d


def eqtune_runs(n_gdc: int) -> dict:
    import numpy as np

    from eqtune.channel import load_channel
    from eqtune.eye.com import compute_com
    from eqtune.eye.engine import EyeEngine

    sys.path.insert(0, str(HERE))
    from pychopmarg_compare import channel_sets

    thru = channel_sets()["gore_c2c_12db"]["THRU"][0]
    ch = load_channel(str(thru), df_hz=50e6, port_order="1-2/3-4")
    t0, c0 = time.perf_counter(), time.process_time()
    rep = compute_com(ch, "ieee-3ck-c2c", cases=(1,))
    full = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "n_points": rep.cases[0].points_searched, "com_db": rep.com_db, "eq": rep.cases[0].eq}
    eng = EyeEngine(ch, "ieee-3ck-c2c", direction="serdes", package_case=1)
    ks = eng.knob_space()
    g = ks.grid()
    gdc = sorted({float(v) for v in g[:, list(ks.names).index("ctle_gdc")]}, reverse=True)[:n_gdc]
    sub = g[np.isin(g[:, list(ks.names).index("ctle_gdc")], gdc)]
    t0, c0 = time.perf_counter(), time.process_time()
    eng.fom_grid(sub, ks.names)
    subr = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "n_points": len(sub),
            "g_dc_values": gdc}
    return {"full": full, "subgrid_fom_only": subr,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pcm-gdc", type=int, default=2)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--pcm-child", nargs=2, type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="bench_com_search.json")
    a = ap.parse_args(argv)
    if a.pcm_child:
        print(json.dumps(pcm_child(*a.pcm_child)))
        return 0
    load0 = os.getloadavg()
    e = eqtune_runs(a.pcm_gdc)
    serial = run_pcm(a.pcm_gdc, 1)
    pool = run_pcm(a.pcm_gdc, a.procs)
    n_sub = serial["n_points"]
    per = {
        "eqtune_full_cpu_us": 1e6 * e["full"]["cpu_s"] / e["full"]["n_points"],
        "eqtune_full_wall_us": 1e6 * e["full"]["wall_s"] / e["full"]["n_points"],
        "pcm_serial_cpu_us": 1e6 * serial["process_cpu_s"] / n_sub,
        "pcm_serial_wall_us": 1e6 * serial["search_s"] / n_sub,
        "pcm_pool_cpu_us": 1e6 * pool["process_cpu_s"] / n_sub,
        "pcm_pool_wall_us": 1e6 * pool["search_s"] / n_sub,
    }
    extrap = a.pcm_gdc < 21
    res = {
        "threads_pinned": 1, "fstep_hz": 50e6, "channel": "gore C2C 12 dB thru", "package_case": 1,
        "load_avg_before": load0, "load_avg_after": os.getloadavg(),
        "eqtune": e, "pychopmarg_serial": serial, "pychopmarg_pool": pool, "per_point": per,
        "full_search": {
            "eqtune_measured_cpu_s": e["full"]["cpu_s"], "eqtune_measured_wall_s": e["full"]["wall_s"],
            "pcm_serial_cpu_s": per["pcm_serial_cpu_us"] * N_PCM_FULL / 1e6,
            "pcm_pool_wall_s": per["pcm_pool_wall_us"] * N_PCM_FULL / 1e6,
            "pcm_figures": "EXTRAPOLATED from the sub-grid" if extrap else "measured",
            "cpu_ratio_pcm_serial_over_eqtune": per["pcm_serial_cpu_us"] * N_PCM_FULL / 1e6 / e["full"]["cpu_s"],
            "wall_ratio_pcm_pool_over_eqtune": per["pcm_pool_wall_us"] * N_PCM_FULL / 1e6 / e["full"]["wall_s"],
        },
        # measured, nothing extrapolated: PyChOpMarg on its sub-grid alone against eqtune's whole grid (a lower
        # bound of the full-grid ratios, since the sub-grid is a part of the grid)
        "measured_lower_bound": {
            "pcm_subgrid_points": n_sub, "eqtune_full_points": e["full"]["n_points"],
            "cpu_ratio_pcm_serial_subgrid_over_eqtune_full": serial["process_cpu_s"] / e["full"]["cpu_s"],
            "wall_ratio_pcm_pool_subgrid_over_eqtune_full": pool["search_s"] / e["full"]["wall_s"],
        },
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / a.out).write_text(json.dumps(res, indent=1, default=float))
    print(json.dumps(res["full_search"] | res["measured_lower_bound"] | {"per_point": per, "load": [load0, res["load_avg_after"]],
                                           "eqtune_peak_rss_mb": e["peak_rss_mb"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
