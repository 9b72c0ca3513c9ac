"""Pushes through a register interface that NACKs, times out, corrupts reads, rejects the
Apply and resets the module mid-write. The module ends with its old state or the new verified codes,
and the reported status is true (checked against the emulator itself, not through the driver)."""

from __future__ import annotations

import random

from eqtune.drivers.cmis import CmisModule
from eqtune.drivers.transport import PagedRegisters
from eqtune.emulate.faults import KINDS, FaultyTransport
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.emulate.transport import EmulatorTransport
from eqtune.session.profile import Profile
from eqtune.session.push import APPLIED, REFUSED, RESTORED, UNCHANGED, push_to_module


def _module(name: str, adaptive: bool, seed: int):
    emu = EmulatedModule(channel="c2m-10in", settle_s=0.001, clock=VirtualClock(), seed=seed, noise=False,
                         tx_adaptive_on=adaptive, name=name)
    w = FaultyTransport(EmulatorTransport(emu, f"emu:{name}"), emulator=emu)
    return emu, w, CmisModule(PagedRegisters(w), resource=f"emu:{name}", poll_timeout_s=1.0)


def _state(emu):
    return {ln: (emu.link.active_codes(ln), emu.link.tx_adaptive(ln)) for ln in range(1, 9)}


def _expected(before, codes):
    out = {}
    for ln, (c, ad) in before.items():
        new = codes.get(ln) or {}
        out[ln] = ({**c, **new}, False if "tx_eq" in new else ad)
    return out


def test_reset_mid_write_restores_lanes_the_profile_does_not_set():
    emu, w, mod = _module("harden-reset", adaptive=False, seed=3)
    prof0 = Profile.from_identity(mod.identity(), {ln: {"rx_post": 6, "tx_eq": 9} for ln in range(1, 9)})
    assert push_to_module(prof0, mod).status == APPLIED  # every lane now differs from power-up
    before = _state(emu)
    prof = Profile.from_identity(mod.identity(), {2: {"rx_pre": 5}})
    w.arm("reset", w.count)  # deferred past reads and page selects: lands on the push's first register write
    res = push_to_module(prof, mod)
    w._armed.clear()
    assert w.log.injected.get("reset") == 1
    assert res.status == RESTORED, res.message
    assert _state(emu) == before  # lanes 1, 3-8 (not in the profile) are back too


def test_random_faults_leave_no_module_mixed():
    rng = random.Random(1818)
    mods = [_module(f"harden-faults-{i}", adaptive=i % 2 == 0, seed=i) for i in range(4)]
    ident = mods[0][2].identity()
    statuses: dict[str, int] = {}
    for k in range(80):
        emu, w, mod = mods[k % 4]
        codes = {ln: {kk: rng.randint(0, hi) for kk, hi in (("rx_pre", 7), ("rx_post", 7), ("tx_eq", 10))
                      if rng.random() < 0.7} or {"rx_amp": rng.randint(0, 3)}
                 for ln in rng.sample(range(1, 9), rng.randint(1, 8))}
        prof = Profile.from_identity(ident, codes)
        before = _state(emu)
        for _ in range(rng.randint(1, 3)):
            w.arm(rng.choice(KINDS), w.count + rng.randrange(250))
        res = push_to_module(prof, mod, restore_time_s=2.0)
        w._armed.clear()
        w._booting = 0
        after = _state(emu)
        statuses[res.status] = statuses.get(res.status, 0) + 1
        ctx = (k, res.status, res.message)
        assert after in (before, _expected(before, prof.codes())), ctx
        if res.status in (APPLIED, UNCHANGED):
            assert after == _expected(before, prof.codes()), ctx
        else:
            assert res.status in (RESTORED, REFUSED) and after == before, ctx
    assert statuses.get(APPLIED, 0) >= 10 and statuses.get(RESTORED, 0) >= 10, statuses
