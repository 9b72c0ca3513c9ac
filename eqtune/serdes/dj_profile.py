"""802.3dj (Annex 178A) reference-receiver profiles: ``channels/serdes/178a/*.toml``.

A separate format from the 802.3ck SerDes profiles of :mod:`eqtune.serdes.profile` (whose schema rejects
unknown keys, on purpose): 178A adds an MMSE Rx FFE with limits relative to its cursor tap and floating
tap groups, a CTLE with a second pole (fp3), ADC quantization noise and MLSE. Every value in a shipped
file cites its source on its line. The units are those of the 802.3ck profiles (GHz, ps, V, dB, UI).

``DjProfile.ffe_limits()`` gives the ``w_min`` / ``w_max`` arrays :func:`eqtune.eye.mmse.mmse_rx_ffe` takes
(fixed taps only; the floating groups are not solved yet). ``eqtune.eye.com_dj`` computes COM with a profile.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eqtune.config_schema import Field, Schema, validate
from eqtune.errors import ConfigError
from eqtune.resources import serdes_profiles_dir

_FIX = "fix the 178A profile (see channels/serdes/README.md, '802.3dj profiles')"


def dj_profiles_dir() -> Path:
    """Shipped 178A reference-receiver profiles (``channels/serdes/178a/*.toml``)."""
    return serdes_profiles_dir() / "178a"


def _num(name: str, lo: float | None = None, hi: float | None = None, *, gt: float | None = None,
         unit: str = "", required: bool = True) -> Field:
    return Field(name, "number", unit=unit, ge=lo, le=hi, gt=gt, required=required, hint=_FIX)


def _int(name: str, lo: int, hi: int) -> Field:
    return Field(name, "integer", ge=lo, le=hi, required=True, hint=_FIX)


def _nums(name: str, lo: float, hi: float, n: int | None = None, unit: str = "") -> Field:
    return Field(name, "list", items=_num(name, lo, hi, unit=unit), min_len=n or 1, max_len=n,
                 required=True, hint=_FIX)


_STEPPED = "give [min, max, step]"
_TX = Schema((
    _num("amplitude_v", 0.0, 10.0, unit="V"), _num("amplitude_fe_v", 0.0, 10.0, unit="V"),
    _num("amplitude_ne_v", 0.0, 10.0, unit="V"), _num("rise_time_ps", 0.0, 1000.0, unit="ps"),
    _num("c0_min", 0.0, 1.0),
    Field("taps", "table", required=True, hint=_FIX,
          values=Field("tap", "list", items=Field("v", "number", ge=-1.0, le=1.0), min_len=3, max_len=3,
                       hint=_STEPPED)),
))
_CTLE = Schema((
    _nums("gdc_db", -60.0, 60.0, 3, "dB"), _nums("gdc2_db", -60.0, 60.0, 3, "dB"),
    *(_num(f"{k}_ghz", gt=0.0, unit="GHz") for k in ("fz1", "fp1", "fp2", "fz2", "fp3")),
))
_FFE = Schema((
    _int("n_taps", 1, 256), _int("n_pre", 0, 255), _num("w_max", 0.0, 1.0), _num("w_min", -1.0, 0.0),
    _int("n_max", 0, 1024), _int("float_groups", 0, 16), _int("float_taps_per_group", 0, 16),
    _num("float_w_max", 0.0, 1.0),
))
_DFE = Schema((_nums("b_min", -2.0, 2.0), _nums("b_max", -2.0, 2.0)))
_RX = Schema((_num("fr_fb", gt=0.0), Field("ctle", "table", schema=_CTLE, required=True),
              Field("ffe", "table", schema=_FFE, required=True), Field("dfe", "table", schema=_DFE, required=True)))
_NOISE = Schema((
    _num("snr_tx_db", unit="dB"), _num("eta0_v2_per_ghz", 0.0, 1.0, unit="V^2/GHz"),
    _num("sigma_rj_ui", 0.0, 0.5, unit="UI"), _num("a_dd_ui", 0.0, 0.5, unit="UI"), _num("rlm", gt=0.0, hi=1.0),
    _int("adc_bits", 0, 16), _num("adc_clip_probability", 0.0, 1.0),
    Field("mlsd", "bool", required=True, hint=_FIX), _num("dcom_an_db", 0.0, 20.0, unit="dB"),
))
_PACKAGE = Schema((_nums("zc_ohm", 1.0, 1000.0, None, "ohm"), _num("zp2_mm", 0.0, 1000.0, unit="mm"),
                   _nums("test1_zp1_mm", 0.0, 1000.0, 2, "mm"), _nums("test2_zp1_mm", 0.0, 1000.0, 2, "mm"),
                   _nums("cd_pf", 0.0, 10.0, None, "pF"), _nums("ls_nh", 0.0, 10.0, None, "nH"),
                   _num("cb_pf", 0.0, 10.0, unit="pF"), _num("cp_pf", 0.0, 10.0, unit="pF"),
                   _num("gamma0_per_mm", 0.0, 1.0), _num("a1", 0.0, 1.0), _num("a2", 0.0, 1.0),
                   _num("tau_ns_per_mm", gt=0.0, hi=1.0, unit="ns/mm")))
DJ_PROFILE_SCHEMA = Schema((
    Field("name", "string", nonempty=True, required=True, hint=_FIX),
    Field("description", "string", default=""),
    _num("baud_gbd", gt=0.0, hi=1000.0, unit="GBd"), _int("levels", 2, 16), _int("samples_per_ui", 1, 1024),
    _num("der0", gt=0.0, hi=0.5), _num("r0_ohm", gt=0.0, hi=1000.0, unit="ohm"),
    Field("frequency_step_ghz", "number", unit="GHz", gt=0.0, le=1.0, default=0.01, hint=_FIX),
    Field("tx", "table", schema=_TX, required=True), Field("rx", "table", schema=_RX, required=True),
    Field("noise", "table", schema=_NOISE, required=True), Field("package", "table", schema=_PACKAGE, required=True),
))


@dataclass(frozen=True)
class DjRxFfe:
    """178A Rx FFE: ``n_taps`` fixed taps, ``n_pre`` before the cursor; limits relative to the cursor tap."""

    n_taps: int
    n_pre: int
    w_min: float
    w_max: float
    n_max: int
    float_groups: int
    float_taps_per_group: int
    float_w_max: float


@dataclass(frozen=True)
class DjProfile:
    """One 178A reference receiver. Frequencies in GHz, times in ps, amplitudes in V, gains in dB."""

    name: str
    description: str
    baud_gbd: float
    levels: int
    samples_per_ui: int
    der0: float
    r0_ohm: float
    frequency_step_ghz: float
    tx: dict[str, Any]
    fr_fb: float
    ctle: dict[str, Any]
    ffe: DjRxFfe
    b_min: tuple[float, ...]
    b_max: tuple[float, ...]
    noise: dict[str, Any]
    package: dict[str, Any]
    source: str

    def ffe_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(w_min, w_max) per fixed FFE tap, relative to the cursor tap (cursor entry 1.0; 178A-26)."""
        lo = np.full(self.ffe.n_taps, self.ffe.w_min)
        hi = np.full(self.ffe.n_taps, self.ffe.w_max)
        lo[self.ffe.n_pre] = hi[self.ffe.n_pre] = 1.0
        return lo, hi


def dj_profile_from_dict(data: Any, where: str) -> DjProfile:
    """Check ``data`` (a parsed TOML table) against :data:`DJ_PROFILE_SCHEMA` and build the profile."""
    d = validate(data, DJ_PROFILE_SCHEMA, where=where)
    ffe = DjRxFfe(**d["rx"]["ffe"])
    if ffe.n_pre >= ffe.n_taps:
        raise ConfigError(f"{where}: rx.ffe.n_pre: must be < n_taps ({ffe.n_taps}), got {ffe.n_pre}; {_FIX}")
    dfe = d["rx"]["dfe"]
    pkg = d["package"]
    if len(pkg["cd_pf"]) != len(pkg["ls_nh"]):
        raise ConfigError(f"{where}: package: cd_pf and ls_nh must have one value per die ladder segment; {_FIX}")
    if len(dfe["b_min"]) != len(dfe["b_max"]) or any(a > b for a, b in zip(dfe["b_min"], dfe["b_max"])):
        raise ConfigError(f"{where}: rx.dfe: b_min and b_max must have equal lengths with b_min <= b_max; {_FIX}")
    for key in ("gdc_db", "gdc2_db"):
        lo, hi, step = d["rx"]["ctle"][key]
        if lo > hi or step <= 0:
            raise ConfigError(f"{where}: rx.ctle.{key}: give [min, max, step] with min <= max, step > 0; {_FIX}")
    return DjProfile(name=d["name"], description=d["description"], baud_gbd=d["baud_gbd"], levels=d["levels"],
                     samples_per_ui=d["samples_per_ui"], der0=d["der0"], r0_ohm=d["r0_ohm"],
                     frequency_step_ghz=d["frequency_step_ghz"], tx=d["tx"],
                     fr_fb=d["rx"]["fr_fb"], ctle=d["rx"]["ctle"], ffe=ffe, b_min=tuple(dfe["b_min"]),
                     b_max=tuple(dfe["b_max"]), noise=d["noise"], package=d["package"], source=where)


def list_dj_profiles() -> list[str]:
    """Names of the shipped 178A profiles."""
    return sorted(p.stem for p in dj_profiles_dir().glob("*.toml"))


def load_dj_profile(name_or_path: str | Path) -> DjProfile:
    """Load a shipped 178A profile by name (``ieee-dj-kr``) or a TOML file by path."""
    p = Path(name_or_path)
    if p.suffix != ".toml" or not p.exists():
        p = dj_profiles_dir() / f"{name_or_path}.toml"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"802.3dj profile {str(name_or_path)!r} not found: use one of "
                          f"{', '.join(list_dj_profiles())} or a .toml path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read as UTF-8 text ({exc}): check the file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML ({exc}): fix the file") from None
    return dj_profile_from_dict(data, str(p))


def is_dj_profile(name_or_path: str | Path | None) -> bool:
    """True when ``name_or_path`` names a shipped 178A profile or a TOML file in the 178A format (an
    ``[rx.ffe]`` table with ``n_taps``: the 802.3ck/host format's ``[rx.ffe]`` has ``pre``/``post``), so that
    ``eqtune com`` takes the 802.3dj procedure."""
    if name_or_path is None:
        return False
    if str(name_or_path) in list_dj_profiles():
        return True
    p = Path(name_or_path)
    if p.suffix != ".toml" or not p.is_file():
        return False
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    rx = data.get("rx")
    return isinstance(rx, dict) and isinstance(rx.get("ffe"), dict) and "n_taps" in rx["ffe"]
