"""The COM figure of merit (IEEE 802.3 93A.1.6, 93A-36) over whole TX FFE x CTLE grids.

The standard searches its EQ by the FOM, a Gaussian signal-to-noise ratio at the sampling phase, and then
computes COM (93A.1.7) at the EQ with the best FOM. Per row (one TX FFE x CTLE point), with the terms of
93A.1.6 at the Mueller-Muller phase t_s (93A-25/26)::

    FOM = 10 log10( A_s^2 / (sigma_TX^2 + sigma_ISI^2 + sigma_J^2 + sigma_XT^2 + sigma_N^2) )   (93A-36)

    A_s        = R_LM h(0) / (L - 1)                                                           (93A-1)
    sigma_TX^2 = h(0)^2 10^(-SNR_TX/10)                         (93A-30 as MATLAB COM 3.70 applies it;
                 sigma_X^2 10^(-SNR_TX/10) sum h(n)^2 with the engine's tx_noise="spectrum")
    sigma_ISI^2 = sigma_X^2 sum_{n != 0} h_res(n)^2  (pre-cursors, DFE residual 93A-27, floating taps, tail)
    sigma_J^2  = (A_DD^2 + sigma_RJ^2) sigma_X^2 ||h_J||^2                                        (93A-32)
    sigma_XT^2 = sigma_X^2 sum_aggressors max_phase sum_n h_k(n)^2                          (93A-33/34)
    sigma_N^2  = eta_0 int |H_r H_ctf|^2 df                                                       (93A-35)

MATLAB COM 3.70 (``optimize_fom``) counts the pre-cursors in sigma_ISI (``norm([precursors;
excess_dfe_cursors; far_cursors])``); PyChOpMarg 3.4.0's PRZF FOM keeps none with a one-tap RX FFE (see
docs/pychopmarg-comparison.md). ``FomStage`` is a mixin of ``eqtune.eye.engine.EyeEngine``: it reuses the
engine's prepared cursor stacks (the FOM of one point costs a few small contractions, vectorized over rows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from eqtune.arrays import FloatArray, IntArray
from eqtune.errors import InputError
from eqtune.eye.stages import EyeStages
from eqtune.serdes import equalizers as eqz
from eqtune.serdes.knobs import CTLE_GDC, CTLE_GDC2, TX_TAP_OFFSETS

FOM_CHUNK = 4096  # rows per vectorized pass (working set ~ chunk x taps x cursors x 8 B: a few MB)


@dataclass(frozen=True)
class FomTerms:
    """The 93A.1.6 terms of each row (V; ``fom_db`` in dB; ``phase`` the sampling phase index 0..M-1,
    ``setting`` the RX setting index)."""

    fom_db: FloatArray
    a_s: FloatArray
    h0: FloatArray
    sigma_tx: FloatArray
    sigma_isi: FloatArray
    sigma_j: FloatArray
    sigma_xt: FloatArray
    sigma_n: FloatArray
    phase: IntArray
    setting: IntArray

    def row(self, i: int) -> dict[str, float]:
        """Row ``i`` as plain floats (V, dB)."""
        return {k: float(getattr(self, k)[i]) for k in ("fom_db", "a_s", "h0", "sigma_tx", "sigma_isi",
                                                        "sigma_j", "sigma_xt", "sigma_n")}


class FomStage(EyeStages):
    """93A-36 FOM of grid rows (stage A/B plus the FOM; mixin of ``EyeEngine``)."""

    def grid_rows(self, matrix: np.ndarray, names: Sequence[str]) -> tuple[FloatArray, FloatArray, IntArray]:
        """(taps (B, K) incl. the main tap c0 = 1 - sum |c_k| (93A.1.6), amplitude (B,), RX setting index (B,))
        of a grid matrix with columns ``names`` (host TX FFE taps and the CTLE gains, as
        ``knob_space().grid()``); vectorized (no per-row parsing), for the host TX / host RX of COM."""
        if self._tx.kind != "host" or self._rx.kind != "host":
            raise InputError("the FOM search needs the serdes direction (host TX FFE and host CTLE + DFE)")
        m = np.atleast_2d(np.asarray(matrix, dtype=float))
        names = list(names)
        tx_names = list(self._tx.knob_names)
        missing = [n for n in tx_names + [CTLE_GDC] if n not in names]
        if missing:
            raise InputError(f"the grid has no column {', '.join(missing)}: give every TX tap and the CTLE gain")
        other = m[:, [names.index(n) for n in tx_names]]
        c0 = 1.0 - np.abs(other).sum(axis=1)
        taps = np.empty((len(m), len(self._tx.offsets)))
        for k, d in enumerate(self._tx.offsets):
            taps[:, k] = c0 if d == 0 else other[:, [TX_TAP_OFFSETS[n] for n in tx_names].index(int(d))]
        s = self._rx.settings
        g1 = m[:, names.index(CTLE_GDC)]
        g2 = m[:, names.index(CTLE_GDC2)] if CTLE_GDC2 in names else np.zeros(len(m))
        # one integer key per (g_DC, g_DC2) pair (micro-dB), looked up in the settings' sorted keys
        def key(a: FloatArray, b: FloatArray) -> IntArray:
            k: IntArray = np.rint(a * 1e6).astype(np.int64) * (1 << 31) + np.rint(b * 1e6).astype(np.int64)
            return k

        skeys = key(s[:, 0], s[:, 1])
        order = np.argsort(skeys)
        rk = key(g1, g2)
        pos = np.clip(np.searchsorted(skeys[order], rk), 0, len(s) - 1)
        idx = order[pos]
        if np.any(skeys[idx] != rk):
            raise InputError("a CTLE gain of the grid is not one of the profile's settings")
        return taps, np.full(len(m), self._tx.amplitude_v), idx

    def fom_terms(self, taps: FloatArray, amp: FloatArray, idx: IntArray) -> FomTerms:
        """The 93A.1.6 terms of rows (taps, amp, idx) at the engine's sampling phase (Mueller-Muller in COM
        mode, see ``EyeStages._mm_phase``; with ``sampling="best"`` the stage-A best phase).

        Every sum over cursors is a quadratic form of the TX FFE taps on the prepared Gram matrices (the
        pulse's, its slope's and each FEXT aggressor's, ``LinkPreparation._precompute_forms``): only the
        DFE's own cursors are formed explicitly (they are clipped, 93A-26), so a row costs O(K^2) plus
        the DFE span, not the whole cursor window."""
        nz = self.profile.noise
        sx2 = self.sigma_x2
        xt2 = self._fom_xt2(taps, amp, idx)
        if self.sampling == "mm":
            h0_all = np.einsum("bk,bkm->bm", taps, self._s_h0[idx]) * amp[:, None]
            j = self._mm_phase(taps, amp, idx, np.argmax(h0_all, axis=-1))
        else:
            a = self._stage_a(taps, amp, idx, xt2[:, None], self.ber)
            j = np.argmax(a.eh - 1e-12 * np.abs(np.arange(self.M) - self.M // 2)[None, :], axis=-1)
        a2 = amp**2
        tot2 = np.einsum("bk,bkl,bl->b", taps, self._g[idx, j], taps) * a2  # sum_n h(n)^2
        hj2 = np.maximum(np.einsum("bk,bkl,bl->b", taps, self._gj[idx, j], taps) * a2, 0.0)  # ||h_J||^2, 93A-28
        h0 = np.einsum("bk,bk->b", taps, self._s_h0[idx, :, j]) * amp
        isi2 = tot2 - h0**2
        if len(self._b_max):
            dfe = np.einsum("bk,bkn->bn", taps, self._s_dfe[idx, :, j, :]) * amp[:, None]
            res = eqz.dfe_zero_forcing(h0, dfe, self._b_min, self._b_max)  # 93A-26/27
            isi2 = isi2 - np.sum(dfe**2, axis=-1) + np.sum(res**2, axis=-1)
        if self._s_float is not None and self._float is not None:
            flt = np.einsum("bk,bkn->bn", taps, self._s_float[idx, :, j, :]) * amp[:, None]
            groups, per, _, bmax = self._float
            res = eqz.floating_dfe_residual(h0, flt, groups, per, bmax)
            isi2 = isi2 - np.sum(flt**2, axis=-1) + np.sum(res**2, axis=-1)
        isi2 = sx2 * np.maximum(isi2, 0.0)  # 93A-31: pre-cursors, DFE residual, floating residual, tail
        snr = 10 ** (-self._tx.snr_db / 10.0)
        tx2 = snr * (h0**2 if self.tx_noise == "cursor" else sx2 * tot2)  # 93A-30
        j2 = (nz.a_dd_ui**2 + nz.sigma_rj_ui**2) * sx2 * hj2  # 93A-32
        xt2 = sx2 * xt2  # 93A-33/34 (each aggressor at its worst phase)
        n2 = self._sigma_rx2[idx]  # 93A-35
        a_s = float(np.min(self.spacing)) * h0 / 2.0  # R_LM h(0) / (L - 1) for PAM4 (93A-1)
        tot = tx2 + isi2 + j2 + xt2 + n2
        with np.errstate(divide="ignore", invalid="ignore"):
            fom = 10.0 * np.log10(np.where(a_s > 0, a_s**2, 1e-300) / np.maximum(tot, 1e-300))
        return FomTerms(fom_db=fom, a_s=a_s, h0=h0, sigma_tx=np.sqrt(tx2), sigma_isi=np.sqrt(isi2),
                        sigma_j=np.sqrt(j2), sigma_xt=np.sqrt(xt2), sigma_n=np.sqrt(n2), phase=j, setting=idx)

    def _fom_xt2(self, taps: FloatArray, amp: FloatArray, idx: IntArray) -> FloatArray:
        """sum over aggressors of max over phases of sum_n h_k(n)^2 (V^2, without sigma_X^2; 93A-33/34): a
        FEXT aggressor's power per phase is c^T G c of the victim's TX FFE (its Gram matrix), a NEXT
        aggressor's does not depend on the EQ of this link. Rows are grouped by RX setting so that each
        Gram is used as a block."""
        out = np.zeros(len(idx))
        if not self._aggr:
            return out
        for c in np.unique(idx):
            r = np.nonzero(idx == c)[0]
            t = taps[r]
            for (kind, a_amp, _), gram in zip(self._aggr, self._aggr_gram):
                if kind == "FEXT":
                    m_, k_, _ = gram[c].shape
                    y = (t @ gram[c].transpose(1, 0, 2).reshape(k_, m_ * k_)).reshape(len(t), m_, k_)
                    pw = np.einsum("bml,bl->bm", y, t)  # c^T G_m c for every phase m
                    out[r] += (amp[r] * a_amp) ** 2 * pw.max(axis=-1)
                else:
                    out[r] += a_amp**2 * float(np.max(gram[c]))
        return out

    def fom_grid(self, matrix: np.ndarray, names: Sequence[str], *, chunk: int = FOM_CHUNK,
                 progress: Callable[[int], None] | None = None) -> FloatArray:
        """FOM (dB, 93A-36) of every row of ``matrix`` (columns ``names``), ``chunk`` rows at a time (memory
        stays at a few MB whatever the grid size); ``progress(rows done)`` after each chunk."""
        m = np.atleast_2d(np.asarray(matrix, dtype=float))
        out = np.empty(len(m))
        # rows in RX-setting order: a chunk then spans one or two settings (block-wise Gram use)
        _, _, idx_all = self.grid_rows(m, names)
        order = np.argsort(idx_all, kind="stable")
        for s in range(0, len(m), chunk):
            rows = order[s:s + chunk]
            taps, amp, idx = self.grid_rows(m[rows], names)
            out[rows] = self.fom_terms(taps, amp, idx).fom_db
            if progress is not None:
                progress(min(s + chunk, len(m)))
        return out
