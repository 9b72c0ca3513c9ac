"""What to do about a flagged lane, in proportion to the evidence and to what the module holds.

* ``watch``: a change that is real but not (yet) harmful: a step or a thermal excess whose level and
  projection stay under the module's warning level, a trend that does not reach it within the horizon.
* ``retune``: one lane of one module loses margin, past or projected past its warning level, while its
  siblings do not, and the module holds that lane at a *fixed* Tx input EQ code (adaptive EQ off):
  re-tuning the code can restore margin. The command names the module, the lane, the direction and
  the knob, is built from the lane's live state (:class:`LaneState`: the code it holds, the module's
  range, the apply method of eqtune.drivers.cmis_policy and the traffic-down consent of
  eqtune.session.consent) and its profile, and the watch verifies the lane afterwards
  (eqtune/watch/retune.py).
* ``reseat``: the same harmful lane, but its Tx input EQ adapts already (AdaptiveInputEqEnableTx on,
  page 11h byte 214) or the module has no fixed Tx input EQ: a re-tune of fixed codes is not expected
  to restore it. A contact (reseat) or the module (swap if the lane stays) is what is left.
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

import shlex
from dataclasses import dataclass, field
from typing import Any

from eqtune.serdes.knobs import TX_EQ
from eqtune.watch.detect import Finding

LEVELS = ("none", "watch", "retune", "reseat", "check_host", "swap")


@dataclass(frozen=True)
class LaneState:
    """What the module holds on one lane now, read from the module when the lane is flagged
    (eqtune/watch/retune.py ``read_lane_state``), and what its profile says.

    ``active``: the Active Control Set codes (page 11h); ``tx_adaptive``: AdaptiveInputEqEnableTx of
    the lane (page 11h byte 214; None: not readable); ``tx_eq_max``: the fixed Tx input EQ range
    (page 01h byte 153 bits 3-0; None: no fixed Tx input EQ); ``apply_trigger`` / ``apply_deinit`` /
    ``traffic_down`` / ``max_duration_s``: the Apply procedure eqtune uses on this module
    (eqtune.drivers.cmis_policy.method_for); ``profile`` / ``profile_codes``: the fleet CSV's profile
    and its codes for the lane (None: no profile)."""

    active: dict[str, int] = field(default_factory=dict)
    tx_adaptive: bool | None = None
    tx_eq_max: int | None = None
    apply_trigger: str = ""
    apply_deinit: bool = False
    traffic_down: bool = False
    max_duration_s: float | None = None
    profile: str | None = None
    profile_codes: dict[str, int] | None = None

    def apply_text(self) -> str:
        """How a write reaches the lane, in one clause."""
        if not self.apply_trigger:
            return "the module advertises no Apply procedure eqtune can use"
        if not self.traffic_down:
            return f"codes applied with {self.apply_trigger}, traffic stays up"
        adv = "" if self.max_duration_s is None else f", up to {self.max_duration_s:g} s each"
        return (f"codes applied with {self.apply_trigger}{' after DPDeinit' if self.apply_deinit else ''}: every "
                f"write takes the lane's data path down{adv}; the consent flag below accepts those outages")


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


def retune_command(resource: str, lane: int, channel: str | None, *, consent_flag: str | None = None,
                   sessions: str | None = None) -> str:
    """The live re-tune of one lane of one module (``eqtune tune --live``, docs/tuning.md): the
    module's Tx input equalizer (``tx_eq``) against its own PRBS checker on that lane.
    ``consent_flag`` (the tune command's traffic-down consent option) is printed where the module's
    Apply takes traffic down; ``sessions``: the sessions folder the watch reads the tuning journal
    from (printed when the watch was given one). Every argument is shell-quoted: the command runs as
    printed."""
    parts = ["eqtune", "tune", channel or "CHANNEL", "--live", "--module", resource, "--lane", str(lane),
             "--direction", "module_rx", "--knobs", TX_EQ, "--module-ber"]
    if consent_flag:
        parts.append(consent_flag)
    if sessions:
        parts += ["--sessions", str(sessions)]
    return " ".join(shlex.quote(p) for p in parts)


def _profile_text(st: LaneState, lane: int) -> str:
    if not st.profile:
        return ""
    if st.profile_codes is None:
        return f"; its profile {st.profile} has no codes for lane {lane}"
    want = st.profile_codes.get(TX_EQ)
    if want is None:
        return f"; its profile {st.profile} leaves tx_eq to the module"
    held = st.active.get(TX_EQ)
    return f"; its profile {st.profile} sets tx_eq={want}" + ("" if want == held else f", not {held}")


def suggest(findings: list[Finding], *, resource: str, lane: int, channel: str | None = None,
            module_fraction: float = 0.0, group_fraction: float = 0.0, retune_failed: bool = False,
            consent_flag: str | None = None, lane_state: LaneState | None = None,
            sessions: str | None = None) -> Action:
    """The action for one lane. ``module_fraction``: the share of the module's lanes that hold a
    step/over finding now; ``group_fraction``: the share of the other modules in the lane's host/port
    group whose lanes do; ``retune_failed``: a verified re-tune of this lane did not restore it;
    ``lane_state``: what the module holds on the lane (None: not read; the re-tune is then suggested
    as for a fixed-code lane, with ``consent_flag``)."""
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
        why = ("its margin falls with temperature faster than its siblings'"
               if thermal else "it is past (or heading past) the module's warning level while its siblings are not")
        st = lane_state
        if st is not None and st.tx_eq_max is None:
            return Action("reseat", f"reseat module {resource} ({why} on lane {lane}): the module has no fixed Tx "
                                    "input EQ to re-tune (page 01h byte 161 bit 2); swap it if the lane stays")
        if st is not None and st.tx_adaptive:
            return Action("reseat", f"reseat module {resource} and inspect the host connector of lane {lane} ({why}): "
                                    "its Tx input EQ adapts already (AdaptiveInputEqEnableTx on, page 11h byte 214), "
                                    "so a re-tune of fixed codes is not expected to restore it; swap the module if "
                                    "the lane stays")
        if st is None:
            return Action("retune", f"re-tune {where} ({why}{'; tune it while the module is hot' if thermal else ''}); "
                                    "the watch verifies it afterwards",
                          retune_command(resource, lane, channel, consent_flag=consent_flag, sessions=sessions))
        held = st.active.get(TX_EQ)
        text = (f"re-tune {where} ({why}{'; tune it while the module is hot' if thermal else ''}): it holds the fixed "
                f"Tx input EQ code tx_eq={held} of 0..{st.tx_eq_max}{_profile_text(st, lane)}; direction module_rx "
                f"(host TX -> module input), knob tx_eq, measured with the module's PRBS checker on lane {lane}; "
                f"{st.apply_text()}; the watch verifies the lane afterwards")
        flag = consent_flag if st.traffic_down else None
        return Action("retune", text, retune_command(resource, lane, channel, consent_flag=flag, sessions=sessions))
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

    if f.kind == "frame_loss":
        from eqtune.watch.frameloss import frame_loss_line

        return frame_loss_line(ev)
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
    return (f"{f.kind}: {unit} {v(ev.get('level_now'))} vs warning {v(ev.get('warning'))} / alarm {v(ev.get('alarm'))} "
            f"({ev.get('thresholds_from', 'thresholds not given')})")
