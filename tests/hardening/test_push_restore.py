"""A failed push restores every field it changed (codes and Tx input adaptive EQ),
retrying with backoff until a time limit, and reports exactly what is left when it cannot."""

from __future__ import annotations

from eqtune.drivers.cmis import open_module
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.errors import TransportError
from eqtune.session.profile import Profile
from eqtune.session.push import RESTORED, UNKNOWN, push_to_module


def _setup(name: str):
    res = f"emu:c2m-10in?settle_ms=0&fast=1&name={name}"
    emu = emulator_for(parse_resource(res))
    mod = open_module(res)
    prof = Profile.from_identity(mod.identity(), {1: {"tx_eq": 7, "rx_post": 5}, 2: {"rx_pre": 2}})
    before = {ln: emu.link.active_codes(ln) for ln in (1, 2)}
    assert emu.link.tx_adaptive(1)
    real_apply = mod.apply_eq

    def apply_then_fail(codes, **kw):  # the push's own write lands, then the bus fails
        real_apply(codes, **kw)
        if codes == prof.codes():
            raise TransportError(f"{res}: read at 0: NACK (injected)")

    mod.apply_eq = apply_then_fail
    return emu, mod, prof, before


def test_adaptive_restored_after_repeated_failures(monkeypatch):
    """The restore of the codes fails 3 times and re-enabling adaptive EQ fails 4 times: the old
    3-attempt restore left adaptive EQ off; now both fields come back."""
    emu, mod, prof, before = _setup("harden-push-retry")
    real_apply, real_enable = mod.apply_eq, mod.enable_tx_adaptive
    fails = {"apply": 3, "enable": 4}

    def flaky_apply(codes, **kw):
        if codes != prof.codes() and fails["apply"] > 0:
            fails["apply"] -= 1
            raise TransportError("write: NACK (injected)")
        return real_apply(codes, **kw)

    def flaky_enable(lanes, **kw):
        if fails["enable"] > 0:
            fails["enable"] -= 1
            raise TransportError("write: NACK (injected)")
        return real_enable(lanes, **kw)

    mod.apply_eq, mod.enable_tx_adaptive = flaky_apply, flaky_enable
    res = push_to_module(prof, mod, restore_time_s=5.0)
    assert res.status == RESTORED, res.message
    assert {ln: emu.link.active_codes(ln) for ln in (1, 2)} == before
    assert emu.link.tx_adaptive(1) and "adaptive EQ back on lane(s) 1" in res.message
    assert fails == {"apply": 0, "enable": 0}


def test_what_is_left_is_reported_precisely():
    emu, mod, prof, before = _setup("harden-push-left")

    def never(lanes, **kw):
        raise TransportError("write: NACK (injected, permanent)")

    mod.enable_tx_adaptive = never
    res = push_to_module(prof, mod, restore_time_s=0.3)
    assert res.status == UNKNOWN
    # the codes went back; adaptive EQ did not: the message says exactly that
    assert {ln: emu.link.active_codes(ln) for ln in (1, 2)} == before
    assert "Tx input adaptive EQ still off on lane(s) 1 (was on)" in res.message, res.message
    assert "lane 1 tx_eq" not in res.message and "permanent" in res.message
