"""Test helpers for the module emulator."""

from __future__ import annotations

from eqtune.drivers import cmis_map as M
from eqtune.drivers.emulator_module import emulator_for
from eqtune.drivers.transport import parse_resource


def fixed_tx_eq(resource: str):
    """Make the ``emu:`` module of ``resource`` run fixed Tx input EQ (adaptive off), as a module
    shipped without adaptive EQ enabled would; returns the emulator."""
    emu = emulator_for(parse_resource(resource))
    emu.poke(0x10, M.TX_ADAPTIVE_EN_SCS0.offset, b"\x00")
    emu.poke(0x11, M.TX_ADAPTIVE_EN_ACTIVE.offset, b"\x00")
    for lane in range(1, emu.lanes + 1):
        emu.link.set_tx_adaptive(lane, False)
    return emu
