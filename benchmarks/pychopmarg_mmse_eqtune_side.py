"""eqtune side of the PyChOpMarg MMSE comparison, 802.3ck KR and C2C (docs/pychopmarg-comparison.md).

eqtune COM at the EQ of each stored PyChOpMarg MMSE run (``pychopmarg_*_mmse_*.json``), on the same 50 MHz
grid as PyChOpMarg, with the MM and the best phase, KR with and without floating DFE taps; the sigma_TX ratio
gives the ``--snr-tx-db`` override of the matched PyChOpMarg rerun. Run from the repository root in eqtune's
venv: ``python benchmarks/pychopmarg_mmse_eqtune_side.py``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
R = HERE / "results"
CASES = [
    ("tracy_dpo_4in", "kr", "pychopmarg_tracy_dpo_4in_mmse_eqtune_eq_kr.json"),
    ("tracy_dpo_4in", "c2c", "pychopmarg_tracy_dpo_4in_mmse_eqtune_eq.json"),
    ("tracy_dpo_10in", "kr", "pychopmarg_tracy_dpo_10in_mmse_eqtune_eq_kr.json"),
    ("tracy_dpo_10in", "c2c", "pychopmarg_tracy_dpo_10in_mmse_eqtune_eq.json"),
    ("gore_c2c_12db", "c2c", "pychopmarg_gore_c2c_12db_mmse_matlab_eq.json"),
]
EQ = ("tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2")


def main() -> int:
    sys.path.insert(0, str(HERE))
    import pychopmarg_compare as pc

    from eqtune.eye.engine import EyeEngine
    from eqtune.serdes.profile import load_profile

    warnings.simplefilter("ignore")
    out = []
    for set_name, prof_name, fn in CASES:
        d = json.loads((R / fn).read_text())
        pt = {k: d["eq"][k] for k in EQ}
        ch = pc.eqtune_channel(set_name)
        prof = load_profile(f"ieee-3ck-{prof_name}")
        nof = dataclasses.replace(prof, rx=dataclasses.replace(
            prof.rx, dfe=dataclasses.replace(prof.rx.dfe, float_groups=0)))
        row = {"set": set_name, "profile": prof_name, "eq": pt, "pcm_com": d["com_db"], "pcm_sigma": d["sigma_v"],
               "pcm_As_mV": d["As_v"] * 1e3, "pcm_Ani_mV": d["Ani_v"] * 1e3}
        for lab, p in (("eqtune", prof), ("eqtune_nofloat", nof)):
            if lab == "eqtune_nofloat" and not prof.rx.dfe.float_groups:
                continue
            for s in ("mm", "best"):
                e = EyeEngine(ch, p, direction="serdes", sampling=s)
                r = e.evaluate(pt)
                nb = e.noise_sigma_v(pt)
                row[f"{lab}_{s}"] = {"com": r.com_db, "As_mV": r.cursor_mv * prof.noise.rlm / 3,
                                     "phase_ui": r.sample_phase_ui, "sigma_tx_mV": nb.sigma_tx_v * 1e3,
                                     "sigma_rj_mV": nb.sigma_rj_v * 1e3, "sigma_rx_mV": nb.sigma_rx_v * 1e3}
        row["snr_match_db"] = 33 + 20 * math.log10(d["sigma_v"]["sigma_Tx"] * 1e3 / row["eqtune_mm"]["sigma_tx_mV"])
        out.append(row)
        print(json.dumps(row))
    (R / "pychopmarg_mmse_issue16_eqtune_side.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
