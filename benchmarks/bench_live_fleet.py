"""Transfer through the real live tuner: an emulated fleet, measurements per lane to 0.1 dB.

Each module is an emulated CMIS module (eqtune.emulate: ``EmulatedModule`` behind the register
transport, driven by the real ``CmisModule`` driver and the journaled ``LiveTuner``) whose link is
the channel with a per-module extra trace loss (N(0, ``--module-sd`` 1.0 dB) at Nyquist, proportional
to frequency, as eqtune.emulate.link varies lanes) and the emulator's own per-lane spread
(``EmulatedLink(lane_spread_db=0.6)``, drawn from the module's seed). The margin is the minimum PAM4
eye height a sampling scope on the host side reads (``EmulatedLink.eye``: the eye engine's eye with
~1 % acquisition noise per reading), knobs ``rx_pre, rx_post, rx_amp`` (256 codes), one lane at a time
(an instrument measures one lane), so lane k of a module starts from lanes 1..k-1 (the GP prior mean,
eqtune.tune.transfer).

Per seed and channel, three sessions in one run:

* module 1: lane 1 cold, lanes 2-8 warm from the earlier lanes;
* module 2 without a prior session (lane 1 cold again);
* module 2 with ``prior_session=auto`` (``--prior-session auto``: module 1's session is found by part
  number and host channel), on an identical fresh emulator (same seeds), so the two are paired.

Score of a lane: the number of its own measurements until the optimizer's recommendation (journaled
with every measurement as ``rec``) has a true eye height (noise-free model) within 0.1 dB
(20 log10) of the lane's true optimum over all 256 codes; a lane that never gets there within the
budget is a miss (never counted as budget + 1). The instrument is an in-process scope object over the
emulator's link (``measure_eye``), not the SCPI emulator, so that readings do not depend on wall time.

Also scored, on every session's verified final pick: its true loss against the lane's optimum, and
how far it is below the truly best code the lane had already measured (the scope reports no noise, so
this is the check that the pick does not drift off a code it has seen; > 0.1 dB counts as a fault).

Channel ``c2m-10in`` is a library channel (settings may be chosen there); the IEEE channel
``ieee-tracy-10in`` (../shared/channels-ieee) is held out (report only).

Run:  nice python benchmarks/bench_live_fleet.py [--seeds 3] [--budget 20] [--channels c2m-10in,ieee-tracy-10in]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tune as bt  # noqa: E402

KNOBS = ["rx_pre", "rx_post", "rx_amp"]
CHANNELS = {"c2m-10in": "c2m-10in"}
if bt._IEEE is not None:
    CHANNELS["ieee-tracy-10in"] = str(bt._IEEE / "tracy_3ck_02_0119_DPO_10in/DPO_10in_Meg7_THRU.s4p")
HELD_OUT = {"ieee-tracy-10in"}


class Scope:
    """A sampling scope on the host side of an emulated link, in process (EmulatedLink.eye)."""

    kind = "scope"
    name = "in-process scope"
    idn = "eqtune bench scope"

    def __init__(self, link: Any) -> None:
        self.link = link

    def identity(self) -> dict[str, str]:
        return {"idn": self.idn, "kind": self.kind}

    def measure_eye(self, lane: int, dwell_s: float = 0.0) -> dict[str, Any]:
        return self.link.eye(lane, "host_rx")

    def close(self) -> None:
        pass


def module_link(base: Any, extra_db: float, seed: int) -> Any:
    """An emulated link: ``base`` with ``extra_db`` more loss at Nyquist (proportional to frequency),
    plus the emulator's own per-lane spread from ``seed``."""
    from eqtune.emulate.link import EmulatedLink

    f = np.asarray(base.freqs_hz, dtype=float)
    scale = 10 ** (-(extra_db * f / base.nyquist_hz) / 20.0)
    ch = replace(base, sdd21=np.asarray(base.sdd21) * scale, name=f"{base.name}+{extra_db:.2f}dB")
    return EmulatedLink(ch, lanes=8, seed=seed, noise=True)


def truth(link: Any) -> dict[int, tuple[float, dict[str, int]]]:
    """Per lane: the true (noise-free) best minimum eye height over every code, and its codes."""
    grid = [dict(zip(KNOBS, c)) for c in itertools.product(range(8), range(8), range(4))]
    out = {}
    for ln in range(1, 9):
        eh = [float(link.quality(ln, "host_rx", c)["eye_height_min_mv"]) for c in grid]
        i = int(np.argmax(eh))
        out[ln] = (eh[i], grid[i])
    return out


