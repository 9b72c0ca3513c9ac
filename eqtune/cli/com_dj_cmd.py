"""``eqtune com CHANNEL --profile ieee-dj-kr``: 802.3dj COM (``eqtune.eye.com_dj``), run by ``eqtune com``
when the profile is an Annex 178A one. Heavy modules are imported inside the functions only."""

from __future__ import annotations

from typing import Any

import click


def run_dj_com(ch: Any, profile: str, *, cases: tuple[int, ...] | None, adc: bool | None, mlse: bool | None,
               samples_per_ui: int | None, as_json: bool, quiet: bool) -> None:
    """Compute and print the 802.3dj COM of channel ``ch`` (text or one JSON object)."""
    from eqtune.cli.com_cmd import _progress
    from eqtune.eye.com_dj import compute_dj_com

    cb, bar = _progress(quiet)
    with bar:
        rep = compute_dj_com(ch, profile, cases=cases, adc=adc, mlse=mlse, samples_per_ui=samples_per_ui,
                             progress=cb)
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json(rep.to_dict())
        return
    for line in format_dj_report(rep):
        click.echo(line)


def format_dj_report(rep: Any) -> list[str]:
    """The 802.3dj report as text lines: per package case the EQ found, the receiver, the noise terms."""
    ag = rep.aggressors
    lines = [f"{rep.channel}  profile {rep.profile}  ({ag['FEXT']} FEXT, {ag['NEXT']} NEXT)  802.3dj COM (178A)"]
    for c in rep.cases:
        tx = ", ".join(f"{x:g}" for x in c.tx_taps)
        ffe = ", ".join(f"{x:+.3f}" for x in c.rx_ffe)
        lines += [
            f"package case {c.package_case} (line 1 {c.zp1_mm[0]:g}/{c.zp1_mm[1]:g} mm): COM {c.com_db:.3f} dB   "
            f"FOM {c.fom_db:.3f} dB   ({c.points_searched} points, {c.search_s:.1f} s)",
            f"  EQ: TX FFE [{tx}]  CTLE g_DC, g_DC2 [{c.g_dc_db:g}, {c.g_dc2_db:g}] dB   "
            f"DFE [{', '.join(f'{b:.3f}' for b in c.dfe)}]",
            f"  Rx FFE [{ffe}]",
            f"  A_s {c.a_s_mv:.3f} mV   A_ni {c.a_ni_mv:.3f} mV   sigma: ISI {c.sigma_isi_mv:.3f}  RJ "
            f"{c.sigma_rj_mv:.3f}  crosstalk {c.sigma_xt_mv:.3f}  TX {c.sigma_tx_mv:.3f}  RX {c.sigma_rx_mv:.3f}"
            + (f"  ADC {c.sigma_q_mv:.3f} (step {c.adc_step_mv:.3f})" if c.adc_step_mv else "") + " mV"]
        if c.mlsd_gain_db is not None:
            lines.append(f"  MLSD (178A.1.10): COM_DFE {c.com_dfe_db:.3f} dB, gain {c.mlsd_gain_db:+.3f} dB, DER_MLSD "
                         f"{c.der_mlsd:.3g} ({c.mlsd_terms} error-event terms), g_an {c.g_an:.3g}")
        lines.append(f"  COM with ADC and MLSE off: {c.com_plain_db:.3f} dB")
    verdict = "PASS" if rep.passed else "FAIL"
    s = rep.settings
    lines.append(f"COM {rep.com_db:.3f} dB (package case {rep.worst_case}, the worse; ADC {s['adc_quantization']}, "
                 f"MLSE {'on' if str(s['mlse']).startswith('on') else 'off'}) at DER_0 {rep.der0:g}: {verdict} "
                 f"(threshold {rep.threshold_db:g} dB)")
    lines.append(f"COM with ADC and MLSE off: {rep.com_plain_db:.3f} dB (the figure compared with PyChOpMarg's MMSE path)")
    lines.append(f"settings: {s['receiver']}, floating FFE taps {s['floating_ffe_taps']}, ADC quantization "
                 f"{s['adc_quantization']}, MLSE {s['mlse']}, {s['samples_per_ui']} samples/UI, step "
                 f"{float(s['frequency_step_hz']) / 1e6:g} MHz")
    return lines
