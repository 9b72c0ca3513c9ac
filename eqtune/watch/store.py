"""SQLite time series of a watch: one file (default ``<sessions>/watch.sqlite``), append-only.

Durability: WAL journal, ``synchronous=FULL`` (the WAL is fsync'd at every commit), and one
transaction per polling interval holding every module's rows (SQLite docs, "Write-Ahead Logging"
and "PRAGMA synchronous"). A SIGKILL or power cut therefore loses at most the interval whose
transaction had not committed; the file is never left half-written. Several watches may append to
one file (each run has its own ``run_id``); readers never block the writer.

Tables
------
``runs(run_id, started, argv)``; ``intervals(run_id, interval, ts)`` (one row per committed
interval); ``polls(run_id, interval, ts, resource, temperature_c, ok, error, duration_s)``;
``samples(run_id, interval, ts, resource, lane, observable, value)`` (advertised values only);
``advertised(resource, lane, observable, advertised)`` (0 = the module does not advertise it: shown
as "not advertised", never 0); ``flags(run_id, interval, ts, resource, lane, kind, evidence, action)``
with ``evidence`` a JSON object.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eqtune.errors import EqtuneError, InputError
from eqtune.watch.observe import ModuleSample


class WatchStoreError(EqtuneError):
    """The SQLite store cannot take an interval (disk full, file removed, read-only medium)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs(run_id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, argv TEXT);
CREATE TABLE IF NOT EXISTS intervals(run_id INTEGER NOT NULL, interval INTEGER NOT NULL, ts REAL NOT NULL,
    PRIMARY KEY(run_id, interval));
CREATE TABLE IF NOT EXISTS polls(run_id INTEGER NOT NULL, interval INTEGER NOT NULL, ts REAL NOT NULL,
    resource TEXT NOT NULL, temperature_c REAL, ok INTEGER NOT NULL, error TEXT, duration_s REAL);
CREATE TABLE IF NOT EXISTS samples(run_id INTEGER NOT NULL, interval INTEGER NOT NULL, ts REAL NOT NULL,
    resource TEXT NOT NULL, lane INTEGER NOT NULL, observable TEXT NOT NULL, value REAL NOT NULL);
CREATE INDEX IF NOT EXISTS samples_key ON samples(resource, lane, observable, ts);
CREATE TABLE IF NOT EXISTS advertised(resource TEXT NOT NULL, lane INTEGER NOT NULL, observable TEXT NOT NULL,
    advertised INTEGER NOT NULL, PRIMARY KEY(resource, lane, observable));
CREATE TABLE IF NOT EXISTS flags(run_id INTEGER NOT NULL, interval INTEGER NOT NULL, ts REAL NOT NULL,
    resource TEXT NOT NULL, lane INTEGER NOT NULL, kind TEXT NOT NULL, evidence TEXT NOT NULL, action TEXT);
CREATE INDEX IF NOT EXISTS samples_ts ON samples(ts);
CREATE TABLE IF NOT EXISTS latest(resource TEXT NOT NULL, lane INTEGER NOT NULL, observable TEXT NOT NULL,
    ts REAL NOT NULL, value REAL NOT NULL, PRIMARY KEY(resource, lane, observable));
CREATE INDEX IF NOT EXISTS latest_obs ON latest(observable, value);
CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, resource TEXT NOT NULL, lane INTEGER NOT NULL,
    observable TEXT NOT NULL, UNIQUE(resource, lane, observable));
