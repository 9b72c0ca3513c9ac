"""The settings of the 802.3dj COM comparison (eqtune vs PyChOpMarg), one list both sides read.

Base: PyChOpMarg 3.4.0 ``config/ieee_8023dj.py`` (``IEEE_8023dj``: 106.25 GBd, M = 32, 10 MHz step,
16-tap Rx FFE with 5 pre-cursor taps and limits +-0.7 of the cursor tap, 1 DFE tap 0..0.85, class A
package 33 mm + 1.8 mm, no ADC quantization, no MLSD). Changed, identically on both sides:

* a second package case, line 1 = 12 mm (P802.3dj/D3.3 Table 178-14 "Test 2", as PyChOpMarg's
  ``ieee_8023dj_d3p3.ZP1_KR_C2C[("A", 2)]``); case 1 is the base's 33 mm;
* a coarser EQ grid than the sheet's (so that PyChOpMarg's search fits in minutes): ``GRID`` below.

Nothing here was fitted to either tool's output.
"""

from __future__ import annotations

#: (min, max, step) per swept quantity; TX taps in the order c(-3), c(-2), c(-1), c(1), c(2), c(3)
GRID = {
    "g_dc_db": (-12.0, 0.0, 3.0),
    "g_dc2_db": (-4.0, 0.0, 2.0),
    "tx_taps_min": (0.0, 0.0, -0.2, -0.1, 0.0, 0.0),
    "tx_taps_max": (0.0, 0.1, 0.0, 0.0, 0.0, 0.0),
    "tx_taps_step": (0.0, 0.05, 0.1, 0.1, 0.0, 0.0),
}
#: package line 1 lengths (mm) of the two cases, the same at TX, RX, NEXT and FEXT ends
CASE_ZP1_MM = (33.0, 12.0)
ZP2_MM = 1.8


def values(lo: float, hi: float, step: float) -> list[float]:
    """Grid values from ``hi`` down to ``lo`` (the sheets' order: 0 dB first)."""
    if not step:
        return [0.0]
    n = int(round((hi - lo) / step)) + 1
    return [hi - step * k for k in range(n)]
