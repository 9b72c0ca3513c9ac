"""The polling loop: every ``interval_s`` read every module (in parallel threads: the modules sit
on separate buses, adapters or hosts), commit the interval to the store, update the exporter, run
the detector per lane and report new findings with their evidence and the suggested action."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from eqtune.jsonutil import finite_or_none
from eqtune.watch.actions import LaneState, suggest
from eqtune.watch.detect import DetectConfig, Finding, FleetDetector, ModuleThresholds
from eqtune.watch.frameloss import FrameLossTest, frame_loss, predict_from_histogram
from eqtune.watch.observe import ModuleSample, read_module
from eqtune.watch.targets import WatchTarget

if TYPE_CHECKING:
    from eqtune.drivers.protocols import CmisModule


class LaneHistory:
    """One lane's samples as rows (ts, temperature_c, esnr_db, prefec_ber) in a growing numpy buffer,
    NaN = not available; ``trim`` drops rows older than a time, ``array()`` is a view, oldest first."""

    def __init__(self, capacity: int = 256) -> None:
        self._buf = np.full((capacity, 4), np.nan)
        self._start = 0
        self._end = 0

    def __len__(self) -> int:
        return self._end - self._start

    def append(self, ts: float, temp: float | None, esnr: float | None, ber: float | None) -> None:
        if self._end == len(self._buf):
            n = len(self)
            if n * 2 > len(self._buf):  # grow; else compact in place
                self._buf = np.concatenate([self._buf, np.full_like(self._buf, np.nan)])
            self._buf[:n] = self._buf[self._start:self._end]
            self._start, self._end = 0, n
        self._buf[self._end] = (ts, np.nan if temp is None else temp, np.nan if esnr is None else esnr,
                                np.nan if ber is None else ber)
        self._end += 1

    def extend_before(self, rows: np.ndarray) -> None:
        """Insert older rows ahead of the current ones (benchmarks pre-fill a full window)."""
        cur = self.array().copy()
        rows = np.asarray(rows, dtype=float).reshape(-1, 4)
        self._buf = np.full((max(256, 2 * (len(rows) + len(cur))), 4), np.nan)
        self._buf[:len(rows)] = rows
        self._buf[len(rows):len(rows) + len(cur)] = cur
        self._start, self._end = 0, len(rows) + len(cur)

    def trim(self, t_min: float) -> None:
        ts = self._buf[self._start:self._end, 0]
        self._start += int(np.searchsorted(ts, t_min, side="left"))

    def array(self) -> np.ndarray:
        return self._buf[self._start:self._end]


def _module_thresholds(d: dict[str, float]) -> ModuleThresholds:
    return ModuleThresholds(ber_warning=d.get("ber_warning"), ber_alarm=d.get("ber_alarm"),
                            esnr_warning_db=d.get("esnr_warning_db"), esnr_alarm_db=d.get("esnr_alarm_db"),
                            temp_high_warning_c=d.get("temp_high_warning_c"),
                            source={"ber": "module VDM", "esnr": "module VDM"})


def _identity(mod: Any) -> dict[str, str]:
    """Vendor, part number, revision, serial and firmware from page 00h (empty when unreadable)."""
    try:
        ident = mod.identity()
    except Exception:  # noqa: BLE001 - identity is a label, not a reason to fail the poll
        return {}
    return {k: str(getattr(ident, k, "") or "") for k in ("vendor", "pn", "rev", "sn", "firmware")}


def _groups(targets: list[WatchTarget]) -> dict[int, list[int]]:
    """Module slots by host/port group: the fleet CSV's ``group``, ``server`` or ``host`` label."""
    by: dict[str, list[int]] = {}
    for i, t in enumerate(targets):
        g = t.labels.get("group") or t.labels.get("server") or t.labels.get("host")
        if g:
            by.setdefault(g, []).append(i)
    return {i: members for members in by.values() for i in members}


def _host_fec_from_labels(target: WatchTarget) -> Any:
    """The port's FEC counters from the COUNTERS_DB dump the fleet CSV names (``fec_source``,
    ``interface``); None when the row names none."""
    path, iface = target.labels.get("fec_source"), target.labels.get("interface")
    if not path or not iface:
        return None
    from eqtune.watch.hostfec import read_counters_db

    return read_counters_db(path, iface)


