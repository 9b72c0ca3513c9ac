"""``eqtune com`` (the standard's procedure: FOM search, both package cases) on the shared 802.3ck sets.

For each of tracy DPO 4 / 10 / 12 in (../shared/channels-ieee; the thru with every FEXT and NEXT file of its
folder) and gore C2C 12 dB (thru only), under ``ieee-3ck-kr`` and ``ieee-3ck-c2c``: COM of package case 1 and
case 2 at their best-FOM EQ, the worse, the terms, the time (wall and CPU) and the peak memory. Run::

    nice -n 10 python benchmarks/com_ieee_sets.py

Writes ``benchmarks/results/com_ieee_sets.json``; docs/com-802.3ck-channels.md quotes it.
"""

from __future__ import annotations

import glob
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    from eqtune.cli.com_cmd import build_channel
    from eqtune.eye.com import compute_com

    base = None
    for c in (os.environ.get("EQTUNE_SHARED"), HERE.parent.parent / "shared", HERE.parent.parent.parent / "shared"):
        if c and (Path(c) / "channels-ieee").is_dir():
            base = Path(c) / "channels-ieee"
    if base is None:
        sys.exit("../shared/channels-ieee not found (set EQTUNE_SHARED)")
    sets = [(f"tracy {n} in", base / f"tracy_3ck_02_0119_DPO_{n}in" / f"DPO_{n}in_Meg7_THRU.s4p") for n in (4, 10, 12)]
    sets.append(("gore C2C 12 dB", base / "gore_3ck_02_0519_C2C_12dB" / "C2C_PCB_SYSVIA_12dB_thru.s4p"))
    rows = []
    for label, thru in sets:
        d = thru.parent
        fext = tuple(sorted(glob.glob(str(d / "*_FEN*.s4p"))))
        nxt = tuple(sorted(glob.glob(str(d / "*_NEN*.s4p"))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ch = build_channel(str(thru), fext, nxt, None, None)
        for prof in ("ieee-3ck-kr", "ieee-3ck-c2c"):
            t0, c0 = time.perf_counter(), time.process_time()
            rep = compute_com(ch, prof)
            row = {"set": label, "profile": prof, "wall_s": time.perf_counter() - t0,
                   "cpu_s": time.process_time() - c0, "load_avg": os.getloadavg(), **rep.to_dict()}
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("set", "profile", "com_db", "passed", "worst_case", "wall_s",
                                                  "cpu_s")} | {"cases": [(c["package_case"], round(c["com_db"], 3))
                                                                        for c in row["cases"]]}), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "com_ieee_sets.json").write_text(json.dumps({"peak_rss_mb": peak, "rows": rows}, indent=1,
                                                                    default=float))
    print(json.dumps({"peak_rss_mb": peak}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
