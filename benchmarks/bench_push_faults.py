"""Fault injection: push profiles to 8 emulated CMIS modules many times while the bus and the modules fail.

    python benchmarks/bench_push_faults.py [--pushes 1000] [--seed 18] [--json out.json]

Every push goes through the real driver stack (CmisModule -> PagedRegisters -> transport) to an
in-process emulated module; between the two sits :class:`eqtune.emulate.faults.FaultyTransport`, armed
with 1-3 faults per push at random transactions within the push (NACK, timeout, corrupt read-back,
reject of the Apply, reset of the module in the middle of a write). Half of the modules power up with
Tx input adaptive EQ on (as shipped), half with fixed Tx input EQ; profiles set random subsets of
rx_pre/rx_post/rx_amp/tx_eq on random lanes.

After each push the unfired faults are disarmed and the module's true state is read from the emulator
itself (the link's active codes and Tx adaptive EQ state, not through the driver):

* mixed: the module holds neither its codes from before the push nor the profile's codes (with
  adaptive EQ off on lanes given a fixed tx_eq, on where it ran before otherwise) - must be 0;
* wrong status: ``applied``/``unchanged`` while the module does not hold the profile, or
  ``restored``/``refused`` while it does not hold its previous state - must be 0;
* unknown: pushes reported ``unknown`` (the restore could not be verified within its time limit).

The same fault sequence is replayed with the earlier restore (3 attempts, no backoff,
adaptive EQ re-enabled only after a successful code write) as the baseline of this run.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("nack", "timeout", "corrupt", "reject", "reset")


def _old_restore(module, res, knobs, time_limit_s=0.0, sleep=None):
    """The earlier restore (session/push.py ``_restore(attempts=3)``), for the baseline."""
    from eqtune.session.push import RESTORED, UNKNOWN, _adaptive_holds, _read_codes

    now = None
    back = res.adaptive_before
    for _ in range(3):
        try:
            now = _read_codes(module, res.previous, knobs)
            if now == res.previous and _adaptive_holds(module, back):
                return RESTORED, now, ""
            if now != res.previous:
                res.writes += 1
                module.apply_eq(res.previous)
            if back and not _adaptive_holds(module, back):
                res.writes += 1
                module.enable_tx_adaptive(list(back))
            now = _read_codes(module, res.previous, knobs)
            if now == res.previous and _adaptive_holds(module, back):
                return RESTORED, now, ""
        except Exception:  # noqa: BLE001
            now = None
    return UNKNOWN, now, "read-back differs"


def _state(emu) -> dict[int, tuple[tuple[tuple[str, int], ...], bool]]:
    return {ln: (tuple(sorted(emu.link.active_codes(ln).items())), bool(emu.link.tx_adaptive(ln)))
            for ln in range(1, 9)}


def _expected(before, profile_codes) -> dict:
    out = {}
    for ln, (codes, adaptive) in before.items():
        new = profile_codes.get(ln)
        if not new:
            out[ln] = (codes, adaptive)
            continue
        merged = dict(codes)
        merged.update(new)
        out[ln] = (tuple(sorted(merged.items())), False if "tx_eq" in new else adaptive)
    return out


def run(pushes: int, seed: int, restore: str) -> dict:
    from eqtune.drivers.cmis import CmisModule
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.faults import FaultyTransport
    from eqtune.emulate.module import EmulatedModule, VirtualClock
    from eqtune.emulate.transport import EmulatorTransport
    from eqtune.session import push as P
    from eqtune.session.profile import Profile

    rng = random.Random(seed)
    emus, wraps, mods = [], [], []
    for i in range(8):
        emu = EmulatedModule(channel="c2m-10in", settle_s=0.001, clock=VirtualClock(), seed=seed + i,
                             noise=False, tx_adaptive_on=i % 2 == 0, name=f"bench-fault-{i}")
        w = FaultyTransport(EmulatorTransport(emu, f"emu:bench-fault-{i}"), emulator=emu)
        emus.append(emu)
        wraps.append(w)
        mods.append(CmisModule(PagedRegisters(w), resource=f"emu:bench-fault-{i}", poll_timeout_s=1.0))
    ident = mods[0].identity()
    saved = P._restore
    if restore == "old":
        P._restore = _old_restore
    counts: dict[str, int] = {}
    injected: dict[str, int] = {}
    mixed, wrong, unknown = [], [], []
    t0 = time.perf_counter()
    try:
        for k in range(pushes):
            i = k % 8
            emu, w, mod = emus[i], wraps[i], mods[i]
            lanes = rng.sample(range(1, 9), rng.randint(1, 8))
            codes = {}
            for ln in lanes:
                c = {"rx_pre": rng.randint(0, 7), "rx_post": rng.randint(0, 7), "rx_amp": rng.randint(0, 3),
                     "tx_eq": rng.randint(0, 10)}
                codes[ln] = {kk: v for kk, v in c.items() if rng.random() < 0.7} or {"rx_post": rng.randint(0, 7)}
            prof = Profile.from_identity(ident, codes)
            before = _state(emu)
            for _ in range(rng.randint(1, 3)):  # a push is ~60-300 transactions
                w.arm(rng.choice(KINDS), w.count + rng.randrange(0, 250))
            res = P.push_to_module(prof, mod, restore_time_s=5.0)
            w._armed.clear()
            w._booting = 0
            after = _state(emu)
            want_new = _expected(before, prof.codes())
            counts[res.status] = counts.get(res.status, 0) + 1
            if after not in (before, want_new):
                mixed.append((k, res.status, res.message[:160]))
            ok = {P.APPLIED: after == want_new, P.UNCHANGED: after == want_new,
                  P.RESTORED: after == before, P.REFUSED: after == before}.get(res.status, True)
            if not ok:
                wrong.append((k, res.status, res.message[:160]))
            if res.status == P.UNKNOWN:
                unknown.append((k, res.message[:200]))
    finally:
        P._restore = saved
    for w in wraps:
        for kind, n in w.log.injected.items():
            injected[kind] = injected.get(kind, 0) + n
    return {"restore": restore, "pushes": pushes, "statuses": counts, "faults_fired": injected,
            "mixed": len(mixed), "wrong_status": len(wrong), "unknown": len(unknown),
            "examples": {"mixed": mixed[:3], "wrong": wrong[:3], "unknown": unknown[:3]},
            "wall_s": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pushes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                    help="also replay the faults against the earlier restore (3 attempts, no backoff)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    out = {"new": run(a.pushes, a.seed, "new")}
    if a.baseline:
        out["old"] = run(a.pushes, a.seed, "old")
    for name, r in out.items():
        print(f"{name:>3} restore: {r['pushes']} pushes, {r['wall_s']} s; statuses {r['statuses']}; "
              f"faults fired {r['faults_fired']}; mixed {r['mixed']}, wrong status {r['wrong_status']}, "
              f"unknown {r['unknown']}")
        for kind, ex in r["examples"].items():
            for e in ex:
                print(f"    {kind}: {e}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=2))
    return 0 if out["new"]["mixed"] == 0 and out["new"]["wrong_status"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
