"""Per-point detail of the statistical eye: bathtubs, contours and the eye image of one evaluated point.

``PointDetail`` is the small immutable context an ``EyeResult`` keeps so that its ``bathtubs()`` and
``contour()`` work without the engine: the point's equalized cursor matrix at every phase (M x n_out, V),
the DFE feedback held from the sampling phase, the crosstalk cursors, the Gaussian noise variance and
dual-Dirac amplitude per phase, and the few scalars of the link. A few hundred kB at most, against the
engine's tens of MB of prepared cursor stacks, which an ``EyeResult`` therefore no longer keeps alive.

Method (as ``EyeEngine`` always computed it): at every phase the exact interference PDF (93A.1.7, via
``eqtune.eye.stateye``) with the DFE *held* at the taps it adapted at the sampling phase (a receiver's DFE
does not re-adapt while the eye is probed at other phases); in the COM mode (the serdes direction) the
dual-Dirac jitter acts per cursor (+-A_DD h_J(n), 93A.1.7) instead of as one +-A_DD term.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from eqtune.arrays import FloatArray
from eqtune.eye.prepare import cursor_slope
from eqtune.eye.stages import dfe_residual
from eqtune.eye.state import FloatingDfe
from eqtune.eye.stateye import InterferencePdf, grouped_pdfs, split_exact


class VerticalBathtub(TypedDict):
    """One eye's vertical bathtub: its center (mV) and the error probability per threshold offset."""

    center_mv: float
    ber: list[float]


class Bathtubs(TypedDict):
    """Horizontal bathtub (symbol error probability per sampling phase, UI) and the vertical bathtubs at
    the sampling phase (per eye, vs the threshold offset from the eye's center, mV)."""

    phase_ui: list[float]
    horizontal_ser: list[float]
    vertical_offset_mv: list[float]
    vertical: list[VerticalBathtub]
    ber_target: float


class Contour(TypedDict):
    """Eye contour at ``ber_target``: per phase (UI) and eye, the lower/upper edge (mV; lower > upper =
    closed); ``sample_phase_ui`` the chosen sampling phase."""

    phase_ui: list[float]
    lower_mv: list[list[float]]
    upper_mv: list[list[float]]
    ber_target: float
    sample_phase_ui: float


class Density(TypedDict):
    """Statistical eye image: the received-signal PDF (1/V) per phase (UI) on a voltage grid (mV)."""

    phase_ui: list[float]
    v_mv: list[float]
    pdf: list[list[float]]


#: per phase: (voltage grid (V), PDF (1/V), (the PDF object, its row), quantile at the target (V))
PhaseRow = tuple[FloatArray, FloatArray, tuple[InterferencePdf, int], float]


