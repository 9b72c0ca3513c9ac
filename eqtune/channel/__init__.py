"""Channel model: Touchstone and parametric channels, cascaded, with crosstalk, on a uniform grid.

Public API (imported lazily so ``import eqtune.channel`` stays light)::

    load_channel(name_or_path, *, temperature_c=None, aggressors=True, port_order=None) -> Channel
    channel_from_definition(doc, *, base_dir=None, name=None, temperature_c=None, aggressors=True) -> Channel
    list_channels() -> list[str]
    pulse_response(channel, samples_per_ui=32) -> PulseResponse
    summary(channel) -> dict
    Channel, Aggressor
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eqtune.channel.model import Aggressor, Channel

if TYPE_CHECKING:  # the type checker sees the real signatures; at run time they load on first use
    from eqtune.channel.library import channel_from_definition, list_channels, load_channel
    from eqtune.channel.metrics import pulse_response, summary

__all__ = ["Aggressor", "Channel", "channel_from_definition", "list_channels", "load_channel", "pulse_response",
           "summary"]

_LAZY = {
    "load_channel": "eqtune.channel.library",
    "channel_from_definition": "eqtune.channel.library",
    "list_channels": "eqtune.channel.library",
    "pulse_response": "eqtune.channel.metrics",
    "summary": "eqtune.channel.metrics",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'eqtune.channel' has no attribute {name!r}")
