"""What a network OS sees of the emulated module: the application advertisement, the module state
machine with LowPwr, Tx disable, the step-by-step data path states (DPInitPending,
DataPathInitialized), and the module reset. Sequences as sonic xcvrd's CmisManagerTask drives them
(sonic-platform-daemons sonic-xcvrd/xcvrd/cmis/cmis_manager_task.py DP_DEINIT -> AP_CONF -> DP_INIT
-> DP_TXON -> DP_ACTIVATE), register addresses from the emulator's cited table."""

from __future__ import annotations

import pytest

from eqtune.emulate.cmis_table import image_names, load_table
from eqtune.emulate.module import EmulatedModule, VirtualClock

T = load_table()
DP = T.codes["dp"]
MS = T.codes["module"]


def make(image: str) -> EmulatedModule:
    return EmulatedModule(settle_s=0.05, clock=VirtualClock(), image=image, seed=1, noise=False)


def wr(emu: EmulatedModule, page: int, off: int, val: int) -> None:
    emu.write(127, bytes([page]))
    emu.write(off, bytes([val]))


def rd(emu: EmulatedModule, page: int, off: int) -> int:
    emu.write(127, bytes([page]))
    return emu.read(off, 1)[0]


def run(emu: EmulatedModule, s: float = 0.2) -> None:
    emu.clock.sleep(s)
    emu.peek(0, 0)  # events run on access


def states(emu: EmulatedModule) -> set[int]:
    return {emu.dp_state(ln) for ln in range(1, emu.lanes + 1)}


@pytest.mark.parametrize("image", image_names())
def test_application_advertisement_matches_the_lane_count(image):
    emu = make(image)
    host_if, media_if, counts, assign = emu.peek(0, 86, 4)
    assert emu.peek(0, 85)[0] == 2  # MediaType: single-mode fibre (sff8024 MODULE_MEDIA_TYPE 2)
    assert counts == emu.lanes << 4 | emu.lanes and assign == 0x01
    # SFF-8024: 81 800GAUI-8 S C2M + 86 800GBASE-DR8 on 8 lanes; 79 400GAUI-4-S + 28 400GBASE-DR4 on 4;
    # the 200G-per-lane image: 131 1.6TAUI-8 + 127 1.6TBASE-DR8 on 8
    want = (131, 127) if image == "osfp8-1600g" else {8: (81, 86), 4: (79, 28)}[emu.lanes]
    assert (host_if, media_if) == want
    assert emu.peek(1, 176)[0] == 0x01  # media lane assignment: a data path may start on media lane 1
    assert emu.peek(1, 155)[0] >> 1 & 1  # Tx disable advertised
    assert emu.peek(0, 200)[0] >> 5 >= 1 and emu.peek(0, 201)[0] > 0  # a power class above 1, max power


@pytest.mark.parametrize("image", image_names())
def test_sonic_step_by_step_sequence_reaches_initialized_then_activated(image):
    emu = make(image)
    mask = (1 << emu.lanes) - 1
    wr(emu, 0x10, 128, mask)  # DPDeinit
    wr(emu, 0x10, 130, mask)  # Tx disable
    run(emu)
    assert states(emu) == {DP["deactivated"]}
    for ln in range(emu.lanes):  # AppSel 1, DataPathID 0, ExplicitControl 1 (sonic set_application)
        wr(emu, 0x10, 145 + ln, 0x11)
    wr(emu, 0x10, 143, mask)  # ApplyDPInit in DPDeactivated: every image accepts it
    assert {rd(emu, 0x11, 202 + i) for i in range(emu.lanes // 2)} == {0xCC}  # ConfigInProgress
    run(emu)
    assert {rd(emu, 0x11, 202 + i) for i in range(emu.lanes // 2)} == {0x11}  # ConfigSuccess
    assert rd(emu, 0x11, 235) == mask  # DPInitPending (CMIS 5.x)
    wr(emu, 0x10, 128, 0)  # release DPDeinit: DPInit -> DataPathInitialized while Tx is disabled
    run(emu)
    assert states(emu) == {DP["initialized"]} and rd(emu, 0x11, 235) == 0
    wr(emu, 0x10, 130, 0)  # Tx on -> DataPathActivated
    run(emu)
    assert states(emu) == {DP["activated"]}
    assert emu.ignored_triggers == 0


def test_low_power_request_takes_the_module_down_and_back():
    emu = make("osfp8-both")
    wr(emu, 0, 26, 1 << 4)  # LowPwrRequestSW
    assert emu.peek(0, 3)[0] >> 1 & 7 == MS["pwr_dn"]
    run(emu)
    assert emu.peek(0, 3)[0] >> 1 & 7 == MS["low_pwr"] and states(emu) == {DP["deactivated"]}
    wr(emu, 0, 26, 0)
    run(emu)
    assert emu.peek(0, 3)[0] >> 1 & 7 == MS["ready"]
    run(emu)
    assert states(emu) == {DP["activated"]}


def test_reset_to_defaults_restores_the_control_sets_and_the_software_reset_bit_does_the_same():
    emu = make("osfp8-both")
    default_active = emu.peek(0x11, 206, 29)
    default_staged = emu.peek(0x10, 145, 29)
    for ln in range(8):
        wr(emu, 0x10, 145 + ln, 0x11)
    wr(emu, 0x10, 156, 0x99)  # staged Tx EQ lanes 1-2
    wr(emu, 0x10, 144, 0xFF)  # ApplyImmediate
    run(emu)
    assert emu.peek(0x11, 217)[0] == 0x99 and emu.peek(0x11, 206, 29) != default_active
    emu.reset_to_defaults()
    assert emu.peek(0x11, 206, 29) == default_active and emu.peek(0x10, 145, 29) == default_staged
    for ln in range(8):
        wr(emu, 0x10, 145 + ln, 0x11)
    wr(emu, 0x10, 156, 0x99)
    wr(emu, 0x10, 144, 0xFF)
    run(emu)
    assert emu.peek(0x11, 217)[0] == 0x99
    wr(emu, 0, 26, 1 << 3)  # SoftwareReset (sonic CmisApi.reset_module)
    assert emu.peek(0x11, 206, 29) == default_active and emu.peek(0, 26)[0] == 0


@pytest.mark.parametrize("image, accepted", [("qsfp4-regular", True), ("osfp8-both", True),
                                             ("qsfpdd8-stepped", False), ("qsfpdd8-hot", False)])
def test_apply_dpinit_from_dpactivated_follows_the_advertisement(image, accepted):
    """Intervention-free ApplyDPInit (data path left DPActivated): SteppedConfigOnly 0, or CMIS 5.3
    AutoCommissioning 01b (regular); a stepped-only module rejects it (ConfigRejectedLaneInUse)."""
    emu = make(image)
    mask = (1 << emu.lanes) - 1
    wr(emu, 0x10, 143, mask)
    run(emu)
    status = {rd(emu, 0x11, 202 + i) for i in range(emu.lanes // 2)}
    assert status == ({0x11} if accepted else {0x66})
    run(emu)
    assert states(emu) == {DP["activated"]}
