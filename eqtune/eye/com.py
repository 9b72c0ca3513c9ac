"""COM as the standard computes it (IEEE 802.3 Annex 93A as used by 802.3ck 120F/162A/163A).

Procedure (93A.1.6 and 93A.1.7, MATLAB COM 3.70's ``optimize_fom`` then its COM):

1. for each package case of the profile (802.3ck: case 1 and case 2, the config sheets' ``z_p select``),
   the figure of merit (93A-36, ``eqtune.eye.fom``) of every point of the sheet's TX FFE x CTLE grid,
   at the Mueller-Muller phase; the EQ with the best FOM wins;
2. COM (93A-1) at that EQ: A_s over A_ni, A_ni read at DER_0 from the exact ISI + crosstalk + jitter
   distribution (``EyeEngine.evaluate``);
3. the reported COM is the worse of the package cases; PASS when it is at least the sheet's threshold
   (3 dB in the KR, C2C and CR sheets).

``compute_com`` is the API; ``eqtune com`` (``eqtune.cli.com_cmd``) its front end. Units: V in the
engine, mV and dB in the report (as MATLAB COM prints them).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from eqtune.channel.model import Channel
from eqtune.errors import InputError
from eqtune.serdes.profile import SerdesProfile, load_profile

#: COM pass threshold of the 802.3ck KR, C2C and CR config sheets ("COM Pass threshold" = 3 dB;
#: ../shared/com-golden/README.md "COM pass threshold 3 dB"; cortalo/serdeskit compute_com_kr_backplane.py
#: com_min_db=3.0)
COM_PASS_DB = 3.0
PACKAGE_CASES = (1, 2)  # eqtune.channel.package: the 802.3ck sheets' two package cases


@dataclass(frozen=True)
class ComCase:
    """COM of one package case at the EQ its FOM search found (mV, dB, UI)."""

    package_case: int
    com_db: float
    fom_db: float
    eq: dict[str, float]
    a_s_mv: float
    a_ni_mv: float
    cursor_mv: float
    sigma_tx_mv: float
    sigma_isi_mv: float
    sigma_jitter_mv: float
    sigma_xt_mv: float
    sigma_rx_mv: float
    sample_phase_ui: float
    dfe_taps: list[float]
    il_db_nyquist_with_packages: float
    points_searched: int
    search_s: float


@dataclass(frozen=True)
class ComReport:
    """COM of a channel under a profile: every package case, the worse one, the channel's figures."""

    channel: str
    profile: str
    com_db: float
    passed: bool
    threshold_db: float
    worst_case: int
    cases: list[ComCase]
    der0: float
    il_db_nyquist: float
    ild_rms_db: float
    icn_mv: float | None
    aggressors: dict[str, int]
    settings: dict[str, object] = field(default_factory=dict)

    @property
    def worst(self) -> ComCase:
        return next(c for c in self.cases if c.package_case == self.worst_case)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def package_cases(profile: SerdesProfile) -> tuple[int, ...]:
    """The package cases COM evaluates under ``profile``: both 802.3ck cases when it has packages."""
    return PACKAGE_CASES if profile.package_case else (0,)


def _icn_mv(channel: Channel, profile: SerdesProfile) -> float | None:
    """ICN (92.10.7 weighting, ``eqtune.channel.metrics.icn_mv``) with each aggressor at the profile's
    A_fe (FEXT) or A_ne (NEXT) and the profile's T_r."""
    from eqtune.channel.metrics import icn_mv

    if not channel.aggressors:
        return None
    tx = profile.tx
    aggs = tuple(a if a.amplitude_v is not None else
                 replace(a, amplitude_v=tx.amplitude_fe_v if a.kind == "FEXT" else tx.amplitude_ne_v)
                 for a in channel.aggressors)
    return icn_mv(replace(channel, aggressors=aggs), rise_ps=tx.rise_time_ps or 9.6)


