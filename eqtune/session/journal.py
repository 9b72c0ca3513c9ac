"""Session journals: append-only JSON lines, the source of truth of an on-site session.

Layout: ``<sessions>/<id>/journal.jsonl`` (plus the profile and report written beside it).

Every record is one JSON object on one line::

    {"v": 1, "seq": 7, "t": 1764446400.123, "type": "measure", ...fields}

``seq`` counts records from 0 without gaps; ``t`` is Unix time (s). Each record is written with a
single ``os.write`` on an ``O_APPEND`` descriptor and ``os.fsync``'d before :meth:`Journal.append`
returns, so a caller that journals *before* touching hardware never loses a decision.

Crash tolerance: a crash in the middle of a write leaves a *torn* last line (no newline or not valid
JSON). Readers skip it and report it (:attr:`JournalContents.torn`); :meth:`Journal.open` (used by
resume) moves the torn bytes to ``journal.torn-<seq>`` beside the journal, truncates the file to the
last complete record and appends a ``recovered`` record saying so. A bad line anywhere *else* is real
corruption and raises :class:`~eqtune.errors.SessionError`.

Record types are documented in :mod:`eqtune.session.config` (``RECORD_TYPES``); the journal itself
only requires ``type`` to be a short identifier.

One process at a time: an exclusive ``flock`` on the journal is held while it is open for writing.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.errors import SessionError
from eqtune.jsonutil import dumps, to_json_value
from eqtune.readers import check_text
from eqtune.session.integrity import Checksums, classify, describe, require_intact

JOURNAL_NAME = "journal.jsonl"
FORMAT_VERSION = 2  # 2: every record sealed with its CRC (eqtune.session.integrity.SEALED_FORMAT)

# Safe session ids: letters, digits, '.', '_', '-'; starts with a letter or digit; at most 64
# characters; no '..' (so an id can never climb out of the sessions folder).
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TYPE_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is a safe folder name, else raise SessionError."""
    if not isinstance(session_id, str) or not _ID_RE.match(session_id) or ".." in session_id \
            or session_id.split(".")[0].lower() in _WINDOWS_RESERVED:
        raise SessionError(
            f"session id {session_id!r} is not a safe name: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit, without '..' or '/' (see `eqtune session list`)"
        )
    return session_id


def new_session_id(label: str = "", now: float | None = None) -> str:
    """A fresh id ``YYYYMMDD-HHMMSS[-label]`` (label reduced to safe characters)."""
    stamp = _dt.datetime.fromtimestamp(now if now is not None else time.time(), _dt.UTC)
    base = stamp.strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", label).strip("-_")[:40]
    return validate_session_id(f"{base}-{slug}" if slug else base)


