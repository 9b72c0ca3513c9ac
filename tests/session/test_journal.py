from __future__ import annotations

import json

import pytest

from eqtune.errors import SessionError
from eqtune.session.journal import Journal, list_sessions, read_journal, validate_session_id


@pytest.mark.parametrize("bad", ["", "..", "../x", "a/b", "a\\b", ".hidden", "x..y", "a" * 65, "con", "a b",
                                 "-x", "a\x00b", "/etc"])
def test_unsafe_ids_refused(bad):
    with pytest.raises(SessionError):
        validate_session_id(bad)


def test_safe_ids():
    for ok in ["20261129-201500-rack12", "A_b.c-1", "x"]:
        assert validate_session_id(ok) == ok


def test_append_read_and_sequence(tmp_path):
    j = Journal.create(tmp_path, "s1", metadata={"site": "Lab"})
    j.append("measure", n=0, margin=1.5, bad=float("nan"))
    j.close()
    c = read_journal(tmp_path / "s1" / "journal.jsonl")
    assert [r["seq"] for r in c.records] == [0, 1]
    assert c.records[1]["bad"] is None and c.torn is None
    assert c.records[0]["metadata"] == {"site": "Lab"}
    with pytest.raises(SessionError, match="already exists"):
        Journal.create(tmp_path, "s1")


def test_torn_last_line_tolerated_and_recovered(tmp_path):
    j = Journal.create(tmp_path, "s2")
    j.append("measure", n=0)
    j.close()
    p = tmp_path / "s2" / "journal.jsonl"
    with open(p, "ab") as fh:
        fh.write(b'{"v":1,"seq":2,"t":1,"type":"meas')
    c = read_journal(p)
    assert len(c.records) == 2 and c.torn is not None and c.torn.size > 0
    j = Journal.open("s2", tmp_path)
    assert j.recovered_torn is not None
    assert j.records[-1]["type"] == "recovered"
    j.append("measure", n=1)
    j.close()
    c = read_journal(p)
    assert c.torn is None and [r["type"] for r in c.records] == ["session", "measure", "recovered", "measure"]
    assert (tmp_path / "s2" / "journal.torn-2").read_bytes().startswith(b'{"v":1')
    # a complete JSON line without its newline is torn too (the write did not finish)
    with open(p, "ab") as fh:
        fh.write(json.dumps({"v": 1, "seq": 4, "t": 1, "type": "x"}).encode())
    assert read_journal(p).torn is not None


def test_damage_in_the_middle_is_an_error(tmp_path):
    j = Journal.create(tmp_path, "s3")
    j.append("a1")
    j.append("a2")
    j.close()
    p = tmp_path / "s3" / "journal.jsonl"
    lines = p.read_bytes().split(b"\n")
    lines[1] = b"garbage"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionError, match="damaged at line 2"):
        read_journal(p)


def test_one_writer_only(tmp_path):
    j = Journal.create(tmp_path, "s4")
    with pytest.raises(SessionError, match="another eqtune process"):
        Journal.open("s4", tmp_path)
    j.close()
    Journal.open("s4", tmp_path).close()


def test_list_sessions(tmp_path):
    Journal.create(tmp_path, "a", metadata={"site": "X"}, config={"module": "emu:x", "lanes": [1]}).close()
    j = Journal.create(tmp_path, "b")
    j.append("end", status="done")
    j.close()
    (tmp_path / "not-a-session").mkdir()
    infos = {i.id: i for i in list_sessions(tmp_path)}
    assert set(infos) == {"a", "b"}
    assert infos["a"].status == "new" and infos["a"].module == "emu:x"
    assert infos["b"].status == "done"
    assert list_sessions(tmp_path / "nope") == []


def test_crash_during_creation_is_recoverable(tmp_path):
    (tmp_path / "s5").mkdir()  # crash after mkdir, before the journal file
    Journal.create(tmp_path, "s5").close()
    (tmp_path / "s6").mkdir()
    (tmp_path / "s6" / "journal.jsonl").write_bytes(b'{"v":1,"seq":0,"t":1,"type":"sess')  # torn first record
    with pytest.raises(SessionError, match="no complete record"):
        Journal.open("s6", tmp_path)


def test_a_damaged_config_in_the_header_is_refused_in_one_line():
    """A journal header whose config lost its module or is not a mapping (found by the journal fuzz test
    once): one InputError line, never a TypeError / AttributeError traceback."""
    import pytest

    from eqtune.errors import InputError
    from eqtune.session.config import LiveConfig

    with pytest.raises(InputError, match="names no module"):
        LiveConfig.from_dict({"lanes": [1, 2], "budget": 4})
    with pytest.raises(InputError, match="is list, not a mapping"):
        LiveConfig.from_dict([1, 2])  # type: ignore[arg-type]
    assert LiveConfig.from_dict({"module": "emu:c2m-10in", "bogus": 1}).module == "emu:c2m-10in"
