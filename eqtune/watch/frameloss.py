"""Frame loss of a lane: measured where the module advertises it, else predicted with its range.

Measured: the VDM errored-frames ratio (uncorrectable FEC codewords over codewords, CMIS 5.2 VDM
observable types) or the FEC codeword counters, as the module gives them.

Predicted (modules that advertise only pre-FEC BER): the KP4 RS(544,514) codeword error ratio of
eqtune's burst model (eqtune/eye/fec.py) at PAM4 SER = 2 BER (Gray coding). The host receiver's DFE is
not known to the watch, and it matters by orders of magnitude (at BER 2.4e-4: 8.2e-13 with no DFE,
2.2e-9 with a first tap of 0.5), so the prediction is the range between independent errors (no DFE:
the lower bound) and a first DFE tap of ``DFE_TAP_HIGH`` (a strongly equalized C2M host), with the
no-DFE figure as the point value. SONiC publishes FEC_FLR / FEC_FLR_PREDICTED from the host's FEC
histogram where the ASIC has one; that source is not read here.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

DFE_TAP_HIGH = 0.5


@lru_cache(maxsize=4096)
def _cer(log10_ber_x20: int, tap: float) -> float:
    from eqtune.eye.fec import fec_analysis

    ber = 10.0 ** (log10_ber_x20 / 20.0)
    return fec_analysis([tap] if tap else [], min(2.0 * ber, 0.74), n_taps=1).codeword_error_ratio


def frame_loss(prefec_ber: float | None, errored_frames: float | None) -> dict[str, Any] | None:
    """{"source": "measured", "ratio"} or {"source": "predicted", "ratio", "range", "assumes"}; None
    without a usable reading. BER is rounded to 0.05 decade for the cache (the model's own error is larger)."""
    if errored_frames is not None and math.isfinite(errored_frames) and errored_frames >= 0:
        return {"source": "measured (VDM errored frames)", "ratio": float(errored_frames)}
    if prefec_ber is None or not math.isfinite(prefec_ber) or prefec_ber <= 0:
        return None
    key = int(round(20.0 * math.log10(min(prefec_ber, 0.37))))
    lo, hi = _cer(key, 0.0), _cer(key, DFE_TAP_HIGH)
    return {"source": "predicted (KP4 burst model)", "ratio": lo, "range": [lo, max(lo, hi)],
            "assumes": f"SER = 2 BER; host DFE first tap 0 .. {DFE_TAP_HIGH}"}
