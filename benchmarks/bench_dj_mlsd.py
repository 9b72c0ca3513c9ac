"""What MLSD (178A.1.10) adds to an 802.3dj COM run: compute_dj_com with MLSE off and on, interleaved.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_dj_mlsd.py CH_DIR [CHANNEL [ROUNDS]]

CH_DIR holds the files ``benchmarks/dj_channels.py`` writes; CHANNEL (default host-8in) with its FEXT/NEXT
files; the comparison settings (``dj_pychopmarg_kr.toml``: 270-point grid, two package cases), ADC off.
Per round: one run with MLSE off, one with it on (same process, same load), CPU seconds each (process
time), the load average before and after, and the COM of both (the off figure is the on run's
``com_plain_db`` too: the search is shared).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    from dj_com_compare import channel

    from eqtune.eye.com_dj import compute_dj_com
    from eqtune.serdes.dj_profile import load_dj_profile

    ch_dir = Path(argv[0])
    name = argv[1] if len(argv) > 1 else "host-8in"
    rounds = int(argv[2]) if len(argv) > 2 else 3
    prof = load_dj_profile(HERE / "dj_pychopmarg_kr.toml")
    prof = dataclasses.replace(prof, noise={**prof.noise, "dcom_an_db": 3.0})
    ch = channel(ch_dir, name)
    print(f"# {name}, comparison grid, both package cases, ADC off; load average {os.getloadavg()[0]:.1f}")
    offs, ons = [], []
    for k in range(rounds):
        t0 = time.process_time()
        off = compute_dj_com(ch, prof, adc=False, mlse=False)
        t1 = time.process_time()
        on = compute_dj_com(ch, prof, adc=False, mlse=True)
        t2 = time.process_time()
        offs.append(t1 - t0)
        ons.append(t2 - t1)
        print(f"round {k + 1}: MLSE off {t1 - t0:.2f} s CPU (COM {off.com_db:.3f} dB)   MLSE on {t2 - t1:.2f} s CPU "
              f"(COM {on.com_db:.3f} dB, plain {on.com_plain_db:.3f} dB)   load {os.getloadavg()[0]:.1f}")
    print(f"median: off {sorted(offs)[rounds // 2]:.2f} s, on {sorted(ons)[rounds // 2]:.2f} s CPU "
          f"(MLSD adds {sorted(ons)[rounds // 2] - sorted(offs)[rounds // 2]:+.2f} s for two cases)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
