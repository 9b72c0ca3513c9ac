"""An edited profile with a recomputed digest pushes without complaint; optional
signatures (Ed25519 or an HMAC site key) and `profile push --require-signed` refuse it before any
module is opened."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.session.profile import Profile, content_digest, render

RES = "emu:c2m-10in?settle_ms=0&fast=1&name=sign-push"


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def _profile(tmp_path) -> str:
    from eqtune.drivers.cmis import open_module

    m = open_module(RES)
    prof = Profile.from_identity(m.identity(), {1: {"rx_post": 5}, 2: {"rx_pre": 2}})
    m.close()
    return str(prof.save(tmp_path / "p.json"))


def _tamper(path: str) -> None:
    """Change a code and recompute the digest: what the unkeyed SHA-256 cannot catch."""
    doc = json.loads(open(path).read())
    doc["lanes"]["1"]["rx_post"] = 7
    doc["digest"]["value"] = content_digest(doc)
    open(path, "w").write(render(doc))


def _one_error_line(r) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("eqtune: error:"), r.output
    return lines[0]


@pytest.mark.parametrize("kind", ["ed25519", "hmac"])
def test_signed_profile_pushes_and_a_tampered_one_is_refused(tmp_path, kind):
    emu = emulator_for(parse_resource(RES))
    path = _profile(tmp_path)
    if kind == "ed25519":
        r = _run("profile", "keygen", str(tmp_path / "office"))
        assert r.exit_code == 0, r.output
        sign_key, trust = str(tmp_path / "office.key"), str(tmp_path / "office.pub")
    else:
        (tmp_path / "site.hmac").write_bytes(bytes(range(32)))
        sign_key = trust = str(tmp_path / "site.hmac")
    assert _run("profile", "sign", path, "--key", sign_key).exit_code == 0
    assert "signed   " + ("ed25519" if kind == "ed25519" else "hmac-sha256") in _run("profile", "show", path).output
    r = _run("profile", "push", path, "--module", RES, "--require-signed", "--trusted-key", trust)
    assert r.exit_code == 0, r.output
    assert "signature ok" in r.output and emu.link.active_codes(1)["rx_post"] == 5

    _tamper(path)  # the digest still matches: without --require-signed it would push
    writes = len(emu.writes)
    err = _one_error_line(_run("profile", "push", path, "--module", RES, "--require-signed", "--trusted-key", trust))
    assert "does not verify" in err and "do not push" in err
    assert len(emu.writes) == writes  # refused before any module was opened


def test_unsigned_or_untrusted_profiles_are_refused(tmp_path, monkeypatch):
    path = _profile(tmp_path)
    (tmp_path / "site.hmac").write_bytes(b"k" * 32)
    (tmp_path / "other.hmac").write_bytes(b"o" * 32)
    err = _one_error_line(_run("profile", "push", path, "--module", RES, "--require-signed",
                               "--trusted-key", str(tmp_path / "site.hmac")))
    assert "not signed" in err
    assert _run("profile", "sign", path, "--key", str(tmp_path / "other.hmac")).exit_code == 0
    err = _one_error_line(_run("profile", "push", path, "--module", RES, "--require-signed",
                               "--trusted-key", str(tmp_path / "site.hmac")))
    assert "not among the trusted keys" in err
    err = _one_error_line(_run("profile", "push", path, "--module", RES, "--require-signed"))
    assert "needs trusted keys" in err
    monkeypatch.setenv("EQTUNE_TRUSTED_KEYS", str(tmp_path / "other.hmac"))
    assert _run("profile", "push", path, "--module", RES, "--require-signed", "--dry-run").exit_code == 0
    (tmp_path / "short.hmac").write_bytes(b"abc")
    assert "at least 16" in _one_error_line(_run("profile", "sign", path, "--key", str(tmp_path / "short.hmac")))


def test_signature_survives_reload_and_is_dropped_when_content_changes(tmp_path):
    from eqtune.session.signing import load_key

    path = _profile(tmp_path)
    (tmp_path / "site.hmac").write_bytes(b"s" * 32)
    key = load_key(tmp_path / "site.hmac")
    prof = Profile.load(path)
    prof.sign(key)
    prof.save(path)
    again = Profile.load(path)
    assert again.verify_signature([key]).key_id == key.key_id
    again.lanes[1]["rx_post"] = 6
    again.save(path)
    assert Profile.load(path).signature is None  # a changed profile is no longer signed
