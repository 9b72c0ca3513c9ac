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

Sampling phase and COM mode (eqtune issue 16). In the ``serdes`` direction the engine follows the COM
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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from eqtune.channel.model import Channel
from eqtune.errors import EqRangeError, InputError
from eqtune.eye.result import BatchResult, EyeResult
from eqtune.eye.stateye import (
    grouped_pdfs,
    q_factor,
    split_exact,
    symbol_levels,
    symbol_variance,
)
from eqtune.serdes import equalizers as eqz
from eqtune.serdes import filters
from eqtune.serdes.knobs import (
    CTLE_GDC,
    CTLE_GDC2,
    CTLE_KNOBS,
    DIRECTIONS,
    KNOB_DIRECTION,  # noqa: F401 - re-exported (eqtune.eye.KNOB_DIRECTION)
    KNOB_NAMES,
    MODULE_TX_IN_KNOBS,
    RX_AMP,
    RX_POST,
    RX_PRE,
    TX_EQ,
    TX_TAP_OFFSETS,
    EqPoint,
    Knob,
    KnobSpace,
)
from eqtune.serdes.knobs import MODULE_RX_OUT_KNOBS as MODULE_TX_KNOBS
from eqtune.serdes.knobs import TX_FFE_KNOBS as HOST_TX_KNOBS
from eqtune.serdes.profile import SerdesProfile, load_profile

SAMPLINGS = ("mm", "best")  # Mueller-Muller (93A.1.6, 93A-25/26) or the phase with the best approximate eye
MM_EPS_V = 1e-3  # |93A-25 residual| below which a phase counts as an exact MM solution (MATLAB COM 3.70 as
#                  transcribed in PyChOpMarg 3.4.0 utility/probability.py loc_curs(), eps = 0.001)
KNOWN_KNOBS = KNOB_NAMES
DERIVED_KEYS = ("tx_c0",)  # reported in EyeResult.eq, accepted (and ignored) on input

TRUNCATE_REL = 1e-3  # COM: impulse response truncated at 1e-3 of its peak (MATLAB COM 3.70)
N_PRE_UI = 6  # precursors kept in the cursor window
RX_FFE_SPAN_UI = 30  # post-cursors an RX FFE adaptation looks at
MAX_POST_UI = 300  # cap of the post-cursor window
MIN_PERIOD_UI = 1024  # time-aliasing period kept when the frequency grid is decimated
COM_CAP_DB = 99.0
N_NEAR = 3  # stage A: cursors on each side of the main one checked as peak distortion
N_PEAK = 3  # stage A: how many of them add up as worst case (PAM4: (1/4)^3 = 1.6e-2 > any target BER)
N_ADAPT_CANDIDATES = 3  # RX settings per point checked with the exact eye when the CTLE adapts
VEC_CLOSED_DB = 60.0
PULSE_CHUNK = 8  # RX settings per pass when preparing the pulses (cache-sized working set)


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


@dataclass(frozen=True)
class _Tx:
    kind: str  # "host" or "module"
    knob_names: tuple[str, ...]  # non-main taps / module codes
    offsets: np.ndarray  # tap offsets (UI) including 0 (main)
    rise_time_ps: float
    snr_db: float
    amplitude_v: float  # nominal (host TX) amplitude


@dataclass(frozen=True)
class _Rx:
    kind: str  # "host" (COM CTLE grid + DFE) or "module" (peaking codes, no DFE)
    settings: np.ndarray  # (C, 2) gdc, gdc2 (dB) per setting
    labels: tuple[dict[str, float], ...]  # knob values per setting
    eta0_v2_per_ghz: float


