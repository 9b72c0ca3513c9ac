"""Per-link preparation of the eye engine: everything that does not depend on the EQ point.

Once per engine (channel x direction x profile): the TX/RX descriptions of the link, the FFT grid,
the channel (with 802.3ck packages in the serdes direction, 93A-18 cascade, 93A.1.2), the TX rise-time and
Butterworth filters, the receiver EQ grid (host CTLE, 93A-22 / 802.3ck; or module Tx-input peaking
codes), the RX FFE adapted per setting, the unequalized pulses per RX setting stacked into cursor
matrices with the row shifts the TX FFE needs (93A-21), the aggressor pulses and the point-independent
Gram matrices of stage A. ``LinkPreparation`` is a mixin of ``eqtune.eye.engine.EyeEngine``: its
methods read the engine's attributes set in ``EyeEngine.__init__`` (``profile``, ``channel``,
``direction``, ``M``, ``baud_gbd``, ``ui_s``, ``dt_s``, ``sigma_x2``, ``_knobs``, ``_b_min``/``_b_max``,
``_float``) and set the prepared arrays (``_stack``, ``_ipk_c``, ``_sigma_rx2``, ``_aggr``, ...).
"""

from __future__ import annotations

import math

import numpy as np

from eqtune.arrays import ComplexArray, FloatArray, IntArray
from eqtune.channel.model import Aggressor as ChannelAggressor
from eqtune.channel.package import cascade, com_package_sparams, flip_ports
from eqtune.eye.state import EngineState, RxSide, TxSide
from eqtune.serdes import filters
from eqtune.serdes.knobs import CTLE_GDC, CTLE_GDC2, RX_AMP, TX_EQ, TX_TAP_OFFSETS
from eqtune.serdes.knobs import MODULE_RX_OUT_KNOBS as MODULE_TX_KNOBS

TRUNCATE_REL = 1e-3  # COM: impulse response truncated at 1e-3 of its peak (MATLAB COM 3.70)
N_PRE_UI = 6  # precursors kept in the cursor window
MAX_PRE_UI_COM = 64  # COM mode: cap of the pre-cursor window (the truncated pulse's start)
RX_FFE_SPAN_UI = 30  # post-cursors an RX FFE adaptation looks at
MAX_POST_UI = 300  # cap of the post-cursor window
MIN_PERIOD_UI = 1024  # time-aliasing period kept when the frequency grid is decimated
N_NEAR = 3  # stage A: cursors on each side of the main one checked as peak distortion
PULSE_CHUNK = 8  # RX settings per pass when preparing the pulses (cache-sized working set)
AGGR_MARGIN_UI = 32  # aggressor pulses kept this far beyond their cursor window (the peak may move per setting)