def session_path(session_id: str, sessions_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<sessions>/<id>`` for a validated id (the folder need not exist)."""
    from eqtune.resources import sessions_dir as _sessions_dir

    return _sessions_dir(sessions_dir) / validate_session_id(session_id)


def encode_record(record: dict[str, Any]) -> bytes:
    """One journal line (UTF-8, ends with a newline), sealed with its checksum (:func:`seal`)."""
    text = dumps(record, separators=(",", ":"), ensure_ascii=False)
    return seal(text.encode("utf-8")) + b"\n"


# Per-record checksum: the line ends with ``,"ck":"<crc32 hex>"}`` where the CRC-32 (zlib.crc32, the
# ISO-HDLC / IEEE 802.3 polynomial) covers the record's bytes without that member, i.e. the line with
# the member cut out. It catches an edited number (accidental or by hand); it is not a signature.
# Which records must carry one, and when a journal without any is really an old one, is the rule of
# eqtune.session.integrity (a journal cannot downgrade itself by dropping its checksums).
_CK_RE = re.compile(rb',"ck":"([0-9a-f]{8})"}$')


def seal(body: bytes) -> bytes:
    """``{...}`` -> ``{...,"ck":"xxxxxxxx"}``: the record with its CRC-32 as the last member."""
    return body[:-1] + b',"ck":"%08x"}' % (zlib.crc32(body) & 0xFFFFFFFF)


def checksum_ok(raw: bytes) -> bool | None:
    """True/False: the line's checksum matches/does not; None: the line has none (older journal)."""
    m = _CK_RE.search(raw)
    if m is None:
        return None
    body = raw[:m.start()] + b"}"
    return "%08x" % (zlib.crc32(body) & 0xFFFFFFFF) == m.group(1).decode()


@dataclass(frozen=True)
class TornLine:
    """The incomplete last line left by a crash in the middle of a write."""

    offset: int  # byte offset where the torn line starts
    size: int  # its length in bytes
    preview: str  # the first bytes, for the message

    def describe(self) -> str:
        return f"torn last record ({self.size} bytes at offset {self.offset}, a crash mid-write) ignored"


@dataclass
class JournalContents:
    records: list[dict[str, Any]]
    torn: TornLine | None = None
    good_size: int = 0  # bytes up to the end of the last complete record
    checksums: Checksums = field(default_factory=Checksums)

    @property
    def bad_checksums(self) -> list[int]:
        """seq of the records that fail the integrity rule: a stale CRC or a missing one."""
        return self.checksums.failing

    @property
    def unsealed(self) -> int:
        """Records without a checksum in a journal from an eqtune before checksums (accepted)."""
        return self.checksums.legacy

    def integrity(self) -> str:
        """One line on the per-record checksums, naming the records that fail."""
        return describe(self.checksums, self.records)

    def of_type(self, *types: str) -> Iterator[dict[str, Any]]:
        return (r for r in self.records if r.get("type") in types)


def read_journal(path: str | os.PathLike[str]) -> JournalContents:
    """Parse a journal file. A torn *last* line is reported, not raised; other damage raises."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise SessionError(f"no journal at {p}: check the session id with `eqtune session list`") from None
    except OSError as exc:
        raise SessionError(f"cannot read journal {p}: {exc.strerror}; check permissions") from None
    records: list[dict[str, Any]] = []
    torn: TornLine | None = None
    pos = 0
    good = 0
    n = len(data)
    line_no = 0
    bad: list[int] = []
    unsealed: list[int] = []
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl
        raw = data[pos:end]
        line_no += 1
        is_last = nl < 0 or nl + 1 >= n
        rec = None
        err = None
        try:
            text = raw.decode("utf-8")
            check_text(text, "record", error=SessionError)  # nesting and digits bounded before parsing
            rec = json.loads(text)
            if not isinstance(rec, dict) or "type" not in rec or "seq" not in rec:
                err = "not a journal record"
        except (UnicodeDecodeError, ValueError, RecursionError, SessionError) as exc:
            err = str(exc)[:200]
        if nl < 0 or err is not None:
            if is_last:
                # a record without its newline is incomplete even if it parses: the fsync'd write
                # always ends with '\n'
                torn = TornLine(pos, n - pos, raw[:40].decode("utf-8", "replace"))
                break
            raise SessionError(
                f"journal {p} is damaged at line {line_no} ({err}); it is not a crash artefact "
                "(only the last line can be torn): keep a copy and report it"
            )
        assert rec is not None
        if not isinstance(rec["seq"], int) or isinstance(rec["seq"], bool) or rec["seq"] != len(records):
            raise SessionError(
                f"journal {p} line {line_no}: record seq {rec['seq']} where {len(records)} was expected; "
                "the file was edited or two writers collided: keep a copy and start a new session"
            )
        ck = checksum_ok(raw)
        if ck is None:
            unsealed.append(len(records))
        else:
            rec.pop("ck", None)
            if not ck:
                bad.append(len(records))
        records.append(rec)
        pos = nl + 1
        good = pos
    return JournalContents(records, torn, good, classify(records, bad, unsealed))


class Journal:
    """An open, append-only session journal (thread-safe appends; one writer process)."""

    def __init__(self, session_dir: Path, contents: JournalContents, fd: int, recovered: TornLine | None):
        self.dir = session_dir
        self.id = session_dir.name
        self.path = session_dir / JOURNAL_NAME
        self.records: list[dict[str, Any]] = contents.records
        self.recovered_torn = recovered
        self._fd: int | None = fd
        self._lock = threading.Lock()
        self._writer = os.write  # replaced in tests by a writer that fails like a full disk

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        sessions_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        *,
        label: str = "",
        metadata: dict[str, Any] | None = None,
        config: dict[str, Any] | None = None,
    ) -> Journal:
        """Create ``<sessions>/<id>/journal.jsonl`` and write the ``session`` record (seq 0)."""
        from eqtune.resources import sessions_dir as _sessions_dir

        root = _sessions_dir(sessions_dir)
        sid = validate_session_id(session_id) if session_id else new_session_id(label)
        base = sid
        for attempt in range(2, 100):
            sdir = root / sid
            try:
                root.mkdir(parents=True, exist_ok=True)
                sdir.mkdir()
                break
            except FileExistsError:
                jp = sdir / JOURNAL_NAME
                if sdir.is_dir() and (not jp.exists() or jp.stat().st_size == 0):
                    # a crash between creating the folder and writing the first record: reuse it
                    if jp.exists():
                        jp.unlink()
                    break
                if session_id:
                    raise SessionError(
                        f"session {sid} already exists in {root}: resume it with `eqtune session resume {sid}` "
                        "or choose another id"
                    ) from None
                sid = validate_session_id(f"{base[:60]}-{attempt}")  # two sessions in the same second
            except OSError as exc:
                raise SessionError(f"cannot create session folder {sdir}: {exc.strerror}; check --sessions") from None
        else:  # pragma: no cover
            raise SessionError(f"cannot find a free session id like {base} in {root}; pass an explicit id")
        _fsync_dir(root)
        fd = _open_locked(sdir / JOURNAL_NAME, create=True)
        j = cls(sdir, JournalContents([]), fd, None)
        from eqtune import __version__ as ver

        j.append(
            "session",
            id=sid,
            format=FORMAT_VERSION,
            created=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            eqtune=ver,
            metadata=metadata or {},
            config=config or {},
        )
        _fsync_dir(sdir)
        return j

    @classmethod
    def open(cls, session_id: str, sessions_dir: str | os.PathLike[str] | None = None, *,
             trusted_keys: list[Any] | None = None, require_signed: bool = False) -> Journal:
        """Open an existing journal for appending (resume); a torn last line is set aside.

        Refuses a journal that fails the integrity rule (:func:`eqtune.session.integrity.require_intact`)."""
        sdir = session_path(session_id, sessions_dir)
        path = sdir / JOURNAL_NAME
        if not path.is_file():
            raise SessionError(
                f"no session {session_id!r} in {sdir.parent}: see `eqtune session list` "
                "(or pass --sessions DIR / set EQTUNE_SESSIONS)"
            )
        fd = _open_locked(path, create=False)
        try:
            contents = read_journal(path)
            if not contents.records:
                raise SessionError(f"session {session_id} has no complete record (the crash happened while it was "
                                   "being created; nothing was measured or written): start a new session")
            if contents.records[0].get("type") != "session":
                raise SessionError(f"journal {path} does not start with a session record; it is not an eqtune journal")
            require_intact(contents, path, "resume it (it would act on values eqtune did not record)",
                           keys=trusted_keys, require_signed=require_signed)
            torn = contents.torn
            if torn is not None:
                data = path.read_bytes()[torn.offset:]
                side = sdir / f"journal.torn-{len(contents.records)}"
                side.write_bytes(data)
                os.ftruncate(fd, contents.good_size)
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        j = cls(sdir, contents, fd, torn)
        if torn is not None:
            j.append("recovered", torn_bytes=torn.size, torn_offset=torn.offset, saved_as=side.name,
                     note="torn last record from a crash mid-write set aside; nothing it described happened")
        return j

    # -- writing -------------------------------------------------------------------------------
    def append(self, type: str, **fields: Any) -> dict[str, Any]:
        """Write one record, flushed and fsync'd before returning; returns the record."""
        if not _TYPE_RE.match(type):
            raise ValueError(f"bad record type {type!r}")
        with self._lock:
            if self._fd is None:
                raise SessionError(f"journal {self.path} is closed; reopen the session to continue")
            rec = {"v": FORMAT_VERSION, "seq": len(self.records), "t": round(time.time(), 6), "type": type}
            rec.update(to_json_value(fields))
            line = encode_record(rec)
            start = None
            try:
                start = os.lseek(self._fd, 0, os.SEEK_END)
                view = memoryview(line)
                while view:
                    written = self._writer(self._fd, view)
                    view = view[written:]
                os.fsync(self._fd)
            except OSError as exc:
                if start is not None:  # a partial line would sit *before* later records: cut it off
                    try:
                        os.ftruncate(self._fd, start)
                    except OSError:  # pragma: no cover - then it is a torn line for the next reader
                        pass
                raise SessionError(
                    f"cannot write journal {self.path}: {exc.strerror}; free disk space or check the "
                    "folder, then resume the session"
                ) from None
            self.records.append(rec)
            return rec

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                try:
                    os.close(self._fd)  # closing releases the flock
                finally:
                    self._fd = None

    @property
    def closed(self) -> bool:
        return self._fd is None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    # -- reading -------------------------------------------------------------------------------
    @property
    def header(self) -> dict[str, Any]:
        return self.records[0]

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") in types]


def _open_locked(path: Path, *, create: bool) -> int:
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    if create:
        flags |= os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise SessionError(f"cannot open journal {path}: {exc.strerror}; check the sessions folder") from None
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - Windows: no advisory lock
        pass
    except OSError:
        os.close(fd)
        raise SessionError(
            f"session {path.parent.name} is open in another eqtune process; close that one first "
            "(only one process may write a journal)"
        ) from None
    return fd


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse directory fsync
        pass
    finally:
        os.close(fd)


@dataclass
class SessionInfo:
    """One line of ``eqtune session list``."""

    id: str
    path: Path
    created: str
    status: str
    metadata: dict[str, Any] = field(default_factory=dict)
    module: str = ""
    lanes: list[int] = field(default_factory=list)
    measurements: int = 0
    torn: bool = False
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "path": str(self.path), "created": self.created, "status": self.status,
            "metadata": self.metadata, "module": self.module, "lanes": self.lanes,
            "measurements": self.measurements, "torn": self.torn, "error": self.error,
        }


