"""What to do about a flagged lane, in proportion to the evidence.

* ``watch``: a change that is real but not (yet) harmful: a step or a thermal excess whose level and
  projection stay under the module's warning level, a trend that does not reach it within the horizon.
* ``retune``: one lane of one module loses margin, past or projected past its warning level, while its
  siblings do not (a thermal excess, a step after a link re-acquisition, a lane over its warning
  level). Re-tuning that lane's equalization can restore margin; the command names the module, the
  lane, the direction and the knobs, and the watch verifies the lane afterwards.
* ``swap``: only what a swap fixes: most lanes of one module stepped or crossed together while the
  other modules on the same host/port group did not (the module itself), or a re-tune of the lane was
  verified and did not restore it.
* ``check_host``: most modules of a host/port group moved together: not a module fault (host SerDes,
  power, airflow); a swap would not fix it.

The VDM host-input observables (pre-FEC BER / eSNR "host input", CMIS 5.2 Table 8-166) measure the
module's receiver of the host's signal: direction ``module_rx``, knob ``tx_eq`` (the module's Tx input
equalizer, page 10h) in eqtune's knob names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eqtune.watch.detect import Finding

LEVELS = ("none", "watch", "retune", "check_host", "swap")


@dataclass(frozen=True)
class Action:
    """``level`` (one of LEVELS), one-line ``text``, and ``command`` (a command line) for a re-tune."""

    level: str
    text: str
    command: str | None = None

    def __str__(self) -> str:
        return self.text + (f": {self.command}" if self.command else "")


def _harmful(f: Finding) -> bool:
    ev = f.evidence
    if f.kind == "over_alarm":
        return True
    if f.kind == "thermal":
        return bool(ev.get("projected_past_warning"))
    if f.kind == "trend":
        return True  # only reported when it reaches the warning level within the horizon
    if f.kind == "step":
        lvl, warn = ev.get("after"), ev.get("warning")
        if lvl is None or warn is None:
            return False
        return lvl >= warn if f.metric == "log10_prefec_ber" else lvl <= warn
    return False


def retune_command(resource: str, lane: int, channel: str | None, *, consent_flag: str | None = None) -> str:
    """The live re-tune of one lane of one module (``eqtune tune --live``, docs/tuning.md): the
    module's Tx input equalizer (``tx_eq``) against its own PRBS checker on that lane. The module
    PRBS test takes the lane's traffic down, so ``consent_flag`` (the tune command's traffic-down
    consent option, when it has one: the CLI passes it) is printed. It runs as printed against an
    emulated module."""
    parts = ["eqtune tune", channel or "CHANNEL", "--live", "--module", resource, "--lane", str(lane),
             "--direction module_rx --knobs tx_eq --module-ber"]
    if consent_flag:
        parts.append(consent_flag)
    return " ".join(parts)


def suggest(findings: list[Finding], *, resource: str, lane: int, channel: str | None = None,
            module_fraction: float = 0.0, group_fraction: float = 0.0, retune_failed: bool = False,
            consent_flag: str | None = None) -> Action:
    """The action for one lane. ``module_fraction``: the share of the module's lanes that hold a
    step/over finding now; ``group_fraction``: the share of the other modules in the lane's host/port
    group whose lanes do; ``retune_failed``: a verified re-tune of this lane did not restore it."""
    if not findings:
        return Action("none", "")
    kinds = {f.kind for f in findings}
    harmful = any(_harmful(f) for f in findings)
    where = f"lane {lane} of module {resource}"
    if group_fraction >= 0.5 and kinds & {"step", "over_alarm"}:
        return Action("check_host", f"check the host side: most modules of this host/port group changed together "
                                    f"({group_fraction:.0%}); a module swap would not fix {where}")
    if module_fraction >= 0.75 and kinds & {"step", "over_alarm"} and harmful:
        return Action("swap", f"swap module {resource}: {module_fraction:.0%} of its lanes moved together "
                              "while the other modules of its group did not")
    if retune_failed and harmful:
        return Action("swap", f"swap or reseat module {resource}: a verified re-tune of {where} did not restore it")
    if harmful:
        thermal = "thermal" in kinds
        why = ("its margin falls with temperature faster than its siblings'; tune it while the module is hot"
               if thermal else "it is past (or heading past) the module's warning level while its siblings are not")
        return Action("retune", f"re-tune {where} ({why}); the watch verifies it afterwards",
                      retune_command(resource, lane, channel, consent_flag=consent_flag))
    what = ", ".join(sorted(kinds))
    return Action("watch", f"watch {where} ({what}: still under the module's warning level); "
                           "`eqtune watch ack` when the change is understood")


def evidence_line(f: Finding) -> str:
    """One line of a finding's evidence, in the user's units."""
    ev: dict[str, Any] = f.evidence
    unit = "BER" if f.metric == "log10_prefec_ber" else "eSNR dB"

    def v(x: Any) -> str:
        if x is None:
            return "n/a"
        return f"{x:.2e}" if f.metric == "log10_prefec_ber" else f"{x:.2f}"

    if f.kind == "step":
        return (f"step {ev['change']} ({unit} {v(ev['before'])} -> {v(ev['after'])}) since ts {ev['since_ts']:.0f}; "
                f"warning {v(ev['warning'])} ({ev['thresholds_from']})")
    if f.kind == "trend":
        lo, hi = ev["slope_ci95_per_min"]
        return (f"trend {ev['slope_per_min']:+.3g} {ev['slope_units']} (95 % CI {lo:+.3g}..{hi:+.3g}, t = {ev['t_stat']:.1f}, "
                f"{ev['effective_samples']:.0f} effective samples); warning {v(ev['warning'])} in "
                f"{ev['time_to_warning_s']:.0f} s")
    if f.kind == "thermal":
        lo, hi = ev["sensitivity_ci95_per_c"]
        ratio = ev.get("ratio_to_siblings")
        ratio_s = f"{ratio:.1f}x" if ratio else "n/a"
        return (f"thermal {ev['sensitivity_per_c']:+.3g} {ev['sensitivity_units']} (95 % CI {lo:+.3g}..{hi:+.3g}; "
                f"{ratio_s} its siblings', excess t = {ev['excess_t_stat']:.1f}) over a "
                f"{ev['temp_swing_c']:.1f} C swing; projected {v(ev['projected_at_hot'])} at {ev['hot_c']:.0f} C "
                f"({ev['hot_c_from']}), warning {v(ev['warning'])}")
    return f"{f.kind}: {unit} {v(ev['level_now'])} vs warning {v(ev['warning'])} / alarm {v(ev['alarm'])} ({ev['thresholds_from']})"
