"""Plausibility limits of a SerDes profile, checked before anything is allocated from it.

Every number must be finite and within a physically meaningful range: a profile is data from a file,
and ``sigma_rj_ui = inf`` or ``tx_c1 = [-1e6, ...]`` must be a one-line error, not a 40 s run that grows
past 600 MB. The limits are deliberately wide (they bound sizes and loops, they do not judge designs):

* TX FFE taps are normalized coefficients, |c| <= 1 (IEEE 802.3ck Annex 120F/93A: c(0) >= c0_min and
  the sum of |c(i)| is 1);
* CTLE DC gains within +-60 dB; pole/zero frequencies, f_r/f_b and SNRs only finite (test profiles
  model an ideal receiver with 1e9 GHz poles and 300 dB SNR); baud 0 < f_b <= 1000 GBd (it sizes the grid);
* noise: eta_0 0..1 V^2/GHz, sigma_RJ and A_DD 0..0.5 UI (93A Table 93A-1 uses
  0.01 / 0.02 UI), R_LM 0 < R_LM <= 1, DER_0 0 < DER_0 <= 0.5; package lengths 0..1000 mm;
* DFE: at most 256 taps with |b| <= 2; RX FFE at most 64 taps per side; floating tap groups <= 16;
* module codes 0..15 (CMIS 5.2 Table 8-52: 4-bit code fields), dB per code 0..20.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from eqtune.errors import ConfigError

if TYPE_CHECKING:  # profile.py imports this module
    from eqtune.serdes.profile import SerdesProfile

INF = math.inf  # no upper limit (the value is still checked finite): ideal-receiver profiles use 1e9 GHz


def _num(where: str, name: str, x: Any, lo: float, hi: float, *, lo_open: bool = False) -> None:
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{where}: {name} = {x!r} is not a number") from None
    if not math.isfinite(v):
        raise ConfigError(f"{where}: {name} = {x!r} is not a finite number: fix the profile")
    if (v <= lo if lo_open else v < lo) or v > hi:
        raise ConfigError(f"{where}: {name} = {v:g} is outside {'(' if lo_open else '['}{lo:g}, {hi:g}]: fix the profile")


def _int(where: str, name: str, x: Any, lo: int, hi: int) -> None:
    if isinstance(x, bool) or not isinstance(x, int) or not lo <= x <= hi:
        raise ConfigError(f"{where}: {name} = {x!r} must be a whole number {lo}..{hi}: fix the profile")


def check_profile_limits(p: SerdesProfile, where: str) -> None:
    """Raise ConfigError naming the first value of the profile ``p`` outside its limits."""
    _num(where, "baud_gbd", p.baud_gbd, 0.0, 1000.0, lo_open=True)
    _int(where, "package.case", p.package_case, 0, 2)
    t = p.tx
    for name, r in t.taps.items():
        for label in ("min", "max", "default"):
            _num(where, f"tx.taps.{name}.{label}", getattr(r, label), -1.0, 1.0)
        _num(where, f"tx.taps.{name}.step", r.step, 0.0, 1.0)
    _num(where, "tx.c0_min", t.c0_min, 0.0, 1.0)
    for name in ("amplitude_v", "amplitude_fe_v", "amplitude_ne_v"):
        _num(where, f"tx.{name}", getattr(t, name), 0.0, 10.0)
    _num(where, "tx.rise_time_ps", t.rise_time_ps, 0.0, 1000.0)
    c = p.rx.ctle
    for label, rng in (("gdc_db", c.gdc_db), ("gdc2_db", c.gdc2_db)):
        if rng is not None:
            for part in ("min", "max", "default"):
                _num(where, f"rx.ctle.{label}.{part}", getattr(rng, part), -60.0, 60.0)
            _num(where, f"rx.ctle.{label}.step", rng.step, 0.0, 60.0)
    for name in ("fz_ghz", "fp1_ghz", "fp2_ghz") + (("flf_ghz",) if c.flf_ghz is not None else ()):
        _num(where, f"rx.ctle.{name}", getattr(c, name), 0.0, INF, lo_open=True)  # 1e9 GHz = "no pole"
    d = p.rx.dfe
    _int(where, "rx.dfe taps", len(d.b_max), 0, 256)
    for i, (lo, hi) in enumerate(zip(d.b_min, d.b_max), start=1):
        _num(where, f"rx.dfe.b_max[{i}]", hi, -2.0, 2.0)
        _num(where, f"rx.dfe.b_min[{i}]", lo, -2.0, 2.0)
    _int(where, "rx.dfe.float_groups", d.float_groups, 0, 16)
    _int(where, "rx.dfe.float_taps_per_group", d.float_taps_per_group, 0, 16)
    _int(where, "rx.dfe.float_span_ui", d.float_span_ui, 0, 1000)
    _num(where, "rx.dfe.float_b_max", d.float_b_max, 0.0, 2.0)
    _num(where, "rx.fr_fb", p.rx.fr_fb, 0.0, INF, lo_open=True)  # 1e6 = "no Butterworth filter"
    _int(where, "rx.ffe.pre", p.rx.ffe_pre, 0, 64)
    _int(where, "rx.ffe.post", p.rx.ffe_post, 0, 64)
    n = p.noise
    _num(where, "noise.snr_tx_db", n.snr_tx_db, -100.0, INF)  # 300 dB = "noise-free"
    _num(where, "noise.eta0_v2_per_ghz", n.eta0_v2_per_ghz, 0.0, 1.0)
    _num(where, "noise.sigma_rj_ui", n.sigma_rj_ui, 0.0, 0.5)
    _num(where, "noise.a_dd_ui", n.a_dd_ui, 0.0, 0.5)
    _num(where, "noise.rlm", n.rlm, 0.0, 1.0, lo_open=True)
    _num(where, "noise.der0", n.der0, 0.0, 0.5, lo_open=True)  # a detector error ratio (93A.1.7)
    for role, lengths in p.package_zp_mm.items():
        for z in lengths:
            _num(where, f"package.{role}_zp_mm", z, 0.0, 1000.0)  # package trace length, mm
    m = p.module
    for name in ("rx_pre_max", "rx_post_max", "tx_eq_max"):
        _int(where, f"module.{name}", getattr(m, name), 0, 15)
    for name in ("tx_input_ffe_pre", "tx_input_ffe_post"):
        _int(where, f"module.{name}", getattr(m, name), 0, 64)
    if not m.rx_amp_codes:
        raise ConfigError(f"{where}: module.rx_amp_codes is empty: list the amplitude codes (0..3)")
    for code in m.rx_amp_codes:
        _int(where, "module.rx_amp_codes", code, 0, 15)
    if len(m.rx_amp_range_mv_ppd) <= max(m.rx_amp_codes):
        raise ConfigError(f"{where}: module.rx_amp_range_mv_ppd needs a range for every code up to "
                          f"{max(m.rx_amp_codes)}")
    for i, (lo, hi) in enumerate(m.rx_amp_range_mv_ppd):
        _num(where, f"module.rx_amp_range_mv_ppd[{i}]", lo, 0.0, 10000.0)
        _num(where, f"module.rx_amp_range_mv_ppd[{i}]", hi, lo, 10000.0)
    for name in ("rx_pre_db_per_code", "rx_post_db_per_code", "tx_eq_db_per_code"):
        _num(where, f"module.{name}", getattr(m, name), 0.0, 20.0)
    _num(where, "module.driver_rise_time_ps", m.driver_rise_time_ps, 0.0, 1000.0)
    _num(where, "module.driver_snr_db", m.driver_snr_db, -100.0, INF)
    _num(where, "module.tx_input_eta0_v2_per_ghz", m.tx_input_eta0_v2_per_ghz, 0.0, 1.0)
    for name in ("tx_input_fz_ghz", "tx_input_fp1_ghz", "tx_input_fp2_ghz"):
        _num(where, f"module.{name}", getattr(m, name), 0.0, INF, lo_open=True)
    for k, v in m.defaults.items():
        _int(where, f"module.defaults.{k}", v, 0, 15)
