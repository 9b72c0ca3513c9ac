"""PyChOpMarg 3.4.0 as a second opinion on eqtune's COM.

Two halves, run by two interpreters so that PyChOpMarg's pins never touch eqtune's venv:

1. ``pcm`` (run with the PyChOpMarg venv, e.g. ``/work/venv-pcm/bin/python``)::

       nice -n 10 /work/venv-pcm/bin/python benchmarks/pychopmarg_compare.py pcm gore_c2c_12db

   runs PyChOpMarg's COM (802.3ck C2C parameters, 50 MHz frequency step, one package case, full
   exhaustive TX FFE x CTLE search unless ``--local-search N``) on one channel set of
   ``../shared/channels-ieee`` and stores ``benchmarks/results/pychopmarg_<set>_<mode>.json``
   (COM, chosen EQ, DFE taps, noise terms, timings).

2. ``compare`` (run with eqtune's venv)::

       /work/venv/bin/python benchmarks/pychopmarg_compare.py compare

   computes eqtune's COM on the same channel sets with matched parameters (``EyeEngine``,
   ``direction="serdes"``), reads the stored PyChOpMarg results and writes
   ``benchmarks/results/pychopmarg_comparison.json`` plus a Markdown table on stdout.

A full COM run is minutes of CPU: never part of CI. Known PyChOpMarg 3.4.0 quirks worked around here:
an empty Rx FFE fails (we give it a one-tap unity Rx FFE, ``dw = 0``); it assumes port order 1->2/3->4
(true of every file in channels-ieee, see its README); its TX FFE always has 3 post-cursor slots
(``calc_Hffe(..., n_post=3)``), so c(2), c(3) are given as fixed zeros; it refuses ``gamma0 = 0`` in its
range check although the 802.3ck package line has gamma0 = 0, so we set it after validation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def shared_dir() -> Path:
    import os

    env = os.environ.get("EQTUNE_SHARED")
    for c in ([Path(env)] if env else []) + [ROOT.parent / "shared", ROOT.parent.parent / "shared"]:
        if (c / "channels-ieee").is_dir():
            return c
    raise SystemExit("../shared/channels-ieee not found (set EQTUNE_SHARED)")


# Channel sets: THRU + aggressors, as PyChOpMarg's dict form wants them.
def channel_sets() -> dict[str, dict[str, list[Path]]]:
    base = shared_dir() / "channels-ieee"
    g = base / "gore_3ck_02_0519_C2C_12dB"
    t4 = base / "tracy_3ck_02_0119_DPO_4in"
    t10 = base / "tracy_3ck_02_0119_DPO_10in"
    t12 = base / "tracy_3ck_02_0119_DPO_12in"

    def tracy(d: Path, stem: str) -> dict[str, list[Path]]:
        return {
            "THRU": [d / f"{stem}_THRU.s4p"],
            "FEXT": sorted(d.glob(f"{stem}_FEN*.s4p")),
            "NEXT": sorted(d.glob(f"{stem}_NEN*.s4p")),
        }

    return {
        "gore_c2c_12db": {"THRU": [g / "C2C_PCB_SYSVIA_12dB_thru.s4p"], "FEXT": [], "NEXT": []},
        "tracy_dpo_4in": tracy(t4, "DPO_4in_Meg7"),
        "tracy_dpo_10in": tracy(t10, "DPO_10in_Meg7"),
        "tracy_dpo_12in": {"THRU": [t12 / "DPO_12in_Meg7_THRU.s4p"], "FEXT": [], "NEXT": []},
    }


# IEEE 802.3ck C2C reference values, as listed in ../shared/com-golden/README.md
# (config_com_ieee8023_93a=3ck_d3p1_120F_C2C_11_30_21), package case 1.
C2C = {
    "fb_gbd": 53.125,
    "L": 4,
    "M": 32,
    "DER_0": 1e-5,
    "T_r_ns": 0.0075,
    "RLM": 0.95,
    "A_v": 0.413,
    "A_fe": 0.413,
    "A_ne": 0.608,
    "R_0": 50.0,
    "R_d": 50.0,
    "A_DD": 0.02,
    "SNR_TX": 33.0,
    "eta_0": 2e-8,  # V^2/GHz
    "sigma_Rj": 0.01,
    "f_z": 21.25,
    "f_p1": 21.25,
    "f_p2": 53.125,
    "f_LF": 0.6640625,
    "g_DC": [-float(n) for n in range(21)],  # -20..0 dB, 1 dB steps (PyChOpMarg visits this order)
    "g_DC2": [-float(n) for n in range(5)],  # -4..0 dB
    # TX FFE c(-3), c(-2), c(-1), c(1), [c(2), c(3) fixed 0: PyChOpMarg's n_post = 3]
    "tx_taps_min": [-0.04, 0.0, -0.28, -0.10, 0.0, 0.0],
    "tx_taps_max": [0.0, 0.10, 0.0, 0.0, 0.0, 0.0],
    "tx_taps_step": [0.02, 0.02, 0.02, 0.02, 0.0, 0.0],
    "c0_min": 0.54,
    "f_r": 0.75,
    "dfe_max": [0.65, 0.15, 0.1, 0.1, 0.1, 0.1],
    "dfe_min": [0.3, 0.05, -0.04, -0.04, -0.04, -0.04],
    # package (93A.1.2): pad/die C_d, L_s, bump C_b, ball C_p (nF, nH), line z_c (ohm), lengths (mm)
    "C_d_nF": 1.2e-4,
    "L_s_nH": 0.12,
    "C_b_nF": 3e-5,
    "C_p_nF": 8.7e-5,
    "z_c": [87.5, 92.5],
    "zp_tx": [13.0, 1.8],
    "zp_rx": [11.0, 1.8],
    "zp_next": [13.0, 1.8],
    "zp_fext": [13.0, 1.8],
    "gamma0": 0.0,
    "a1": 9.909e-4,
    "a2": 2.772e-4,
    "tau": 6.141e-3,
}


# IEEE 802.3ck KR (config_com_ieee8023_93a=3ck_d3p1_KR_11_30_21 as transcribed in cortalo/serdeskit
# examples/compute_com_kr_backplane.py; channels/serdes/ieee-3ck-kr.toml cites each value): the C2C entries
# that differ. PyChOpMarg has no floating DFE taps: compare with eqtune's KR profile without them too.
# T_r: the 802.3ck KR config sheet config_com_ieee8023_93a=3ck_SA_KR_08_17_2022.xlsx (github.com/Omer-Sella/COM
# e51902a7, config_sheets_100G/) cell G14: 7.5e-3 ns, as C2C.
KR_OVERRIDES = {
    "DER_0": 1e-4, "eta_0": 8.2e-9, "T_r_ns": 0.0075, "f_r": 0.75,
    "g_DC2": [-float(n) for n in range(7)],
    "tx_taps_min": [-0.06, 0.0, -0.34, -0.20, 0.0, 0.0], "tx_taps_max": [0.0, 0.12, 0.0, 0.0, 0.0, 0.0],
    "dfe_max": [0.85, 0.3, 0.2, 0.2, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1],
    "dfe_min": [0.3, 0.05] + [-0.03] * 10,
    "zp_tx": [12.0, 1.8], "zp_rx": [12.0, 1.8], "zp_next": [12.0, 1.8], "zp_fext": [12.0, 1.8],
}
# C2C NEXT package: 11 mm (serdeskit examples/compute_com_c2c.py: z_p(NEXT) = [11, 29]); the earlier runs of
# this script used 13 mm for NEXT (no NEXT on gore; tracy results in the tables predate the fix)
C2C["zp_next"] = [11.0, 1.8]


def use_profile(name: str) -> None:
    """Switch the parameter set (module-level ``C2C`` dict) to ``name``: "c2c" (default) or "kr"."""
    if name == "kr":
        C2C.update(KR_OVERRIDES)


def pcm_params(fstep_ghz: float, local_search: int, *, rx_package_ball_first: bool = False):
    """PyChOpMarg ``COMParams`` for 802.3ck C2C (values above).

    ``rx_package_ball_first``: give PyChOpMarg's RX package its line segments in the order a signal meets
    them from the channel (ball side 1.8 mm @ 92.5 ohm, then z_p @ 87.5 ohm to the die), as MATLAB COM builds
    it and ../shared/com-golden lists it ("Full RX package, case 1"). PyChOpMarg 3.4.0 builds the RX line
    from ``zip(z_c, zp_rx)`` unreversed (pychopmarg/com.py l.464 and l.478: C_p, then z_p[0] @ z_c[0], then
    1.8 mm @ z_c[1], then the die), so its RX package is the TX package's segment order seen from the wrong
    end. Only ``zp_rx`` and ``z_c_rx`` change, to [1.8, z_p] and [92.5, 87.5]: the same segments, the
    standard's order (93A.1.2, Figure 93A-2: the receiver package is the mirror image of the transmitter's)."""
    import numpy as np
    from pychopmarg.config.template import COMParams

    c = C2C
    p = COMParams(
        fb=c["fb_gbd"], fstep=fstep_ghz, L=c["L"], M=c["M"], DER_0=c["DER_0"], T_r=c["T_r_ns"],
        RLM=c["RLM"], A_v=c["A_v"], A_fe=c["A_fe"], A_ne=c["A_ne"], R_0=c["R_0"],
        A_DD=c["A_DD"], SNR_TX=c["SNR_TX"], eta_0=c["eta_0"], sigma_Rj=c["sigma_Rj"],
        f_z=c["f_z"], f_p1=c["f_p1"], f_p2=c["f_p2"], f_LF=c["f_LF"], g_DC=list(c["g_DC"]),
        g_DC2=list(c["g_DC2"]), tx_taps_min=list(c["tx_taps_min"]), tx_taps_max=list(c["tx_taps_max"]),
        tx_taps_step=list(c["tx_taps_step"]), c0_min=c["c0_min"], f_r=c["f_r"],
        dfe_min=np.array(c["dfe_min"]), dfe_max=np.array(c["dfe_max"]),
        # Quirk: an empty Rx FFE fails in 3.4.0, so a one-tap unity Rx FFE (no pre-cursor taps).
        rx_taps_min=np.array([1.0]), rx_taps_max=np.array([1.0]), dw=0,
        R_d=np.array([c["R_d"]]), C_d=[c["C_d_nF"]], C_b=[c["C_b_nF"]], C_p=[c["C_p_nF"]],
        L_s=[c["L_s_nH"]], z_c=list(c["z_c"]), z_p=[c["zp_tx"][0]],
        gamma0=1e-7, a1=c["a1"], a2=c["a2"], tau=c["tau"], z_pB=1.8,
        zp_tx=list(c["zp_tx"]), zp_rx=list(c["zp_rx"]), zp_next=list(c["zp_next"]),
        zp_fext=list(c["zp_fext"]), local_search=local_search,
    )
    p.gamma0 = c["gamma0"]  # quirk: its range check refuses 0, the 802.3ck value
    if rx_package_ball_first:
        p.zp_rx = [c["zp_rx"][1], c["zp_rx"][0]]
        p.z_c_rx = [c["z_c"][1], c["z_c"][0]]
    return p


def use_boxcar_pulse(com) -> None:
    """Make PyChOpMarg COM object ``com`` form its pulses with MATLAB COM's M-sample box-car (see
    ``_run_pcm``). Its unequalized pulses, formed in ``COM()``, are formed again."""
    import numpy as np

    m = int(round(com.ui / com.times[1]))
    k = np.arange(m)
    com._Xsinc = np.exp(-2j * np.pi * np.outer(com.freqs, k) * com.times[1]).sum(axis=1)
    com._calc_uneq_pulse_resps()


def _f(x) -> float | None:
    try:
        import math

        v = float(x)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def run_pcm(set_name: str, mode: str, fstep_ghz: float, local_search: int, *, fom_n_pre: int = 0,
            eq: list[float] | None = None, snr_tx_db: float | None = None,
            rx_package_ball_first: bool = False, pulse_boxcar: bool = False, tx_filter_delay: bool = False) -> dict:
    """PyChOpMarg COM on one channel set. ``eq`` = [c(-3), c(-2), c(-1), c(1), g_DC, g_DC2] pins the EQ
    (a one-point "search"); ``fom_n_pre`` > 0 makes its PRZF FOM count that many pre-cursor UIs (see
    docs/pychopmarg-comparison.md: with dw = 0 it counts none); ``snr_tx_db`` overrides SNR_TX (diagnostics)."""
    if eq is not None:
        C2C["g_DC"], C2C["g_DC2"] = [float(eq[4])], [float(eq[5])]
        C2C["tx_taps_min"] = [float(v) for v in eq[:4]] + [0.0, 0.0]
        C2C["tx_taps_max"] = [float(v) for v in eq[:4]] + [0.0, 0.0]
        C2C["tx_taps_step"] = [0.01 if v != 0 else 0.0 for v in eq[:4]] + [0.0, 0.0]
    return _run_pcm(set_name, mode, fstep_ghz, local_search, fom_n_pre, snr_tx_db, rx_package_ball_first,
                    pulse_boxcar, tx_filter_delay)


def _run_pcm(set_name: str, mode: str, fstep_ghz: float, local_search: int, fom_n_pre: int,
             snr_tx_db: float | None, rx_package_ball_first: bool = False, pulse_boxcar: bool = False,
             tx_filter_delay: bool = False) -> dict:
    """``pulse_boxcar``: form PyChOpMarg's pulses as MATLAB COM does, the impulse response summed over a
    causal box-car of M samples (``filter(ones(samples_per_ui, 1), 1, ...)``; ../shared/com-golden README:
    "32-sample box-car"), instead of its zero-phase continuous 1-UI rectangle (``COM._Xsinc =
    M sinc(f T)``, pychopmarg/com.py l.241, applied in ``pulse_resp`` l.935). The two differ by half a sample in
    time, so the Mueller-Muller cursor (chosen on the 1/M UI grid) lands on another sample. Done by replacing
    that one array with the box-car's transfer function sum_k exp(-j 2 pi f k dt), k = 0..M-1.

    ``tx_filter_delay``: give PyChOpMarg's T_r filter the 3 T_r delay MATLAB COM's has (../shared/com-golden
    README "TX rise-time filter ... with the delay of 3 T_r that MATLAB applies"; PyChOpMarg's ``calc_Ht``,
    pychopmarg/com.py l.630-632, is 93A-46 without it). 3 T_r = 22.5 ps is 38.25 samples at 32 per UI: the
    quarter sample moves the 1/M UI grid the Mueller-Muller cursor is chosen on. Done by multiplying its
    ``_Ht`` by exp(-j 2 pi f 3 T_r) (the channels' H21, formed with the delay-free Ht divided out, are kept)."""
    import numpy as np
    import pychopmarg
    from pychopmarg.com import COM
    from pychopmarg.common import OptMode

    sets = channel_sets()
    ch = sets[set_name]
    params = pcm_params(fstep_ghz, local_search, rx_package_ball_first=rx_package_ball_first)
    if snr_tx_db is not None:
        params.SNR_TX = snr_tx_db
    if fom_n_pre:
        orig_fom = COM.calc_fom

        def calc_fom(self, tx_ix, Hctf, *a, **k):  # noqa: N803
            k["n_pre"] = fom_n_pre
            return orig_fom(self, tx_ix, Hctf, *a, **k)

        COM.calc_fom = calc_fom
    t0 = time.perf_counter()
    com = COM(params, ch)
    com.n_procs = 1  # shared 2-core machine: serial search
    if tx_filter_delay:
        com._Ht = com._Ht * np.exp(-2j * np.pi * com.freqs * 3.0 * C2C["T_r_ns"] * 1e-9)
    if pulse_boxcar:
        use_boxcar_pulse(com)
    elif tx_filter_delay:
        com._calc_uneq_pulse_resps()
    if mode == "PRZF":
        # Quirk: with the one-tap unity Rx FFE, 3.4.0's PRZF path calls `przf()` to "optimize" it and
        # asserts (n_pre + n_DFE < n_taps - 1). Nothing to optimize: hand back the unity tap itself
        # (`null_rx_ffe`, whose response PyChOpMarg caches), i.e. the 802.3ck CTLE + DFE receiver.
        import pychopmarg.com as pcm_com

        orig_przf = pcm_com.przf

        def przf_one_tap(pr, M, nTaps, *a, **k):  # noqa: N803 (PyChOpMarg's names)
            if nTaps == 1:
                return com.null_rx_ffe, None, None
            return orig_przf(pr, M, nTaps, *a, **k)

        pcm_com.przf = przf_one_tap
    t_init = time.perf_counter() - t0
    t1 = time.perf_counter()
    value = com(opt_mode=OptMode[mode])
    t_com = time.perf_counter() - t1
    tx = [float(x) for x in com._tx_combs[com.tx_ix]]
    c0 = 1.0 - float(np.abs(tx).sum())
    fr = com.fom_rslts
    cr = com.com_rslts
    out = {
        "tool": "PyChOpMarg",
        "version": getattr(pychopmarg, "__version__", "3.4.0"),
        "channel_set": set_name,
        "files": {k: [str(p.relative_to(shared_dir())) for p in v] for k, v in ch.items()},
        "opt_mode": mode,
        "fstep_ghz": fstep_ghz,
        "local_search": local_search,
        "fom_n_pre": fom_n_pre,
        "snr_tx_db": params.SNR_TX,
        "pinned_eq": len(C2C["g_DC"]) == 1 and all(st in (0.0, 0.01) for st in C2C["tx_taps_step"]),
        "package_case": f"802.3ck case 1 (z_p TX/RX/NEXT/FEXT {C2C['zp_tx'][0]}/{C2C['zp_rx'][0]}/"
                        f"{C2C['zp_next'][0]}/{C2C['zp_fext'][0]} mm + 1.8 mm)",
        "com_db": _f(value),
        "eq": {
            "ctle_gdc": float(com.gDC),
            "ctle_gdc2": float(com.gDC2),
            "tx_cm3": tx[0], "tx_cm2": tx[1], "tx_cm1": tx[2], "tx_c0": c0, "tx_c1": tx[3],
        },
        "dfe_taps": [float(b) for b in np.atleast_1d(cr.get("dfe_taps", com.dfe_taps))],
        "dfe_max": C2C["dfe_max"],
        "dfe_min": C2C["dfe_min"],
        "As_v": _f(cr.get("As")),
        "Ani_v": _f(cr.get("Ani")),
        "fom_db": _f(fr.get("FOM")),
        "sigma_v": {k: _f(cr.get(k)) for k in ("sigma_Tx", "sigma_G", "sigma_N", "sigma_J", "sigma_ISI",
                                              "sigma_XT")},
        "cursor_ix": int(cr.get("cursor_ix", -1)),
        "n_fom_evals": int(getattr(com, "n_fom_evals", 0)),
        "timing_s": {"init": t_init, "com": t_com,
                     "per_fom_eval_ms": 1e3 * t_com / max(1, int(getattr(com, "n_fom_evals", 1)))},
        "params": C2C,
    }
    return out


# --------------------------------------------------------------------------------------------------
# eqtune side
# --------------------------------------------------------------------------------------------------


_TOML = """name = "{name}"
baud_gbd = 53.125
modulation = "PAM4"
serdes_profile = "ieee-3ck-c2c"
df_mhz = {df_mhz}

[[segments]]
type = "touchstone"
file = "{thru}"
port_order = "1-2/3-4"
"""


def channel_toml(set_name: str, df_hz: float = 50e6) -> str:
    """The channel set as an eqtune channel TOML (thru + aggressors, port order 1-2/3-4, ``df_hz`` grid), the
    file a user gives ``eqtune com`` to run it at that frequency step."""
    ch = channel_sets()[set_name]
    text = _TOML.format(name=set_name, df_mhz=df_hz / 1e6, thru=ch["THRU"][0])
    for kind in ("FEXT", "NEXT"):
        for f in ch[kind]:
            text += (f'\n[[aggressors]]\nname = "{f.stem}"\nkind = "{kind}"\nfile = "{f}"\n'
                     'port_order = "1-2/3-4"\n')
    return text


def eqtune_channel(set_name: str, df_hz: float = 50e6):
    """The channel set as an eqtune ``Channel`` (thru + aggressors, port order 1-2/3-4, 50 MHz grid)."""
    import tempfile

    from eqtune.channel import load_channel

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"{set_name}.toml"
        p.write_text(channel_toml(set_name, df_hz))
        return load_channel(p, df_hz=df_hz)


EQ_NAMES = ("tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "ctle_gdc", "ctle_gdc2")


def run_eqtune(set_name: str, pcm: dict | None) -> dict:
    """eqtune's COM on the same channel set with matched 802.3ck C2C parameters (serdes direction):
    its own exhaustive best over the same grid, and its COM at PyChOpMarg's chosen EQ."""
    import numpy as np

    from eqtune.eye.engine import EyeEngine

    t0 = time.perf_counter()
    ch = eqtune_channel(set_name)
    eng = EyeEngine(ch, "ieee-3ck-c2c", direction="serdes", ber=C2C["DER_0"])
    space = eng.knob_space(list(EQ_NAMES))
    grid = space.grid()
    points = [space.to_point(r) for r in grid]
    t_prep = time.perf_counter() - t0
    t1 = time.perf_counter()
    batch = eng.evaluate_batch(points)
    t_search = time.perf_counter() - t1
    com = np.asarray(batch.com_db, dtype=float)
    i = int(np.nanargmax(com))
    best = eng.evaluate(points[i])
    out = {
        "tool": "eqtune",
        "channel_set": set_name,
        "n_points": len(points),
        "n_aggressors": len(ch.aggressors),
        "com_db_best": float(best.com_db),
        "eq_best": {k: float(points[i][k]) for k in EQ_NAMES},
        "dfe_taps_best": [float(b) for b in best.dfe_taps],
        "eye_height_min_mv_best": float(best.eye_height_min_mv),
        "timing_s": {"prepare": t_prep, "search": t_search},
    }
    if pcm is not None and pcm.get("eq"):
        pt = {k: float(pcm["eq"][k]) for k in EQ_NAMES}
        r = eng.evaluate(pt)
        out["com_db_at_pychopmarg_eq"] = float(r.com_db)
        out["dfe_taps_at_pychopmarg_eq"] = [float(b) for b in r.dfe_taps]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pcm", help="run PyChOpMarg COM on one channel set (PyChOpMarg venv)")
    a.add_argument("set", choices=sorted(channel_sets()))
    a.add_argument("--mode", choices=("PRZF", "MMSE"), default="PRZF",
                   help="PRZF = 802.3ck 93A.1.6 FOM search (default); MMSE = 802.3dj 178A")
    a.add_argument("--fstep-ghz", type=float, default=0.05)
    a.add_argument("--local-search", type=int, default=0, help="MATLAB 'Local Search' radius; 0 = exhaustive")
    a.add_argument("--fom-n-pre", type=int, default=0,
                   help="count this many pre-cursor UIs in the PRZF FOM (0 = PyChOpMarg as is: none with dw=0)")
    a.add_argument("--eq", type=lambda t: [float(v) for v in t.split(",")], default=None,
                   help="pin the EQ: c-3,c-2,c-1,c1,gDC,gDC2 (one-point run, for diagnostics)")
    a.add_argument("--snr-tx-db", type=float, default=None, help="override SNR_TX (diagnostics)")
    a.add_argument("--tag", default="", help="suffix for the result file name")
    a.add_argument("--profile", choices=("c2c", "kr"), default="c2c", help="802.3ck parameter set")
    b = sub.add_parser("compare", help="eqtune COM vs the stored PyChOpMarg results (eqtune venv)")
    b.add_argument("--sets", nargs="*", default=None)
    args = ap.parse_args(argv)

    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.cmd == "pcm":
        use_profile(args.profile)
        out = run_pcm(args.set, args.mode, args.fstep_ghz, args.local_search, fom_n_pre=args.fom_n_pre,
                      eq=args.eq, snr_tx_db=args.snr_tx_db)
        suffix = "" if args.local_search == 0 else f"_ls{args.local_search}"
        suffix += f"_npre{args.fom_n_pre}" if args.fom_n_pre else ""
        suffix += f"_{args.tag}" if args.tag else ""
        suffix += "_kr" if args.profile == "kr" else ""
        path = RESULTS / f"pychopmarg_{args.set}_{args.mode.lower()}{suffix}.json"
        path.write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps({k: out[k] for k in ("channel_set", "com_db", "eq", "dfe_taps", "timing_s")}, indent=1))
        print(f"wrote {path}", file=sys.stderr)
        return 0
    return compare(args.sets)


def compare(sets: list[str] | None) -> int:
    rows = []
    def result_file(n: str) -> Path:
        exact = RESULTS / f"pychopmarg_{n}_przf.json"  # exhaustive search; else a local-search run
        return exact if exact.exists() else next(iter(sorted(RESULTS.glob(f"pychopmarg_{n}_przf_ls*.json"))), exact)

    names = sets or [n for n in channel_sets() if result_file(n).exists()]
    for n in names:
        pf = result_file(n)
        pcm = json.loads(pf.read_text()) if pf.exists() else None
        eq = run_eqtune(n, pcm)
        row = {"channel_set": n, "pychopmarg": pcm and {k: pcm[k] for k in (
                   "com_db", "eq", "dfe_taps", "timing_s", "sigma_v", "As_v", "Ani_v", "local_search", "n_fom_evals")},
               "eqtune": eq}
        if pcm is not None:
            row["delta_db_best"] = eq["com_db_best"] - pcm["com_db"]
            row["delta_db_same_eq"] = eq.get("com_db_at_pychopmarg_eq", float("nan")) - pcm["com_db"]
        # optional diagnostics (see docs/pychopmarg-comparison.md): PyChOpMarg pinned at eqtune's best EQ,
        # and PyChOpMarg's search with pre-cursor ISI counted in its FOM
        for key, pattern in (("pychopmarg_at_eqtune_eq", f"pychopmarg_{n}_przf_eqtune_eq.json"),
                             ("pychopmarg_fom_with_precursors", f"pychopmarg_{n}_przf*_npre*.json")):
            found = sorted(RESULTS.glob(pattern), key=lambda f: ("_ls" in f.name, f.name))  # exhaustive first
            if found:
                d = json.loads(found[0].read_text())
                row[key] = {"file": found[0].name, "com_db": d["com_db"], "eq": d["eq"],
                            "local_search": d.get("local_search"), "fom_n_pre": d.get("fom_n_pre")}
        rows.append(row)
    out = RESULTS / "pychopmarg_comparison.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print("| channel set | PyChOpMarg COM (dB) | its EQ (c-3,c-2,c-1,c1; gDC,gDC2) | eqtune COM at that EQ | "
          "eqtune best COM | eqtune EQ | delta best (dB) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        p, e = r["pychopmarg"], r["eqtune"]

        def fmt(eqd):
            return (f"{eqd['tx_cm3']:+.2f},{eqd['tx_cm2']:+.2f},{eqd['tx_cm1']:+.2f},{eqd['tx_c1']:+.2f}; "
                    f"{eqd['ctle_gdc']:g},{eqd['ctle_gdc2']:g}")

        print(f"| {r['channel_set']} | {p['com_db']:.3f} | {fmt(p['eq'])} | "
              f"{e.get('com_db_at_pychopmarg_eq', float('nan')):.3f} | {e['com_db_best']:.3f} | "
              f"{fmt(e['eq_best'])} | {r.get('delta_db_best', float('nan')):+.3f} |" if p else
              f"| {r['channel_set']} | - | - | - | {e['com_db_best']:.3f} | {fmt(e['eq_best'])} | - |")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
