"""CMIS driver against the module emulator: identity, capabilities, apply round trips, faults."""

from __future__ import annotations

import pytest

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis import CmisDriver, open_module
from eqtune.drivers.cmis_map import ConfigStatus, DPState
from eqtune.drivers.transport import PagedRegisters, parse_resource
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.emulate.registry import emulator_for, reset_emulators
from eqtune.emulate.transport import EmulatorTransport
from eqtune.errors import EqRangeError, ModuleError, TransportError


def make_link(seed: int = 1, noise: bool = True, lanes: int = 8) -> EmulatedLink:
    return EmulatedLink("c2m-10in", lanes=lanes, seed=seed, noise=noise, quality=surrogate_quality(16.0))


def make_module(settle_s: float = 0.0, **kw) -> tuple[EmulatedModule, CmisDriver]:
    timeout = kw.pop("poll_timeout_s", 1.0)
    link = kw.pop("link", None) or make_link(noise=kw.pop("noise", True))
    emu = EmulatedModule(link, settle_s=settle_s, clock=VirtualClock(), **kw)
    drv = CmisDriver(PagedRegisters(EmulatorTransport(emu, "emu:test")), resource="emu:test", poll_timeout_s=timeout)
    return emu, drv


def data_writes(emu: EmulatedModule) -> list:
    """Writes other than page selection and the diagnostics selector."""
    return [w for w in emu.writes if not (w.page == 0x14 and w.offset == 128)]


ALL = {"rx_pre": 3, "rx_post": 6, "rx_amp": 1, "tx_eq": 9}


def staged_block(emu):
    return emu.peek(0x10, M.SCS0_FIRST, M.SCS0_LAST - M.SCS0_FIRST + 1)


def test_identity_and_capabilities():
    emu, mod = make_module()
    ident = mod.identity()
    assert ident.vendor == "EQTUNE EMULATOR"
    assert ident.oui == "02-EE-71"
    assert ident.cmis_rev == "5.2" and ident.firmware == "5.2"
    assert ident.module_state == "ModuleReady"
    assert ident.form_factor == "OSFP"
    assert ident.date_code.startswith("2026-11-29")
    caps = mod.capabilities()
    assert caps.lanes == 8
    assert (caps.rx_pre_max, caps.rx_post_max, caps.tx_eq_max) == (7, 7, 10)
    assert caps.rx_amp_codes == (0, 1, 2, 3)
    assert caps.apply_immediate and not caps.stepped_config_only and caps.tx_adaptive and caps.diagnostics
    assert caps.knob_values()["tx_eq"] == tuple(range(11))


def test_amplitude_mask_and_stepped_advertised():
    emu, mod = make_module(rx_amp_codes=(1, 2), stepped_config_only=True)
    caps = mod.capabilities()
    assert caps.rx_amp_codes == (1, 2)
    assert caps.stepped_config_only and not caps.apply_immediate


@pytest.mark.parametrize("method", ["auto", "immediate", "dpinit"])
def test_round_trip(method):
    emu, mod = make_module(settle_s=0.05)
    before2 = mod.active_eq(2)
    mod.apply_eq({1: dict(ALL)}, method=method)
    assert mod.active_eq(1) == ALL
    assert mod.staged_eq(1) == ALL
    assert mod.active_eq(2) == before2  # other lanes of the data path keep their codes
    assert emu.link.active_codes(1) == ALL  # the physical layer follows
    assert mod.tx_adaptive_enabled()[1] is False and mod.tx_adaptive_enabled()[2] is True
    assert set(mod.config_status().values()) == {"ConfigSuccess"}
    assert set(mod.dp_states().values()) == {"DPActivated"}
    # ExplicitControl set, AppSel and DataPathID kept
    dpc = emu.peek(0x10, M.DP_CONFIG_SCS0.offset)[0]
    assert dpc == (1 << 4) | 1