CREATE TABLE IF NOT EXISTS samples_agg(series INTEGER NOT NULL, block_ts INTEGER NOT NULL, block_s INTEGER NOT NULL,
    n INTEGER NOT NULL, vmin REAL NOT NULL, vmax REAL NOT NULL, vmean REAL NOT NULL,
    PRIMARY KEY(series, block_ts)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS acks(id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, resource TEXT NOT NULL,
    lane INTEGER NOT NULL, note TEXT);
"""

#: retention defaults: raw samples for 1 day, then min/max/mean per 15-minute block (30 days of a
#: 256-lane host at 60 s: ~0.6 GB, benchmarks/bench_watch_store.py)
RAW_DAYS = 1.0
BLOCK_S = 900.0


def default_path(sessions: str | Path | None = None) -> Path:
    from eqtune.resources import sessions_dir

    return sessions_dir(sessions) / "watch.sqlite"


class WatchStore:
    """Append-only store. ``WatchStore(path)`` opens (creating) the file; ``start_run(argv)`` then
    ``append_interval(interval, samples, flags)`` once per interval; ``close()``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None,
                                      check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(SCHEMA)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise InputError(f"watch store {self.path}: {exc}; give a writable SQLite file with --db") from None
        self.run_id: int | None = None
        self._advertised: dict[tuple[str, int, str], int] = {}

    def start_run(self, argv: Iterable[str] = ()) -> int:
        try:
            cur = self.db.execute("INSERT INTO runs(started, argv) VALUES(?, ?)", (time.time(), json.dumps(list(argv))))
            self.run_id = int(cur.lastrowid or 0)
            self._ack_seen = int(self.db.execute("SELECT COALESCE(MAX(id), 0) FROM acks").fetchone()[0])
        except (sqlite3.Error, TypeError, ValueError) as exc:
            raise InputError(f"watch store {self.path}: not a usable eqtune watch store ({exc}); "
                             "give another file with --db") from None
        return self.run_id

    def new_acks(self) -> list[tuple[str, int]]:
        """(resource, lane) acknowledged (``eqtune watch ack``) since the last call."""
        try:
            rows = self.db.execute("SELECT id, resource, lane FROM acks WHERE id > ? ORDER BY id",
                                   (getattr(self, "_ack_seen", 0),)).fetchall()
        except sqlite3.Error:
            return []
        if rows:
            self._ack_seen = int(rows[-1][0])
        return [(str(r), int(ln)) for _i, r, ln in rows if isinstance(ln, int)]

    def compact(self, now: float, raw_days: float = RAW_DAYS, block_s: float = BLOCK_S) -> int:
        """Retention: samples older than ``raw_days`` become one min/max/mean row per ``block_s``
        block (merged with a block already there, counts weighted) and the raw rows go; one
        transaction. Returns the raw rows removed."""
        cutoff = now - raw_days * 86400.0
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR IGNORE INTO series(resource, lane, observable) SELECT DISTINCT resource, lane, "
                       "observable FROM samples WHERE ts < ?", (cutoff,))
            db.execute(
                "INSERT INTO samples_agg(series, block_ts, block_s, n, vmin, vmax, vmean) "
                "SELECT r.id, CAST(s.ts / ? AS INTEGER) * ?, ?, COUNT(*), MIN(s.value), MAX(s.value), AVG(s.value) "
                "FROM samples s JOIN series r ON r.resource = s.resource AND r.lane = s.lane AND r.observable = s.observable "
                "WHERE s.ts < ? GROUP BY r.id, CAST(s.ts / ? AS INTEGER) "
                "ON CONFLICT(series, block_ts) DO UPDATE SET "
                "vmean = (vmean * n + excluded.vmean * excluded.n) / (n + excluded.n), n = n + excluded.n, "
                "vmin = MIN(vmin, excluded.vmin), vmax = MAX(vmax, excluded.vmax)",
                (int(block_s), int(block_s), int(block_s), cutoff, int(block_s)))
            gone = db.execute("DELETE FROM samples WHERE ts < ?", (cutoff,)).rowcount
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise WatchStoreError(f"watch store {self.path}: {exc} while compacting; the raw samples are kept") from None
        return int(gone)

    def append_interval(self, interval: int, ts: float, samples: list[ModuleSample],
                        flags: list[dict[str, Any]] = ()) -> None:
        """One transaction: the interval row, its polls, samples, advertised changes and flags."""
        if self.run_id is None:
            self.start_run()
        rid = self.run_id
        polls, rows, adv = [], [], []
        for s in samples:
            polls.append((rid, interval, s.ts, s.resource, s.temperature_c, int(s.ok), s.error, s.duration_s))
            for lane, vals in s.lanes.items():
                for obs, v in vals.items():
                    if v is not None:
                        rows.append((rid, interval, s.ts, s.resource, lane, obs, v))
                    state = int(v is not None)
                    key = (s.resource, lane, obs)
                    if s.ok and self._advertised.get(key) != state:
                        self._advertised[key] = state
                        adv.append((s.resource, lane, obs, state))
        fl = [(rid, interval, f["ts"], f["resource"], f["lane"], f["kind"], json.dumps(f["evidence"]),
               f.get("action")) for f in flags]
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT INTO intervals VALUES(?, ?, ?)", (rid, interval, ts))
                db.executemany("INSERT INTO polls VALUES(?, ?, ?, ?, ?, ?, ?, ?)", polls)
                db.executemany("INSERT INTO samples VALUES(?, ?, ?, ?, ?, ?, ?)", rows)
                db.executemany("INSERT OR REPLACE INTO advertised VALUES(?, ?, ?, ?)", adv)
                db.executemany("INSERT INTO flags VALUES(?, ?, ?, ?, ?, ?, ?, ?)", fl)
                db.executemany("INSERT OR REPLACE INTO latest VALUES(?, ?, ?, ?, ?)", [r[3:5] + (r[5], r[2], r[6]) for r in rows])
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except (sqlite3.Error, TypeError, ValueError) as exc:
            lost = {(a[0], a[1], a[2]) for a in adv}  # not stored: re-send with the next interval
            self._advertised = {k: v for k, v in self._advertised.items() if k not in lost}
            raise WatchStoreError(
                f"watch store {self.path}: {exc} while writing interval {interval}; intervals before it are "
                "safe in the file; free space or give another --db, then run again") from None

    def close(self) -> None:
        self.db.close()


