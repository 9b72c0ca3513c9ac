"""The attributes the eye engine's mixins share, declared once for the type checker.

``EyeEngine`` is assembled from three mixins (``eqtune.eye.prepare.LinkPreparation``,
``eqtune.eye.points.PointParser``, ``eqtune.eye.stages.EyeStages``) that read each other's attributes.
``EngineState`` declares them (annotations only: nothing is assigned here, no run-time cost) so that each
mixin is checked on its own; ``EyeEngine.__init__`` and ``LinkPreparation._prepare`` set them.
Units: V, s, UI and dB as the names say; arrays are float64 unless noted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from eqtune.arrays import FloatArray, IntArray
from eqtune.channel.model import Channel
from eqtune.serdes.knobs import Direction, Knob
from eqtune.serdes.profile import SerdesProfile

Sampling = Literal["mm", "best"]
#: one crosstalk aggressor as prepared: ("FEXT" | "NEXT", amplitude ratio or V, cursor stack)
Aggressor = tuple[Literal["FEXT", "NEXT"], float, FloatArray]
#: floating DFE: (groups, taps per group, span (UI), |b| max)
FloatingDfe = tuple[int, int, int, float]


@dataclass(frozen=True)
class TxSide:
    """The transmitter of a direction: ``kind`` "host" (TX FFE) or "module" (Rx-output codes),
    ``knob_names`` its non-main taps / codes, ``offsets`` the tap offsets (UI) including 0 (main),
    rise time (ps), SNR (dB) and the nominal amplitude (V)."""

    kind: Literal["host", "module"]
    knob_names: tuple[str, ...]
    offsets: IntArray
    rise_time_ps: float
    snr_db: float
    amplitude_v: float


@dataclass(frozen=True)
class RxSide:
    """The receiver EQ grid of a direction: ``kind`` "host" (COM CTLE grid + DFE) or "module" (peaking
    codes, no DFE); ``settings`` (C, 2) gdc, gdc2 (dB); ``labels`` the knob values per setting; the RX
    noise density eta_0 (V^2/GHz)."""

    kind: Literal["host", "module"]
    settings: FloatArray
    labels: tuple[dict[str, float], ...]
    eta0_v2_per_ghz: float


class EngineState:
    """Declared attributes of ``EyeEngine`` (see the module docstring)."""

    # set by EyeEngine.__init__
    channel: Channel
    profile: SerdesProfile
    direction: Direction
    sampling: Sampling
    com_mode: bool
    ber: float
    M: int
    k_exact: int
    modulation: str
    baud_gbd: float
    ui_s: float
    dt_s: float
    period_ui: int  # the FFT's time-aliasing period (UI)
    levels: FloatArray
    sigma_x2: float
    spacing: FloatArray
    package_case: int
    der0: float
    tx_noise: str
    _knobs: Mapping[str, Knob]
    _tx: TxSide
    _rx: RxSide
    _b_min: FloatArray
    _b_max: FloatArray
    _float: FloatingDfe | None
    # set by LinkPreparation._prepare
    n_pre: int
    n_post: int
    _f_fft: FloatArray
    _n_fft: int
    _h_base: FloatArray
    _ref_pulse: FloatArray
    _ipk: int
    _ipk_c: IntArray
    _g_lo: int
    _g_hi: int
    _sigma_rx2: FloatArray
    _rx_ffe_w: FloatArray | None
    _stack: FloatArray
    _s_h0: FloatArray
    _s_dfe: FloatArray
    _fw: int
    _s_float: FloatArray | None
    _near_post: IntArray
    _s_near: FloatArray
    _s_mm: FloatArray
    _g: FloatArray
    _gj: FloatArray
    _aggr: list[Aggressor]
    _aggr_gram: list[FloatArray]

    if TYPE_CHECKING:  # methods one mixin calls on another
        def _parse(self, points: Sequence[Mapping[str, float]]
                   ) -> tuple[FloatArray, FloatArray, IntArray, list[dict[str, float]]]: ...

        def _slope(self, p: FloatArray) -> FloatArray: ...
