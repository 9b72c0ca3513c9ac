"""``eqtune measure``: BER (and eye, with a scope) of one module lane.

BER comes from a BERT given with ``--instrument``, or from the module's own PRBS checker
(CMIS pages 13h/14h via ``CmisModule.module_ber``) when no BERT is given. The report gives the
bits counted, the errors, the BER and its 95 % upper confidence bound. Without ``--dwell`` the
dwell follows from ``--ber-target``: to claim BER < target at 95 % confidence with zero errors,
count N = -ln(0.05)/target ~ 3/target bits ("rule of three"; Maxim/ADI HFAN-9.0.2 / AN1095,
eqtune.drivers.measurement.bits_for_confidence), i.e. dwell = N / line rate.

pyvisa and the drivers are imported inside the command only.
"""

from __future__ import annotations

import math

import click

from eqtune.cli._common import FiniteFloat, echo_json

MIN_DWELL_S = 0.1  # shortest gate we ask of a real BERT/checker (gate control latency ~ms)
DEFAULT_RATE_GBPS = 106.25  # 800G-8: 53.125 GBd PAM4 per lane (IEEE 802.3ck / 802.3df)


@click.command(name="measure")
@click.option("--module", "module_res", required=True, metavar="RESOURCE",
              help="Module resource: i2c:1@0x50, optoe:/sys/..., ftdi://..., emu:CHANNEL, net:HOST:PORT.")
@click.option("--instrument", "instruments", multiple=True, metavar="VISA",
              help="BERT and/or scope VISA resource, e.g. TCPIP::10.0.0.5::5025::SOCKET (repeatable).")
@click.option("--definition", "definitions", multiple=True, metavar="NAME",
              help="Pin the definition of each --instrument in order (default: match by *IDN?).")
@click.option("--lane", type=click.IntRange(1, 8), required=True, help="Lane 1..8 (CMIS numbering).")
@click.option("--dwell", type=FiniteFloat(min=0.0, min_open=True, max=86400.0), default=None,
              help="BER gate time in seconds (default: from --ber-target).")
@click.option("--ber-target", "--ber", "ber_target", type=FiniteFloat(min=0.0, max=1.0, min_open=True, max_open=True),
              default=1e-6, show_default=True,
              help="BER to demonstrate at 95 % confidence; sets the dwell when --dwell is not given "
              "(--ber is the same option, as in `eqtune eye` and `eqtune tune`).")
@click.option("--bit-rate-gbps", type=FiniteFloat(min=0.0, min_open=True), default=DEFAULT_RATE_GBPS,
              show_default=True, help="Lane line rate, for the dwell from --ber-target.")
@click.option("--acquire", "acquire_s", type=FiniteFloat(min=0.0, max=3600.0), default=0.5, show_default=True,
              help="Scope acquisition time before reading eye metrics (s).")
@click.option("--timeout-ms", type=click.IntRange(50, 600000), default=None,
              help="Instrument I/O timeout (default: the definition's).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def measure(module_res: str, instruments: tuple[str, ...], definitions: tuple[str, ...], lane: int,
            dwell: float | None, ber_target: float, bit_rate_gbps: float, acquire_s: float,
            timeout_ms: int | None, as_json: bool) -> None:
    """Measure BER (bits, errors, 95 % upper bound) and eye metrics of one module lane."""
    from eqtune.drivers.measurement import bits_for_confidence
    from eqtune.errors import InputError

    if len(definitions) > len(instruments):
        raise InputError(f"{len(definitions)} --definition given for {len(instruments)} --instrument; "
                         "give at most one definition per instrument, in the same order")
    bits_needed = bits_for_confidence(ber_target, 0.95)
    dwell_from_target = dwell is None
    if dwell is None:
        dwell = max(MIN_DWELL_S, bits_needed / (bit_rate_gbps * 1e9))

    from eqtune.drivers.cmis import open_module
    from eqtune.drivers.instrument import open_instrument

    report: dict = {"module": module_res, "lane": lane, "dwell_s": dwell, "dwell_from_target": dwell_from_target,
                    "ber_target": ber_target, "bits_needed_95": bits_needed}
    opened = []
    module = open_module(module_res)
    try:
        try:
            report["active_eq"] = module.active_eq(lane)
        except AttributeError:  # pragma: no cover - contract method
            report["active_eq"] = None
        berts, scopes = [], []
        for i, res in enumerate(instruments):
            inst = open_instrument(res, definitions[i] if i < len(definitions) else None, timeout_ms=timeout_ms)
            opened.append(inst)
            (berts if inst.kind == "bert" else scopes).append(inst)
        if len(berts) > 1:
            raise InputError(f"{len(berts)} BERTs given ({', '.join(b.resource for b in berts)}); give one")
        if berts:
            b = berts[0]
            b.setup()
            count = b.measure_ber(lane, dwell)
            report["ber_source"] = {"kind": "bert", "resource": b.resource, "definition": b.name, "idn": b.idn}
        else:
            count = module.module_ber([lane], dwell)[lane]
            report["ber_source"] = {"kind": "module", "resource": module_res}
        report["ber"] = count.to_dict()
        up = count.ber_upper95
        report["meets_target"] = bool(math.isfinite(up) and up < ber_target)
        eyes = []
        for s in scopes:
            s.setup()
            eye = s.measure_eye(lane, acquire_s)
            eye.update(resource=s.resource, idn=s.idn)
            eyes.append(eye)
        if eyes:
            report["eye"] = eyes[0] if len(eyes) == 1 else eyes
    finally:
        for inst in opened:
            inst.close()
        module.close()

    if as_json:
        echo_json(report)
        return
    b = report["ber"]
    src = report["ber_source"]
    codes = report.get("active_eq") or {}
    click.echo(f"module {module_res} lane {lane}"
               + (f"  codes {' '.join(f'{k}={v}' for k, v in sorted(codes.items()))}" if codes else ""))
    click.echo(f"BER source: {src.get('definition', 'module PRBS checker')} ({src['resource']})")
    from eqtune.tui.format import fmt_ber

    up_txt = "n/a" if b["ber_upper95"] is None else f"{b['ber_upper95']:.2e}"
    # 0 errors: "< bound (0 errors in N bits)"; else "estimate (E errors in N bits)"
    click.echo(f"BER {fmt_ber(b)}  95% upper bound {up_txt}  dwell {b['dwell_s']:.3g} s")
    verdict = "meets" if report["meets_target"] else "does NOT demonstrate"
    click.echo(f"{verdict} BER < {ber_target:g} at 95 % confidence"
               + ("" if b["bits"] >= bits_needed else f" (only {b['bits']:.3g} of {bits_needed:.3g} bits counted)"))
    eyes = report.get("eye")
    for e in ([eyes] if isinstance(eyes, dict) else eyes or []):
        eh = e.get("eye_height_mv")
        eh_txt = ", ".join("n/a" if x is None else f"{x:.1f}" for x in eh) if isinstance(eh, list) else str(eh)
        ew = e.get("eye_width_ps")
        td = e.get("tdecq_db")
        ew_ui = e.get("eye_width_ui")
        ew_txt = f"{ew:.2f} ps" if ew is not None else (f"{ew_ui:.3f} UI" if ew_ui is not None else "n/a")
        click.echo(f"eye ({e['instrument']}): EH [{eh_txt}] mV  EW {ew_txt}"
                   + ("" if td is None else f"  TDECQ {td:.2f} dB"))