def _frame_loss_action(f: Finding, resource: str, lane: int, channel: str | None, consent_flag: str | None):
    """The action for a lane that loses frames (the action rules know steps, trends and thermal
    excess; frame loss past its limit is harmful by definition)."""
    from eqtune.watch.actions import Action, retune_command

    ev = f.evidence
    what = f"{ev.get('ratio', float('nan')):.2g} > {ev.get('limit', float('nan')):.2g}"
    if ev.get("scope") == "port":
        return Action("check_host", f"port {ev.get('interface')} of module {resource} loses frames at the host's FEC "
                                    f"({what}): check the host receive direction (the module's Rx output codes, "
                                    "the host SerDes) and the module's own VDM")
    return Action("retune", f"re-tune lane {lane} of module {resource}: it loses frames ({ev.get('source')}: {what}); "
                            "the watch verifies it afterwards",
                  retune_command(resource, lane, channel, consent_flag=consent_flag))


def _present(col: np.ndarray, n: int = 60) -> list[float]:
    return [float(x) for x in col[~np.isnan(col)][-n:]]


def bus_key(resource: str) -> str:
    """The shared bus of a module resource: ``i2c:1@0x50`` -> ``i2c:1``, ``ftdi://ftdi:232h/1@0x50`` ->
    ``ftdi://ftdi:232h/1``, ``optoe:/sys/bus/i2c/devices/11-0050/eeprom`` -> ``optoe:11``; others
    (``net:HOST:PORT``, ``emu:``) are their own bus."""
    import re

    if resource.startswith(("i2c:", "ftdi://")):
        return resource.split("@", 1)[0]
    m = re.search(r"/(\d+)-00[0-9a-fA-F]{2}/", resource) if resource.startswith("optoe:") else None
    return f"optoe:{m.group(1)}" if m else resource


@dataclass
class LaneStatus:
    """The newest view of one lane (for the TUI and ``--json``)."""

    resource: str
    lane: int
    temperature_c: float | None
    esnr_db: float | None
    prefec_ber: float | None
    findings: list[Finding] = field(default_factory=list)
    action: str = ""
    esnr_hist: list[float] = field(default_factory=list)
    ber_hist: list[float] = field(default_factory=list)
    temp_hist: list[float] = field(default_factory=list)
    action_level: str = "none"
    frame_loss: dict[str, Any] | None = None

    def risk(self, cfg: DetectConfig) -> float:
        """Larger = riskier: 1000 per action level, 100 per finding, plus how close eSNR is to its
        warning level (dB)."""
        from eqtune.watch.actions import LEVELS

        score = 1000.0 * LEVELS.index(self.action_level) + 100.0 * len(self.findings)
        if self.esnr_db is not None:
            score += max(0.0, 10.0 - (self.esnr_db - cfg.esnr_warning()))
        return score


@dataclass
class IntervalReport:
    interval: int
    ts: float
    samples: list[ModuleSample]
    new_flags: list[dict[str, Any]]
    active: set[tuple[str, int, str]]
    lanes: list[LaneStatus]
    duration_s: float
    cleared: list[dict[str, Any]] = field(default_factory=list)