def test_round_trip_stepped_config_only():
    emu, mod = make_module(settle_s=0.02, stepped_config_only=True)
    mod.apply_eq({4: {"rx_post": 7}, 5: {"tx_eq": 0}})
    assert mod.active_eq(4)["rx_post"] == 7 and mod.active_eq(5)["tx_eq"] == 0
    assert set(mod.dp_states().values()) == {"DPActivated"}
    assert emu.peek(0x10, M.DP_DEINIT.offset)[0] == 0  # DPDeinit released
    emu.writes.clear()
    with pytest.raises(ModuleError, match="SteppedConfigOnly"):
        mod.apply_eq({1: {"rx_pre": 2}}, method="immediate")
    assert data_writes(emu) == []


@pytest.mark.parametrize("codes, match", [
    ({1: {"rx_post": 8}}, r"rx_post=8 is outside .*0\.\.7"),
    ({1: {"tx_eq": 11}}, r"tx_eq=11"),
    ({1: {"rx_amp": -1}}, r"rx_amp=-1"),
    ({9: {"rx_pre": 1}}, r"lane 9 does not exist"),
    ({1: {"ctle": 1}}, r"unknown knob"),
    ({1: {"rx_pre": 1.5}}, r"rx_pre=1.5"),
    ({}, r"no EQ codes"),
])
def test_out_of_capability_refused_before_any_write(codes, match):
    emu, mod = make_module()
    staged = staged_block(emu)
    with pytest.raises(EqRangeError, match=match):
        mod.apply_eq(codes)
    assert data_writes(emu) == [] and emu.applies == 0
    assert staged_block(emu) == staged


def test_amplitude_outside_mask_refused():
    emu, mod = make_module(rx_amp_codes=(1, 2))
    with pytest.raises(EqRangeError, match="rx_amp=3 .*1, 2"):
        mod.validate_eq({1: {"rx_amp": 3}})
    assert data_writes(emu) == []


def test_apply_waits_for_data_path():
    emu, mod = make_module()
    emu.set_dp_state(1, DPState.INIT, until_s=0.2)
    mod.apply_eq({1: {"rx_pre": 4}})
    assert mod.active_eq(1)["rx_pre"] == 4


def test_apply_fails_clearly_when_data_path_stuck():
    emu, mod = make_module()
    emu.set_dp_state(3, DPState.INIT)
    with pytest.raises(ModuleError, match=r"data path not ready \(lane 3 DPInit\)"):
        mod.apply_eq({1: {"rx_pre": 4}})
    assert data_writes(emu) == []


def test_module_not_ready():
    emu, mod = make_module()
    emu.poke(0, 3, bytes([M.ModuleState.LOW_PWR << 1]))
    with pytest.raises(ModuleError, match="ModuleLowPwr"):
        mod.apply_eq({1: {"rx_pre": 4}})
    assert data_writes(emu) == []


def _assert_restored(emu, mod, staged_before, active_before):
    emu.settle()
    assert staged_block(emu) == staged_before
    assert mod.active_eq_all() == active_before
    assert {ln: emu.link.active_codes(ln) for ln in range(1, 9)} == active_before


@pytest.mark.parametrize("code, name", [(ConfigStatus.REJECTED, "ConfigRejected"),
                                        (ConfigStatus.REJECTED_INVALID_SI, "ConfigRejectedInvalidSI")])
def test_rejected_config_restores_staged(code, name):
    emu, mod = make_module(settle_s=0.01)
    staged, active = staged_block(emu), mod.active_eq_all()
    emu.inject("reject", code=code)
    with pytest.raises(ModuleError, match=f"rejected the configuration .*{name}.*staged set restored"):
        mod.apply_eq({2: dict(ALL)})
    _assert_restored(emu, mod, staged, active)


def _arm_at_apply(emu, mod, kind, **kw):
    """Arm the fault when the apply procedure starts writing (after the snapshot reads)."""
    orig = mod._run_apply

    def run(*a, **k):
        emu.inject(kind, **kw)
        return orig(*a, **k)

    mod._run_apply = run


