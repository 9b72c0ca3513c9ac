"""eqtune's COM against PyChOpMarg 3.4.0's PRZF (93A) path at the config sheets' values, term by term.

No parameter is fitted: both sides get the 802.3ck sheet values listed in ``pychopmarg_compare.py`` (``C2C``
and ``KR_OVERRIDES``; SNR_TX = 33 dB), package case 1, the same frequency step (``--fstep-ghz``, default the
files' 10 MHz), port order 1-2/3-4, the EQ pinned on both sides (eqtune's FOM choice, ``eqtune com``), and on
eqtune's side the settings PyChOpMarg has: MATLAB COM's TX noise (``tx_noise="cursor"``, PyChOpMarg's
``varTx = vic_curs_val**2 * 10**(-SNR_TX/10)``) and no floating DFE taps (``floating_taps=False``).

Each set runs PyChOpMarg four times: as shipped, and with one step aligned, its RX package built with the line
segments in the standard's order (``pc.pcm_params(rx_package_ball_first=True)``; PyChOpMarg 3.4.0 builds the RX
package's line from the TX order, pychopmarg/com.py l.464/478; with the order mirrored its RX package equals
MATLAB COM's in ../shared/com-golden), a third time with also its pulse formed by MATLAB COM's box-car
(``pulse_boxcar=True``), and a fourth with also MATLAB COM's 3 T_r delay in the T_r filter
(``tx_filter_delay=True``). ``delta_db_aligned`` holds the residual with each step aligned.

Diagnostics for the residual (``--diag``): eqtune with the exact cursor count raised from 16 to 64 and 256
(``k_exact``; the rest of the ISI is Gaussian), so that this cause of a difference can be ruled in or out. Needs ``pychopmarg==3.4.0`` (the ``bench`` extra). Run::

    nice -n 10 python benchmarks/com_pychopmarg_przf.py [--sets gore_c2c_12db,tracy_dpo_4in,...] [--diag]

Writes ``benchmarks/results/com_pychopmarg_przf.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pychopmarg_compare as pc  # noqa: E402  (this folder's helper: the sheet values, PyChOpMarg's runner)

# PyChOpMarg runs per set: as shipped; with its RX package's segments in the standard's order; with also MATLAB
# COM's box-car pulse; and with also MATLAB COM's 3 T_r delay in the T_r filter (pychopmarg_compare.pcm_params /
# _run_pcm document each step)
VARIANTS = ("as_shipped", "rx_package", "rx_package_and_boxcar", "rx_package_boxcar_and_tx_delay")

# (set, profile) -> EQ c(-3), c(-2), c(-1), c(1), g_DC, g_DC2: eqtune com's FOM choice, package case 1
SETS = {
    ("gore_c2c_12db", "c2c"): [-0.02, 0.06, -0.20, -0.04, -3.0, -2.0],  # MATLAB COM 3.70's optimum
    ("tracy_dpo_4in", "c2c"): None,
    ("tracy_dpo_10in", "c2c"): None,
    ("tracy_dpo_4in", "kr"): None,
    ("tracy_dpo_10in", "kr"): None,
    ("tracy_dpo_12in", "kr"): None,
}


def eqtune_side(set_name: str, profile: str, eq: list[float] | None, fstep_ghz: float, diag: bool) -> dict:
    import numpy as np

    from eqtune.eye.engine import EyeEngine

    ch = pc.eqtune_channel(set_name, df_hz=fstep_ghz * 1e9)
    prof = f"ieee-3ck-{profile}"
    eng = EyeEngine(ch, prof, direction="serdes", package_case=1, tx_noise="cursor", floating_taps=False)
    if eq is None:  # the standard's choice: best FOM over the sheet's grid
        ks = eng.knob_space()
        g = ks.grid()
        f = eng.fom_grid(g, ks.names)
        row = g[int(np.argmax(f))]
        eq = [float(row[list(ks.names).index(n)]) for n in pc.EQ_NAMES]
    pt = dict(zip(pc.EQ_NAMES, eq))
    r = eng.evaluate(pt)
    t = eng.fom_terms(*eng.grid_rows(np.array([eq]), pc.EQ_NAMES)).row(0)
    out = {"eq": eq, "com_db": r.com_db, "a_s_v": t["a_s"], "cursor_v": r.cursor_mv * 1e-3, "fom_db": t["fom_db"],
           "sigma_v": {"sigma_Tx": t["sigma_tx"], "sigma_N": t["sigma_n"], "sigma_ISI": t["sigma_isi"],
                       "sigma_XT": t["sigma_xt"], "sigma_J_rj": eng.noise_sigma_v(pt).sigma_rj_v},
           "dfe_taps": r.dfe_taps, "n_post": eng.n_post, "phase_ui": r.sample_phase_ui}
    if diag:
        # PyChOpMarg's own Mueller-Muller search (utility.probability.loc_curs) on eqtune's pulse: does it pick
        # eqtune's cursor sample? (if so, a phase difference comes from the pulses, not from the search)
        from pychopmarg.utility.probability import loc_curs

        pr = eng.pulse_response(pt)
        dfe = eng.profile.rx.dfe
        out["loc_curs_on_eqtune_pulse_equals_eqtune_cursor"] = bool(
            loc_curs(pr.pulse_v, pr.samples_per_ui, np.array(dfe.b_max), np.array(dfe.b_min)) == pr.cursor_index)
        for k in (64, 256):
            e2 = EyeEngine(ch, prof, direction="serdes", package_case=1, tx_noise="cursor", floating_taps=False,
                           k_exact=k)
            out[f"com_db_k_exact_{k}"] = e2.evaluate(pt).com_db
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=None, help="comma list of set:profile, e.g. gore_c2c_12db:c2c")
    ap.add_argument("--fstep-ghz", type=float, default=0.01)
    ap.add_argument("--diag", action="store_true")
    ap.add_argument("--out", default="com_pychopmarg_przf.json")
    a = ap.parse_args(argv)
    want = list(SETS) if a.sets is None else [tuple(s.split(":")) for s in a.sets.split(",")]
    rows = []
    for set_name, profile in want:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            e = eqtune_side(set_name, profile, SETS.get((set_name, profile)), a.fstep_ghz, a.diag)
            t_e = time.perf_counter() - t0
            runs = {}
            for variant in VARIANTS:
                saved = json.loads(json.dumps(pc.C2C))
                pc.use_profile(profile)
                t0 = time.perf_counter()
                runs[variant] = pc.run_pcm(set_name, "PRZF", a.fstep_ghz, 0, eq=e["eq"],
                                           rx_package_ball_first=variant != "as_shipped",
                                           pulse_boxcar=variant in VARIANTS[2:],
                                           tx_filter_delay=variant == VARIANTS[3])
                t_p = time.perf_counter() - t0
                params = dict(pc.C2C)
                pc.C2C.clear()
                pc.C2C.update(saved)
            p = runs["as_shipped"]
        row = {"set": set_name, "profile": profile, "fstep_ghz": a.fstep_ghz, "eq": e["eq"],
               "eqtune": e, "pychopmarg": {k: p[k] for k in ("com_db", "As_v", "Ani_v", "sigma_v", "dfe_taps",
                                                              "cursor_ix")},
               "delta_db": e["com_db"] - p["com_db"],
               "pychopmarg_aligned": {v: {k: runs[v][k] for k in ("com_db", "As_v", "Ani_v", "sigma_v", "dfe_taps",
                                                                  "cursor_ix")} for v in VARIANTS[1:]},
               "delta_db_aligned": {v: e["com_db"] - runs[v]["com_db"] for v in VARIANTS[1:]},
               "params_both_sides": params,
               "eqtune_settings": {"tx_noise": "cursor", "floating_taps": False, "package_case": 1,
                                   "sampling": "mm", "samples_per_ui": 32, "port_order": "1-2/3-4"},
               "seconds": {"eqtune": t_e, "pychopmarg": t_p}}
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("set", "profile", "eq", "delta_db", "delta_db_aligned")}
                         | {"eqtune_com": e["com_db"], "pcm_com": p["com_db"],
                            "pcm_com_aligned": {v: runs[v]["com_db"] for v in VARIANTS[1:]},
                            "eqtune_As": e["a_s_v"], "pcm_As": p["As_v"],
                            "pcm_As_aligned": {v: runs[v]["As_v"] for v in VARIANTS[1:]},
                            "eqtune_sigma": e["sigma_v"], "pcm_sigma": p["sigma_v"],
                            "diag": {k: v for k, v in e.items() if k.startswith("com_db_k")}}), flush=True)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / a.out).write_text(json.dumps(rows, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