class Watcher:
    """Watch ``targets``. ``store`` (:class:`~eqtune.watch.store.WatchStore`) and ``exporter``
    (:class:`~eqtune.watch.prom.PrometheusExporter`) are optional sinks; ``on_interval(report)`` is
    called after each committed interval. ``opener(resource)`` opens a module (default
    ``eqtune.drivers.cmis.open_module``); ``clock`` the timestamp source (Unix s; emulated time in
    tests); ``on_module(sample)`` is called from the worker thread as each module answers (progress)."""

    def __init__(self, targets: list[WatchTarget], *, interval_s: float = 1.0, store: Any = None,
                 exporter: Any = None, cfg: DetectConfig | None = None,
                 on_interval: Callable[[IntervalReport], None] | None = None,
                 opener: Callable[[str], CmisModule] | None = None, workers: int | None = None,
                 clock: Callable[[], float] = time.time,
                 on_module: Callable[[ModuleSample], None] | None = None, retain_days: float = 1.0,
                 block_s: float = 900.0, consent_flag: str | None = None,
                 sessions_dir: str | None = None,
                 host_fec: Callable[[WatchTarget], Any] | None = None) -> None:
        if not targets:
            from eqtune.errors import InputError

            raise InputError("nothing to watch: give module resources, --fleet CSV or --from-push REPORT")
        if interval_s <= 0:
            from eqtune.errors import InputError

            raise InputError(f"--interval {interval_s}: give a positive number of seconds")
        self.targets = targets
        self.interval_s = float(interval_s)
        self.store = store
        self.exporter = exporter
        self.cfg = cfg or DetectConfig()
        self.on_interval = on_interval
        if opener is None:
            from eqtune.drivers.cmis import open_module

            opener = open_module
        self.opener = opener
        self.clock = clock
        self.on_module = on_module
        self.modules: dict[str, CmisModule] = {}
        self.history: dict[tuple[str, int], LaneHistory] = {}
        self.raised: set[tuple[str, int, str]] = set()  # every finding raised during the watch
        self.active: set[tuple[str, int, str]] = set()  # the findings that hold now
        self.last_cleared: list[dict[str, Any]] = []
        self.retune_failed: set[tuple[str, int]] = set()
        self.detector: FleetDetector | None = None
        self.answered = 0  # module polls that answered, over the watch
        self.retain_days, self.block_s = float(retain_days), float(block_s)
        self.identity: dict[str, dict[str, str]] = {}
        self.consent_flag = consent_flag  # printed in re-tune commands (the CLI knows the tune command's)
        # the re-tune loop (eqtune/watch/retune.py): the flagged lanes' live state, and the verification
        # of the re-tunes the watch suggested, from the tuning journals in ``sessions_dir``
        from eqtune.watch.retune import RetuneVerifier

        self.sessions_dir = sessions_dir
        self.lane_states: dict[tuple[str, int], LaneState | None] = {}
        self.verified: list[dict[str, Any]] = []  # every verdict of the watch, oldest first
        self.verifier = RetuneVerifier(sessions_dir, polls=max(3, self.cfg.persist_count(self.interval_s)),
                                       step_min_decades=self.cfg.step_min_decades, step_min_db=self.cfg.step_min_db,
                                       store_path=str(getattr(store, "path", "")) or None)
        # host FEC counters of a module's port (SONiC COUNTERS_DB, fleet CSV fec_source + interface):
        # host_fec(target) -> FecSnapshot | None; the frame-loss test over them and the lanes' readings
        self.host_fec = host_fec or _host_fec_from_labels
        self._fec_last: dict[str, Any] = {}
        self.frame_loss_test = FrameLossTest()
        self._compacted = -float("inf")
        self.notes: list[str] = []
        self._slot = {t.resource: i for i, t in enumerate(targets)}
        self._thresholds: dict[int, dict[str, float]] = {}
        self._groups = _groups(targets)
        self.interval = 0
        self._bus_locks = {bus_key(t.resource): threading.Lock() for t in targets}
        self._pool = ThreadPoolExecutor(max_workers=workers or min(32, len(targets)), thread_name_prefix="watch")

    # ------------------------------------------------------------------ one module
    def _poll(self, target: WatchTarget) -> ModuleSample:
        # modules that share a bus (i2c:1@0x50 and i2c:1@0x51, one FTDI adapter, one optoe bus) are
        # polled one at a time: their page selects would interleave
        with self._bus_locks[bus_key(target.resource)]:
            s = self._poll_locked(target)
        if self.on_module is not None:
            self.on_module(s)
        return s

    def _poll_locked(self, target: WatchTarget) -> ModuleSample:
        from eqtune.errors import EqtuneError

        mod = self.modules.get(target.resource)
        if mod is None:
            try:
                mod = self.opener(target.resource)
                self.modules[target.resource] = mod
                self.identity[target.resource] = _identity(mod)
            except (EqtuneError, OSError) as exc:
                return ModuleSample(target.resource, self.clock(), None,
                                    error=f"open: {str(exc).splitlines()[0][:300]}")
        s = read_module(mod, target.resource, target.lanes, clock=self.clock)
        if not s.ok:  # reopen next time (adapter reset, module re-seated)
            self._drop(target.resource)
        else:
            self._read_host_fec(target, s)
        return s

    def _read_host_fec(self, target: WatchTarget, s: ModuleSample) -> None:
        """The port's host FEC counts since the last poll into ``s.port_fec`` (a failure is a note,
        not a failed poll: the module answered)."""
        from eqtune.errors import EqtuneError
        from eqtune.watch.hostfec import interval, poisson_interval

        try:
            snap = self.host_fec(target)
        except (EqtuneError, OSError) as exc:
            s.notes.append(f"host FEC: {str(exc).splitlines()[0][:200]}")
            return
        if snap is None:
            return
        iv = interval(self._fec_last.get(target.resource), snap)
        self._fec_last[target.resource] = snap
        if iv is None or iv.codewords <= 0:
            return
        lo, hi = poisson_interval(iv.uncorrectable, iv.codewords)
        port: dict[str, Any] = {"source": "measured (host FEC counters)", "ratio": iv.uncorrectable / iv.codewords,
                                "uncorrectable": iv.uncorrectable, "codewords": iv.codewords, "ci95": [lo, hi],
                                "interface": target.labels.get("interface")}
        if iv.bins is not None and sum(iv.bins[1:]) >= 10:
            port["predicted"] = predict_from_histogram(iv.bins)
        for name, key in (("FEC_FLR", "host_fec_flr"), ("FEC_FLR_PREDICTED", "host_fec_flr_predicted")):
            if name in iv.rates:
                port[key] = iv.rates[name]
        s.port_fec = port

    def _drop(self, resource: str) -> None:
        mod = self.modules.pop(resource, None)
        if mod is not None:
            try:
                mod.close()
            except Exception:  # noqa: BLE001 - already broken
                pass

    # ------------------------------------------------------------------ one interval
    def poll_interval(self) -> IntervalReport:
        t0 = time.perf_counter()
        self.interval += 1
        ts = self.clock()
        samples = list(self._pool.map(self._poll, self.targets))
        self.answered += sum(s.ok for s in samples)
        if self.store is not None and hasattr(self.store, "new_acks"):
            for res, lane in self.store.new_acks():
                self.acknowledge(res, lane)
        lanes, new_flags, active = self._detect(samples)
        if self.store is not None:
            self.store.append_interval(self.interval, ts, samples, new_flags)
            if hasattr(self.store, "compact") and ts - self._compacted >= 3600.0:
                self.store.compact(ts, self.retain_days, self.block_s)
                self._compacted = ts
        if self.exporter is not None:
            det_rows, mod_rows = self._prom_rows(samples)
            self.exporter.update(self.interval, samples, active, detector_rows=det_rows, module_rows=mod_rows,
                                 identity=self.identity, labels={t.resource: t.labels for t in self.targets})
        rep = IntervalReport(self.interval, ts, samples, new_flags, active, lanes, time.perf_counter() - t0,
                             self.last_cleared)
        if self.on_interval is not None:
            self.on_interval(rep)
        return rep

    def _ensure_detector(self, samples: list[ModuleSample]) -> FleetDetector:
        if self.detector is None:
            # CMIS modules have up to 8 lanes; more only if a target or an answer names them (a first
            # poll that fails must not shrink the detector)
            lanes = max([max(s.lanes, default=0) for s in samples] + [max(t.lanes or [0]) for t in self.targets] + [8])
            self.detector = FleetDetector(len(self.targets), min(lanes, 16), self.interval_s, self.cfg)
            self.notes.extend(self.detector.notes)
        return self.detector

    def _prom_rows(self, samples: list[ModuleSample]) -> tuple[list[tuple[str, int, str, float]], list[tuple[str, str, float]]]:
        """The detector's levels and slopes per lane, for the exporter (finite values only)."""
        import math

        det = self.detector
        rows: list[tuple[str, int, str, float]] = []
        mods: list[tuple[str, str, float]] = []
        if det is None:
            return rows, mods
        tcf, own = det._tcf, det.own_t.fit()
        for s in samples:
            m = self._slot[s.resource]
            mods.append((s.resource, "eqtune_module_hot_celsius", float(det.hot[m])))
            pf = s.port_fec
            if pf is not None:  # the host's FEC over the last interval (a ratio of codewords, and its interval)
                mods.append((s.resource, "eqtune_port_fec_codeword_error_ratio", float(pf["ratio"])))
                mods.append((s.resource, "eqtune_port_fec_codeword_error_high_ratio", float(pf["ci95"][1])))
                if pf.get("predicted"):
                    mods.append((s.resource, "eqtune_port_frame_loss_predicted_ratio", float(pf["predicted"]["ratio"])))
            for lane in s.lanes:
                if not 1 <= lane <= det.shape[2]:
                    continue
                li = lane - 1
                vals = (("eqtune_lane_prefec_ber_warning_ratio", 10.0 ** float(det.warn[0, m, li])),
                        ("eqtune_lane_prefec_ber_alarm_ratio", 10.0 ** float(det.alarm[0, m, li])),
                        ("eqtune_lane_esnr_warning_decibels", -float(det.warn[1, m, li])),
                        ("eqtune_lane_prefec_ber_trend_decades_per_second", float(tcf.slope[0, m, li])),
                        ("eqtune_lane_esnr_trend_decibels_per_second", -float(tcf.slope[1, m, li])),
                        ("eqtune_lane_esnr_tempco_decibels_per_celsius", -float(own.slope[1, m, li])))
                rows += [(s.resource, lane, name, v) for name, v in vals if math.isfinite(v)]
                fl = frame_loss(s.lanes[lane].get("prefec_ber"), None)
                if fl is not None:
                    rows.append((s.resource, lane, "eqtune_lane_frame_loss_predicted_ratio", fl["ratio"]))
                    rows.append((s.resource, lane, "eqtune_lane_frame_loss_predicted_high_ratio", fl["range"][1]))
        return rows, mods

    def acknowledge(self, resource: str, lane: int) -> bool:
        """Accept a lane's present level as its normal (``eqtune watch ack``)."""
        m = self._slot.get(resource)
        if self.detector is None or m is None or not 1 <= lane <= self.detector.shape[2]:
            return False
        return self.detector.acknowledge(m, lane - 1)

    def _detect(self, samples: list[ModuleSample]):
        det = self._ensure_detector(samples)
        n_mod, n_lane = det.shape[1], det.shape[2]
        ts = np.full(n_mod, np.nan)
        temp = np.full(n_mod, np.nan)
        ber = np.full((n_mod, n_lane), np.nan)
        esnr = np.full((n_mod, n_lane), np.nan)
        for s in samples:
            m = self._slot[s.resource]
            if not s.ok:
                continue
            if s.thresholds != self._thresholds.get(m):
                self._thresholds[m] = dict(s.thresholds)
                det.set_thresholds(m, _module_thresholds(s.thresholds))
            ts[m] = s.ts
            temp[m] = np.nan if s.temperature_c is None else s.temperature_c
            for lane, vals in s.lanes.items():
                if 1 <= lane <= n_lane:
                    b, e = vals.get("prefec_ber"), vals.get("esnr_db")
                    ber[m, lane - 1] = np.nan if b is None else b
                    esnr[m, lane - 1] = np.nan if e is None else e
        det.update(ts, temp, ber, esnr)
        per_lane: dict[tuple[int, int], list[Finding]] = {}
        for s in samples:
            m = self._slot[s.resource]
            first_lane = min(s.lanes, default=None)
            ef_limit = s.thresholds.get("errored_frames_warning")
            for lane in s.lanes:
                if 1 <= lane <= n_lane:
                    per_lane[(m, lane)] = det.findings(m, lane - 1)
                    if not s.ok:
                        continue
                    vals = s.lanes[lane]
                    fl = frame_loss(vals.get("prefec_ber"), vals.get("errored_frames"))
                    measured = fl is not None and fl["source"].startswith("measured")
                    ev = self.frame_loss_test.update(
                        (s.resource, lane), fl, limit=ef_limit if measured and ef_limit else None,
                        limit_from="module VDM errored-frames warning" if measured and ef_limit
                        else "802.3 frame-loss objective")
                    if ev is not None:
                        per_lane[(m, lane)].append(Finding("frame_loss", "frame_loss_ratio", ev))
                    if lane == first_lane and s.port_fec is not None or (lane == first_lane and
                                                                         (s.resource, 0) in self.frame_loss_test.state):
                        pev = self.frame_loss_test.update((s.resource, 0), s.port_fec)
                        if pev is not None:
                            pev.update({"scope": "port", "interface": self.targets[m].labels.get("interface")})
                            per_lane[(m, lane)].append(Finding("frame_loss", "frame_loss_ratio", pev))
        moved = {m: 0 for m in range(n_mod)}
        counted = {m: 0 for m in range(n_mod)}
        for (m, _lane), fs in per_lane.items():
            counted[m] += 1
            moved[m] += any(f.kind in ("step", "over_alarm") for f in fs)
        frac = {m: moved[m] / counted[m] if counted[m] else 0.0 for m in range(n_mod)}
        lanes: list[LaneStatus] = []
        new_flags: list[dict[str, Any]] = []
        cleared: list[dict[str, Any]] = []
        active: set[tuple[str, int, str]] = set()
        for s in samples:
            m = self._slot[s.resource]
            tgt = self.targets[m]
            group = self._groups.get(m, [])
            others = [g for g in group if g != m]
            gfrac = (sum(frac[g] >= 0.5 for g in others) / len(others)) if len(others) >= 2 else 0.0
            for lane in s.lanes:
                key = (s.resource, lane)
                h = self.history.setdefault(key, LaneHistory(64))
                vals = s.lanes[lane]
                if s.ok:
                    h.append(s.ts, s.temperature_c, vals.get("esnr_db"), vals.get("prefec_ber"))
                h.trim(s.ts - 60.0 * self.interval_s)
                arr = h.array()
                fs = per_lane.get((m, lane), [])
                act = suggest(fs, resource=s.resource, lane=lane, channel=tgt.channel, module_fraction=frac[m],
                              group_fraction=gfrac, retune_failed=key in self.retune_failed,
                              consent_flag=self.consent_flag, lane_state=self._lane_state(tgt, lane, fs),
                              sessions=self.sessions_dir)
                loss = next((f for f in fs if f.kind == "frame_loss"), None)
                if loss is not None and act.level in ("none", "watch"):
                    act = _frame_loss_action(loss, s.resource, lane, tgt.channel, self.consent_flag)
                if s.ok:
                    self.verifier.observe(s.resource, lane, s.ts, vals.get("prefec_ber"), vals.get("esnr_db"),
                                          retune_suggested=act.level == "retune", kinds=[f.kind for f in fs],
                                          ber_warning=10.0 ** float(det.warn[0, m, lane - 1]))
                last = arr[-1] if len(arr) else np.array([s.ts, np.nan, np.nan, np.nan])
                st = LaneStatus(s.resource, lane, finite_or_none(last[1]), finite_or_none(last[2]),
                                finite_or_none(last[3]), fs, str(act), _present(arr[:, 2]), _present(arr[:, 3]),
                                _present(arr[:, 1]), act.level,
                                frame_loss(vals.get("prefec_ber"), vals.get("errored_frames")) if s.ok else None)
                lanes.append(st)
                for f in fs:
                    fk = (s.resource, lane, f.kind)
                    active.add(fk)
                    if fk not in self.active:
                        self.raised.add(fk)
                        new_flags.append({"ts": s.ts, "resource": s.resource, "lane": lane, "kind": f.kind,
                                          "metric": f.metric, "evidence": f.evidence, "action": str(act),
                                          "action_level": act.level, "command": act.command, "labels": tgt.labels})
        for fk in sorted(self.active - active):
            cleared.append({"resource": fk[0], "lane": fk[1], "kind": fk[2]})
        # a lane better than its baseline for K polls (after a re-tune or reseat): before/after go to
        # the report and the store, the verification of the change
        for imp in det.take_improved():
            tgt = self.targets[imp["module"]]
            new_flags.append({"ts": imp["ts"], "resource": tgt.resource, "lane": imp["lane"] + 1, "kind": "improved",
                              "metric": imp["metric"], "evidence": {"before": imp["before"], "after": imp["after"]},
                              "action": "", "action_level": "none", "command": None, "labels": tgt.labels})
        new_flags += self._verified()
        self.active = active
        self.last_cleared = cleared
        lanes.sort(key=lambda x: -x.risk(self.cfg))
        return lanes, new_flags, active

    def _lane_state(self, target: WatchTarget, lane: int, findings: list[Finding]) -> LaneState | None:
        """The flagged lane's live state, read once per flag (None: no finding, or unreadable)."""
        from eqtune.errors import EqtuneError
        from eqtune.watch.retune import read_lane_state

        key = (target.resource, lane)
        if not findings:
            self.lane_states.pop(key, None)
            return None
        if self.lane_states.get(key) is not None:
            return self.lane_states[key]
        mod = self.modules.get(target.resource)
        if mod is None:
            return None
        try:
            with self._bus_locks[bus_key(target.resource)]:
                self.lane_states[key] = read_lane_state(mod, lane, target.profile)
        except (EqtuneError, OSError, TimeoutError, ValueError):
            return None
        return self.lane_states[key]

    def _verified(self) -> list[dict[str, Any]]:
        """The verdicts on re-tunes the watch suggested (eqtune/watch/retune.py), as store/output rows;
        a lane not restored gets "swap" from now on."""
        rows = []
        for v in self.verifier.verdicts():
            key = (v["resource"], v["lane"])
            self.lane_states.pop(key, None)  # the session changed what the module holds
            m = self._slot[v["resource"]]
            if v["kind"] == "retune_not_restored":
                self.retune_failed.add(key)
            else:
                self.retune_failed.discard(key)
            if v["evidence"]["verdict"] == "restored" and self.detector is not None:
                # back at its healthy level: the held step is over (the baseline from before it stands)
                self.detector.release(m, v["lane"] - 1)
            tgt = self.targets[m]
            rows.append({**v, "action": "", "action_level": "none", "command": None, "labels": tgt.labels})
        self.verified += rows
        return rows

    # ------------------------------------------------------------------ the loop
    def run(self, *, count: int | None = None, duration_s: float | None = None,
            stop: threading.Event | None = None, advance: Callable[[float], None] | None = None) -> None:
        """Poll until ``count`` intervals, ``duration_s`` seconds or ``stop`` is set. Intervals start
        on a fixed schedule; an interval that overruns makes the next one start at once (no burst of
        catch-up polls). ``advance(seconds)``: a simulated clock (a rehearsal) that is moved by the
        interval between polls instead of waiting; ``duration_s`` then counts simulated seconds."""
        stop = stop or threading.Event()
        if advance is not None:
            if count is None and duration_s is not None:
                count = max(1, int(duration_s // self.interval_s))
            try:
                while not stop.is_set() and (count is None or self.interval < count):
                    self.poll_interval()
                    if count is None or self.interval < count:
                        advance(self.interval_s)
            finally:
                self.close()
            return
        start = time.monotonic()
        nxt = start
        try:
            while not stop.is_set():
                if count is not None and self.interval >= count:
                    break
                if duration_s is not None and time.monotonic() - start >= duration_s:
                    break
                self.poll_interval()
                if count is not None and self.interval >= count:
                    break  # the last poll: no wait after it
                if duration_s is not None and time.monotonic() - start + self.interval_s > duration_s:
                    break
                nxt += self.interval_s
                wait = nxt - time.monotonic()
                if wait < 0:
                    nxt = time.monotonic()
                elif stop.wait(wait):
                    break
        finally:
            self.close()

    def close(self) -> None:
        for res in list(self.modules):
            self._drop(res)
        self._pool.shutdown(wait=False)
