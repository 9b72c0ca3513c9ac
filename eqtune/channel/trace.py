"""Parametric differential PCB trace (stripline or microstrip) with causal loss.

Per-unit-length differential-mode RLGC, then a uniform line (``elements.line_from_gamma``):

* Dielectric: wideband Debye (Djordjevic-Sarkar) permittivity, causal by construction
  (A. R. Djordjevic, R. M. Biljic, V. D. Likar-Smiljanic, T. K. Sarkar, "Wideband frequency-domain
  characterization of FR-4 and time-domain causality", IEEE Trans. EMC 43(4), 2001, eq. (6))::

      eps(w) = eps_inf + d_eps / ((m2 - m1) ln 10) * ln((w2 + j w) / (w1 + j w)),  w_i = 2 pi 10^m_i

  fitted to Dk and Df (eps = Dk (1 - j Df)) at the reference frequency; f1 = 1 kHz, f2 = 1 THz.
  Microstrip: eps_eff = 1 + q (eps - 1), q the quasi-static filling factor (Pozar 4th ed. eq. 3.195).
* Conductor: internal impedance per leg Z_i = R_dc sqrt(1 + j w / w0) x K_rough(f): DC resistance
  rho/(w t) blending causally into the skin-effect resistance G_c R_s(f), R_s = sqrt(pi f mu0 rho)
  (Johnson & Graham, "High-Speed Signal Propagation", 2003, sec. 3.7: the sqrt(j w) internal impedance).
  G_c, the geometry factor, from Pozar's conductor attenuation: stripline eq. 3.199 (Wheeler's
  incremental inductance rule); microstrip R = R_s / W (Bogatin, "Signal and Power Integrity -
  Simplified", 2nd ed., sec. 9.12).
* Roughness: Huray "snowball" K = 1 + 3/2 SR / (1 + delta/a + delta^2/(2 a^2)) with SR = N 4 pi a^2/A_hex
  (P. G. Huray et al., "Impact of copper surface texture on loss: a model that works", DesignCon 2010),
  evaluated with the complex skin depth so it stays causal (see ``_roughness``); or Hammerstad
  K = 1 + 2/pi atan(1.4 (Delta/delta)^2) (Hammerstad & Jensen, IEEE MTT-S 1980), a real factor and so
  slightly non-causal (a ~1e-5 precursor): prefer "huray" for time-domain work.
* Impedance from geometry: IPC-2141A (stripline Z0 = 60/sqrt(er) ln(4b / (0.67 pi (0.8 w + t))),
  Zdiff = 2 Z0 (1 - 0.347 exp(-2.9 s/b)); microstrip Z0 = 87/sqrt(er + 1.41) ln(5.98 h/(0.8 w + t)),
  Zdiff = 2 Z0 (1 - 0.48 exp(-0.96 s/h))), or given directly (``zdiff_ohm``).
* Temperature: copper rho(T) = 1.7241e-8 (1 + 0.00393 (T - 20)) ohm m (IEC 60028 annealed copper,
  alpha_20 = 0.393 %/C); Df(T) = Df (1 + tc (T - T_ref)) with the material's tc (see ``materials``).

The differential pair is treated in its odd mode (no mode conversion: the pair is symmetric).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from eqtune.arrays import ComplexArray, FloatArray
from eqtune.channel.elements import R0_DIFF_OHM, line_from_gamma
from eqtune.channel.materials import get_material
from eqtune.config_schema import Field, Schema, fail
from eqtune.config_schema import validate as validate_keys
from eqtune.errors import ConfigError

C0 = 299_792_458.0
MU0 = 4e-7 * np.pi
RHO_CU_20C = 1.7241e-8  # ohm m, IEC 60028
ALPHA_CU = 0.00393  # 1/C at 20 C, IEC 60028
MIL = 25.4e-6
INCH = 0.0254
DS_F1_HZ, DS_F2_HZ = 1e3, 1e12


@dataclass(frozen=True)
class TraceSpec:
    """A differential trace. Lengths in metres (use ``from_units`` for mm/in/mil inputs)."""

    length_m: float
    kind: Literal["stripline", "microstrip"] = "stripline"
    material: str | None = "megtron6"
    dk: float | None = None  # override the material's
    df: float | None = None
    f_ref_hz: float | None = None
    width_m: float = 5 * MIL
    thickness_m: float = 0.7 * MIL  # 1/2 oz copper
    spacing_m: float = 7 * MIL
    height_m: float | None = None  # strip to (each) plane; None: solved from zdiff_ohm
    zdiff_ohm: float | None = None  # None: from geometry (IPC-2141A), 100 ohm when height is None too
    roughness: Literal["huray", "hammerstad", "none"] = "huray"
    huray_radius_m: float = 0.5e-6
    huray_sr: float = 1.5  # N 4 pi a^2 / A_hex (engineering default for HVLP-class foil)
    rq_m: float = 0.4e-6  # Hammerstad RMS roughness
    temperature_c: float = 25.0
    perfect_conductor: bool = False


def validate(spec: TraceSpec, where: str = "trace") -> None:
    """Raise ConfigError naming ``where`` and the field for any non-physical value."""
    def bad(v: object) -> bool:
        return isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v)

    for name in ("length_m", "width_m", "thickness_m", "spacing_m", "height_m", "zdiff_ohm", "dk",
                 "huray_radius_m", "rq_m", "f_ref_hz", "huray_sr", "df", "temperature_c"):
        v = getattr(spec, name)
        if v is None:
            continue
        label = name.removesuffix("_m")
        if bad(v):
            raise ConfigError(f"{where}: {label} must be a number, got {v!r}")
        if name in ("huray_sr", "length_m") and v < 0:
            raise ConfigError(f"{where}: {label} must be >= 0, got {v!r}")
        if name == "df" and not 0 <= v < 1:
            raise ConfigError(f"{where}: df must be in [0, 1), got {v!r}")
        if name == "temperature_c" and not -273.15 < v < 1000:
            raise ConfigError(f"{where}: temperature_c must be above absolute zero and below 1000 C, got {v!r}")
        if name not in ("huray_sr", "length_m", "df", "temperature_c") and v <= 0:
            raise ConfigError(f"{where}: {label} must be a positive number, got {v!r}")
    if spec.kind not in ("stripline", "microstrip"):
        raise ConfigError(f"{where}: kind must be 'stripline' or 'microstrip', got {spec.kind!r}")
    if spec.roughness not in ("huray", "hammerstad", "none"):
        raise ConfigError(f"{where}: roughness must be 'huray', 'hammerstad' or 'none', got {spec.roughness!r}")
    if spec.material is not None and not isinstance(spec.material, str):
        raise ConfigError(f"{where}: material must be a name such as 'megtron6', got {spec.material!r}")
    if spec.material:
        try:
            get_material(spec.material)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if spec.dk is not None and spec.dk <= 1.0:
        raise ConfigError(f"{where}: dk must be > 1, got {spec.dk!r}")


def _dielectric(spec: TraceSpec) -> tuple[float, float, float, float]:
    """(dk, df, f_ref_hz, df_tc) after overrides and temperature."""
    if spec.material:
        m = get_material(spec.material)
        dk, df, fref, tc, tref = m.dk, m.df, m.f_ref_hz, m.df_tc_per_c, m.t_ref_c
    else:
        dk, df, fref, tc, tref = 4.0, 0.02, 1e9, 0.0, 25.0
    dk = spec.dk if spec.dk is not None else dk
    df = spec.df if spec.df is not None else df
    fref = spec.f_ref_hz if spec.f_ref_hz is not None else fref
    df_t = df * max(0.0, 1.0 + tc * (spec.temperature_c - tref))
    return dk, df_t, fref, tc


def djordjevic_sarkar(freqs_hz: np.ndarray, dk: float, df: float, f_ref_hz: float,
                      f1_hz: float = DS_F1_HZ, f2_hz: float = DS_F2_HZ) -> np.ndarray:
    """Complex relative permittivity eps' - j eps'' (Djordjevic et al. 2001 eq. (6)), = Dk(1 - j Df) at f_ref."""
    m1, m2 = np.log10(f1_hz), np.log10(f2_hz)

    def k(f: FloatArray | float) -> ComplexArray:
        out: ComplexArray = np.log((f2_hz + 1j * f) / (f1_hz + 1j * f)) / ((m2 - m1) * np.log(10.0))
        return out

    kr = k(f_ref_hz)
    d_eps = -dk * df / kr.imag
    eps_inf = dk - d_eps * kr.real
    ret: np.ndarray = eps_inf + d_eps * k(np.asarray(freqs_hz, dtype=float))
    return ret