def list_sessions(sessions_dir: str | os.PathLike[str] | None = None) -> list[SessionInfo]:
    """Every session folder with a journal, oldest first; damaged journals are listed with an error."""
    from eqtune.resources import sessions_dir as _sessions_dir

    root = _sessions_dir(sessions_dir)
    out: list[SessionInfo] = []
    if not root.is_dir():
        return out
    for sdir in sorted(root.iterdir()):
        path = sdir / JOURNAL_NAME
        if not path.is_file() or not _ID_RE.match(sdir.name):
            continue
        try:
            contents = read_journal(path)
        except SessionError as exc:
            out.append(SessionInfo(sdir.name, sdir, "", "damaged", error=str(exc)))
            continue
        recs = contents.records
        head = recs[0] if recs else {}
        cfg = head.get("config", {}) or {}
        out.append(SessionInfo(
            id=sdir.name,
            path=sdir,
            created=head.get("created", ""),
            status=session_status(recs),
            metadata=head.get("metadata", {}) or {},
            module=str(cfg.get("module", "")),
            lanes=list(cfg.get("lanes", []) or []),
            measurements=sum(1 for r in recs if r.get("type") == "measure"),
            torn=contents.torn is not None,
        ))
    return out


def session_status(records: list[dict[str, Any]]) -> str:
    """``new`` / ``interrupted`` / the last ``end`` record's status (done, aborted, failed)."""
    if not records:
        return "empty"
    status = "new"
    for r in records[1:]:
        if r.get("type") == "end":
            status = str(r.get("status", "done"))
        elif r.get("type") not in ("profile", "report", "push", "watch_verify"):
            status = "interrupted"
    return status


def note_closed_session(session_id: str, sessions_dir: Any, type_: str, **fields: Any) -> None:
    """Append a record to a closed session's journal (skipped if another process holds it)."""
    try:
        with Journal.open(session_id, sessions_dir) as j:
            j.append(type_, **fields)
    except SessionError:
        pass
