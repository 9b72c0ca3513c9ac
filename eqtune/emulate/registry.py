"""The ``emu:CHANNEL`` resources: one emulated CMIS module per resource string per process (hardware
persists between opens), built from the resource's options (``emulator_for``); what the front ends say
when such a module's link is not the eye engine's model (``emulated_link_warning``); and ``reset_emulators``
for tests."""

from __future__ import annotations

import threading

from eqtune.emulate.bus import VirtualClock
from eqtune.emulate.module import EmulatedModule
from eqtune.errors import InputError

_EMULATORS: dict[str, EmulatedModule] = {}
_REG_LOCK = threading.Lock()


def _opt_bool(v: str) -> bool:
    return v.lower() in ("1", "true", "yes", "on")


def _opt_rev(v: str) -> int:
    """``cmis=5.3`` -> 0x53 (lower page byte 1: major bits 7-4, minor 3-0)."""
    major, _, minor = v.partition(".")
    if not major.isdigit() or not (minor or "0").isdigit() or not 1 <= int(major) <= 15 or int(minor or 0) > 15:
        raise ValueError(f"cmis={v!r} is not a CMIS revision such as 4.0, 5.2 or 5.3")
    return int(major) << 4 | int(minor or 0)


def _opt_timing(v: str) -> bool:
    """``timing=real`` -> True (host waits as on hardware), ``timing=scaled`` -> False."""
    if v not in ("real", "scaled"):
        raise ValueError(f"timing={v!r}: use timing=real (waits as on hardware) or timing=scaled")
    return v == "real"


def emulator_for(spec) -> EmulatedModule:
    """The process-wide emulated module for an ``emu:`` resource spec (created on first use).

    Options: ``seed``, ``settle_ms`` (default 50), ``fast=1`` (virtual clock), ``image`` (an advertised
    module profile of ``cmis_table.toml``: osfp8-both (default), qsfpdd8-stepped, qsfpdd8-hot,
    qsfp4-regular, osfp8-nodiag), ``lanes`` (default from the image), ``stepped=1`` (SteppedConfigOnly; with no
    ``autocomm`` it advertises AutoCommissioning 01b, regular reconfiguration), ``autocomm=0..3``,
    ``noise=0`` (exact error counts), ``adaptive=0|1`` (Tx input adaptive EQ at power-up; default 1 as
    shipped, 0 = fixed Tx input EQ on all lanes), ``adaptive_cap=0`` (a module that does not advertise
    Tx input adaptive EQ at all), ``cmis=5.3`` (the CMIS revision, lower page byte 1; AutoCommissioning
    is read from 5.3 on), ``config_ms`` (how long ConfigStatus shows ConfigInProgress after a trigger;
    default settle_ms), ``timing=real`` (the driver waits as on real hardware, 500 ms after a trigger
    and between polls; default ``scaled``: waits shrink with settle_ms), ``name`` (distinguishes otherwise equal strings)."""
    key = spec.target + "?" + "&".join(f"{k}={v}" for k, v in sorted(spec.options.items()))
    with _REG_LOCK:
        mod = _EMULATORS.get(key)
        if mod is None:
            o = spec.options
            try:
                stepped = _opt_bool(o["stepped"]) if "stepped" in o else None
                autocomm = int(o["autocomm"]) if "autocomm" in o else (1 if stepped else None)
                kwargs = {
                    "seed": int(o["seed"]) if "seed" in o else None,
                    "settle_s": float(o.get("settle_ms", 50)) / 1000.0,
                    "lanes": int(o["lanes"]) if "lanes" in o else None,
                    "image": o.get("image"),
                    "stepped_config_only": stepped,
                    "auto_commissioning": autocomm,
                    "tx_adaptive_on": _opt_bool(o.get("adaptive", "1")),
                    "tx_adaptive": _opt_bool(o.get("adaptive_cap", "1")),
                    "noise": _opt_bool(o.get("noise", "1")),
                    "clock": VirtualClock() if _opt_bool(o.get("fast", "0")) else None,
                    "name": o.get("name", f"emu:{spec.target}"),
                    "cmis_rev": _opt_rev(o["cmis"]) if "cmis" in o else None,
                    "config_s": float(o["config_ms"]) / 1000.0 if "config_ms" in o else None,
                    "real_timing": _opt_timing(o.get("timing", "scaled")),
                }
            except ValueError as exc:
                raise InputError(f"emu:{spec.target}: bad emulator option ({exc}); e.g. emu:c2m-10in?seed=1&settle_ms=0") from None
            try:
                mod = EmulatedModule(channel=spec.target, **kwargs)
            except (ValueError, InputError) as exc:  # InputError: a channel that does not load
                raise InputError(f"emu:{spec.target}: {exc}") from None
            _EMULATORS[key] = mod
        return mod


def emulated_link_warning(resource: str) -> str | None:
    """One line when an ``emu:`` module's link is not the eye engine's model of its channel: the emulator
    fell back to its closed-form surrogate because the eye engine does not import (a broken install), so
    the session would tune a bowl, not the channel. None for a real module or an eye-engine link. A
    channel that does not load never gets here: the emulator refuses it (eqtune.emulate.link)."""
    if not str(resource).startswith("emu:"):
        return None
    from eqtune.drivers.transport import parse_resource
    from eqtune.errors import EqtuneError

    try:
        link = emulator_for(parse_resource(resource)).link
    except EqtuneError:
        return None  # said when the session opens the module
    model = str(link.quality_source)
    if model == "eye-engine":
        return None
    return (f"warning: the emulated link is not the eye engine's model of {link.channel_name} but the "
            f"closed-form {model}; its figures are not the channel's (reinstall eqtune with its "
            "dependencies to get them)")


def reset_emulators() -> None:
    """Forget every ``emu:`` module of this process (tests)."""
    with _REG_LOCK:
        _EMULATORS.clear()