@pytest.mark.parametrize("kind, after", [("nack", 0), ("nack", 3), ("nack", 9), ("timeout", 1), ("timeout", 6)])
def test_write_fault_mid_apply_restores(kind, after):
    emu, mod = make_module(settle_s=0.01)
    staged, active = staged_block(emu), mod.active_eq_all()
    _arm_at_apply(emu, mod, kind, on="write", after=after)
    with pytest.raises(ModuleError) as err:
        mod.apply_eq({1: dict(ALL), 2: {"rx_post": 0}})
    msg = str(err.value)
    assert "emu:test" in msg and ("NACK" in msg or "timeout" in msg)
    assert "restored" in msg and "RESTORE FAILED" not in msg
    _assert_restored(emu, mod, staged, active)


def test_write_fault_before_staging_writes_nothing():
    emu, mod = make_module()
    staged = staged_block(emu)
    emu.inject("nack", on="write", count=5)
    with pytest.raises(TransportError, match="NACK"):
        mod.apply_eq({1: dict(ALL)})
    assert data_writes(emu) == [] and staged_block(emu) == staged


def test_wrong_read_back_restores_active():
    """The module applied something else than staged: the previous active codes are re-applied."""
    emu, mod = make_module(settle_s=0.0)
    staged, active = staged_block(emu), mod.active_eq_all()
    orig = mod._wait_config
    calls = []

    def wait_then_tamper(lanes):
        orig(lanes)
        if not calls:  # only the first apply; the restore must work normally
            emu.poke(0x11, M.RX_POST_ACTIVE.offset, bytes([0x11]))  # lanes 1-2 rx_post = 1
        calls.append(lanes)

    mod._wait_config = wait_then_tamper
    with pytest.raises(ModuleError, match="read-back of page 11h differs.*previous active codes re-applied"):
        mod.apply_eq({1: dict(ALL)})
    mod._wait_config = orig
    _assert_restored(emu, mod, staged, active)


def test_slow_apply_times_out_and_restores():
    emu, mod = make_module(settle_s=0.01)
    mod.poll_timeout_s = 0.5
    staged, active = staged_block(emu), mod.active_eq_all()
    emu.inject("slow_apply", delay_s=5.0)
    with pytest.raises(ModuleError, match="ConfigInProgress"):
        mod.apply_eq({1: dict(ALL)})
    _assert_restored(emu, mod, staged, active)


def test_corrupted_reads_are_detected_or_retried():
    emu, mod = make_module()
    emu.inject("corrupt", count=1, on="read")
    assert mod.identity().vendor == "EQTUNE EMULATOR"  # checksum mismatch -> re-read
    emu.inject("corrupt", count=1, on="read")
    mod.apply_eq({1: {"rx_pre": 5}})
    assert mod.active_eq(1)["rx_pre"] == 5
    emu.inject("corrupt", count=100, on="read")
    with pytest.raises(TransportError, match="corrupted"):
        mod.identity()


def test_persistent_read_nack_is_a_transport_error():
    emu, mod = make_module()
    emu.inject("nack", count=10, on="read")
    with pytest.raises(TransportError, match="emu:test.*NACK.*seated"):
        mod.active_eq(1)


def test_single_read_nack_is_retried():
    emu, mod = make_module()
    emu.inject("nack", count=1, on="read")
    assert mod.active_eq(1)


def test_partial_data_paths_apply_only_their_lanes():
    emu, mod = make_module()
    for page, fld in ((0x10, M.DP_CONFIG_SCS0), (0x11, M.ACTIVE_DP_CONFIG)):
        emu.poke(page, fld.offset, bytes([0x10] * 4 + [0x10 | (4 << 1)] * 4))  # DataPathID 0 and 4
    mod.apply_eq({6: {"rx_pre": 6}})
    status = emu.peek(0x11, M.CONFIG_STATUS.offset, 4)
    lanes = {ln: M.CONFIG_STATUS.lane_value(status, ln) for ln in range(1, 9)}
    assert all(lanes[ln] == ConfigStatus.UNDEFINED for ln in range(1, 5))
    assert all(lanes[ln] == ConfigStatus.SUCCESS for ln in range(5, 9))