class EyeEngine:
    """Statistical eye of one channel in one link direction with one SerDes profile.

    ``direction``: ``"host_rx"`` (module Rx-output driver -> channel -> host CTLE+DFE; the CTLE adapts
    unless ``ctle_*`` are in the point), ``"module_rx"`` (host TX FFE -> channel -> module Tx-input
    peaking EQ ``tx_eq``), ``"serdes"`` (host TX FFE -> packages + channel -> host RX, COM style).
    """

    def __init__(self, channel: Channel | str, profile: str | SerdesProfile | None = None, *,
                 direction: str = "host_rx", ber: float = 1e-6, samples_per_ui: int = 32,
                 k_exact: int = 16, package_case: int | None = None, sampling: str | None = None) -> None:
        if direction not in DIRECTIONS:
            raise InputError(f"direction {direction!r} is unknown: use one of {', '.join(DIRECTIONS)}")
        if sampling is None:
            sampling = "mm" if direction == "serdes" else "best"
        if sampling not in SAMPLINGS:
            raise InputError(f"sampling {sampling!r} is unknown: use 'mm' (Mueller-Muller, the COM standard's "
                             "phase) or 'best' (the phase with the best eye, for receivers that search it)")
        # COM mode (the serdes direction): COM at DER_0, per-cursor dual-Dirac jitter (93A.1.7)
        self.sampling = sampling
        self.com_mode = direction == "serdes"
        self.ber = check_ber(ber)
        if not (isinstance(samples_per_ui, (int, np.integer)) and 4 <= samples_per_ui <= 256):
            raise InputError(f"samples_per_ui={samples_per_ui!r} is invalid: use an integer 4..256 (default 32)")
        if isinstance(channel, (str, bytes)) or hasattr(channel, "__fspath__"):
            from eqtune.channel import load_channel

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
            if dfe and dfe.float_groups else None
        self._prepare()

    # ------------------------------------------------------------------ set-up
    def _make_tx(self) -> _Tx:
        p = self.profile
        if self.direction == "host_rx":
            m = p.module
            return _Tx("module", MODULE_TX_KNOBS, np.array([-1, 0, 1]), m.driver_rise_time_ps, m.driver_snr_db,
                       m.rx_amp_swing_mv_ppd(int(self._knobs[RX_AMP].default)) / 2000.0)
        names = tuple(sorted(p.tx.taps, key=lambda n: TX_TAP_OFFSETS[n]))
        offs = sorted([TX_TAP_OFFSETS[n] for n in names] + [0])
        return _Tx("host", names, np.array(offs), p.tx.rise_time_ps, p.noise.snr_tx_db, p.tx.amplitude_v)

    def _make_rx(self) -> _Rx:
        p = self.profile
        if self.direction == "module_rx":
            m = p.module
            codes = np.arange(m.tx_eq_max + 1, dtype=float)
            gdc = filters.peaking_ctle_gdc_db(codes * m.tx_eq_db_per_code, self.baud_gbd * 1e9 / 2,
                                              fz_hz=m.tx_input_fz_ghz * 1e9, fp1_hz=m.tx_input_fp1_ghz * 1e9,
                                              fp2_hz=m.tx_input_fp2_ghz * 1e9)
            settings = np.stack([gdc, np.zeros_like(gdc)], axis=-1)
            return _Rx("module", settings, tuple({TX_EQ: float(c)} for c in codes), m.tx_input_eta0_v2_per_ghz)
        c = p.rx.ctle
        g1 = np.asarray(c.gdc_db.values())
        g2 = np.asarray(c.gdc2_db.values()) if c.gdc2_db is not None else np.zeros(1)
        grid = np.stack(np.meshgrid(g1, g2, indexing="ij"), axis=-1).reshape(-1, 2)
        labels = tuple({CTLE_GDC: float(a), **({CTLE_GDC2: float(b)} if c.gdc2_db is not None else {})}
                       for a, b in grid)
        return _Rx("host", grid, labels, p.noise.eta0_v2_per_ghz)

    def _ctle(self, f: np.ndarray, settings: np.ndarray) -> np.ndarray:
        """(C, n_f) receiver EQ transfer functions for ``settings`` (C, 2)."""
        if self._rx.kind == "module":
            m = self.profile.module
            return filters.ctle_com(f, settings[:, 0], fz_hz=m.tx_input_fz_ghz * 1e9,
                                    fp1_hz=m.tx_input_fp1_ghz * 1e9, fp2_hz=m.tx_input_fp2_ghz * 1e9)
        c = self.profile.rx.ctle
        return filters.ctle_com(f, settings[:, 0], settings[:, 1], fz_hz=c.fz_ghz * 1e9, fp1_hz=c.fp1_ghz * 1e9,
                                fp2_hz=c.fp2_ghz * 1e9, flf_hz=c.flf_ghz * 1e9 if c.flf_ghz else None)

    def _fft_grid(self) -> tuple[np.ndarray, int]:
        """FFT frequency grid: the channel grid decimated by an integer factor keeping a time-aliasing
        period >= MIN_PERIOD_UI (the pulse window is far shorter), and the FFT length."""
        df = self.channel.df_hz
        target = self.baud_gbd * 1e9 / MIN_PERIOD_UI
        # a coarser channel grid than the target is interpolated onto the target grid (no time aliasing)
        df_fft = df * int(math.floor(target / df)) if df <= target else target
        n_fft = int(round(1.0 / (df_fft * self.dt_s)))
        n_fft += n_fft % 2
        return np.arange(n_fft // 2 + 1) * (1.0 / (n_fft * self.dt_s)), n_fft

    def _interp(self, x: np.ndarray, f: np.ndarray) -> np.ndarray:
        """Complex response of the channel grid at ``f``. Above the channel's last frequency f_max it
        continues with the last value's phase slope under a raised-cosine taper to 0 at 1.25 f_max (a
        brick-wall cut would ring: a sinc tail over many UI)."""
        fc = np.asarray(self.channel.freqs_hz, dtype=float)
        x = np.asarray(x, dtype=complex)
        # polar interpolation (magnitude and unwrapped phase): exact on the channel's own points and
        # free of the magnitude dip that real/imag interpolation gives for a long delay on a coarse grid
        mag = np.interp(f, fc, np.abs(x), right=0.0)
        ph = np.interp(f, fc, np.unwrap(np.angle(x)))
        out = mag * np.exp(1j * ph)
        f_max = fc[-1]
        ext = (f > f_max) & (f < 1.25 * f_max)
        if np.any(ext) and len(fc) > 2:
            slope = np.angle(x[-1] / x[-2]) / (fc[-1] - fc[-2]) if abs(x[-2]) > 0 else 0.0  # rad/Hz
            u = (f[ext] - f_max) / (0.25 * f_max)
            out[ext] = x[-1] * 0.5 * (1 + np.cos(np.pi * u)) * np.exp(1j * slope * (f[ext] - f_max))
        return out

    def _packaged_s21(self, sdd21: np.ndarray, sdd11: np.ndarray | None, sdd22: np.ndarray | None,
                      tx_role: str) -> np.ndarray:
        """S21 on the channel grid of TX-side package (``tx_role``: "tx", "fext" or "next") -> channel
        -> RX package (93A-18 cascade; 93A.1.2: the victim through the TX and RX packages, a FEXT aggressor
        through the FEXT package, a NEXT aggressor through the NEXT package, both then through the victim's
        RX package). The package lengths of the chosen case come from the profile (802.3ck sheets)."""
        from eqtune.channel.package import cascade, com_package_sparams, flip_ports

        fc = np.asarray(self.channel.freqs_hz, dtype=float)
        case, prof = self.package_case, self.profile
        s = np.zeros((len(fc), 2, 2), dtype=complex)
        s[:, 1, 0] = s[:, 0, 1] = sdd21
        if sdd11 is not None:
            s[:, 0, 0] = sdd11
        if sdd22 is not None:
            s[:, 1, 1] = sdd22
        tx = com_package_sparams(fc, case=case, side="tx", zp1_mm=prof.package_zp1_mm(tx_role, case))
        rx = flip_ports(com_package_sparams(fc, case=case, side="rx", zp1_mm=prof.package_zp1_mm("rx", case)))
        # R_d = R_0 = 50 ohm: the voltage transfer function is S21 of the cascade (93A-19 with Gamma = 0)
        return cascade(cascade(tx, s), rx)[:, 1, 0]

    def _victim_h(self, f: np.ndarray) -> np.ndarray:
        """Channel (with 802.3ck packages in the serdes direction, 93A-18 cascade) on the FFT grid."""
        ch = self.channel
        if self.direction == "serdes" and self.package_case:
            return self._interp(self._packaged_s21(ch.sdd21, ch.sdd11, ch.sdd22, "tx"), f)
        return self._interp(ch.sdd21, f)

    def _aggressor_h(self, ag, f: np.ndarray) -> np.ndarray:
        """An aggressor's coupling on the FFT grid: through its packages in the serdes direction (93A.1.2;
        the aggressor files carry only SDD21 here, so the coupling's own reflections are left out)."""
        if self.direction == "serdes" and self.package_case:
            role = "fext" if ag.kind == "FEXT" else "next"
            return self._interp(self._packaged_s21(ag.sdd21, None, None, role), f)
        return self._interp(ag.sdd21, f)

    def _pulses(self, h: np.ndarray, n_fft: int, truncate: bool = True) -> np.ndarray:
        """Pulse responses (..., n_fft) of transfer functions ``h`` (..., n_f): the impulse (inverse FFT,
        truncated at TRUNCATE_REL of its peak as MATLAB COM does) convolved with a 1-UI box-car."""
        M = self.M
        imp = np.fft.irfft(h, n_fft, axis=-1)
        if not truncate:
            c = np.cumsum(imp, axis=-1)
            out = np.empty_like(c)
            out[..., :M] = c[..., :M]
            np.subtract(c[..., M:], c[..., :-M], out=out[..., M:])
            return out
        shape = imp.shape
        imp = imp.reshape(-1, n_fft)
        mag = np.abs(imp)
        above = mag > TRUNCATE_REL * mag.max(axis=-1, keepdims=True)
        del mag
        last = n_fft - 1 - np.argmax(above[:, ::-1], axis=-1)
        first = np.argmax(above, axis=-1)
        # the truncated impulse is zero outside [first, last], so its running sum is 0 before the
        # earliest first and constant after the latest last: the pulse (running sum minus the running
        # sum M samples earlier) is exactly 0 outside [lo, hi + M); only that span is summed (the same
        # sequential sums as over the whole record, so the same values)
        lo, hi = int(first.min()), int(last.max()) + 1
        span = imp[:, lo:hi].copy()
        for r in range(len(span)):
            span[r, : first[r] - lo] = 0.0
            span[r, last[r] + 1 - lo:] = 0.0
        c = np.cumsum(span, axis=-1)
        out = np.zeros_like(imp)
        stop = min(hi + M, n_fft)
        seg = out[:, lo:stop]
        n_c = hi - lo
        seg[:, :min(M, n_c)] = c[:, :M]
        if n_c > M:
            np.subtract(c[:, M:], c[:, :-M], out=seg[:, M:n_c])
        if stop > hi:  # the running sum has stopped changing: c(hi - 1) - c(i - M)
            tail = stop - hi
            k = np.arange(hi, stop) - M - lo  # index into c of i - M
            prev = np.where(k >= 0, c[:, np.clip(k, 0, n_c - 1)], 0.0)
            np.subtract(c[:, -1:], prev, out=seg[:, n_c:n_c + tail])
        return out.reshape(shape)

    def _prepare(self) -> None:
        f, n_fft = self._fft_grid()
        self._f_fft = f
        self._n_fft = n_fft
        fb = self.baud_gbd * 1e9
        h_tr = filters.tx_rise_time_filter(f, self._tx.rise_time_ps)
        h_r = filters.butterworth4(f, self.profile.rx.fr_fb * fb)
        base = self._victim_h(f) * h_tr * h_r
        self._h_base = base
        ref = self._pulses(base, n_fft)
        self._ref_pulse = ref
        ipk = _peak_index(ref)
        self._ipk = ipk
        # post-cursor window: until the reference pulse stays below 1e-3 of its peak (COM truncation),
        # at least the DFE span + floating span + 8 UI
        above = np.nonzero(np.abs(ref) > TRUNCATE_REL * ref[ipk])[0]
        n_post = int(math.ceil((above[-1] - ipk) / self.M)) + 2 if len(above) else 8
        need = max(len(self._b_max), self._float[2] if self._float else 0) + 8
        self.n_post = int(min(max(n_post, need), MAX_POST_UI))
        self.n_pre = N_PRE_UI
        offs = self._tx.offsets
        self._g_lo = int(max(offs.max(), 0))  # extra earlier rows needed by post-cursor taps
        self._g_hi = int(max(-offs.min(), 0))
        # Per RX setting: CTLE (+ RX FFE), equalized victim and aggressor pulses, RX noise. Computed a few
        # settings at a time (PULSE_CHUNK): every step is row-wise, so the values are those of one
        # whole-array pass, and the working set stays in the CPU cache.
        settings = self._rx.settings
        n_set = len(settings)
        df_ghz = (f[1] - f[0]) / 1e9
        eta0 = self._rx.eta0_v2_per_ghz
        pre, post = self._rx_ffe_taps()
        ffe_offs = np.arange(-pre, post + 1) if pre or post else None
        # RX FFE adapted per RX setting (a fixed function of the setting, so still cached): fold its
        # transfer function H_ffe(f) = sum_k w_k exp(-j 2 pi f d_k T) into the CTLE (noise and
        # crosstalk see it too) and recompute the pulses
        ffe_basis = (np.exp(-2j * np.pi * np.outer(ffe_offs, f) * self.ui_s) if ffe_offs is not None else None)
        aggr_h = [self._aggressor_h(ag, f) * h_tr * h_r for ag in self.channel.aggressors]
        pulses = np.empty((n_set, n_fft))
        self._ipk_c = np.empty(n_set, dtype=int)
        self._sigma_rx2 = np.empty(n_set)
        self._rx_ffe_w = np.empty((n_set, len(ffe_offs))) if ffe_offs is not None else None
        ag_pulses = [np.empty((n_set, n_fft)) for _ in aggr_h]
        ag_env = [np.zeros(n_fft) for _ in aggr_h]  # max over settings of |pulse|: the aggressor's peak
        for s0 in range(0, n_set, PULSE_CHUNK):
            sl = slice(s0, s0 + PULSE_CHUNK)
            ctle = self._ctle(f, settings[sl])  # (c, n_f)
            p = self._pulses(base[None, :] * ctle, n_fft)  # (c, n_fft)
            # each RX setting's window is centered on its own pulse peak: the sampling phase is searched
            # within +-0.5 UI of the peak of the CTLE-equalized pulse (where a CDR locks; with an RX FFE,
            # the instant the FFE was adapted for)
            self._ipk_c[sl] = [_peak_index(x) for x in p]
            if ffe_offs is not None:
                n2 = eta0 * np.sum(np.abs(ctle * h_r) ** 2, axis=-1) * df_ghz
                w = np.stack([self._rx_ffe_weights(x, ffe_offs, float(v)) for x, v in zip(p, n2)])
                self._rx_ffe_w[sl] = w
                ctle = ctle * np.einsum("ck,kf->cf", w, ffe_basis)
                p = self._pulses(base[None, :] * ctle, n_fft)
            pulses[sl] = p
            # RX noise through CTLE + Butterworth, 93A-35: sigma_N^2 = eta_0 int |H_ctf H_r|^2 df (f in GHz)
            self._sigma_rx2[sl] = eta0 * np.sum(np.abs(ctle * h_r) ** 2, axis=-1) * df_ghz
            # crosstalk: aggressor pulses through the same RX EQ (93A.1.7 with the victim's TX FFE for FEXT)
            for a, ha in enumerate(aggr_h):
                pa = self._pulses(ha[None, :] * ctle, n_fft, truncate=False)
                ag_pulses[a][sl] = pa
                np.maximum(ag_env[a], np.abs(pa).max(axis=0), out=ag_env[a])
        self._stack = self._stack_rows(pulses)  # (C, K, M, n_out)
        del pulses
        self._precompute_forms()
        self._aggr = []
        for ag, pa, env in zip(self.channel.aggressors, ag_pulses, ag_env):
            if ag.kind == "FEXT":
                stack = self._stack_rows(pa, full=True, peak_env=env)
                amp = ag.amplitude_v / self._tx.amplitude_v if ag.amplitude_v else \
                    self.profile.tx.amplitude_fe_v / self.profile.tx.amplitude_v
                self._aggr.append(("FEXT", float(amp), stack))
            else:
                amp = ag.amplitude_v or self.profile.tx.amplitude_ne_v
                self._aggr.append(("NEXT", float(amp), self._stack_rows(pa, full=True, main_only=True,
                                                                         peak_env=env)))
        self._aggr_gram = self._aggressor_grams()

    def _rx_ffe_taps(self) -> tuple[int, int]:
        if self._rx.kind == "module":
            m = self.profile.module
            return int(m.tx_input_ffe_pre), int(m.tx_input_ffe_post)
        return int(self.profile.rx.ffe_pre), int(self.profile.rx.ffe_post)

    def _rx_ffe_weights(self, pulse: np.ndarray, offs: np.ndarray, noise_v2: float) -> np.ndarray:
        """RX FFE weights (MMSE-like) at the pulse peak: minimize sigma_X^2 sum_n y[n]^2 + sigma_n^2 |w|^2
        over the ISI cursors n = -N_PRE_UI..RX_FFE_SPAN_UI (n != 0, DFE-cancelled ones excluded) subject to
        the cursor y[0] = h[0] (the signal is kept, so the FFE cannot buy ISI with a smaller cursor).
        Closed form: w = h0 R^-1 g / (g^T R^-1 g), R = A^T A + lambda I, g = the n = 0 row."""
        M = self.M
        ipk = _peak_index(pulse)
        nb = len(self._b_max)
        n = np.array([k for k in range(-N_PRE_UI, RX_FFE_SPAN_UI + 1) if k != 0 and not (1 <= k <= nb)])

        def h(k):
            idx = ipk + np.asarray(k) * M
            return np.where((idx >= 0) & (idx < len(pulse)), pulse[np.clip(idx, 0, len(pulse) - 1)], 0.0)

        a = np.stack([h(n - d) for d in offs], axis=-1)  # y[n] = sum_k w_k h[n - d_k]
        g = np.array([h(-d) for d in offs], dtype=float)
        h0 = float(pulse[ipk])
        lam = max(noise_v2, 1e-8 * h0**2) / self.sigma_x2
        r = a.T @ a + lam * np.eye(len(offs))
        x = np.linalg.solve(r, g)
        return h0 * x / float(g @ x)

    def _aggressor_grams(self) -> list[np.ndarray]:
        """Per aggressor: FEXT (C, M, K, K) Gram matrices over the FFE shifts; NEXT (C, M) power."""
        out = []
        for kind, _, stack in self._aggr:
            if kind == "FEXT":
                out.append(np.einsum("ckmn,clmn->cmkl", stack, stack))
            else:
                out.append(np.sum(stack[:, 0] ** 2, axis=-1))
        return out

    def _stack_rows(self, pulses: np.ndarray, full: bool = False, main_only: bool = False,
                    peak_env: np.ndarray | None = None) -> np.ndarray:
        """Cursor matrices (C, K, M, n_out): for each TX FFE tap offset d_k, the rows n - d_k of the
        pulse sampled at phase j, n = -n_pre..n_post. ``full``: an aggressor window over all phases
        from the start of the pulse (their timing is unrelated to the victim's sampling), placed at the
        peak of ``peak_env`` (default: max over settings of |pulses|)."""
        M = self.M
        n_out = self.n_pre + 1 + self.n_post
        offs = np.array([0]) if main_only else np.asarray(self._tx.offsets)
        n_c, n_tot = pulses.shape
        if full:
            env = np.abs(pulses).max(axis=0) if peak_env is None else peak_env
            start = np.full(n_c, int(np.argmax(env)) - M * (self.n_pre + 1))
        else:
            start = np.asarray(self._ipk_c, dtype=np.int64) - M // 2 - M * self.n_pre
        # sample (n, j) of offset d is start + (n - d) M + j: one window per setting covers every offset
        d_max, d_min = int(offs.max()), int(offs.min())
        span = (n_out + d_max - d_min) * M
        idx = (start - d_max * M)[:, None] + np.arange(span)[None, :]
        valid = (idx >= 0) & (idx < n_tot)
        win = np.where(valid, pulses[np.arange(n_c)[:, None], np.clip(idx, 0, n_tot - 1)], 0.0)
        out = np.empty((n_c, len(offs), M, n_out))
        for k, d in enumerate(offs):
            o = (d_max - int(d)) * M
            out[:, k] = win[:, o:o + n_out * M].reshape(n_c, n_out, M).transpose(0, 2, 1)
        return out

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
        constraints = ()
        taps = [n for n in HOST_TX_KNOBS if n in names or n in fixed]
        if self._tx.kind == "host" and any(n in names for n in taps):
            limit = 1.0 - self.profile.tx.c0_min
            fixed_sum = sum(abs(fixed[n]) for n in taps if n in fixed and n not in names)
            cols = [n for n in taps if n in names]

            def tx_sum_constraint(matrix: np.ndarray, space_names: Sequence[str]) -> np.ndarray:
                sn = list(space_names)
                m = np.atleast_2d(np.asarray(matrix, dtype=float))
                s = np.abs(m[:, [sn.index(c) for c in cols]]).sum(axis=1) + fixed_sum
                return s <= limit + 1e-9

            constraints = (tx_sum_constraint,)
        return KnobSpace(knobs, constraints, fixed)

    def default_point(self) -> EqPoint:
        """The profile's default value of every tunable knob of this direction."""
        return {n: float(self._knobs[n].default) for n in self._default_names()}

    # ------------------------------------------------------------------ point parsing
    def _parse(self, points: Sequence[Mapping[str, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
        """Points -> (taps (B, K) incl. main, amplitude (B,), rx setting index (B,) or -1 = adapt, points)."""
        B = len(points)
        names = list(self._tx.knob_names)
        rx_names = [TX_EQ] if self._rx.kind == "module" else [k for k in CTLE_KNOBS if k in self._knobs]
        cols = {n: np.empty(B) for n in names + rx_names}
        given_rx = np.zeros(B, dtype=bool)
        clean: list[dict[str, float]] = []
        for i, p in enumerate(points):
            if not isinstance(p, Mapping):
                raise InputError(f"EQ point {i} is {type(p).__name__}: give a mapping knob name -> value")
            unknown = [k for k in p if k not in KNOWN_KNOBS and k not in DERIVED_KEYS]
            if unknown:
                raise EqRangeError(f"unknown knob(s) {', '.join(map(str, unknown))}: use {', '.join(KNOWN_KNOBS)}")
            q: dict[str, float] = {}
            for n in names:
                q[n] = float(p[n]) if n in p else float(self._knobs[n].default)
            has = [n for n in rx_names if n in p]
            if self._rx.kind == "module":
                q[TX_EQ] = float(p.get(TX_EQ, self._knobs[TX_EQ].default))
                given_rx[i] = True
            elif has:
                given_rx[i] = True
                for n in rx_names:
                    q[n] = float(p[n]) if n in p else float(self._knobs[n].default)
            for n, v in q.items():
                if not math.isfinite(v):
                    raise EqRangeError(f"{n}={v} is not a number: give a finite value")
                cols[n][i] = v
            clean.append(q)
        for n in list(cols):
            vals = cols[n] if n not in rx_names or self._rx.kind == "module" else cols[n][given_rx]
            self._check_values(n, vals)
        # taps
        if self._tx.kind == "host":
            other = np.stack([cols[n] for n in names], axis=-1) if names else np.zeros((B, 0))
            eqz.check_ffe(other, self.profile.tx.c0_min, tuple(names))
            c0 = eqz.ffe_main_tap(other)
            offs = [TX_TAP_OFFSETS[n] for n in names]
            full = np.empty((B, len(self._tx.offsets)))
            for k, d in enumerate(self._tx.offsets):
                full[:, k] = c0 if d == 0 else other[:, offs.index(d)]
            amp = np.full(B, self._tx.amplitude_v)
            for i, q in enumerate(clean):
                q["tx_c0"] = float(c0[i])
        else:
            m = self.profile.module
            full = eqz.module_ffe_taps(cols[RX_PRE] * m.rx_pre_db_per_code, cols[RX_POST] * m.rx_post_db_per_code)
            amp = np.array([m.rx_amp_swing_mv_ppd(int(round(a))) for a in cols[RX_AMP]]) / 2000.0
        # rx setting index
        idx = np.full(B, -1, dtype=int)
        if given_rx.any():
            s = self._rx.settings
            if self._rx.kind == "module":
                idx = np.rint(cols[TX_EQ]).astype(int)
            else:
                g1 = cols[CTLE_GDC]
                g2 = cols[CTLE_GDC2] if CTLE_GDC2 in cols else np.zeros(B)
                d = np.abs(s[None, :, 0] - g1[:, None]) + np.abs(s[None, :, 1] - g2[:, None])
                idx = np.where(given_rx, np.argmin(d, axis=1), -1)
        return full, amp, idx, clean

    def _check_values(self, name: str, vals: np.ndarray) -> None:
        if len(vals) == 0:
            return
        allowed = np.asarray(self._knobs[name].values)
        ok = np.min(np.abs(vals[:, None] - allowed[None, :]), axis=1) <= 1e-9
        if not ok.all():
            self._knobs[name].check(float(vals[~ok][0]))  # raises EqRangeError with the allowed range

    # ------------------------------------------------------------------ numerics
    def _precompute_forms(self) -> None:
        """Point-independent pieces of stage A (all quadratic/linear in the TX FFE taps c):
        cursor rows h0 and DFE rows per phase, and Gram matrices G = sum_n S_k S_l of the pulse and of its
        slope, so that sum_n h(n)^2 = c^T G c (TX noise, 93A-30) and sum_n h_J(n)^2 = c^T G_J c (93A-28)."""
        S = self._stack  # (C, K, M, n)
        n0, nb = self.n_pre, len(self._b_max)
        self._s_h0 = np.ascontiguousarray(S[..., n0])
        self._s_dfe = np.ascontiguousarray(S[..., n0 + 1: n0 + 1 + nb])
        self._fw = max(self._float[2] - nb, 0) if self._float else 0
        self._s_float = np.ascontiguousarray(S[..., n0 + 1 + nb: n0 + 1 + nb + self._fw]) if self._fw else None
        # the cursors nearest the main one (rows n0-N_NEAR..n0+N_NEAR, main excluded): the largest residual
        # ISI terms, taken as peak distortion in stage A
        near = [n for n in range(n0 - N_NEAR, n0 + N_NEAR + 1) if n != n0 and 0 <= n < S.shape[-1]]
        self._near_post = np.array([n - n0 for n in near if n > n0])  # post-cursor numbers 1..N_NEAR
        self._s_near = np.ascontiguousarray(S[..., near])
        self._s_mm = np.ascontiguousarray(S[..., n0 - 1: n0 + 2])  # h(-1), h(0), h(1) for the MM criterion
        self._g = np.einsum("ckmn,clmn->cmkl", S, S)
        sj = self._slope(S)
        self._gj = np.einsum("ckmn,clmn->cmkl", sj, sj)

    def _slope(self, p: np.ndarray) -> np.ndarray:
        """h_J = (h(t + T/M) - h(t - T/M)) M / 2 in V/UI (93A-28), for cursor matrices (..., M, n)."""
        nxt = np.concatenate([p[..., 1:, :], np.roll(p[..., :1, :], -1, axis=-1)], axis=-2)
        prv = np.concatenate([np.roll(p[..., -1:, :], 1, axis=-1), p[..., :-1, :]], axis=-2)
        nxt[..., -1, -1] = 0.0
        prv[..., 0, 0] = 0.0
        return (nxt - prv) * (self.M / 2.0)

    def _full_p(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Equalized cursor matrices (B, M, n_out) in V: amp * sum_k c_k * shifted rows (93A-21)."""
        return np.einsum("bk,bkmn->bmn", taps, self._stack[idx]) * amp[:, None, None]

    def _residual(self, v: np.ndarray, fixed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(cursor h0 (...), residual ISI cursors (..., n_out-1)) after the DFE, for cursor vectors v (..., n).

        ``fixed`` (..., nb + fw): the feedback amounts (V) the DFE subtracts, adapted elsewhere (at the
        sampling phase): the residual is then h(k) - fixed(k) on the DFE's taps, with no re-adaptation. A
        receiver adapts its DFE once, at its sampling phase; its taps stay put while the eye is probed at
        other phases (the horizontal eye, bathtubs), as in the bit-by-bit simulator."""
        n0 = self.n_pre
        h0 = v[..., n0]
        post = v[..., n0 + 1:]
        nb = len(self._b_max)
        if fixed is not None:
            k = fixed.shape[-1]
            return h0, np.concatenate([v[..., :n0], post[..., :k] - fixed, post[..., k:]], axis=-1)
        parts = [v[..., :n0]]
        if nb:
            parts.append(eqz.dfe_zero_forcing(h0, post[..., :nb], self._b_min, self._b_max))
        rest = post[..., nb:]
        if self._fw:
            groups, per, _, bmax = self._float
            parts.append(eqz.floating_dfe_residual(h0, rest[..., :self._fw], groups, per, bmax))
            rest = rest[..., self._fw:]
        parts.append(rest)
        return h0, np.concatenate(parts, axis=-1)

    def _feedback(self, v: np.ndarray) -> np.ndarray:
        """The amounts (V) the DFE (fixed and floating taps) subtracts from the post-cursors of cursor
        vectors ``v`` (..., n) when it adapts to them: (..., nb + fw)."""
        n0 = self.n_pre
        k = len(self._b_max) + self._fw
        _, res = self._residual(v)
        return v[..., n0 + 1: n0 + 1 + k] - res[..., n0: n0 + k]

    def _dfe_taps(self, v: np.ndarray) -> np.ndarray:
        """DFE tap weights (normalized to the cursor) for cursor vector(s) at the sampling phase."""
        nb = len(self._b_max)
        if not nb:
            return np.zeros(v.shape[:-1] + (0,))
        h0 = v[..., self.n_pre]
        h0s = np.where(np.abs(h0) > 1e-15, h0, 1e-15)[..., None]
        return np.clip(v[..., self.n_pre + 1: self.n_pre + 1 + nb] / h0s, self._b_min, self._b_max)

    def _stage_a(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray | None, xt2: np.ndarray,
                 ber: float, fixed: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Gaussian-approximate eye height (V) at every phase: (B, M) for settings ``idx`` (B,), or
        (B, C, M) for every RX setting when ``idx`` is None (CTLE adaptation). ``fixed`` (B, nb + fw):
        DFE feedback amounts (V) held at every phase (see ``_residual``); default: the DFE adapts at
        each phase (how the sampling phase is chosen: CDR and DFE converge together)."""
        nz = self.profile.noise
        sx2 = self.sigma_x2
        if idx is None:
            h0 = np.einsum("bk,ckm->bcm", taps, self._s_h0)
            tot2 = np.einsum("bcml,bl->bcm", np.einsum("bk,cmkl->bcml", taps, self._g), taps)
            hj2 = np.einsum("bcml,bl->bcm", np.einsum("bk,cmkl->bcml", taps, self._gj), taps)
            near = np.einsum("bk,ckmn->bcmn", taps, self._s_near)
            dfe = np.einsum("bk,ckmn->bcmn", taps, self._s_dfe)
            flt = np.einsum("bk,ckmn->bcmn", taps, self._s_float) if self._fw else None
            a = amp[:, None, None]
            rx2 = self._sigma_rx2[None, :, None]
        else:
            h0 = np.einsum("bk,bkm->bm", taps, self._s_h0[idx])
            tot2 = np.einsum("bml,bl->bm", np.einsum("bk,bmkl->bml", taps, self._g[idx]), taps)
            hj2 = np.einsum("bml,bl->bm", np.einsum("bk,bmkl->bml", taps, self._gj[idx]), taps)
            near = np.einsum("bk,bkmn->bmn", taps, self._s_near[idx])
            dfe = np.einsum("bk,bkmn->bmn", taps, self._s_dfe[idx])
            flt = np.einsum("bk,bkmn->bmn", taps, self._s_float[idx]) if self._fw else None
            a = amp[:, None]
            rx2 = self._sigma_rx2[idx][:, None]
        h0 = h0 * a
        tot2 = np.maximum(tot2, 0.0) * a**2
        hj2 = np.maximum(hj2, 0.0) * a**2
        isi2 = tot2 - h0**2
        nb_all = len(self._b_max)
        if fixed is not None:
            fixed = fixed[:, None, :]  # (B, 1, nb + fw): the same amounts at every phase
        if dfe.shape[-1]:
            dfe = dfe * a[..., None]
            if fixed is not None:
                res = dfe - fixed[..., :nb_all]
            else:
                res = eqz.dfe_zero_forcing(h0, dfe, self._b_min, self._b_max)
            isi2 = isi2 - np.sum(dfe**2, axis=-1) + np.sum(res**2, axis=-1)
        if flt is not None:
            flt = flt * a[..., None]
            if fixed is not None:
                res = flt - fixed[..., nb_all:]
            else:
                groups, per, _, bmax = self._float
                res = eqz.floating_dfe_residual(h0, flt, groups, per, bmax)
            isi2 = isi2 - np.sum(flt**2, axis=-1) + np.sum(res**2, axis=-1)
        isi2 = np.maximum(isi2, 0.0)
        # peak distortion of the N_PEAK largest near cursors (after the DFE), Gaussian for the rest
        near = near * a[..., None]
        npost = len(self._near_post)
        nb = min(len(self._b_max), npost)
        if nb:
            k0 = near.shape[-1] - npost
            if fixed is not None:
                near[..., k0:k0 + nb] = near[..., k0:k0 + nb] - fixed[..., :nb]
            else:
                near[..., k0:k0 + nb] = eqz.dfe_zero_forcing(h0, near[..., k0:k0 + nb], self._b_min[:nb],
                                                             self._b_max[:nb])
        big = -np.sort(-np.abs(near), axis=-1)[..., :N_PEAK]
        pd = np.sum(big, axis=-1) * float(np.max(np.abs(self.levels)))
        rest2 = np.maximum(isi2 - np.sum(big**2, axis=-1), 0.0)
        tx2 = sx2 * 10 ** (-self._tx.snr_db / 10.0) * tot2  # 93A-30
        rj2 = sx2 * nz.sigma_rj_ui**2 * hj2  # 93A-31/32 (Gaussian part)
        add = nz.a_dd_ui * math.sqrt(sx2) * np.sqrt(hj2)  # dual-Dirac amplitude
        g2 = tx2 + rj2 + rx2  # + 93A-35 RX noise
        q = float(q_factor(ber))
        sig = np.sqrt(sx2 * rest2 + g2 + xt2)
        eh = np.min(self.spacing) * h0 - 2.0 * (pd + q * sig + add)
        return {"eh": eh, "h0": h0, "tx2": tx2, "rj2": rj2, "rx2": np.broadcast_to(rx2, tx2.shape),
                "g2": g2, "add": add, "pd": pd, "rest2": rest2}

    def _adapt_scores(self, taps: np.ndarray, amp: np.ndarray, ber: float) -> np.ndarray:
        """Stage-A eye height (V), best phase, of every RX setting for each row: (B, C), the ranking
        CTLE adaptation uses. Every stage-A term except the RX noise and the crosstalk is proportional
        to a power of the TX amplitude, so the tap-dependent part is computed once per distinct TX FFE
        at unit amplitude (once for all ``rx_amp`` codes of a module pre/post setting) and then scaled:
        eh = a (d h0 - 2 (pd + A_DD)) - 2 Q sqrt(a^2 (sigma_X^2 ISI^2 + sigma_TX^2 + sigma_RJ^2)
        + sigma_RX^2 + sigma_XT^2), the same as ``_stage_a`` at amplitude a up to rounding."""
        uniq, inv = np.unique(taps, axis=0, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        C, M = len(self._rx.settings), self.M
        lin = np.empty((len(uniq), C, M))
        quad = np.empty((len(uniq), C, M))
        per = C * M * max(len(self._b_max) + self._fw, 1) * len(self._tx.offsets)
        chunk = max(1, int(4_000_000 // per))
        for s in range(0, len(uniq), chunk):
            u = uniq[s:s + chunk]
            a = self._stage_a(u, np.ones(len(u)), None, np.zeros((len(u), 1, 1)), ber)
            lin[s:s + chunk] = np.min(self.spacing) * a["h0"] - 2.0 * (a["pd"] + a["add"])
            quad[s:s + chunk] = self.sigma_x2 * a["rest2"] + a["tx2"] + a["rj2"]
        q2 = 2.0 * float(q_factor(ber))
        rx2 = self._sigma_rx2[None, :, None]
        out = np.empty((len(taps), C))
        step = max(1, int(2_000_000 // (C * M)))
        for s in range(0, len(taps), step):
            a = amp[s:s + step, None, None]
            r = inv[s:s + step]
            var = a**2 * quad[r] + rx2 + self._xt2_approx(amp[s:s + step])
            out[s:s + step] = (a * lin[r] - q2 * np.sqrt(var)).max(axis=-1)
        return out

    def _xtalk(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Crosstalk cursors (B, A * n_out) at each aggressor's worst phase (max power, 93A.1.7); the
        power per phase of a FEXT aggressor is the quadratic form c^T G_a c of the victim's TX FFE taps."""
        if not self._aggr:
            return np.zeros((len(taps), 0))
        out = []
        rows = np.arange(len(taps))
        for (kind, a_amp, stack), gram in zip(self._aggr, self._aggr_gram):
            if kind == "FEXT":
                pw = np.einsum("bml,bl->bm", np.einsum("bk,bmkl->bml", taps, gram[idx]), taps)
                j = np.argmax(pw, axis=-1)
                x = np.einsum("bk,bkn->bn", taps, stack[idx, :, j, :]) * (amp * a_amp)[:, None]
            else:
                j = np.argmax(gram[idx], axis=-1)
                x = stack[idx, 0, j, :] * a_amp
            out.append(x[rows] if x.ndim == 2 else x)
        return np.concatenate(out, axis=-1)

    def _xt2_approx(self, amp: np.ndarray) -> np.ndarray:
        """Crosstalk variance per (row, setting, 1) without the TX FFE (for CTLE selection only)."""
        if not self._aggr:
            return np.zeros((len(amp), 1, 1))
        tot = np.zeros((len(amp), len(self._rx.settings)))
        for kind, a_amp, stack in self._aggr:
            main = stack[:, list(self._tx.offsets).index(0)] if kind == "FEXT" else stack[:, 0]
            pw = np.max(np.sum(main**2, axis=-1), axis=-1)  # (C,)
            scale = (amp * a_amp) ** 2 if kind == "FEXT" else np.full(len(amp), a_amp**2)
            tot += scale[:, None] * pw[None, :]
        return (self.sigma_x2 * tot)[:, :, None]

    def _stage_b(self, h0: np.ndarray, res: np.ndarray, g2: np.ndarray, add: np.ndarray, xt: np.ndarray,
                 ber: float, p_com: float | None = None) -> dict[str, np.ndarray]:
        """Exact interference distribution at the sampling phase: EH per eye, A_ni, COM, BER estimate.

        Eye heights at the one-sided tail ``ber``; COM's A_ni at ``p_com`` (COM mode: DER_0, 93A.1.7),
        default ``ber``."""
        cur = np.concatenate([res, xt], axis=-1) if xt.shape[-1] else res
        big, rest2 = split_exact(cur, self.k_exact)
        sigma = np.sqrt(g2 + self.sigma_x2 * rest2)
        half = np.maximum(self.spacing[None, :] * h0[:, None] / 2.0, 0.0)
        q = np.empty(len(h0))
        q_com = q if p_com is None or p_com == ber else np.empty(len(h0))
        tails = np.empty(half.shape)
        for rows, pdf in grouped_pdfs(big, sigma, add, self.levels, h0):
            q[rows] = pdf.quantile(ber)
            if q_com is not q:
                q_com[rows] = pdf.quantile(p_com)
            tails[rows] = pdf.tail_at(half[rows])  # P(Y > d_e h0 / 2): one side of one eye
        eh = self.spacing[None, :] * h0[:, None] - 2.0 * q[:, None]  # (R, n_eyes)
        n_lv = len(self.levels)
        ser = np.clip(2.0 * np.sum(tails, axis=-1) / n_lv, 0.0, 1.0 - 1.0 / n_lv)
        ser = np.where(h0 <= 0, 1.0 - 1.0 / n_lv, ser)
        a_s = np.min(self.spacing) * h0 / 2.0  # = R_LM h0 / (L - 1) for PAM4 (93A-1 A_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            com = 20.0 * np.log10(np.maximum(a_s, 1e-15) / np.maximum(q_com, 1e-15))  # 93A-1
        com = np.clip(np.where(a_s <= 0, -COM_CAP_DB, com), -COM_CAP_DB, COM_CAP_DB)
        return {"eh": eh, "q": q, "q_com": q_com, "ser": ser, "com": com, "sigma": sigma}

    def _exact_width(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, j: np.ndarray, approx: np.ndarray,
                     eh_min: np.ndarray, fixed: np.ndarray | None, a: dict, xt: np.ndarray, ber: float) -> np.ndarray:
        """Eye width (UI) from the exact eye height (stage B, DFE held) at the phases that decide it.

        The stage-A curve (``approx``, anchored to the exact height at ``j``) locates the two edges; the
        exact height is then computed at the two phases that bracket every crossing of the current curve,
        which is updated and searched again until no new phase is needed.
        Stage A alone is 12-23 % narrow against the bit-by-bit simulator (its Gaussian ISI tail is
        pessimistic away from the centre); the exact edges agree within 4 % (tests/eye)."""
        B, M = approx.shape
        rows = np.arange(B)
        curve = approx + (eh_min - approx[rows, j])[:, None]
        known = np.zeros((B, M), dtype=bool)
        known[rows, j] = True
        curve[rows, j] = eh_min
        live = eh_min > 0
        xt2 = xt
        for _ in range(M):  # each round only adds phases next to a crossing: a few rounds in practice
            want = np.zeros((B, M), dtype=bool)
            act = np.nonzero(live & ~np.all(curve > 0, axis=1))[0]
            for step in (1, -1):
                # last open phase walking from j in direction ``step`` (vectorized over rows)
                walk = (j[act, None] + step * np.arange(1, M)[None, :]) % M
                shut = curve[act[:, None], walk] <= 0
                k = j[act] + step * np.argmax(shut, axis=1)  # shut somewhere: act rows are not all open
                for q in (0, 1):  # the two phases that bracket the crossing
                    want[act, (k + q * step) % M] = True
            want &= ~known
            if not want.any():
                break
            rr, pp = np.nonzero(want)
            v = np.einsum("bk,bkn->bn", taps[rr], self._stack[idx[rr], :, pp, :]) * amp[rr, None]
            h0, res = self._residual(v, None if fixed is None else fixed[rr])
            add = a["add"][rr, pp]
            if self.com_mode:  # per-cursor dual-Dirac jitter, as at the sampling phase (93A.1.7)
                res = np.concatenate([res, self.profile.noise.a_dd_ui * self._slope_cursors(
                    taps[rr], amp[rr], idx[rr], pp)], axis=-1)
                add = np.zeros_like(add)
            curve[rr, pp] = self._exact_eh_min(h0, res, a["g2"][rr, pp], add, xt2[rr], ber)
            known[rr, pp] = True
        return self._width(curve, j, np.zeros(B), eh_min)

    def _exact_eh_min(self, h0: np.ndarray, res: np.ndarray, g2: np.ndarray, add: np.ndarray, xt: np.ndarray,
                      ber: float) -> np.ndarray:
        """The exact eye height (V, smallest eye) of ``_stage_b`` without its SER and COM by-products."""
        cur = np.concatenate([res, xt], axis=-1) if xt.shape[-1] else res
        big, rest2 = split_exact(cur, self.k_exact)
        sigma = np.sqrt(g2 + self.sigma_x2 * rest2)
        q = np.empty(len(h0))
        for rows, pdf in grouped_pdfs(big, sigma, add, self.levels, h0):
            q[rows] = pdf.quantile(ber)
        return np.min(self.spacing) * h0 - 2.0 * q

    def _width(self, eh_curve: np.ndarray, j: np.ndarray, offset: np.ndarray, eh_exact_min: np.ndarray) -> np.ndarray:
        """Eye width (UI): the open run around phase ``j`` of the (circular) anchored profile."""
        M = self.M
        curve = eh_curve + offset[:, None]
        out = np.zeros(len(curve))
        for r in range(len(curve)):
            c = curve[r]
            if eh_exact_min[r] <= 0:
                continue
            if np.all(c > 0):
                out[r] = 1.0
                continue
            w = 0.0
            for step in (1, -1):
                k = int(j[r])
                for _ in range(M):
                    a, b = c[k % M], c[(k + step) % M]
                    if b > 0:
                        w += 1.0
                        k += step
                        continue
                    w += a / (a - b) if a > 0 else 0.0
                    break
            out[r] = min(w / M, 1.0)
        return out

    def _run(self, points: Sequence[Mapping[str, float]], ber: float) -> dict:
        """Parse, adapt the RX setting where not given, and evaluate."""
        taps, amp, idx, clean = self._parse(points)
        adapt = np.nonzero(idx < 0)[0]
        if len(adapt):
            # candidates: the N_ADAPT_CANDIDATES best RX settings by the stage-A eye (max over phases),
            # then the best of those by the exact eye height
            C = len(self._rx.settings)
            n_c = min(N_ADAPT_CANDIDATES, C)
            score = self._adapt_scores(taps[adapt], amp[adapt], ber)
            cand = np.argsort(-score, axis=-1)[:, :n_c]
            rep = np.repeat(adapt, n_c)
            trial = self._core(taps[rep], amp[rep], cand.reshape(-1), ber, width=False)
            best = np.argmax(trial["eh_min"].reshape(len(adapt), n_c), axis=-1)
            idx = idx.copy()
            idx[adapt] = cand[np.arange(len(adapt)), best]
            if len(adapt) == len(idx):
                # every row adapted: its final evaluation is the winning trial row (rows are independent)
                out = _take_rows(trial, np.arange(len(adapt)) * n_c + best, len(rep))
                out["ew"] = self._eye_width(out, ber)
                out["points"] = clean
                return out
        out = self._core(taps, amp, idx, ber)
        out["points"] = clean
        return out

    def _core(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, ber: float, *, width: bool = True) -> dict:
        """Stage A (all phases) + stage B (best phase) for rows with known RX settings ``idx``."""
        xt = self._xtalk(taps, amp, idx)
        a = self._stage_a(taps, amp, idx, (self.sigma_x2 * np.sum(xt**2, axis=-1))[:, None], ber)
        B = len(idx)
        # best phase by the stage-A eye; ties -> nearest the pulse peak
        j = np.argmax(a["eh"] - 1e-12 * np.abs(np.arange(self.M) - self.M // 2)[None, :], axis=-1)
        if self.sampling == "mm":
            j = self._mm_phase(taps, amp, idx, j)
        rows = np.arange(B)
        v = self._cursors(taps, amp, idx, j)  # cursors at phase j
        h0, res = self._residual(v)
        if self.com_mode:
            # 93A.1.7 (eqtune issue 16): the dual-Dirac jitter acts per cursor, +-A_DD h_J(n) with the
            # symbol of cursor n, so it joins the ISI cursors (exact PDF) instead of one +-A_DD |h_J| term
            jit = self.profile.noise.a_dd_ui * self._slope_cursors(taps, amp, idx, j)
            b = self._stage_b(h0, np.concatenate([res, jit], axis=-1), a["g2"][rows, j], np.zeros(B), xt, ber,
                              p_com=self.der0)
        else:
            b = self._stage_b(h0, res, a["g2"][rows, j], a["add"][rows, j], xt, ber)
        eh_min = b["eh"].min(axis=-1)
        # eye width: the horizontal profile with the DFE held at the taps it adapted at phase j (a real
        # receiver's taps do not follow the probe phase; re-adapting them per phase overstates the width
        # by 25-65 % on DFE links against the bit-by-bit simulator)
        with np.errstate(divide="ignore", invalid="ignore"):
            vec = 20.0 * np.log10(np.min(self.spacing) * h0 / eh_min)
        vec = np.where((eh_min > 0) & np.isfinite(vec), vec, VEC_CLOSED_DB)
        out = {"taps": taps, "amp": amp, "idx": idx, "v": v, "j": j, "a": a, "b": b, "eh_min": eh_min,
               "vec": vec, "xt": xt, "h0": h0}
        if width:
            out["ew"] = self._eye_width(out, ber)
        return out

    def _cursors(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Equalized cursors (B, n_out) in V of rows ``(taps, amp, idx)`` sampled at phase ``j`` (B,)."""
        return np.einsum("bk,bkn->bn", taps, self._stack[idx, :, j, :]) * amp[:, None]

    def _slope_cursors(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, j: np.ndarray) -> np.ndarray:
        """h_J(n) = (h(t_s + nT + T/M) - h(t_s + nT - T/M)) M / 2 in V/UI (93A-28) at phase ``j`` (B, n_out);
        phase M is phase 0 of the next cursor, phase -1 phase M-1 of the previous one."""
        M = self.M
        nxt = self._cursors(taps, amp, idx, (j + 1) % M)
        prv = self._cursors(taps, amp, idx, (j - 1) % M)
        w = j + 1 >= M
        nxt[w] = np.concatenate([nxt[w][:, 1:], np.zeros((int(w.sum()), 1))], axis=-1)
        w = j - 1 < 0
        prv[w] = np.concatenate([np.zeros((int(w.sum()), 1)), prv[w][:, :-1]], axis=-1)
        return (nxt - prv) * (M / 2.0)

    def _mm_phase(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, fallback: np.ndarray) -> np.ndarray:
        """Sampling phase by the Mueller-Muller criterion of 93A.1.6 (93A-25 with 93A-26):
        h(t_s - T) = h(t_s + T) - b(1) h(t_s), b(1) = h(t_s + T)/h(t_s) clipped to [b_min(1), b_max(1)]
        (0 without a DFE), searched over the +-0.5 UI window of phases around the pulse peak.

        As MATLAB COM 3.70 (transcribed in PyChOpMarg 3.4.0 utility/probability.py ``loc_curs``): phases
        with |residual| < MM_EPS_V count as exact solutions and the last of them at or before the peak
        wins (else the first after it); without any, the phase of the smallest |residual|. Phases with a
        non-positive cursor are skipped; a row where every phase has one keeps ``fallback``."""
        h = np.einsum("bk,bkmn->bmn", taps, self._s_mm[idx]) * amp[:, None, None]  # (B, M, 3)
        hm, h0, hp = h[..., 0], h[..., 1], h[..., 2]
        ok = h0 > 0
        if len(self._b_max):
            b1 = np.clip(hp / np.where(ok, h0, 1.0), self._b_min[0], self._b_max[0])
        else:
            b1 = np.zeros_like(h0)
        res = np.abs(hm - (hp - b1 * h0))
        ph = np.arange(self.M)[None, :]
        peak = np.argmax(h0, axis=-1)[:, None]
        exact = ok & (res < MM_EPS_V)
        pri = np.where(exact & (ph <= peak), 4.0 * self.M + ph,
                       np.where(exact, 2.0 * self.M - ph, np.where(ok, -res, -np.inf)))
        j = np.argmax(pri, axis=-1)
        return np.where(ok.any(axis=-1), j, fallback)

    def _eye_width(self, r: dict, ber: float) -> np.ndarray:
        """Eye width (UI) of evaluated rows ``r`` (a ``_core`` result): the horizontal profile with the
        DFE held at the taps it adapted at the sampling phase (a real receiver's taps do not follow the
        probe phase; re-adapting them per phase overstated the width by 25-65 % on DFE links against the
        bit-by-bit simulator), its edges from the exact eye height (``_exact_width``)."""
        taps, amp, idx, xt = r["taps"], r["amp"], r["idx"], r["xt"]
        fixed = self._feedback(r["v"]) if len(self._b_max) + self._fw else None
        if fixed is not None:
            held = self._stage_a(taps, amp, idx, (self.sigma_x2 * np.sum(xt**2, axis=-1))[:, None], ber,
                                 fixed=fixed)["eh"]
        else:
            held = r["a"]["eh"]
        return self._exact_width(taps, amp, idx, r["j"], held, r["eh_min"], fixed, r["a"], xt, ber)

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
        def cat(fn):
            return np.concatenate([fn(r) for r in parts]) if parts else np.zeros(0)
        st = self._rx.settings
        is_host = self._rx.kind == "host"
        return BatchResult(
            eye_height_min_mv=cat(lambda r: r["eh_min"] * 1e3),
            eye_height_mv=(np.concatenate([r["b"]["eh"] * 1e3 for r in parts]) if parts
                           else np.zeros((0, len(self.spacing)))),
            com_db=cat(lambda r: r["b"]["com"]), eye_width_ui=cat(lambda r: r["ew"]),
            vec_db=cat(lambda r: r["vec"]), ber_estimate=cat(lambda r: r["b"]["ser"]),
            sample_phase_ui=cat(lambda r: (r["j"] - self.M // 2) / self.M),
            ctle_gdc=cat(lambda r: st[r["idx"], 0] if is_host else np.full(len(r["idx"]), np.nan)),
            ctle_gdc2=cat(lambda r: st[r["idx"], 1] if is_host else np.full(len(r["idx"]), np.nan)),
            points=[self._eq_used(r, i) for r in parts for i in range(len(r["idx"]))], ber_target=ber)

    def _eq_used(self, r: dict, i: int) -> dict[str, float]:
        eq = dict(r["points"][i])
        eq.update(self._rx.labels[int(r["idx"][i])])
        return eq

    def _result(self, r: dict, i: int, ber: float) -> EyeResult:
        b, a = r["b"], r["a"]
        j = int(r["j"][i])
        p_phase = r["v"][i]
        eh = (b["eh"][i] * 1e3).tolist()
        eh_min = float(r["eh_min"][i])
        return EyeResult(
            eye_height_mv=eh, eye_height_min_mv=eh_min * 1e3, eye_width_ui=float(r["ew"][i]),
            eye_width_ps=float(r["ew"][i]) * self.ui_s * 1e12, vec_db=float(r["vec"][i]), com_db=float(b["com"][i]),
            sample_phase_ui=(j - self.M // 2) / self.M, ber_target=ber, ber_estimate=float(b["ser"][i]),
            modulation=self.modulation, baud_gbd=self.baud_gbd, eq=self._eq_used(r, i), closed=bool(eh_min <= 0),
            direction=self.direction, cursor_mv=float(r["h0"][i]) * 1e3,
            noise_sigma_mv=float(np.sqrt(a["g2"][i, j])) * 1e3, a_ni_mv=float(b["q"][i]) * 1e3,
            dfe_taps=self._dfe_taps(p_phase).tolist(), sampling=self.sampling,
            com_probability=self.der0 if self.com_mode else ber, _engine=self)

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
        p = self._full_p(r["taps"], r["amp"], r["idx"])[0]  # (M, n_out) -> time order: index = n * M + j
        pulse = p.T.reshape(-1)
        start = int(self._ipk_c[r["idx"][0]]) - M // 2 - M * self.n_pre
        t = (start + np.arange(pulse.size)) * self.dt_s
        return PulseResponse(t, pulse, int(self.n_pre * M + r["j"][0]), M)

    def single_bit_response(self, point: Mapping[str, float] | None = None) -> PulseResponse:
        """Alias of ``pulse_response(point)`` (COM calls the equalized pulse the single-bit response)."""
        return self.pulse_response(point)

    def noise_sigma_v(self, point: Mapping[str, float] | None = None) -> NoiseBudget:
        """The Gaussian noise / jitter budget at the point's sampling phase (see ``NoiseBudget``)."""
        r = self._run([dict(point or {})], self.ber)
        a, j = r["a"], int(r["j"][0])
        nz = self.profile.noise
        return NoiseBudget(sigma_tx_v=float(np.sqrt(a["tx2"][0, j])), sigma_rj_v=float(np.sqrt(a["rj2"][0, j])),
                           sigma_rx_v=float(np.sqrt(a["rx2"][0, j])), a_dd_v=float(a["add"][0, j]),
                           sigma_gauss_v=float(np.sqrt(a["g2"][0, j])), sigma_rj_ui=nz.sigma_rj_ui,
                           a_dd_ui=nz.a_dd_ui, sigma_x=math.sqrt(self.sigma_x2), levels=tuple(self.levels.tolist()))

    def _all_phases(self, point: Mapping[str, float] | None, ber: float) -> tuple[dict, np.ndarray, list]:
        """Exact interference PDFs at every phase of one point (detail path for bathtubs and plots):
        (run dict, cursor per phase (M,), per phase (y, pdf, (InterferencePdf, row), quantile at ber))."""
        r = self._run([dict(point or {})], ber)
        a = r["a"]
        M = self.M
        p = self._full_p(r["taps"], r["amp"], r["idx"])[0]  # (M, n)
        # the DFE keeps the taps it adapted at the sampling phase at every probed phase
        fixed = self._feedback(r["v"][0])[None, :] if len(self._b_max) + self._fw else None
        h0, res = self._residual(p, None if fixed is None else np.repeat(fixed, self.M, axis=0))
        xt = np.repeat(r["xt"], M, axis=0)
        add = a["add"][0]
        if self.com_mode:  # per-cursor dual-Dirac jitter, as in stage B (93A.1.7)
            res = np.concatenate([res, self.profile.noise.a_dd_ui * self._slope(p)], axis=-1)
            add = np.zeros_like(add)
        cur = np.concatenate([res, xt], axis=-1) if xt.shape[-1] else res
        big, rest2 = split_exact(cur, self.k_exact)
        sigma = np.sqrt(a["g2"][0] + self.sigma_x2 * rest2)
        rows: list = [None] * M
        for idx, pdf in grouped_pdfs(big, sigma, add, self.levels, h0):
            q = pdf.quantile(ber)
            for k, j in enumerate(idx):
                rows[j] = (pdf.y[k], pdf.pdf[k], (pdf, k), float(q[k]))
        return r, h0, rows

    def _phases_ui(self) -> list[float]:
        return ((np.arange(self.M) - self.M // 2) / self.M).tolist()

    def bathtubs(self, point: Mapping[str, float] | None = None, *, ber: float | None = None) -> dict:
        """Horizontal bathtub (symbol error probability vs sampling phase, exact at every phase) and
        vertical bathtubs at the chosen phase: per eye, P(Y > hw + v) + P(Y > hw - v) vs the threshold
        offset v from the eye's center (hw = half the level spacing), so the bathtub crosses ``ber`` at the
        eye-height edges: its opening at ``ber`` equals ``eye_height_mv``."""
        ber = self.ber if ber is None else check_ber(ber)
        r, h0, rows = self._all_phases(point, ber)
        n_lv = len(self.levels)

        def tail(j: int, y: np.ndarray) -> np.ndarray:
            pdf, k = rows[j][2]
            return pdf.row_tail(k, y)

        ser = np.array([2.0 * np.sum(tail(j, np.maximum(self.spacing * h0[j] / 2.0, 0.0))) / n_lv
                        for j in range(self.M)])
        j = int(r["j"][0])
        centers = (self.levels[:-1] + self.levels[1:]) / 2 * h0[j]
        hw = self.spacing * h0[j] / 2
        offs = np.linspace(-np.max(np.abs(hw)), np.max(np.abs(hw)), 201)
        vert = []
        for e in range(len(self.spacing)):
            # threshold at center + v: the lower level errs with P(Y > hw + v), the upper with P(Y > hw - v);
            # their sum crosses p where the eye-height definition (one-sided tail = p) puts the eye edge
            p = tail(j, hw[e] + offs) + tail(j, hw[e] - offs)
            vert.append({"center_mv": float(centers[e] * 1e3), "ber": p.tolist()})
        return {"phase_ui": self._phases_ui(), "horizontal_ser": np.clip(ser, 0.0, 1.0).tolist(),
                "vertical_offset_mv": (offs * 1e3).tolist(), "vertical": vert, "ber_target": ber}

    def contour(self, point: Mapping[str, float] | None = None, *, ber: float | None = None) -> dict:
        """Eye contour at ``ber``: per phase and eye, lower and upper edge (mV; lower > upper = closed)."""
        ber = self.ber if ber is None else check_ber(ber)
        r, h0, rows = self._all_phases(point, ber)
        q = np.array([row[3] for row in rows])
        lo = self.levels[None, :-1] * h0[:, None] + q[:, None]
        hi = self.levels[None, 1:] * h0[:, None] - q[:, None]
        return {"phase_ui": self._phases_ui(), "lower_mv": (lo * 1e3).tolist(), "upper_mv": (hi * 1e3).tolist(),
                "ber_target": ber, "sample_phase_ui": (int(r["j"][0]) - self.M // 2) / self.M}

    def density(self, point: Mapping[str, float] | None = None, n_v: int = 256) -> dict:
        """Statistical eye image: received-signal PDF per phase on a common voltage grid (for plots)."""
        r, h0, rows = self._all_phases(point, self.ber)
        vmax = 1.3 * np.max(np.abs(h0)) + 1e-9
        v = np.linspace(-vmax, vmax, n_v)
        img = np.zeros((self.M, n_v))
        for j in range(self.M):
            yy, pdf, _, _ = rows[j]
            for lv in self.levels:
                img[j] += np.interp(v - lv * h0[j], yy, pdf, left=0, right=0) / len(self.levels)
        return {"phase_ui": self._phases_ui(), "v_mv": (v * 1e3).tolist(), "pdf": img.tolist()}


def _take_rows(d: dict, rows: np.ndarray, n: int) -> dict:
    """Rows ``rows`` of every array with ``n`` rows in ``d`` (nested dicts too); other values as they are."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = _take_rows(v, rows, n)
        elif isinstance(v, np.ndarray) and v.ndim and v.shape[0] == n:
            out[k] = v[rows]
        else:
            out[k] = v
    return out


def _peak_index(pulse: np.ndarray) -> int:
    """Index of the pulse peak (the middle of a flat top, e.g. an ideal lossless pulse)."""
    mx = float(np.max(pulse))
    top = np.nonzero(pulse >= mx - 1e-9 * abs(mx))[0]
    return int(round(float(np.mean(top)) + 0.25)) if len(top) > 1 else int(np.argmax(pulse))


def check_ber(ber: float) -> float:
    """Validate a target BER: a number in (0, 0.5)."""
    try:
        b = float(ber)
    except (TypeError, ValueError):
        raise InputError(f"BER {ber!r} is not a number: give e.g. 1e-6") from None
    if not (0.0 < b < 0.5) or not math.isfinite(b):
        raise InputError(f"BER {ber!r} is outside (0, 0.5): give a target such as 1e-6 (1e-3..1e-15)")
    return b