class LinkPreparation(EngineState):
    """EQ-point-independent set-up of one link (mixin of ``EyeEngine``, see the module docstring)."""

    # ------------------------------------------------------------------ set-up
    def _make_tx(self) -> TxSide:
        p = self.profile
        if self.direction == "host_rx":
            m = p.module
            return TxSide("module", MODULE_TX_KNOBS, np.array([-1, 0, 1]), m.driver_rise_time_ps, m.driver_snr_db,
                       m.rx_amp_swing_mv_ppd(int(self._knobs[RX_AMP].default)) / 2000.0)
        names = tuple(sorted(p.tx.taps, key=lambda n: TX_TAP_OFFSETS[n]))
        offs = sorted([TX_TAP_OFFSETS[n] for n in names] + [0])
        return TxSide("host", names, np.array(offs), p.tx.rise_time_ps, p.noise.snr_tx_db, p.tx.amplitude_v)

    def _make_rx(self) -> RxSide:
        p = self.profile
        if self.direction == "module_rx":
            m = p.module
            codes = np.arange(m.tx_eq_max + 1, dtype=float)
            gdc = filters.peaking_ctle_gdc_db(codes * m.tx_eq_db_per_code, self.baud_gbd * 1e9 / 2,
                                              fz_hz=m.tx_input_fz_ghz * 1e9, fp1_hz=m.tx_input_fp1_ghz * 1e9,
                                              fp2_hz=m.tx_input_fp2_ghz * 1e9)
            settings = np.stack([gdc, np.zeros_like(gdc)], axis=-1)
            return RxSide("module", settings, tuple({TX_EQ: float(c)} for c in codes), m.tx_input_eta0_v2_per_ghz)
        c = p.rx.ctle
        g1 = np.asarray(c.gdc_db.values())
        g2 = np.asarray(c.gdc2_db.values()) if c.gdc2_db is not None else np.zeros(1)
        grid = np.stack(np.meshgrid(g1, g2, indexing="ij"), axis=-1).reshape(-1, 2)
        labels = tuple({CTLE_GDC: float(a), **({CTLE_GDC2: float(b)} if c.gdc2_db is not None else {})}
                       for a, b in grid)
        return RxSide("host", grid, labels, p.noise.eta0_v2_per_ghz)

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
        period >= ``period_ui`` (MIN_PERIOD_UI by default; the pulse window is far shorter), and the FFT
        length."""
        df = self.channel.df_hz
        target = self.baud_gbd * 1e9 / self.period_ui
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
        ret: np.ndarray = out
        return ret

    def _packaged_s21(self, sdd21: np.ndarray, sdd11: np.ndarray | None, sdd22: np.ndarray | None,
                      tx_role: str) -> np.ndarray:
        """S21 on the channel grid of TX-side package (``tx_role``: "tx", "fext" or "next") -> channel
        -> RX package (93A-18 cascade; 93A.1.2: the victim through the TX and RX packages, a FEXT aggressor
        through the FEXT package, a NEXT aggressor through the NEXT package, both then through the victim's
        RX package). The package lengths of the chosen case come from the profile (802.3ck sheets)."""
        fc = np.asarray(self.channel.freqs_hz, dtype=float)
        case, prof = self.package_case, self.profile
        s = np.zeros((len(fc), 2, 2), dtype=complex)
        s[:, 1, 0] = s[:, 0, 1] = sdd21
        if sdd11 is not None:
            s[:, 0, 0] = sdd11
        if sdd22 is not None:
            s[:, 1, 1] = sdd22
        board = prof.host_board  # between each package and the channel when the sheet includes host boards
        tx = com_package_sparams(fc, case=case, side="tx", zp1_mm=prof.package_zp1_mm(tx_role, case), board=board)
        rx = flip_ports(com_package_sparams(fc, case=case, side="rx", zp1_mm=prof.package_zp1_mm("rx", case),
                                            board=board))
        # R_d = R_0 = 50 ohm: the voltage transfer function is S21 of the cascade (93A-19 with Gamma = 0)
        return cascade(cascade(tx, s), rx)[:, 1, 0]

    def _victim_h(self, f: np.ndarray) -> np.ndarray:
        """Channel (with 802.3ck packages in the serdes direction, 93A-18 cascade) on the FFT grid."""
        ch = self.channel
        if self.direction == "serdes" and self.package_case:
            return self._interp(self._packaged_s21(ch.sdd21, ch.sdd11, ch.sdd22, "tx"), f)
        return self._interp(ch.sdd21, f)

    def _aggressor_h(self, ag: ChannelAggressor, f: FloatArray) -> ComplexArray:
        """An aggressor's coupling on the FFT grid: through its packages in the serdes direction (93A.1.2;
        the aggressor files carry only SDD21 here, so the coupling's own reflections are left out)."""
        if self.direction == "serdes" and self.package_case:
            role = "fext" if ag.kind == "FEXT" else "next"
            return self._interp(self._packaged_s21(ag.sdd21, None, None, role), f)
        return self._interp(ag.sdd21, f)

    def _com_truncated(self, h: np.ndarray, n_fft: int) -> tuple[np.ndarray, int]:
        """COM mode: transfer function ``h`` (n_f,) of a channel with its packages and the T_r and receiver
        filters, with its impulse response cut after the last sample above TRUNCATE_REL of its peak, and that
        sample's index. MATLAB COM truncates this unequalized impulse (s21_to_impulse_DC: "truncate final
        samples smaller than 1e-3 of the peak"; optimize_fom cuts every channel's, aggressors too), then
        applies the CTLE to it and keeps the same length; the samples before the pulse are not touched."""
        imp = np.fft.irfft(h, n_fft)
        mag = np.abs(imp)
        last = int(np.nonzero(mag > TRUNCATE_REL * mag.max())[0][-1]) if mag.max() > 0 else n_fft - 1
        imp[last + 1:] = 0.0
        return np.fft.rfft(imp), last

    def _pulses(self, h: np.ndarray, n_fft: int, truncate: bool = True, cut: int | None = None) -> np.ndarray:
        """Pulse responses (..., n_fft) of transfer functions ``h`` (..., n_f): the impulse (inverse FFT,
        truncated at TRUNCATE_REL of its peak) convolved with a 1-UI box-car (MATLAB COM's
        ``filter(ones(1, samples_per_ui), 1, imp)``). ``truncate=False``: not truncated, or with ``cut`` cut
        after sample ``cut`` (COM mode: the unequalized channel's own truncation, ``_com_truncated``)."""
        M = self.M
        imp = np.fft.irfft(h, n_fft, axis=-1)
        if cut is not None:
            imp[..., cut + 1:] = 0.0
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
        # COM mode (serdes): MATLAB COM's truncation, once, of the unequalized impulse (the CTLE then acts on
        # the truncated one); other directions truncate each equalized impulse at both ends
        com_cut = self.direction == "serdes"
        cut_v: int | None = None
        if com_cut:
            base, cut_v = self._com_truncated(base, n_fft)
        self._h_base = base

        def eq_pulses(h: np.ndarray, cut: int | None) -> np.ndarray:
            return self._pulses(h, n_fft, truncate=False, cut=cut) if com_cut else self._pulses(h, n_fft)

        ref = eq_pulses(base, cut_v)
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
        if self.direction == "serdes" and len(above):
            # COM counts every pre-cursor of the truncated pulse (MATLAB COM 3.70 optimize_fom: sigma_ISI over
            # [precursors; ...]; PyChOpMarg 3.4.0 calc_com: n_pre = curs_uis): the window starts at the first
            # sample above TRUNCATE_REL of the peak (6 UI missed up to 0.06 dB on a 12 in backplane)
            n_pre = int(math.ceil((ipk - above[0]) / self.M)) + 2
            self.n_pre = int(min(max(N_PRE_UI, n_pre), MAX_PRE_UI_COM))
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
        aggr_cut: list[int | None] = [None] * len(aggr_h)
        if com_cut:  # MATLAB COM truncates every channel file's unequalized impulse, aggressors too
            for a, ha in enumerate(aggr_h):
                aggr_h[a], aggr_cut[a] = self._com_truncated(ha, n_fft)
        pulses = np.empty((n_set, n_fft))
        self._ipk_c = np.empty(n_set, dtype=int)
        self._sigma_rx2 = np.empty(n_set)
        self._rx_ffe_w = np.empty((n_set, len(ffe_offs))) if ffe_offs is not None else None
        # each aggressor's pulses are kept only around its peak (the cursor window _stack_rows reads, plus
        # AGGR_MARGIN_UI each side, placed at the first settings' peak): 16 aggressors x 147 KR settings of
        # whole records were 0.64 GB; if the peak over all settings moves out, that aggressor is redone whole
        ag_keep = [self._aggressor_window(ag.kind != "FEXT") for ag in self.channel.aggressors]
        ag_pulses: list[np.ndarray | None] = [None for _ in aggr_h]
        ag_lo = [0 for _ in aggr_h]
        ag_env = [np.zeros(n_fft) for _ in aggr_h]  # max over settings of |pulse|: the aggressor's peak
        for s0 in range(0, n_set, PULSE_CHUNK):
            sl = slice(s0, s0 + PULSE_CHUNK)
            ctle = self._ctle(f, settings[sl])  # (c, n_f)
            p = eq_pulses(base[None, :] * ctle, cut_v)  # (c, n_fft)
            # each RX setting's window is centered on its own pulse peak: the sampling phase is searched
            # within +-0.5 UI of the peak of the CTLE-equalized pulse (where a CDR locks; with an RX FFE,
            # the instant the FFE was adapted for)
            self._ipk_c[sl] = [_peak_index(x) for x in p]
            if ffe_offs is not None:
                assert self._rx_ffe_w is not None and ffe_basis is not None  # made with ffe_offs above
                n2 = eta0 * np.sum(np.abs(ctle * h_r) ** 2, axis=-1) * df_ghz
                w = np.stack([self._rx_ffe_weights(x, ffe_offs, float(v)) for x, v in zip(p, n2)])
                self._rx_ffe_w[sl] = w
                ctle = ctle * np.einsum("ck,kf->cf", w, ffe_basis)
                p = eq_pulses(base[None, :] * ctle, cut_v)
            pulses[sl] = p
            # RX noise through CTLE + Butterworth, 93A-35: sigma_N^2 = eta_0 int |H_ctf H_r|^2 df (f in GHz)
            self._sigma_rx2[sl] = eta0 * np.sum(np.abs(ctle * h_r) ** 2, axis=-1) * df_ghz
            # crosstalk: aggressor pulses through the same RX EQ (93A.1.7 with the victim's TX FFE for FEXT)
            for a, ha in enumerate(aggr_h):
                pa = self._pulses(ha[None, :] * ctle, n_fft, truncate=False, cut=aggr_cut[a])
                np.maximum(ag_env[a], np.abs(pa).max(axis=0), out=ag_env[a])
                kept = ag_pulses[a]
                if kept is None:
                    before, span = ag_keep[a]
                    margin = AGGR_MARGIN_UI * self.M
                    lo = max(int(np.argmax(ag_env[a])) - before - margin, 0)
                    ag_lo[a] = lo
                    kept = ag_pulses[a] = np.empty((n_set, min(lo + span + 2 * margin, n_fft) - lo))
                kept[sl] = pa[:, ag_lo[a]:ag_lo[a] + kept.shape[1]]
        self._stack = self._stack_rows(pulses)  # (C, K, M, n_out)
        del pulses
        self._precompute_forms()
        self._aggr = []
        for a, (ag, env) in enumerate(zip(self.channel.aggressors, ag_env)):
            before, span = ag_keep[a]
            first = int(np.argmax(env)) - before
            kept, lo = ag_pulses[a], ag_lo[a]
            assert kept is not None  # every aggressor was kept in the first chunk
            if not (max(first, 0) >= lo and min(first + span, n_fft) <= lo + kept.shape[1]):
                rx_eq = self._ctle(f, settings)  # the same RX EQ as in the loop above (with the RX FFE)
                if ffe_basis is not None and self._rx_ffe_w is not None:
                    rx_eq = rx_eq * np.einsum("ck,kf->cf", self._rx_ffe_w, ffe_basis)
                kept, lo = self._pulses(aggr_h[a][None, :] * rx_eq, n_fft, truncate=False, cut=aggr_cut[a]), 0
            ag_pulses[a] = None
            main_only = ag.kind != "FEXT"
            stack = self._stack_rows(kept, full=True, main_only=main_only, peak_env=env, offset=lo, n_total=n_fft)
            del kept
            if ag.kind == "FEXT":
                amp = ag.amplitude_v / self._tx.amplitude_v if ag.amplitude_v else \
                    self.profile.tx.amplitude_fe_v / self.profile.tx.amplitude_v
                self._aggr.append(("FEXT", float(amp), stack))
            else:
                amp = ag.amplitude_v or self.profile.tx.amplitude_ne_v
                self._aggr.append(("NEXT", float(amp), stack))
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

        def h(k: IntArray | int) -> FloatArray:
            idx = ipk + np.asarray(k) * M
            return np.where((idx >= 0) & (idx < len(pulse)), pulse[np.clip(idx, 0, len(pulse) - 1)], 0.0)

        a = np.stack([h(n - d) for d in offs], axis=-1)  # y[n] = sum_k w_k h[n - d_k]
        g = np.array([h(-d) for d in offs], dtype=np.float64)
        h0 = float(pulse[ipk])
        lam = max(noise_v2, 1e-8 * h0**2) / self.sigma_x2
        r = a.T @ a + lam * np.eye(len(offs))
        x = np.linalg.solve(r, g)
        ret: np.ndarray = h0 * x / float(g @ x)
        return ret

    def _aggressor_grams(self) -> list[np.ndarray]:
        """Per aggressor: FEXT (C, M, K, K) Gram matrices over the FFE shifts; NEXT (C, M) power."""
        out = []
        for kind, _, stack in self._aggr:
            if kind == "FEXT":
                out.append(np.einsum("ckmn,clmn->cmkl", stack, stack))
            else:
                out.append(np.sum(stack[:, 0] ** 2, axis=-1))
        return out

    def _aggressor_window(self, main_only: bool) -> tuple[int, int]:
        """(samples before the aggressor's envelope peak, samples in all) that ``_stack_rows(full=True)``
        reads of an aggressor pulse."""
        M = self.M
        offs = np.array([0]) if main_only else np.asarray(self._tx.offsets)
        d_max, d_min = int(offs.max()), int(offs.min())
        return M * (self.n_pre + 1) + d_max * M, (self.n_pre + 1 + self.n_post + d_max - d_min) * M

    def _stack_rows(self, pulses: np.ndarray, full: bool = False, main_only: bool = False,
                    peak_env: np.ndarray | None = None, offset: int = 0, n_total: int | None = None) -> np.ndarray:
        """Cursor matrices (C, K, M, n_out): for each TX FFE tap offset d_k, the rows n - d_k of the
        pulse sampled at phase j, n = -n_pre..n_post. ``full``: an aggressor window over all phases
        from the start of the pulse (their timing is unrelated to the victim's sampling), placed at the
        peak of ``peak_env`` (default: max over settings of |pulses|). ``pulses`` may be a part of the
        records: samples ``offset .. offset + len`` of records ``n_total`` long (default: whole records).

        With consecutive offsets (every TX FFE here) the K matrices are read-only strided views of one
        window (C, M, n_out + K - 1): row n of offset d_k is row n + d_max - d_k of the window, so the
        stack takes the memory of one matrix, not K (the values are the same)."""
        M = self.M
        n_out = self.n_pre + 1 + self.n_post
        offs = np.array([0]) if main_only else np.asarray(self._tx.offsets)
        n_c, n_buf = pulses.shape
        n_tot = n_buf if n_total is None else int(n_total)
        if full:
            env = np.abs(pulses).max(axis=0) if peak_env is None else peak_env
            start = np.full(n_c, int(np.argmax(env)) - M * (self.n_pre + 1) + (offset if peak_env is None else 0))
        else:
            start = np.asarray(self._ipk_c, dtype=np.int64) - M // 2 - M * self.n_pre
        # sample (n, j) of offset d is start + (n - d) M + j: one window per setting covers every offset
        d_max, d_min = int(offs.max()), int(offs.min())
        span = (n_out + d_max - d_min) * M
        idx = (start - d_max * M)[:, None] + np.arange(span)[None, :]
        valid = (idx >= 0) & (idx < n_tot)
        inside = (idx >= offset) & (idx < offset + n_buf)
        if np.any(valid & ~inside):
            raise AssertionError("aggressor window outside the kept part of its pulse")  # internal invariant
        win = np.where(valid, pulses[np.arange(n_c)[:, None], np.clip(idx - offset, 0, n_buf - 1)], 0.0)
        # window W[c, m, q] = sample q M + m; stack[c, k, m, n] = W[c, m, n + d_max - d_k]
        w = np.ascontiguousarray(win.reshape(n_c, n_out + d_max - d_min, M).transpose(0, 2, 1))
        if len(offs) == d_max - d_min + 1 and np.all(np.diff(offs) == 1):
            s0, s1, s2 = w.strides
            view: np.ndarray = np.lib.stride_tricks.as_strided(
                w[:, :, d_max - d_min:], shape=(n_c, len(offs), M, n_out), strides=(s0, -s2, s1, s2),
                writeable=False)
            return view
        out = np.empty((n_c, len(offs), M, n_out))
        for k, d in enumerate(offs):
            q = d_max - int(d)
            out[:, k] = w[:, :, q:q + n_out]
        return out

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

    def _slope(self, p: FloatArray) -> FloatArray:
        """h_J of cursor matrices (..., M, n) (see ``cursor_slope``)."""
        return cursor_slope(p, self.M)


def cursor_slope(p: FloatArray, M: int) -> FloatArray:
    """h_J = (h(t + T/M) - h(t - T/M)) M / 2 in V/UI (93A-28), for cursor matrices (..., M, n) with M
    phases per UI (phase M is phase 0 of the next cursor, phase -1 phase M-1 of the previous one)."""
    nxt = np.concatenate([p[..., 1:, :], np.roll(p[..., :1, :], -1, axis=-1)], axis=-2)
    prv = np.concatenate([np.roll(p[..., -1:, :], 1, axis=-1), p[..., :-1, :]], axis=-2)
    nxt[..., -1, -1] = 0.0
    prv[..., 0, 0] = 0.0
    out: FloatArray = (nxt - prv) * (M / 2.0)
    return out


def _peak_index(pulse: np.ndarray) -> int:
    """Index of the pulse peak (the middle of a flat top, e.g. an ideal lossless pulse)."""
    mx = float(np.max(pulse))
    top = np.nonzero(pulse >= mx - 1e-9 * abs(mx))[0]
    return int(round(float(np.mean(top)) + 0.25)) if len(top) > 1 else int(np.argmax(pulse))