def zdiff_from_geometry(kind: str, er: float, w: float, t: float, s: float, h: float) -> float:
    """IPC-2141A differential impedance (ohm); stripline b = 2 h + t."""
    if kind == "stripline":
        b = 2.0 * h + t
        z0 = 60.0 / np.sqrt(er) * np.log(4.0 * b / (0.67 * np.pi * (0.8 * w + t)))
        return float(2.0 * z0 * (1.0 - 0.347 * np.exp(-2.9 * s / b)))
    z0 = 87.0 / np.sqrt(er + 1.41) * np.log(5.98 * h / (0.8 * w + t))
    return float(2.0 * z0 * (1.0 - 0.48 * np.exp(-0.96 * s / h)))


def solve_height(kind: str, er: float, w: float, t: float, s: float, zdiff: float) -> float:
    """Dielectric height giving ``zdiff`` (bisection on the monotonic IPC-2141A formula)."""
    lo, hi = 0.3 * w, 30.0 * w
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if zdiff_from_geometry(kind, er, w, t, s, mid) < zdiff:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _roughness(spec: TraceSpec, delta: np.ndarray, causal: bool = False) -> np.ndarray:
    """Roughness factor K(f) for skin depth ``delta`` (m).

    ``causal=True`` (Huray only) evaluates the snowball term with the complex skin depth
    delta_c = sqrt(2 rho / (j w mu0)) = delta (1 - j)/sqrt 2, making K a function of sqrt(j w) with no
    zeros of 1 + u + u^2/2 in the principal branch, i.e. analytic in the right half s-plane (causal);
    |K| keeps the Huray limits 1 (low f) and 1 + 3/2 SR (high f).
    """
    if spec.roughness == "huray":
        a = spec.huray_radius_m
        d = delta * (1 - 1j) / np.sqrt(2.0) if causal else delta
        return 1.0 + 1.5 * spec.huray_sr / (1.0 + d / a + d**2 / (2.0 * a * a))
    if spec.roughness == "hammerstad":
        return 1.0 + (2.0 / np.pi) * np.arctan(1.4 * (spec.rq_m / delta) ** 2)
    return np.ones_like(delta)


