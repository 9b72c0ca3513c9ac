"""``emu:`` resources: the in-process CMIS module emulator seen through a register transport.

Registered in :data:`eqtune.drivers.schemes.SCHEMES` (``emu`` -> :func:`parse_emu_resource`,
:func:`open_emu_transport`), so ``open_module("emu:c2m-10in")`` reaches this module without the
hardware room importing the emulators. Resource syntax::

    emu:CHANNEL[?seed=&settle_ms=&fast=1&lanes=&stepped=1&noise=0&adaptive=0&adaptive_cap=&name=&image=&autocomm=]

One emulated module per distinct resource string per process (:func:`eqtune.emulate.registry.emulator_for`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from eqtune.drivers.protocols import TwoWireTarget
from eqtune.drivers.transport import ResourceSpec, Transport, _retry_reads
from eqtune.emulate.bus import EmuNack, EmuTimeout
from eqtune.errors import ChannelError, InputError, TransportError

_R = TypeVar("_R")
EMU_OPTIONS = frozenset({"seed", "settle_ms", "fast", "lanes", "stepped", "noise", "adaptive", "adaptive_cap",
                         "name", "image", "autocomm"})


class EmulatorTransport(Transport):
    """Talks to an in-process :class:`~eqtune.emulate.module.EmulatedModule`; its injected
    faults (NACK, timeout) become TransportError here, as a real adapter would report them."""

    def __init__(self, module: TwoWireTarget, resource: str = "emu", *, retries: int = 2) -> None:
        self.module = module
        self.resource = resource
        self.retries = retries

    def _call(self, what: str, func: Callable[[], _R]) -> _R:
        try:
            return func()
        except EmuNack as exc:
            raise TransportError(f"{self.resource}: {what}: the module did not acknowledge (NACK); "
                                 "check the module is seated and powered") from exc
        except EmuTimeout as exc:
            raise TransportError(f"{self.resource}: {what}: bus timeout (no answer); "
                                 "check the module and adapter, then retry") from exc

    def read(self, offset: int, n: int) -> bytes:
        self._check_range(self.resource, offset, n)
        return _retry_reads(lambda: self._call(f"read at {offset}", lambda: self.module.read(offset, n)),
                            self.retries, self.resource, "read", self.sleep)

    def write(self, offset: int, data: bytes) -> None:
        self._check_range(self.resource, offset, len(data))
        self._call(f"write at {offset}", lambda: self.module.write(offset, bytes(data)))

    def sleep(self, seconds: float) -> None:
        self.module.clock.sleep(seconds)

    def monotonic(self) -> float:
        return self.module.clock()

    @property
    def wait_scale(self) -> float:
        """Factor for the host waits of :class:`eqtune.drivers.cmis_policy.CmisTiming` (the emulator's)."""
        return float(getattr(self.module, "host_wait_scale", 1.0))


def parse_emu_resource(resource: str, rest: str) -> ResourceSpec:
    """``emu:`` + ``rest`` -> ResourceSpec("emu", CHANNEL, options=...); InputError naming the fix."""
    chan, _, query = rest.partition("?")
    if not chan:
        raise InputError(f"{resource!r}: missing channel name; write it like emu:c2m-10in")
    opts: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise InputError(f"{resource!r}: option {item!r} must look like key=value")
        opts[k] = v
    unknown = set(opts) - EMU_OPTIONS
    if unknown:
        raise InputError(f"{resource!r}: unknown emulator option(s) {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(EMU_OPTIONS))}")
    _check_emu_options(resource, chan, opts)
    return ResourceSpec("emu", chan, options=opts)


def open_emu_transport(spec: ResourceSpec, resource: str, **kwargs: Any) -> EmulatorTransport:
    """The transport of a parsed ``emu:`` resource (the process-wide emulator of that string)."""
    from eqtune.emulate.registry import emulator_for

    return EmulatorTransport(emulator_for(spec), resource, **kwargs)


def _check_emu_options(resource: str, chan: str, opts: dict[str, str]) -> None:
    """Values of ``emu:`` options (before the emulator is built): a negative or NaN settle time, a lane
    count outside 1..8 or an unknown channel is an error, not a silently odd emulator."""
    def bad(what: str) -> InputError:
        return InputError(f"{resource!r}: bad emulator option ({what}); e.g. emu:c2m-10in?seed=1&settle_ms=0")

    if "seed" in opts and not opts["seed"].lstrip("-").isdigit():
        raise bad(f"seed {opts['seed']!r} is not a whole number")
    if "settle_ms" in opts:
        try:
            ms = float(opts["settle_ms"])
        except ValueError:
            raise bad(f"settle_ms {opts['settle_ms']!r} is not a number") from None
        if not math.isfinite(ms) or not 0.0 <= ms <= 60_000.0:
            raise bad(f"settle_ms {opts['settle_ms']!r} must be 0..60000 ms")
    if "lanes" in opts and not (opts["lanes"].isdigit() and 1 <= int(opts["lanes"]) <= 8):
        raise bad(f"lanes {opts['lanes']!r} must be 1..8")
    flags = {"1", "0", "true", "false", "yes", "no", "on", "off"}
    for k in ("fast", "stepped", "noise", "adaptive", "adaptive_cap"):
        if k in opts and opts[k].lower() not in flags:
            raise bad(f"{k}={opts[k]!r} must be 1 or 0")
    from eqtune.channel.library import resolve

    try:
        resolve(chan)
    except ChannelError as exc:
        raise InputError(f"{resource!r}: {exc}") from None
