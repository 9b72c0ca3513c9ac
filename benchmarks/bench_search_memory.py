"""Peak memory (ru_maxrss) of every search path, each run as a user runs it, each in its own process.

The paths: ``eqtune com`` under the 802.3ck KR, C2C and CR profiles (the FOM search over the sheet's grid, both
package cases, ``--json``) on the shared tracy 10 in set with its 8 aggressors and the gore thru, the 802.3dj
search and the DSP-receiver eye (``eye --rx-ffe 15,6``, the Rx FFE's MMSE adaptation) on the library channel
``c2m-224g-6in``, and ``eqtune tune --sim`` over the 6-knob serdes space
(tx_cm3, tx_cm2, tx_cm1, tx_c1, ctle_gdc, ctle_gdc2; 383,180 feasible codes) on the gore thru, both its whole grid
(``--optimizer grid``, every code measured and written in ``--json``) and the default search. Threads pinned to
1 (as ``bench_com_search.py``). The target: no search above 1 GB.

Each child's stdout goes to a file the harness never reads into memory: on Linux a child started by
``subprocess`` (vfork + exec) inherits the parent's peak RSS in ``ru_maxrss`` (the kernel keeps the larger of
the old and new address space's high-water marks at exec), so a harness that had read a 362 MB ``--json``
document reported its own 738 MB as the peak of every later path. Each row records the harness's own peak
(``harness_maxrss_mb``, a floor under every figure) to show it stayed small. ``--tree DIR`` runs another
checkout's eqtune (``PYTHONPATH=DIR``), e.g. main for a before/after in one run. Usage::

    nice -n 5 python benchmarks/bench_search_memory.py [--only NAME,...] [--tree DIR] [--out FILE]

Writes ``benchmarks/results/bench_search_memory.json``.
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
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
LIMIT_MB = 1024.0
SIX = "tx_cm3,tx_cm2,tx_cm1,tx_c1,ctle_gdc,ctle_gdc2"


def paths(ieee: Path) -> dict[str, list[str]]:
    """name -> the eqtune command line (after ``python -m eqtune``)."""
    t10 = ieee / "tracy_3ck_02_0119_DPO_10in"
    gore = str(ieee / "gore_3ck_02_0519_C2C_12dB" / "C2C_PCB_SYSVIA_12dB_thru.s4p")
    tracy10 = [str(t10 / "DPO_10in_Meg7_THRU.s4p"), "--fext", str(t10 / "*_FEN*.s4p"), "--next", str(t10 / "*_NEN*.s4p")]
    return {
        "tune_6knob_grid_gore_json": ["tune", gore, "--sim", "--knobs", SIX, "--optimizer", "grid", "--budget",
                                      "400000", "--seed", "1", "--json"],
        "tune_6knob_default_gore_json": ["tune", gore, "--sim", "--knobs", SIX, "--seed", "1", "--json"],
        "com_kr_tracy10_8agg": ["com", *tracy10, "--profile", "ieee-3ck-kr", "--json", "-q"],
        "com_c2c_tracy10_8agg": ["com", *tracy10, "--profile", "ieee-3ck-c2c", "--json", "-q"],
        "com_cr_gore": ["com", gore, "--profile", "ieee-3ck-cr", "--json", "-q"],
        "com_dj_kr_c2m_224g_6in": ["com", "c2m-224g-6in", "--profile", "ieee-dj-kr", "--json", "-q"],
        "eye_dj_rx_ffe_c2m_224g_6in": ["eye", "c2m-224g-6in", "--direction", "serdes", "--tx-ffe=-0.1,0.9,0", "--ber",
                                       "1e-3", "--rx-ffe", "15,6", "--json"],
    }


def run_to_file(cmd: list[str], out: Path, env: dict[str, str], cwd: Path) -> dict:
    """Run ``cmd`` with stdout to ``out`` (never read here); wall, CPU (user + system) and peak RSS (MB) of the
    child from ``os.wait4``, and the harness's own peak RSS when the child ended."""
    with out.open("w") as fo, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=fo, stderr=err, env=env, cwd=str(cwd))
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed ({code}): {err.read().strip().splitlines()[-1:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024,
            "harness_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "json_output_mb": out.stat().st_size / 2**20}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    from pychopmarg_compare import shared_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma list of path names (default: all)")
    ap.add_argument("--out", default="bench_search_memory.json")
    ap.add_argument("--keep-output", default=None, metavar="DIR", help="write each command's stdout to DIR/NAME.json")
    ap.add_argument("--tree", default=None, metavar="DIR", help="run DIR's eqtune (PYTHONPATH=DIR), e.g. main's")
    a = ap.parse_args(argv)
    env = os.environ.copy()
    tree = Path(a.tree).resolve() if a.tree else HERE.parent  # the child runs there: ``-m`` puts its cwd first
    env["PYTHONPATH"] = str(tree)
    todo = paths(shared_dir() / "channels-ieee")
    if a.only:
        unknown = sorted(set(a.only.split(",")) - set(todo))
        if unknown:
            raise SystemExit(f"--only {','.join(unknown)}: unknown; give some of {', '.join(todo)}")
        todo = {k: v for k, v in todo.items() if k in a.only.split(",")}
    rows: list[dict] = []
    res = {"limit_mb": LIMIT_MB, "threads_pinned": 1, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "tree": str(tree), "rows": rows}
    (HERE / "results").mkdir(exist_ok=True)
    for name, args in todo.items():
        load0 = os.getloadavg()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(a.keep_output or tmp, f"{name}.json")
            r = run_to_file([sys.executable, "-m", "eqtune", *args], out, env, tree)
        rows.append({"path": name, "command": "eqtune " + " ".join(args), **r,
                     "within_1gb": r["peak_rss_mb"] <= LIMIT_MB, "load_avg": [load0, os.getloadavg()]})
        print(json.dumps({k: rows[-1][k] for k in ("path", "peak_rss_mb", "cpu_s", "wall_s", "json_output_mb")}),
              flush=True)
        (HERE / "results" / a.out).write_text(json.dumps(res, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
