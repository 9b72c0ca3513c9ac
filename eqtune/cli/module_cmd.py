"""``eqtune module``: show a CMIS module's identity, EQ capabilities and active EQ; set EQ codes.

RESOURCE is a module resource string: ``i2c:1@0x50``, ``optoe:/sys/bus/i2c/devices/11-0050/eeprom``,
``ftdi://ftdi:232h/1``, ``emu:c2m-10in`` (in-process emulator), ``net:127.0.0.1:7700`` (the bridge
started by ``eqtune emulate``). Device faults print one line and exit 2.
"""

from __future__ import annotations

from typing import Any

import click

from eqtune.cli._common import module_code_options
from eqtune.serdes.knobs import KNOB_DEFS, RX_AMP, RX_POST, RX_PRE, TX_EQ
from eqtune.serdes.knobs import MODULE_KNOBS as KNOB_ORDER


@click.group(name="module")
def module() -> None:
    """CMIS module: show identity/capabilities/EQ, set EQ codes, doctor (what eqtune can do on it)."""


@module.command(name="show")
@click.argument("resource")
@click.option("--lane", type=click.IntRange(1, 8), default=None, help="Only this lane (1..8).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def show(resource: str, lane: int | None, as_json: bool) -> None:
    """Identity, EQ capabilities and active EQ per lane of the module at RESOURCE."""
    from eqtune.drivers.cmis import open_module

    with open_module(resource) as mod:
        ident = mod.identity()
        caps = mod.capabilities()
        if lane is not None and lane > caps.lanes:
            from eqtune.errors import InputError

            raise InputError(f"{resource}: lane {lane} does not exist: this module has lanes 1..{caps.lanes}")
        lanes = [lane] if lane else list(range(1, caps.lanes + 1))
        active = mod.active_eq_all()
        dps = mod.dp_states()
        adaptive = mod.tx_adaptive_enabled()
        from eqtune.errors import ModuleError

        try:  # the same answer as `module doctor` and `module set` (eqtune.drivers.cmis_policy.method_for)
            method: dict[str, Any] = mod.apply_method("auto").to_dict()
        except ModuleError as exc:
            method = {"trigger": "", "supported": False, "traffic_down": None, "reason": str(exc)}
    rows = [{"lane": ln, "dp_state": dps[ln], "tx_adaptive": adaptive[ln], **active[ln]} for ln in lanes]
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json({"resource": resource, "identity": ident.to_dict(), "capabilities": caps.to_dict(),
                   "apply": method, "lanes": rows})
        return
    from eqtune.textsafe import printable  # module text is device data: no terminal escapes

    click.echo(f"module      {resource}")
    click.echo(printable(f"vendor      {ident.vendor}  (OUI {ident.oui})"))
    click.echo(printable(f"part        {ident.pn}  rev {ident.rev}  SN {ident.sn}  date {ident.date_code}"))
    click.echo(f"type        {ident.form_factor}  CMIS {ident.cmis_rev}  firmware {ident.firmware}  state {ident.module_state}")
    kv = caps.knob_values()
    knobs = [k for k in KNOB_ORDER if k in kv]

    def span(k: str) -> str:
        v = kv[k]
        return f"{v[0]}..{v[-1]}" if list(v) == list(range(v[0], v[-1] + 1)) else ",".join(map(str, v))

    click.echo("eq codes    " + ("  ".join(f"{k} {span(k)}" for k in knobs) or "no EQ controls advertised"))
    how = (method["trigger"] + (" after DPDeinit (data path goes down)" if method["traffic_down"] else "")
           if method["supported"] else f"not possible ({method['reason']})")
    click.echo(f"apply       {how}"
               f"  Tx adaptive EQ {'supported' if caps.tx_adaptive else 'not supported'}"
               f"  PRBS checker {'yes' if caps.diagnostics else 'no'}")
    click.echo("")
    click.echo("lane  " + "".join(f"{k:>8}" for k in knobs) + "  tx_adapt  dp_state")
    for r in rows:
        click.echo(f"{r['lane']:>4}  " + "".join(f"{r.get(k, '-'):>8}" for k in knobs)
                   + f"  {'on' if r['tx_adaptive'] else 'off':>8}  {r['dp_state']}")


@module.command(name="doctor")
@click.argument("resource")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor(resource: str, as_json: bool) -> None:
    """What eqtune can do on the module at RESOURCE (reads only): identity, EQ ranges, the Apply method
    and whether traffic goes down, PRBS/BER and VDM support, and what it cannot do."""
    from eqtune.drivers.cmis import open_module
    from eqtune.drivers.cmis_doctor import diagnose

    with open_module(resource) as mod:
        rep = diagnose(mod)
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json(rep.to_dict())
        return
    ident, caps, ap = rep.identity, rep.capabilities, rep.apply
    click.echo(f"module      {resource}")
    click.echo(f"identity    {ident['vendor']} {ident['pn']} rev {ident['rev']} SN {ident['sn']}  "
               f"{ident['form_factor']} CMIS {ident['cmis_rev']} firmware {ident['firmware']} {ident['module_state']}")
    kv = caps["knob_values"]
    click.echo("eq codes    " + ("  ".join(f"{k} {v[0]}..{v[-1]}" for k, v in kv.items()) or "none advertised")
               + f"  ({caps['lanes']} lanes)")
    if ap.get("supported"):
        dur = ap.get("max_duration_s")
        down = ((f"DATA PATH GOES DOWN (traffic stops; advertised up to {dur:g} s)" if dur is not None
                 else "DATA PATH GOES DOWN (traffic stops)") if ap["traffic_down"] else "traffic stays up")
        click.echo(f"apply       {ap['trigger']}{' with DPDeinit' if ap['deinit'] else ''}: {down}")
    else:
        click.echo("apply       NOT POSSIBLE")
    click.echo(f"            {ap['reason']}")
    for app in caps.get("applications", []):
        rate = f"{app['host_lanes']}x{app['host_lane_gbps']}G" if app["host_lane_gbps"] else f"{app['host_lanes']} lanes"
        click.echo(f"application {app['index']}: {app['host']} -> {app['media']}  ({rate} host lanes)")
    click.echo(f"prbs/ber    {'host-side PRBS checker (pages 13h/14h)' if rep.prbs_ber else 'no'}")
    click.echo(f"vdm         {', '.join(rep.vdm_observables) if rep.vdm_observables else ('yes' if rep.vdm else 'no')}")
    for line in rep.cannot:
        click.echo(f"cannot      {line}")


@module.command(name="set")
@click.argument("resource")
@click.option("--lane", "lanes", type=click.IntRange(1, 8), multiple=True, required=True,
              help="Lane to set (1..8); repeat for several lanes.")
@module_code_options(extra_help={TX_EQ: "; turns adaptive EQ off"})
@click.option("--tx-adaptive", type=click.Choice(["on", "off"]), default=None,
              help="Switch the Tx input adaptive equalizer on (back to the module's own adaptation) or off "
                   "(the fixed tx_eq code runs); codes are left as they are.")
@click.option("--method", type=click.Choice(["auto", "immediate", "dpinit"]), default="auto", show_default=True,
              help="Apply procedure: auto (ApplyImmediate where the module allows hot reconfiguration, "
                   "else the step-by-step DPDeinit -> ApplyDPInit -> release, traffic down), immediate, or "
                   "dpinit (step-by-step).")
@click.option("--dry-run", is_flag=True, help="Validate and show what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def set_(resource: str, lanes: tuple[int, ...], rx_pre, rx_post, rx_amp, tx_eq, tx_adaptive: str | None,
         method: str, dry_run: bool, as_json: bool) -> None:
    """Write EQ codes to LANE(s) of the module at RESOURCE (validated, applied, read back)."""
    from eqtune.errors import EqRangeError, InputError

    given = {RX_PRE: rx_pre, RX_POST: rx_post, RX_AMP: rx_amp, TX_EQ: tx_eq}
    knobs: dict[str, int] = {k: given[k] for k in KNOB_ORDER if given[k] is not None}
    if not knobs and tx_adaptive is None:
        raise InputError("nothing to set: give at least one of "
                         + ", ".join(KNOB_DEFS[k].cli_option for k in KNOB_ORDER) + ", --tx-adaptive")
    if tx_adaptive == "on" and tx_eq is not None:
        raise InputError("--tx-eq selects the fixed Tx input equalizer and --tx-adaptive on the adaptive one: "
                         "give one of them")
    codes = {ln: dict(knobs) for ln in lanes}
    from eqtune.drivers.cmis import open_module

    with open_module(resource) as mod:
        # validates against the advertisement; reads only (rows grow tx_adaptive changes and read_back)
        plan: list[dict[str, Any]] = [dict(row) for row in mod.plan_eq(codes)] if knobs else []
        if tx_adaptive is not None:
            if tx_adaptive == "on" and not mod.capabilities().tx_adaptive:
                raise EqRangeError(f"{resource}: the module does not advertise Tx input adaptive EQ (page 01h "
                                   "byte 161 bit 3); nothing was written")
            now = mod.tx_adaptive_enabled()
            missing = [ln for ln in lanes if ln not in now]
            if missing:
                raise EqRangeError(f"{resource}: lane(s) {missing} do not exist (the module has lanes 1..{len(now)})")
            plan += [{"lane": ln, "knob": "tx_adaptive", "current": "on" if now[ln] else "off", "new": tx_adaptive}
                     for ln in sorted(set(lanes))]
        if not dry_run:
            mod.notify = lambda msg: click.echo(f"warning: {msg}", err=True)
            if knobs:
                mod.apply_eq(codes, method=method)
            if tx_adaptive is not None:
                mod.set_tx_adaptive(sorted(set(lanes)), tx_adaptive == "on", method=method)
            after = mod.active_eq_all()
            adaptive_after = mod.tx_adaptive_enabled()
            for row in plan:
                if row["knob"] == "tx_adaptive":
                    row["read_back"] = "on" if adaptive_after[row["lane"]] else "off"
                else:
                    row["read_back"] = after[row["lane"]].get(row["knob"])
    if as_json:
        from eqtune.cli._common import echo_json

        echo_json({"resource": resource, "dry_run": dry_run, "changes": plan})
        return
    for row in plan:
        tail = "" if dry_run else f"  read back {row['read_back']}"
        click.echo(f"lane {row['lane']} {row['knob']:<8} {row['current']} -> {row['new']}{tail}")
    click.echo("dry run: nothing written" if dry_run else "applied and verified")


set_.name = "set"
