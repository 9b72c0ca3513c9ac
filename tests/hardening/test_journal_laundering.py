"""A hand-edited journal must not become a profile, a customer report or a resumed session.

Three ways to launder an edit of a decision record's codes, each against `profile save`, `session
report` and `session resume` (and the TUI's report/profile path, which goes through the same readers):

* stale CRC: the value changed, the checksum kept;
* stripped mark: the checksum removed from the edited record and from the header (and variants that
  remove every checksum and rewrite the header as an older eqtune's);
* re-sealed edit: the checksum recomputed after the edit. The CRC is unkeyed and cannot catch this; a
  signed journal (`eqtune session sign`) can, and `--require-signed` makes the signature mandatory.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.errors import SessionError
from eqtune.session.journal import read_journal, seal
from eqtune.session.live import LiveConfig, LiveTuner

RES = "emu:c2m-10in?seed=41&settle_ms=0&fast=1&name=launder&adaptive=0"
COMMANDS = ("profile-save", "report", "resume")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished live tune (decisions for lane 1 and 2): its journal bytes and id."""
    root = tmp_path_factory.mktemp("launder")
    t = LiveTuner.create(LiveConfig(module=RES, lanes=[1, 2], dwell_s=0.01, budget=4, seed=5), sessions_dir=root)
    assert t.run().status == "done"
    return t.session_id, (root / t.session_id / "journal.jsonl").read_bytes()


def _copy(tmp_path, finished) -> tuple[str, object]:
    sid, data = finished
    (tmp_path / sid).mkdir()
    path = tmp_path / sid / "journal.jsonl"
    path.write_bytes(data)
    return sid, path


