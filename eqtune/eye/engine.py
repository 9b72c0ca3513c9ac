"""The eye engine: channel -> equalized pulse response -> statistical eye at a target BER.

Link model (IEEE 802.3 Annex 93A, COM; 802.3ck 120F/163A for the CTLE, packages and DFE limits)::

    TX FFE (93A-21, shifted sums) -> TX rise time (93A-46) -> [package] -> channel -> [package]
      -> CTLE (93A-22 / 802.3ck) -> Butterworth (93A-20) -> DFE (93A-26/27) -> sampler

Speed: everything that does not depend on the EQ point is prepared once per engine: for every
receiver EQ setting (host CTLE grid, or module Tx-input peaking codes) the unequalized pulse response
is sampled into a "cursor matrix" (M phases x cursors) and stacked with the row shifts the TX FFE
needs, so a TX FFE is one small tensor contraction (the FFE is linear). Per point:

* stage A (all M phases, vectorized, cheap): cursor, DFE residual, noise/jitter, Gaussian-approximate
  eye height -> best sampling phase (and best CTLE when it adapts) and the horizontal eye profile;
* stage B (chosen phase only): the exact ISI + crosstalk distribution (COM method, 93A.1.7, via
  characteristic functions, see ``eqtune.eye.stateye``) -> EH per eye, COM, VEC, BER estimate.

Sampling phase and COM mode. In the ``serdes`` direction the engine follows the COM
standard: the sampling phase is the Mueller-Muller one of 93A.1.6 (93A-25/26, MATLAB COM 3.70's
tie-breaking), COM's A_ni is read at the profile's DER_0, and the dual-Dirac jitter acts per cursor
(+-A_DD h_J(n) joins the exact ISI distribution, 93A.1.7) at the sampling phase, in the eye width and in the
contours; the aggressors pass through their FEXT/NEXT + RX packages (93A.1.2). ``sampling="best"`` takes
the phase with the best approximate eye instead (a receiver that searches its phase). Elsewhere
(``host_rx``, ``module_rx``), documented deviations from COM: best phase, one dual-Dirac of
+-A_DD sigma_X ||h_J|| (93A-32's variance), no packages. In every direction ``ber`` is used as the one-sided
tail probability per eye edge (no PAM4 SER-to-BER Gray conversion: pessimistic by a factor 4/3 in
probability for PAM4).

Eye width: the open run of phases around the sampling phase with the DFE *held* at the taps it adapted
there (a receiver's DFE does not re-adapt while the eye is probed at other phases; the bit-by-bit
simulator does the same). Stage A with the held taps locates the two edges; stage B (exact) then
evaluates the phases that bracket each crossing until the crossing stops moving. Against the simulator
the width agrees within 1-4 % on the library and 802.3ck channels (tests/eye/test_stat_vs_timedomain.py).
Bathtubs and contours hold the DFE the same way.

Code layout: ``eqtune.eye.prepare`` (the EQ-independent per-link set-up), ``eqtune.eye.points`` (EQ-point
parsing), ``eqtune.eye.stages`` (stage A/B numerics); this module is the facade ``EyeEngine`` (public API,
bathtubs, contours, pulse/noise details).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

import numpy as np

from eqtune.arrays import FloatArray
from eqtune.channel.library import load_channel
from eqtune.channel.model import Channel
from eqtune.errors import EqRangeError, EqtuneError, InputError
from eqtune.eye.detail import Bathtubs, Contour, Density, PointDetail
from eqtune.eye.fom import FomStage
from eqtune.eye.points import DERIVED_KEYS as DERIVED_KEYS  # re-exported
from eqtune.eye.points import KNOWN_KNOBS as KNOWN_KNOBS  # re-exported
from eqtune.eye.points import PointParser
from eqtune.eye.prepare import MAX_POST_UI, MAX_PRE_UI_COM, MIN_PERIOD_UI, LinkPreparation
from eqtune.eye.result import BatchResult, EyeResult
from eqtune.eye.stages import EyeRun
from eqtune.eye.state import Sampling
from eqtune.eye.stateye import symbol_levels, symbol_variance
from eqtune.serdes.knobs import (
    CTLE_KNOBS,
    MODULE_TX_IN_KNOBS,
    TX_EQ,
    Constraint,
    EqPoint,
    Knob,
    KnobSpace,
    is_direction,
)
from eqtune.serdes.knobs import (
    DIRECTIONS as DIRECTIONS,  # re-exported
)
from eqtune.serdes.knobs import (
    KNOB_DIRECTION as KNOB_DIRECTION,  # re-exported (eqtune.eye.KNOB_DIRECTION)
)
from eqtune.serdes.knobs import MODULE_RX_OUT_KNOBS as MODULE_TX_KNOBS
from eqtune.serdes.knobs import TX_FFE_KNOBS as HOST_TX_KNOBS
from eqtune.serdes.profile import SerdesProfile, load_profile

SAMPLINGS = ("mm", "best")  # Mueller-Muller (93A.1.6, 93A-25/26) or the phase with the best approximate eye
#: TX noise forms (93A-30). "cursor": sigma_TX^2 = h(0)^2 10^(-SNR_TX/10) at the sampling phase, as MATLAB COM
#: 3.70 applies it (optimize_fom and the COM noise: sigma_TX = (L-1) A_s / R_LM 10^(-SNR_TX/20), i.e. the cursor
#: h(0) = (L-1) A_s / R_LM) and as PyChOpMarg 3.4.0's PRZF path does (com.py, ``varTx = vic_curs_val**2 *
#: pow(10, -SNR_TX / 10)``); the default of COM mode. "spectrum": sigma_X^2 10^(-SNR_TX/10) sum_n h(n)^2 (the
#: variance of the 178A-17 TX-noise spectrum on the equalized pulse), eqtune's form before; the default of the
#: module/host directions.
TX_NOISE_FORMS = ("cursor", "spectrum")


class PulseResponse(NamedTuple):
    """A sampled pulse response: time (s), voltage (V), index of the sampling instant, samples per UI."""

    t_s: np.ndarray
    pulse_v: np.ndarray
    cursor_index: int
    samples_per_ui: int


@dataclass(frozen=True)
class NoiseBudget:
    """Noise and jitter at the sampler for one EQ point (V unless noted), 93A-30..93A-35.

    ``sigma_gauss_v`` = sqrt(sigma_tx^2 + sigma_rj^2 + sigma_rx^2) is the total Gaussian noise;
    ``a_dd_v`` the dual-Dirac amplitude; ``sigma_rj_ui``/``a_dd_ui`` the jitter in UI (for a
    time-domain simulator that applies jitter itself); ``sigma_x`` the RMS symbol level.
    """

    sigma_tx_v: float
    sigma_rj_v: float
    sigma_rx_v: float
    a_dd_v: float
    sigma_gauss_v: float
    sigma_rj_ui: float
    a_dd_ui: float
    sigma_x: float
    levels: tuple[float, ...]


class EyeEngine(LinkPreparation, PointParser, FomStage):  # FomStage extends EyeStages
    """Statistical eye of one channel in one link direction with one SerDes profile.

    ``direction``: ``"host_rx"`` (module Rx-output driver -> channel -> host CTLE+DFE; the CTLE adapts
    unless ``ctle_*`` are in the point), ``"module_rx"`` (host TX FFE -> channel -> module Tx-input
    peaking EQ ``tx_eq``), ``"serdes"`` (host TX FFE -> packages + channel -> host RX, COM style).
    ``tx_noise``: the 93A-30 form (``TX_NOISE_FORMS``; default "cursor" = MATLAB COM's in the serdes
    direction, "spectrum" elsewhere). ``floating_taps=False`` drops the profile's floating DFE taps (for a
    comparison with a tool that has none). ``period_ui``: the FFT's time-aliasing period (UI, default
    1024; a screening study uses 512 on a coarser channel grid).
    """

    def __init__(self, channel: Channel | str, profile: str | SerdesProfile | None = None, *,
                 direction: str = "host_rx", ber: float = 1e-6, samples_per_ui: int = 32,
                 k_exact: int = 16, package_case: int | None = None, sampling: str | None = None,
                 tx_noise: str | None = None, floating_taps: bool = True,
                 period_ui: int = MIN_PERIOD_UI) -> None:
        if not is_direction(direction):
            raise InputError(f"direction {direction!r} is unknown: use one of {', '.join(DIRECTIONS)}")
        if sampling is None:
            sampling = "mm" if direction == "serdes" else "best"
        if sampling not in SAMPLINGS:
            raise InputError(f"sampling {sampling!r} is unknown: use 'mm' (Mueller-Muller, the COM standard's "
                             "phase) or 'best' (the phase with the best eye, for receivers that search it)")
        if tx_noise is None:
            tx_noise = "cursor" if direction == "serdes" else "spectrum"
        if tx_noise not in TX_NOISE_FORMS:
            raise InputError(f"tx_noise {tx_noise!r} is unknown: use 'cursor' (MATLAB COM's 93A-30, h(0)^2 "
                             "10^(-SNR_TX/10)) or 'spectrum' (sigma_X^2 10^(-SNR_TX/10) sum h(n)^2)")
        self.tx_noise = tx_noise
        # COM mode (the serdes direction): COM at DER_0, per-cursor dual-Dirac jitter (93A.1.7)
        self.sampling = cast(Sampling, sampling)  # checked against SAMPLINGS just above
        self.com_mode = direction == "serdes"
        self.ber = check_ber(ber)
        if not (isinstance(samples_per_ui, (int, np.integer)) and 4 <= samples_per_ui <= 256):
            raise InputError(f"samples_per_ui={samples_per_ui!r} is invalid: use an integer 4..256 (default 32)")
        # the FFT's time-aliasing period (UI): the pulse window (at most MAX_PRE_UI_COM + MAX_POST_UI UI) and
        # a margin must fit in it
        least = MAX_PRE_UI_COM + MAX_POST_UI + 20
        if not (isinstance(period_ui, (int, np.integer)) and least <= period_ui <= 65536):
            raise InputError(f"period_ui={period_ui!r} is invalid: use an integer {least}..65536 "
                             f"(default {MIN_PERIOD_UI})")
        self.period_ui = int(period_ui)
        if isinstance(channel, (str, bytes)) or hasattr(channel, "__fspath__"):
            channel = load_channel(str(channel))
        if not isinstance(channel, Channel):
            raise InputError("EyeEngine needs a Channel: load one with eqtune.channel.load_channel(name_or_path)")
        f = np.asarray(channel.freqs_hz, dtype=float)
        if f.ndim != 1 or len(f) < 3 or abs(f[0]) > 1e-6 or not np.all(np.isfinite(channel.sdd21)):
            raise InputError(f"channel {channel.name!r}: needs a finite SDD21 on a uniform grid from 0 Hz")
        self.channel = channel
        self.profile = load_profile(profile if profile is not None else (channel.serdes_profile or None))
        self.direction = direction
        self.M = int(samples_per_ui)
        self.k_exact = int(k_exact)
        self.modulation = channel.modulation if channel.modulation else self.profile.modulation
        n_levels = {"NRZ": 2, "PAM4": 4, "PAM6": 6}.get(self.modulation)
        if n_levels is None:
            raise InputError(f"modulation {self.modulation!r} is unknown: use NRZ, PAM4 or PAM6")
        # the symbol rate: a profile given explicitly sets it (a 224G SerDes on a channel loaded at the
        # 112G default); otherwise the channel's
        self.baud_gbd = float(self.profile.baud_gbd if profile is not None else channel.baud_gbd)
        self.ui_s = 1e-9 / self.baud_gbd
        _check_band(channel, self.baud_gbd)
        self.dt_s = self.ui_s / self.M
        nz = self.profile.noise
        self.levels = symbol_levels(n_levels, nz.rlm)
        self.sigma_x2 = symbol_variance(n_levels)
        self.spacing = np.diff(self.levels)  # normalized level spacing per eye, bottom to top
        self.package_case = self.profile.package_case if package_case is None else int(package_case)
        self.der0 = float(nz.der0)
        self._knobs = self.profile.knobs()
        self._tx = self._make_tx()
        self._rx = self._make_rx()
        dfe = self.profile.rx.dfe if self._rx.kind == "host" else None
        self._b_min = np.asarray(dfe.b_min if dfe else (), dtype=float)
        self._b_max = np.asarray(dfe.b_max if dfe else (), dtype=float)
        self._float = (dfe.float_groups, dfe.float_taps_per_group, dfe.float_span_ui, dfe.float_b_max) \
            if dfe and dfe.float_groups and floating_taps else None
        self._prepare()

    # ------------------------------------------------------------------ knobs
    @property
    def knob_names(self) -> tuple[str, ...]:
        """Every knob acting in this direction."""
        rxk = MODULE_TX_IN_KNOBS if self._rx.kind == "module" else tuple(k for k in CTLE_KNOBS if k in self._knobs)
        return self._tx.knob_names + rxk

    def _default_names(self) -> tuple[str, ...]:
        if self.direction == "host_rx":
            return MODULE_TX_KNOBS  # host CTLE adapts
        return self.knob_names

    def knob(self, name: str) -> Knob:
        if name not in self.knob_names:
            raise EqRangeError(f"knob {name!r} does not act in direction {self.direction!r}: "
                               f"use {', '.join(self.knob_names)}")
        return self._knobs[name]

    def knob_space(self, names: Sequence[str] | None = None, fixed: Mapping[str, float] | None = None) -> KnobSpace:
        """The knobs ``names`` (default: this direction's tunable knobs) with the profile's values and,
        for the host TX FFE, the constraint sum |taps| <= 1 - c0_min (93A.1.6) as a vectorized mask."""
        names = tuple(names) if names is not None else self._default_names()
        knobs = tuple(self.knob(n) for n in names)
        fixed = {str(k): self.knob(k).check(float(v)) for k, v in (fixed or {}).items()}
        constraints: tuple[Constraint, ...] = ()
        taps = [n for n in HOST_TX_KNOBS if n in names or n in fixed]
        if self._tx.kind == "host" and any(n in names for n in taps):
            limit = 1.0 - self.profile.tx.c0_min
            fixed_sum = sum(abs(fixed[n]) for n in taps if n in fixed and n not in names)
            cols = [n for n in taps if n in names]

            def tx_sum_constraint(matrix: np.ndarray, space_names: Sequence[str]) -> np.ndarray:
                sn = list(space_names)
                m = np.atleast_2d(np.asarray(matrix, dtype=float))
                s = np.abs(m[:, [sn.index(c) for c in cols]]).sum(axis=1) + fixed_sum
                ret: np.ndarray = s <= limit + 1e-9
                return ret

            constraints = (tx_sum_constraint,)
        return KnobSpace(knobs, constraints, fixed)

    def default_point(self) -> EqPoint:
        """The profile's default value of every tunable knob of this direction."""
        return {n: float(self._knobs[n].default) for n in self._default_names()}
    # ------------------------------------------------------------------ public API
    def evaluate(self, point: Mapping[str, float] | None = None, *, ber: float | None = None) -> EyeResult:
        """The statistical eye of ``point`` (knobs of this direction; missing ones take the profile's
        defaults; other directions' knobs are ignored) at ``ber`` (default: the engine's)."""
        ber = self.ber if ber is None else check_ber(ber)
        r = self._run([dict(point or {})], ber)
        return self._result(r, 0, ber)

    def evaluate_batch(self, points: Sequence[Mapping[str, float]] | np.ndarray, names: Sequence[str] | None = None,
                       *, ber: float | None = None, fixed: Mapping[str, float] | None = None,
                       chunk: int = 512) -> BatchResult:
        """Many EQ points in vectorized calls: a list of EqPoints, or a matrix with column ``names``
        (for a matrix without ``names``: ``knob_space().names``). ``fixed`` knobs are added to every
        point (a point's own value wins). Row i of the result equals ``evaluate(point i)``."""
        ber = self.ber if ber is None else check_ber(ber)
        base = {str(k): float(v) for k, v in (fixed or {}).items()}
        if isinstance(points, np.ndarray):
            m = np.atleast_2d(points)
            names = tuple(names) if names is not None else self._default_names()
            if m.shape[1] != len(names):
                raise InputError(f"points matrix has {m.shape[1]} columns for {len(names)} knob names {names}")
            plist = [{**base, **dict(zip(names, map(float, row)))} for row in m]
        else:
            plist = [{**base, **dict(p)} for p in points]
        parts = [self._run(plist[s:s + chunk], ber) for s in range(0, len(plist), chunk)] if plist else []
        def cat(fn: Callable[[EyeRun], FloatArray]) -> FloatArray:
            return np.concatenate([fn(r) for r in parts]) if parts else np.zeros(0)
        st = self._rx.settings
        is_host = self._rx.kind == "host"
        return BatchResult(
            eye_height_min_mv=cat(lambda r: r.eh_min * 1e3),
            eye_height_mv=(np.concatenate([r.b.eh * 1e3 for r in parts]) if parts
                           else np.zeros((0, len(self.spacing)))),
            com_db=cat(lambda r: r.b.com), eye_width_ui=cat(lambda r: r.eye_width),
            vec_db=cat(lambda r: r.vec), ber_estimate=cat(lambda r: r.b.ser),
            sample_phase_ui=cat(lambda r: (r.j - self.M // 2) / self.M),
            ctle_gdc=cat(lambda r: st[r.idx, 0] if is_host else np.full(len(r.idx), np.nan)),
            ctle_gdc2=cat(lambda r: st[r.idx, 1] if is_host else np.full(len(r.idx), np.nan)),
            points=[self._eq_used(r, i) for r in parts for i in range(len(r.idx))], ber_target=ber)

    def screen(self, points: np.ndarray, names: Sequence[str], *, ber: float | None = None,
               fixed: Mapping[str, float] | None = None) -> FloatArray:
        """Stage-A eye height (mV, best sampling phase) of every row of ``points`` (columns ``names``):
        the closed-form Gaussian approximation the engine ranks CTLE settings with (``_adapt_scores``:
        93A-30 to 93A-35 variances, peak distortion of the largest cursors), without the exact stage B.
        1/16-1/20 of ``evaluate_batch``'s cost on a TX FFE x CTLE grid; a ranking aid (the GP's prior
        mean in simulation, ``eqtune.tune.screen``), not a result. Rows without the RX setting knobs get
        the best RX setting's value (the CTLE the engine would adapt to)."""
        ber = self.ber if ber is None else check_ber(ber)
        m = np.atleast_2d(np.asarray(points, dtype=float))
        names = tuple(names)
        if m.shape[1] != len(names):
            raise InputError(f"points matrix has {m.shape[1]} columns for {len(names)} knob names {names}")
        base = {str(k): float(v) for k, v in (fixed or {}).items()}
        rx_names = (TX_EQ,) if self._rx.kind == "module" else tuple(k for k in CTLE_KNOBS if k in self._knobs)
        rx_cols = [i for i, n in enumerate(names) if n in rx_names]
        tx_cols = [i for i, n in enumerate(names) if n not in rx_names]
        if len(m) == 0:
            return np.zeros(0)
        tx_u, tx_inv = _unique_rows(m[:, tx_cols])
        tx_pts = [{**base, **{names[c]: float(v) for c, v in zip(tx_cols, row)}} for row in tx_u]
        if self._rx.kind == "module":  # the module's RX setting is a knob of the TX side's parse
            tx_pts = [{k: v for k, v in p.items() if k != TX_EQ} for p in tx_pts]
        taps, amp, _, _ = self._parse(tx_pts)
        scores = self._adapt_scores(taps, amp, ber)  # (U, C): every RX setting
        if rx_cols or any(n in base for n in rx_names):
            rx_u, rx_inv = _unique_rows(m[:, rx_cols])
            rx_pts = [{**base, **{names[c]: float(v) for c, v in zip(rx_cols, row)}} for row in rx_u]
            if self._rx.kind == "module":
                idx = np.array([int(round(p.get(TX_EQ, self._knobs[TX_EQ].default))) for p in rx_pts])
            else:
                _, _, idx, _ = self._parse(rx_pts)
            out = scores[tx_inv, idx[rx_inv]]
        else:
            out = scores.max(axis=-1)[tx_inv]
        ret: FloatArray = out * 1e3
        return ret

    def _eq_used(self, r: EyeRun, i: int) -> dict[str, float]:
        eq = dict(r.points[i])
        eq.update(self._rx.labels[int(r.idx[i])])
        return eq

    def _result(self, r: EyeRun, i: int, ber: float) -> EyeResult:
        b, a = r.b, r.a
        j = int(r.j[i])
        p_phase = r.v[i]
        eh = (b.eh[i] * 1e3).tolist()
        eh_min = float(r.eh_min[i])
        return EyeResult(
            eye_height_mv=eh, eye_height_min_mv=eh_min * 1e3, eye_width_ui=float(r.eye_width[i]),
            eye_width_ps=float(r.eye_width[i]) * self.ui_s * 1e12, vec_db=float(r.vec[i]), com_db=float(b.com[i]),
            sample_phase_ui=(j - self.M // 2) / self.M, ber_target=ber, ber_estimate=float(b.ser[i]),
            modulation=self.modulation, baud_gbd=self.baud_gbd, eq=self._eq_used(r, i), closed=bool(eh_min <= 0),
            direction=self.direction, cursor_mv=float(r.h0[i]) * 1e3,
            noise_sigma_mv=float(np.sqrt(a.g2[i, j])) * 1e3, a_ni_mv=float(b.q[i]) * 1e3,
            dfe_taps=self._dfe_taps(p_phase).tolist(), sampling=self.sampling,
            com_probability=self.der0 if self.com_mode else ber, _detail=self._detail(r, i))

    # ------------------------------------------------------------------ details for plots / simulators
    def pulse_response(self, point: Mapping[str, float] | None = None, *, equalized: bool = True) -> PulseResponse:
        """The pulse response over the cursor window (V): with the point's TX FFE, amplitude and RX EQ
        (adapted if not given) when ``equalized``; ``cursor_index`` is the chosen sampling instant.
        ``equalized=False``: channel (+ packages) + T_r filter + Butterworth x TX amplitude only
        (MATLAB COM's "unequalized pulse response"); its cursor index is its peak."""
        M = self.M
        if not equalized:
            amp = self._tx.amplitude_v
            pr = self._ref_pulse * amp
            start = max(self._ipk - M // 2 - M * self.n_pre, 0)
            stop = min(self._ipk - M // 2 + M * (self.n_post + 1), len(pr))
            t = np.arange(start, stop) * self.dt_s
            return PulseResponse(t, pr[start:stop].copy(), self._ipk - start, M)
        r = self._run([dict(point or {})], self.ber)
        p = self._full_p(r.taps, r.amp, r.idx)[0]  # (M, n_out) -> time order: index = n * M + j
        pulse = p.T.reshape(-1)
        start = int(self._ipk_c[r.idx[0]]) - M // 2 - M * self.n_pre
        t = (start + np.arange(pulse.size)) * self.dt_s
        return PulseResponse(t, pulse, int(self.n_pre * M + r.j[0]), M)

    def single_bit_response(self, point: Mapping[str, float] | None = None) -> PulseResponse:
        """Alias of ``pulse_response(point)`` (COM calls the equalized pulse the single-bit response)."""
        return self.pulse_response(point)

    def noise_sigma_v(self, point: Mapping[str, float] | None = None) -> NoiseBudget:
        """The Gaussian noise / jitter budget at the point's sampling phase (see ``NoiseBudget``)."""
        r = self._run([dict(point or {})], self.ber)
        a, j = r.a, int(r.j[0])
        nz = self.profile.noise
        return NoiseBudget(sigma_tx_v=float(np.sqrt(a.tx2[0, j])), sigma_rj_v=float(np.sqrt(a.rj2[0, j])),
                           sigma_rx_v=float(np.sqrt(a.rx2[0, j])), a_dd_v=float(a.add[0, j]),
                           sigma_gauss_v=float(np.sqrt(a.g2[0, j])), sigma_rj_ui=nz.sigma_rj_ui,
                           a_dd_ui=nz.a_dd_ui, sigma_x=math.sqrt(self.sigma_x2), levels=tuple(self.levels.tolist()))

    def _detail(self, r: EyeRun, i: int) -> PointDetail:
        """The small immutable context of row ``i`` of an evaluated run that bathtubs, contours and the
        eye image need (``eqtune.eye.detail``): nothing in it refers back to this engine."""
        sl = slice(i, i + 1)
        p = self._full_p(r.taps[sl], r.amp[sl], r.idx[sl])[0]  # (M, n)
        # the DFE keeps the taps it adapted at the sampling phase at every probed phase
        fixed = self._feedback(r.v[i]) if len(self._b_max) + self._fw else None
        return PointDetail(p=p, fixed=fixed, xt=r.xt[i].copy(), g2=r.a.g2[i].copy(), add=r.a.add[i].copy(),
                           j=int(r.j[i]), levels=self.levels, spacing=self.spacing, sigma_x2=self.sigma_x2,
                           k_exact=self.k_exact, n_pre=self.n_pre, b_min=self._b_min, b_max=self._b_max,
                           fw=self._fw, floating=self._float, com_mode=self.com_mode,
                           a_dd_ui=float(self.profile.noise.a_dd_ui))

    def point_detail(self, point: Mapping[str, float] | None = None, *, ber: float | None = None) -> PointDetail:
        """The per-point context of ``point`` at ``ber`` (default: the engine's): see ``PointDetail``."""
        ber = self.ber if ber is None else check_ber(ber)
        return self._detail(self._run([dict(point or {})], ber), 0)

    def bathtubs(self, point: Mapping[str, float] | None = None, *, ber: float | None = None) -> Bathtubs:
        """Horizontal bathtub (symbol error probability vs sampling phase, exact at every phase) and
        vertical bathtubs at the chosen phase (``PointDetail.bathtubs``): the vertical bathtub's opening
        at ``ber`` equals ``eye_height_mv``."""
        ber = self.ber if ber is None else check_ber(ber)
        return self.point_detail(point, ber=ber).bathtubs(ber)

    def contour(self, point: Mapping[str, float] | None = None, *, ber: float | None = None) -> Contour:
        """Eye contour at ``ber``: per phase and eye, lower and upper edge (mV; lower > upper = closed)."""
        ber = self.ber if ber is None else check_ber(ber)
        return self.point_detail(point, ber=ber).contour(ber)

    def density(self, point: Mapping[str, float] | None = None, n_v: int = 256) -> Density:
        """Statistical eye image: received-signal PDF per phase on a common voltage grid (for plots)."""
        return self.point_detail(point).density(self.ber, n_v)


def _unique_rows(m: FloatArray) -> tuple[FloatArray, np.ndarray]:
    """Distinct rows of ``m`` and the inverse index, like ``np.unique(m, axis=0, return_inverse=True)``
    but through one integer code per row (each column's level index, mixed radix): 1-D sorts instead
    of a row-wise one (1.3 s -> ~0.1 s for 383,180 rows of a 6-knob grid)."""
    if m.shape[1] == 0:
        return np.zeros((1, 0)), np.zeros(len(m), dtype=np.int64)
    cols = [np.unique(m[:, c], return_inverse=True)[1].reshape(-1) for c in range(m.shape[1])]
    if math.prod(float(int(v.max()) + 1) for v in cols) >= 2.0**62:  # the code would overflow int64
        u, inv = np.unique(m, axis=0, return_inverse=True)
        return u, np.asarray(inv, dtype=np.int64).reshape(-1)
    code = np.zeros(len(m), dtype=np.int64)
    for inv in cols:
        code = code * (int(inv.max()) + 1) + inv.astype(np.int64)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return m[first], np.asarray(inverse, dtype=np.int64).reshape(-1)


def check_ber(ber: float) -> float:
    """Validate a target BER: a number in (0, 0.5)."""
    try:
        b = float(ber)
    except (TypeError, ValueError):
        raise InputError(f"BER {ber!r} is not a number: give e.g. 1e-6") from None
    if not (0.0 < b < 0.5) or not math.isfinite(b):
        raise InputError(f"BER {ber!r} is outside (0, 0.5): give a target such as 1e-6 (1e-3..1e-15)")
    return b


def _check_band(channel: Channel, baud_gbd: float) -> None:
    """Refuse measured data that end below the band this baud needs (the profile's baud may be higher than
    the channel's, for which the loader checked it), unless the channel was extrapolated explicitly."""
    from eqtune.channel.band import check_coverage

    meta = channel.meta or {}
    end = meta.get("band_end_hz")
    if isinstance(end, int | float) and end and not meta.get("extrapolated"):
        try:
            check_coverage(float(end), baud_gbd, f"channel {channel.name!r}", None)
        except EqtuneError as exc:
            raise InputError(str(exc)) from None
