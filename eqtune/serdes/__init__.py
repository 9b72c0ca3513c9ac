"""SerDes equalizers (TX FFE, CTLE, DFE, module CMIS knobs as physics) and SerDes profiles."""

from eqtune.serdes.knobs import EqPoint, Knob, KnobSpace
from eqtune.serdes.profile import SerdesProfile, list_profiles, load_profile

__all__ = ["EqPoint", "Knob", "KnobSpace", "SerdesProfile", "list_profiles", "load_profile"]
