"""Key files are recognised by their format and refused, with the reason, when they are the wrong kind:
an OpenSSH, PuTTY, DER, UTF-16 or password-protected key is never taken as an HMAC secret, and the signer's
private key is not accepted as a trusted key (nor a public key for signing)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.errors import ProfileError
from eqtune.session.signing import key_format, load_key

pytest.importorskip("cryptography")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    d = tmp_path_factory.mktemp("keys")
    k = ed25519.Ed25519PrivateKey.generate()
    enc, fmt = serialization.Encoding, serialization.PrivateFormat
    files = {
        "pem.key": k.private_bytes(enc.PEM, fmt.PKCS8, serialization.NoEncryption()),
        "pem.pub": k.public_key().public_bytes(enc.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        "ssh.pub": k.public_key().public_bytes(enc.OpenSSH, serialization.PublicFormat.OpenSSH) + b" fae@laptop\n",
        "ssh.key": k.private_bytes(enc.PEM, fmt.OpenSSH, serialization.NoEncryption()),
        "der.pub": k.public_key().public_bytes(enc.DER, serialization.PublicFormat.SubjectPublicKeyInfo),
        "der.key": k.private_bytes(enc.DER, fmt.PKCS8, serialization.NoEncryption()),
        "enc.key": k.private_bytes(enc.PEM, fmt.PKCS8, serialization.BestAvailableEncryption(b"pw")),
    }
    files["utf16.pub"] = files["pem.pub"].decode().encode("utf-16")
    files["utf16le.pub"] = files["pem.pub"].decode().encode("utf-16-le")
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


@pytest.mark.parametrize("name,kind,reason", [
    ("ssh.pub", "openssh-public", "OpenSSH public key"), ("ssh.key", "openssh-private", "OpenSSH private key"),
    ("der.pub", "der", "DER"), ("der.key", "der", "DER"), ("utf16.pub", "utf16", "UTF-16"),
    ("utf16le.pub", "utf16", "UTF-16"), ("enc.key", "pem-encrypted", "password-protected"),
])
def test_a_key_in_another_format_is_refused_with_the_reason(pair, name, kind, reason):
    assert key_format((pair / name).read_bytes()) == kind
    for role in ("any", "private", "public"):
        with pytest.raises(ProfileError, match=reason):
            load_key(pair / name, role=role)


def test_private_where_public_is_expected_and_back(pair):
    with pytest.raises(ProfileError, match="private key; a trusted key is the public one"):
        load_key(pair / "pem.key", role="public")
    with pytest.raises(ProfileError, match="signing needs the private key"):
        load_key(pair / "pem.pub", role="private")
    assert load_key(pair / "pem.key", role="private").private
    assert not load_key(pair / "pem.pub", role="public").private


def test_push_refuses_the_private_key_as_trusted_key(pair, tmp_path):
    prof = tmp_path / "p.json"
    from eqtune.session.profile import Profile

    ident = {"vendor": "ACME", "pn": "OSFP-800G-DR8", "sn": "SN1", "rev": "A", "firmware": "1"}
    Profile.from_identity(ident, {1: {"rx_post": 3}}).save(prof)
    assert CliRunner().invoke(main, ["profile", "sign", str(prof), "--key", str(pair / "pem.key")]).exit_code == 0
    r = CliRunner().invoke(main, ["profile", "push", str(prof), "--module", "emu:c2m-10in?fast=1", "--require-signed",
                                  "--trusted-key", str(pair / "pem.key")])
    assert r.exit_code == 2 and "a trusted key is the public one" in r.output
    r = CliRunner().invoke(main, ["profile", "sign", str(prof), "--key", str(pair / "ssh.key")])
    assert r.exit_code == 2 and "OpenSSH private key" in r.output


def test_random_hmac_secrets_are_still_secrets(tmp_path):
    import random

    rng = random.Random(6)
    for i in range(200):
        p = tmp_path / f"s{i}.hmac"
        p.write_bytes(bytes(rng.randrange(256) for _ in range(32)))
        assert load_key(p).algorithm == "hmac-sha256"
