"""The Apply procedure for every lower page byte 2 x CMIS revision a module in the field reports.

Each row names the source it follows (eqtune/drivers/cmis_policy.py has the file, line and commit):
SONIC = sonic-xcvrd cmis_manager_task (DPDeinit -> ApplyDPInit -> release on every module), FBOSS =
CmisModule::setModuleRxEqualizerLocked (ExplicitControl + ApplyImmediate), CMIS53 = AutoCommissioning
(00h:2 bits 1-0), defined only from CMIS 5.3 (reserved, hence not read, before). The same table is
then run against the module emulator, whose acceptance rules are written separately
(eqtune/emulate/datapath.py): the chosen procedure must be one the module accepts, end to end.
"""

from __future__ import annotations

import pytest

from eqtune.drivers.cmis import CmisDriver
from eqtune.drivers.cmis_policy import choose_apply_method
from eqtune.drivers.transport import PagedRegisters
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.emulate.transport import EmulatorTransport

STEP = ("ApplyDPInit", True, True)  # trigger, DPDeinit around it, traffic down
HOT = ("ApplyImmediate", False, False)
REVS = ("4.0", "5.0", "5.2", "5.3")

# byte 2 -> {revision: (procedure, source)}; "*" = every revision
TABLE: dict[int, dict[str, tuple[tuple[str, bool, bool], str]]] = {
    # SteppedConfigOnly 0: hosts differ (SONiC steps, FBOSS immediate); eqtune follows FBOSS (traffic up)
    0x00: {"*": (HOT, "FBOSS")},
    # SteppedConfigOnly 1, bits 1-0 00b: the commonest module; step-by-step, never refused
    0x40: {"*": (STEP, "SONIC")},
    # bits 1-0 = 01b: reserved before 5.3 (SONiC, ignoring them); 5.3 regular: step-by-step still (SONiC)
    0x41: {"*": (STEP, "SONIC")},
    # bits 1-0 = 10b: reserved before 5.3 -> step-by-step; on 5.3 hot reconfiguration -> ApplyImmediate
    0x42: {"4.0": (STEP, "SONIC"), "5.0": (STEP, "SONIC"), "5.2": (STEP, "SONIC"), "5.3": (HOT, "CMIS53")},
    # bits 1-0 = 11b: reserved in every revision -> step-by-step
    0x43: {"*": (STEP, "SONIC")},
}
ROWS = [(b2, rev, *(TABLE[b2].get(rev) or TABLE[b2]["*"])) for b2 in TABLE for rev in REVS]


@pytest.mark.parametrize("byte2, rev, expected, source", ROWS,
                         ids=[f"0x{b:02x}-cmis{r}-{s}" for b, r, _, s in ROWS])
def test_policy_row(byte2, rev, expected, source):
    m = choose_apply_method(bool(byte2 >> 6 & 1), byte2 & 3, "auto", cmis_rev=rev,
                            dp_init_max_s=0.1, dp_deinit_max_s=0.1)
    assert (m.trigger, m.deinit, m.traffic_down) == expected
    assert m.supported and m.cmis_rev == rev
    assert {"SONIC": "sonic-xcvrd", "FBOSS": "CmisModule.cpp", "CMIS53": "CMIS-05.3"}[source] in m.source
    # the consent gate's inputs: traffic down and how long the module says it may take
    assert m.max_duration_s == (pytest.approx(0.2) if m.traffic_down else None)
    if rev != "5.3":
        assert "AutoCommissioning exists from CMIS 5.3" in m.reason  # bits 1-0 not read, and said so


@pytest.mark.parametrize("byte2, rev, expected, source", ROWS,
                         ids=[f"0x{b:02x}-cmis{r}" for b, r, _, _ in ROWS])
def test_emulated_module_accepts_the_chosen_procedure(byte2, rev, expected, source):
    link = EmulatedLink("c2m-10in", lanes=8, seed=3, noise=False, quality=surrogate_quality(16.0))
    major, minor = (int(x) for x in rev.split("."))
    emu = EmulatedModule(link, settle_s=0.02, clock=VirtualClock(), stepped_config_only=bool(byte2 >> 6 & 1),
                         auto_commissioning=byte2 & 3, cmis_rev=major << 4 | minor)
    assert emu.peek(0, 2)[0] == byte2
    mod = CmisDriver(PagedRegisters(EmulatorTransport(emu, "emu:rev")), resource="emu:rev")
    method = mod.apply_method()
    assert (method.trigger, method.deinit, method.traffic_down) == expected
    mod.apply_eq({1: {"tx_eq": 4, "rx_post": 2}})
    assert mod.active_eq(1)["tx_eq"] == 4 and mod.active_eq(1)["rx_post"] == 2
    assert emu.ignored_triggers == 0 and emu.applies == 1
    assert all(emu.dp_state(ln) == 4 for ln in range(1, 9))  # DPActivated again after the apply


def test_immediate_on_a_module_that_would_ignore_it_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="ignore ApplyImmediate"):
        choose_apply_method(True, 0, "immediate", cmis_rev="5.2")
    # dpinit on a hot-capable module is SONiC's step-by-step procedure
    m = choose_apply_method(False, 0, "dpinit", cmis_rev="5.2")
    assert (m.trigger, m.deinit, m.traffic_down) == STEP
