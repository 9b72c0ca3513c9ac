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

The limits are the field specs of ``PROFILE_SCHEMA`` (``eqtune.config_schema``), the one description of
the format of ``channels/serdes/*.toml`` (see ``channels/serdes/README.md``); ``eqtune.serdes.profile``
checks a file against it before building anything, then checks what ties fields together (a range's
``min <= default <= max``, a DFE's ``b_min`` and ``b_max`` of equal length).
"""

from __future__ import annotations

import math

from eqtune.config_schema import MISSING, Field, Schema

INF = math.inf  # no upper limit (the value is still checked finite): ideal-receiver profiles use 1e9 GHz
_FIX = "fix the profile (see channels/serdes/README.md)"
TAP_LIMIT = 1.0  # |c| of a normalized TX FFE tap (802.3ck 120F / 93A: sum |c(i)| = 1)
CTLE_GAIN_LIMIT_DB = 60.0
TAP_STEP_MAX = 1.0
MAX_DFE_TAPS = 256
CODE_MAX = 15  # CMIS 5.2 Table 8-52: 4-bit per-lane code fields


def _num(name: str, lo: float = -INF, hi: float = INF, *, lo_open: bool = False, unit: str = "",
         default: float | None = None) -> Field:
    """A finite number in [lo, hi] ((lo, hi] with ``lo_open``); infinite bounds are no bounds."""
    low = None if lo == -INF else lo
    return Field(name, "number", unit=unit, hint=_FIX, gt=low if lo_open else None, ge=None if lo_open else low,
                 le=None if hi == INF else hi, default=MISSING if default is None else default)


def _int(name: str, lo: int, hi: int) -> Field:
    return Field(name, "integer", ge=lo, le=hi, hint=_FIX)


def _range(name: str, lo: float, hi: float, unit: str = "") -> Field:
    """A stepped range: ``[min, max, step, default]`` or a table of those keys (checked in profile.py,
    each value within ``lo``..``hi``)."""
    return Field(name, "any", unit=unit, ge=lo, le=hi, hint="give [min, max, step, default] or a table with those keys")


RANGE_SCHEMA = Schema((Field("min", "number", required=True), Field("max", "number", required=True),
                       Field("step", "number", ge=0, default=0.0), Field("default", "number")))

TX_SCHEMA = Schema((
    Field("taps", "table"),  # knob name -> range (-1..1, step 0..1); names checked in profile.py
    _num("c0_min", 0.0, 1.0, default=0.5),
    _num("amplitude_v", 0.0, 10.0, unit="V", default=0.413),  # A_v, 93A Table 93A-1
    _num("amplitude_fe_v", 0.0, 10.0, unit="V"),  # A_fe; default: amplitude_v
    _num("amplitude_ne_v", 0.0, 10.0, unit="V", default=0.608),  # A_ne
    _num("rise_time_ps", 0.0, 1000.0, unit="ps", default=7.5),  # T_r, 93A-46
))
CTLE_SCHEMA = Schema((
    _range("gdc_db", -CTLE_GAIN_LIMIT_DB, CTLE_GAIN_LIMIT_DB, "dB"),
    _range("gdc2_db", -CTLE_GAIN_LIMIT_DB, CTLE_GAIN_LIMIT_DB, "dB"),
    _num("fz_ghz", 0.0, lo_open=True, unit="GHz", default=21.25),  # 1e9 GHz = "no pole"
    _num("fp1_ghz", 0.0, lo_open=True, unit="GHz", default=21.25),
    _num("fp2_ghz", 0.0, lo_open=True, unit="GHz", default=53.125),
    _num("flf_ghz", 0.0, lo_open=True, unit="GHz"),
))
DFE_SCHEMA = Schema((
    Field("b_max", "list", max_len=MAX_DFE_TAPS, items=_num("b_max", -2.0, 2.0), default=(), hint=_FIX),
    Field("b_min", "list", max_len=MAX_DFE_TAPS, items=_num("b_min", -2.0, 2.0), hint=_FIX),  # default: -b_max
    Field("float_groups", "integer", ge=0, le=16, default=0, hint=_FIX),
    Field("float_taps_per_group", "integer", ge=0, le=16, default=3, hint=_FIX),
    Field("float_span_ui", "integer", ge=0, le=1000, default=40, hint=_FIX),
    _num("float_b_max", 0.0, 2.0, default=0.05),
))
FFE_SCHEMA = Schema((Field("pre", "integer", ge=0, le=64, default=0, hint=_FIX),
                     Field("post", "integer", ge=0, le=64, default=0, hint=_FIX)))
RX_SCHEMA = Schema((
    Field("ctle", "table", schema=CTLE_SCHEMA, default={}),
    Field("dfe", "table", schema=DFE_SCHEMA, default={}),
    Field("ffe", "table", schema=FFE_SCHEMA, default={}),
    _num("fr_fb", 0.0, lo_open=True, default=0.75),  # 1e6 = "no Butterworth filter"
))
NOISE_SCHEMA = Schema((  # 93A Table 93A-1
    _num("snr_tx_db", -100.0, unit="dB"),  # 300 dB = "noise-free"
    _num("eta0_v2_per_ghz", 0.0, 1.0, unit="V^2/GHz"),
    _num("sigma_rj_ui", 0.0, 0.5, unit="UI"),
    _num("a_dd_ui", 0.0, 0.5, unit="UI"),
    _num("rlm", 0.0, 1.0, lo_open=True),
    _num("der0", 0.0, 0.5, lo_open=True),  # a detector error ratio (93A.1.7)
))
_ZP = Field("zp_mm", "list", items=_num("zp_mm", 0.0, 1000.0, unit="mm"), hint=_FIX)  # package trace length
BOARD_SCHEMA = Schema((  # a host board between package and channel (MATLAB COM add_brd; "Include PCB" = 1)
    Field("zp_mm", "number", unit="mm", ge=0.0, le=1000.0, required=True, hint=_FIX),
    Field("zc_ohm", "number", unit="ohm", ge=1.0, le=1000.0, required=True, hint=_FIX),
    Field("c0_pf", "number", unit="pF", ge=0.0, le=10.0, required=True, hint=_FIX),
    Field("c1_pf", "number", unit="pF", ge=0.0, le=10.0, required=True, hint=_FIX),
    Field("tau_ns_per_mm", "number", unit="ns/mm", gt=0.0, le=1.0, required=True, hint=_FIX),
    Field("gamma0_a1_a2", "list", min_len=3, max_len=3,
          items=Field("gamma0_a1_a2", "number", ge=0.0, le=1.0), required=True, hint=_FIX),
))
PACKAGE_SCHEMA = Schema((_int("case", 0, 2),) + tuple(
    Field(f"{role}_zp_mm", "list", items=_ZP.items, hint=_FIX) for role in ("tx", "rx", "fext", "next"))
    + (Field("board", "table", schema=BOARD_SCHEMA),))
MODULE_SCHEMA = Schema((
    _int("rx_pre_max", 0, CODE_MAX), _int("rx_post_max", 0, CODE_MAX),
    Field("rx_amp_codes", "list", min_len=1, items=_int("rx_amp_codes", 0, CODE_MAX),
          hint="list the amplitude codes (0..3)"),
    _int("tx_eq_max", 0, CODE_MAX),
    _num("rx_pre_db_per_code", 0.0, 20.0, unit="dB"), _num("rx_post_db_per_code", 0.0, 20.0, unit="dB"),
    Field("rx_amp_range_mv_ppd", "list", items=Field(
        "range", "list", min_len=2, max_len=2, items=_num("mv_ppd", 0.0, 10000.0, unit="mV"),
        hint="give [low, high] mV ppd per amplitude code"), hint=_FIX),
    _num("tx_eq_db_per_code", 0.0, 20.0, unit="dB"),
    Field("defaults", "table", schema=None, hint=_FIX),  # knob -> code 0..15, checked in profile.py
    _num("driver_rise_time_ps", 0.0, 1000.0, unit="ps"),
    _num("driver_snr_db", -100.0, unit="dB"),
    _num("tx_input_eta0_v2_per_ghz", 0.0, 1.0, unit="V^2/GHz"),
    _num("tx_input_fz_ghz", 0.0, lo_open=True, unit="GHz"),
    _num("tx_input_fp1_ghz", 0.0, lo_open=True, unit="GHz"),
    _num("tx_input_fp2_ghz", 0.0, lo_open=True, unit="GHz"),
    _int("tx_input_ffe_pre", 0, 64), _int("tx_input_ffe_post", 0, 64),
))
PROFILE_SCHEMA = Schema((
    Field("name", "string", nonempty=True),
    Field("description", "string", default=""),
    _num("baud_gbd", 0.0, 1000.0, lo_open=True, unit="GBd", default=53.125),  # it sizes the grid
    Field("modulation", "string", fold="upper", choices=("NRZ", "PAM4", "PAM6"), default="PAM4"),
    Field("tx", "table", schema=TX_SCHEMA, default={}),
    Field("rx", "table", schema=RX_SCHEMA, default={}),
    Field("noise", "table", schema=NOISE_SCHEMA, default={}),
    Field("package", "table", schema=PACKAGE_SCHEMA, default={}),
    Field("module", "table", schema=MODULE_SCHEMA, default={}),
))
