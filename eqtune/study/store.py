"""Study results: a SQLite store keyed by the combination, queryable at 10^5-10^6 rows; CSV as an export.

``out_dir/results.sqlite`` holds one row per finished combination in table ``results`` (one typed
column per result field, ``id`` = the combination id as the primary key) and the per-corner margins
in table ``corner_margins`` (``id, corner, baseline, robust``, indexed by corner and robust margin),
so "the 20 worst links at 85 C" is an index scan, not a pass over a CSV. SQLite is in Python's
standard library, needs no server, and one file holds a million rows (a few hundred MB); Parquet
(pyarrow) would add a 100 MB dependency for no query a study needs.

Writing: the coordinating process is the single writer (workers send their rows back, so a remote
worker needs neither a shared filesystem nor write access). The database runs in WAL mode with
``synchronous=FULL``: a committed row survives a SIGKILL or a power cut. Rows are committed in
groups (at most ``commit_every_s`` apart, 0.25 s by default, and always on close), so a 100,000-row
study is not 100,000 fsyncs; a row lost from the last group is computed again by ``--resume``, never
stored twice: the primary key makes a second row for the same combination impossible
(``INSERT OR IGNORE``; ``duplicates_refused`` counts them). ``results.csv`` (the same columns,
floats written as exact ``repr``) is exported when a run ends; an out folder holding only a
``results.csv`` of an earlier eqtune is imported on first open, so ``--resume`` continues it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqtune.errors import InputError
from eqtune.jsonutil import dumps, to_json_value

RESULTS = "results.csv"
DATABASE = "results.sqlite"
SUMMARY = "summary.json"
SCHEMA_VERSION = 2

COLUMNS: tuple[str, ...] = (
    "id", "index", "channel", "profile", "link", "status", "error", "method", "n_evals",
    "baseline_codes", "baseline_margin", "baseline_eh_mv", "baseline_vec_db", "baseline_com_db",
    "baseline_ew_ui",
    "tuned_codes", "tuned_margin", "tuned_eh_mv", "tuned_vec_db", "tuned_com_db", "tuned_ew_ui",
    "robust_codes", "robust_margin", "robust_worst_corner", "robust_eh_mv", "robust_vec_db", "robust_com_db",
    "robust_ew_ui", "corner_margins",
    "floor_ber", "floor_eh_mv", "ber_floor", "fec_frame_error_ratio", "fec_worst_corner", "ai_ready",
    "verdict", "fail_reasons", "elapsed_s", "cpu_s", "worker", "page_faults",
)
# The columns of a results.csv written before the store (imported on first open).
COLUMNS_V1 = COLUMNS[: COLUMNS.index("worker")]
# Columns that legitimately differ between two runs of the same study (timing, which worker).
VOLATILE = ("elapsed_s", "cpu_s", "worker", "page_faults")
INTEGER_COLUMNS = frozenset({"index", "n_evals", "page_faults"})
REAL_COLUMNS = frozenset(c for c in COLUMNS if c.endswith(("_margin", "_eh_mv", "_vec_db", "_com_db", "_ew_ui")))\
    | {"floor_ber", "fec_frame_error_ratio", "elapsed_s", "cpu_s"}


def _sql_type(col: str) -> str:
    return "INTEGER" if col in INTEGER_COLUMNS else "REAL" if col in REAL_COLUMNS else "TEXT"


def _q(col: str) -> str:
    return f'"{col}"'  # "index" is an SQL keyword


def format_value(value: Any) -> str:
    """One CSV cell: floats round-trip exactly (repr), None/NaN -> empty, containers -> sorted JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict | list | tuple):
        return dumps(value, sort_keys=True, separators=(",", ":"))
    if hasattr(value, "item"):  # numpy scalar
        return format_value(to_json_value(value))
    return str(value)


