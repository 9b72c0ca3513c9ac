"""SerDes equalizers (TX FFE, CTLE, DFE, module CMIS knobs as physics) and SerDes profiles.

``eqtune.serdes.knobs`` (the knob and metric registry) is light; the profile loader is imported
lazily so that reading knob names does not load numpy.
"""

from typing import TYPE_CHECKING

from eqtune.serdes.knobs import EqPoint, Knob, KnobSpace

if TYPE_CHECKING:  # the type checker sees the real signatures; at run time they load on first use
    from eqtune.serdes.profile import SerdesProfile, list_profiles, load_profile

__all__ = ["EqPoint", "Knob", "KnobSpace", "SerdesProfile", "list_profiles", "load_profile"]


def __getattr__(name: str) -> object:
    if name in ("SerdesProfile", "list_profiles", "load_profile"):
        from eqtune.serdes import profile

        return getattr(profile, name)
    raise AttributeError(f"module 'eqtune.serdes' has no attribute {name!r}")
