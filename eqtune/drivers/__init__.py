"""Device access: register transports, the CMIS module driver and SCPI instruments (hardware only;
the emulators are :mod:`eqtune.emulate`).

``eqtune.drivers.CmisModule`` is the contract (:mod:`eqtune.drivers.protocols`); the driver class is
``CmisDriver`` (``eqtune.drivers.cmis.CmisModule`` is its old name, kept for old imports).

Light on import: names are re-exported lazily (``from eqtune.drivers import open_module`` imports
:mod:`eqtune.drivers.cmis` on first use only).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "open_module": "eqtune.drivers.cmis",
    "CmisDriver": "eqtune.drivers.cmis",
    # the contracts (typing.Protocol): what open_module / open_instrument return satisfies them
    "CmisModule": "eqtune.drivers.protocols",
    "LabInstrument": "eqtune.drivers.protocols",
    "Bert": "eqtune.drivers.protocols",
    "Scope": "eqtune.drivers.protocols",
    "ModuleIdentity": "eqtune.drivers.cmis_types",
    "EqCapabilities": "eqtune.drivers.cmis_types",
    "VdmLane": "eqtune.drivers.cmis_types",
    "BerCount": "eqtune.drivers.measurement",
    "open_transport": "eqtune.drivers.transport",
    "parse_resource": "eqtune.drivers.transport",
    "PagedRegisters": "eqtune.drivers.transport",
    "open_instrument": "eqtune.drivers.instrument",
    "Instrument": "eqtune.drivers.instrument",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'eqtune.drivers' has no attribute {name!r}")
    return getattr(importlib.import_module(mod), name)
