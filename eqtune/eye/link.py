"""Evaluate every link direction an EQ point touches and report the worst one."""

from __future__ import annotations

from collections.abc import Mapping

from eqtune.channel.library import load_channel
from eqtune.channel.model import Channel
from eqtune.errors import EqRangeError
from eqtune.eye.engine import DERIVED_KEYS, KNOB_DIRECTION, KNOWN_KNOBS, EyeEngine, check_ber
from eqtune.eye.result import EyeResult, LinkResult
from eqtune.serdes.knobs import HOST_RX, Direction
from eqtune.serdes.profile import SerdesProfile

_ENGINES: dict[tuple[int, str, str, Direction], EyeEngine] = {}
_CHANNELS: dict[str, Channel] = {}
_MAX_CACHED = 32


def _engine(channel: Channel, profile: str | SerdesProfile | None, direction: Direction, ber: float) -> EyeEngine:
    key = (id(channel), channel.name, str(profile), direction)
    eng = _ENGINES.get(key)
    if eng is None or eng.channel is not channel:
        if len(_ENGINES) >= _MAX_CACHED:
            _ENGINES.pop(next(iter(_ENGINES)))
        eng = EyeEngine(channel, profile, direction=direction, ber=ber)
        _ENGINES[key] = eng
    return eng


def evaluate_link(channel: Channel | str, point: Mapping[str, float], ber: float = 1e-6, *,
                  profile: str | SerdesProfile | None = None) -> LinkResult:
    """Evaluate ``point`` in every direction its knobs act in (module Rx-output codes and host CTLE:
    ``host_rx``; host TX FFE and module ``tx_eq``: ``module_rx``; an empty point: ``host_rx``) and
    report the worst margin. Engines are cached per (channel object, profile, direction)."""
    ber = check_ber(ber)
    if isinstance(channel, str):
        channel = _CHANNELS.get(channel) or _CHANNELS.setdefault(channel, load_channel(channel))
    unknown = [k for k in point if k not in KNOWN_KNOBS and k not in DERIVED_KEYS]
    if unknown:
        raise EqRangeError(f"unknown knob(s) {', '.join(unknown)}: use {', '.join(KNOWN_KNOBS)}")
    directions: list[Direction] = sorted({KNOB_DIRECTION[k] for k in point if k in KNOB_DIRECTION}) or [HOST_RX]
    results: dict[str, EyeResult] = {d: _engine(channel, profile, d, ber).evaluate(point, ber=ber) for d in directions}
    worst = min(results, key=lambda d: results[d].eye_height_min_mv)
    return LinkResult(results=results, worst_direction=worst)
