"""Behaviour check for refactors of the live tuner: fixed-seed emulated sessions -> normalized journals.

Three sessions against the in-process emulated module (virtual clock, seeded noise): A) the module's
checker, 3 lanes in parallel, model warm start, patience, one re-measurement; B) per-lane groups through
a deterministic in-process BER instrument (lane-to-lane prior); C) abort during the second group, then
resume. Timestamps, checksums, wall times, pids and ids are dropped; run it in two checkouts and compare:

    python benchmarks/live_journal_check.py /tmp/before   # in the base checkout
    python benchmarks/live_journal_check.py /tmp/after    # in yours
    diff -r /tmp/before /tmp/after --exclude sessions
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for, reset_emulators
from eqtune.session.live import LiveConfig, LiveTuner

DROP = {"ck", "t", "wall_s", "cost_s", "pid", "created", "elapsed_s", "eqtune", "version_info", "host", "session", "id"}


class Bert:
    """A deterministic in-process BER instrument over the emulator's link (host_rx errors)."""

    kind = "bert"
    name = "inproc"
    idn = "inproc bert"

    def __init__(self, link) -> None:
        self.link = link

    def identity(self) -> dict:
        return {"idn": "inproc", "kind": "bert"}

    def measure_ber(self, lane: int, dwell_s: float):
        return self.link.count_errors(lane, dwell_s, path="host_rx")

    def close(self) -> None:
        pass


def norm(obj):
    if isinstance(obj, dict):
        return {k: norm(v) for k, v in obj.items() if k not in DROP}
    if isinstance(obj, list):
        return [norm(v) for v in obj]
    return obj


def dump(out: Path, sessions: Path, sid: str) -> None:
    recs = [json.loads(line) for line in (sessions / sid / "journal.jsonl").read_text().splitlines()]
    (out / f"{sid}.json").write_text(json.dumps(norm(recs), indent=1, sort_keys=True))
    print(sid, len(recs), "records")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    sd = out / "sessions"
    reset_emulators()  # A: module checker, 3 lanes in parallel, warm model, patience
    cfg = LiveConfig(module="emu:c2m-10in?seed=1&settle_ms=2&fast=1&adaptive=0", lanes=[1, 2, 3], dwell_s=28.0,
                     budget=14, seed=1, channel="c2m-10in", patience=5, warm="model", remeasure_top_k=1)
    LiveTuner.create(cfg, sessions_dir=sd, session_id="A").run()
    dump(out, sd, "A")
    reset_emulators()  # B: per-lane groups through an instrument (lane-to-lane prior), rx knobs
    res = "emu:c2m-10in?seed=2&settle_ms=0&fast=1&noise=1"
    link = emulator_for(parse_resource(res)).link
    cfg = LiveConfig(module=res, lanes=[1, 2, 3], instrument="inproc", dwell_s=0.002, budget=10, seed=5,
                     metric="q_db", knobs=["rx_pre", "rx_post", "rx_amp"])
    LiveTuner.create(cfg, sessions_dir=sd, session_id="B", instrument=Bert(link)).run()
    dump(out, sd, "B")
    reset_emulators()  # C: abort during the second group's tuning, then resume
    res = "emu:c2m-10in?seed=3&settle_ms=0&fast=1"
    link = emulator_for(parse_resource(res)).link
    cfg = LiveConfig(module=res, lanes=[1, 2], instrument="inproc", dwell_s=0.002, budget=8, seed=7, metric="q_db",
                     knobs=["rx_pre", "rx_post"])
    holder = {}

    def on_event(ev) -> None:
        if ev.kind == "evaluation" and ev.data.get("lane") == 2 and ev.data.get("n") == 3:
            holder["t"].abort("test abort")

    holder["t"] = LiveTuner.create(cfg, sessions_dir=sd, session_id="C", instrument=Bert(link), on_event=on_event)
    print("C", holder["t"].run().status)
    print("C resumed", LiveTuner.resume("C", sessions_dir=sd, instrument=Bert(link)).run().status)
    dump(out, sd, "C")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