def run_session(sessions: Path, sid: str, link: Any, *, seed: int, budget: int, prior: str | None,
                pn: str = "EMU-800G-OSFP") -> Any:
    from eqtune.drivers.cmis import CmisModule
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.module import EmulatedModule, VirtualClock
    from eqtune.emulate.transport import EmulatorTransport
    from eqtune.session.live import LiveConfig, LiveTuner, load_session

    emu = EmulatedModule(link, settle_s=0.0, clock=VirtualClock(), tx_adaptive_on=False, name=sid)
    res = f"emu:fleet-{sid}"

    def opener(resource: str) -> CmisModule:
        return CmisModule(PagedRegisters(EmulatorTransport(emu, resource)), resource=resource)

    cfg = LiveConfig(module=res, lanes=list(range(1, 9)), instrument="scope:in-process", metric="eye_height",
                     dwell_s=0.01, verify_dwell_s=0.01, budget=budget, seed=seed, knobs=list(KNOBS),
                     channel="fleet", prior_session=prior)
    tuner = LiveTuner.create(cfg, sessions_dir=sessions, session_id=sid, opener=opener, instrument=Scope(link))
    result = tuner.run()
    if result.status != "done":
        raise SystemExit(f"{sid}: {result.status} {result.message}")
    return load_session(sid, sessions)


def scores(view: Any, link: Any, best: dict[int, tuple[float, dict[str, int]]]) -> dict[int, int | None]:
    """Per lane: measurements until the journaled recommendation is within 0.1 dB of the true optimum."""
    out: dict[int, int | None] = {}
    for ln in range(1, 9):
        thr = best[ln][0] * 10 ** (-0.1 / 20.0)
        out[ln] = None
        k = 0
        for m in view.measurements():
            if str(ln) not in m["lanes"]:
                continue
            k += 1
            rec = (m.get("rec") or {}).get(str(ln))
            if rec and float(link.quality(ln, "host_rx", {k2: int(v) for k2, v in rec["codes"].items()
                                                          if k2 in KNOBS})["eye_height_min_mv"]) >= thr:
                out[ln] = k
                break
    return out


def _below_db(ref: float, pick: float) -> float:
    """20 log10(ref / pick) (dB) floored at 0; inf when the pick's eye is closed and ``ref``'s is open. Closed
    eyes (height <= 0) are all equal: a scope reads each as 0 and no code among them is better."""
    ref, pick = max(ref, 0.0), max(pick, 0.0)
    if pick >= ref:
        return 0.0
    return 20.0 * float(np.log10(ref / pick)) if pick > 0 else float("inf")


