"""Profile push against the real CMIS driver + module emulator, with injected faults."""

from __future__ import annotations

import random

import pytest

from eqtune.drivers.cmis import open_module
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.session.profile import Profile
from eqtune.session.push import APPLIED, REFUSED, RESTORED, push_profile
from eqtune.session.push_verify import verify_module

N_MODULES = 6


def random_profile(rng: random.Random, ident) -> Profile:
    lanes = rng.sample(range(1, 9), rng.randint(1, 8))
    codes = {}
    for ln in lanes:
        c = {"rx_pre": rng.randint(0, 7), "rx_post": rng.randint(0, 7), "rx_amp": rng.randint(0, 3),
             "tx_eq": rng.randint(0, 10)}
        codes[ln] = {k: v for k, v in c.items() if rng.random() < 0.8} or {"tx_eq": rng.randint(0, 10)}
    return Profile.from_identity(ident, codes)


def inject_random(emu, rng: random.Random) -> list[str]:
    kinds = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["nack", "nack", "timeout", "corrupt", "reject", "slow_apply"])
        if kind in ("nack", "timeout"):
            emu.inject(kind, count=rng.randint(1, 2), on=rng.choice(["write", "any", "read"]),
                       after=rng.randint(0, 40))
        elif kind == "corrupt":
            emu.inject(kind, count=1, on="read", after=rng.randint(0, 60))
        elif kind == "reject":
            emu.inject(kind, count=1, after=rng.randint(0, 1))
        else:
            emu.inject(kind, count=1, delay_s=30.0)  # longer than the driver's poll timeout
        kinds.append(kind)
    return kinds


@pytest.mark.slow
def test_fault_injection_200_trials():
    rng = random.Random(6)
    resources = [f"emu:c2m-10in?settle_ms=1&fast=1&name=push-fault-{i}" for i in range(N_MODULES)]
    emus = [emulator_for(parse_resource(r)) for r in resources]
    mods = [open_module(r, poll_timeout_s=2.0) for r in resources]
    ident = mods[0].identity()
    counts = {}
    for trial in range(220):
        i = rng.randrange(N_MODULES)
        emu, mod = emus[i], mods[i]
        emu.clear_faults()
        before = {ln: emu.link.active_codes(ln) for ln in range(1, 9)}
        prof = random_profile(rng, ident)
        kinds = inject_random(emu, rng)
        res = push_profile(prof, [mod]).results[0]
        emu.clear_faults()
        after = {ln: emu.link.active_codes(ln) for ln in range(1, 9)}
        counts[res.status] = counts.get(res.status, 0) + 1
        target = {ln: {**before[ln], **prof.lanes.get(ln, {})} for ln in range(1, 9)}
        ctx = (trial, kinds, res.status, res.message)
        if res.status in (APPLIED, "unchanged"):
            assert after == target, ctx
            assert {ln: mod.active_eq(ln) for ln in prof.lanes} == {ln: target[ln] for ln in prof.lanes}, ctx
        else:
            assert res.status in (RESTORED, REFUSED), ctx  # never "unknown"
            assert after == before, ctx
            assert "nothing written" in res.message or "restored" in res.message, ctx
    # the faults really bit: both outcomes occurred many times
    print("push outcomes:", counts)
    # (15, not 20: the restore point is read twice, so more of the faults armed at a
    # transaction count land in the write phase: 19 applied at this seed)
    assert counts.get(APPLIED, 0) >= 15 and counts.get(RESTORED, 0) + counts.get(REFUSED, 0) >= 20, counts
    for m in mods:
        m.close()