# ------------------------------------------------------------------------------ readers
def connect_readonly(path: str | Path) -> sqlite3.Connection:
    p = Path(path)
    if not p.exists():
        raise InputError(f"watch store {p} does not exist: run `eqtune watch` first or give --db")
    return sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=30.0)


def latest_values(db: sqlite3.Connection, run_id: int | None = None) -> dict[tuple[str, int, str], float]:
    """The newest value of every (resource, lane, observable), of any run: from the ``latest`` table
    (one row each, kept by every interval's transaction); with ``run_id``, that run's own."""
    if run_id is None:
        rows = db.execute("SELECT resource, lane, observable, value FROM latest")
    else:  # one run's own newest values (a scan of its samples)
        rows = db.execute(
            "SELECT s.resource, s.lane, s.observable, s.value FROM samples s JOIN "
            "(SELECT resource, lane, observable, MAX(interval) AS iv FROM samples WHERE run_id = ? "
            " GROUP BY resource, lane, observable) m ON s.resource = m.resource AND s.lane = m.lane "
            "AND s.observable = m.observable AND s.interval = m.iv WHERE s.run_id = ?", (run_id, run_id))
    return {(r, int(ln), o): float(v) for r, ln, o, v in rows}


def latest_temperatures(db: sqlite3.Connection, run_id: int | None = None) -> dict[str, float]:
    if run_id is None:
        run_id = db.execute("SELECT MAX(run_id) FROM runs").fetchone()[0]
    rows = db.execute("SELECT p.resource, p.temperature_c FROM polls p JOIN (SELECT resource, MAX(interval) AS iv "
                      "FROM polls WHERE run_id = ? AND ok = 1 GROUP BY resource) m ON p.resource = m.resource "
                      "AND p.interval = m.iv WHERE p.run_id = ?", (run_id, run_id))
    return {r: float(t) for r, t in rows if t is not None}


def flagged_lanes(db: sqlite3.Connection, run_id: int | None = None) -> dict[tuple[str, int], list[dict[str, Any]]]:
    if run_id is None:
        run_id = db.execute("SELECT MAX(run_id) FROM runs").fetchone()[0]
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for ts, res, lane, kind, ev, action in db.execute(
            "SELECT ts, resource, lane, kind, evidence, action FROM flags WHERE run_id = ? ORDER BY ts", (run_id,)):
        out.setdefault((res, int(lane)), []).append({"ts": ts, "kind": kind, "evidence": json.loads(ev),
                                                    "action": action})
    return out


def worst_lanes(db: sqlite3.Connection, observable: str = "prefec_ber", n: int = 10,
                ascending: bool = False) -> list[tuple[str, int, float, float]]:
    """The fleet's ``n`` worst lanes by the newest ``observable`` (highest BER; lowest with
    ``ascending``, e.g. eSNR): (resource, lane, value, ts), from the ``latest`` table (one row per
    lane and observable, indexed by value: one index range scan whatever the store's age)."""
    order = "ASC" if ascending else "DESC"
    rows = db.execute(f"SELECT resource, lane, value, ts FROM latest WHERE observable = ? ORDER BY value {order} "
                      "LIMIT ?", (observable, int(n)))
    return [(str(r), int(ln), float(v), float(t)) for r, ln, v, t in rows]


def history(db: sqlite3.Connection, resource: str, lane: int, observable: str = "prefec_ber",
            since: float = 0.0) -> list[dict[str, Any]]:
    """One lane's series, oldest first: downsampled blocks (min/max/mean, n) then raw samples."""
    out: list[dict[str, Any]] = []
    for bts, bs, n, lo, hi, mean in db.execute(
            "SELECT a.block_ts, a.block_s, a.n, a.vmin, a.vmax, a.vmean FROM samples_agg a JOIN series r ON r.id = a.series "
            "WHERE r.resource = ? AND r.lane = ? AND r.observable = ? AND a.block_ts + a.block_s >= ? ORDER BY a.block_ts",
            (resource, lane, observable, since)):
        out.append({"ts": bts, "block_s": bs, "n": n, "min": lo, "max": hi, "mean": mean})
    for ts, v in db.execute("SELECT ts, value FROM samples WHERE resource = ? AND lane = ? AND observable = ? "
                            "AND ts >= ? ORDER BY ts", (resource, lane, observable, since)):
        out.append({"ts": ts, "value": v})
    return out


def acknowledge(path: str | Path, resource: str, lane: int, note: str = "") -> None:
    """Record an acknowledgement for a running (or the next) watch on this store to apply."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"watch store {p} does not exist: run `eqtune watch` first or give --db")
    try:
        db = sqlite3.connect(str(p), timeout=30.0)
        with db:
            db.executescript(SCHEMA)
            db.execute("INSERT INTO acks(ts, resource, lane, note) VALUES(?, ?, ?, ?)", (time.time(), resource, lane, note))
        db.close()
    except sqlite3.Error as exc:
        raise InputError(f"watch store {p}: {exc}; give the store the watch writes (--db)") from None
