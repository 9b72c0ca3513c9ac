"""Rehearsal scenarios: one process emulating N modules with scripted temperatures and planted faults.

A scenario is a TOML file (``docs/watch-rehearsal.md`` describes it; shipped ones live in
``eqtune/emulate/scenarios/``)::

    [fleet]
    name = "planted-faults"
    modules = 32            # emulated modules, 1..512
    lanes = 8               # lanes per module, 1..8
    channel = "c2m-10in"    # library channel of every lane (its loss vs temperature comes from the model)
    seed = 1
    ber_min = 1e-9          # healthy lanes: pre-FEC BER at start_c, log-uniform in [ber_min, ber_max]
    ber_max = 1e-7
    modules_per_server = 8  # labels: server "<server_prefix>NN", port "osfpK"

    [temperature]           # every module: start_c, then a swing of swing_c (up ramp_s, hold hold_s,
    start_c = 30.0          # down ramp_s) every period_s, module i's first swing at first_swing_s + i stagger_s
    swing_c = 10.0
    ramp_s = 300.0
    hold_s = 300.0
    period_s = 3600.0
    first_swing_s = 3600.0
    stagger_s = 60.0

    [[fault]]               # modules and lanes are numbered from 1
    kind = "step"           # step | thermal | noisy | marginal
    module = 2
    lane = 3
    at_s = 7200.0           # step: the link flaps (loses lock, BER 0.5) for flap_s, then comes back
    flap_s = 2.0            #       with its BER x factor, and stays there
    factor = 10.0
    ber = 1e-7              # the lane's BER before the fault (step, noisy, marginal)

Fault kinds (module host input, the direction the module's VDM pre-FEC BER and eSNR observe):
``step`` (above); ``thermal`` (``excess_db_per_c`` of extra Nyquist loss per C above ``start_c``, over
the channel's own temperature coefficient: a weak connector contact or via); ``noisy`` (healthy BER,
default 4e-9, whose readings wander by ``noise_decades`` log-normal, default 0.25, drawn once per
second of scenario time); ``marginal`` (a stable BER under the warning level, default 3e-6).

Every lane runs on the emulator's closed-form link surrogate (eqtune.emulate.link.surrogate_quality)
at the channel's Nyquist loss plus a per-lane offset solved so the lane starts at its BER; the
temperature adds the channel's own extra loss (channel model, eqtune.emulate.link
channel_loss_vs_temperature) plus the planted excess. Every module is a full
:class:`~eqtune.emulate.module.EmulatedModule` (register map, VDM freeze, FEC observables, temperature
monitor), so the watch reads it through the CMIS driver as it reads hardware.

Scenario time comes from a :class:`ScenarioClock`: simulated (``advance``: nothing sleeps; the
rehearsal and its tests) or real time at ``speed`` x (``eqtune emulate --scenario``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from eqtune.config_schema import Field, Schema, fail, validate
from eqtune.emulate.link import EmulatedLink, ThermalProfile, channel_loss_vs_temperature, surrogate_quality
from eqtune.errors import ConfigError
from eqtune.serdes.knobs import TX_EQ

if TYPE_CHECKING:
    from eqtune.drivers.cmis import CmisDriver
    from eqtune.emulate.bridge import NetBridgeServer
    from eqtune.emulate.module import EmulatedModule

FAULT_KINDS = ("step", "thermal", "noisy", "marginal")
DEFAULT_FAULT_BER = {"step": 1e-7, "noisy": 4e-9, "marginal": 3e-6}
SCENARIO_DIR = Path(__file__).with_name("scenarios")
#: scenario time 0 as Unix time (the watch stores Unix timestamps): 2026-01-01T00:00:00Z
EPOCH_S = 1767225600.0
_HINT = "see docs/watch-rehearsal.md"

_FLEET = Schema((
    Field("name", "string", default="scenario", nonempty=True, pattern=r"[A-Za-z0-9_.-]{1,64}",
          hint="letters, digits, '_', '.', '-' (it names the modules)"),
    Field("modules", "integer", default=32, ge=1, le=512),
    Field("lanes", "integer", default=8, ge=1, le=8),
    Field("channel", "string", default="c2m-10in", nonempty=True),
    Field("image", "string", default="osfp8-both", nonempty=True),
    Field("seed", "integer", default=1, ge=0),
    Field("ber_min", "number", default=1e-9, gt=0.0, lt=0.01),
    Field("ber_max", "number", default=1e-7, gt=0.0, lt=0.01),
    Field("modules_per_server", "integer", default=8, ge=1, le=512),
    Field("server_prefix", "string", default="rack", pattern=r"[A-Za-z0-9_.-]{0,32}"),
), hint=_HINT)
_TEMPERATURE = Schema((
    Field("start_c", "number", unit="C", default=30.0, ge=-20.0, le=100.0),
    Field("swing_c", "number", unit="C", default=10.0, ge=-40.0, le=60.0),
    Field("ramp_s", "number", unit="s", default=300.0, gt=0.0),
    Field("hold_s", "number", unit="s", default=300.0, ge=0.0),
    Field("period_s", "number", unit="s", default=3600.0, gt=0.0),
    Field("first_swing_s", "number", unit="s", default=3600.0, ge=0.0),
    Field("stagger_s", "number", unit="s", default=60.0, ge=0.0),
), hint=_HINT)
_FAULT = Schema((
    Field("kind", "string", required=True, choices=FAULT_KINDS, fold="lower"),
    Field("module", "integer", required=True, ge=1),
    Field("lane", "integer", required=True, ge=1, le=8),
    Field("at_s", "number", unit="s", default=0.0, ge=0.0),
    Field("flap_s", "number", unit="s", default=2.0, ge=0.0, le=3600.0),
    Field("factor", "number", default=10.0, gt=0.0, le=1e6),
    Field("excess_db_per_c", "number", unit="dB/C", default=0.0, ge=-1.0, le=1.0),
    Field("ber", "number", gt=0.0, lt=0.5),
    Field("noise_decades", "number", default=0.25, ge=0.0, le=3.0),
), hint=_HINT)
SCHEMA = Schema((
    Field("fleet", "table", schema=_FLEET, default={}),
    Field("temperature", "table", schema=_TEMPERATURE, default={}),
    Field("fault", "list", default=[], items=Field("fault", "table", schema=_FAULT)),
), hint=_HINT)


@dataclass(frozen=True)
class Fault:
    """One planted fault (module and lane from 1); see the module docstring for the kinds."""

    kind: str
    module: int
    lane: int
    at_s: float = 0.0
    flap_s: float = 2.0
    factor: float = 10.0
    excess_db_per_c: float = 0.0
    ber: float | None = None
    noise_decades: float = 0.25

    @property
    def start_ber(self) -> float | None:
        return self.ber if self.ber is not None else DEFAULT_FAULT_BER.get(self.kind)

    def describe(self) -> str:
        if self.kind == "step":
            return f"x{self.factor:g} BER step after a {self.flap_s:g} s link flap at t={self.at_s:g} s"
        if self.kind == "thermal":
            return f"{self.excess_db_per_c:g} dB/C excess loss"
        if self.kind == "noisy":
            return f"noisy but healthy (BER {self.start_ber:.0e}, +/-{self.noise_decades:g} decades)"
        return f"marginal but stable (BER {self.start_ber:.0e})"


@dataclass(frozen=True)
class Scenario:
    """A validated scenario (see the module docstring); ``source`` names the file."""

    name: str = "scenario"
    modules: int = 32
    lanes: int = 8
    channel: str = "c2m-10in"
    image: str = "osfp8-both"
    seed: int = 1
    ber_min: float = 1e-9
    ber_max: float = 1e-7
    modules_per_server: int = 8
    server_prefix: str = "rack"
    start_c: float = 30.0
    swing_c: float = 10.0
    ramp_s: float = 300.0
    hold_s: float = 300.0
    period_s: float = 3600.0
    first_swing_s: float = 3600.0
    stagger_s: float = 60.0
    faults: tuple[Fault, ...] = ()
    source: str = "<scenario>"

    def profile(self, module: int) -> ThermalProfile:
        """Module ``module`` (from 1)'s temperature script: start_c, a swing every period_s."""
        d = (self.first_swing_s + (module - 1) * self.stagger_s)
        lo, hi = self.start_c, self.start_c + self.swing_c
        r, h, p = self.ramp_s, self.hold_s, self.period_s
        if d + 2 * r + h > p:  # the first swing is not inside the first period: hold until it, then repeat
            first = ((0.0, lo), (d, lo), (d + r, hi), (d + r + h, hi), (d + 2 * r + h, lo))
            return _DelayedProfile(first, p, d)
        return ThermalProfile(((0.0, lo), (d, lo), (d + r, hi), (d + r + h, hi), (d + 2 * r + h, lo), (p, lo)), p)

    def swings(self, module: int, until_s: float) -> list[tuple[float, float]]:
        """(start, end) in scenario seconds of module ``module``'s swings that start before ``until_s``."""
        d = self.first_swing_s + (module - 1) * self.stagger_s
        if d + 2 * self.ramp_s + self.hold_s <= self.period_s:
            d = d % self.period_s
        out, t = [], d
        while t < until_s:
            out.append((t, t + 2 * self.ramp_s + self.hold_s))
            t += self.period_s
        return out

    def fault_at(self, module: int, lane: int) -> Fault | None:
        return next((f for f in self.faults if f.module == module and f.lane == lane), None)


