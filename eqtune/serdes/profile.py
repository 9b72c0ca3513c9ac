"""SerDes profiles: the equalizer ranges, noise and jitter of a host SerDes and the module-side knob
capabilities, loaded from ``channels/serdes/*.toml`` (format documented in ``channels/serdes/README.md``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from eqtune.channel.model import Modulation
from eqtune.channel.package import HostBoard
from eqtune.config_schema import Field, check_value, fail, validate
from eqtune.errors import ConfigError
from eqtune.readers import loads_toml
from eqtune.resources import serdes_profiles_dir
from eqtune.serdes.knobs import (
    CTLE_GDC,
    CTLE_GDC2,
    KNOB_DEFS,
    MODULE_KNOBS,
    RX_AMP,
    RX_POST,
    RX_PRE,
    TX_EQ,
    TX_TAP_OFFSETS,
    Knob,
)
from eqtune.serdes.limits import CODE_MAX, CTLE_SCHEMA, PROFILE_SCHEMA, RANGE_SCHEMA, TAP_LIMIT

_DEFAULT_CODE = Field("code", "integer", ge=0, le=CODE_MAX, hint="a module code 0..15")
_TAP_RANGE = Field("tap", "any", ge=-TAP_LIMIT, le=TAP_LIMIT, hint="give [min, max, step, default]")

MODULATION_LEVELS = {"NRZ": 2, "PAM4": 4, "PAM6": 6}
MAX_RANGE_POINTS = 1001  # values per knob range: a tuner grid, not a sweep of millions


@dataclass(frozen=True)
class Range:
    """A stepped range ``min..max`` in ``step`` with a ``default`` (physical units)."""

    min: float
    max: float
    step: float
    default: float

    def values(self) -> tuple[float, ...]:
        if self.step <= 0 or self.max <= self.min:
            return (float(self.min),)
        n = int(round((self.max - self.min) / self.step)) + 1
        return tuple(float(round(v, 10)) for v in np.linspace(self.min, self.max, n))


@dataclass(frozen=True)
class TxSpec:
    """Host TX: FFE taps (knob name -> range), c0_min, swing, rise time, noise."""

    taps: dict[str, Range]
    c0_min: float = 0.5
    amplitude_v: float = 0.413  # A_v, peak differential at the die (93A Table 93A-1)
    amplitude_fe_v: float = 0.413  # A_fe (FEXT aggressor)
    amplitude_ne_v: float = 0.608  # A_ne (NEXT aggressor)
    rise_time_ps: float = 7.5  # T_r, 93A-46


@dataclass(frozen=True)
class CtleSpec:
    """COM CTLE (802.3ck form) ranges and pole/zero frequencies."""

    gdc_db: Range
    gdc2_db: Range | None
    fz_ghz: float
    fp1_ghz: float
    fp2_ghz: float
    flf_ghz: float | None = None


@dataclass(frozen=True)
class DfeSpec:
    """DFE: per-tap limits b_min/b_max (normalized to the cursor), optional floating tap groups."""

    b_max: tuple[float, ...] = ()
    b_min: tuple[float, ...] = ()
    float_groups: int = 0
    float_taps_per_group: int = 3
    float_span_ui: int = 40
    float_b_max: float = 0.05

    @property
    def n_taps(self) -> int:
        return len(self.b_max)


@dataclass(frozen=True)
class RxSpec:
    ctle: CtleSpec
    dfe: DfeSpec
    fr_fb: float = 0.75  # Butterworth f_r / f_b (93A-20)
    ffe_pre: int = 0  # optional RX FFE pre-cursor taps (least-squares adapted per CTLE setting)
    ffe_post: int = 0  # ... post-cursor taps


@dataclass(frozen=True)
class NoiseSpec:
    """Noise and jitter (93A Table 93A-1): SNR_TX (dB), eta_0 (V^2/GHz), sigma_RJ, A_DD (UI), R_LM."""

    snr_tx_db: float = 33.0
    eta0_v2_per_ghz: float = 2e-8
    sigma_rj_ui: float = 0.01
    a_dd_ui: float = 0.02
    rlm: float = 0.95
    der0: float = 1e-5  # DER_0: the detector error ratio COM is computed at (93A.1.7; 802.3ck config sheets)


@dataclass(frozen=True)
class ModuleSpec:
    """Module-side (CMIS) knob capabilities and the physics of each code."""

    rx_pre_max: int = 7
    rx_post_max: int = 7
    rx_amp_codes: tuple[int, ...] = (0, 1, 2, 3)
    tx_eq_max: int = 7
    rx_pre_db_per_code: float = 0.5
    rx_post_db_per_code: float = 1.0
    # CMIS 5.2 Table 8-52: Rx output amplitude code ranges, mV peak-to-peak differential
    rx_amp_range_mv_ppd: tuple[tuple[float, float], ...] = ((100, 400), (300, 600), (400, 800), (600, 1200))
    tx_eq_db_per_code: float = 1.0
    defaults: dict[str, int] = field(default_factory=lambda: {RX_PRE: 0, RX_POST: 0, RX_AMP: 1, TX_EQ: 0})
    driver_rise_time_ps: float = 9.0  # module Rx-output driver 20-80 % rise time (Gaussian filter T_r)
    driver_snr_db: float = 32.0
    tx_input_eta0_v2_per_ghz: float = 2e-8  # module Tx-input (CDR) input-referred noise
    tx_input_fz_ghz: float = 21.25  # peaking CTLE pole/zero (93A-22 form)
    tx_input_fp1_ghz: float = 21.25
    tx_input_fp2_ghz: float = 53.125
    tx_input_ffe_pre: int = 0  # module Tx-input DSP FFE: pre-cursor taps (0 = none)
    tx_input_ffe_post: int = 0  # ... and post-cursor taps (least-squares adapted per tx_eq code)

    def rx_amp_swing_mv_ppd(self, code: int) -> float:
        """Output swing (mV ppd) used for an amplitude code: the middle of its CMIS range."""
        lo, hi = self.rx_amp_range_mv_ppd[int(code)]
        return 0.5 * (lo + hi)


@dataclass(frozen=True)
class SerdesProfile:
    name: str
    description: str
    baud_gbd: float
    modulation: Modulation
    tx: TxSpec
    rx: RxSpec
    noise: NoiseSpec
    module: ModuleSpec
    package_case: int = 0  # 0 = no package; 1/2 = 802.3ck package case (serdes direction)
    source: str = ""
    # first package line segment z_p (mm) per role "tx", "rx", "fext", "next", one value per package case
    # (index 0 = case 1; the 802.3ck config sheets' z_p rows); a role or case not given uses
    # eqtune.channel.package's defaults (the C2C sheet's TX/RX lengths)
    package_zp_mm: dict[str, tuple[float, ...]] = field(default_factory=dict)
    # host board between each package and the channel (the sheet's "Include PCB" = 1; cable assemblies)
    host_board: HostBoard | None = None

    def package_zp1_mm(self, role: str, case: int) -> float | None:
        """z_p (mm) of the first package line for ``role`` in package ``case``, or None (the default)."""
        v = self.package_zp_mm.get(role, ())
        return float(v[case - 1]) if 1 <= case <= len(v) else None

    @property
    def levels(self) -> int:
        return MODULATION_LEVELS[self.modulation]

    def knobs(self) -> dict[str, Knob]:
        """Every knob this profile defines (host SerDes and module), keyed by name."""
        out: dict[str, Knob] = {}
        for name, r in self.tx.taps.items():
            out[name] = Knob(name, r.values(), r.default, KNOB_DEFS[name].unit, f"TX FFE tap c({TX_TAP_OFFSETS[name]:+d})")
        c = self.rx.ctle
        out[CTLE_GDC] = Knob(CTLE_GDC, c.gdc_db.values(), c.gdc_db.default, KNOB_DEFS[CTLE_GDC].unit, "host RX CTLE g_DC")
        if c.gdc2_db is not None:
            out[CTLE_GDC2] = Knob(CTLE_GDC2, c.gdc2_db.values(), c.gdc2_db.default, KNOB_DEFS[CTLE_GDC2].unit, "host RX CTLE g_DC2")
        m = self.module
        d = m.defaults
        out[RX_PRE] = Knob(RX_PRE, tuple(float(i) for i in range(m.rx_pre_max + 1)), float(d.get(RX_PRE, 0)),
                             KNOB_DEFS[RX_PRE].unit, f"module Rx output pre-cursor ({m.rx_pre_db_per_code:g} dB/code)")
        out[RX_POST] = Knob(RX_POST, tuple(float(i) for i in range(m.rx_post_max + 1)),
                              float(d.get(RX_POST, 0)), KNOB_DEFS[RX_POST].unit,
                              f"module Rx output post-cursor ({m.rx_post_db_per_code:g} dB/code)")
        out[RX_AMP] = Knob(RX_AMP, tuple(float(i) for i in m.rx_amp_codes), float(d.get(RX_AMP, 1)), KNOB_DEFS[RX_AMP].unit,
                             "module Rx output amplitude code")
        out[TX_EQ] = Knob(TX_EQ, tuple(float(i) for i in range(m.tx_eq_max + 1)), float(d.get(TX_EQ, 0)),
                            KNOB_DEFS[TX_EQ].unit, f"module Tx input EQ ({m.tx_eq_db_per_code:g} dB peaking/code)")
        return out


@cache
def _range_value_specs(spec: Field) -> tuple[Field, Field]:
    """The specs of a range's min/max/default (within ``spec``'s bounds) and of its step."""
    return (Field("value", "number", unit=spec.unit, ge=spec.ge, le=spec.le, hint="fix the range"),
            Field("step", "number", unit=spec.unit, ge=0.0, le=(spec.le or 0.0) - (spec.ge or 0.0)))


def _range(raw: object, spec: Field, where: str, path: str) -> Range:
    """A stepped range from ``[min, max, step, default]`` or a table of those keys; every value within
    the bounds of ``spec`` (``eqtune.serdes.limits``), ``min <= default <= max`` and at most
    ``MAX_RANGE_POINTS`` values."""
    if isinstance(raw, list | tuple):
        if len(raw) != 4:
            raise fail(where, path, f"has {len(raw)} values", spec.hint)
        raw = dict(zip(("min", "max", "step", "default"), raw))
    elif not isinstance(raw, dict):
        raise fail(where, path, f"must be a list or a table, got {raw!r}", spec.hint)
    r = validate(raw, RANGE_SCHEMA, where=where, path=path)
    bounded, step_spec = _range_value_specs(spec)
    for key in ("min", "max", "default"):
        if key in r:
            check_value(r[key], bounded, where=where, path=f"{path}.{key}")
    check_value(r["step"], step_spec, where=where, path=f"{path}.step")
    lo, hi, step = r["min"], r["max"], r["step"]
    default = r.get("default", lo)
    if hi < lo:
        raise fail(where, path, f"min {lo:g} > max {hi:g}", "fix the range")
    if not (lo - 1e-9 <= default <= hi + 1e-9):
        raise fail(where, path, f"default {default:g} is outside {lo:g}..{hi:g}", "fix the default")
    if step > 0 and (hi - lo) / step + 1 > MAX_RANGE_POINTS:
        raise fail(where, path, f"{lo:g}..{hi:g} in steps of {step:g} is {int((hi - lo) / step) + 1} values "
                   f"(at most {MAX_RANGE_POINTS})", "use a coarser step or a narrower range")
    return Range(lo, hi, step, default)


def profile_from_dict(data: dict[str, Any], source: str = "") -> SerdesProfile:
    """Build a profile from parsed TOML: checked against ``eqtune.serdes.limits.PROFILE_SCHEMA``
    (ConfigError naming the file and key path)."""
    where = source or (data.get("name") if isinstance(data, dict) and isinstance(data.get("name"), str) else None) \
        or "profile"
    d = validate(data, PROFILE_SCHEMA, where=where)
    tx, rx, module, package = d["tx"], d["rx"], d["module"], d["package"]
    taps = {}
    for name, r in tx.get("taps", {}).items():
        if name not in TX_TAP_OFFSETS:
            raise fail(where, f"tx.taps.{name}", "unknown TX tap", f"use {', '.join(TX_TAP_OFFSETS)}")
        taps[name] = _range(r, _TAP_RANGE, where, f"tx.taps.{name}")
    txs = TxSpec(taps=taps, c0_min=tx["c0_min"], amplitude_v=tx["amplitude_v"],
                 amplitude_fe_v=tx.get("amplitude_fe_v", tx["amplitude_v"]), amplitude_ne_v=tx["amplitude_ne_v"],
                 rise_time_ps=tx["rise_time_ps"])
    c = rx["ctle"]
    gdc = CTLE_SCHEMA.by_name["gdc_db"]
    ctle = CtleSpec(gdc_db=_range(c.get("gdc_db", [0, 0, 0, 0]), gdc, where, "rx.ctle.gdc_db"),
                    gdc2_db=_range(c["gdc2_db"], gdc, where, "rx.ctle.gdc2_db") if "gdc2_db" in c else None,
                    fz_ghz=c["fz_ghz"], fp1_ghz=c["fp1_ghz"], fp2_ghz=c["fp2_ghz"], flf_ghz=c.get("flf_ghz"))
    dd = rx["dfe"]
    b_max = tuple(dd["b_max"])
    b_min = tuple(dd.get("b_min", [-x for x in b_max]))
    if len(b_min) != len(b_max):
        raise fail(where, "rx.dfe.b_min", f"has {len(b_min)} taps, b_max {len(b_max)}", "give both per tap")
    dfe = DfeSpec(b_max=b_max, b_min=b_min, float_groups=dd["float_groups"],
                  float_taps_per_group=dd["float_taps_per_group"], float_span_ui=dd["float_span_ui"],
                  float_b_max=dd["float_b_max"])
    rxs = RxSpec(ctle=ctle, dfe=dfe, fr_fb=rx["fr_fb"], ffe_pre=rx["ffe"]["pre"], ffe_post=rx["ffe"]["post"])
    mkw: dict[str, Any] = dict(module)
    if "rx_amp_codes" in mkw:
        mkw["rx_amp_codes"] = tuple(mkw["rx_amp_codes"])
    if "rx_amp_range_mv_ppd" in mkw:
        for i, (lo, hi) in enumerate(mkw["rx_amp_range_mv_ppd"]):
            if hi < lo:
                raise fail(where, f"module.rx_amp_range_mv_ppd[{i}]", f"high {hi:g} < low {lo:g} mV",
                           "give [low, high]")
        mkw["rx_amp_range_mv_ppd"] = tuple((lo, hi) for lo, hi in mkw["rx_amp_range_mv_ppd"])
    if "defaults" in mkw:
        code = _DEFAULT_CODE
        for k in mkw["defaults"]:
            if k not in MODULE_KNOBS:
                raise fail(where, f"module.defaults.{k}", "is not a module knob", f"use {', '.join(MODULE_KNOBS)}")
        mkw["defaults"] = {k: check_value(v, code, where=where, path=f"module.defaults.{k}")
                           for k, v in mkw["defaults"].items()}
    mod = ModuleSpec(**mkw)
    if len(mod.rx_amp_range_mv_ppd) <= max(mod.rx_amp_codes):
        raise fail(where, "module.rx_amp_range_mv_ppd", f"needs a range for every code up to {max(mod.rx_amp_codes)}",
                   "give [low, high] mV ppd per amplitude code")
    return SerdesProfile(name=d.get("name", Path(source).stem if source else "profile"),
                         description=d["description"], baud_gbd=d["baud_gbd"], modulation=d["modulation"], tx=txs,
                         rx=rxs, noise=NoiseSpec(**d["noise"]), module=mod, package_case=package.get("case", 0),
                         source=source,
                         package_zp_mm={r: tuple(v) for r in ("tx", "rx", "fext", "next")
                                        if (v := package.get(f"{r}_zp_mm")) is not None},
                         host_board=_host_board(package.get("board")))


def _host_board(b: dict[str, Any] | None) -> HostBoard | None:
    """The ``[package.board]`` table as a ``HostBoard`` (pF -> F; gamma0 1/mm, a1, a2 as 93A-9..93A-12)."""
    if b is None:
        return None
    g0, a1, a2 = (float(v) for v in b["gamma0_a1_a2"])
    return HostBoard(zp_mm=b["zp_mm"], zc_ohm=b["zc_ohm"], c0_f=b["c0_pf"] * 1e-12, c1_f=b["c1_pf"] * 1e-12,
                     tau_ns_per_mm=b["tau_ns_per_mm"], gamma0_per_mm=g0, a1=a1, a2=a2)


def list_profiles() -> list[str]:
    """Names of the shipped SerDes profiles."""
    return sorted(p.stem for p in serdes_profiles_dir().glob("*.toml"))


# parsed profiles, keyed by the file's path and its size and modification time: an edited file is read
# again (a long-running TUI or study picks up the change), an unchanged one is parsed once a process
_CACHE: dict[tuple[str, int, int], SerdesProfile] = {}


def load_profile(name_or_path: str | Path | SerdesProfile | None = None) -> SerdesProfile:
    """Load a shipped profile by name (``host-lr-112g``, the default) or a TOML file by path."""
    if isinstance(name_or_path, SerdesProfile):
        return name_or_path

    key = str(name_or_path or "host-lr-112g")
    p = Path(key)
    if p.suffix != ".toml" or not p.exists():
        p = serdes_profiles_dir() / f"{key}.toml"
    try:
        st = p.stat()
    except OSError:
        raise ConfigError(f"SerDes profile {key!r} not found: use one of {', '.join(list_profiles())} or a .toml path") from None
    ckey = (str(p), st.st_size, st.st_mtime_ns)
    if ckey in _CACHE:
        return _CACHE[ckey]
    try:
        data = loads_toml(p.read_text(encoding="utf-8"), str(p))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML ({exc}): fix the file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}): save the file as UTF-8 TOML") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({exc.strerror}): check the path and permissions") from None
    prof = profile_from_dict(data, str(p))
    _CACHE[ckey] = prof
    return prof