def compute_com(channel: Channel, profile: str | SerdesProfile | None = None, *,
                cases: tuple[int, ...] | None = None, tx_noise: str | None = None, floating_taps: bool = True,
                samples_per_ui: int = 32, progress: Callable[[int, int], None] | None = None) -> ComReport:
    """COM of ``channel`` under ``profile`` by the standard's procedure (module docstring).

    ``cases``: package cases to evaluate (default: both); ``tx_noise``/``floating_taps``: the engine's
    options (defaults: MATLAB COM's TX noise, the profile's floating taps). ``progress(done, total)`` is
    called as the grid is searched (rows over all cases)."""
    from eqtune.channel.metrics import il_db, ild_rms_db
    from eqtune.eye.engine import EyeEngine

    prof = load_profile(profile if profile is not None else channel.serdes_profile)
    if prof.rx.ctle is None or not prof.tx.taps:
        raise InputError(f"profile {prof.name!r} has no TX FFE x CTLE grid: COM needs a host SerDes profile "
                         "such as ieee-3ck-kr, ieee-3ck-c2c or ieee-3ck-cr")
    use = tuple(cases) if cases else package_cases(prof)
    bad = [c for c in use if c not in (0, *PACKAGE_CASES)]
    if bad:
        raise InputError(f"package case {bad[0]!r} is unknown: use 1 or 2")
    done = 0
    total = 0
    out: list[ComCase] = []
    f_nyq = prof.baud_gbd * 1e9 / 2.0
    settings: dict[str, object] = {}
    for c in use:  # one engine at a time: each holds its cursor stacks (a few hundred MB with 8 aggressors)
        t0 = time.perf_counter()
        eng = EyeEngine(channel, prof, direction="serdes", package_case=c, samples_per_ui=samples_per_ui,
                        tx_noise=tx_noise, floating_taps=floating_taps)
        ks = eng.knob_space()
        names, grid = ks.names, ks.grid()
        total = total or len(grid) * len(use)
        base = done

        def tick(n: int, base: int = base, total: int = total) -> None:
            if progress is not None:
                progress(base + n, total)

        fom = eng.fom_grid(grid, names, progress=tick)
        done += len(grid)
        best = int(np.argmax(fom))
        point = {n: float(v) for n, v in zip(names, grid[best])}
        terms = eng.fom_terms(*eng.grid_rows(grid[best:best + 1], names)).row(0)
        r = eng.evaluate(point)
        k = int(np.argmin(np.abs(channel.freqs_hz - f_nyq)))
        s21 = eng._packaged_s21(channel.sdd21, channel.sdd11, channel.sdd22, "tx")[k] if c else channel.sdd21[k]
        out.append(ComCase(
            package_case=c, com_db=float(r.com_db), fom_db=float(terms["fom_db"]), eq=dict(r.eq),
            a_s_mv=terms["a_s"] * 1e3, a_ni_mv=terms["a_s"] * 1e3 / 10 ** (float(r.com_db) / 20.0),  # 93A-1: COM = 20 log10(A_s / A_ni)
            cursor_mv=float(r.cursor_mv), sigma_tx_mv=terms["sigma_tx"] * 1e3,
            sigma_isi_mv=terms["sigma_isi"] * 1e3, sigma_jitter_mv=terms["sigma_j"] * 1e3,
            sigma_xt_mv=terms["sigma_xt"] * 1e3, sigma_rx_mv=terms["sigma_n"] * 1e3,
            sample_phase_ui=float(r.sample_phase_ui), dfe_taps=list(r.dfe_taps),
            il_db_nyquist_with_packages=float(-20.0 * math.log10(max(abs(s21), 1e-300))),
            points_searched=len(grid), search_s=round(time.perf_counter() - t0, 3)))
        settings = {
            "tx_noise": eng.tx_noise, "floating_taps": eng._float is not None, "sampling": eng.sampling,
            "samples_per_ui": samples_per_ui, "frequency_step_hz": float(channel.df_hz),
            "search": "FOM (93A-36) over the full TX FFE x CTLE grid, COM at the best-FOM EQ",
        }
        del eng, grid, fom
    worst = min(out, key=lambda x: x.com_db)
    kinds = {"FEXT": sum(a.kind == "FEXT" for a in channel.aggressors),
             "NEXT": sum(a.kind == "NEXT" for a in channel.aggressors)}
    return ComReport(channel=channel.name, profile=prof.name, com_db=worst.com_db,
                     passed=bool(worst.com_db >= COM_PASS_DB), threshold_db=COM_PASS_DB,
                     worst_case=worst.package_case, cases=out, der0=float(prof.noise.der0),
                     il_db_nyquist=float(il_db(channel, f_nyq)), ild_rms_db=float(ild_rms_db(channel)),
                     icn_mv=_icn_mv(channel, prof), aggressors=kinds, settings=settings)
