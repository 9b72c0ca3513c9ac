"""PyChOpMarg 3.4.0's side of the 802.3dj COM comparison: its MMSE COM on the generated 224G channels.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/dj_com_pychopmarg.py CH_DIR OUT.json \
        [CHANNEL,... [N_QB [CASES [MLSD]]]]

CH_DIR holds the files ``benchmarks/dj_channels.py`` writes. Settings: ``benchmarks/dj_com_settings.py``
(PyChOpMarg's ``IEEE_8023dj`` with a coarser grid and two package cases). One process (``n_procs = 1``),
BLAS pinned to one thread by the caller's environment. Prints and writes one JSON row per channel with
each case's COM, FOM, EQ, A_s, A_ni, noise sigmas, and the CPU seconds of set-up and search. N_QB > 0
turns PyChOpMarg's ADC quantization on (``N_qb``, ``P_qc`` = 1e-7), for the ADC-on figure; CASES, e.g. "1",
limits the package cases. MLSD "1" turns PyChOpMarg's 178A.1.10 MLSD reference receiver on (``mlsd``,
``dCOM_an`` = 3 dB, the D3.3 value): COM is then the MLSD figure, and the row also holds COM_DFE, the MLSD
gain, DER_MLSD and g_an (PyChOpMarg computes MLSD after the search, so the EQ is the same).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    import dj_com_settings as st
    import numpy as np
    from dj_channels import HOST_LENGTHS_IN
    from pychopmarg.com import COM
    from pychopmarg.config.ieee_8023dj import IEEE_8023dj

    warnings.simplefilter("ignore")
    ch_dir, out = Path(argv[0]), Path(argv[1])
    g = st.GRID
    cases = [{k: [zp1, st.ZP2_MM] for k in ("zp_tx", "zp_rx", "zp_next", "zp_fext")} for zp1 in st.CASE_ZP1_MM]
    names = [f"host-{int(n)}in" for n in HOST_LENGTHS_IN] + ["c2m-224g-6in"]
    if len(argv) > 2:
        names = argv[2].split(",")
    nqb = int(argv[3]) if len(argv) > 3 else 0
    if len(argv) > 4 and argv[4]:
        cases = [cases[int(k) - 1] for k in argv[4].split(",")]
    mlsd = len(argv) > 5 and argv[5] == "1"
    rows = []
    for name in names:
        chs = {"THRU": [ch_dir / f"{name}.s4p"],
               "FEXT": [ch_dir / f"{name}-fext1.s4p", ch_dir / f"{name}-fext2.s4p"],
               "NEXT": [ch_dir / f"{name}-next1.s4p"]}
        row: dict[str, object] = {"channel": name, "cases": []}
        for case in cases:
            p = dataclasses.replace(IEEE_8023dj, g_DC=st.values(*g["g_dc_db"]), g_DC2=st.values(*g["g_dc2_db"]),
                                    tx_taps_min=list(g["tx_taps_min"]), tx_taps_max=list(g["tx_taps_max"]),
                                    tx_taps_step=list(g["tx_taps_step"]), N_qb=nqb, P_qc=1e-7, mlsd=mlsd, dCOM_an=3.0,
                                    **case)
            t0 = time.process_time()
            c = COM(p, chs)
            c.n_procs = 1
            t1 = time.process_time()
            com = float(c())
            t2 = time.process_time()
            r, f = c.com_rslts, c.fom_rslts
            row["cases"].append({  # type: ignore[attr-defined]
                "quant_step_mv": float(r.get("quant_step", 0.0)) * 1e3,
                "case": st.CASE_ZP1_MM.index(case["zp_tx"][0]) + 1, "n_qb": nqb, "zp1_mm": case["zp_tx"][0], "com_db": com, "fom_db": float(f["FOM"]),
                "g_dc": float(c.gDC), "g_dc2": float(c.gDC2),
                "tx_taps": [float(x) for x in c._tx_combs[c.tx_ix]], "rx_taps": [float(x) for x in c.rx_taps],
                "dfe": [float(x) for x in c.dfe_taps], "cursor_ix": int(c.cursor_ix),
                "as_mv": float(r["As"]) * 1e3, "ani_mv": float(r["Ani"]) * 1e3,
                **{f"{s.lower()}_mv": float(r[s]) * 1e3 for s in ("sigma_Tx", "sigma_G", "sigma_N", "sigma_J",
                                                                  "sigma_ISI", "sigma_XT")},
                "mlsd": mlsd, **({"com_dfe_db": float(r["COM_DFE"]), "delta_com_mlsd_db": float(r["delta_COM_mlsd"]),
                                  "der_mlsd": float(r["DER_MLSD"]), "g_an": float(r["g_an"]),
                                  "mlsd_terms": int(r["mlsd_terms"])} if mlsd else {}),
                "points": int(c.n_fom_evals), "setup_cpu_s": t1 - t0, "search_cpu_s": t2 - t1})
            print(json.dumps({"channel": name, **row["cases"][-1]}), flush=True)  # type: ignore[index]
        row["com_db"] = min(x["com_db"] for x in row["cases"])  # type: ignore[attr-defined]
        rows.append(row)
    out.write_text(json.dumps({"pychopmarg": "3.4.0", "numpy": np.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