def test_module_ber_counts_and_follows_codes():
    emu, mod = make_module(noise=False)
    counts = mod.module_ber([1, 6], dwell_s=1.0)
    assert set(counts) == {1, 6}
    rate = emu.link.bit_rate_bps
    # each lane's interval runs between its own counter reads: the dwell plus the 200 ms
    # DiagnosticsSelector latch waits (FBOSS) of the selector switches in between
    assert counts[6].dwell_s == pytest.approx(1.0, rel=0.01)  # lanes 5-8 selected last, read first
    assert counts[1].dwell_s == pytest.approx(1.4, rel=0.01)  # + two switches of 0.2 s
    for c in counts.values():
        assert c.bits == pytest.approx(rate * c.dwell_s, rel=0.01)
    mod.apply_eq({1: {"tx_eq": 0}})  # fixed code far from the optimum (adaptive EQ now off)
    bad = mod.module_ber([1], 0.5)[1].ber
    mod.apply_eq({1: {"tx_eq": 9}})
    good = mod.module_ber([1], 0.5)[1]
    assert good.ber < bad
    assert good.ber_upper95 >= good.ber
    assert emu.peek(0x13, M.HOST_CHK_ENABLE.offset)[0] == 0  # checker enable restored


def test_adaptive_tx_eq_reaches_best_fixed_code():
    emu, mod = make_module(noise=False)
    adaptive = emu.link.ber(3, "module_rx")
    assert mod.tx_adaptive_enabled()[3]
    mod.apply_eq({3: {"tx_eq": 0}})
    assert not mod.tx_adaptive_enabled()[3]
    assert emu.link.ber(3, "module_rx") > adaptive


def test_module_ber_without_diagnostics():
    emu, mod = make_module(diagnostics=False)
    with pytest.raises(ModuleError, match="diagnostics pages 13h/14h"):
        mod.module_ber([1], 0.1)


def test_open_module_emu_resource_persists_in_process():
    reset_emulators()
    res = "emu:c2m-10in?seed=3&settle_ms=0&fast=1"
    with open_module(res) as mod:
        mod.apply_eq({2: {"rx_post": 4}})
    with open_module(res) as mod:
        assert mod.active_eq(2)["rx_post"] == 4
    reset_emulators()


def test_open_module_rejects_non_cmis():
    reset_emulators()
    res = "emu:c2m-4in?fast=1&settle_ms=0"
    emulator_for(parse_resource(res)).poke(0, 0, bytes([0x11]))
    with pytest.raises(ModuleError, match="0x11 is not a CMIS module"):
        open_module(res)
    reset_emulators()


def test_lane_without_data_path_refused():
    emu, mod = make_module()
    emu.poke(0x11, M.ACTIVE_DP_CONFIG.offset + 6, b"\x00")  # lane 7 not in use
    with pytest.raises(ModuleError, match=r"lane\(s\) \[7\] belong to no configured data path"):
        mod.apply_eq({7: {"rx_pre": 1}})
    assert data_writes(emu) == []


def test_staged_appsel_is_not_applied_by_accident():
    """A stale different AppSel in the staged set must not be applied with the EQ codes."""
    emu, mod = make_module()
    emu.poke(0x10, M.DP_CONFIG_SCS0.offset, bytes([0x20] * 8))  # AppSel 2 staged by someone
    mod.apply_eq({1: {"rx_pre": 2}})
    assert emu.peek(0x11, M.ACTIVE_DP_CONFIG.offset, 8) == bytes([0x11] * 8)


