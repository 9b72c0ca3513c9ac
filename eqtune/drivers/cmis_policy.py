"""How a CMIS host applies staged settings and how long it waits: pure decisions, cited.

* :func:`choose_apply_method`: the Apply trigger from SteppedConfigOnly and AutoCommissioning
  (lower page byte 2 bits 6 and 1-0) and whether the data path (traffic) goes down.
* :class:`CmisTiming`: the waits real hosts use after a trigger, a DiagnosticsSelector change or a
  VDM freeze, and before measuring BER after an apply.
* :data:`DURATION_S`: the State Duration encodings of page 01h byte 144.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

# Page 01h byte 144 MaxDurationDPInit (bits 3-0) / MaxDurationDPDeinit (bits 7-4) codes -> upper bound (s).
# sonic-net/sonic-platform-common sonic_platform_base/sonic_xcvr/codes/public/cmis.py DP_PATH_TIMINGS
# (ms: 0 -> 1, 1 -> 5, ... 13 -> 6000000); codes 14 and 15 are reserved (sonic maps them to 0): None.
DURATION_S: dict[int, float | None] = {0: 0.001, 1: 0.005, 2: 0.01, 3: 0.05, 4: 0.1, 5: 0.5, 6: 1.0, 7: 5.0,
                                       8: 10.0, 9: 60.0, 10: 300.0, 11: 600.0, 12: 3000.0, 13: 6000.0,
                                       14: None, 15: None}

XENA = "xenanetworks/cable-perf-test-suite xoa_cpom/cmisfuncs.py"
FBOSS = "facebook/fboss fboss/qsfp_service/module/cmis/CmisModule.cpp"


@dataclass(frozen=True)
class ApplyMethod:
    """The Apply procedure eqtune uses on a module.

    ``trigger``: "ApplyImmediate" (page 10h byte 144, hot reconfiguration) or "ApplyDPInit" (byte 143)
    or "" when the module supports no reconfiguration eqtune can run. ``deinit``: the data path is
    deinitialized around the trigger (DPDeinit, page 10h byte 128). ``traffic_down``: the data path
    re-initializes, so traffic on the lanes' data path stops for up to the advertised DPInit time.
    ``reconfiguration``: "both", "hot", "regular" or "neither" (Xena's ReconfigurationSupport names).
    """

    trigger: str
    deinit: bool
    traffic_down: bool
    reconfiguration: str
    reason: str
    source: str = XENA + " check_eq_reconfig_support / apply_change_on_lane"

    @property
    def supported(self) -> bool:
        return bool(self.trigger)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "supported": self.supported}


def reconfiguration_support(stepped_config_only: bool, auto_commissioning: int) -> str:
    """Xena ``check_eq_reconfig_support``: SteppedConfigOnly 0 -> both; else AutoCommissioning
    10b -> hot (ApplyImmediate only), 01b -> regular (ApplyDPInit only), 00b/11b -> neither."""
    if not stepped_config_only:
        return "both"
    return {2: "hot", 1: "regular"}.get(auto_commissioning & 0x3, "neither")


def choose_apply_method(stepped_config_only: bool, auto_commissioning: int, requested: str = "auto") -> ApplyMethod:
    """The Apply trigger for ``requested`` ("auto", "immediate", "dpinit") on this module.

    Raises ValueError (with the reason) when ``requested`` is not supported by the module.
    Rules (Xena ``apply_change_on_lane``; CMIS 5.2 s6.2.4 configuration procedures):

    * both (SteppedConfigOnly 0): auto -> ApplyImmediate, traffic stays up; dpinit -> ApplyDPInit in
      DPActivated (the module runs DPDeinit/DPInit itself, traffic goes down).
    * hot (SteppedConfigOnly 1, AutoCommissioning 10b): ApplyImmediate only, traffic stays up. A module
      that does not support hot reconfiguration ignores ApplyImmediate silently, so it is never
      sent where it is not advertised.
    * regular (SteppedConfigOnly 1, AutoCommissioning 01b): step-by-step DPDeinit -> ApplyDPInit ->
      release DPDeinit; traffic goes down. (Xena writes ApplyDPInit alone; the DPDeinit around it is
      the SteppedConfigOnly step-by-step procedure of CMIS 5.2 s6.2.4, not confirmed from a public host.)
    * neither: refused.
    """
    if requested not in ("auto", "immediate", "dpinit"):
        raise ValueError(f"apply method {requested!r} unknown; use auto, immediate or dpinit")
    support = reconfiguration_support(stepped_config_only, auto_commissioning)
    adv = (f"SteppedConfigOnly={int(bool(stepped_config_only))}, "
           f"AutoCommissioning={auto_commissioning & 3:02b} (lower page byte 2)")
    immediate = ApplyMethod("ApplyImmediate", False, False, support,
                            f"{adv}: hot reconfiguration, traffic stays up")
    if support == "both":
        if requested == "dpinit":
            return ApplyMethod("ApplyDPInit", False, True, support,
                               f"{adv}: regular reconfiguration requested, the data path re-initializes")
        return immediate
    if support == "hot":
        if requested == "dpinit":
            raise ValueError(f"the module advertises {adv}: only hot reconfiguration (ApplyImmediate); "
                             "use method 'immediate' or 'auto'")
        return immediate
    if support == "regular":
        if requested == "immediate":
            raise ValueError(f"the module advertises {adv}: no hot reconfiguration, it would ignore "
                             "ApplyImmediate; use method 'dpinit' or 'auto'")
        return ApplyMethod("ApplyDPInit", True, True, support,
                           f"{adv}: step-by-step DPDeinit + ApplyDPInit, the data path goes down")
    raise ValueError(f"the module advertises {adv}: neither regular nor hot reconfiguration, so eqtune "
                     "cannot apply EQ to it (its codes can still be read)")


@dataclass(frozen=True)
class CmisTiming:
    """Host waits (s), as real CMIS hosts use them; ``scaled(f)`` shortens them (emulators, tests).

    after_trigger_s: before the first ConfigStatus read after an Apply trigger (FBOSS
        ``kUsecAfterAppProgramming`` = 500 ms; Xena ``apply_change_on_lane`` sleeps 1 s), so a stale
        ConfigSuccess from the previous apply is not taken for this one.
    dp_poll_s / dp_timeout_s: DPState / ConfigStatus poll period and minimum timeout (FBOSS
        ``kUsecDatapathStatePollTime`` 500 ms, ``kUsecDatapathStateUpdateTime`` 10 s); the timeout
        also covers twice the module's advertised MaxDurationDPInit.
    diag_latch_s: after a DiagnosticsSelector (14h:128) change (FBOSS ``kUsecDiagSelectLatchWaitPrbs``
        200 ms).
    ber_settle_s: after an apply before the next BER measurement starts (Xena: 1 s after apply, then
        PRBS start and ``delay_after_reset``).
    vdm_latch_s: after a VDM freeze/unfreeze request before reading (FBOSS ``kUsecVdmLatchHold`` 100 ms).
    """

    after_trigger_s: float = 0.5
    dp_poll_s: float = 0.5
    dp_timeout_s: float = 10.0
    diag_latch_s: float = 0.2
    ber_settle_s: float = 1.0
    vdm_latch_s: float = 0.1

    def scaled(self, factor: float) -> CmisTiming:
        f = max(0.0, float(factor))
        if f == 1.0:
            return self
        return replace(self, after_trigger_s=self.after_trigger_s * f, dp_poll_s=max(self.dp_poll_s * f, 1e-3),
                       dp_timeout_s=self.dp_timeout_s, diag_latch_s=self.diag_latch_s * f,
                       ber_settle_s=self.ber_settle_s * f, vdm_latch_s=self.vdm_latch_s * f)
