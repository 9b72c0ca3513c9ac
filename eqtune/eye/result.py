"""Results of the eye engine: ``EyeResult`` (one EQ point), ``BatchResult`` (many), ``LinkResult``.

All ``to_dict()`` outputs are JSON-safe: plain floats/ints/lists/str, no NaN or inf (None instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from eqtune.errors import InputError
from eqtune.jsonutil import JsonValue, to_json_dict
from eqtune.serdes.knobs import CTLE_GDC, CTLE_GDC2

if TYPE_CHECKING:  # pragma: no cover
    from eqtune.eye.detail import Bathtubs, Contour, PointDetail


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
    # the small context bathtubs()/contour() need (eqtune.eye.detail), not the engine: a result kept in a
    # list must not hold the engine's prepared arrays (tens of MB) alive
    _detail: PointDetail | None = field(default=None, repr=False, compare=False)

    @property
    def margin_mv(self) -> float:
        return self.eye_height_min_mv

    def __getstate__(self) -> dict[str, object]:
        # results cross processes (study executors) as figures only: the per-phase context stays behind
        state = dict(self.__dict__)
        state["_detail"] = None
        return state

    def bathtubs(self) -> Bathtubs:
        """Vertical and horizontal bathtubs at ``ber_target`` (see ``eqtune.eye.detail.PointDetail``)."""
        return self._need_detail().bathtubs(self.ber_target)

    def contour(self) -> Contour:
        """2-D eye contour at ``ber_target``: per phase, per eye, the lower/upper edge (mV)."""
        return self._need_detail().contour(self.ber_target)

    def _need_detail(self) -> PointDetail:
        if self._detail is None:
            raise InputError("this EyeResult carries no per-phase detail (made by hand, or unpickled): "
                             "re-run EyeEngine.evaluate, or call EyeEngine.bathtubs(result.eq)")
        return self._detail

    def to_dict(self) -> dict[str, JsonValue]:
        d = {k: getattr(self, k) for k in (
            "eye_height_mv", "eye_height_min_mv", "eye_width_ui", "eye_width_ps", "vec_db", "com_db",
            "sample_phase_ui", "ber_target", "ber_estimate", "modulation", "baud_gbd", "eq", "closed",
            "direction", "cursor_mv", "noise_sigma_mv", "a_ni_mv", "dfe_taps", "sampling", "com_probability")}
        return to_json_dict(d)


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

    def to_dict(self) -> dict[str, JsonValue]:
        return to_json_dict({k: getattr(self, k) for k in (
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

    def to_dict(self) -> dict[str, JsonValue]:
        return to_json_dict({"worst_direction": self.worst_direction, "margin_mv": self.margin_mv,
                       "ber_estimate": self.ber_estimate,
                       "results": {k: v.to_dict() for k, v in self.results.items()}})