def final_picks(view: Any, link: Any, best: dict[int, tuple[float, dict[str, int]]]) -> dict[int, list[float]]:
    """Per lane, of the verified final pick (the session's recommendation, else the lane's original codes):
    [its true loss (dB, 20 log10 of eye heights) against the lane's true optimum, and how far (dB) it is
    below the truly best code the lane had already measured (baseline and search; 0 when it is that code)]."""

    def eh(codes: dict[str, Any]) -> float:
        return float(link.quality(ln, "host_rx", {k: int(codes[k]) for k in KNOBS})["eye_height_min_mv"])

    out: dict[int, list[float]] = {}
    orig = view.originals() or {}
    results = view.lane_results()
    for ln in range(1, 9):
        r = results[ln]
        pick = eh(r.recommended or r.original)
        seen = [eh(orig[ln])] if ln in orig else []
        seen += [eh(m["lanes"][str(ln)]["codes"]) for m in view.measurements() if str(ln) in m["lanes"]]
        out[ln] = [round(_below_db(best[ln][0], pick), 3), round(_below_db(max(seen), pick), 3)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=20, help="measurements per lane (the same cap for every lane)")
    ap.add_argument("--module-sd", type=float, default=1.0)
    ap.add_argument("--channels", default=",".join(CHANNELS))
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="keep the session journals under this folder")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    from eqtune.channel import load_channel

    out: dict[str, Any] = {}
    t_start = time.perf_counter()
    for cname in args.channels.split(","):
        base = load_channel(CHANNELS[cname])
        res: dict[str, Any] = {"m1_lane1": [], "m1_lanes_2_8": [], "m2_cold": [], "m2_prior": [],
                               "m2_cold_lane1": [], "m2_prior_lane1": [], "runs": []}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rng = np.random.default_rng(1000 + seed)
            off1, off2 = (float(x) for x in rng.normal(0.0, args.module_sd, 2))
            with tempfile.TemporaryDirectory() as tmp:
                sessions = Path(tmp) if args.keep is None else args.keep / f"{cname}-seed{seed}"
                sessions.mkdir(parents=True, exist_ok=True)
                l1 = module_link(base, off1, seed=100 + seed)
                best1 = truth(l1)
                v1 = run_session(sessions, "m1", l1, seed=seed, budget=args.budget, prior=None)
                s1 = scores(v1, l1, best1)
                res.setdefault("final", []).extend(final_picks(v1, l1, best1).values())
                runs = {"seed": seed, "module_offsets_db": [off1, off2], "m1": s1,
                        "m1_best": {ln: b for ln, (_, b) in best1.items()}}
                # with the prior first: 'auto' must find module 1's session, the only completed one so far
                for tag, prior in (("m2_prior", "auto"), ("m2_cold", None)):
                    l2 = module_link(base, off2, seed=200 + seed)  # identical fresh emulator per variant
                    best2 = truth(l2)
                    v2 = run_session(sessions, tag, l2, seed=seed + 50, budget=args.budget, prior=prior)
                    if prior:
                        used = (v2.plan().get("prior") or {}).get("session")
                        assert used == "m1", used
                    s2 = scores(v2, l2, best2)
                    res.setdefault("final", []).extend(final_picks(v2, l2, best2).values())
                    runs[tag] = s2
                    runs[tag + "_best"] = {ln: b for ln, (_, b) in best2.items()}
                    res[tag] += [s2[ln] for ln in range(2, 9)]
                    res[tag + "_lane1"].append(s2[1])
                res["m1_lane1"].append(s1[1])
                res["m1_lanes_2_8"] += [s1[ln] for ln in range(2, 9)]
                res["runs"].append(runs)
            print(f"{cname} seed {seed}: offsets {off1:+.2f}/{off2:+.2f} dB; m1 {list(s1.values())}; "
                  f"m2 cold {list(runs['m2_cold'].values())}; m2 prior {list(runs['m2_prior'].values())}", flush=True)
        out[cname] = res
    cap = args.budget
    print(f"\nmeasurements per lane until the recommendation is within 0.1 dB (eye height) of the lane's true "
          f"optimum; medians over {args.seeds} seeds x lanes, cap {cap} per lane, misses counted as misses; "
          f"{time.perf_counter() - t_start:.0f} s")
    print("| channel | m1 lane 1 (cold) | m1 lanes 2-8 | m2 lane 1: no prior / prior session | "
          "m2 lanes 2-8: no prior / prior session |")
    print("|---|---|---|---|---|")
    for cname, r in out.items():
        tag = " (held out)" if cname in HELD_OUT else " (library)"
        print(f"| {cname}{tag} | {bt.show_median(r['m1_lane1'], cap)} | {bt.show_median(r['m1_lanes_2_8'], cap)} | "
              f"{bt.show_median(r['m2_cold_lane1'], cap)} / {bt.show_median(r['m2_prior_lane1'], cap)} | "
              f"{bt.show_median(r['m2_cold'], cap)} / {bt.show_median(r['m2_prior'], cap)} |")
    print("\nfinal (verified) picks of every session above: true loss against the lane's optimum, and how far "
          "below the truly best code the lane had measured")
    print("| channel | lanes within 0.1 dB of the optimum | lanes > 0.1 dB below a code they measured (worst dB) |")
    print("|---|---|---|")
    for cname, r in out.items():
        tag = " (held out)" if cname in HELD_OUT else " (library)"
        fin = r.get("final", [])
        if fin:
            print(f"| {cname}{tag} | {sum(a <= 0.1 for a, _ in fin)}/{len(fin)} | "
                  f"{sum(b > 0.1 for _, b in fin)}/{len(fin)} ({max(b for _, b in fin):.2f}) |")
    if args.json:
        args.json.write_text(json.dumps({"channels": out, "args": {k: (str(v) if isinstance(v, Path) else v)
                                                                   for k, v in vars(args).items()},
                                         "engine_version": bt.engine_version()}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
