"""CmisDriver.enable_tx_adaptive / set_tx_adaptive against the module emulator, and the emu: adaptive option."""

from __future__ import annotations

import pytest

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis import open_module
from eqtune.drivers.cmis_map import ConfigStatus
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for, reset_emulators
from eqtune.errors import EqRangeError, InputError, ModuleError
from tests.drivers.test_cmis_driver import _arm_at_apply, data_writes, make_module, staged_block


def adaptive_bits(emu) -> tuple[int, int]:
    """(staged page 10h byte 153, active page 11h byte 214)."""
    return emu.peek(0x10, M.TX_ADAPTIVE_EN_SCS0.offset)[0], emu.peek(0x11, M.TX_ADAPTIVE_EN_ACTIVE.offset)[0]


def test_round_trip_off_by_apply_eq_then_on_again():
    emu, mod = make_module(noise=False)
    adaptive_ber = emu.link.ber(2, "module_rx")
    mod.apply_eq({2: {"tx_eq": 0}, 3: {"tx_eq": 1}})
    assert adaptive_bits(emu) == (0xF9, 0xF9)
    assert emu.link.ber(2, "module_rx") > adaptive_ber and not emu.link.tx_adaptive(2)
    codes = mod.active_eq_all()
    staged = staged_block(emu)
    mod.enable_tx_adaptive([2])
    assert mod.tx_adaptive_enabled() == {ln: ln != 3 for ln in range(1, 9)}
    assert adaptive_bits(emu) == (0xFB, 0xFB)
    assert emu.link.tx_adaptive(2) and not emu.link.tx_adaptive(3)
    assert emu.link.ber(2, "module_rx") == adaptive_ber
    assert mod.active_eq_all() == codes  # the fixed codes stay as they were
    after = staged_block(emu)  # only byte 153 (and ExplicitControl, already on) may differ
    assert [M.SCS0_FIRST + i for i in range(len(after)) if after[i] != staged[i]] == [M.TX_ADAPTIVE_EN_SCS0.offset]
    # already on: nothing written
    emu.writes.clear()
    applies = emu.applies
    mod.enable_tx_adaptive([2])
    assert data_writes(emu) == [] and emu.applies == applies
    # off again without changing a code, then on for both lanes via set_tx_adaptive
    mod.set_tx_adaptive([2], False)
    assert not mod.tx_adaptive_enabled()[2] and mod.active_eq_all() == codes
    mod.set_tx_adaptive([2, 3], True)
    assert all(mod.tx_adaptive_enabled().values())


def test_stepped_module_uses_dpinit():
    emu, mod = make_module(stepped_config_only=True)
    mod.apply_eq({4: {"tx_eq": 2}})
    assert not mod.tx_adaptive_enabled()[4]
    mod.enable_tx_adaptive([4])
    assert mod.tx_adaptive_enabled()[4] and mod.dp_states()[4] == "DPActivated"
    with pytest.raises(ModuleError, match="SteppedConfigOnly"):
        mod.set_tx_adaptive([4], False, method="immediate")


def test_not_supported_refused_before_any_write():
    emu, mod = make_module(tx_adaptive=False)
    assert not mod.capabilities().tx_adaptive and not any(mod.tx_adaptive_enabled().values())
    emu.writes.clear()
    with pytest.raises(EqRangeError, match="byte 161 bit 3"):
        mod.enable_tx_adaptive([1])
    with pytest.raises(EqRangeError, match="lane 9"):
        mod.enable_tx_adaptive([9])
    with pytest.raises(EqRangeError, match="no lanes"):
        mod.enable_tx_adaptive([])
    assert data_writes(emu) == [] and emu.applies == 0


@pytest.mark.parametrize("kind, kw", [("nack", {"on": "write", "after": 1}), ("timeout", {"on": "write", "after": 2}),
                                      ("reject", {"code": ConfigStatus.REJECTED_INVALID_SI})])
def test_fault_mid_apply_restores(kind, kw):
    emu, mod = make_module(settle_s=0.01)
    mod.apply_eq({1: {"tx_eq": 3}, 2: {"tx_eq": 4}})
    emu.settle()
    staged, active, bits = staged_block(emu), mod.active_eq_all(), adaptive_bits(emu)
    _arm_at_apply(emu, mod, kind, **kw)
    with pytest.raises(ModuleError) as err:
        mod.enable_tx_adaptive([1, 2])
    msg = str(err.value)
    assert "switching Tx input adaptive EQ on on lane(s) 1,2 failed" in msg
    assert "restored" in msg and "RESTORE FAILED" not in msg
    emu.settle()
    assert staged_block(emu) == staged and mod.active_eq_all() == active and adaptive_bits(emu) == bits
    assert not emu.link.tx_adaptive(1) and not emu.link.tx_adaptive(2)


def test_read_back_checks_the_adaptive_bit():
    """A module that ignores the staged adaptive bit is caught by the page 11h read-back and restored."""
    emu, mod = make_module()
    mod.apply_eq({5: {"tx_eq": 6}})
    staged, bits = staged_block(emu), adaptive_bits(emu)
    orig = emu._copy_to_active

    def ignore_adaptive(lanes, push):
        a = M.TX_ADAPTIVE_EN_ACTIVE.offset - 128
        before = emu._pg(0x11)[a]
        orig(lanes, push)
        emu._pg(0x11)[a] = before

    emu._copy_to_active = ignore_adaptive
    with pytest.raises(ModuleError, match="lane 5 Tx adaptive EQ off \\(wanted on\\)"):
        mod.enable_tx_adaptive([5])
    emu._copy_to_active = orig
    assert staged_block(emu) == staged and adaptive_bits(emu) == bits


@pytest.mark.parametrize("opt, on", [("", True), ("&adaptive=1", True), ("&adaptive=0", False)])
def test_emu_adaptive_option(opt, on):
    reset_emulators()
    res = f"emu:c2m-10in?seed=1&settle_ms=0&fast=1{opt}"
    emu = emulator_for(parse_resource(res))
    with open_module(res) as mod:
        assert mod.capabilities().tx_adaptive  # advertised either way
        assert mod.tx_adaptive_enabled() == {ln: on for ln in range(1, 9)}
        assert adaptive_bits(emu) == ((0xFF, 0xFF) if on else (0, 0))
        assert all(emu.link.tx_adaptive(ln) == on for ln in range(1, 9))
        if not on:
            mod.enable_tx_adaptive([1])
            assert emu.link.tx_adaptive(1) and mod.tx_adaptive_enabled()[1]
    reset_emulators()


def test_emu_adaptive_option_is_known():
    with pytest.raises(InputError, match="unknown emulator option"):
        parse_resource("emu:c2m-10in?adaptiv=0")
    assert parse_resource("emu:c2m-10in?adaptive=0").options == {"adaptive": "0"}