class _DelayedProfile(ThermalProfile):
    """A swing repeated every period after a first delay longer than the period (module i's first
    swing at first_swing_s + i stagger_s)."""

    def __init__(self, points: tuple[tuple[float, float], ...], period_s: float, first_s: float) -> None:
        super().__init__(points, None)
        object.__setattr__(self, "_first_s", first_s)
        object.__setattr__(self, "_every_s", period_s)

    def temperature_c(self, t_s: float) -> float:
        first, every = self._first_s, self._every_s  # type: ignore[attr-defined]
        if t_s > first + every:
            t_s = first + (t_s - first) % every
        return super().temperature_c(t_s)


def parse_scenario(doc: Mapping[str, Any], where: str) -> Scenario:
    """A scenario from a parsed TOML table; one-line :class:`ConfigError` naming the key and the fix."""
    v = validate(dict(doc), SCHEMA, where=where)
    fl, te = v["fleet"], v["temperature"]
    if fl["ber_min"] > fl["ber_max"]:
        raise fail(where, "fleet.ber_min", f"{fl['ber_min']:g} is above ber_max {fl['ber_max']:g}",
                   "give ber_min <= ber_max")
    faults: list[Fault] = []
    seen: dict[tuple[int, int], int] = {}
    for i, f in enumerate(v["fault"]):
        path = f"fault[{i}]"
        if f["module"] > fl["modules"]:
            raise fail(where, f"{path}.module", f"{f['module']} but the fleet has {fl['modules']} modules",
                       "modules are numbered from 1")
        if f["lane"] > fl["lanes"]:
            raise fail(where, f"{path}.lane", f"{f['lane']} but modules have {fl['lanes']} lanes",
                       "lanes are numbered from 1")
        key = (f["module"], f["lane"])
        if key in seen:
            raise fail(where, path, f"module {key[0]} lane {key[1]} already has fault[{seen[key]}]",
                       "plant one fault per lane")
        seen[key] = i
        if f["kind"] == "thermal" and f["excess_db_per_c"] == 0.0:
            raise fail(where, f"{path}.excess_db_per_c", "missing or 0 for a thermal fault",
                       "give the lane's excess loss in dB/C, e.g. 0.06")
        if f["kind"] == "step" and f["factor"] == 1.0:
            raise fail(where, f"{path}.factor", "1 is no step", "give the BER ratio after the step, e.g. 10")
        faults.append(Fault(**{k: f[k] for k in ("kind", "module", "lane", "at_s", "flap_s", "factor",
                                                 "excess_db_per_c", "noise_decades")}, ber=f.get("ber")))
    from eqtune.emulate.cmis_table import dump_names, load_table

    images = sorted(load_table().images) + dump_names()
    if fl["image"] not in images:
        raise fail(where, "fleet.image", f"unknown module image {fl['image']!r}", f"use one of {', '.join(images)}")
    return Scenario(**fl, **te, faults=tuple(faults), source=where)


