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
from eqtune.watch.detect import DetectConfig, Finding, assess_lane, suggest_action
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

    def risk(self, cfg: DetectConfig) -> float:
        """Larger = riskier: 100 per finding, plus how close eSNR is to its threshold (dB)."""
        score = 100.0 * len(self.findings)
        if self.esnr_db is not None:
            score += max(0.0, 10.0 - (self.esnr_db - cfg.esnr_threshold))
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
                 on_module: Callable[[ModuleSample], None] | None = None) -> None:
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
        self.raised: set[tuple[str, int, str]] = set()
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
            except (EqtuneError, OSError) as exc:
                return ModuleSample(target.resource, self.clock(), None,
                                    error=f"open: {str(exc).splitlines()[0][:300]}")
        s = read_module(mod, target.resource, target.lanes, clock=self.clock)
        if not s.ok:  # reopen next time (adapter reset, module re-seated)
            self._drop(target.resource)
        return s

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
        lanes, new_flags, active = self._detect(samples)
        if self.store is not None:
            self.store.append_interval(self.interval, ts, samples, new_flags)
        if self.exporter is not None:
            self.exporter.update(self.interval, samples, active)
        rep = IntervalReport(self.interval, ts, samples, new_flags, active, lanes, time.perf_counter() - t0)
        if self.on_interval is not None:
            self.on_interval(rep)
        return rep

    def _detect(self, samples: list[ModuleSample]):
        by_res = {t.resource: t for t in self.targets}
        lanes: list[LaneStatus] = []
        new_flags: list[dict[str, Any]] = []
        active: set[tuple[str, int, str]] = set()
        keep = self.cfg.window_s * 1.5
        for s in samples:
            tgt = by_res[s.resource]
            for lane, vals in s.lanes.items():
                key = (s.resource, lane)
                h = self.history.setdefault(key, LaneHistory())
                if s.ok:
                    h.append(s.ts, s.temperature_c, vals.get("esnr_db"), vals.get("prefec_ber"))
                h.trim(s.ts - keep)
                arr = h.array()
                findings = assess_lane(arr, self.cfg)
                action = suggest_action(findings, channel=tgt.channel, profile=tgt.profile, hot_c=self.cfg.hot_c)
                last = arr[-1] if len(arr) else np.array([s.ts, np.nan, np.nan, np.nan])
                st = LaneStatus(s.resource, lane, finite_or_none(last[1]), finite_or_none(last[2]), finite_or_none(last[3]), findings, action,
                                _present(arr[:, 2]), _present(arr[:, 3]), _present(arr[:, 1]))
                lanes.append(st)
                for f in findings:
                    fk = (s.resource, lane, f.kind)
                    active.add(fk)
                    if fk not in self.raised:
                        self.raised.add(fk)
                        new_flags.append({"ts": s.ts, "resource": s.resource, "lane": lane, "kind": f.kind,
                                          "metric": f.metric, "evidence": f.evidence, "action": action,
                                          "labels": tgt.labels})
        lanes.sort(key=lambda x: -x.risk(self.cfg))
        return lanes, new_flags, active

    # ------------------------------------------------------------------ the loop
    def run(self, *, count: int | None = None, duration_s: float | None = None,
            stop: threading.Event | None = None) -> None:
        """Poll until ``count`` intervals, ``duration_s`` seconds or ``stop`` is set. Intervals start
        on a fixed schedule; an interval that overruns makes the next one start at once (no burst of
        catch-up polls)."""
        stop = stop or threading.Event()
        start = time.monotonic()
        nxt = start
        try:
            while not stop.is_set():
                if count is not None and self.interval >= count:
                    break
                if duration_s is not None and time.monotonic() - start >= duration_s:
                    break
                self.poll_interval()
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