def format_row(row: Mapping[str, Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([format_value(row.get(c)) for c in COLUMNS])
    return buf.getvalue()


def parse_float(text: str | None) -> float | None:
    if text in (None, ""):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _sql_value(col: str, value: Any) -> Any:
    """A row value as stored: numbers as numbers (NULL for None/NaN/empty), everything else as CSV text."""
    if col in INTEGER_COLUMNS or col in REAL_COLUMNS:
        if value is None or value == "":
            return None
        if isinstance(value, str):
            value = float(value) if col in REAL_COLUMNS else int(value)
        elif hasattr(value, "item"):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return float(value) if col in REAL_COLUMNS else int(value)
    text = format_value(value)
    return text if text != "" else None


def _text(col: str, value: Any) -> str:
    """A stored value back as its CSV text (what ``rows()`` hands out, as the CSV did)."""
    if value is None:
        return ""
    if col in REAL_COLUMNS:
        return repr(float(value))
    return str(value)


@dataclass(frozen=True)
class WorstRow:
    """One answer of ``ResultStore.worst``: a combination and its robust-code margin (at the corner asked)."""

    id: str
    channel: str
    profile: str
    corner: str
    margin: float | None
    verdict: str
    method: str = ""  # grid | bayes | screen; a refined screening row shows its full-fidelity method


class ResultStore:
    """The results of one study folder (``out_dir/results.sqlite``); single writer, any number of readers."""

    def __init__(self, out_dir: str | os.PathLike[str], *, commit_every_s: float = 0.25):
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / DATABASE
        self.csv_path = self.out_dir / RESULTS
        self.commit_every_s = commit_every_s
        self.duplicates_refused = 0
        self._db: sqlite3.Connection | None = None
        self._last_commit = 0.0
        self._uncommitted = 0

    # -- connection --------------------------------------------------------------
    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        if not self.path.exists():
            if not create:
                return None
            self.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA busy_timeout = 30000")
            if create:
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = FULL")
                self._create(db)
            elif not db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                db.close()  # the writer is creating it this moment: nothing stored yet
                return None
            self._check(db)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a readable study store ({exc}); use a new --out folder") from None
        return db

    def _create(self, db: sqlite3.Connection) -> None:
        cols = ", ".join(f"{_q(c)} {_sql_type(c)}" + (" PRIMARY KEY" if c == "id" else "") for c in COLUMNS)
        db.execute("BEGIN")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute(f"CREATE TABLE IF NOT EXISTS results ({cols}) WITHOUT ROWID")
        db.execute("CREATE TABLE IF NOT EXISTS corner_margins (id TEXT NOT NULL, corner TEXT NOT NULL, "
                   "baseline REAL, robust REAL, PRIMARY KEY (id, corner)) WITHOUT ROWID")
        db.execute("CREATE INDEX IF NOT EXISTS corner_robust ON corner_margins (corner, robust)")
        db.execute("CREATE INDEX IF NOT EXISTS results_robust ON results (robust_margin)")
        # a screening study's refined rows: the screened row's id -> the full-fidelity row's id
        db.execute("CREATE TABLE IF NOT EXISTS refined (screen_id TEXT PRIMARY KEY, id TEXT NOT NULL) WITHOUT ROWID")
        db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        db.execute("INSERT OR IGNORE INTO meta VALUES ('columns', ?)", (json.dumps(COLUMNS),))
        db.execute("COMMIT")

    def _check(self, db: sqlite3.Connection) -> None:
        try:
            got = db.execute("SELECT value FROM meta WHERE key = 'columns'").fetchone()
        except sqlite3.OperationalError:
            got = None
        if got is None or tuple(json.loads(got[0])) != COLUMNS:
            raise InputError(f"{self.path}: written by another eqtune version (columns differ); "
                             "use a new --out folder")

    # -- reading -------------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.exists() or self.csv_path.exists()

    def _reader(self) -> sqlite3.Connection | None:
        if self._db is not None:
            return self._db
        if not self.path.exists() and self.csv_path.exists():
            self.open().close()  # import a results.csv of an earlier eqtune
        return self._connect(create=False)

    def _select(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        db = self._reader()
        if db is None:
            return []
        try:
            return db.execute(sql, args).fetchall()
        finally:
            if db is not self._db:
                db.close()

    def rows(self) -> list[dict[str, str]]:
        """Every stored row (values as CSV text, as ``results.csv`` holds them), in study order."""
        cols = ", ".join(_q(c) for c in COLUMNS)
        return [{c: _text(c, v) for c, v in zip(COLUMNS, r)}
                for r in self._select(f"SELECT {cols} FROM results ORDER BY {_q('index')}, id")]

    def done_ids(self) -> set[str]:
        return {r[0] for r in self._select("SELECT id FROM results")}

    def count(self) -> int:
        got = self._select("SELECT count(*) FROM results")
        return int(got[0][0]) if got else 0

    def corners(self) -> list[str]:
        """The corner names stored, sorted: one index seek per corner (a study has a handful), not a
        scan of every (combination, corner) row as ``SELECT DISTINCT`` does (~130 ms at 100,000
        combinations x 2 corners, against ~0.1 ms)."""
        db = self._reader()
        if db is None:
            return []
        out: list[str] = []
        try:
            while True:
                got = db.execute("SELECT min(corner) FROM corner_margins WHERE corner > ?",
                                 (out[-1] if out else "",)).fetchone()
                if got is None or got[0] is None:
                    return out
                out.append(got[0])
        finally:
            if db is not self._db:
                db.close()

    def _has_refined(self) -> bool:
        got = self._select("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'refined'")
        return bool(got)

    def worst(self, n: int = 20, *, corner: str | None = None, verdict: str | None = None,
              method: str | None = None, include_refined: bool = False) -> list[WorstRow]:
        """The ``n`` finished combinations with the lowest robust-code margin: at ``corner`` (a corner
        name, e.g. ``85C``), else at each combination's worst corner; ``verdict`` filters (pass/fail),
        ``method`` too (``screen``: the screened rows only). A screened row that has been refined
        (``link_refined``) is answered by its full-fidelity row; ``include_refined`` keeps both."""
        where, args = ["r.status = 'ok'"], []
        if verdict:
            where.append("r.verdict = ?")
            args.append(verdict)
        if method:
            where.append("r.method = ?")
            args.append(method)
        if not include_refined and self._has_refined():
            where.append("r.id NOT IN (SELECT screen_id FROM refined)")
        if corner is not None:
            sql = ("SELECT r.id, r.channel, r.profile, c.corner, c.robust, r.verdict, r.method FROM corner_margins c "
                   "JOIN results r ON r.id = c.id WHERE c.corner = ? AND c.robust IS NOT NULL AND "
                   + " AND ".join(where) + " ORDER BY c.robust, r.id LIMIT ?")
            got = self._select(sql, (corner, *args, int(n)))
        else:
            sql = ("SELECT r.id, r.channel, r.profile, r.robust_worst_corner, r.robust_margin, r.verdict, r.method "
                   "FROM results r WHERE r.robust_margin IS NOT NULL AND " + " AND ".join(where)
                   + " ORDER BY r.robust_margin, r.id LIMIT ?")
            got = self._select(sql, (*args, int(n)))
        return [WorstRow(r[0], r[1] or "", r[2] or "", r[3] or "", r[4], r[5] or "", r[6] or "") for r in got]

    def refined_map(self) -> dict[str, str]:
        """Screened row id -> its full-fidelity row id, for every refined row of a screening study."""
        if not self._has_refined():
            return {}
        return {a: b for a, b in self._select("SELECT screen_id, id FROM refined")}

    # -- writing -------------------------------------------------------------------
    def open(self) -> ResultStore:
        if self._db is None:
            fresh = not self.path.exists()
            self._db = self._connect(create=True)
            self._last_commit = time.monotonic()
            if fresh and self.csv_path.exists():
                self._import_csv()
        return self

    def _import_csv(self) -> None:
        text = self.csv_path.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):  # a partial last line of a killed run
            text = text[: text.rfind("\n") + 1]
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None:
            return
        if tuple(reader.fieldnames) not in (COLUMNS, COLUMNS_V1):
            self.close()
            self.path.unlink(missing_ok=True)
            raise InputError(f"{self.csv_path}: written by another eqtune version (columns differ); "
                             "use a new --out folder")
        for r in reader:
            self.append(r)
        self.commit()

    def append(self, row: Mapping[str, Any]) -> bool:
        """Store one finished combination; False (and nothing stored) when its id is stored already."""
        assert self._db is not None, "ResultStore.open() first"
        if self._uncommitted == 0:
            self._db.execute("BEGIN IMMEDIATE")
        values = [_sql_value(c, row.get(c)) for c in COLUMNS]
        cur = self._db.execute(f"INSERT OR IGNORE INTO results VALUES ({', '.join('?' * len(COLUMNS))})", values)
        added = cur.rowcount == 1
        if added:
            margins = row.get("corner_margins")
            if isinstance(margins, str):
                margins = json.loads(margins) if margins else {}
            for corner, m in (margins or {}).items():
                self._db.execute("INSERT OR IGNORE INTO corner_margins VALUES (?, ?, ?, ?)",
                                 (str(row["id"]), str(corner), _sql_value("baseline_margin", m.get("baseline")),
                                  _sql_value("robust_margin", m.get("robust"))))
        else:
            self.duplicates_refused += 1
        self._uncommitted += 1
        if time.monotonic() - self._last_commit >= self.commit_every_s:
            self.commit()
        return added

    def link_refined(self, screen_id: str, full_id: str) -> None:
        """Record that the screened row ``screen_id`` was computed again at full fidelity as ``full_id``
        (stored with ``append``, in the same commit group: a SIGKILL keeps both or neither link)."""
        assert self._db is not None, "ResultStore.open() first"
        if self._uncommitted == 0:
            self._db.execute("BEGIN IMMEDIATE")
            self._uncommitted += 1
        self._db.execute("INSERT OR IGNORE INTO refined VALUES (?, ?)", (str(screen_id), str(full_id)))

    def commit(self) -> None:
        if self._db is not None and self._uncommitted:
            self._db.execute("COMMIT")
            self._uncommitted = 0
        self._last_commit = time.monotonic()

    def close(self) -> None:
        if self._db is not None:
            self.commit()
            self._db.close()
            self._db = None

    def __enter__(self) -> ResultStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- export ----------------------------------------------------------------------
    def export_csv(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write every row as CSV (``results.csv`` by default) via a temporary file + fsync + rename."""
        target = Path(path) if path is not None else self.csv_path
        tmp = target.with_name(target.name + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(format_row(dict(zip(COLUMNS, COLUMNS))))
            for row in self.iter_rows():
                fh.write(format_row(row))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        return target

    def iter_rows(self) -> Iterator[dict[str, str]]:
        yield from self.rows()


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON to ``path`` via a temporary file + fsync + rename (never a half-written summary)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(dumps(data, indent=2, sort_keys=True))
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def comparable(rows: Iterable[Mapping[str, str]]) -> list[tuple[str, ...]]:
    """Rows sorted by id without the volatile (timing) columns: equal for equal studies."""
    keep = [c for c in COLUMNS if c not in VOLATILE]
    return sorted(tuple(r.get(c, "") for c in keep) for r in rows)
