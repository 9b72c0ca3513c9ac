"""VDM (pages 20h-2Fh) of the module emulator, laid out from the emulator table's ``[vdm]`` section.

Layout (sonic-platform-common ``sonic_xcvr/api/public/cmisVDM.py`` ``get_vdm_page``): descriptors on
page 20h (even byte: threshold set ID bits 7-4, lane-1 bits 3-0; odd byte: type ID), samples on page
24h, thresholds on page 28h (8 bytes per set: high alarm, low alarm, high warning, low warning), flags
on page 2Ch (4 bits per observable). Freeze/unfreeze (page 2Fh byte 144 bit 7, done bits 7/6 of byte
145, sonic ``page2f.py``) latch after a short delay, so a host has to poll the done bits.

Values (emulator conventions, not from a module):
* pre-FEC BER current: Poisson count over a 0.1 s window on the link's module-input direction;
  min/max/avg over the samples since the last unfreeze.
* eSNR host (dB): from the symbol error probability P with the M-PAM relation
  P = 2 (1 - 1/M) Q(sqrt(3 SNR / (M^2 - 1))) (Proakis, Digital Communications, 5th ed., 4.3), M = 4.
  LTP host = eSNR - 1.8 dB; media-side eSNR/LTP a constant 20 dB / 18.2 dB (no optical model).
* errored frames: fraction of RS(544,514) codewords with more than 15 wrong 10-bit symbols (KP4
  corrects 15, IEEE 802.3 clause 91), independent errors: RS symbol error ratio 1 - (1 - 2 BER)^5
  (5 PAM4 symbols per RS symbol, Gray coding), binomial upper tail over 544 symbols; FERC accumulates
  errored frames per 0.1 s sample at 53.125 GBd * 2 bit / 5440 bit per codeword. (The emulator has
  no DFE burst model: eqtune.eye.fec has one.)
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from eqtune.emulate.cmis_table import load_table
from eqtune.emulate.prbs import f16_encode

if TYPE_CHECKING:
    from eqtune.emulate.module import EmulatedModule

T = load_table()
SAMPLE_S = 0.1
CODEWORDS_PER_S = 53.125e9 * 2 / 5440
# threshold sets: 1 = BER (high alarm 2.4e-4, high warning 1e-5: the brief's pre-FEC target range),
# 2 = SNR/LTP dB (low alarm 15 dB, low warning 17 dB), 3 = errored frames (high alarm 1e-6, warn 1e-8)
THRESHOLDS = {1: (2.4e-4, 0.0, 1e-5, 0.0), 2: (40.0, 15.0, 38.0, 17.0), 3: (1e-6, 0.0, 1e-8, 0.0)}


RS_N, RS_T, RS_SYMBOL_PAM4 = 544, 15, 5  # RS(544,514): 544 10-bit symbols, t = 15 (802.3 91.5.2.1)


def rs_symbol_error_ratio(ber: float) -> float:
    """Probability that a 10-bit RS symbol (5 PAM4 symbols) is wrong, for independent errors at
    pre-FEC ``ber``: PAM4 SER = 2 BER (Gray coding: one wrong bit per symbol error), then
    1 - (1 - SER)^5 in the log domain (-expm1(5 log1p(-SER)): no cancellation at tiny BER)."""
    ser = min(max(2.0 * float(ber), 0.0), 0.75)
    return -math.expm1(RS_SYMBOL_PAM4 * math.log1p(-ser)) if ser > 0 else 0.0


_K_TAIL = np.arange(RS_T + 1, RS_N + 1, dtype=float)
# log C(544, k) for k = 16..544 (lgamma), computed once: every VDM refresh evaluates the tail
_LOG_C_TAIL = np.array([math.lgamma(RS_N + 1) - math.lgamma(k + 1) - math.lgamma(RS_N - k + 1) for k in range(RS_T + 1, RS_N + 1)])


def _errored_frame_ratio(ber: float) -> float:
    """P(more than 15 of the 544 RS symbols of a codeword are wrong): the binomial upper tail summed
    term by term in the log domain (log C(n, k) from lgamma), never as 1 - CDF, so it stays exact
    down to 1e-300 (tests/eye/test_fec.py checks it against scipy's ``binom.sf``)."""
    p = rs_symbol_error_ratio(ber)
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    logs = _LOG_C_TAIL + _K_TAIL * math.log(p) + (RS_N - _K_TAIL) * math.log1p(-p)
    top = float(logs.max())
    return min(1.0, math.exp(top) * float(np.sum(np.exp(logs - top))))


class VdmModel:
    """The emulated module's VDM state."""

    def __init__(self, module: EmulatedModule) -> None:
        self.m = module
        self.frozen = False
        self.history: dict[int, list[float]] = {}
        self.ferc: dict[int, float] = {}
        self.flags = bytearray(32)

    @property
    def cfg(self) -> dict[str, Any]:
        return T.vdm

    def _types(self) -> list[tuple[str, int, str, float]]:
        return [(name, *self.cfg["types"][name]) for name in self.m.vdm_types]

    def build(self) -> None:
        m = self.m
        if m.lanes * len(self._types()) > 64:
            raise ValueError(f"{len(self._types())} VDM observables x {m.lanes} lanes do not fit one VDM group (64)")
        desc = m._pg(self.cfg["desc_page"])
        i = 0
        for lane in range(1, m.lanes + 1):
            for name, typ, _fmt, _scale in self._types():
                tset = 1 if name.startswith("ber") else 3 if name.startswith(("ef", "ferc")) else 2
                desc[2 * i], desc[2 * i + 1] = (tset << 4) | (lane - 1), typ
                i += 1
        thr = m._pg(self.cfg["threshold_page"])
        for tset, values in THRESHOLDS.items():
            for k, v in enumerate(values):
                raw = f16_encode(v) if tset != 2 else int(round(v * 256))
                thr[8 * tset + 2 * k:8 * tset + 2 * k + 2] = raw.to_bytes(2, "big")
        m._put(T.VdmGroupsSupported, 0)  # one group: pages 20h/24h/28h
        m._put(T.VdmUnfreezeDone, 1)

    def control(self, value: int) -> None:
        """Host wrote VdmControl: bit 7 freeze request (1) / release (0); done bits after a delay."""
        m = self.m
        freeze = bool(value & 0x80)
        if freeze == self.frozen:
            return
        if freeze:
            self.refresh(force=True)
        self.frozen = freeze
        m._put(T.VdmFreezeDone, 0)
        m._put(T.VdmUnfreezeDone, 0)

        def done() -> None:
            m._put(T.VdmFreezeDone if freeze else T.VdmUnfreezeDone, 1)
            if not freeze:
                self.history.clear()  # statistics restart after unfreeze

        m._at(min(m.settle_s, 0.05), done)

    def read_flag(self, offset: int) -> int:
        """Flags page byte (latched, clear on read)."""
        i = offset - 128
        if i >= len(self.flags):
            return 0
        v = self.flags[i]
        self.flags[i] = 0
        return v

    def refresh(self, force: bool = False) -> None:
        """Samples on the sample page from the link (not while frozen)."""
        if self.frozen and not force:
            return
        m = self.m
        desc, out = m._pg(self.cfg["desc_page"]), m._pg(self.cfg["sample_page"])
        for i in range(64):
            lane, typ = (desc[2 * i] & 0xF) + 1, desc[2 * i + 1]
            if typ == 0 or lane > m.lanes:
                continue
            name = next((n for n, t, _, _ in self._types() if t == typ), None)
            if name is None:
                continue
            value = self._value(name, lane)
            raw = int(round(min(max(value, 0.0), 255.0) * 256)) if name[:4] in ("esnr", "ltp_") else f16_encode(value)
            out[2 * i:2 * i + 2] = raw.to_bytes(2, "big")
            self._flag(i, desc[2 * i] >> 4, value)

    def _flag(self, index: int, tset: int, value: float) -> None:
        hi_a, lo_a, hi_w, lo_w = THRESHOLDS.get(tset, (math.inf, -math.inf, math.inf, -math.inf))
        bits = (value > hi_a) | (value < lo_a) << 1 | (value > hi_w) << 2 | (value < lo_w) << 3
        self.flags[index // 2] |= bits << (4 * (index % 2))

    def _value(self, name: str, lane: int) -> float:
        link = self.m.link
        if name.endswith("media"):
            return {"esnr_media": 20.0, "ltp_media": 18.2}.get(name, 0.0)
        if name in ("esnr_host", "ltp_host"):
            p = min(max(link.ber(lane, "module_rx"), 1e-300), 0.74)
            q = -NormalDist().inv_cdf(p / 1.5) if p / 1.5 < 0.5 else 0.0
            snr_db = 10 * math.log10(max(5.0 * q * q, 1e-3))
            return snr_db - (1.8 if name == "ltp_host" else 0.0)
        cur = float(link.count_errors(lane, SAMPLE_S, path="module_rx").ber)
        hist = self.history.setdefault(lane, [])
        if name == "ber_cur_host":
            hist.append(cur)
            return cur
        samples = hist or [cur]
        if name.startswith("ber_"):
            return {"ber_min_host": min, "ber_max_host": max}.get(name, lambda h: sum(h) / len(h))(samples)
        if name == "ferc_host":
            self.ferc[lane] = self.ferc.get(lane, 0.0) + _errored_frame_ratio(cur) * CODEWORDS_PER_S * SAMPLE_S
            return self.ferc[lane]
        if name == "ef_cur_host":
            return _errored_frame_ratio(cur)
        ratio = [_errored_frame_ratio(b) for b in samples]
        return {"ef_min_host": min(ratio), "ef_max_host": max(ratio)}.get(name, sum(ratio) / len(ratio))
