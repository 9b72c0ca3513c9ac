"""802.3dj COM search speed: eqtune against PyChOpMarg 3.4.0 (MMSE), CPU time, one run, one thread each.

    nice -n 10 python benchmarks/bench_dj_search.py [--channel host-8in] [--dir DIR]

Both sides compute the COM of one generated channel (benchmarks/dj_channels.py, 2 FEXT + 1 NEXT) for
package case 1 at the comparison settings (benchmarks/dj_pychopmarg_kr.toml = dj_com_settings.py on
PyChOpMarg's ``IEEE_8023dj``: 15 CTLE settings x 18 TX FFE points, each with the +-UI/2 sampling-time
search and the MMSE Rx FFE). BLAS/OpenMP are pinned to one thread before NumPy loads; PyChOpMarg runs
with ``n_procs = 1``. CPU seconds are ``time.process_time()`` of this process. Reported: each side's
set-up (channel and packages onto the COM grid) and search + COM, and the ratios PyChOpMarg / eqtune.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--channel", default="host-8in")
    ap.add_argument("--dir", type=Path, default=None, help="folder of dj_channels.py files (default: generate)")
    a = ap.parse_args()
    try:
        from pychopmarg.com import COM
        from pychopmarg.config.ieee_8023dj import IEEE_8023dj
    except ImportError:
        print("skipped: pychopmarg 3.4.0 is not installed (pip install -e '.[bench]')")
        return 0
    sys.path.insert(0, str(HERE))
    import dj_channels
    import dj_com_settings as st
    from dj_com_compare import channel

    from eqtune.eye.com_dj import compute_dj_com
    from eqtune.serdes.dj_profile import load_dj_profile

    warnings.simplefilter("ignore")
    tmp = None
    ch_dir = a.dir
    if ch_dir is None:
        tmp = tempfile.TemporaryDirectory()
        ch_dir = Path(tmp.name)
        dj_channels.write_dj_channel_sets(ch_dir)
    n = a.channel
    g = st.GRID
    case = {k: [st.CASE_ZP1_MM[0], st.ZP2_MM] for k in ("zp_tx", "zp_rx", "zp_next", "zp_fext")}
    p = dataclasses.replace(IEEE_8023dj, g_DC=st.values(*g["g_dc_db"]), g_DC2=st.values(*g["g_dc2_db"]),
                            tx_taps_min=list(g["tx_taps_min"]), tx_taps_max=list(g["tx_taps_max"]),
                            tx_taps_step=list(g["tx_taps_step"]), **case)
    chs = {"THRU": [ch_dir / f"{n}.s4p"], "FEXT": [ch_dir / f"{n}-fext1.s4p", ch_dir / f"{n}-fext2.s4p"],
           "NEXT": [ch_dir / f"{n}-next1.s4p"]}
    prof = load_dj_profile(HERE / "dj_pychopmarg_kr.toml")

    t0 = time.process_time()
    ch = channel(ch_dir, n)
    t1 = time.process_time()
    ours = compute_dj_com(ch, prof, cases=(1,), adc=False)
    t2 = time.process_time()
    c = COM(p, chs)
    c.n_procs = 1
    t3 = time.process_time()
    theirs = float(c())
    t4 = time.process_time()
    e_read, e_com = t1 - t0, t2 - t1
    p_setup, p_com = t3 - t2, t4 - t3
    pts = ours.cases[0].points_searched
    print(f"channel {n}, package case 1, {pts} EQ points (PyChOpMarg: {c.n_fom_evals}); load {os.getloadavg()[0]:.1f}")
    print(f"COM: eqtune {ours.com_db:.3f} dB, PyChOpMarg {theirs:.3f} dB")
    print(f"eqtune      CPU: read {e_read:6.2f} s   link + search + COM {e_com:6.2f} s")
    print(f"PyChOpMarg  CPU: set-up {p_setup:6.2f} s   search + COM {p_com:6.2f} s")
    print(f"ratio PyChOpMarg / eqtune: search + COM {p_com / e_com:.1f}x; everything {(p_setup + p_com) / (e_read + e_com):.1f}x")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
