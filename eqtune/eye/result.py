"""Results of the eye engine: ``EyeResult`` (one EQ point), ``BatchResult`` (many), ``LinkResult``.

All ``to_dict()`` outputs are JSON-safe: plain floats/ints/lists/str, no NaN or inf (None instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from eqtune.jsonutil import to_json_value
from eqtune.serdes.knobs import CTLE_GDC, CTLE_GDC2

if TYPE_CHECKING:  # pragma: no cover
    from eqtune.eye.engine import EyeEngine


@dataclass
class EyeResult:
    """The statistical eye of one EQ point at ``ber_target``.

    Heights in mV (``eye_height_mv``: one per eye, bottom to top; negative = closed by that much),
    widths in UI and ps, ``vec_db`` vertical eye closure 20 log10(level spacing / eye height) of the worst
    eye (capped at 60 dB when closed), ``com_db`` = 20 log10(A_s / A_ni) (93A-1), ``sample_phase_ui`` the
    chosen sampling phase in [-0.5, 0.5) UI relative to the peak of the pulse response through the
    chosen RX EQ (CTLE, before the TX FFE), ``ber_estimate`` the symbol error probability at that phase
    with mid-level thresholds. ``eye_width_ui`` comes from the Gaussian-approximate horizontal profile
    anchored to the exact eye height at the sampling phase (within ~0.03 UI of the exact contour, on
    the pessimistic side). ``cursor_mv``, ``noise_sigma_mv`` (Gaussian part), ``a_ni_mv`` (noise +
    interference amplitude at ``ber_target``, one side) and ``dfe_taps`` (normalized to the cursor)
    describe the sampling point. ``sampling`` says how the phase was chosen: ``"mm"`` (Mueller-Muller,
    93A.1.6, the COM standard's, default of the serdes direction) or ``"best"`` (the phase with the best
    approximate eye, for receivers that search it); ``com_probability`` is the tail probability COM's
    A_ni is taken at (DER_0 of the profile in the serdes direction, 93A.1.7; else ``ber_target``).
    """

    eye_height_mv: list[float]
    eye_height_min_mv: float
    eye_width_ui: float
    eye_width_ps: float
    vec_db: float
    com_db: float
    sample_phase_ui: float
    ber_target: float
    ber_estimate: float
    modulation: str
    baud_gbd: float
    eq: dict[str, float]
    closed: bool
    direction: str = "serdes"
    cursor_mv: float = 0.0
    noise_sigma_mv: float = 0.0
    a_ni_mv: float = 0.0
    dfe_taps: list[float] = field(default_factory=list)
    sampling: str = "best"
    com_probability: float | None = None
    _engine: EyeEngine | None = field(default=None, repr=False, compare=False)

    @property
    def margin_mv(self) -> float:
        return self.eye_height_min_mv

    def __getstate__(self) -> dict:
        # never ship the engine (tens of MB of cached pulse responses) across processes
        state = dict(self.__dict__)
        state["_engine"] = None
        return state

    def bathtubs(self) -> dict[str, Any]:
        """Vertical and horizontal bathtubs (computed on demand by the engine)."""
        return self._need_engine().bathtubs(self.eq)

    def contour(self) -> dict[str, Any]:
        """2-D eye contour at ``ber_target``: per phase, per eye, the lower/upper edge (mV)."""
        return self._need_engine().contour(self.eq)

    def _need_engine(self) -> EyeEngine:
        if self._engine is None:
            from eqtune.errors import InputError

            raise InputError("this EyeResult was not produced by an engine: re-run EyeEngine.evaluate")
        return self._engine

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "eye_height_mv", "eye_height_min_mv", "eye_width_ui", "eye_width_ps", "vec_db", "com_db",
            "sample_phase_ui", "ber_target", "ber_estimate", "modulation", "baud_gbd", "eq", "closed",
            "direction", "cursor_mv", "noise_sigma_mv", "a_ni_mv", "dfe_taps", "sampling", "com_probability")}
        return to_json_value(d)


@dataclass
class BatchResult:
    """Vectorized results for many EQ points (arrays of length n_points, row order = input order)."""

    eye_height_min_mv: np.ndarray
    eye_height_mv: np.ndarray  # (n_points, n_eyes)
    com_db: np.ndarray
    eye_width_ui: np.ndarray
    vec_db: np.ndarray
    ber_estimate: np.ndarray
    sample_phase_ui: np.ndarray
    ctle_gdc: np.ndarray  # CTLE / peaking setting used (adapted or given); NaN when not applicable
    ctle_gdc2: np.ndarray
    points: list[dict[str, float]]
    ber_target: float = 1e-6

    def __len__(self) -> int:
        return len(self.eye_height_min_mv)

    def to_dict(self) -> dict[str, Any]:
        return to_json_value({k: getattr(self, k) for k in (
            "eye_height_min_mv", "eye_height_mv", "com_db", "eye_width_ui", "vec_db", "ber_estimate",
            "sample_phase_ui", CTLE_GDC, CTLE_GDC2, "points", "ber_target")})


@dataclass
class LinkResult:
    """Every direction a point touches, and the worst of them."""

    results: dict[str, EyeResult]
    worst_direction: str

    @property
    def worst(self) -> EyeResult:
        return self.results[self.worst_direction]

    @property
    def margin_mv(self) -> float:
        return self.worst.eye_height_min_mv

    @property
    def ber_estimate(self) -> float:
        """Probability that a symbol is wrong in any evaluated direction (independent directions)."""
        p_ok = 1.0
        for r in self.results.values():
            p_ok *= 1.0 - r.ber_estimate
        return 1.0 - p_ok

    def to_dict(self) -> dict[str, Any]:
        return to_json_value({"worst_direction": self.worst_direction, "margin_mv": self.margin_mv,
                       "ber_estimate": self.ber_estimate,
                       "results": {k: v.to_dict() for k, v in self.results.items()}})
