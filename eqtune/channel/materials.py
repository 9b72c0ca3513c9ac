"""PCB laminate table: Dk and Df at a reference frequency, and how Df rises with temperature.

Values are the manufacturers' published typical laminate figures (resin content and glass style change
them by a few percent; use your stack-up's figures via ``dk``/``df`` in a trace segment when you have them).

Temperature: ``df_tc_per_c`` is the relative rise of Df per degree C above ``t_ref_c``. DesignCon
studies of temperature-dependent PCB loss (e.g. J. Loyer, R. Kunze, X. Ye (Intel), on humidity and
temperature effects on PCB insertion loss, DesignCon 2013/2014) report Df of epoxy FR-4 growing by
roughly 0.3-0.5 %/C and of low-loss PPE/hydrocarbon resins by less, ~0.1-0.2 %/C, between 25 and 85 C;
the table uses mid values of those ranges (engineering estimates: replace them with your laminate
vendor's figures where you have them). Dk drift (~50 ppm/C) is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqtune.errors import ConfigError


@dataclass(frozen=True)
class Material:
    """A laminate: relative permittivity ``dk`` and loss tangent ``df`` at ``f_ref_hz`` and ``t_ref_c``."""

    name: str
    dk: float
    df: float
    f_ref_hz: float
    df_tc_per_c: float  # relative Df rise per degree C (0.004 = +0.4 %/C)
    t_ref_c: float = 25.0
    source: str = ""


MATERIALS: dict[str, Material] = {
    # Isola 370HR data sheet (typical FR-4 class, Dk/Df at 10 GHz, IPC-TM-650 2.5.5.5 stripline).
    "fr4": Material("FR-4 (Isola 370HR class)", dk=3.92, df=0.025, f_ref_hz=10e9, df_tc_per_c=0.004,
                    source="Isola 370HR data sheet, Dk 3.92 / Df 0.025 @ 10 GHz"),
    # Panasonic MEGTRON 6 (R-5775) data sheet: Dk 3.61 / Df 0.004 @ 13 GHz (balanced circular disk resonator).
    "megtron6": Material("Panasonic MEGTRON 6 (R-5775)", dk=3.61, df=0.004, f_ref_hz=13e9, df_tc_per_c=0.0015,
                         source="Panasonic MEGTRON 6 R-5775 data sheet, Dk 3.61 / Df 0.004 @ 13 GHz"),
    # Panasonic MEGTRON 7 (R-5785) data sheet: Dk 3.4 / Df 0.002 @ 13 GHz.
    "megtron7": Material("Panasonic MEGTRON 7 (R-5785)", dk=3.40, df=0.002, f_ref_hz=13e9, df_tc_per_c=0.0015,
                         source="Panasonic MEGTRON 7 R-5785 data sheet, Dk 3.4 / Df 0.002 @ 13 GHz"),
    # Isola Tachyon 100G data sheet: Dk 3.02 / Df 0.0021 @ 10 GHz (flat to 40 GHz).
    "tachyon100g": Material("Isola Tachyon 100G", dk=3.02, df=0.0021, f_ref_hz=10e9, df_tc_per_c=0.0015,
                            source="Isola Tachyon 100G data sheet, Dk 3.02 / Df 0.0021 @ 10 GHz"),
}

ALIASES = {"fr-4": "fr4", "megtron-6": "megtron6", "meg6": "megtron6", "megtron-7": "megtron7",
           "meg7": "megtron7", "tachyon": "tachyon100g", "tachyon-100g": "tachyon100g"}


def get_material(name: str) -> Material:
    key = str(name).strip().lower().replace(" ", "").replace("_", "")
    key = ALIASES.get(key, key)
    if key not in MATERIALS:
        raise ConfigError(f"material {name!r} is unknown; use one of {', '.join(sorted(MATERIALS))} "
                          "or give dk, df and f_ref_ghz")
    return MATERIALS[key]
