"""Bit-error counts with confidence bounds.

The 95 % upper bound is the exact one-sided Poisson (Garwood) bound:

    lambda_up = chi2.ppf(CL, 2 (k + 1)) / 2            (Garwood 1936, Biometrika 28:437;
    BER_up    = lambda_up / N                           also Maxim/ADI AN1095, "Statistical
                                                         confidence levels for estimating BER")

where ``k`` errors were counted in ``N`` bits. With zero errors this reduces to
``-ln(1 - CL) / N`` = 2.996 / N at CL = 95 %, the familiar "3 / bits" rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

from eqtune.jsonutil import finite_or_none


def poisson_upper(errors: int, confidence: float = 0.95) -> float:
    """Upper one-sided confidence limit of a Poisson mean given ``errors`` counted (Garwood)."""
    if errors < 0:
        raise ValueError("errors must be >= 0")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    if errors == 0:
        return -math.log1p(-confidence)
    from scipy.stats import chi2

    return float(chi2.ppf(confidence, 2 * (errors + 1)) / 2.0)


def bits_for_confidence(ber_target: float, confidence: float = 0.95, errors: int = 0) -> float:
    """Bits to count so that ``errors`` errors still prove BER < ``ber_target`` at ``confidence``.

    Zero errors: N = -ln(1 - CL) / BER (about 3 / BER at 95 %).
    """
    if ber_target <= 0:
        raise ValueError("ber_target must be > 0")
    return poisson_upper(errors, confidence) / ber_target


def dwell_for(ber_target: float, bit_rate_bps: float, confidence: float = 0.95) -> float:
    """Dwell time (s) needed at ``bit_rate_bps`` to show BER < ``ber_target`` with zero errors."""
    return bits_for_confidence(ber_target, confidence) / bit_rate_bps


@dataclass(frozen=True)
class BerCount:
    """A counted bit-error measurement: ``bits`` compared, ``errors`` found, over ``dwell_s``."""

    bits: int
    errors: int
    dwell_s: float = 0.0

    def __post_init__(self) -> None:
        if self.bits < 0 or self.errors < 0:
            raise ValueError(f"bits and errors must be >= 0 (bits={self.bits}, errors={self.errors})")

    @property
    def ber(self) -> float:
        """Point estimate errors / bits (NaN when no bits were counted)."""
        return self.errors / self.bits if self.bits else math.nan

    @property
    def ber_upper95(self) -> float:
        """95 % one-sided upper confidence bound (Garwood); 2.996 / bits with zero errors."""
        return self.upper_bound(0.95)

    def upper_bound(self, confidence: float = 0.95) -> float:
        return poisson_upper(self.errors, confidence) / self.bits if self.bits else math.inf

    def __add__(self, other: BerCount) -> BerCount:
        return BerCount(self.bits + other.bits, self.errors + other.errors, self.dwell_s + other.dwell_s)

    def to_dict(self) -> dict[str, Any]:
        ber = self.ber
        up = self.ber_upper95
        return {
            "bits": int(self.bits),
            "errors": int(self.errors),
            "ber": finite_or_none(ber),
            "ber_upper95": finite_or_none(up),
            "dwell_s": float(self.dwell_s),
        }


class EyeMeasurement(TypedDict, total=False):
    """What a scope's ``measure_eye`` returns (keys present when the instrument measured them).

    ``eye_height_mv``: per eye (PAM4: 3, bottom to top; None = not measured) or one value, mV;
    ``eye_height_min_mv`` the smallest (None when any eye is missing); ``eye_width_ps`` (ps) or
    ``eye_width_ui`` (UI); ``tdecq_db`` (dB, IEEE 802.3 clause 121.8.5)."""

    lane: int
    instrument: str
    eye_height_mv: list[float | None] | float | None
    eye_height_min_mv: float | None
    eye_width_ps: float | None
    eye_width_ui: float | None
    tdecq_db: float | None
