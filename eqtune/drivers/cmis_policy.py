"""How a CMIS host applies staged settings and how long it waits: pure decisions, cited.

* :func:`choose_apply_method`: the Apply procedure from the CMIS revision (00h:1), SteppedConfigOnly
  (00h:2 bit 6) and, from CMIS 5.3 on only, AutoCommissioning (00h:2 bits 1-0); whether the data
  path (traffic) goes down and for how long the module says it may. The one answer ``module show``,
  ``module doctor``, ``module set``, live tuning and profile push all use.
* :class:`CmisTiming`: the waits real hosts use after a trigger, a DiagnosticsSelector change or a
  VDM freeze, and before measuring BER after an apply.
* :data:`DURATION_S`: the State Duration encodings of page 01h bytes 144, 167, 168.

The public hosts, at the commits eqtune was checked against:

* SONiC: sonic-net/sonic-platform-daemons f4713bc5c803b07c24b5d3e7b047f59101f14f6a
  ``sonic-xcvrd/xcvrd/cmis/cmis_manager_task.py``: on EVERY CMIS module, whatever byte 2 says,
  DPDeinit (l.947/1059 ``set_datapath_deinit``) -> wait DataPathDeactivated -> stage SI
  (l.1169 ``stage_custom_si_settings``) -> AppSel with ExplicitControl (l.1178 ``set_application``)
  -> ApplyDPInit (l.1179 ``scs_apply_datapath_init``) -> ConfigSuccess -> DPInitPending (CMIS >= 5,
  l.1208) -> release DPDeinit (l.1223 ``set_datapath_init``) -> DataPathInitialized -> Tx on ->
  DataPathActivated. sonic-platform-common 8607c9f3f3d2bfd895b5b9b4c741c0077ce78ebe
  ``sonic_xcvr/api/public/cmis.py`` never reads SteppedConfigOnly or AutoCommissioning.
* FBOSS: facebook/fboss 14ec47ec32db58d91cba6033ca89f8b91db15cd5
  ``fboss/qsfp_service/module/cmis/CmisModule.cpp`` ``setModuleRxEqualizerLocked`` (l.4340-4475):
  compare active (11h) with desired, write only what differs, ExplicitControl bit (l.4454), then
  ApplyImmediate (l.4466 STAGE_CTRL_SET0_IMMEDIATE) with traffic up; application changes go through
  ``resetDataPathWithFunc`` (l.5364: DPDeinit, wait Deactivated, ApplyDPInit, release). It does not
  read byte 2 bits 6 or 1-0 either.
* CMIS: SteppedConfigOnly 1 = the module supports only the step-by-step procedure (no
  intervention-free reconfiguration, no ApplyImmediate); bits 1-0 of byte 2 are AutoCommissioning
  only from CMIS 5.3 (00b none, 01b regular = ApplyDPInit, 10b hot = ApplyImmediate, 11b reserved);
  before 5.3 they are reserved and a host must not read meaning into them.

Where the hosts differ (SteppedConfigOnly 0: SONiC steps, FBOSS applies immediately), eqtune's
``auto`` follows FBOSS: CMIS allows hot reconfiguration there, and an FAE tuning a live link keeps
its traffic; ``dpinit`` gives SONiC's step-by-step procedure. Where SteppedConfigOnly is 1 eqtune
follows SONiC (the procedure every module supports), never refuses, and says traffic goes down; the
one exception is a CMIS >= 5.3 module advertising AutoCommissioning 10b (hot), where ApplyImmediate
is what the module itself says it supports.
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

SONIC = ("sonic-net/sonic-platform-daemons@f4713bc sonic-xcvrd/xcvrd/cmis/cmis_manager_task.py "
         "l.947,1169-1179,1223 (DPDeinit -> stage -> ApplyDPInit -> release)")
FBOSS = ("facebook/fboss@14ec47e fboss/qsfp_service/module/cmis/CmisModule.cpp l.4454-4466 "
         "setModuleRxEqualizerLocked (ExplicitControl + ApplyImmediate)")
CMIS53 = "OIF-CMIS-05.3 byte 00h:2 bits 1-0 AutoCommissioning (reserved before 5.3)"
CMIS_STEPPED = "OIF-CMIS-05.2 s6.2.4 / byte 00h:2 bit 6 SteppedConfigOnly (step-by-step procedure only)"
#: the first CMIS revision (major, minor) that defines AutoCommissioning (00h:2 bits 1-0)
AUTOCOMM_FROM = (5, 3)


def parse_rev(rev: str | tuple[int, int] | int | None) -> tuple[int, int]:
    """CMIS revision as (major, minor) from "5.2", (5, 2) or the raw byte 0x52; None -> (5, 2)."""
    if rev is None or rev == "":
        return (5, 2)
    if isinstance(rev, int):
        return (rev >> 4, rev & 0xF)
    if isinstance(rev, tuple):
        return (int(rev[0]), int(rev[1]))
    major, _, minor = str(rev).partition(".")
    return (int(major), int(minor or 0))


def auto_commissioning_defined(cmis_rev: str | tuple[int, int] | int | None) -> bool:
    """True when byte 00h:2 bits 1-0 mean AutoCommissioning (CMIS 5.3 and later)."""
    return parse_rev(cmis_rev) >= AUTOCOMM_FROM


@dataclass(frozen=True)
class ApplyMethod:
    """The Apply procedure eqtune uses on a module.

    ``trigger``: "ApplyImmediate" (page 10h byte 144, hot reconfiguration) or "ApplyDPInit" (byte
    143). ``deinit``: the step-by-step procedure (DPDeinit, page 10h byte 128, raised before the
    trigger and released after it). ``traffic_down``: the data path re-initializes, so traffic on the
    lanes' data path stops. ``max_duration_s``: how long the module advertises it may take
    (MaxDurationDPDeinit + MaxDurationDPInit, page 01h byte 144, for a traffic-down apply; None when
    traffic stays up or a code is reserved). ``reconfiguration``: "both" (SteppedConfigOnly 0),
    "stepped" (step-by-step only), "hot" / "regular" (CMIS >= 5.3 AutoCommissioning 10b / 01b).
    ``source``: the host code or spec clause this answer follows.
    """

    trigger: str
    deinit: bool
    traffic_down: bool
    reconfiguration: str
    reason: str
    source: str = SONIC
    cmis_rev: str = "5.2"
    max_duration_s: float | None = None

    @property
    def supported(self) -> bool:
        return bool(self.trigger)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "supported": self.supported}


def reconfiguration_support(stepped_config_only: bool, auto_commissioning: int,
                            cmis_rev: str | tuple[int, int] | int | None = None) -> str:
    """What reconfiguration the module allows: SteppedConfigOnly 0 -> "both"; SteppedConfigOnly 1
    -> "stepped", except from CMIS 5.3 on, where AutoCommissioning 10b -> "hot" and 01b -> "regular"
    (00b and the reserved 11b: "stepped"). Bits 1-0 are not read before CMIS 5.3."""
    if not stepped_config_only:
        return "both"
    if not auto_commissioning_defined(cmis_rev):
        return "stepped"
    return {2: "hot", 1: "regular"}.get(auto_commissioning & 0x3, "stepped")


def _sum_durations(*vals: float | None) -> float | None:
    return None if any(v is None for v in vals) else float(sum(v for v in vals if v is not None))


def choose_apply_method(stepped_config_only: bool, auto_commissioning: int, requested: str = "auto", *,
                        cmis_rev: str | tuple[int, int] | int | None = None, dp_init_max_s: float | None = None,
                        dp_deinit_max_s: float | None = None) -> ApplyMethod:
    """The Apply procedure for ``requested`` ("auto", "immediate", "dpinit") on this module.

    Raises ValueError (with the reason) only when ``immediate`` is requested from a module that
    would ignore ApplyImmediate. Rules (module docstring for the sources):

    * both: auto / immediate -> ApplyImmediate, traffic up (FBOSS); dpinit -> SONiC's step-by-step.
    * hot (CMIS >= 5.3, AutoCommissioning 10b): auto / immediate -> ApplyImmediate (CMIS 5.3);
      dpinit -> step-by-step (SONiC).
    * stepped / regular: auto / dpinit -> step-by-step DPDeinit -> ApplyDPInit -> release, traffic
      down (SONiC; CMIS SteppedConfigOnly); immediate -> refused (the module ignores it silently).
    """
    if requested not in ("auto", "immediate", "dpinit"):
        raise ValueError(f"apply method {requested!r} unknown; use auto, immediate or dpinit")
    major, minor = parse_rev(cmis_rev)
    rev = f"{major}.{minor}"
    support = reconfiguration_support(stepped_config_only, auto_commissioning, (major, minor))
    ac = (f"AutoCommissioning={auto_commissioning & 3:02b}" if auto_commissioning_defined((major, minor))
          else f"bits 1-0 not read (AutoCommissioning exists from CMIS 5.3; this module is CMIS {rev})")
    adv = f"CMIS {rev}, SteppedConfigOnly={int(bool(stepped_config_only))}, {ac} (lower page byte 2)"
    down_s = _sum_durations(dp_deinit_max_s, dp_init_max_s)
    immediate = ApplyMethod("ApplyImmediate", False, False, support,
                            f"{adv}: hot reconfiguration, traffic stays up",
                            FBOSS if support == "both" else CMIS53, rev, None)
    stepped = ApplyMethod("ApplyDPInit", True, True, support,
                          f"{adv}: step-by-step DPDeinit -> ApplyDPInit -> release, the data path goes down",
                          SONIC if support == "both" else SONIC + "; " + CMIS_STEPPED, rev, down_s)
    if support in ("both", "hot"):
        return stepped if requested == "dpinit" else immediate
    if requested == "immediate":
        raise ValueError(f"the module advertises {adv}: no hot reconfiguration, it would ignore "
                         "ApplyImmediate; use method 'dpinit' or 'auto'")
    return stepped


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
    host_cap_s: the longest eqtune waits for one data path step or ConfigStatus, whatever the module
        advertises (a module advertising 6000 s would otherwise hold an FAE for 100 minutes).
    """

    after_trigger_s: float = 0.5
    dp_poll_s: float = 0.5
    dp_timeout_s: float = 10.0
    diag_latch_s: float = 0.2
    ber_settle_s: float = 1.0
    vdm_latch_s: float = 0.1
    host_cap_s: float = 120.0

    def wait_limit(self, dp_init_max_s: float | None, dp_deinit_max_s: float | None, floor_s: float) -> float:
        """Timeout (s) for a data path step or ConfigStatus: twice the advertised MaxDurationDPDeinit
        + MaxDurationDPInit (page 01h byte 144; FBOSS ``getExpectedDatapathDelayUsec`` uses the
        advertisement for AEC/ZR modules, else ``kUsecDatapathStateUpdateTime`` 10 s), at least
        ``floor_s``, at most ``host_cap_s``."""
        advertised = (dp_init_max_s or 0.0) + (dp_deinit_max_s or 0.0)
        return min(self.host_cap_s, max(floor_s, 2.0 * advertised))

    def scaled(self, factor: float) -> CmisTiming:
        f = max(0.0, float(factor))
        if f == 1.0:
            return self
        return replace(self, after_trigger_s=self.after_trigger_s * f, dp_poll_s=max(self.dp_poll_s * f, 1e-3),
                       dp_timeout_s=self.dp_timeout_s, diag_latch_s=self.diag_latch_s * f,
                       ber_settle_s=self.ber_settle_s * f, vdm_latch_s=self.vdm_latch_s * f)


def method_for(caps: Any, requested: str = "auto") -> ApplyMethod:
    """:func:`choose_apply_method` for an :class:`~eqtune.drivers.cmis_types.EqCapabilities`: the one
    call every command (show, doctor, set, live, push) makes. ValueError as there."""
    return choose_apply_method(caps.stepped_config_only, caps.auto_commissioning, requested,
                               cmis_rev=getattr(caps, "cmis_rev", None), dp_init_max_s=caps.dp_init_max_s,
                               dp_deinit_max_s=getattr(caps, "dp_deinit_max_s", None))
