"""SerDes equalizers (TX FFE, CTLE, DFE, module CMIS knobs as physics) and SerDes profiles.

``eqtune.serdes.knobs`` (the knob and metric registry) is light; the profile loader is imported
lazily so that reading knob names does not load numpy.
"""

from typing import Any

from eqtune.serdes.knobs import EqPoint, Knob, KnobSpace

__all__ = ["EqPoint", "Knob", "KnobSpace", "SerdesProfile", "list_profiles", "load_profile"]


def __getattr__(name: str) -> Any:
    if name in ("SerdesProfile", "list_profiles", "load_profile"):
        from eqtune.serdes import profile

        return getattr(profile, name)
    raise AttributeError(f"module 'eqtune.serdes' has no attribute {name!r}")
