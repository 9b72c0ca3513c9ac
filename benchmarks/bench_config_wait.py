"""Cost of `module set` when the module holds ConfigInProgress 0.1-5 s, at real-host timing.

    python benchmarks/bench_config_wait.py [--real]

The driver waits as real hosts do (500 ms after the trigger, 500 ms ConfigStatus / DPState polls;
eqtune.drivers.cmis_policy.CmisTiming) while the emulated module holds ConfigInProgress for
``hold`` s (``config_s``), showing it only 0.6 s after the trigger (ConfigUndefined until then).
Reported per image (osfp8-both: ApplyImmediate; qsfpdd8-stepped: DPDeinit -> ApplyDPInit ->
release) and hold: the time the apply takes on the module's clock (what an FAE waits), its excess
over the hold, the ratio to the hold-0 baseline measured in the same run, and the host CPU time.
Virtual clock by default (module time is exact, nothing sleeps); ``--real`` runs the same applies on
the wall clock (RealClock, ``timing=real``) and reports wall time.
"""

from __future__ import annotations

import argparse
import os
import time

HOLDS = (0.0, 0.1, 0.5, 1.0, 2.0, 5.0)
IMAGES = ("osfp8-both", "qsfpdd8-stepped")


def one(image: str, hold: float, real: bool) -> tuple[float, float]:
    from eqtune.drivers.cmis import CmisDriver
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.bus import RealClock
    from eqtune.emulate.link import EmulatedLink, surrogate_quality
    from eqtune.emulate.module import EmulatedModule, VirtualClock
    from eqtune.emulate.transport import EmulatorTransport

    clock = RealClock() if real else VirtualClock()
    link = EmulatedLink("c2m-10in", lanes=8, seed=3, noise=False, quality=surrogate_quality(16.0))
    emu = EmulatedModule(link, settle_s=0.05, clock=clock, image=image, config_s=hold, status_latency_s=0.6,
                         real_timing=True)
    mod = CmisDriver(PagedRegisters(EmulatorTransport(emu, f"emu:{image}")), resource=f"emu:{image}")
    t0, c0 = clock(), time.process_time()
    mod.apply_eq({1: {"tx_eq": 4}})
    took, cpu = clock() - t0, time.process_time() - c0
    assert mod.active_eq(1)["tx_eq"] == 4
    return took, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", action="store_true", help="wall clock instead of the virtual clock")
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min); "
          f"{'wall' if args.real else 'virtual'} clock, real-host waits")
    print(f"{'image':16} {'hold s':>6} {'apply s':>8} {'excess s':>8} {'ratio':>6} {'cpu ms':>7}")
    for image in IMAGES:
        base, _ = one(image, 0.0, args.real)
        for hold in HOLDS:
            took, cpu = one(image, hold, args.real)
            print(f"{image:16} {hold:6.1f} {took:8.2f} {took - hold:8.2f} {took / base:6.2f} {cpu * 1e3:7.1f}")


if __name__ == "__main__":
    main()
