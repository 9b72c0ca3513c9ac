"""Frame loss of a lane: measured where the module advertises it, else predicted with its range.

Measured: the VDM errored-frames ratio (uncorrectable FEC codewords over codewords, CMIS 5.2 VDM
observable types) or the FEC codeword counters, as the module gives them.

Predicted (modules that advertise only pre-FEC BER): the KP4 RS(544,514) codeword error ratio of
eqtune's burst model (eqtune/eye/fec.py) at PAM4 SER = 2 BER (Gray coding). The host receiver's DFE is
not known to the watch, and it matters by orders of magnitude (at BER 2.4e-4: 8.2e-13 with no DFE,
2.2e-9 with a first tap of 0.5), so the prediction is the range between independent errors (no DFE:
the lower bound) and a first DFE tap of ``DFE_TAP_HIGH`` (a strongly equalized C2M host), with the
no-DFE figure as the point value.

From a host FEC histogram (SONiC COUNTERS_DB, eqtune/watch/hostfec.py): :func:`predict_from_histogram`
fits the same burst model (PAM4 SER and a first DFE tap) to the codewords with 0..15 wrong symbols by
maximum likelihood and extrapolates the model's P(> 15 wrong symbols), with the range over the
parameters the histogram does not rule out (likelihood-ratio region, 95 %). SONiC's own
FEC_FLR_PREDICTED is a log-linear fit of the same bins (sonic-swss orchagent/port_flr.lua); it is
shown beside this one when the host publishes it.

:class:`FrameLossTest` is the watch's test of frame loss against a limit (default the 802.3 frame-loss
objective 6.2e-11, ``eqtune.eye.fec.FRAME_LOSS_TARGET``; the module's own VDM errored-frames warning
for its VDM readings): a lane (or port) is past it when its measured uncorrectable codewords over the
last ``window`` polls put the lower end of the exact Poisson interval above the limit, when its VDM
errored-frame ratio exceeds it, or when the lower end of a predicted range does; ``persist``
consecutive polls flag it, as many clear it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

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


# ------------------------------------------------------------------ the burst model fitted to a histogram
FIT_TAPS = (0.0, 0.25, 0.5, 0.75)
_LOG_SER_GRID = np.round(np.arange(-8.0, -1.49, 0.1), 2)
LR_95_2DOF = 2.996  # half the chi-square(2) 95 % quantile 5.991: the likelihood-ratio region of (SER, tap)


@lru_cache(maxsize=len(FIT_TAPS))
def _log_dist_table(tap: float) -> np.ndarray:
    """log P(k wrong RS symbols), k = 0..15 and > 15, over the SER grid (rows), for DFE first tap ``tap``
    (eqtune.eye.fec.codeword_error_distribution: the exact chain over the codeword)."""
    from eqtune.eye.fec import codeword_error_distribution, error_chain, sigma_for_ser

    rows = []
    for lg in _LOG_SER_GRID:
        d = codeword_error_distribution(error_chain([tap] if tap else [], sigma_for_ser(10.0 ** float(lg))))
        rows.append(np.log(np.maximum(d, 1e-300)))
    return np.array(rows)


def predict_from_histogram(bins: list[int] | np.ndarray) -> dict[str, Any] | None:
    """Frame loss predicted from a histogram of codewords by wrong RS symbols (S0..S15 counts of one
    interval): the burst model's P(> 15) at the maximum-likelihood (SER, first DFE tap), and its range
    over the 95 % likelihood-ratio region (SER on a 0.01-decade grid interpolated in log SER, taps
    FIT_TAPS). None without codewords."""
    c = np.asarray(bins, dtype=float)
    if c.shape != (16,) or c.sum() <= 0 or (c < 0).any():
        return None
    fine = np.arange(_LOG_SER_GRID[0], _LOG_SER_GRID[-1] + 1e-9, 0.01)
    lls, tails, where = [], [], []
    for tap in FIT_TAPS:
        tab = _log_dist_table(tap)
        # interpolate each k's log-probability in log SER, then the multinomial log-likelihood of the bins
        logp = np.stack([np.interp(fine, _LOG_SER_GRID, tab[:, k]) for k in range(17)], axis=1)
        lls.append(logp[:, :16] @ c)
        tails.append(np.exp(logp[:, 16]))
        where.append(tap)
    ll = np.stack(lls)
    tail = np.stack(tails)
    best = np.unravel_index(int(np.argmax(ll)), ll.shape)
    region = ll >= ll[best] - LR_95_2DOF
    return {"source": "predicted (burst model fitted to the host FEC histogram)", "ratio": float(tail[best]),
            "range": [float(tail[region].min()), float(tail[region].max())],
            "ser": float(10.0 ** fine[best[1]]), "dfe_tap": float(where[best[0]]),
            "codewords": int(c.sum()), "assumes": "one codeword per lane (no interleaving); taps 0..0.75"}


# ------------------------------------------------------------------ the watch's frame-loss test
@dataclass
class _LossState:
    counts: deque[tuple[int, float]] = field(default_factory=deque)
    run_past: int = 0
    run_ok: int = 0
    flagged: bool = False


class FrameLossTest:
    """Frame loss against ``limit`` per key (a lane, or a port for host counters); see the module
    docstring. ``update(key, fl, limit=None, limit_from=...)`` with one frame-loss reading (the dicts of
    :func:`frame_loss`, or host counts ``{"uncorrectable": k, "codewords": n, ...}``) returns the
    evidence while the key is flagged, else None."""

    def __init__(self, limit: float | None = None, *, persist: int = 2, window: int = 10, level: float = 0.999) -> None:
        from eqtune.eye.fec import FRAME_LOSS_TARGET

        self.limit = float(limit if limit is not None else FRAME_LOSS_TARGET)
        self.persist, self.window, self.level = int(persist), int(window), float(level)
        self.state: dict[Any, _LossState] = {}

    def update(self, key: Any, fl: dict[str, Any] | None, *, limit: float | None = None,
               limit_from: str = "802.3 frame-loss objective") -> dict[str, Any] | None:
        from eqtune.watch.hostfec import poisson_interval

        st = self.state.setdefault(key, _LossState())
        lim = self.limit if limit is None else float(limit)
        if fl is None:
            return self._evidence(st, None, lim, limit_from) if st.flagged else None
        ev: dict[str, Any] = {"source": fl.get("source"), "ratio": fl.get("ratio"), "limit": lim,
                              "limit_from": limit_from}
        if "codewords" in fl and "uncorrectable" in fl:
            st.counts.append((int(fl["uncorrectable"]), float(fl["codewords"])))
            while len(st.counts) > self.window:
                st.counts.popleft()
            k = sum(a for a, _ in st.counts)
            n = sum(b for _, b in st.counts)
            if n <= 0:
                return self._evidence(st, None, lim, limit_from) if st.flagged else None
            lo, hi = poisson_interval(k, n, 1.0 - 2.0 * (1.0 - self.level))
            past = lo > lim
            ev.update({"ratio": k / n, "uncorrectable": k, "codewords": n, "interval": [lo, hi],
                       "interval_level": self.level, "window_polls": len(st.counts)})
        elif "range" in fl:
            past = float(fl["range"][0]) > lim
            ev["range"] = list(fl["range"])
        else:
            r = fl.get("ratio")
            past = r is not None and math.isfinite(float(r)) and float(r) > lim
        st.run_past = st.run_past + 1 if past else 0
        st.run_ok = 0 if past else st.run_ok + 1
        if st.run_past >= self.persist:
            st.flagged = True
        elif st.run_ok >= self.persist:
            st.flagged = False
        return self._evidence(st, ev, lim, limit_from) if st.flagged else None

    def _evidence(self, st: _LossState, ev: dict[str, Any] | None, lim: float, limit_from: str) -> dict[str, Any]:
        out = dict(ev or {"limit": lim, "limit_from": limit_from, "source": "no reading this poll"})
        out.update({"polls": self.persist, "held": f"until {self.persist} polls under the limit"})
        return out


def frame_loss_line(ev: dict[str, Any]) -> str:
    """One line of a frame-loss finding's evidence."""
    def g(x: Any) -> str:
        return "n/a" if x is None else f"{float(x):.2e}"

    out = f"frame loss {g(ev.get('ratio'))} ({ev.get('source')}) vs limit {g(ev.get('limit'))} ({ev.get('limit_from')})"
    if "interval" in ev:
        lo, hi = ev["interval"]
        out += (f"; {ev['uncorrectable']} uncorrectable of {ev['codewords']:.3g} codewords over {ev['window_polls']} "
                f"poll(s), {100 * ev['interval_level']:.1f} % interval {g(lo)}..{g(hi)}")
    elif "range" in ev:
        out += f"; range {g(ev['range'][0])}..{g(ev['range'][1])}"
    if ev.get("scope") == "port":
        out += f"; port {ev.get('interface')} (all lanes), host FEC"
    return out
