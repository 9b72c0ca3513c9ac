"""Statistical eye of a DSP receiver: CTLE -> MMSE Rx FFE -> short DFE (the 802.3dj / 178A receiver form).

A 200G/lane SerDes equalizes mostly in a feed-forward equalizer after the CTLE. This module gives the
statistical eye (eye height per eye at a target BER) of that receiver on an ``EyeEngine``'s link
(``direction="serdes"``: host TX FFE -> channel -> host CTLE + AFE), with the FFE and DFE taps solved by
minimum mean-squared error, the receiver's own adaptation:

1. The pulse at the FFE input is the engine's equalized pulse response (TX FFE, CTLE, 93A-20 AFE filter);
   the CTLE is the point's, or the one the engine adapts when the point leaves it out.
2. Noise at the FFE input as UI-lag autocorrelations (``eqtune.eye.dj_noise``, 178A-17..23 per
   Healey & Hegde, Jan. 2024 [HH24]): receiver noise eta_0 through CTLE x AFE, transmitter noise through
   the path without TX FFE (178A-21/22), jitter (178A-23).
3. At every sampling phase within +-0.5 UI of the pulse peak, the MMSE FFE + DFE (``eqtune.eye.mmse``,
   [HH24] / 178A-26..36, taps limited relative to the cursor tap); the phase with the best FOM wins
   ([HH24]'s criterion).
4. The FFE is linear and time invariant on the waveform (a UI-spaced delay line), so the equalized pulse
   is q(t) = sum_k w_k p(t - (k - n_pre) T) and the receiver's decision point sees q's UI samples. The
   taps are scaled so the equalized cursor equals the unequalized one (eye heights in mV stay comparable
   with a CTLE + DFE receiver's).
5. The eye at ``ber`` by the COM method (IEEE 802.3 93A.1.7: the ISI distribution as the convolution of
   every residual cursor's, 93A-40, here via ``eqtune.eye.stateye``): residual ISI of q after the DFE;
   dual-Dirac jitter per cursor, +-A_DD h_J(n) of q (93A-28 slope), joining the exact distribution as in
   the engine's COM mode; Gaussian noise w' R_n w (receiver + transmitter noise through the FFE: the
   variance of a linear combination of the correlated samples, Wiener-Khinchin) plus the random jitter
   sigma_X^2 sigma_RJ^2 sum h_J(n)^2 (93A-31).

Rx FFE overrides (``held``: knob ``rx_ffe_pre1`` / ``rx_ffe_post1`` / ``rx_ffe_post2`` -> code, the host SerDes
receiver's registers, ``eqtune.serdes.knobs``): each held tap is fixed at code x 1/64 of the cursor tap and
the other taps and the DFE are re-solved by MMSE around it (``eqtune.eye.mmse.fixed_tap_basis``, the
constrained form of 178A-33..36), at every sampling phase. Without ``held`` the receiver is its own MMSE
adaptation (the same code path as before the overrides existed). The module_rx direction (a module's own
DSP receiver) keeps its own adaptation: overrides are refused there.

What is not modelled: the floating FFE tap groups of the dj sheets, ADC quantization (``dj_noise`` has
the step; it is not applied here), MLSE, crosstalk (the bit-by-bit check has no aggressor sources, so the
eye is computed on the thru only; the engine's crosstalk still enters the CTLE+DFE reference eye), and
error propagation in the DFE (ideal feedback, as in the engine). ``eqtune.eye.tdlink.simulate_ffe_link``
is the independent bit-by-bit check (tests/eye/test_ffe_eye.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from eqtune.arrays import FloatArray
from eqtune.errors import InputError
from eqtune.eye.dj_noise import jitter_slope_v_per_ui, noise_autocorrelation
from eqtune.eye.mmse import fixed_tap_basis, mmse_rx_ffe, ui_samples
from eqtune.eye.stateye import eye_heights_at_ber, symbol_error_ratio
from eqtune.jsonutil import JsonValue, to_json_dict
from eqtune.serdes import filters
from eqtune.serdes.knobs import (
    CTLE_GDC,
    CTLE_GDC2,
    KNOB_DEFS,
    RX_FFE_CODE_MAX,
    RX_FFE_KNOBS,
    RX_FFE_TAP_OFFSETS,
    RX_FFE_TAP_STEP,
    SERDES,
    TX_EQ,
    TX_FFE_KNOBS,
    Knob,
)

if TYPE_CHECKING:  # the engine is not imported at run time (this module is imported by it lazily)
    from eqtune.eye.engine import EyeEngine

NOISE_RECORD_UI = 2048  # record length (UI) on which the receiver-noise autocorrelation is computed


@dataclass(frozen=True)
class RxFfe:
    """An Rx FFE + DFE receiver: ``n_taps`` UI-spaced FFE taps, ``n_pre`` of them before the cursor tap;
    FFE taps limited to [w_min, w_max] x the cursor tap (178A-26); DFE taps within [b_min, b_max] x the
    equalized cursor. The defaults are the IEEE 802.3dj KR reference receiver's fixed taps
    (channels/serdes/178a/ieee-dj-kr.toml, P802.3dj D3.3 Table 178-15: Nfix 15, dw 6, +-0.7, 1-tap DFE
    0..0.85); its floating taps are not modelled."""

    n_taps: int = 15
    n_pre: int = 6
    w_min: float = -0.7
    w_max: float = 0.7
    b_min: tuple[float, ...] = (0.0,)
    b_max: tuple[float, ...] = (0.85,)

    def __post_init__(self) -> None:
        if not (1 <= self.n_taps <= 64 and 0 <= self.n_pre < self.n_taps):
            raise InputError(f"Rx FFE of {self.n_taps} taps with {self.n_pre} pre-cursor taps: use 1..64 taps "
                             "and fewer pre-cursor taps than taps")
        if len(self.b_min) != len(self.b_max) or any(lo > hi for lo, hi in zip(self.b_min, self.b_max)):
            raise InputError("Rx FFE receiver DFE limits: give b_min and b_max of equal length, b_min <= b_max")
        if self.w_min > self.w_max:
            raise InputError(f"Rx FFE tap limits [{self.w_min}, {self.w_max}]: w_min must be <= w_max")

    @property
    def n_dfe(self) -> int:
        return len(self.b_max)

    def limits(self) -> tuple[FloatArray, FloatArray]:
        """(w_min, w_max) per tap relative to the cursor tap (cursor entry 1)."""
        lo, hi = np.full(self.n_taps, self.w_min), np.full(self.n_taps, self.w_max)
        lo[self.n_pre] = hi[self.n_pre] = 1.0
        return lo, hi


@dataclass(frozen=True)
class FfeEye:
    """The statistical eye of the CTLE -> MMSE FFE -> DFE receiver at one EQ point (mV unless noted).

    ``ffe_taps``: FFE taps (V/V; tap ``n_pre`` is the cursor tap), scaled so the equalized cursor equals
    the unequalized ``cursor_mv``. ``dfe_taps``: in units of that cursor. ``sample_time_s``: the sampling
    instant on the engine's pulse-response time axis. ``noise_sigma_mv``: receiver + transmitter noise after the FFE (the random jitter not included).
    ``reference_eye_height_mv``: the engine's own
    CTLE + DFE receiver at the same point (the profile's DFE, no FFE). ``fom_db``: [HH24]'s MMSE figure.
    """

    eye_height_mv: list[float]
    eye_height_min_mv: float
    cursor_mv: float
    ffe_taps: list[float]
    dfe_taps: list[float]
    n_pre: int
    sample_time_s: float
    noise_sigma_mv: float
    fom_db: float
    ber_target: float
    ser_estimate: float  # symbol errors per symbol, thresholds mid-way (the engine's ber_estimate convention)
    eq: dict[str, float]
    reference_eye_height_min_mv: float
    ffe_limited: bool
    dfe_limited: bool
    held: dict[str, float] = field(default_factory=dict)  # Rx FFE override knob -> code (empty: all adapted)
    equalized_pulse_v: FloatArray = field(repr=False, default_factory=lambda: np.zeros(0))
    samples_per_ui: int = field(repr=False, default=32)
    cursor_index: int = field(repr=False, default=0)

    def to_dict(self) -> dict[str, JsonValue]:
        return to_json_dict({"eye_height_mv": self.eye_height_mv, "eye_height_min_mv": self.eye_height_min_mv,
                "cursor_mv": self.cursor_mv, "ffe_taps": self.ffe_taps, "ffe_n_pre": self.n_pre,
                "dfe_taps": self.dfe_taps, "noise_sigma_mv": self.noise_sigma_mv, "fom_db": self.fom_db,
                "ber_target": self.ber_target, "ber_estimate": self.ser_estimate, "eq": self.eq,
                "reference_eye_height_min_mv": self.reference_eye_height_min_mv,
                "ffe_limited": self.ffe_limited, "dfe_limited": self.dfe_limited,
                "ffe_taps_per_cursor_tap": self.taps_per_cursor_tap(), "rx_ffe_knobs": self.knob_codes(),
                "rx_ffe_held": sorted(self.held)})

    def taps_per_cursor_tap(self) -> list[float]:
        """The FFE taps relative to the cursor tap (cursor tap 1), the units of the override knobs."""
        c = self.ffe_taps[self.n_pre]
        return [w / c for w in self.ffe_taps]

    def knob_codes(self) -> dict[str, float]:
        """Each Rx FFE override knob's code: the held value, or the adapted tap as the nearest code
        (the code that would reproduce the receiver's own adaptation within one step). Offsets outside
        this FFE are left out."""
        rel = self.taps_per_cursor_tap()
        out: dict[str, float] = {}
        for name in RX_FFE_KNOBS:
            i = self.n_pre + RX_FFE_TAP_OFFSETS[name]
            if name in self.held:
                out[name] = self.held[name]
            elif 0 <= i < len(rel):
                out[name] = float(np.clip(np.round(rel[i] / RX_FFE_TAP_STEP), -RX_FFE_CODE_MAX, RX_FFE_CODE_MAX))
        return out


def rx_ffe_knob(name: str) -> Knob:
    """The allowed codes of an Rx FFE override knob (``eqtune.serdes.knobs``: -32..32, 1/64 of the cursor tap)."""
    d = KNOB_DEFS[name]
    return Knob(name, tuple(float(c) for c in range(-RX_FFE_CODE_MAX, RX_FFE_CODE_MAX + 1)), 0.0, d.unit,
                f"{d.description} ({RX_FFE_TAP_STEP:g} of the cursor tap per code)")


def held_taps(held: Mapping[str, float], rx: RxFfe, direction: str) -> dict[int, float]:
    """Override knob -> code as the ``fixed_tap_basis`` map (tap offset -> value relative to the cursor
    tap); one clear line for a knob that is not an override, a code off the grid, a tap this FFE lacks, or
    the module's own receiver."""
    if not held:
        return {}
    if direction != SERDES:
        raise InputError(f"Rx FFE overrides ({', '.join(held)}) act on the host SerDes receiver: use --direction "
                         f"serdes (the {direction} receiver adapts its own taps)")
    out: dict[int, float] = {}
    for name, code in held.items():
        if name not in RX_FFE_KNOBS:
            raise InputError(f"{name} is not an Rx FFE override: use {', '.join(RX_FFE_KNOBS)}")
        c = rx_ffe_knob(name).check(float(code))
        k = RX_FFE_TAP_OFFSETS[name]
        if not -rx.n_pre <= k < rx.n_taps - rx.n_pre:
            raise InputError(f"{name} sets tap w({k:+d}), which a {rx.n_taps}-tap Rx FFE with {rx.n_pre} pre-cursor "
                             "taps does not have: give more taps with --rx-ffe")
        out[k] = c * RX_FFE_TAP_STEP
    return out


def apply_ffe(pulse_v: FloatArray, taps: FloatArray, n_pre: int, samples_per_ui: int) -> FloatArray:
    """q[i] = sum_k w_k p[i + (n_pre - k) M]: a UI-spaced FFE on an oversampled pulse (zeros outside)."""
    p = np.asarray(pulse_v, dtype=float)
    out = np.zeros_like(p)
    m = int(samples_per_ui)
    for k, wk in enumerate(np.asarray(taps, dtype=float)):
        s = (n_pre - k) * m  # q[i] += w_k p[i + s]
        if s >= 0:
            out[:p.size - s] += wk * p[s:]
        else:
            out[-s:] += wk * p[:p.size + s]
    return out


def rx_filter(engine: EyeEngine, freqs_hz: FloatArray, eq: Mapping[str, float]) -> np.ndarray:
    """The receiver's CTLE x AFE (93A-20) at ``freqs_hz``, as the engine builds it: the host CTLE (802.3ck
    form, 120F) in the serdes direction, the module's Tx-input peaking CTLE (93A-22 form, code ``tx_eq``)
    in the module_rx direction."""
    fb = engine.baud_gbd * 1e9
    h_r = filters.butterworth4(freqs_hz, engine.profile.rx.fr_fb * fb)
    if engine.direction == "module_rx":
        m = engine.profile.module
        gdc = filters.peaking_ctle_gdc_db(np.array([float(eq[TX_EQ]) * m.tx_eq_db_per_code]), fb / 2,
                                          fz_hz=m.tx_input_fz_ghz * 1e9, fp1_hz=m.tx_input_fp1_ghz * 1e9,
                                          fp2_hz=m.tx_input_fp2_ghz * 1e9)
        h = filters.ctle_com(freqs_hz, float(gdc[0]), fz_hz=m.tx_input_fz_ghz * 1e9, fp1_hz=m.tx_input_fp1_ghz * 1e9,
                             fp2_hz=m.tx_input_fp2_ghz * 1e9)
        return np.asarray(h * h_r)
    c = engine.profile.rx.ctle
    h = filters.ctle_com(freqs_hz, eq.get(CTLE_GDC, 0.0), eq.get(CTLE_GDC2, 0.0), fz_hz=c.fz_ghz * 1e9,
                         fp1_hz=c.fp1_ghz * 1e9, fp2_hz=c.fp2_ghz * 1e9, flf_hz=c.flf_ghz * 1e9 if c.flf_ghz else None)
    return np.asarray(h * h_r)


def ffe_eye(engine: EyeEngine, point: Mapping[str, float] | None = None, *, rx: RxFfe | None = None,
            ber: float | None = None, held: Mapping[str, float] | None = None) -> FfeEye:
    """The statistical eye of ``point`` with the MMSE Rx FFE receiver ``rx`` (module docstring).

    ``held``: Rx FFE override knob -> code (``rx_ffe_pre1`` ..., serdes direction only); those taps are
    fixed, the others re-solved by MMSE. None / empty: the receiver's own MMSE adaptation."""
    if engine.direction not in ("serdes", "module_rx"):
        raise InputError(f"the Rx FFE eye models the receiver at the end of a host TX: use direction 'serdes' or "
                         f"'module_rx', not {engine.direction!r}")
    rx = rx or RxFfe()
    held = {str(k): float(v) for k, v in (held or {}).items()}
    fixed = held_taps(held, rx, engine.direction)
    basis = fixed_tap_basis(rx.n_taps, rx.n_pre, fixed) if fixed else None
    ber = engine.ber if ber is None else float(ber)
    ref = engine.evaluate(point, ber=ber)
    eq = {k: float(v) for k, v in ref.eq.items() if k in TX_FFE_KNOBS or k in (CTLE_GDC, CTLE_GDC2, TX_EQ)}
    pr = engine.pulse_response(eq)
    pr0 = engine.pulse_response({**eq, **{k: 0.0 for k in eq if k in TX_FFE_KNOBS}})
    if pr0.t_s.size != pr.t_s.size or abs(pr0.t_s[0] - pr.t_s[0]) > 1e-15:
        raise InputError("the pulse without TX FFE is not on the victim's time grid; give the CTLE explicitly")
    p, p0, m = pr.pulse_v, pr0.pulse_v, pr.samples_per_ui
    nz = engine.profile.noise
    f = np.asarray(np.fft.rfftfreq(NOISE_RECORD_UI * m, engine.dt_s), dtype=np.float64)
    h_rx = rx_filter(engine, f, eq)
    eta0 = engine.profile.module.tx_input_eta0_v2_per_ghz if engine.direction == "module_rx" else nz.eta0_v2_per_ghz
    var_x = float(engine.sigma_x2)
    peak = int(np.argmax(p))
    cands = np.arange(max(peak - m // 2, rx.n_pre * m), min(peak + m // 2, p.size - (rx.n_dfe + 2) * m) + 1)
    n_before = max(rx.n_pre, int(cands.max()) // m + 1)
    n_post = (p.size - 1 - int(cands.min())) // m
    h = np.stack([ui_samples(p, m, int(k), n_before, n_post) for k in cands])
    terms = [noise_autocorrelation(victim_pulse_v=p, samples_per_ui=m, cursor_sample=int(k), ui_s=engine.ui_s,
                                   var_x=var_x, eta0_v2_per_ghz=eta0, h_rx=h_rx,
                                   tx_noise_pulse_v=p0, snr_tx_db=nz.snr_tx_db, a_dd_ui=nz.a_dd_ui,
                                   sigma_rj_ui=nz.sigma_rj_ui, n_lags=rx.n_taps) for k in cands]
    rn = np.stack([t.total for t in terms])
    w_lo, w_hi = rx.limits()
    sol = mmse_rx_ffe(h, rn, cursor=n_before, n_taps=rx.n_taps, n_pre=rx.n_pre, n_dfe=rx.n_dfe, var_x=var_x,
                      b_min=np.asarray(rx.b_min), b_max=np.asarray(rx.b_max), w_min=w_lo, w_max=w_hi,
                      rlm=float(nz.rlm), levels=len(engine.levels), basis=basis)
    best = int(np.argmax(sol.fom_db))
    k = int(cands[best])
    g = float(p[k])
    w = sol.ffe[best] * g  # equalized cursor = g
    b = sol.dfe[best]
    pad = rx.n_taps * m  # the FFE spreads the pulse by its span: room on both sides of the window
    q = apply_ffe(np.pad(p, pad), w, rx.n_pre, m)
    k += pad
    n_idx = np.arange(-(k // m), (q.size - 1 - k) // m + 1)
    cur = q[k + n_idx * m]
    res = cur.copy()
    dfe_rows = (n_idx >= 1) & (n_idx <= rx.n_dfe)
    res[dfe_rows] -= b[n_idx[dfe_rows] - 1] * g
    res = res[n_idx != 0]
    hj_all = jitter_slope_v_per_ui(q, m, k % m)  # 93A-28 slope at each UI sample
    i_cur = k // m  # the cursor's own slope: level-dependent jitter of the decided symbol
    hj0, hj = float(hj_all[i_cur]), np.delete(hj_all, i_cur)
    gauss = terms[best].rx + terms[best].tx
    lag = np.abs(np.arange(rx.n_taps)[:, None] - np.arange(rx.n_taps)[None, :])
    s_noise2 = float(w @ gauss[lag] @ w)  # receiver + transmitter noise through the FFE
    s2 = s_noise2 + var_x * nz.sigma_rj_ui**2 * float(np.sum(hj**2))
    cursors = np.concatenate([res, nz.a_dd_ui * hj])
    own = {"own_dd_v": nz.a_dd_ui * hj0, "own_rj_v": nz.sigma_rj_ui * hj0}
    eh, _ = eye_heights_at_ber(cursors, float(np.sqrt(s2)), engine.levels, g, ber, engine.k_exact, **own)
    ser = symbol_error_ratio(cursors, float(np.sqrt(s2)), engine.levels, g, engine.k_exact, **own)
    return FfeEye(eye_height_mv=(eh * 1e3).tolist(), eye_height_min_mv=float(eh.min() * 1e3), cursor_mv=g * 1e3,
                  ffe_taps=w.tolist(), dfe_taps=b.tolist(), n_pre=rx.n_pre, sample_time_s=float(pr.t_s[k - pad]),
                  noise_sigma_mv=float(np.sqrt(s_noise2) * 1e3), fom_db=float(sol.fom_db[best]), ber_target=ber,
                  ser_estimate=ser,
                  eq={**eq, **{k2: v for k2, v in ref.eq.items() if k2 == "tx_c0"}},
                  reference_eye_height_min_mv=float(ref.eye_height_min_mv),
                  ffe_limited=bool(sol.ffe_limited[best]), dfe_limited=bool(sol.dfe_limited[best]),
                  held={n: held[n] for n in RX_FFE_KNOBS if n in held}, equalized_pulse_v=q, samples_per_ui=m, cursor_index=k)