def test_vdm_follows_codes_and_is_frozen_while_read():
    emu, mod = make_module(noise=False)
    assert mod.capabilities().vdm
    before = mod.vdm([2])
    # the default image advertises these host-side observables (cmis_table.toml osfp8-both)
    assert set(before) == {2} and set(before[2].advertised()) == {
        "esnr_host_input_db", "ltp_host_input_db", "prefec_ber_host_input", "prefec_ber_min_host_input",
        "prefec_ber_max_host_input", "prefec_ber_avg_host_input", "errored_frames_host_input",
        "ferc_total_host_input"}
    assert before[2].esnr_media_input_db is None and before[2].prefec_ber_media_input is None  # not 0
    mod.apply_eq({2: {"tx_eq": 0}})
    after = mod.vdm()
    assert set(after) == set(range(1, 9))
    assert after[2]["esnr_host_input_db"] < before[2]["esnr_host_input_db"]
    assert after[2]["prefec_ber_host_input"] > before[2]["prefec_ber_host_input"]
    assert after[2]["prefec_ber_host_input"] == pytest.approx(emu.link.ber(2, "module_rx"), rel=0.01)
    assert emu.peek(0x2F, M.VDM_CONTROL.offset)[0] == 0  # released
    ctl = [w for w in emu.writes if w.page == 0x2F and w.offset == M.VDM_CONTROL.offset]
    assert [w.data for w in ctl[-2:]] == [b"\x80", b"\x00"]
    # BER thresholds from page 28h (set 1 of the emulator image) and flags from page 2Ch
    thr = after[2].thresholds["prefec_ber_host_input"]
    assert thr.high_alarm == pytest.approx(2.4e-4, rel=1e-3) and thr.high_warning == pytest.approx(1e-5, rel=1e-3)
    assert after[2].flags["prefec_ber_host_input"].high_alarm == (after[2].prefec_ber_host_input > 2.4e-4)


def test_vdm_not_supported():
    emu, mod = make_module(vdm=False)
    with pytest.raises(ModuleError, match="VDM pages 20h-2Fh"):
        mod.vdm()


@pytest.mark.parametrize("value", [0.0, 1e-15, 3.7e-9, 2.4e-4, 0.0123, 0.5])
def test_f16_round_trip(value):
    got = M.f16_decode(M.f16_encode(value))
    assert got == pytest.approx(value, rel=1e-3, abs=1e-30)
    assert M.f16_decode(0xFFFF) == pytest.approx(2047 * 10.0 ** 7) and M.f16_decode(0x7FFF) == pytest.approx(2.047e-6)


def test_apply_of_active_codes_writes_nothing():
    emu, mod = make_module()
    mod.apply_eq({1: {"tx_eq": 4, "rx_pre": 2}})
    emu.writes.clear()
    applies = emu.applies
    mod.apply_eq({1: {"tx_eq": 4, "rx_pre": 2}})
    assert data_writes(emu) == [] and emu.applies == applies
    # tx_eq equal to the active code but adaptive EQ on: must still apply (turns adaptive off)
    code = mod.active_eq(5)["tx_eq"]
    assert mod.tx_adaptive_enabled()[5]
    mod.apply_eq({5: {"tx_eq": code}})
    assert not mod.tx_adaptive_enabled()[5]



def test_one_corrupted_read_of_the_lower_page_advertisement_is_caught():
    """No checksum covers lower-page byte 2 (SteppedConfigOnly, AutoCommissioning): capabilities()
    reads it twice, so a flipped bit in the first read transaction never changes the advertisement
    (before: one flip could turn a hot-reconfigurable module into one that refuses every apply)."""
    emu, mod = make_module()
    clean = mod.capabilities(refresh=True)
    for _ in range(30):  # the flipped bit is random: many tries cover every bit of byte 2
        emu.inject("corrupt", count=1, on="read")  # the next read transaction: lower byte 2
        assert mod.capabilities(refresh=True) == clean
