"""SerDes profiles: the equalizer ranges, noise and jitter of a host SerDes and the module-side knob
capabilities, loaded from ``channels/serdes/*.toml`` (format documented in ``channels/serdes/README.md``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eqtune.channel.model import Modulation, is_modulation
from eqtune.errors import ConfigError
from eqtune.resources import serdes_profiles_dir
from eqtune.serdes.knobs import (
    CTLE_GDC,
    CTLE_GDC2,
    KNOB_DEFS,
    RX_AMP,
    RX_POST,
    RX_PRE,
    TX_EQ,
    TX_TAP_OFFSETS,
    Knob,
)
from eqtune.serdes.limits import check_profile_limits

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


def _range(d: object, where: str) -> Range:
    if isinstance(d, (list, tuple)) and len(d) == 4:
        lo, hi, step, default = (float(x) for x in d)
    elif isinstance(d, dict):
        try:
            lo, hi, step = float(d["min"]), float(d["max"]), float(d.get("step", 0))
            default = float(d.get("default", lo))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: needs min, max, step, default ({exc})") from None
    else:
        raise ConfigError(f"{where}: give [min, max, step, default] or a table with those keys")
    for label, x in (("min", lo), ("max", hi), ("step", step), ("default", default)):
        if not np.isfinite(x):
            raise ConfigError(f"{where}: {label} {x} is not a finite number: fix the range")
    if hi < lo or (step < 0):
        raise ConfigError(f"{where}: min {lo:g} > max {hi:g} or negative step: fix the range")
    if not (lo - 1e-9 <= default <= hi + 1e-9):
        raise ConfigError(f"{where}: default {default:g} is outside {lo:g}..{hi:g}: fix the default")
    if step > 0 and (hi - lo) / step + 1 > MAX_RANGE_POINTS:
        raise ConfigError(f"{where}: {lo:g}..{hi:g} in steps of {step:g} is {int((hi - lo) / step) + 1} values "
                          f"(at most {MAX_RANGE_POINTS}): use a coarser step or a narrower range")
    return Range(lo, hi, step, default)


def _sub(d: dict, key: str, where: str) -> dict:
    v = d.get(key, {})
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: [{key}] must be a table")
    return v


def profile_from_dict(data: dict, source: str = "") -> SerdesProfile:
    """Build a profile from parsed TOML (raises ConfigError naming the field)."""
    where = source or data.get("name", "profile")
    try:
        tx = _sub(data, "tx", where)
        taps = {}
        for name, r in _sub(tx, "taps", where).items():
            if name not in TX_TAP_OFFSETS:
                raise ConfigError(f"{where}: unknown TX tap {name!r}: use {', '.join(TX_TAP_OFFSETS)}")
            taps[name] = _range(r, f"{where}: tx.taps.{name}")
        txs = TxSpec(taps=taps, c0_min=float(tx.get("c0_min", 0.5)), amplitude_v=float(tx.get("amplitude_v", 0.413)),
                     amplitude_fe_v=float(tx.get("amplitude_fe_v", tx.get("amplitude_v", 0.413))),
                     amplitude_ne_v=float(tx.get("amplitude_ne_v", 0.608)),
                     rise_time_ps=float(tx.get("rise_time_ps", 7.5)))
        rx = _sub(data, "rx", where)
        c = _sub(rx, "ctle", where)
        ctle = CtleSpec(gdc_db=_range(c.get("gdc_db", [0, 0, 0, 0]), f"{where}: rx.ctle.gdc_db"),
                        gdc2_db=_range(c["gdc2_db"], f"{where}: rx.ctle.gdc2_db") if "gdc2_db" in c else None,
                        fz_ghz=float(c.get("fz_ghz", 21.25)), fp1_ghz=float(c.get("fp1_ghz", 21.25)),
                        fp2_ghz=float(c.get("fp2_ghz", 53.125)),
                        flf_ghz=float(c["flf_ghz"]) if "flf_ghz" in c else None)
        dd = _sub(rx, "dfe", where)
        b_max = tuple(float(x) for x in dd.get("b_max", ()))
        b_min = tuple(float(x) for x in dd.get("b_min", [-x for x in b_max]))
        if len(b_min) != len(b_max):
            raise ConfigError(f"{where}: rx.dfe.b_min has {len(b_min)} taps, b_max {len(b_max)}: give both per tap")
        dfe = DfeSpec(b_max=b_max, b_min=b_min, float_groups=int(dd.get("float_groups", 0)),
                      float_taps_per_group=int(dd.get("float_taps_per_group", 3)),
                      float_span_ui=int(dd.get("float_span_ui", 40)), float_b_max=float(dd.get("float_b_max", 0.05)))
        ff = _sub(rx, "ffe", where)
        rxs = RxSpec(ctle=ctle, dfe=dfe, fr_fb=float(rx.get("fr_fb", 0.75)), ffe_pre=int(ff.get("pre", 0)),
                     ffe_post=int(ff.get("post", 0)))
        n = _sub(data, "noise", where)
        noise = NoiseSpec(**{k: float(v) for k, v in n.items() if k in NoiseSpec.__dataclass_fields__})
        m = _sub(data, "module", where)
        mkw: dict = {}
        for k, v in m.items():
            if k not in ModuleSpec.__dataclass_fields__:
                raise ConfigError(f"{where}: unknown module key {k!r}")
            if k == "rx_amp_codes":
                v = tuple(int(x) for x in v)
            elif k == "rx_amp_range_mv_ppd":
                v = tuple((float(a), float(b)) for a, b in v)
            elif k == "defaults":
                v = {str(a): int(b) for a, b in v.items()}
            elif k.endswith(("_max", "_ffe_pre", "_ffe_post")):
                v = int(v)
            else:
                v = float(v)
            mkw[k] = v
        modulation = str(data.get("modulation", "PAM4")).upper()
        if not is_modulation(modulation):
            raise ConfigError(f"{where}: modulation {modulation!r} unknown: use NRZ, PAM4 or PAM6")
        prof = SerdesProfile(name=str(data.get("name", Path(source).stem if source else "profile")),
                             description=str(data.get("description", "")), baud_gbd=float(data.get("baud_gbd", 53.125)),
                             modulation=modulation, tx=txs, rx=rxs, noise=noise, module=ModuleSpec(**mkw),
                             package_case=int(_sub(data, "package", where).get("case", 0)), source=source,
                             package_zp_mm={r: tuple(float(x) for x in v) for r in ("tx", "rx", "fext", "next")
                                            if (v := _sub(data, "package", where).get(f"{r}_zp_mm")) is not None})

        check_profile_limits(prof, where)
        return prof
    except ConfigError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        raise ConfigError(f"{where}: invalid SerDes profile ({exc}): see channels/serdes/README.md") from None


def list_profiles() -> list[str]:
    """Names of the shipped SerDes profiles."""
    return sorted(p.stem for p in serdes_profiles_dir().glob("*.toml"))


_CACHE: dict[str, SerdesProfile] = {}


def load_profile(name_or_path: str | Path | SerdesProfile | None = None) -> SerdesProfile:
    """Load a shipped profile by name (``host-lr-112g``, the default) or a TOML file by path."""
    if isinstance(name_or_path, SerdesProfile):
        return name_or_path

    key = str(name_or_path or "host-lr-112g")
    if key in _CACHE:
        return _CACHE[key]
    p = Path(key)
    if p.suffix != ".toml" or not p.exists():
        p = serdes_profiles_dir() / f"{key}.toml"
    if not p.exists():
        raise ConfigError(f"SerDes profile {key!r} not found: use one of {', '.join(list_profiles())} or a .toml path")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML ({exc}): fix the file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}): save the file as UTF-8 TOML") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({exc.strerror}): check the path and permissions") from None
    prof = profile_from_dict(data, str(p))
    _CACHE[key] = prof
    return prof
