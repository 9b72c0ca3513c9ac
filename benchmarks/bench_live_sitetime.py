"""Site time of a live tune: simulated minutes to a verified recommendation for a whole 8-lane module.

    nice -n 10 python benchmarks/bench_live_sitetime.py [--seeds 2] [--channels c2m-10in,ieee-gore-c2c]
        [--configs today,sequential,fixed,tpe] [--budget 30] [--channels-per-bert 4] [--json out.json]

Every configuration tunes the same emulated module (eqtune.emulate: the CMIS register map, the driver,
the eye-engine link model per lane with the emulator's per-lane spread, Poisson error counts) on the
same seeds, through the real ``LiveTuner`` and journal. The measurement is a BERT through an optical
loopback (it sees all four module knobs: tx_eq, rx_pre, rx_post, rx_amp; 2,816 codes), in process,
on the emulator's virtual clock: a gate of ``d`` seconds counts ``d`` x 106.25 Gb/s bits and moves the
clock by ``d`` plus ``GATE_OVERHEAD_S`` (no real sleeping). The dwell is the 1e-12 BER target at
53.125 GBd PAM4: 2.996 / (1e-12 x 106.25e9) = 28.2 s; baseline and verify dwell the same.

Configurations:
* ``today``: the live loop before this change (the code of commit 4f059f4, unpacked with ``git archive``
  into ``--base-tree``, imported in a subprocess): every measurement the full dwell, budget used to the
  end, one lane per dwell (its BERT is one channel);
* ``sequential``: the current code unscreened (``--no-screen``): dwell as a decision (eqtune.tune.dwell), the settled / exhausted stops,
  a BERT with ``--channels-per-bert`` channels gated together;
* ``fixed``: the current code with ``sequential=False`` (the stops without the sequential dwell);
* ``patience``: ``sequential`` with ``--patience 6`` (what the TUI and ``eqtune demo`` use);
* ``seq1``: ``sequential`` with a one-channel BERT (lanes one after another, as ``today``);
* ``seq8``: ``sequential`` with an 8-channel BERT (the whole module per dwell; the shipped M8040A and
  MP1900A definitions declare 8 channels);
* ``screen8``: ``seq8`` with screening: search measurements dwell ``DWELL / --screen-share`` (8: the
  BER target 8x higher, 3.5 s) with the sequential looks inside it, the closing evaluations (each
  lane's best codes by posterior mean: ``--contenders``, default the session's 4) the full dwell;
  ``screen``: the same with
  ``--channels-per-bert`` channels;
* ``default``: what a session does when it does not say (``LiveConfig``'s defaults: since screening is
  the default for a 28.2 s dwell, the ``screen`` configuration chosen by ``choose_screen``);
* ``base``: ``sequential`` from ``--before-tree`` (an earlier commit unpacked with ``git archive``: the
  before of a change, in the same run);
* ``tpe``: Optuna's TPE sampler, per lane, through the same module and BERT (full dwell each trial,
  the same budget, its pick is the best trial), then the same verify dwell. GPSampler needs torch,
  which the benchmark's environment does not have: not run.

Scored per run: simulated site minutes from the first write to the last verify (the emulator's clock),
split by phase (connect, baseline, tuning, verify, decided: the virtual clock at each phase event),
measurements per lane, dwell seconds, and the true loss of each lane's verified pick: the Q (dB) of the
emulator's noise-free loopback BER at the pick against the best of all 2,816 codes, each BER floored at
``--resolved`` (1e-13: a code ten times better than the target is as good as any; no dwell at the target
can tell two such codes apart); and how far each pick is below the truly best code its lane had already
measured (the baseline code and every code of the search, screened or not), on the same floor: a
pick more than 0.1 dB below one is a pick the measurements should have kept. Channel ``c2m-10in`` is the library channel (settings may be chosen
there); the IEEE 802.3ck channels in ../shared/channels-ieee are held out (report only).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IEEE = Path(os.environ.get("EQTUNE_IEEE_CHANNELS", ROOT.parent / "shared" / "channels-ieee"))
CHANNELS = {
    "c2m-10in": "c2m-10in",
    "ieee-gore-c2c": str(IEEE / "gore_3ck_02_0519_C2C_12dB" / "C2C_PCB_SYSVIA_12dB_thru.s4p"),
    "ieee-tracy-4in": str(IEEE / "tracy_3ck_02_0119_DPO_4in" / "DPO_4in_Meg7_THRU.s4p"),
}
HELD_OUT = {"ieee-gore-c2c", "ieee-tracy-4in"}
KNOBS = ["tx_eq", "rx_pre", "rx_post", "rx_amp"]
TARGET_BER = 1e-12
BIT_RATE = 106.25e9
DWELL_S = -math.log(0.05) / (TARGET_BER * BIT_RATE)  # 28.2 s: zero errors prove BER < 1e-12 at 95 %
GATE_OVERHEAD_S = 0.2  # start/stop/read of one BERT gate (SCPI round trips)


def q_db(ber: float) -> float:
    """Q factor (dB) of a BER: 20 log10(sqrt(2) erfcinv(2 BER)) (Gaussian tail)."""
    from scipy.special import erfcinv

    return 20 * math.log10(math.sqrt(2) * float(erfcinv(2 * min(max(ber, 1e-300), 0.49))))


class Bert:
    """A BERT through an optical loopback of an emulated module, in process, on its virtual clock.
    ``channels`` > 1: that many lanes gated together (``measure_ber_lanes``)."""

    kind = "bert"
    name = "in-process BERT"
    idn = "eqtune bench BERT"

    def __init__(self, link: Any, clock: Any, channels: int = 1) -> None:
        self.link, self.clock, self.channels = link, clock, int(channels)

    def identity(self) -> dict[str, str]:
        return {"idn": self.idn, "kind": self.kind}

    def measure_ber(self, lane: int, dwell_s: float) -> Any:
        return self.measure_ber_lanes([lane], dwell_s)[lane]

    def measure_ber_lanes(self, lanes: list[int], dwell_s: float) -> dict[int, Any]:
        out = {ln: self.link.count_errors(ln, dwell_s, path="loopback") for ln in lanes}
        self.clock.sleep(dwell_s + GATE_OVERHEAD_S)
        return out

    def close(self) -> None:
        pass


def make_module(channel: str, seed: int, name: str) -> tuple[Any, Any, Any]:
    from eqtune.channel import load_channel
    from eqtune.emulate.link import EmulatedLink
    from eqtune.emulate.module import EmulatedModule, VirtualClock

    ch = load_channel(channel) if channel.endswith(".s4p") else channel
    link = EmulatedLink(ch, lanes=8, seed=seed, noise=True)
    clock = VirtualClock()
    emu = EmulatedModule(link, settle_s=0.0, clock=clock, tx_adaptive_on=False, name=name)
    return emu, link, clock


def truth(link: Any) -> dict[int, dict[tuple[int, ...], float]]:
    """Per lane: the noise-free loopback BER of every code (tx_eq x rx_pre x rx_post x rx_amp)."""
    out = {}
    for ln in range(1, 9):
        a = {t: float(link.quality(ln, "module_rx", {"tx_eq": t})["ber_estimate"]) for t in range(11)}
        out[ln] = {}
        for p, q, r in itertools.product(range(8), range(8), range(4)):
            b = float(link.quality(ln, "host_rx", {"rx_pre": p, "rx_post": q, "rx_amp": r})["ber_estimate"])
            for t in range(11):
                out[ln][(t, p, q, r)] = min(0.5, a[t] + b - a[t] * b)
    return out


def loss_db(ber_by_code: dict[tuple[int, ...], float], codes: dict[str, int], resolved: float) -> float:
    best = min(ber_by_code.values())
    got = ber_by_code[tuple(int(codes[k]) for k in KNOBS)]
    return q_db(max(best, resolved)) - q_db(max(got, resolved))


def below_measured_db(ber_by_code: dict[tuple[int, ...], float], codes: dict[str, int],
                      measured: list[list[int]], resolved: float) -> float:
    """How far (Q, dB) the pick's true BER is below the truly best code the lane had already measured (0 when
    the pick is that code or as good): a pick more than 0.1 dB below it is one the measurements should have kept."""
    best = min(ber_by_code[tuple(c)] for c in measured) if measured else ber_by_code[tuple(int(codes[k]) for k in KNOBS)]
    got = ber_by_code[tuple(int(codes[k]) for k in KNOBS)]
    return max(0.0, q_db(max(best, resolved)) - q_db(max(got, resolved)))


def run_live(channel: str, seed: int, budget: int, *, sequential: bool | None, channels: int,
             tmp: Path, patience: int | None = None, screen_dwell_s: float | None = None,
             contenders: int = 0, default: bool = False) -> dict[str, Any]:
    """One session through this tree's (or, from the subprocess, the base tree's) LiveTuner."""
    from eqtune.drivers.cmis import CmisModule
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.transport import EmulatorTransport
    from eqtune.session.live import LiveConfig, LiveTuner, load_session

    sid = f"s{seed}-{abs(hash((channel, sequential, channels))) % 10**6}"
    emu, link, clock = make_module(channel, 100 + seed, sid)
    res = f"emu:site-{sid}"

    def opener(resource: str) -> Any:
        return CmisModule(PagedRegisters(EmulatorTransport(emu, resource)), resource=resource)

    kw: dict[str, Any] = {} if sequential is None else {"sequential": sequential}
    if patience:
        kw["patience"] = patience
    if screen_dwell_s:
        kw["screen_dwell_s"] = screen_dwell_s
    elif not default and "screen" in getattr(LiveConfig, "__dataclass_fields__", {}):
        kw["screen"] = "off"  # the unscreened configurations stay unscreened where screening is the default
    if contenders:
        kw["remeasure_top_k"] = contenders
    cfg = LiveConfig(module=res, lanes=list(range(1, 9)), instrument="bert:in-process", dwell_s=DWELL_S,
                     verify_dwell_s=DWELL_S, budget=budget, seed=seed, knobs=list(KNOBS), **kw)
    bert = Bert(link, clock, channels)
    t0 = clock()
    marks: list[tuple[str, float]] = []  # (phase, virtual clock) at each phase change: where the minutes go

    def on_event(ev: Any) -> None:
        if ev.kind == "phase" and (not marks or marks[-1][0] != ev.data.get("phase")):
            marks.append((str(ev.data.get("phase")), clock()))

    tuner = LiveTuner.create(cfg, sessions_dir=tmp, session_id=sid, opener=opener, instrument=bert,
                             on_event=on_event)
    result = tuner.run()
    site_s = clock() - t0
    phases: dict[str, float] = {}
    ends = [t for _, t in marks[1:]] + [t0 + site_s]
    for (ph, start), end in zip(marks, ends):
        phases[ph] = phases.get(ph, 0.0) + (end - start) / 60.0
    view = load_session(sid, tmp)
    per_lane = {ln: 0 for ln in range(1, 9)}
    dwell = 0.0
    rules = []
    measured: dict[int, list[list[int]]] = {ln: [] for ln in range(1, 9)}  # every code a lane read, baseline first
    for ln, codes in (view.originals() or {}).items():
        measured[int(ln)].append([int(codes[k]) for k in KNOBS])
    for m in view.measurements():
        for ln, r in m["lanes"].items():
            per_lane[int(ln)] += 1
            measured[int(ln)].append([int(r["codes"][k]) for k in KNOBS])
        dwell += max(float(r["counts"].get("dwell_s") or 0.0) for r in m["lanes"].values())
        if m.get("stop"):
            rules.append(str(m.get("stop_rule") or "early"))
    picks = {ln: dict(result.lanes[ln].recommended or result.lanes[ln].original) for ln in range(1, 9)}
    return {"status": result.status, "site_min": site_s / 60.0, "measurements_per_lane": per_lane,
            "dwell_s": dwell, "picks": {str(k): v for k, v in picks.items()}, "stop_rules": rules,
            "groups": len(view.plan()["groups"]), "phase_min": phases,
            "measured": {str(k): v for k, v in measured.items()}}


def run_tpe(channel: str, seed: int, budget: int, tmp: Path) -> dict[str, Any]:
    """Optuna TPE per lane through the same module and BERT: full dwell per trial, best trial kept,
    then one verify dwell per lane (the same site costs as a live session: writes on the clock)."""
    import optuna

    from eqtune.drivers.cmis import CmisModule
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.transport import EmulatorTransport
    from eqtune.tune.live import LiveSource

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    emu, link, clock = make_module(channel, 100 + seed, f"tpe{seed}")
    module = CmisModule(PagedRegisters(EmulatorTransport(emu, "emu:tpe")), resource="emu:tpe")
    bert = Bert(link, clock, 1)
    t0 = clock()
    picks, per_lane, dwell, measured = {}, {}, 0.0, {}
    for ln in range(1, 9):
        src = LiveSource(module, [ln], instrument=bert, dwell_s=DWELL_S, knobs=list(KNOBS))
        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed + 1000 * ln))
        study.enqueue_trial({k: int(v) for k, v in src.start[ln].items() if k in KNOBS})
        allowed = {k.name: [int(round(v)) for v in k.values] for k in src.space.knobs}

        def objective(trial: Any, src: Any = src, ln: int = ln, allowed: Any = allowed) -> float:
            codes = dict(src.start[ln])
            codes.update({k: trial.suggest_categorical(k, allowed[k]) for k in KNOBS})
            src.apply({ln: codes})
            return float(src.read(codes={ln: codes})[ln].margin)

        study.optimize(objective, n_trials=budget)
        measured[str(ln)] = [[int({**src.start[ln], **t.params}[k]) for k in KNOBS] for t in study.trials]
        best = {**src.start[ln], **{k: int(v) for k, v in study.best_trial.params.items()}}
        src.apply({ln: best})
        src.read(codes={ln: best})  # the verify dwell
        picks[str(ln)] = best
        per_lane[ln] = budget
        dwell += (budget + 1) * DWELL_S
    return {"status": "done", "site_min": (clock() - t0) / 60.0, "measurements_per_lane": per_lane,
            "dwell_s": dwell, "picks": picks, "stop_rules": [], "groups": 8, "measured": measured}


def child(args: argparse.Namespace) -> int:
    """One run, printed as JSON (the ``today`` configuration runs here with the base tree first on the path)."""
    tmp = Path(tempfile.mkdtemp(prefix="eqtune-sitetime-"))
    if args.config == "tpe":
        out = run_tpe(CHANNELS[args.channel], args.seed, args.budget, tmp)
    else:
        seq = {"today": None, "sequential": True, "fixed": False, "patience": True, "seq1": True, "base": True,
               "seq8": True, "screen8": True, "screen": True, "default": True}[args.config]
        chans = {"today": 1, "seq1": 1, "seq8": 8, "screen8": 8}.get(args.config, args.channels_per_bert)
        screen = DWELL_S / args.screen_share if args.config.startswith("screen") else None
        out = run_live(CHANNELS[args.channel], args.seed, args.budget, sequential=seq, channels=chans, tmp=tmp,
                       patience=6 if args.config == "patience" else None, screen_dwell_s=screen,
                       contenders=args.contenders if screen else 0, default=args.config == "default")
    print(json.dumps(out))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--channels", default=",".join(CHANNELS))
    ap.add_argument("--configs", default="today,sequential,patience,fixed,tpe")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--channels-per-bert", type=int, default=4)
    ap.add_argument("--screen-share", type=float, default=8.0,
                    help="screen / screen8 configs: search measurements dwell DWELL / this (a BER target this much higher)")
    ap.add_argument("--resolved", type=float, default=1e-13)
    ap.add_argument("--base-tree", type=Path, default=Path("/tmp/i31-base"))
    ap.add_argument("--before-tree", type=Path, default=Path("/tmp/j31-base"),
                    help="tree of the 'base' config: 'sequential' on an earlier commit (git archive)")
    ap.add_argument("--contenders", type=int, default=0,
                    help="screen / screen8 configs: closing full-dwell evaluations (0: the session's default)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--config", default="sequential", help=argparse.SUPPRESS)
    ap.add_argument("--channel", default="c2m-10in", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    sys.path.insert(0, str(ROOT))
    from eqtune.emulate.link import EmulatedLink  # noqa: F401  (fails early when the tree is broken)

    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for cname in args.channels.split(","):
        if cname in HELD_OUT and not IEEE.is_dir():
            print(f"skip {cname}: {IEEE} absent (set EQTUNE_IEEE_CHANNELS)")
            continue
        for seed in range(args.seed0, args.seed0 + args.seeds):
            _, link, _ = make_module(CHANNELS[cname], 100 + seed, "truth")
            tb = truth(link)
            for conf in args.configs.split(","):
                tree = {"today": args.base_tree, "base": args.before_tree}.get(conf, ROOT)
                if tree != ROOT and not (tree / "eqtune").is_dir():
                    print(f"skip {conf}: no tree at {tree} (git archive <commit> | tar -x -C {tree})")
                    continue
                env = dict(os.environ, PYTHONPATH=str(tree))
                cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--config", conf, "--channel", cname,
                       "--seed", str(seed), "--budget", str(args.budget),
                       "--channels-per-bert", str(args.channels_per_bert), "--screen-share", str(args.screen_share),
                       "--contenders", str(args.contenders)]
                t0 = time.perf_counter()
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(tree))
                if p.returncode != 0:
                    print(f"{cname} seed {seed} {conf}: failed\n{p.stderr[-2000:]}")
                    continue
                out = json.loads(p.stdout.strip().splitlines()[-1])
                out["wall_s"] = time.perf_counter() - t0
                out["loss_db"] = {ln: loss_db(tb[int(ln)], c, args.resolved) for ln, c in out["picks"].items()}
                if "measured" in out:  # the 'today' tree's child prints no codes list
                    out["below_measured_db"] = {ln: below_measured_db(tb[int(ln)], c, out["measured"].get(ln, []),
                                                                      args.resolved)
                                                for ln, c in out["picks"].items()}
                    out.pop("measured")
                rows.setdefault(cname, {}).setdefault(conf, []).append({"seed": seed, **out})
                ph = out.get("phase_min") or {}
                print(f"{cname:15s} seed {seed} {conf:10s}: phases (site min) "
                      + ", ".join(f"{k} {v:.1f}" for k, v in ph.items()), flush=True)
                print(f"{cname:15s} seed {seed} {conf:10s}: {out['site_min']:6.1f} site min, "
                      f"{statistics.mean(out['measurements_per_lane'].values()):5.1f} meas/lane, "
                      f"dwell {out['dwell_s'] / 60:6.1f} min, max loss {max(out['loss_db'].values()):.2f} dB, "
                      f"stops {sorted(set(out['stop_rules']))}, wall {out['wall_s']:.0f} s", flush=True)
    print()
    print(f"load: {os.getloadavg()}")
    print("| channel | config | site min (median; per seed) | meas/lane (median) | dwell min (median) | "
          "lanes within 0.1 dB | worst lane loss dB | lanes > 0.1 dB below a code they measured (worst dB) | "
          "ratio dwell today/config |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cname, confs in rows.items():
        today = {r["seed"]: r["dwell_s"] for r in confs.get("today", [])}
        for conf, rs in confs.items():
            lanes_ok = sum(v <= 0.1 for r in rs for v in r["loss_db"].values())
            below = [v for r in rs for v in (r.get("below_measured_db") or {}).values()]
            btxt = f"{sum(v > 0.1 for v in below)}/{len(below)} ({max(below):.2f})" if below else "-"
            n_lanes = sum(len(r["loss_db"]) for r in rs)
            ratio = [today[r["seed"]] / r["dwell_s"] for r in rs if r["seed"] in today and r["dwell_s"] > 0]
            tag = " (held out)" if cname in HELD_OUT else " (library)"
            per_seed = ", ".join(f"{r['site_min']:.1f}" for r in rs)
            meas = statistics.median(statistics.mean(r["measurements_per_lane"].values()) for r in rs)
            worst = max(v for r in rs for v in r["loss_db"].values())
            rtxt = f"{statistics.median(ratio):.1f}x" if ratio else "-"
            print(f"| {cname}{tag} | {conf} | {statistics.median(r['site_min'] for r in rs):.1f}; {per_seed} | "
                  f"{meas:.1f} | {statistics.median(r['dwell_s'] / 60 for r in rs):.1f} | {lanes_ok}/{n_lanes} | "
                  f"{worst:.2f} | {btxt} | {rtxt} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "args": {k: str(v) for k, v in vars(args).items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
