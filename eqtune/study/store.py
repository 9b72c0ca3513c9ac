"""Incremental, crash-safe study results: one CSV row per finished combination + a JSON summary.

Every row is written by the coordinating process only, as one ``write`` of a complete line followed
by ``flush`` and ``os.fsync``: after a SIGKILL the file holds every finished row and at most one
partial last line, which ``ResultStore.open`` cuts off before appending again. Rows are keyed by the
combination id, so a resumed study skips exactly the finished combinations.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eqtune.errors import InputError
from eqtune.jsonutil import dumps, to_json_value

RESULTS = "results.csv"
SUMMARY = "summary.json"

COLUMNS: tuple[str, ...] = (
    "id", "index", "channel", "profile", "link", "status", "error", "method", "n_evals",
    "baseline_codes", "baseline_margin", "baseline_eh_mv", "baseline_vec_db", "baseline_com_db",
    "baseline_ew_ui",
    "tuned_codes", "tuned_margin", "tuned_eh_mv", "tuned_vec_db", "tuned_com_db", "tuned_ew_ui",
    "robust_codes", "robust_margin", "robust_worst_corner", "robust_eh_mv", "robust_vec_db", "robust_com_db",
    "robust_ew_ui", "corner_margins",
    "floor_ber", "floor_eh_mv", "ber_floor", "fec_frame_error_ratio", "fec_worst_corner", "ai_ready",
    "verdict", "fail_reasons", "elapsed_s", "cpu_s",
)
# Columns that legitimately differ between two runs of the same study (timing).
VOLATILE = ("elapsed_s", "cpu_s")


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


class ResultStore:
    """Append-only results CSV in ``out_dir``; single writer (the coordinating process)."""

    def __init__(self, out_dir: str | os.PathLike[str]):
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / RESULTS
        self._fh: io.TextIOWrapper | None = None

    # -- reading ---------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def rows(self) -> list[dict[str, str]]:
        """Every complete row (a partial last line from a killed run is ignored)."""
        if not self.path.exists():
            return []
        text = self.path.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None:
            return []
        if tuple(reader.fieldnames) != COLUMNS:
            raise InputError(f"{self.path}: written by another eqtune version (columns differ); "
                             "use a new --out folder")
        out, seen = [], set()
        for r in reader:
            if r["id"] in seen:  # cannot happen through this class; tolerate hand edits
                continue
            seen.add(r["id"])
            out.append(r)
        return out

    def done_ids(self) -> set[str]:
        return {r["id"] for r in self.rows()}

    # -- writing ---------------------------------------------------------------
    def open(self) -> ResultStore:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self._truncate_partial_line()
        fresh = not self.exists()
        self._fh = open(self.path, "a", encoding="utf-8", newline="")
        if fresh:
            self._write(format_row(dict(zip(COLUMNS, COLUMNS))))
        return self

    def _truncate_partial_line(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(self.path, "r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
                fh.flush()
                os.fsync(fh.fileno())

    def _write(self, text: str) -> None:
        assert self._fh is not None, "ResultStore.open() first"
        self._fh.write(text)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, row: Mapping[str, Any]) -> None:
        self._write(format_row(row))

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ResultStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


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