def load_scenario(path_or_name: str | Path) -> Scenario:
    """A scenario file, or the name of a shipped one (``planted-faults``)."""
    from eqtune.readers import check_path, loads_toml

    p = Path(path_or_name)
    if not p.exists() and (SCENARIO_DIR / f"{path_or_name}.toml").exists():
        p = SCENARIO_DIR / f"{path_or_name}.toml"
    check_path(p, "scenario")
    shipped = ", ".join(sorted(x.stem for x in SCENARIO_DIR.glob("*.toml")))
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"scenario {p}: no such file; give a scenario TOML or a shipped name ({shipped})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"scenario {p}: cannot be read ({exc}); give a UTF-8 TOML file") from None
    import tomllib

    try:
        doc = loads_toml(text, str(p))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"scenario {p}: not valid TOML ({str(exc).splitlines()[0]}); {_HINT}") from None
    return parse_scenario(doc, str(p))


class ScenarioClock:
    """Scenario seconds. Simulated (``speed=None``): moves only by :meth:`advance`; else real time
    times ``speed`` from construction. ``unix()`` = :data:`EPOCH_S` + scenario seconds."""

    def __init__(self, speed: float | None = None) -> None:
        self.speed = speed
        self._t = 0.0
        self._t0 = time.monotonic()

    def __call__(self) -> float:
        if self.speed is None:
            return self._t
        return (time.monotonic() - self._t0) * self.speed

    def advance(self, seconds: float) -> None:
        if self.speed is not None:
            raise RuntimeError("a real-time scenario clock cannot be advanced")
        self._t += float(seconds)

    def unix(self) -> float:
        return EPOCH_S + self()