def trace_rlgc(freqs_hz: np.ndarray, spec: TraceSpec) -> tuple[np.ndarray, np.ndarray, float]:
    """Differential series impedance Z (ohm/m), shunt admittance Y (S/m), and Zdiff (ohm)."""
    f = np.asarray(freqs_hz, dtype=float)
    w = 2.0 * np.pi * f
    dk, df, fref, _ = _dielectric(spec)
    eps = djordjevic_sarkar(f, dk, df, fref)
    eps_ref = djordjevic_sarkar(np.array([fref]), dk, df, fref)[0]
    h = spec.height_m
    if h is None:
        h = solve_height(spec.kind, dk, spec.width_m, spec.thickness_m, spec.spacing_m, spec.zdiff_ohm or 100.0)
    zdiff = spec.zdiff_ohm or zdiff_from_geometry(spec.kind, dk, spec.width_m, spec.thickness_m,
                                                  spec.spacing_m, h)
    if spec.kind == "microstrip":
        # quasi-static filling factor (Pozar eq. 3.195): eps_e = (er+1)/2 + (er-1)/2 / sqrt(1 + 12 h/w)
        ee = (dk + 1) / 2 + (dk - 1) / 2 / np.sqrt(1 + 12 * h / spec.width_m)
        q = (ee - 1) / (dk - 1)
        eps = 1 + q * (eps - 1)
        eps_ref = 1 + q * (eps_ref - 1)
    sq = np.sqrt(eps_ref.real)
    l_ext = zdiff * sq / C0  # H/m, differential
    y = 1j * w * eps / (C0 * zdiff * sq)  # jwC(w) with C = eps(w)/(c Zd sqrt(eps_ref)): G = w Im(-eps)...
    z = 1j * w * l_ext
    if not spec.perfect_conductor:
        rho = RHO_CU_20C * (1.0 + ALPHA_CU * (spec.temperature_c - 20.0))
        wd, t = spec.width_m, spec.thickness_m
        z0_se = zdiff / 2.0  # odd-mode impedance of each leg
        if spec.kind == "stripline":
            b = 2.0 * h + t
            a_fac = 1 + 2 * wd / (b - t) + (1 / np.pi) * (b + t) / (b - t) * np.log((2 * b - t) / t)
            # Pozar eq. 3.199: alpha_c = 2.7e-3 Rs er Z0 A / (30 pi (b - t)) Np/m; R = 2 Z0 alpha_c
            g_c = 2.0 * z0_se * 2.7e-3 * dk * z0_se * a_fac / (30.0 * np.pi * (b - t))
        else:
            # Bogatin, "Signal and Power Integrity - Simplified" 2nd ed. sec. 9.12: R ~ Rs / w for
            # signal + return (alpha_c = 36 sqrt(f_GHz) / (w_mil Z0) dB/in)
            g_c = 1.0 / wd
        r_dc = rho / (wd * t)
        w0 = r_dc**2 / (g_c**2 * MU0 * rho)
        with np.errstate(divide="ignore"):
            delta = np.sqrt(rho / (np.pi * np.maximum(f, 1.0) * MU0))
        z_int = r_dc * np.sqrt(1.0 + 1j * w / w0) * _roughness(spec, delta, causal=True)
        z = z + 2.0 * z_int  # two legs in series for the differential mode
    return z, y, zdiff


