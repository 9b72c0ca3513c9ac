"""Rx FFE tap overrides of the host SerDes receiver: figures for README / docs/tuning.md.

One run, same load: the DSP receiver (CTLE -> 15-tap Rx FFE, 6 pre -> 1-tap DFE; host-lr-224g, 106.25 GBd
PAM4, BER 1e-3, TX c(-1) -0.1) adapted (MMSE, no override) and with w(-1) held at each code of a sweep, its
statistical eye against the bit-by-bit simulator at the held code -8. Channels: c2m-224g-6in (library, the
settings were chosen on it) and the channel generated from it with a 10 in host trace (report only).

    nice -n 5 python benchmarks/rx_ffe_override.py > benchmarks/results/rx_ffe_override.txt
"""

from __future__ import annotations

import os
import time

import numpy as np

from eqtune.eye import EyeEngine
from eqtune.eye.ffe_eye import ffe_eye
from eqtune.eye.prepare import MAX_POST_UI
from eqtune.eye.tdlink import simulate_ffe_link
from eqtune.serdes.knobs import RX_FFE_PRE1
from tests.eye.test_ffe_eye import _channel

PROFILE, BER, POINT, HELD = "host-lr-224g", 1e-3, {"tx_cm1": -0.1}, -8


def main() -> None:
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for length_in, role in ((6, "library c2m-224g-6in (settings)"), (10, "generated 10 in host trace (report)")):
        ch = _channel(length_in)
        eng = EyeEngine(ch, PROFILE, direction="serdes", ber=BER)
        t0 = time.perf_counter()
        free = ffe_eye(eng, POINT)
        t_free = time.perf_counter() - t0
        print(f"\n{role}: adapted EH {free.eye_height_min_mv:.2f} mV, FOM {free.fom_db:.3f} dB, codes "
              f"{free.knob_codes()} ({t_free:.2f} s per eye)")
        for code in (-16, -12, -8, -6, -5, -4, -3, -2, 0, 4):
            fe = ffe_eye(eng, POINT, held={RX_FFE_PRE1: code})
            print(f"  {RX_FFE_PRE1}={code:+3d}: EH {fe.eye_height_min_mv:6.2f} mV ({fe.eye_height_min_mv - free.eye_height_min_mv:+.2f}),"
                  f" FOM {fe.fom_db:.3f} dB ({fe.fom_db - free.fom_db:+.3f})")
        fe = ffe_eye(eng, POINT, held={RX_FFE_PRE1: HELD})
        sim = simulate_ffe_link(ch, PROFILE, fe.eq, ffe_taps=np.array(fe.ffe_taps), n_pre=fe.n_pre,
                                dfe_taps=np.array(fe.dfe_taps), cursor_time_s=fe.sample_time_s,
                                delay_s=3 * eng.profile.tx.rise_time_ps * 1e-12, ber_target=BER,
                                n_symbols=1 << 19, seed=3, pattern="random", post_ui=MAX_POST_UI)
        stat, bbb = np.asarray(fe.eye_height_mv), np.asarray(sim.result.eye_height_mv)
        print(f"  held {HELD}: stat EH {np.round(stat, 2).tolist()} mV, bit-by-bit {np.round(bbb, 2).tolist()} mV, "
              f"residual {np.round((bbb / stat - 1) * 100, 2).tolist()} %")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