class ScenarioLink(EmulatedLink):
    """An emulated link whose module-input BER carries the planted faults at scenario time: a step
    (BER 0.5 during the flap, then x factor) and read noise (a log-normal factor drawn once per
    scenario second). The host-output direction is the link's own."""

    def __init__(self, *args: Any, clock: ScenarioClock, faults: Mapping[int, Fault], noise_seed: int,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scenario_clock = clock
        self.faults = dict(faults)
        self._noise_seed = noise_seed
        self._memo: dict[tuple[Any, ...], float] = {}

    def _true_ber(self, lane: int, path: str, codes: Mapping[str, int] | None) -> float:
        """The link's own BER, memoized on what it depends on (codes, adaptive EQ, extra loss to the
        0.01 dB the link's quality cache keys on): the adapted Tx EQ code is a search over codes."""
        if codes is not None:
            return super().ber(lane, path, codes)
        key = (lane, path, tuple(sorted(self.active_codes(lane).items())), self.tx_adaptive(lane),
               round(self.extra_loss_db(lane), 2))
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) > 20_000:
                self._memo.clear()
            hit = self._memo[key] = super().ber(lane, path, codes)
        return hit

    def ber(self, lane: int, path: str = "loopback", codes: Mapping[str, int] | None = None) -> float:
        b = self._true_ber(lane, path, codes)
        f = self.faults.get(lane)
        if f is None or path == "host_rx":
            return b
        t = self.scenario_clock()
        if f.kind == "step" and t >= f.at_s:
            if t < f.at_s + f.flap_s:
                return 0.5  # lost lock: every decision a coin toss
            return min(0.5, b * f.factor)
        if f.kind == "noisy" and f.noise_decades > 0:
            z = np.random.default_rng((self._noise_seed, lane, int(t))).standard_normal()
            return min(0.5, b * 10.0 ** (f.noise_decades * float(z)))
        return b


def _module_rx_ber(loss_db: float, tx_eq_max: int = 10) -> float:
    """The surrogate's module-input BER at ``loss_db`` with the best Tx input EQ code (adaptive EQ on)."""
    q = surrogate_quality(loss_db, tx_eq_max=tx_eq_max)
    return min(float(q("module_rx", {TX_EQ: c}, 1)["ber_estimate"]) for c in range(tx_eq_max + 1))


def loss_for_ber(ber: float, tx_eq_max: int = 10) -> float:
    """Nyquist loss (dB) at which the surrogate lane has module-input BER ``ber`` (bisection, 0.001 dB)."""
    lo, hi = 0.0, 40.0
    target = math.log10(ber)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if math.log10(max(_module_rx_ber(mid, tx_eq_max), 1e-300)) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass
class ScenarioFleet:
    """The emulated modules of a scenario: ``modules`` / ``links`` (index 0 = module 1), ``resources``
    (``scenario:NAME/K`` in-process; ``net:HOST:PORT`` once :meth:`serve` runs), ``labels`` per module."""

    scenario: Scenario
    clock: ScenarioClock
    modules: list[EmulatedModule] = field(default_factory=list)
    links: list[ScenarioLink] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    labels: list[dict[str, str]] = field(default_factory=list)
    lane_ber: np.ndarray | None = None
    servers: list[NetBridgeServer] = field(default_factory=list)

    def opener(self, resource: str) -> CmisDriver:
        """Open module ``resource`` in process (the CMIS driver over the emulator's register transport)."""
        from eqtune.drivers.cmis import CmisDriver
        from eqtune.drivers.transport import PagedRegisters
        from eqtune.emulate.transport import EmulatorTransport
        from eqtune.errors import TransportError

        try:
            mod = self.modules[self.resources.index(resource)]
        except ValueError:
            raise TransportError(f"{resource}: not a module of scenario {self.scenario.name}") from None
        return CmisDriver(PagedRegisters(EmulatorTransport(mod, resource)), resource=resource)

    def serve(self, host: str = "127.0.0.1", first_port: int = 0) -> list[str]:
        """Serve every module on its own register bridge (ports ``first_port``, +1, ...; 0: free ports)."""
        from eqtune.emulate.bridge import NetBridgeServer

        try:
            for i, mod in enumerate(self.modules):
                self.servers.append(NetBridgeServer(mod, host, first_port + i if first_port else 0).start())
        except BaseException:
            self.stop()
            raise
        self.resources = [s.resource for s in self.servers]
        return list(self.resources)

    def fleet_csv(self) -> str:
        """A fleet CSV (eqtune.watch.targets) of the served or in-process modules."""
        rows = ["resource,server,port,lanes,channel,serial"]
        for res, lab in zip(self.resources, self.labels, strict=True):
            rows.append(f"{res},{lab['server']},{lab['port']},,{self.scenario.channel},{lab['serial']}")
        return "\n".join(rows) + "\n"

    def stop(self) -> None:
        for s in self.servers:
            s.stop()
        self.servers = []


def build_fleet(sc: Scenario, clock: ScenarioClock | None = None) -> ScenarioFleet:
    """Create the scenario's modules (in process; :meth:`ScenarioFleet.serve` puts them on TCP)."""
    from eqtune.emulate.module import EmulatedModule, VirtualClock

    clock = clock or ScenarioClock()
    rng = np.random.default_rng(sc.seed)
    lane_ber = 10.0 ** rng.uniform(math.log10(sc.ber_min), math.log10(sc.ber_max), size=(sc.modules, sc.lanes))
    for f in sc.faults:
        if f.start_ber is not None:
            lane_ber[f.module - 1, f.lane - 1] = f.start_ber
    try:
        loss_vs_t: Callable[[float], float] = channel_loss_vs_temperature(sc.channel, ref_c=sc.start_c)
    except Exception as exc:  # noqa: BLE001 - not a library channel
        raise ConfigError(f"scenario {sc.source}: fleet.channel: {sc.channel!r} cannot be loaded ({exc}); "
                          "give a library channel (eqtune channel list)") from None
    cache: dict[float, float] = {}
    fleet = ScenarioFleet(sc, clock, lane_ber=lane_ber)
    for i in range(sc.modules):
        m = i + 1
        offs = {}
        for lane in range(1, sc.lanes + 1):
            key = round(math.log10(float(lane_ber[i, lane - 1])), 3)
            if key not in cache:
                cache[key] = loss_for_ber(10.0 ** key)
            offs[lane] = cache[key]

        def quality(direction: str, codes: Mapping[str, int], lane: int, extra_loss_db: float = 0.0,
                    _offs: dict[int, float] = offs) -> Mapping[str, Any]:
            # the surrogate takes the thermal extra loss (supports_extra_loss), beyond QualityModel's three
            return surrogate_quality(_offs[lane])(direction, codes, lane, extra_loss_db)  # type: ignore[call-arg]

        quality.supports_extra_loss = True  # type: ignore[attr-defined]
        faults = {f.lane: f for f in sc.faults if f.module == m}
        link = ScenarioLink(sc.channel, lanes=sc.lanes, seed=sc.seed * 100_003 + m, quality=quality,
                            clock=clock, faults=faults, noise_seed=sc.seed * 7919 + m)
        link.set_thermal(sc.profile(m), clock=clock, loss_vs_t=loss_vs_t, ref_c=sc.start_c,
                         lane_tempco_db_per_c={f.lane: f.excess_db_per_c for f in faults.values() if f.kind == "thermal"})
        server = (i // sc.modules_per_server) + 1
        serial = f"SCN{sc.seed % 1000:03d}{m:04d}"
        mod = EmulatedModule(link, settle_s=0.0, clock=VirtualClock(), image=sc.image, seed=sc.seed + m,
                             name=f"{sc.name}-{m}", identity={"sn": serial})
        fleet.modules.append(mod)
        fleet.links.append(link)
        fleet.resources.append(f"scenario:{sc.name}/{m}")
        fleet.labels.append({"server": f"{sc.server_prefix}{server:02d}", "port": f"osfp{i % sc.modules_per_server + 1}",
                             "serial": serial, "module": str(m)})
    return fleet
