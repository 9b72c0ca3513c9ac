"""A fleet of emulated 800G modules with thermal profiles, each behind its own net: bridge on
127.0.0.1 (an ephemeral port), for the watch's end-to-end tests, its benchmark and demos.

Every module is a real :class:`~eqtune.emulate.module.EmulatedModule` (CMIS register map,
VDM freeze/unfreeze, temperature monitor) on an :class:`~eqtune.emulate.link.EmulatedLink`
whose temperature follows a scripted ramp (racks swing ~10 C in 5 min at the back) and whose lanes
see the channel's extra loss at that temperature (channel model, eqtune/channel/trace.py). The link
quality is the emulator's closed-form surrogate (:func:`surrogate_quality`) at the channel's Nyquist
loss, so a fleet of 32 x 8 lanes costs no eye-engine runs. ``planted`` lanes have a marginal loss
offset and an excess temperature coefficient (a weak connector contact): they are the lanes a watch
must flag. ``stable_marginal`` lanes have the offset but no excess coefficient: margin that is low
but not moving must not be flagged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eqtune.emulate.link import (
    EmulatedLink,
    ThermalProfile,
    channel_loss_vs_temperature,
    surrogate_quality,
)

if TYPE_CHECKING:
    from eqtune.emulate.bridge import NetBridgeServer
    from eqtune.emulate.module import EmulatedModule


@dataclass
class FleetSpec:
    """``modules`` x ``lanes`` emulated modules on ``channel``. Module i's temperature holds
    ``start_c`` for ``hold_s + i * stagger_s`` then ramps by ``swing_c`` in ``ramp_s`` (profile
    seconds; ``time_scale`` profile seconds per clock second). ``planted`` / ``stable_marginal``:
    (module index, lane) pairs; ``planted_offset_db`` extra Nyquist loss on both, ``planted_tempco``
    (dB/C) only on planted lanes."""

    modules: int = 32
    lanes: int = 8
    channel: str = "c2m-10in"
    start_c: float = 25.0
    swing_c: float = 10.0
    hold_s: float = 60.0
    ramp_s: float = 300.0
    stagger_s: float = 0.0
    planted: list[tuple[int, int]] = field(default_factory=lambda: [(3, 2), (17, 5), (29, 8)])
    stable_marginal: list[tuple[int, int]] = field(default_factory=lambda: [(10, 4)])
    planted_offset_db: float = 7.0
    planted_tempco_db_per_c: float = 0.25
    time_scale: float = 1.0
    seed: int = 1
    noise: bool = True


class EmulatedFleet:
    """Started fleet: ``resources`` (net:127.0.0.1:PORT per module), ``links``, ``modules``; ``stop()``."""

    def __init__(self, spec: FleetSpec, clock: Callable[[], float] | None = None) -> None:
        from eqtune.emulate.bridge import NetBridgeServer
        from eqtune.emulate.module import EmulatedModule, VirtualClock

        self.spec = spec
        self.links: list[EmulatedLink] = []
        self.modules: list[EmulatedModule] = []
        self.servers: list[NetBridgeServer] = []
        loss_vs_t = channel_loss_vs_temperature(spec.channel)
        base_loss = _nyquist_loss(spec.channel)
        offsets = {pair: spec.planted_offset_db for pair in [*spec.planted, *spec.stable_marginal]}
        try:
            for i in range(spec.modules):
                lane_off = {lane: offsets.get((i, lane), 0.0) for lane in range(1, spec.lanes + 1)}

                def quality(direction, codes, lane, extra_loss_db=0.0, _off=lane_off):
                    return surrogate_quality(base_loss + _off[lane])(direction, codes, lane, extra_loss_db)

                quality.supports_extra_loss = True  # type: ignore[attr-defined]
                link = EmulatedLink(spec.channel, lanes=spec.lanes, seed=spec.seed + i, noise=spec.noise,
                                    quality=quality)
                prof = ThermalProfile.ramp(spec.start_c, spec.start_c + spec.swing_c,
                                           hold_s=spec.hold_s + i * spec.stagger_s, ramp_s=spec.ramp_s)
                tempco = {lane: spec.planted_tempco_db_per_c for (m, lane) in spec.planted if m == i}
                link.set_thermal(prof, clock=clock, lane_tempco_db_per_c=tempco, loss_vs_t=loss_vs_t,
                                 time_scale=spec.time_scale)
                mod = EmulatedModule(link, settle_s=0.0, clock=VirtualClock(), name=f"fleet{i}")
                srv = NetBridgeServer(mod).start()
                self.links.append(link)
                self.modules.append(mod)
                self.servers.append(srv)
        except BaseException:
            self.stop()
            raise
        self._resources = [s.resource for s in self.servers]

    @property
    def resources(self) -> list[str]:
        return list(self._resources)

    def planted_resources(self) -> set[tuple[str, int]]:
        return {(self._resources[m], lane) for m, lane in self.spec.planted}

    def stop(self) -> None:
        import threading

        threads = [threading.Thread(target=s.stop) for s in self.servers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.servers = []

    def __enter__(self) -> EmulatedFleet:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _nyquist_loss(channel: str) -> float:
    from eqtune.channel import load_channel

    ch = load_channel(channel, aggressors=False)
    return float(ch.insertion_loss_db(ch.nyquist_hz))


def start_fleet(spec: FleetSpec | None = None, clock: Callable[[], float] | None = None) -> EmulatedFleet:
    return EmulatedFleet(spec or FleetSpec(), clock)
