"""Emulators that stand in for the hardware: the link model, the CMIS module, SCPI instruments, the
TCP register bridge server and fault injection at the register interface.

They speak the real protocols (CMIS registers behind the transport interface, SCPI over TCP, the
register bridge), so the drivers in :mod:`eqtune.drivers` are tested without hardware. ``emu:``
resources reach :mod:`eqtune.emulate.transport` through the scheme registry
:mod:`eqtune.drivers.schemes`; nothing in ``drivers`` imports this package.

Light on import: names are re-exported lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "EmulatedLink": "eqtune.emulate.link",
    "EmulatedModule": "eqtune.emulate.module",
    "emulator_for": "eqtune.emulate.registry",
    "reset_emulators": "eqtune.emulate.registry",
    "EmulatorTransport": "eqtune.emulate.transport",
    "NetBridgeServer": "eqtune.emulate.bridge",
    "ScpiEmulator": "eqtune.emulate.scpi",
    "FaultyTransport": "eqtune.emulate.faults",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'eqtune.emulate' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)