@dataclass(frozen=True, eq=False)
class PointDetail:
    """What bathtubs, contours and the eye image of one evaluated point need (arrays in V, V^2).

    ``p`` (M, n_out) the equalized cursor matrix (phase j, cursor n); ``fixed`` (nb + fw,) the DFE feedback
    amounts adapted at the sampling phase ``j`` (None without a DFE); ``xt`` (n_xt,) the crosstalk
    cursors; ``g2`` (M,) the Gaussian noise variance and ``add`` (M,) the dual-Dirac amplitude per phase;
    ``levels`` / ``spacing`` the normalized symbol levels and eye spacings; ``sigma_x2`` the symbol
    variance; ``k_exact`` the cursors taken exactly; the DFE (``n_pre``, ``b_min``, ``b_max``, ``fw``,
    ``floating``, see ``eqtune.eye.stages.dfe_residual``); ``com_mode`` and ``a_dd_ui`` (per-cursor jitter).
    """

    p: FloatArray
    fixed: FloatArray | None
    xt: FloatArray
    g2: FloatArray
    add: FloatArray
    j: int
    levels: FloatArray
    spacing: FloatArray
    sigma_x2: float
    k_exact: int
    n_pre: int
    b_min: FloatArray
    b_max: FloatArray
    fw: int
    floating: FloatingDfe | None
    com_mode: bool
    a_dd_ui: float

    @property
    def M(self) -> int:
        """Phases per UI."""
        return int(self.p.shape[0])

    def phases_ui(self) -> list[float]:
        """The phases, UI relative to the pulse peak, in [-0.5, 0.5)."""
        out: list[float] = ((np.arange(self.M) - self.M // 2) / self.M).tolist()
        return out

    @property
    def sample_phase_ui(self) -> float:
        return (self.j - self.M // 2) / self.M

    def all_phases(self, ber: float) -> tuple[FloatArray, list[PhaseRow]]:
        """Exact interference PDFs at every phase: (cursor per phase (M,), per phase a ``PhaseRow``)."""
        M = self.M
        fixed = None if self.fixed is None else np.repeat(self.fixed[None, :], M, axis=0)
        h0, res = dfe_residual(self.p, fixed, self.n_pre, self.b_min, self.b_max, self.fw, self.floating)
        xt = np.repeat(self.xt[None, :], M, axis=0)
        add = self.add
        if self.com_mode:  # per-cursor dual-Dirac jitter, as in stage B (93A.1.7)
            res = np.concatenate([res, self.a_dd_ui * cursor_slope(self.p, M)], axis=-1)
            add = np.zeros_like(add)
        cur = np.concatenate([res, xt], axis=-1) if xt.shape[-1] else res
        big, rest2 = split_exact(cur, self.k_exact)
        sigma = np.sqrt(self.g2 + self.sigma_x2 * rest2)
        rows: list[PhaseRow | None] = [None] * M
        for idx, pdf in grouped_pdfs(big, sigma, add, self.levels, h0):
            q = pdf.quantile(ber)
            for k, j in enumerate(idx):
                rows[j] = (pdf.y[k], pdf.pdf[k], (pdf, k), float(q[k]))
        done = [r for r in rows if r is not None]
        assert len(done) == M  # grouped_pdfs covers every row
        return h0, done

    def bathtubs(self, ber: float) -> Bathtubs:
        """Horizontal bathtub (symbol error probability vs sampling phase, exact at every phase) and
        vertical bathtubs at the sampling phase: per eye, P(Y > hw + v) + P(Y > hw - v) vs the threshold
        offset v from the eye's center (hw = half the level spacing), so the bathtub crosses ``ber`` at the
        eye-height edges: its opening at ``ber`` equals ``eye_height_mv``."""
        h0, rows = self.all_phases(ber)
        n_lv = len(self.levels)

        def tail(j: int, y: FloatArray) -> FloatArray:
            pdf, k = rows[j][2]
            return pdf.row_tail(k, y)

        ser = np.array([2.0 * np.sum(tail(j, np.maximum(self.spacing * h0[j] / 2.0, 0.0))) / n_lv
                        for j in range(self.M)])
        j = self.j
        centers = (self.levels[:-1] + self.levels[1:]) / 2 * h0[j]
        hw = self.spacing * h0[j] / 2
        offs = np.linspace(-np.max(np.abs(hw)), np.max(np.abs(hw)), 201)
        vert: list[VerticalBathtub] = []
        for e in range(len(self.spacing)):
            # threshold at center + v: the lower level errs with P(Y > hw + v), the upper with P(Y > hw - v);
            # their sum crosses p where the eye-height definition (one-sided tail = p) puts the eye edge
            pe = tail(j, hw[e] + offs) + tail(j, hw[e] - offs)
            vert.append({"center_mv": float(centers[e] * 1e3), "ber": pe.tolist()})
        return {"phase_ui": self.phases_ui(), "horizontal_ser": np.clip(ser, 0.0, 1.0).tolist(),
                "vertical_offset_mv": (offs * 1e3).tolist(), "vertical": vert, "ber_target": ber}

    def contour(self, ber: float) -> Contour:
        """Eye contour at ``ber``: per phase and eye, lower and upper edge (mV; lower > upper = closed)."""
        h0, rows = self.all_phases(ber)
        q = np.array([row[3] for row in rows])
        lo = self.levels[None, :-1] * h0[:, None] + q[:, None]
        hi = self.levels[None, 1:] * h0[:, None] - q[:, None]
        return {"phase_ui": self.phases_ui(), "lower_mv": (lo * 1e3).tolist(), "upper_mv": (hi * 1e3).tolist(),
                "ber_target": ber, "sample_phase_ui": self.sample_phase_ui}

    def density(self, ber: float, n_v: int = 256) -> Density:
        """Statistical eye image: received-signal PDF per phase on a common voltage grid (for plots);
        ``ber`` only sets the quantiles computed alongside (the PDFs do not depend on it)."""
        h0, rows = self.all_phases(ber)
        vmax = 1.3 * np.max(np.abs(h0)) + 1e-9
        v = np.linspace(-vmax, vmax, n_v)
        img = np.zeros((self.M, n_v))
        for j in range(self.M):
            yy, pdf, _, _ = rows[j]
            for lv in self.levels:
                img[j] += np.interp(v - lv * h0[j], yy, pdf, left=0, right=0) / len(self.levels)
        return {"phase_ui": self.phases_ui(), "v_mv": (v * 1e3).tolist(), "pdf": img.tolist()}
