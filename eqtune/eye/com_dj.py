"""802.3dj COM (Annex 178A): the MMSE reference receiver's COM of a channel, both package cases.

Procedure (P802.3dj 178A.1; Healey & Hegde, Jan. 2024 [HH24]; equation numbers as PyChOpMarg 3.4.0 names
them next to its code, the draft itself not being public):

1. per package case (Table 178-14: Test 1 and Test 2 line-1 lengths), the link of :mod:`eqtune.eye.dj_link`;
2. the joint TX FFE / CTLE search with the MMSE Rx FFE + DFE and sampling time at every point
   (:mod:`eqtune.eye.dj_search`, 178A-33..36), best FOM wins;
3. COM at the winner (178A.1.9, as 93A.1.7 with the Rx FFE in the path): the FFE taps scaled to a unit
   cursor tap; A_s = R_LM y(t_s) / (L - 1) of the equalized pulse y (93A-1); the Gaussian part
   sigma_G^2 = sigma_TX^2 + sigma_RJ^2 + sigma_N^2 (93A-41) with sigma_TX^2 the TX-noise pulse (178A-21/22)
   through the FFE, sigma_RJ^2 = sigma_RJ^2 var_x ||h_J||^2 (93A-31 / 178A-23) and
   sigma_N^2 = eta_0 int |H_r H_ctf H_ffe|^2 df (93A-35 with the FFE); dual-Dirac jitter A_DD h_J, the
   residual ISI (every sample at the cursor phase, pre-cursors included, 178A-42; DFE taps
   clip(h(n)/h(0)) removed, 93A-26/27) and each aggressor's equalized samples at its 178A-20 phase as
   delta PMFs (93A-40); samples below A_s / 1000 dropped (93A.1.7.1 note 2); the grid's bin
   min(A_s / 1000, 10 uV) (MATLAB COM's "PDF bin size"); A_ni at DER_0 (93A-45); COM = 20 log10(A_s / A_ni);
4. the reported COM is the worse package case.

Options (the profile's values by default; every case also reports ``com_plain_db``, COM with both off at
the same search, the figure compared with PyChOpMarg's MMSE path):

* ``adc``: ADC quantization (178A-28..31, 178A-43/46): the step Delta = 2 V_qc / (2^N_qb - 1) from the
  noisy signal at the quantizer, white noise Delta^2 / 12 added to R_nn, and a uniform +-Delta/2 through
  every FFE tap in the COM PMF. The grid search runs without it; the best point of every CTLE setting is
  then re-solved with its own Delta and the best FOM wins (:func:`adc_rerank`; 178A includes the
  quantization at every point, so this is a stated simplification);
* ``mlse``: the MLSD reference receiver (178A.1.10, :mod:`eqtune.eye.dj_mlsd`): COM_DFE (with the case's
  ADC option) plus the MLSD's advantage, from the final point's PMF, its first DFE tap and the noise + ISI
  correlation at the FFE output; the search is unchanged (MLSD is computed after it, as in PyChOpMarg
  3.4.0's ``COM.calc_mlsd``). Defined for a 1-tap DFE; other profiles are refused with MLSE on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from eqtune.arrays import FloatArray
from eqtune.channel.model import Channel
from eqtune.errors import InputError
from eqtune.eye import dj_pmf
from eqtune.eye.dj_link import DjLink, ctle_dj, prepare_link, pulse
from eqtune.eye.dj_mlsd import MlsdResult, mlsd_com
from eqtune.eye.dj_noise import (
    adc_quantization_step,
    noise_autocorrelation,
    quantization_autocorrelation,
    rx_noise_autocorrelation,
)
from eqtune.eye.dj_search import (
    N_TX,
    RxConfig,
    SearchResult,
    ctle_settings,
    prepare_ctle,
    search,
    slope_phases,
    solve_points,
    tx_grid,
    ui_phases,
)
from eqtune.serdes.dj_profile import DjProfile, load_dj_profile

COM_PASS_DB = 3.0  # 802.3dj KR/C2C COM limit, as 802.3ck's ([D33] ieee_8023dj_d3p3.py: dCOM_an = 3 dB "the minimum COM limit")
PDF_BIN_V = 1e-5   # MATLAB COM's default "PDF bin size"


@dataclass(frozen=True)
class DjComCase:
    """COM of one package case at the EQ its search found (mV, dB)."""

    package_case: int
    zp1_mm: tuple[float, float]
    com_db: float
    fom_db: float
    g_dc_db: float
    g_dc2_db: float
    tx_taps: list[float]     # c(-3)..c(3)
    rx_ffe: list[float]      # cursor tap 1
    dfe: list[float]
    cursor_sample: int
    a_s_mv: float
    a_ni_mv: float
    sigma_tx_mv: float
    sigma_rj_mv: float
    sigma_rx_mv: float
    sigma_isi_mv: float
    sigma_xt_mv: float
    sigma_q_mv: float
    adc_step_mv: float
    points_searched: int
    search_s: float
    com_plain_db: float = math.nan  # ADC quantization and MLSE off, the same search (the PyChOpMarg figure)
    com_dfe_db: float = math.nan    # the DFE reference receiver's COM with this case's ADC option (before MLSD)
    mlsd_gain_db: float | None = None  # 178A-49: 20 log10(-P_an^-1(DER_MLSD) / A_s); None with MLSE off
    der_mlsd: float | None = None
    g_an: float | None = None
    mlsd_terms: int | None = None


@dataclass(frozen=True)
class DjComReport:
    """802.3dj COM of a channel under a 178A profile: every package case, the worse one."""

    channel: str
    profile: str
    com_db: float
    passed: bool
    threshold_db: float
    worst_case: int
    cases: list[DjComCase]
    der0: float
    aggressors: dict[str, int]
    settings: dict[str, object] = field(default_factory=dict)
    com_plain_db: float = math.nan  # the worse case's COM with ADC quantization and MLSE off

    @property
    def worst(self) -> DjComCase:
        return next(c for c in self.cases if c.package_case == self.worst_case)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _delayed(p: FloatArray, taps: FloatArray, m: int) -> FloatArray:
    """sum_k taps[k] p(t - k UI) on the periodic record (the FFE of 93A-21 / the Rx FFE)."""
    out = np.zeros_like(p)
    for k, c in enumerate(taps):
        if c:
            out += c * np.roll(p, k * m)
    return out


def _filtered(x: FloatArray, a_s: float) -> FloatArray:
    """Samples above A_s / 1000 in magnitude (93A.1.7.1 note 2)."""
    out: FloatArray = x[np.abs(x) > a_s * 1e-3]
    return out


@dataclass(frozen=True)
class _Final:
    com_db: float
    a_s: float
    a_ni: float
    sigmas: dict[str, float]
    ffe: FloatArray
    dfe: FloatArray
    adc_step: float
    ystep: float
    p_rest: FloatArray    # every non-Gaussian PMF convolved (ISI, dual-Dirac, crosstalk, quantization)
    var_g: float          # the Gaussian variance (93A-41), V^2
    var_rx: float         # the receiver noise at the Rx FFE output (93A-35 with the FFE), V^2
    isi: FloatArray       # residual ISI at the cursor phase, cursor and DFE removed (V)


def _adc_step(link: DjLink, prof: DjProfile, rx: RxConfig, pt: SearchResult, npts: int = 8001) -> float:
    """178A-29..31: the ADC step at a searched point (its EQ and sampling time): the noisy signal at the
    quantizer is the victim's UI samples, the dual-Dirac jitter A_DD h_J and each aggressor's samples at its
    178A-20 phase (all as PAM deltas), plus the Gaussian RX noise, TX noise and random jitter."""
    g, nz = link.grid, prof.noise
    m = g.samples_per_ui
    hctf = ctle_dj(g.freqs_hz, pt.gdc_db, pt.gdc2_db, prof)
    p0 = pulse(link, link.victim.h * hctf, link.victim.amplitude_v)
    vic_d = np.roll(_delayed(p0, pt.tx_taps, m), rx.n_pre * m)
    phase = pt.sample_index % m
    j = slope_phases(vic_d, m)[phase]
    var_rx = rx_noise_autocorrelation(nz["eta0_v2_per_ghz"], link.h_r * hctf, g.dt_s, m, 1)[0]
    var_tx = 10 ** (-nz["snr_tx_db"] / 10) * float((ui_phases(p0, m)[phase] ** 2).sum())
    var_rj = rx.var_x * nz["sigma_rj_ui"] ** 2 * float((j**2).sum())
    deltas = [ui_phases(vic_d, m)[phase], nz["a_dd_ui"] * j]
    for a in link.aggressors:
        pre = _delayed(pulse(link, a.h * hctf, a.amplitude_v), pt.tx_taps if a.kind == "FEXT" else np.eye(N_TX)[3], m)
        deltas.append(ui_phases(pre, m)[int(np.argmax((ui_phases(pre, m) ** 2).sum(axis=1)))])
    return adc_quantization_step(np.concatenate(deltas), var_rx + var_tx + var_rj, levels=prof.levels,
                                 bits=int(nz["adc_bits"]), clip_probability=nz["adc_clip_probability"], npts=npts)


def _with_quantization(link: DjLink, prof: DjProfile, rx: RxConfig, pt: SearchResult, step: float) -> SearchResult:
    """The MMSE receiver at a searched EQ re-solved (every sampling time) with white ADC noise Delta^2/12 in
    R_nn (178A-17/28)."""
    cs = prepare_ctle(link, prof, rx, pt.gdc_db, pt.gdc2_db)
    cs = replace(cs, rn_fixed=cs.rn_fixed + quantization_autocorrelation(step, rx.n_taps)[None, :])
    m = link.grid.samples_per_ui
    ps = solve_points(cs, pt.tx_taps[None, :], prof, rx, m, m // 2)
    return replace(pt, fom_db=float(ps.fom_db[0]), sample_index=int(ps.sample_index[0]), ffe=ps.ffe[0].copy(),
                   dfe=ps.dfe[0].copy(), mse=float(ps.mse[0]))


def adc_rerank(link: DjLink, prof: DjProfile, rx: RxConfig, best: SearchResult) -> tuple[SearchResult, float]:
    """With ADC quantization: the best point of every CTLE setting (the search ran without quantization) gets
    its ADC step and its receiver re-solved with it; the best FOM then wins (a stated simplification of
    178A, whose search includes the quantization noise at every point: here the TX FFE of each CTLE setting is
    the one chosen without it). Returns the winner (with its search's point count) and its step (V)."""
    scored = []
    for pt in best.per_ctle or (best,):
        step = _adc_step(link, prof, rx, pt, npts=2001)
        scored.append((_with_quantization(link, prof, rx, pt, step), pt))
    _, pt = max(scored, key=lambda x: x[0].fom_db)
    step = _adc_step(link, prof, rx, pt)  # the final step on the finer grid (as for the COM PMF)
    return replace(_with_quantization(link, prof, rx, pt, step), points=best.points), step


def _final_com(link: DjLink, prof: DjProfile, rx: RxConfig, best: SearchResult, step: float) -> _Final:
    """Step 3 of the module docstring at the searched point (its EQ, sampling time and FFE); ``step``: the
    ADC step (V; 0 without quantization)."""
    g, nz = link.grid, prof.noise
    m, f = g.samples_per_ui, g.freqs_hz
    hctf = ctle_dj(f, best.gdc_db, best.gdc2_db, prof)
    p0 = pulse(link, link.victim.h * hctf, link.victim.amplitude_v)
    vic = _delayed(p0, best.tx_taps, m)                                   # with TX FFE, no Rx FFE
    ts = best.sample_index
    phase = ts % m
    aggs = []
    for a in link.aggressors:
        pa = pulse(link, a.h * hctf, a.amplitude_v)
        pre = _delayed(pa, best.tx_taps if a.kind == "FEXT" else np.eye(N_TX)[3], m)
        aggs.append((pre, int(np.argmax((ui_phases(pre, m) ** 2).sum(axis=1)))))   # 178A-20
    w = best.ffe / best.ffe[rx.n_pre]                                     # cursor tap 1 (MATLAB COM)
    y = _delayed(vic, w, m)
    curs = float(y[ts])
    a_s = rx.rlm * curs / (rx.levels - 1)
    # Gaussian terms (93A-41): TX noise (178A-21/22 through the FFE), RX noise (93A-35), random jitter
    var_tx = 10 ** (-nz["snr_tx_db"] / 10) * float((ui_phases(_delayed(p0, w, m), m)[phase] ** 2).sum())
    h_ffe = np.exp(-2j * np.pi * np.outer(np.arange(rx.n_taps), f) * g.ui_s).T @ w
    df = float(f[1] - f[0])
    var_n = nz["eta0_v2_per_ghz"] * float((np.abs(link.h_r * hctf * h_ffe)[1:] ** 2).sum()) * df / 1e9
    h_j = slope_phases(y, m)[phase]
    var_rj = nz["sigma_rj_ui"] ** 2 * rx.var_x * float((h_j**2).sum())
    var_g = var_tx + var_rj + var_n
    h_dd = _filtered(nz["a_dd_ui"] * h_j, a_s)
    # residual ISI: every UI sample at the cursor phase, DFE removed (93A-26/27)
    isi = ui_phases(y, m)[phase].copy()
    c = ts // m
    isi[c] = 0.0
    dfe = np.clip(isi[c + 1:c + 1 + rx.n_dfe] / curs, rx.b_min, rx.b_max)
    isi[c + 1:c + 1 + rx.n_dfe] -= dfe * curs
    var_isi = rx.var_x * float((isi**2).sum())
    isi_f = _filtered(isi, a_s)
    xts = [_filtered(ui_phases(_delayed(pre, w, m), m)[ph], a_s) for pre, ph in aggs]
    ystep = min(a_s / 1000.0, PDF_BIN_V)
    support = (np.abs(isi_f).sum() + sum(np.abs(x).sum() for x in xts) + np.abs(h_dd).sum()
               + np.abs(w).sum() * step / 2)
    y_grid = dj_pmf.voltage_grid(ystep, max(1.1 * a_s, support + 10 * math.sqrt(var_g) + 2 * ystep))
    p_n = dj_pmf.convolve_pmfs(dj_pmf.gaussian_pmf(y_grid, var_g), dj_pmf.delta_pmf(h_dd, prof.levels, y_grid))
    p_xt = dj_pmf.delta_pmf(np.zeros(0), prof.levels, y_grid)
    for x in xts:
        p_xt = dj_pmf.convolve_pmfs(p_xt, dj_pmf.delta_pmf(x, prof.levels, y_grid))
    var_xt = float((y_grid**2 * p_xt).sum())
    p_isi = dj_pmf.delta_pmf(isi_f, prof.levels, y_grid)
    p = dj_pmf.convolve_pmfs(dj_pmf.convolve_pmfs(p_isi, p_n), p_xt)
    p_rest = dj_pmf.convolve_pmfs(dj_pmf.convolve_pmfs(p_isi, dj_pmf.delta_pmf(h_dd, prof.levels, y_grid)), p_xt)
    if step:
        for wk in w:  # 178A-43/46: the quantization error through each FFE tap
            p_q = dj_pmf.uniform_pmf(y_grid, abs(wk) * step / 2)
            p = dj_pmf.convolve_pmfs(p, p_q)
            p_rest = dj_pmf.convolve_pmfs(p_rest, p_q)
    a_ni = dj_pmf.a_ni_at(y_grid, p, prof.der0)
    sig = {"tx": var_tx, "rj": var_rj, "rx": var_n, "isi": var_isi, "xt": var_xt,
           "q": float((w**2).sum()) * step**2 / 12}
    return _Final(com_db=20 * math.log10(a_s / a_ni), a_s=a_s, a_ni=a_ni,
                  sigmas={k: math.sqrt(max(v, 0.0)) for k, v in sig.items()}, ffe=w, dfe=dfe, adc_step=step,
                  ystep=ystep, p_rest=p_rest, var_g=var_g, var_rx=var_n, isi=isi)


MLSD_LAGS = 256  # UI lags of the 178A-56 correlation (so at most 255 error-event lengths; the sum stops far sooner)


def _input_noise(link: DjLink, prof: DjProfile, rx: RxConfig, pt: SearchResult, step: float,
                 n_lags: int = MLSD_LAGS) -> tuple[FloatArray, FloatArray]:
    """The noise autocorrelation at the Rx FFE input at a searched point (178A-17: RX, TX, jitter, crosstalk,
    and the white quantization noise Delta^2/12 when ``step``) and its receiver-noise part, UI lags 0.. (V^2)."""
    g, nz = link.grid, prof.noise
    m = g.samples_per_ui
    hctf = ctle_dj(g.freqs_hz, pt.gdc_db, pt.gdc2_db, prof)
    p0 = pulse(link, link.victim.h * hctf, link.victim.amplitude_v)
    aggs = [_delayed(pulse(link, a.h * hctf, a.amplitude_v), pt.tx_taps if a.kind == "FEXT" else np.eye(N_TX)[3], m)
            for a in link.aggressors]
    na = noise_autocorrelation(
        victim_pulse_v=_delayed(p0, pt.tx_taps, m), samples_per_ui=m, cursor_sample=pt.sample_index % p0.size,
        ui_s=g.ui_s, var_x=rx.var_x, eta0_v2_per_ghz=nz["eta0_v2_per_ghz"], h_rx=link.h_r * hctf,
        tx_noise_pulse_v=p0, snr_tx_db=nz["snr_tx_db"], a_dd_ui=nz["a_dd_ui"], sigma_rj_ui=nz["sigma_rj_ui"],
        aggressor_pulses_v=aggs, n_lags=n_lags)
    return na.total + quantization_autocorrelation(step, n_lags), na.rx


def mlsd_at(link: DjLink, prof: DjProfile, rx: RxConfig, pt: SearchResult, fin: _Final) -> MlsdResult:
    """178A.1.10 (:mod:`eqtune.eye.dj_mlsd`) at the COM_DFE point ``pt`` whose final computation is ``fin``."""
    r_in, r_rx = _input_noise(link, prof, rx, pt, fin.adc_step)
    return mlsd_com(com_dfe_db=fin.com_db, a_s=fin.a_s, a_ni=fin.a_ni, ystep=fin.ystep, p_rest=fin.p_rest,
                    var_g=fin.var_g, var_rn=fin.var_rx, r_noise_in=r_in, r_rx_in=r_rx, w=fin.ffe, isi=fin.isi,
                    b=float(fin.dfe[0]) if fin.dfe.size else 0.0, var_x=rx.var_x, levels=prof.levels,
                    der0=prof.der0, dcom_an_db=float(prof.noise["dcom_an_db"]))


def package_cases(prof: DjProfile) -> tuple[tuple[int, tuple[float, float]], ...]:
    """(case number, (TX, RX) line-1 lengths) of the profile's Test 1 and Test 2 (Table 178-14)."""
    p = prof.package
    return ((1, (float(p["test1_zp1_mm"][0]), float(p["test1_zp1_mm"][1]))),
            (2, (float(p["test2_zp1_mm"][0]), float(p["test2_zp1_mm"][1]))))


def grid_size(prof: DjProfile) -> int:
    """Points of the profile's joint TX FFE x CTLE grid."""
    return len(tx_grid(prof)) * len(ctle_settings(prof))


def compute_dj_com(channel: Channel, profile: str | DjProfile = "ieee-dj-kr", *, cases: tuple[int, ...] | None = None,
                   adc: bool | None = None, mlse: bool | None = None, samples_per_ui: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> DjComReport:
    """802.3dj COM of ``channel`` (module docstring). ``adc``: ADC quantization (None: on when the profile
    has ADC bits); ``mlse``: the MLSD reference receiver of 178A.1.10 (None: the profile's ``mlsd``).
    Every case also carries ``com_plain_db``, the figure with both off at the same search.
    ``progress(done, total)`` over all cases."""
    prof = profile if isinstance(profile, DjProfile) else load_dj_profile(profile)
    use_adc = bool(prof.noise["adc_bits"]) if adc is None else adc
    if adc and not int(prof.noise["adc_bits"]):
        raise InputError(f"profile {prof.name!r} has no ADC (noise.adc_bits = 0): drop --adc or set adc_bits")
    use_mlse = bool(prof.noise["mlsd"]) if mlse is None else mlse
    if use_mlse and len(prof.b_max) != 1:
        raise InputError(f"MLSE (178A.1.10) is defined on a 1-tap DFE reference receiver; profile {prof.name!r} "
                         f"has {len(prof.b_max)} DFE taps: use --no-mlse")
    all_cases = package_cases(prof)
    want = tuple(cases) if cases else tuple(c for c, _ in all_cases)
    bad = [c for c in want if c not in (1, 2)]
    if bad:
        raise InputError(f"package case {bad[0]!r} is unknown: use 1 or 2")
    rx = RxConfig.from_profile(prof)
    n_grid = grid_size(prof)
    total = n_grid * len(want)
    out: list[DjComCase] = []
    for k, (num, zp1) in enumerate(c for c in all_cases if c[0] in want):
        t0 = time.perf_counter()
        link = prepare_link(channel, prof, zp1[0], zp1[1], samples_per_ui=samples_per_ui)

        def tick(done: int, base: int = k * n_grid) -> None:
            if progress is not None:
                progress(base + done, total)

        best = search(link, prof, progress=tick)
        plain = _final_com(link, prof, rx, best, 0.0)
        fin = plain
        if use_adc and int(prof.noise["adc_bits"]):
            best, step = adc_rerank(link, prof, rx, best)
            fin = _final_com(link, prof, rx, best, step)
        ml = mlsd_at(link, prof, rx, best, fin) if use_mlse else None
        s = fin.sigmas
        out.append(DjComCase(
            package_case=num, zp1_mm=zp1, com_db=ml.com_db if ml else fin.com_db, fom_db=best.fom_db,
            g_dc_db=best.gdc_db,
            g_dc2_db=best.gdc2_db, tx_taps=[float(x) for x in best.tx_taps], rx_ffe=[float(x) for x in fin.ffe],
            dfe=[float(x) for x in fin.dfe], cursor_sample=best.sample_index, a_s_mv=fin.a_s * 1e3,
            a_ni_mv=fin.a_ni * 1e3, sigma_tx_mv=s["tx"] * 1e3, sigma_rj_mv=s["rj"] * 1e3, sigma_rx_mv=s["rx"] * 1e3,
            sigma_isi_mv=s["isi"] * 1e3, sigma_xt_mv=s["xt"] * 1e3, sigma_q_mv=s["q"] * 1e3,
            adc_step_mv=fin.adc_step * 1e3, points_searched=best.points,
            search_s=round(time.perf_counter() - t0, 3), com_plain_db=plain.com_db, com_dfe_db=fin.com_db,
            mlsd_gain_db=ml.gain_db if ml else None, der_mlsd=ml.der_mlsd if ml else None,
            g_an=ml.g_an if ml else None, mlsd_terms=ml.terms if ml else None))
    worst = min(out, key=lambda c: c.com_db)
    kinds = {"FEXT": sum(a.kind == "FEXT" for a in channel.aggressors),
             "NEXT": sum(a.kind == "NEXT" for a in channel.aggressors)}
    settings: dict[str, object] = {
        "receiver": f"MMSE Rx FFE {rx.n_taps} taps ({rx.n_pre} pre) + {rx.n_dfe} DFE",
        "floating_ffe_taps": "not solved (fixed taps only)" if prof.ffe.float_groups else "none",
        "adc_quantization": "on" if use_adc and prof.noise["adc_bits"] else "off",
        "mlse": (f"on (178A.1.10 MLSD, dCOM_an {float(prof.noise['dcom_an_db']):g} dB)" if use_mlse else "off"),
        "samples_per_ui": samples_per_ui or prof.samples_per_ui,
        "frequency_step_hz": prof.frequency_step_ghz * 1e9,
        "search": "FOM (MMSE) over the full TX FFE x CTLE grid and +-UI/2 sampling times",
    }
    plain_worst = min(c.com_plain_db for c in out)
    return DjComReport(channel=channel.name, profile=prof.name, com_db=worst.com_db, com_plain_db=plain_worst,
                       passed=bool(worst.com_db >= COM_PASS_DB), threshold_db=COM_PASS_DB,
                       worst_case=worst.package_case, cases=out, der0=prof.der0, aggressors=kinds,
                       settings=settings)