def _lines(path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _write(path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(ln + b"\n" for ln in lines))


def _decision_index(lines: list[bytes]) -> int:
    return next(i for i, ln in enumerate(lines) if b'"type":"decision"' in ln)


def _edit_code(line: bytes) -> bytes:
    """The first code of the decision's codes table + 2 (what a hand edit of tx_eq 8 -> 10 does)."""
    m = re.search(rb'"codes":\{"(\w+)":(\d+)', line)
    assert m, line
    new = str(int(m.group(2)) + 2 if int(m.group(2)) < 200 else int(m.group(2)) - 2).encode()
    return line[:m.start(2)] + new + line[m.end(2):]


def _unseal(line: bytes) -> bytes:
    return re.sub(rb',"ck":"[0-9a-f]{8}"}$', b"}", line)


def stale_crc(path) -> int:
    lines = _lines(path)
    i = _decision_index(lines)
    lines[i] = _edit_code(lines[i])
    _write(path, lines)
    return i


def stripped_mark(path) -> int:
    lines = _lines(path)
    i = _decision_index(lines)
    lines[i] = _unseal(_edit_code(lines[i]))
    lines[0] = _unseal(lines[0])
    _write(path, lines)
    return i


def stripped_everything(path) -> int:
    """No checksum anywhere, header rewritten as format 1 from before checksums (records keep their times)."""
    lines = [_unseal(ln) for ln in _lines(path)]
    i = _decision_index(lines)
    lines[i] = _edit_code(lines[i])
    head = json.loads(lines[0])
    head["format"], head["created"] = 1, "2026-11-01T09:00:00+00:00"
    lines[0] = json.dumps(head, separators=(",", ":"), ensure_ascii=False).encode()
    _write(path, lines)
    return 0  # every record is named; the reason says the checksums were removed


def resealed(path) -> int:
    lines = _lines(path)
    i = _decision_index(lines)
    lines[i] = seal(_unseal(_edit_code(lines[i])))
    _write(path, lines)
    return i


def _run(cmd: str, sid: str, root, *extra: str):
    args = {"profile-save": ["profile", "save", sid, "--out", str(root / "p.json")],
            "report": ["session", "report", sid, "--out", str(root / "r.html")],
            "resume": ["session", "resume", sid, "--quiet"]}[cmd]
    return CliRunner().invoke(main, [*args, "--sessions", str(root), *extra])


def _refused(r, *needles: str) -> str:
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("eqtune: error:"), r.output
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_the_untouched_journal_gives_a_profile_and_a_report(tmp_path, finished):
    sid, _ = _copy(tmp_path, finished)
    assert _run("profile-save", sid, tmp_path).exit_code == 0
    assert _run("report", sid, tmp_path).exit_code == 0


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("launder", [stale_crc, stripped_mark, stripped_everything], ids=lambda f: f.__name__)
def test_an_edit_without_its_checksum_is_refused(tmp_path, finished, cmd, launder):
    sid, path = _copy(tmp_path, finished)
    seq = launder(path)
    line = _refused(_run(cmd, sid, tmp_path), f"{seq} (decision)" if seq else "checksums were removed")
    assert "refusing to" in line
    assert not (tmp_path / "p.json").exists() and not (tmp_path / "r.html").exists()


def _sign(tmp_path, sid, kind: str) -> tuple[str, str]:
    if kind == "ed25519":
        assert CliRunner().invoke(main, ["profile", "keygen", str(tmp_path / "office")]).exit_code == 0
        key, trust = str(tmp_path / "office.key"), str(tmp_path / "office.pub")
    else:
        (tmp_path / "site.hmac").write_bytes(bytes(range(40, 72)))
        key = trust = str(tmp_path / "site.hmac")
    r = CliRunner().invoke(main, ["session", "sign", sid, "--key", key, "--sessions", str(tmp_path)])
    assert r.exit_code == 0 and "records signed" in r.output, r.output
    return key, trust


@pytest.mark.parametrize("cmd", COMMANDS)
def test_a_resealed_edit_of_a_signed_journal_is_refused(tmp_path, finished, cmd):
    sid, path = _copy(tmp_path, finished)
    _sign(tmp_path, sid, "hmac")
    resealed(path)
    assert not read_journal(path).bad_checksums  # the CRC alone cannot see it
    _refused(_run(cmd, sid, tmp_path), "edited after it was signed")


@pytest.mark.parametrize("kind", ["ed25519", "hmac"])
@pytest.mark.parametrize("cmd", COMMANDS)
def test_a_resealed_edit_with_a_rewritten_signature_file_fails_the_trusted_key(tmp_path, finished, cmd, kind):
    sid, path = _copy(tmp_path, finished)
    _, trust = _sign(tmp_path, sid, kind)
    resealed(path)
    import hashlib

    sig = json.loads((path.parent / "journal.sig").read_text())
    data = path.read_bytes()
    sig["sha256"], sig["bytes"] = hashlib.sha256(data).hexdigest(), len(data)  # the editor fixes the digest too
    (path.parent / "journal.sig").write_text(json.dumps(sig))
    assert _run(cmd, sid, tmp_path).exit_code != 2 or cmd == "resume"  # without a key, nothing can tell
    _refused(_run(cmd, sid, tmp_path, "--require-signed", "--trusted-key", trust), "does not verify")


@pytest.mark.parametrize("cmd", ["profile-save", "report"])
def test_require_signed_refuses_an_unsigned_or_deleted_signature(tmp_path, finished, cmd, monkeypatch):
    sid, path = _copy(tmp_path, finished)
    (tmp_path / "site.hmac").write_bytes(bytes(range(40, 72)))
    trust = str(tmp_path / "site.hmac")
    _refused(_run(cmd, sid, tmp_path, "--require-signed", "--trusted-key", trust), "not signed")
    _sign(tmp_path, sid, "hmac")
    assert _run(cmd, sid, tmp_path, "--require-signed", "--trusted-key", trust).exit_code == 0
    monkeypatch.setenv("EQTUNE_REQUIRE_SIGNED_JOURNALS", "1")
    monkeypatch.setenv("EQTUNE_TRUSTED_KEYS", trust)
    assert _run(cmd, sid, tmp_path).exit_code == 0
    (path.parent / "journal.sig").unlink()
    _refused(_run(cmd, sid, tmp_path), "not signed")


def test_records_after_the_signature_are_unsigned(tmp_path, finished):
    from eqtune.session.journal import note_closed_session

    sid, path = _copy(tmp_path, finished)
    _, trust = _sign(tmp_path, sid, "hmac")
    note_closed_session(sid, tmp_path, "report", path="x.html")  # bookkeeping after signing: no harm
    assert _run("report", sid, tmp_path, "--require-signed", "--trusted-key", trust).exit_code == 0
    note_closed_session(sid, tmp_path, "decision", lane=1, action="keep", codes={"rx_pre": 1})
    assert _run("report", sid, tmp_path).exit_code == 0  # the signed prefix still holds
    _refused(_run("report", sid, tmp_path, "--require-signed", "--trusted-key", trust), "after the journal was signed")


def test_signing_refuses_a_journal_that_fails_its_checksums(tmp_path, finished):
    sid, path = _copy(tmp_path, finished)
    stale_crc(path)
    (tmp_path / "site.hmac").write_bytes(bytes(range(40, 72)))
    r = CliRunner().invoke(main, ["session", "sign", sid, "--key", str(tmp_path / "site.hmac"),
                                  "--sessions", str(tmp_path)])
    _refused(r, "fail their checksum", "refusing to sign")
    assert not (path.parent / "journal.sig").exists()


def test_the_tui_controller_and_the_prior_refuse_an_edited_journal(tmp_path, finished):
    from eqtune.session.export import session_profile
    from eqtune.session.prior import load_prior_view
    from eqtune.session.report import write_report

    sid, path = _copy(tmp_path, finished)
    stale_crc(path)
    for call in (lambda: session_profile(sid, tmp_path), lambda: write_report(sid, None, tmp_path),
                 lambda: load_prior_view(sid, tmp_path)):
        with pytest.raises(SessionError, match="fail their checksum"):
            call()


def test_session_show_tells_the_signature_state(tmp_path, finished):
    sid, path = _copy(tmp_path, finished)
    show = ["session", "show", sid, "--sessions", str(tmp_path)]
    assert "signature none" in CliRunner().invoke(main, show).output
    _sign(tmp_path, sid, "hmac")
    assert "records signed by key" in CliRunner().invoke(main, show).output
    resealed(path)
    r = CliRunner().invoke(main, [*show, "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["signature"].startswith("BROKEN")
