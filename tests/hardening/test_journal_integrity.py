"""Journal: every record carries a CRC-32; an edited number is reported on resume
(and by `session show`), journals written before checksums still resume, and a failed write leaves no
partial record in front of later ones."""

from __future__ import annotations

import errno
import json
import os

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.errors import SessionError
from eqtune.session.journal import Journal, read_journal


def _journal(tmp_path, sid="s"):
    j = Journal.create(tmp_path, sid, config={"module": "emu:c2m-10in", "lanes": [1]})
    j.append("original", codes={"1": {"rx_pre": 1, "rx_post": 2}})
    j.append("measure", group=0, n=0, lanes={"1": {"codes": {"rx_pre": 3}, "margin": 4.25}})
    j.close()
    return tmp_path / sid / "journal.jsonl"


def test_records_are_sealed_and_read_back_clean(tmp_path):
    path = _journal(tmp_path)
    lines = path.read_bytes().splitlines()
    assert all(b',"ck":"' in ln for ln in lines)
    c = read_journal(path)
    assert not c.bad_checksums and "ck" not in c.records[2] and c.records[2]["lanes"]["1"]["margin"] == 4.25


def test_edited_number_is_reported_and_resume_refused(tmp_path):
    path = _journal(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"margin":4.25', b'"margin":9.25'))
    c = read_journal(path)
    assert c.bad_checksums == [2] and "fail their checksum" in c.integrity()
    with pytest.raises(SessionError, match="fail their checksum"):
        Journal.open("s", tmp_path)
    r = CliRunner().invoke(main, ["session", "show", "s", "--sessions", str(tmp_path)])
    assert "fail their checksum" in r.output


def test_removed_checksum_counts_as_an_edit(tmp_path):
    path = _journal(tmp_path)
    lines = path.read_bytes().splitlines()
    rec = json.loads(lines[2])
    del rec["ck"]
    rec["lanes"]["1"]["margin"] = 9.0
    lines[2] = json.dumps(rec, separators=(",", ":")).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert read_journal(path).bad_checksums == [2]


def _legacy(path, created="2026-11-20T10:00:00+00:00", t=1763632800.0):
    """Rewrite a journal as an eqtune before checksums wrote it: no "ck", format 1, old time stamps."""
    old = []
    for ln in path.read_bytes().splitlines():
        rec = json.loads(ln)
        rec.pop("ck", None)
        rec["v"], rec["t"] = 1, t + rec["seq"]
        if rec["seq"] == 0:
            rec["format"], rec["created"] = 1, created
        old.append(json.dumps(rec, separators=(",", ":")).encode())
    path.write_bytes(b"\n".join(old) + b"\n")


def test_old_journal_without_checksums_still_resumes(tmp_path):
    path = _journal(tmp_path)
    _legacy(path)
    c = read_journal(path)
    assert not c.bad_checksums and c.unsealed == 3
    j = Journal.open("s", tmp_path)
    j.append("resume", pid=1)
    j.close()
    assert read_journal(path).records[-1]["type"] == "resume"


def test_a_journal_cannot_pass_for_an_old_one_by_dropping_every_checksum(tmp_path):
    path = _journal(tmp_path)
    stripped = [json.loads(ln) for ln in path.read_bytes().splitlines()]
    for rec in stripped:
        rec.pop("ck")
    path.write_bytes(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in stripped))
    c = read_journal(path)  # header still says format 2
    assert c.bad_checksums == [0, 1, 2] and "format 2" in c.integrity()
    _legacy(path, created="2026-12-24T10:00:00+00:00")  # format 1, but created after checksums came
    assert "created 2026-12-24" in read_journal(path).integrity()
    _legacy(path, t=1796162851.0)  # an old creation date, records written later
    assert "time stamps" in read_journal(path).integrity()
    with pytest.raises(SessionError, match="checksums were removed"):
        Journal.open("s", tmp_path)


def test_failed_write_leaves_no_partial_record(tmp_path):
    path = _journal(tmp_path)
    j = Journal.open("s", tmp_path)
    calls = {"n": 0}

    def half_then_full(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            return os.write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, "No space left on device")

    j._writer = half_then_full
    with pytest.raises(SessionError, match="free disk space"):
        j.append("measure", group=0, n=1, lanes={})
    j._writer = os.write
    j.append("measure", group=0, n=2, lanes={})  # space again: the journal goes on, well-formed
    j.close()
    c = read_journal(path)
    assert c.torn is None and [r["seq"] for r in c.records] == [0, 1, 2, 3] and c.records[3]["n"] == 2
