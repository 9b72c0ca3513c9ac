"""The standard's EQ search (93A-36 FOM over the 802.3ck C2C TX FFE x CTLE grid): ``eqtune com`` vs PyChOpMarg.

One run, interleaved, on the channel sets given (default: gore C2C 12 dB thru, tracy DPO 4 in and 10 in with
their 5 FEXT + 3 NEXT files, ../shared/channels-ieee), profile 802.3ck C2C (PyChOpMarg's grid of 167,895
points; eqtune's exact grid 168,525), package case 1, the same 50 MHz frequency step on both sides,
BLAS/OpenMP threads pinned to 1 on both (set here before numpy is imported, inherited by every child and by
PyChOpMarg's pool workers). Every run is its own child process, measured with ``os.wait4`` (CPU = user + system
of the process and of its waited-for children, i.e. PyChOpMarg's pool workers; peak memory = ru_maxrss):

* eqtune: the command a user runs, ``eqtune com SET.toml --profile ieee-3ck-c2c --case 1 --json`` (SET.toml:
  the set at ``df_mhz = 50``; start-up, channel loading, the FOM of every grid point, COM at the best), and
  the same with both package cases (no ``--case``);
  and, for reference, the default a user gets from the Touchstone files (both cases, their 10 MHz step);
* PyChOpMarg 3.4.0: ``COM(params, set)`` then ``com(opt_mode=PRZF)`` (its full exhaustive search,
  ``local_search = 0``, over its whole grid unless ``--pcm-gdc`` < 21, then COM at the best), serial
  (``n_procs = 1``) or in its own process pool (``n_procs = --procs``).

The plan (``--plan``) is a list of PyChOpMarg runs, SET:pool or SET:serial (optionally SET:MODE:N for its first N
g_DC values only, a part of its grid), run one after another, never
concurrently; each is bracketed by eqtune runs of the same set (before and after) so that a wall-time ratio
compares runs at the same load. The results file is rewritten after every run, so a plan stopped part-way
keeps what finished (``plan_done`` / ``plan_not_run``). Usage::

    nice -n 5 python benchmarks/bench_com_search.py [--plan gore_c2c_12db:pool,gore_c2c_12db:serial,...]

Writes ``benchmarks/results/bench_com_search.json`` (``--out``).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
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


DEFAULT_PLAN = ("gore_c2c_12db:pool,gore_c2c_12db:serial,tracy_dpo_4in:pool,tracy_dpo_10in:pool,"
                "tracy_dpo_4in:serial,tracy_dpo_10in:serial")
ROOT = HERE.parent


def pcm_child(set_name: str, n_gdc: int, procs: int) -> dict:
    """Inside a child process: PyChOpMarg's whole PRZF procedure on one set (set-up, the exhaustive search of
    the first ``n_gdc`` g_DC values x every g_DC2 x every TX setting, COM at the best)."""
    sys.path.insert(0, str(HERE))
    from pychopmarg.com import COM
    from pychopmarg.common import OptMode
    from pychopmarg_compare import C2C, channel_sets, pcm_params

    C2C["g_DC"] = C2C["g_DC"][:n_gdc]
    params = pcm_params(0.05, 0)
    t0 = time.perf_counter()
    com = COM(params, channel_sets()[set_name])
    com.n_procs = procs
    t_init = time.perf_counter() - t0
    _PARENT_COM.append(com)
    _install_one_tap_patch()
    t1 = time.perf_counter()
    value = float(com(opt_mode=OptMode.PRZF))
    tx = [float(x) for x in com._tx_combs[com.tx_ix]]
    return {"init_s": t_init, "search_and_com_s": time.perf_counter() - t1, "com_db": value,
            "eq": {"tx_cm3": tx[0], "tx_cm2": tx[1], "tx_cm1": tx[2], "tx_c1": tx[3],
                   "ctle_gdc": float(com.gDC), "ctle_gdc2": float(com.gDC2)},
            "n_points": int(com.n_fom_evals), "procs": procs}


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``cmd`` as a child; its wall time, CPU time (user + system, its waited-for children included) and
    peak resident memory (ru_maxrss, MB) from ``os.wait4``, and its stdout."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env or os.environ.copy(), cwd=str(ROOT))
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, etext = out.read(), err.read()
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {etext.strip().splitlines()[-1:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024,
            "stdout": text}


def run_pcm(set_name: str, n_gdc: int, procs: int) -> dict:
    r = run_measured([sys.executable, __file__, "--pcm-child", set_name, str(n_gdc), str(procs)],
                     {**os.environ, "EQTUNE_PCM_CHILD": "1"})
    d = json.loads(r.pop("stdout").strip().splitlines()[-1])
    return {**d, "process_wall_s": r["wall_s"], "process_cpu_s": r["cpu_s"], "peak_rss_mb": r["peak_rss_mb"],
            "load_avg_after": os.getloadavg()}


def run_eqtune(toml: Path, cases: tuple[int, ...]) -> dict:
    """``eqtune com TOML --profile ieee-3ck-c2c [--case N] --json -q``, as a user runs it."""
    cmd = [sys.executable, "-m", "eqtune", "com", str(toml), "--profile", "ieee-3ck-c2c", "--json", "-q"]
    for c in cases:
        cmd += ["--case", str(c)]
    r = run_measured(cmd)
    rep = json.loads(r.pop("stdout"))
    return {**r, "com_db": rep["com_db"], "load_avg_after": os.getloadavg(),
            "cases": [{"package_case": c["package_case"], "com_db": c["com_db"], "points": c["points_searched"],
                       "eq": c["eq"]} for c in rep["cases"]]}


def run_eqtune_files(set_name: str) -> dict:
    """``eqtune com THRU --fext ... --next ... --profile ieee-3ck-c2c --json -q``: the default a user gets
    (both package cases, the files' own 10 MHz step, port order detected), for reference."""
    from pychopmarg_compare import channel_sets

    ch = channel_sets()[set_name]
    cmd = [sys.executable, "-m", "eqtune", "com", str(ch["THRU"][0]), "--profile", "ieee-3ck-c2c", "--json", "-q"]
    for kind in ("FEXT", "NEXT"):
        for f in ch[kind]:
            cmd += [f"--{kind.lower()}", str(f)]
    r = run_measured(cmd)
    rep = json.loads(r.pop("stdout"))
    return {**r, "com_db": rep["com_db"], "frequency_step_hz": rep["settings"]["frequency_step_hz"]}


def eqtune_bracket(toml: Path, set_name: str) -> dict:
    return {"case1": run_eqtune(toml, (1,)), "both_cases": run_eqtune(toml, ()),
            "both_cases_files_step": run_eqtune_files(set_name)}


def summarize(set_name: str, runs: list[dict]) -> dict:
    """Ratios for one set: PyChOpMarg's runs against the eqtune runs that bracket them (the mean of the runs
    just before and just after, so both sides of a wall ratio saw the same load)."""
    out: dict = {}
    for r in runs:
        if "pcm" not in r or "eqtune_after" not in r:
            continue
        e1 = [b["case1"] for b in (r["eqtune_before"], r["eqtune_after"])]
        e2 = [b["both_cases"] for b in (r["eqtune_before"], r["eqtune_after"])]
        mean = lambda xs, k: sum(x[k] for x in xs) / len(xs)  # noqa: E731
        p = r["pcm"]
        key = r["mode"] + ("" if r.get("pcm_gdc_values", 21) >= 21 else f"_gdc{r['pcm_gdc_values']}")
        out[key] = {
            "pcm_points": p["n_points"], "pcm_grid": "full" if r.get("pcm_gdc_values", 21) >= 21 else
            f"first {r['pcm_gdc_values']} of 21 g_DC values (a part of the grid)", "pcm_cpu_s": p["process_cpu_s"], "pcm_wall_s": p["process_wall_s"],
            "eqtune_case1_cpu_s": mean(e1, "cpu_s"), "eqtune_case1_wall_s": mean(e1, "wall_s"),
            "eqtune_both_cpu_s": mean(e2, "cpu_s"), "eqtune_both_wall_s": mean(e2, "wall_s"),
            "cpu_ratio_pcm_over_eqtune_case1": p["process_cpu_s"] / mean(e1, "cpu_s"),
            "wall_ratio_pcm_over_eqtune_case1": p["process_wall_s"] / mean(e1, "wall_s"),
            "cpu_ratio_pcm_over_eqtune_both_cases": p["process_cpu_s"] / mean(e2, "cpu_s"),
            "wall_ratio_pcm_over_eqtune_both_cases": p["process_wall_s"] / mean(e2, "wall_s"),
            "load_avg": [r["load_avg_before"], p["load_avg_after"]],
        }
    return {"set": set_name, **out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", default=DEFAULT_PLAN, help="PyChOpMarg runs in order: SET:pool|serial,...")
    ap.add_argument("--pcm-gdc", type=int, default=21, help="PyChOpMarg's g_DC values searched (21 = its full grid)")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--pcm-child", nargs=3, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="bench_com_search.json")
    a = ap.parse_args(argv)
    if a.pcm_child:
        print(json.dumps(pcm_child(a.pcm_child[0], int(a.pcm_child[1]), int(a.pcm_child[2]))))
        return 0
    import tempfile

    sys.path.insert(0, str(HERE))
    from pychopmarg_compare import channel_sets, channel_toml

    known = channel_sets()
    plan: list[tuple[str, str, int]] = []
    for item in (i.split(":") for i in a.plan.split(",") if i):
        if not (2 <= len(item) <= 3 and item[0] in known and item[1] in ("pool", "serial")
                and (len(item) == 2 or item[2].isdigit())):
            raise SystemExit(f"--plan item {':'.join(item)!r}: give SET:pool or SET:serial (optionally :N_GDC), "
                             f"SET one of {sorted(known)}")
        plan.append((item[0], item[1], int(item[2]) if len(item) == 3 else a.pcm_gdc))
    label = [f"{n}:{m}" + ("" if g >= 21 else f":{g}") for n, m, g in plan]
    res: dict = {"threads_pinned": 1, "fstep_hz": 50e6, "profile": "802.3ck C2C (ieee-3ck-c2c)",
                 "package_case": "1 (PyChOpMarg; eqtune --case 1, and both cases)", "pcm_gdc_values": a.pcm_gdc,
                 "pcm_grid": "full" if a.pcm_gdc >= 21 else f"first {a.pcm_gdc} g_DC values", "procs": a.procs,
                 "cpu_count": os.cpu_count(), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "plan": label, "plan_done": [], "plan_not_run": list(label),
                 "runs": [], "summary": []}
    out_path = HERE / "results" / a.out
    out_path.parent.mkdir(exist_ok=True)

    def save() -> None:
        by_set: dict[str, list[dict]] = {}
        for r in res["runs"]:
            by_set.setdefault(r["set"], []).append(r)
        res["summary"] = [summarize(k, v) for k, v in by_set.items()]
        peaks = [b[k]["peak_rss_mb"] for r in res["runs"] for b in (r["eqtune_before"], r.get("eqtune_after"))
                 if b for k in ("case1", "both_cases")]
        res["eqtune_peak_rss_mb_max"] = max(peaks) if peaks else None
        out_path.write_text(json.dumps(res, indent=1, default=float))

    with tempfile.TemporaryDirectory() as d:
        tomls = {}
        for name in {n for n, _, _ in plan}:
            tomls[name] = Path(d) / f"{name}.toml"
            tomls[name].write_text(channel_toml(name, 50e6))
        for (name, mode, n_gdc), item in zip(plan, label):
            run: dict = {"set": name, "mode": mode, "pcm_gdc_values": n_gdc, "load_avg_before": os.getloadavg(),
                         "eqtune_before": eqtune_bracket(tomls[name], name)}
            res["runs"].append(run)
            save()
            run["pcm"] = run_pcm(name, n_gdc, 1 if mode == "serial" else a.procs)
            save()
            run["eqtune_after"] = eqtune_bracket(tomls[name], name)
            res["plan_done"].append(item)
            res["plan_not_run"].remove(item)
            save()
            print(json.dumps(summarize(name, [run])), flush=True)
    res["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