def trace_sparams(freqs_hz: np.ndarray, spec: TraceSpec, r0_ohm: float = R0_DIFF_OHM) -> np.ndarray:
    """(n, 2, 2) differential S-matrix of the trace, referenced to r0 (100 ohm)."""
    validate(spec)
    z, y, _ = trace_rlgc(freqs_hz, spec)
    f = np.asarray(freqs_hz, dtype=float)
    # gamma = sqrt(Z Y), Zc = sqrt(Z / Y) (telegrapher's equations); at f = 0 use the limit Zc -> Zd.
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.sqrt(z * y)
        zc = np.sqrt(z / y)
    if f.size and f[0] == 0.0:
        gamma[0] = 0.0
        zc[0] = zc[1].real if f.size > 1 else r0_ohm
    gamma = np.where(gamma.real < 0, -gamma, gamma)
    return line_from_gamma(gamma * spec.length_m, zc, r0_ohm)


def trace_delay_s(spec: TraceSpec) -> float:
    """Lossless-limit propagation delay length x sqrt(eps_eff(f_ref)) / c (s)."""
    z, y, _ = trace_rlgc(np.array([10e9]), replace(spec, perfect_conductor=True))
    return float(spec.length_m * np.imag(np.sqrt(z * y))[0] / (2 * np.pi * 10e9))


_SCALE = {"mil": MIL, "mm": 1e-3, "um": 1e-6}
_DIMENSIONS = ("width", "thickness", "spacing", "height")
_LENGTH_SCALE = {"length_mm": 1e-3, "length_in": INCH, "length_m": 1.0}
# The keys of a trace segment (eqtune.config_schema); ranges of the physics are checked by validate().
TRACE_SCHEMA = Schema(
    tuple(Field(k, "number", unit=k.rsplit("_", 1)[1], ge=0) for k in _LENGTH_SCALE)
    + (Field("kind", "any"), Field("material", "any"), Field("dk", "any"), Field("df", "any"),
       Field("f_ref_ghz", "number", unit="GHz", gt=0))
    + tuple(Field(f"{base}_{u}", "number", unit=u, gt=0) for base in _DIMENSIONS for u in _SCALE)
    + (Field("zdiff_ohm", "any"), Field("roughness", "any"), Field("huray_radius_um", "number", unit="um", gt=0),
       Field("huray_sr", "any"), Field("rq_um", "number", unit="um", gt=0), Field("temperature_c", "any")),
    keys_text="length_mm|length_in, kind, material, dk, df, f_ref_ghz, width_mil|mm|um, thickness_*, spacing_*, "
              "height_*, zdiff_ohm, roughness, huray_radius_um, huray_sr, rq_um, temperature_c")


def from_units(table: Mapping[str, object], where: str = "trace", path: str = "") -> TraceSpec:
    """Build a TraceSpec from engineering units: length_mm | length_in, width_mil | width_mm, ...

    Keys: length_mm/length_in, kind, material, dk, df, f_ref_ghz, width_*/thickness_*/spacing_*/height_*
    (mil | mm | um), zdiff_ohm, roughness, huray_radius_um, huray_sr, rq_um, temperature_c.
    Key types and signs are checked against ``TRACE_SCHEMA``; the physics ranges by ``validate``.
    ``where`` names the file, ``path`` the table in it (``segments[2]``).
    """
    t = validate_keys(table, TRACE_SCHEMA, where=where, path=path)
    out: dict[str, Any] = {}  # TraceSpec keyword arguments, checked by validate()
    lengths = [k for k in _LENGTH_SCALE if k in t]
    if len(lengths) != 1:
        raise fail(where, path, "give exactly one of length_mm, length_in")
    out["length_m"] = t[lengths[0]] * _LENGTH_SCALE[lengths[0]]
    for base in _DIMENSIONS:
        keys = [f"{base}_{u}" for u in _SCALE if f"{base}_{u}" in t]
        if len(keys) > 1:
            raise fail(where, path, f"give {base} once (one of {', '.join(keys)})")
        if keys:
            out[f"{base}_m"] = t[keys[0]] * _SCALE[keys[0].split("_", 1)[1]]
    for k_in, k_out, mult in (("f_ref_ghz", "f_ref_hz", 1e9), ("huray_radius_um", "huray_radius_m", 1e-6),
                              ("rq_um", "rq_m", 1e-6)):
        if k_in in t:
            out[k_out] = t[k_in] * mult
    for k in ("kind", "material", "dk", "df", "zdiff_ohm", "roughness", "huray_sr", "temperature_c"):
        if k in t:
            out[k] = t[k]
    spec = TraceSpec(**out)
    validate(spec, f"{where}: {path}" if path else where)
    return spec
