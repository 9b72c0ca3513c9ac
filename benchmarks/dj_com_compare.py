"""802.3dj COM, eqtune against PyChOpMarg 3.4.0's MMSE path, on the generated 224G channels.

    python benchmarks/dj_channels.py /tmp/dj                        # the files both tools read
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dj_com_pychopmarg.py /tmp/dj /tmp/dj/pcm.json
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dj_com_compare.py /tmp/dj /tmp/dj/pcm*.json

Settings: ``benchmarks/dj_pychopmarg_kr.toml`` (eqtune) = ``dj_com_settings.py`` applied to PyChOpMarg's
``IEEE_8023dj`` (PyChOpMarg), ADC quantization and MLSE off on both sides. Per channel and package case:
both COMs, the residual eqtune - PyChOpMarg, the EQ each found, A_s and A_ni. Then eqtune's figure with
ADC quantization on (N_qb = 6, P_qc = 1e-7: P802.3dj/D3.3 Table 178-15 as PyChOpMarg's
``ieee_8023dj_d3p3`` transcribes it), and the MLSD figure (178A.1.10, dCOM_an 3 dB) of both tools when the
PyChOpMarg rows were made with its MLSD on (``dj_com_pychopmarg.py ... 0 "" 1``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def channel(ch_dir: Path, name: str):  # type: ignore[no-untyped-def]
    """The thru with its two FEXT and one NEXT files (port order as written: 1-2/3-4)."""
    from eqtune.channel.library import channel_from_definition

    o = "1-2/3-4"
    files = [("FEXT", f"{name}-fext1"), ("FEXT", f"{name}-fext2"), ("NEXT", f"{name}-next1")]
    doc = {"name": name, "segments": [{"type": "touchstone", "file": str(ch_dir / f"{name}.s4p"), "port_order": o}],
           "aggressors": [{"kind": k, "file": str(ch_dir / f"{f}.s4p"), "port_order": o} for k, f in files]}
    return channel_from_definition(doc, base_dir=ch_dir, name=name)


def main(argv: list[str]) -> int:
    from eqtune.eye.com_dj import compute_dj_com
    from eqtune.serdes.dj_profile import load_dj_profile

    ch_dir = Path(argv[0])
    pcm: dict[tuple[str, int], dict[str, object]] = {}
    for fn in argv[1:]:
        p = Path(fn)
        lines = p.read_text().splitlines() if p.suffix == ".log" else []
        if lines:
            for ln in lines:
                d = json.loads(ln)
                pcm[(d["channel"], int(d["case"]))] = d
        else:
            for row in json.loads(p.read_text())["rows"]:
                for c in row["cases"]:
                    pcm[(row["channel"], int(c["case"]))] = c
    prof = load_dj_profile(HERE / "dj_pychopmarg_kr.toml")
    prof_adc = dataclasses.replace(prof, noise={**prof.noise, "adc_bits": 6, "adc_clip_probability": 1e-7})
    names = sorted({n for n, _ in pcm}, key=lambda n: (n.startswith("c2m"), len(n), n))
    print(f"{'channel':14s} case  eqtune   PyChOpMarg  residual  | eqtune EQ (gDC, gDC2, c-1, c1) vs PyChOpMarg"
          "  | eqtune ADC on  | MLSD (dCOM_an 3 dB): eqtune gain, COM vs PyChOpMarg gain, COM, residual")
    worst_res = worst_mlsd = 0.0
    n_mlsd = 0
    for name in names:
        ch = channel(ch_dir, name)
        t0 = time.process_time()
        off = compute_dj_com(ch, prof, adc=False, mlse=True)  # com_plain_db: ADC and MLSE off; com_db: MLSD
        t_off = time.process_time() - t0
        on = compute_dj_com(ch, prof_adc, adc=True, mlse=False)
        for c, c_on in zip(off.cases, on.cases):
            ref = pcm.get((name, c.package_case))
            if ref is None:
                continue
            ref_plain = float(ref.get("com_dfe_db", ref["com_db"]))  # type: ignore[arg-type]
            res = c.com_plain_db - ref_plain
            worst_res = max(worst_res, abs(res))
            tx = ref["tx_taps"]  # type: ignore[index]
            ml = ""
            if ref.get("mlsd"):
                r_ml = c.com_db - float(ref["com_db"])  # type: ignore[arg-type]
                worst_mlsd, n_mlsd = max(worst_mlsd, abs(r_ml)), n_mlsd + 1
                ml = (f"  | {c.mlsd_gain_db:+.3f} {c.com_db:7.3f} vs {float(ref['delta_com_mlsd_db']):+.3f} "  # type: ignore[arg-type]
                      f"{float(ref['com_db']):7.3f}  {r_ml:+.3f}")  # type: ignore[arg-type]
            print(f"{name:14s} {c.package_case:4d}  {c.com_plain_db:7.3f}  {ref_plain:9.3f}  "
                  f"{res:+8.3f}  | ({c.g_dc_db:g}, {c.g_dc2_db:g}, {c.tx_taps[2]:g}, {c.tx_taps[4]:g}) vs "
                  f"({ref['g_dc']:g}, {ref['g_dc2']:g}, {tx[2]:g}, {tx[3]:g})"  # type: ignore[index]
                  f"  A_s {c.a_s_mv:.3f}/{float(ref['as_mv']):.3f} A_ni {c.a_ni_mv:.3f}/{float(ref['ani_mv']):.3f} mV"  # type: ignore[arg-type]
                  f"  | {c_on.com_db:7.3f} (step {c_on.adc_step_mv:.3f} mV)" + ml)
        print(f"{'':14s} worse case: eqtune {off.com_plain_db:.3f} dB, MLSD {off.com_db:.3f} dB (case {off.worst_case}),"
              f" ADC on {on.com_db:.3f} dB; eqtune CPU {t_off:.1f} s (both cases, ADC off, MLSD on)")
    print(f"largest |residual|: {worst_res:.3f} dB over {len(pcm)} channel/case pairs (ADC and MLSE off)")
    if n_mlsd:
        print(f"largest |MLSD residual|: {worst_mlsd:.3f} dB over {n_mlsd} channel/case pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