def test_push_many_and_verify(tmp_path):
    resources = [f"emu:c2m-10in?settle_ms=0&fast=1&name=push-many-{i}" for i in range(5)]
    # one module of another part number
    other = "emu:c2m-10in?settle_ms=0&fast=1&name=push-many-other"
    emo = emulator_for(parse_resource(other))
    emo.poke(0x00, 148, b"OTHER-PN        ")  # vendor PN field (page 00h bytes 148-163)
    # page 00h byte 222: checksum of bytes 128..221 (CMIS 5.2 Table 8-28)
    emo.poke(0x00, 222, bytes([sum(emo.peek(0x00, 128, 94)) & 0xFF]))
    m0 = open_module(resources[0])
    prof = Profile.from_identity(m0.identity(), {1: {"tx_eq": 7, "rx_post": 5}, 2: {"tx_eq": 6}})
    path = prof.save(tmp_path / "p.json")
    m0.close()
    emulator_for(parse_resource(resources[3])).inject("reject", count=1)
    rep = push_profile(str(path), resources + [other])
    st = [r.status for r in rep.results]
    assert st[:3] == [APPLIED] * 3 and st[4] == APPLIED
    assert st[3] == RESTORED
    assert st[5] == REFUSED and "PN" in rep.results[5].message
    lines = rep.summary_lines()
    assert lines[0].startswith("4 of 6 module(s) hold")
    assert "keep their previous codes" in lines[1]
    emulator_for(parse_resource(resources[3])).clear_faults()
    for r, s in zip(resources + [other], st):
        m = open_module(r)
        try:
            if s == APPLIED:
                assert verify_module(prof, m)["holds_profile"]
        finally:
            m.close()


def test_push_fixed_tx_eq_over_adaptive_and_rollback_restores_adaptive(tmp_path):
    """A profile's fixed tx_eq switches Tx input adaptive EQ off (reported); equal codes on an adaptive
    module are not "unchanged"; a failed push puts adaptive EQ back on where it ran."""
    ok_res = "emu:c2m-10in?settle_ms=0&fast=1&name=push-adapt-ok"
    bad_res = "emu:c2m-10in?settle_ms=0&fast=1&name=push-adapt-bad"
    m = open_module(ok_res)
    same = m.active_eq(1)["tx_eq"]  # the dormant fixed code: equal codes, but the module runs adaptive EQ
    prof = Profile.from_identity(m.identity(), {1: {"tx_eq": same}, 2: {"tx_eq": 6, "rx_post": 5}, 3: {"rx_pre": 2}})
    m.close()
    path = prof.save(tmp_path / "p.json")
    bad = emulator_for(parse_resource(bad_res))
    bad.inject("reject", count=3)  # the push and the driver's own retries fail
    m = open_module(bad_res)
    assert not verify_module(prof, m)["holds_profile"]  # adaptive EQ on: not the profile's fixed code
    m.close()
    rep = push_profile(str(path), [ok_res, bad_res])
    ok, failed = rep.results
    assert ok.status == APPLIED and ok.adaptive_before == [1, 2] and "adaptive EQ off on lane(s) 1,2" in ok.message
    assert failed.status == RESTORED and failed.adaptive_before == [1, 2]
    for r, on in ((ok_res, False), (bad_res, True)):
        emu = emulator_for(parse_resource(r))
        assert [emu.link.tx_adaptive(ln) for ln in (1, 2, 3)] == [on, on, True]
    bad.clear_faults()
    m = open_module(ok_res)
    assert verify_module(prof, m)["holds_profile"]
    m.close()


def test_push_rollback_after_bad_read_back_switches_adaptive_on(tmp_path, monkeypatch):
    """The module applied the profile but the push's independent read-back disagrees: the previous codes
    are written back and Tx input adaptive EQ switched on again (enable_tx_adaptive), verified."""
    import eqtune.session.push as P

    res = "emu:c2m-10in?settle_ms=0&fast=1&name=push-adapt-readback"
    emu = emulator_for(parse_resource(res))
    m = open_module(res)
    before = {ln: m.active_eq(ln) for ln in (1, 2)}
    prof = Profile.from_identity(m.identity(), {1: {"tx_eq": 9}, 2: {"tx_eq": 1}})
    real, calls = P._read_codes, []

    def flaky(module, lanes, knobs):
        calls.append(1)
        got = real(module, lanes, knobs)
        # (the first call is the read-back after the write: the restore point comes from _read_all)
        return {ln: {k: v + 1 for k, v in c.items()} for ln, c in got.items()} if len(calls) == 1 else got

    monkeypatch.setattr(P, "_read_codes", flaky)
    r = P.push_to_module(prof, m)
    assert r.status == RESTORED and "adaptive EQ back on lane(s) 1,2" in r.message
    assert r.writes == 3  # the push, the codes back, adaptive EQ back on
    assert {ln: m.active_eq(ln) for ln in (1, 2)} == before and emu.link.tx_adaptive(1) and emu.link.tx_adaptive(2)
    m.close()
