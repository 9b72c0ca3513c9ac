"""Stage A / stage B numerics of the eye engine (per EQ point, vectorized over points).

* stage A (all M phases, cheap): cursor, DFE residual (93A-26/27), noise and jitter (93A-30..35),
  Gaussian-approximate eye height -> sampling phase (best eye, or Mueller-Muller 93A.1.6) and the best
  CTLE when it adapts;
* stage B (the chosen phase): the exact ISI + crosstalk distribution (93A.1.7, ``eqtune.eye.stateye``)
  -> EH per eye, COM (93A-1), VEC, SER estimate; the eye width from exact edges with the DFE held.

``EyeStages`` is a mixin of ``eqtune.eye.engine.EyeEngine``: it reads the prepared arrays of
``eqtune.eye.prepare.LinkPreparation`` and parses points with ``eqtune.eye.points.PointParser``.
Intermediate results are the dataclasses ``StageA``, ``StageB`` and ``EyeRun`` (arrays over the rows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TypeVar

import numpy as np

from eqtune.arrays import FloatArray
from eqtune.eye.state import EngineState, FloatingDfe
from eqtune.eye.stateye import grouped_pdfs, q_factor, split_exact
from eqtune.serdes import equalizers as eqz

MM_EPS_V = 1e-3  # |93A-25 residual| below which a phase counts as an exact MM solution (MATLAB COM 3.70 as
#                  transcribed in PyChOpMarg 3.4.0 utility/probability.py loc_curs(), eps = 0.001)
COM_CAP_DB = 99.0
N_PEAK = 3  # stage A: how many of them add up as worst case (PAM4: (1/4)^3 = 1.6e-2 > any target BER)
N_ADAPT_CANDIDATES = 3  # RX settings per point checked with the exact eye when the CTLE adapts
VEC_CLOSED_DB = 60.0


@dataclass
class StageA:
    """Stage A at every phase (V, V^2 for the variances): (B, M), or (B, C, M) over the RX settings.

    ``eh`` Gaussian-approximate eye height (smallest eye); ``h0`` cursor; ``tx2``/``rj2``/``rx2`` TX noise
    (93A-30), random jitter (93A-31/32) and RX noise (93A-35) variances; ``g2`` their sum; ``add`` the
    dual-Dirac amplitude; ``pd`` the peak distortion of the N_PEAK largest near cursors; ``rest2`` the
    remaining residual ISI power (normalized to the symbol variance)."""

    eh: np.ndarray
    h0: np.ndarray
    tx2: np.ndarray
    rj2: np.ndarray
    rx2: np.ndarray
    g2: np.ndarray
    add: np.ndarray
    pd: np.ndarray
    rest2: np.ndarray


@dataclass
class StageB:
    """Stage B at the sampling phase, per row: ``eh`` (R, n_eyes) exact eye heights (V) at the one-sided
    tail ``ber``; ``q``/``q_com`` the interference quantiles (V) at ``ber`` and at COM's probability
    (A_ni, 93A.1.7); ``ser`` the symbol error estimate; ``com`` COM (dB, 93A-1); ``sigma`` the Gaussian
    part (V)."""

    eh: np.ndarray
    q: np.ndarray
    q_com: np.ndarray
    ser: np.ndarray
    com: np.ndarray
    sigma: np.ndarray


@dataclass
class EyeRun:
    """One evaluated batch: inputs (``taps`` (B, K), ``amp`` (B,) V, ``idx`` RX setting (B,)), the
    cursors ``v`` (B, n_out) V at the sampling phase ``j`` (B,), stage A ``a`` and stage B ``b``,
    ``eh_min`` (V), ``vec`` (dB), crosstalk cursors ``xt`` (V), cursor ``h0`` (V), eye width ``ew`` (UI)
    once computed, and the parsed ``points`` once known."""

    taps: np.ndarray
    amp: np.ndarray
    idx: np.ndarray
    v: np.ndarray
    j: np.ndarray
    a: StageA
    b: StageB
    eh_min: np.ndarray
    vec: np.ndarray
    xt: np.ndarray
    h0: np.ndarray
    ew: np.ndarray | None = None
    points: list[dict[str, float]] = field(default_factory=list)

    @property
    def eye_width(self) -> FloatArray:
        """``ew``, which ``EyeStages._run`` always fills (rows of ``_core(width=False)`` are only trials)."""
        if self.ew is None:
            raise RuntimeError("eye width of a trial run was asked for: evaluate the rows with EyeStages._run")
        return self.ew


_Rows = TypeVar("_Rows", StageA, StageB, EyeRun)


class EyeStages(EngineState):
    """Stage A (all phases) and stage B (sampling phase) of the statistical eye (mixin of ``EyeEngine``)."""

    def _full_p(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Equalized cursor matrices (B, M, n_out) in V: amp * sum_k c_k * shifted rows (93A-21)."""
        ret: np.ndarray = np.einsum("bk,bkmn->bmn", taps, self._stack[idx]) * amp[:, None, None]
        return ret

    def _residual(self, v: FloatArray, fixed: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """(cursor h0 (...), residual ISI cursors (..., n_out-1)) after the DFE (see ``dfe_residual``)."""
        return dfe_residual(v, fixed, self.n_pre, self._b_min, self._b_max, self._fw, self._float)

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
                 ber: float, fixed: np.ndarray | None = None) -> StageA:
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
            flt = np.einsum("bk,ckmn->bcmn", taps, self._s_float) if self._s_float is not None else None
            a = amp[:, None, None]
            rx2 = self._sigma_rx2[None, :, None]
        else:
            h0 = np.einsum("bk,bkm->bm", taps, self._s_h0[idx])
            tot2 = np.einsum("bml,bl->bm", np.einsum("bk,bmkl->bml", taps, self._g[idx]), taps)
            hj2 = np.einsum("bml,bl->bm", np.einsum("bk,bmkl->bml", taps, self._gj[idx]), taps)
            near = np.einsum("bk,bkmn->bmn", taps, self._s_near[idx])
            dfe = np.einsum("bk,bkmn->bmn", taps, self._s_dfe[idx])
            flt = np.einsum("bk,bkmn->bmn", taps, self._s_float[idx]) if self._s_float is not None else None
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
                assert self._float is not None  # flt only with floating taps
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
        # 93A-30: MATLAB COM's form on the cursor, or the spectrum's variance (engine ``tx_noise``)
        tx2 = 10 ** (-self._tx.snr_db / 10.0) * (h0**2 if self.tx_noise == "cursor" else sx2 * tot2)
        rj2 = sx2 * nz.sigma_rj_ui**2 * hj2  # 93A-31/32 (Gaussian part)
        add = nz.a_dd_ui * math.sqrt(sx2) * np.sqrt(hj2)  # dual-Dirac amplitude
        g2 = tx2 + rj2 + rx2  # + 93A-35 RX noise
        q = float(q_factor(ber))
        sig = np.sqrt(sx2 * rest2 + g2 + xt2)
        eh = np.min(self.spacing) * h0 - 2.0 * (pd + q * sig + add)
        return StageA(eh=eh, h0=h0, tx2=tx2, rj2=rj2, rx2=np.broadcast_to(rx2, tx2.shape), g2=g2, add=add, pd=pd,
                      rest2=rest2)

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
            lin[s:s + chunk] = np.min(self.spacing) * a.h0 - 2.0 * (a.pd + a.add)
            quad[s:s + chunk] = self.sigma_x2 * a.rest2 + a.tx2 + a.rj2
        q2 = 2.0 * float(q_factor(ber))
        rx2 = self._sigma_rx2[None, :, None]
        out = np.empty((len(taps), C))
        step = max(1, int(2_000_000 // (C * M)))
        for s in range(0, len(taps), step):
            a_s = amp[s:s + step, None, None]
            r = inv[s:s + step]
            var = a_s**2 * quad[r] + rx2 + self._xt2_approx(amp[s:s + step])
            out[s:s + step] = (a_s * lin[r] - q2 * np.sqrt(var)).max(axis=-1)
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
                 ber: float, p_com: float | None = None) -> StageB:
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
            if q_com is not q and p_com is not None:
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
        return StageB(eh=eh, q=q, q_com=q_com, ser=ser, com=com, sigma=sigma)

    def _exact_width(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, j: np.ndarray, approx: np.ndarray,
                     eh_min: np.ndarray, fixed: np.ndarray | None, a: StageA, xt: np.ndarray, ber: float) -> np.ndarray:
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
            add = a.add[rr, pp]
            if self.com_mode:  # per-cursor dual-Dirac jitter, as at the sampling phase (93A.1.7)
                res = np.concatenate([res, self.profile.noise.a_dd_ui * self._slope_cursors(
                    taps[rr], amp[rr], idx[rr], pp)], axis=-1)
                add = np.zeros_like(add)
            curve[rr, pp] = self._exact_eh_min(h0, res, a.g2[rr, pp], add, xt2[rr], ber)
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

    def _run(self, points: Sequence[Mapping[str, float]], ber: float) -> EyeRun:
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
            best = np.argmax(trial.eh_min.reshape(len(adapt), n_c), axis=-1)
            idx = idx.copy()
            idx[adapt] = cand[np.arange(len(adapt)), best]
            if len(adapt) == len(idx):
                # every row adapted: its final evaluation is the winning trial row (rows are independent)
                out = _take_rows(trial, np.arange(len(adapt)) * n_c + best, len(rep))
                out.ew = self._eye_width(out, ber)
                out.points = clean
                return out
        out = self._core(taps, amp, idx, ber)
        out.points = clean
        return out

    def _core(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, ber: float, *, width: bool = True) -> EyeRun:
        """Stage A (all phases) + stage B (best phase) for rows with known RX settings ``idx``."""
        xt = self._xtalk(taps, amp, idx)
        a = self._stage_a(taps, amp, idx, (self.sigma_x2 * np.sum(xt**2, axis=-1))[:, None], ber)
        B = len(idx)
        # best phase by the stage-A eye; ties -> nearest the pulse peak
        j = np.argmax(a.eh - 1e-12 * np.abs(np.arange(self.M) - self.M // 2)[None, :], axis=-1)
        if self.sampling == "mm":
            j = self._mm_phase(taps, amp, idx, j)
        rows = np.arange(B)
        v = self._cursors(taps, amp, idx, j)  # cursors at phase j
        h0, res = self._residual(v)
        if self.com_mode:
            # 93A.1.7 (COM mode): the dual-Dirac jitter acts per cursor, +-A_DD h_J(n) with the
            # symbol of cursor n, so it joins the ISI cursors (exact PDF) instead of one +-A_DD |h_J| term
            jit = self.profile.noise.a_dd_ui * self._slope_cursors(taps, amp, idx, j)
            b = self._stage_b(h0, np.concatenate([res, jit], axis=-1), a.g2[rows, j], np.zeros(B), xt, ber,
                              p_com=self.der0)
        else:
            b = self._stage_b(h0, res, a.g2[rows, j], a.add[rows, j], xt, ber)
        eh_min = b.eh.min(axis=-1)
        # eye width: the horizontal profile with the DFE held at the taps it adapted at phase j (a real
        # receiver's taps do not follow the probe phase; re-adapting them per phase overstates the width
        # by 25-65 % on DFE links against the bit-by-bit simulator)
        with np.errstate(divide="ignore", invalid="ignore"):
            vec = 20.0 * np.log10(np.min(self.spacing) * h0 / eh_min)
        vec = np.where((eh_min > 0) & np.isfinite(vec), vec, VEC_CLOSED_DB)
        out = EyeRun(taps=taps, amp=amp, idx=idx, v=v, j=j, a=a, b=b, eh_min=eh_min, vec=vec, xt=xt, h0=h0)
        if width:
            out.ew = self._eye_width(out, ber)
        return out

    def _cursors(self, taps: np.ndarray, amp: np.ndarray, idx: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Equalized cursors (B, n_out) in V of rows ``(taps, amp, idx)`` sampled at phase ``j`` (B,)."""
        ret: np.ndarray = np.einsum("bk,bkn->bn", taps, self._stack[idx, :, j, :]) * amp[:, None]
        return ret

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
        ret: np.ndarray = (nxt - prv) * (M / 2.0)
        return ret

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

    def _eye_width(self, r: EyeRun, ber: float) -> np.ndarray:
        """Eye width (UI) of evaluated rows ``r`` (a ``_core`` result): the horizontal profile with the
        DFE held at the taps it adapted at the sampling phase (a real receiver's taps do not follow the
        probe phase; re-adapting them per phase overstated the width by 25-65 % on DFE links against the
        bit-by-bit simulator), its edges from the exact eye height (``_exact_width``)."""
        taps, amp, idx, xt = r.taps, r.amp, r.idx, r.xt
        fixed = self._feedback(r.v) if len(self._b_max) + self._fw else None
        if fixed is not None:
            held = self._stage_a(taps, amp, idx, (self.sigma_x2 * np.sum(xt**2, axis=-1))[:, None], ber,
                                 fixed=fixed).eh
        else:
            held = r.a.eh
        return self._exact_width(taps, amp, idx, r.j, held, r.eh_min, fixed, r.a, xt, ber)



def dfe_residual(v: FloatArray, fixed: FloatArray | None, n_pre: int, b_min: FloatArray, b_max: FloatArray,
                 fw: int, floating: FloatingDfe | None) -> tuple[FloatArray, FloatArray]:
    """(cursor h0 (...), residual ISI cursors (..., n_out-1)) after the DFE, for cursor vectors v (..., n).

    ``n_pre`` precursors precede the cursor; the DFE has ``len(b_max)`` fixed taps clipped to
    [b_min, b_max] (93A-26/27) and ``fw`` floating taps (``floating``: groups, taps per group, span, |b|
    max). ``fixed`` (..., nb + fw): the feedback amounts (V) the DFE subtracts, adapted elsewhere (at the
    sampling phase): the residual is then h(k) - fixed(k) on the DFE's taps, with no re-adaptation. A
    receiver adapts its DFE once, at its sampling phase; its taps stay put while the eye is probed at
    other phases (the horizontal eye, bathtubs), as in the bit-by-bit simulator."""
    n0 = n_pre
    h0 = v[..., n0]
    post = v[..., n0 + 1:]
    nb = len(b_max)
    if fixed is not None:
        k = fixed.shape[-1]
        return h0, np.concatenate([v[..., :n0], post[..., :k] - fixed, post[..., k:]], axis=-1)
    parts = [v[..., :n0]]
    if nb:
        parts.append(eqz.dfe_zero_forcing(h0, post[..., :nb], b_min, b_max))
    rest = post[..., nb:]
    if fw:
        assert floating is not None  # fw > 0 only with floating taps (LinkPreparation._precompute_forms)
        groups, per, _, bmax = floating
        parts.append(eqz.floating_dfe_residual(h0, rest[..., :fw], groups, per, bmax))
        rest = rest[..., fw:]
    parts.append(rest)
    return h0, np.concatenate(parts, axis=-1)


def _take_rows(d: _Rows, rows: np.ndarray, n: int) -> _Rows:
    """Rows ``rows`` of every array with ``n`` rows in the result ``d`` (nested results too); other values
    as they are."""
    out: dict[str, object] = {}
    for f in fields(d):
        v = getattr(d, f.name)
        if isinstance(v, StageA):
            out[f.name] = _take_rows(v, rows, n)
        elif isinstance(v, StageB):
            out[f.name] = _take_rows(v, rows, n)
        elif isinstance(v, np.ndarray) and v.ndim and v.shape[0] == n:
            out[f.name] = v[rows]
        else:
            out[f.name] = v
    return replace(d, **out)  # type: ignore[arg-type]  # field-by-field copy of d's own values
