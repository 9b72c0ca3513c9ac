"""Live tuning and profile push speed against the emulators.

    python benchmarks/bench_live.py [--evals N] [--modules N] [--jobs N] [--json]

Targets:

* live-loop overhead per evaluation, excluding the dwell, <= 50 ms: everything one evaluation costs
  besides counting errors (optimizer ask/tell, capability validation, the fsync'd journal records,
  CMIS stage/apply/poll/read-back, starting and reading the checker or BERT). The emulator runs on a
  virtual clock with zero settle time (module checker) so that no hardware time is counted, and its
  eye-engine cache is filled before timing (the emulator's physics is not part of the loop).
  Also measured: the same loop through an emulated BERT over TCP with real pyvisa-py (real-time
  gate: the dwell is subtracted).
* ``profile push`` to 64 emulated modules <= 10 s (each: open, identity, capabilities, current
  codes, stage, ApplyImmediate with the emulator's default 50 ms data-path settle on a real clock,
  poll, read back twice, independent read back, close), sequentially and with ``--jobs``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Timer:
    def __init__(self) -> None:
        self.t: dict[str, float] = {}

    def wrap(self, obj, name: str, key: str) -> None:
        fn = getattr(obj, name)

        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.t[key] = self.t.get(key, 0.0) + time.perf_counter() - t0

        setattr(obj, name, wrapped)


def live_overhead(evals: int, instrument: bool) -> dict:
    from eqtune.drivers.transport import parse_resource
    from eqtune.emulate.registry import emulator_for
    from eqtune.session.journal import Journal
    from eqtune.session.live import LiveConfig, LiveTuner
    from eqtune.tune.live import LiveSource

    tag = "bert" if instrument else "chk"
    # adaptive=0: fixed Tx input EQ on all lanes, so that tx_eq is a tunable knob with a poor start
    res = f"emu:c2m-10in?seed=1&settle_ms=0&adaptive=0&name=bench-live-{tag}" + ("" if instrument else "&fast=1")
    emu_mod = emulator_for(parse_resource(res))
    link = emu_mod.link
    for t in range(11):  # warm the emulator's eye-engine cache (not part of the loop)
        link.quality(1, "module_rx", {"tx_eq": t})
    emu = None
    inst = None
    dwell = 0.001
    if instrument:
        from eqtune.drivers.definition import find_definition
        from eqtune.emulate.scpi import ScpiEmulator

        for p, q, a in itertools.product(range(8), range(8), range(4)):
            link.quality(1, "host_rx", dict(rx_pre=p, rx_post=q, rx_amp=a))
        emu = ScpiEmulator(find_definition("keysight-m8040a"), link, seed=1).start()
        inst = emu.resource
        dwell = 0.01
    timer = Timer()
    with tempfile.TemporaryDirectory() as d:
        cfg = LiveConfig(module=res, lanes=[1], instrument=inst, dwell_s=dwell, verify_dwell_s=dwell,
                         budget=evals, seed=1)
        tuner = LiveTuner.create(cfg, sessions_dir=d)
        tuner.connect()
        tuner.baseline()
        src = tuner.sources[0]
        timer.wrap(src, "apply", "write_apply_readback")
        timer.wrap(src, "read", "measure_io_incl_dwell")
        j: Journal = tuner.journal
        timer.wrap(j, "append", "journal_fsync")
        t0 = time.perf_counter()
        tuner.tune()
        total = time.perf_counter() - t0
        # one evaluation = from one fsync'd 'measure' record to the next (everything included)
        ts = [m["t"] for m in tuner.journal.records if m["type"] == "measure"]
        walls = [b - a for a, b in zip(ts, ts[1:])]
        tuner.verify()
        tuner.decide()
        tuner.finish()
    if emu is not None:
        emu.stop()
    n = len(walls)
    # the module checker runs on the emulator's virtual clock: its dwell costs no wall time
    dwell_wall = dwell if instrument else 0.0
    over = [max(0.0, w - dwell_wall) for w in walls]
    parts = {k: v / (n + 1) for k, v in timer.t.items()}
    parts["measure_io_excl_dwell"] = max(0.0, parts.pop("measure_io_incl_dwell", 0.0) - dwell_wall)
    parts["optimizer_ask_tell_and_rest"] = max(0.0, statistics.mean(walls) - dwell_wall - sum(parts.values()))
    del total
    return {
        "source": "emulated M8040A BERT (pyvisa-py, TCP)" if instrument else "module PRBS checker (CMIS 13h/14h)",
        "knobs": list(tuner.knobs), "evaluations": n, "dwell_s": dwell,
        "overhead_median_ms": statistics.median(over) * 1e3,
        "overhead_p90_ms": sorted(over)[int(0.9 * (n - 1))] * 1e3,
        "overhead_mean_ms": statistics.mean(over) * 1e3,
        "breakdown_mean_ms": {k: round(v * 1e3, 2) for k, v in parts.items()},
        "target_ms": 50.0,
        "LiveSource": LiveSource.__name__,
    }


def push_many(n: int, jobs: int) -> dict:
    from eqtune.drivers.cmis import open_module
    from eqtune.drivers.transport import parse_resource
    from eqtune.emulate.registry import emulator_for
    from eqtune.session.profile import Profile
    from eqtune.session.push import push_profile

    resources = [f"emu:c2m-10in?seed={i}&name=bench-push-{jobs}-{i}" for i in range(n)]
    for r in resources:  # the modules exist before the push (emulator construction is not timed)
        emulator_for(parse_resource(r))
    m = open_module(resources[0])
    codes = {ln: {"rx_pre": 2, "rx_post": 5, "rx_amp": 3, "tx_eq": 7} for ln in range(1, 9)}
    prof = Profile.from_identity(m.identity(), codes)
    m.close()
    with tempfile.TemporaryDirectory() as d:
        path = prof.save(Path(d) / "p.json")
        t0 = time.perf_counter()
        rep = push_profile(str(path), resources, jobs=jobs)
        wall = time.perf_counter() - t0
    per = [r.elapsed_s for r in rep.results]
    return {"modules": n, "jobs": jobs, "wall_s": wall, "per_module_median_ms": statistics.median(per) * 1e3,
            "counts": rep.counts(), "settle_ms_per_apply": 50, "target_s": 10.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evals", type=int, default=30, help="evaluations per live run (default 30)")
    ap.add_argument("--modules", type=int, default=64)
    ap.add_argument("--jobs", type=int, default=8, help="parallel pushes for the second push figure")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import eqtune.tune.optimizer  # noqa: F401 - import cost is not part of the loop

    out = {
        "live_module_checker": live_overhead(args.evals, instrument=False),
        "live_bert": live_overhead(args.evals, instrument=True),
        "push_sequential": push_many(args.modules, 1),
        "push_parallel": push_many(args.modules, args.jobs),
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for key in ("live_module_checker", "live_bert"):
        r = out[key]
        print(f"live loop, {r['source']}, knobs {','.join(r['knobs'])}: overhead per evaluation excluding "
              f"dwell median {r['overhead_median_ms']:.1f} ms, p90 {r['overhead_p90_ms']:.1f} ms "
              f"(target {r['target_ms']:.0f} ms, ratio {r['overhead_median_ms'] / r['target_ms']:.2f})")
        print("    mean breakdown (ms): " + ", ".join(f"{k} {v}" for k, v in r["breakdown_mean_ms"].items()))
    for key in ("push_sequential", "push_parallel"):
        r = out[key]
        print(f"profile push to {r['modules']} emulated modules, jobs={r['jobs']}: {r['wall_s']:.2f} s "
              f"(median {r['per_module_median_ms']:.0f} ms/module; target {r['target_s']:.0f} s, "
              f"ratio {r['wall_s'] / r['target_s']:.2f}) {r['counts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
