"""Optional signatures of tuning profiles: who may have produced the codes that get pushed.

The profile digest (:mod:`eqtune.session.profile`) detects accidental damage, but anyone can edit a
profile and recompute it. A signature binds the digest to a key:

``ed25519``
    RFC 8032 Ed25519 over the message below, with a private key only the signer holds; anyone with
    the public key can verify (``eqtune profile keygen`` writes ``NAME.key`` (PKCS#8 PEM, keep it
    secret) and ``NAME.pub`` (SubjectPublicKeyInfo PEM, give it to the sites)). Needs the
    ``cryptography`` package (``pip install eqtune[sign]``).
``hmac-sha256``
    RFC 2104 HMAC-SHA-256 with a shared site key (any file of >= 16 random bytes, e.g.
    ``head -c 32 /dev/urandom > site.hmac``): whoever can verify can also sign, so it proves "made
    with the site key", not who made it. Standard library only.

The signed message is ``b"eqtune.profile.v1\\n" + digest_hex`` where the digest covers every member of
the document except ``digest`` and ``signature`` (so the signature covers lanes, module, link, margins).
The signature is stored in the profile as::

    "signature": {"algorithm": "ed25519" | "hmac-sha256", "key_id": "<16 hex>", "value": "<hex>"}

``key_id`` is the first 16 hex digits of SHA-256 of the public key (Ed25519, raw 32 bytes) or of the
HMAC key: it names the key without revealing it. ``eqtune profile push --require-signed`` refuses a
profile, before opening any module, unless its signature verifies with a trusted key (``--trusted-key
FILE``, repeatable, or the files in ``$EQTUNE_TRUSTED_KEYS``, separated by ``os.pathsep``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqtune.config_schema import Field, Schema
from eqtune.errors import ProfileError

MESSAGE_PREFIX = b"eqtune.profile.v1\n"
ALGORITHMS = ("ed25519", "hmac-sha256")
MIN_HMAC_KEY = 16  # bytes (RFC 2104 section 3: keys shorter than the hash output weaken it; 16 is a floor)


@dataclass(frozen=True)
class Key:
    """A signing or verifying key. ``secret``: bytes (HMAC) or a cryptography Ed25519 key object."""

    algorithm: str
    key_id: str
    material: Any
    private: bool
    source: str


def _profile_message(digest_hex: str) -> bytes:
    return MESSAGE_PREFIX + digest_hex.encode("ascii")


def _ed25519():
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise ProfileError("Ed25519 signatures need the 'cryptography' package: pip install 'eqtune[sign]' "
                           "(or use an HMAC site key)") from None
    return serialization, ed25519


def _raw_public(pub: Any) -> bytes:
    serialization, _ = _ed25519()
    return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


_SSH_PUBLIC = (b"ssh-ed25519 ", b"ssh-rsa ", b"ssh-dss ", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-")
KEY_ROLES = ("any", "private", "public")


def key_format(data: bytes) -> str:
    """What a key file holds, by its format: ``pem-private``, ``pem-public``, ``pem-encrypted``, ``pem-other``,
    ``openssh-private``, ``openssh-public``, ``putty``, ``utf16``, ``der`` or ``raw`` (an HMAC secret)."""
    head = data.lstrip()[:64]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(data) >= 8 and data[1:8:2] == b"\0\0\0\0"
                                                  and b"\0" not in data[0:8:2]):
        return "utf16"
    if head.startswith(b"-----BEGIN OPENSSH PRIVATE KEY"):
        return "openssh-private"
    if head.startswith(b"PuTTY-User-Key-File"):
        return "putty"
    if head.startswith(_SSH_PUBLIC) or head.startswith(b"---- BEGIN SSH2 PUBLIC KEY"):
        return "openssh-public"
    if b"-----BEGIN" in data:
        if b"ENCRYPTED PRIVATE KEY" in data:
            return "pem-encrypted"
        if b"-----BEGIN PRIVATE KEY" in data:
            return "pem-private"
        if b"-----BEGIN PUBLIC KEY" in data:
            return "pem-public"
        return "pem-other"
    if _looks_der(data):
        return "der"
    return "raw"


def _looks_der(data: bytes) -> bool:
    """An ASN.1 DER SEQUENCE (X.690 8.1.3) spanning exactly the file: a DER-encoded key, not random bytes."""
    if len(data) < 4 or data[0] != 0x30:
        return False
    n = data[1]
    if n < 0x80:
        return 2 + n == len(data)
    k = n & 0x7F
    if not 1 <= k <= 2 or len(data) < 2 + k:
        return False
    return 2 + k + int.from_bytes(data[2:2 + k], "big") == len(data)


_REFUSE = {
    "utf16": "is UTF-16 text; save it as ASCII/UTF-8 (PEM is ASCII)",
    "openssh-private": "is an OpenSSH private key; eqtune reads PEM (PKCS#8): convert a copy with "
                       "`ssh-keygen -p -m PKCS8 -f COPY` or create a key with `eqtune profile keygen`",
    "openssh-public": "is an OpenSSH public key; eqtune reads PEM (SubjectPublicKeyInfo): convert it with "
                      "`ssh-keygen -e -m PKCS8 -f FILE > FILE.pub` or use the .pub of `eqtune profile keygen`",
    "putty": "is a PuTTY key; export it as PEM (PKCS#8) or use `eqtune profile keygen`",
    "der": "is a DER (binary ASN.1) key; eqtune reads PEM: convert it with `openssl pkey -inform DER -in FILE` "
           "(add -pubin for a public key)",
    "pem-encrypted": "is a password-protected private key; eqtune reads unencrypted PKCS#8 PEM (keep it on the "
                     "signing machine only)",
    "pem-other": "is a PEM file but not a PKCS#8 private key or a SubjectPublicKeyInfo public key "
                 "(BEGIN PRIVATE KEY / BEGIN PUBLIC KEY); create one with `eqtune profile keygen`",
}


def load_key(path: str | os.PathLike[str], role: str = "any") -> Key:
    """A key file, recognised by its format (:func:`key_format`): PEM Ed25519 private or public key, or an
    HMAC secret (the file's bytes). ``role``: ``"private"`` (signing: a public key is refused),
    ``"public"`` (a trusted key: a private Ed25519 key is refused, keep it at the office), ``"any"``.
    A key in another format (OpenSSH, PuTTY, DER, UTF-16, encrypted PEM) is refused with the reason,
    never taken as an HMAC secret."""
    from eqtune.readers import check_path

    p = check_path(path, "key file", error=ProfileError)
    try:
        if p.stat().st_size > 1 << 16:
            raise ProfileError(f"key file {p} is {p.stat().st_size} bytes; a key file is at most 64 KiB")
        data = p.read_bytes()
    except OSError as exc:
        raise ProfileError(f"key file {p}: cannot read ({exc.strerror})") from None
    except ValueError:  # a NUL in the name
        raise ProfileError(f"key file {str(p)[:80]!r}: not a valid path") from None
    fmt = key_format(data)
    if fmt in _REFUSE:
        raise ProfileError(f"key file {p} {_REFUSE[fmt]}")
    if fmt.startswith("pem-"):
        serialization, ed25519 = _ed25519()
        if fmt == "pem-private" and role == "public":
            raise ProfileError(f"key file {p} is a private key; a trusted key is the public one (NAME.pub): keep "
                               "the private key at the office")
        try:
            if fmt == "pem-private":
                k = serialization.load_pem_private_key(data, password=None)
                if not isinstance(k, ed25519.Ed25519PrivateKey):
                    raise ProfileError(f"key file {p} is not an Ed25519 key; create one with `eqtune profile keygen`")
                return Key("ed25519", hashlib.sha256(_raw_public(k.public_key())).hexdigest()[:16], k, True, str(p))
            k = serialization.load_pem_public_key(data)
        except ProfileError:
            raise
        except (ValueError, TypeError) as exc:
            raise ProfileError(f"key file {p} is not a readable PEM key ({type(exc).__name__})") from None
        except Exception as exc:  # noqa: BLE001 - cryptography raises its own UnsupportedAlgorithm
            raise ProfileError(f"key file {p} is not a supported PEM key ({type(exc).__name__})") from None
        if not isinstance(k, ed25519.Ed25519PublicKey):
            raise ProfileError(f"key file {p} is not an Ed25519 key; create one with `eqtune profile keygen`")
        if role == "private":
            raise ProfileError(f"{p} is a public key; signing needs the private key (NAME.key)")
        return Key("ed25519", hashlib.sha256(_raw_public(k)).hexdigest()[:16], k, False, str(p))
    secret = data.strip()
    if len(secret) < MIN_HMAC_KEY:
        raise ProfileError(f"key file {p} holds {len(secret)} bytes; an HMAC site key needs at least "
                           f"{MIN_HMAC_KEY} random bytes (e.g. head -c 32 /dev/urandom > {p.name})")
    return Key("hmac-sha256", hashlib.sha256(secret).hexdigest()[:16], secret, True, str(p))


def sign(digest_hex: str, key: Key, *, message: bytes | None = None) -> dict[str, str]:
    """The ``signature`` member for a profile whose digest is ``digest_hex`` (``message``: the signed bytes of
    another document type, e.g. a journal, so that signatures cannot be replayed across types)."""
    if not key.private:
        raise ProfileError(f"{key.source} is a public key; signing needs the private key (NAME.key)")
    msg = _profile_message(digest_hex) if message is None else message
    if key.algorithm == "ed25519":
        value = key.material.sign(msg).hex()
    else:
        value = hmac.new(key.material, msg, hashlib.sha256).hexdigest()
    return {"algorithm": key.algorithm, "key_id": key.key_id, "value": value}


SIGNATURE_SCHEMA = Schema((  # the profile's "signature" member (eqtune.config_schema)
    Field("algorithm", "string", required=True, choices=ALGORITHMS),
    Field("key_id", "string", required=True, pattern=r"[0-9a-f]{16}", hint="16 hex digits"),
    Field("value", "string", required=True, pattern=r"[0-9a-f]{64}|[0-9a-f]{128}", hint="a hex signature"),
))


def verify(digest_hex: str, sig: dict[str, str] | None, keys: list[Key], *, message: bytes | None = None,
           what: str = "profile") -> Key:
    """The trusted key that verifies ``sig`` over ``digest_hex`` (or ``message``); ProfileError otherwise."""
    if not sig:
        raise ProfileError("the profile is not signed and --require-signed is set: sign it with "
                           "`eqtune profile sign FILE --key KEY` at the office, then push it")
    if not keys:
        raise ProfileError("--require-signed needs trusted keys: give --trusted-key FILE (an Ed25519 .pub or the "
                           "HMAC site key) or set EQTUNE_TRUSTED_KEYS")
    match = [k for k in keys if k.algorithm == sig["algorithm"] and k.key_id == sig["key_id"]]
    if not match:
        raise ProfileError(f"the {what} is signed ({sig['algorithm']}) by key {sig['key_id']}, which is not among "
                           f"the trusted keys ({', '.join(k.key_id for k in keys)}): do not push it")
    msg = _profile_message(digest_hex) if message is None else message
    for k in match:
        if k.algorithm == "hmac-sha256":
            if hmac.compare_digest(hmac.new(k.material, msg, hashlib.sha256).hexdigest(), sig["value"]):
                return k
        else:
            pub = k.material.public_key() if k.private else k.material
            try:
                pub.verify(bytes.fromhex(sig["value"]), msg)
                return k
            except Exception:  # noqa: BLE001 - cryptography raises InvalidSignature
                pass
    raise ProfileError(f"the {what}'s {sig['algorithm']} signature (key {sig['key_id']}) does not verify: its "
                       "content was changed after signing; do not push it")


def trusted_keys(paths: list[str] | tuple[str, ...] = ()) -> list[Key]:
    """Keys from ``paths`` plus ``$EQTUNE_TRUSTED_KEYS`` (os.pathsep-separated files)."""
    env = [p for p in os.environ.get("EQTUNE_TRUSTED_KEYS", "").split(os.pathsep) if p.strip()]
    return [load_key(p, role="public") for p in [*paths, *env]]


def keygen(prefix: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``PREFIX.key`` (private, mode 0600) and ``PREFIX.pub`` (public) Ed25519 PEM files."""
    from eqtune.readers import check_path

    priv = check_path(f"{prefix}.key", "profile keygen", error=ProfileError)
    pub = check_path(f"{prefix}.pub", "profile keygen", error=ProfileError)
    serialization, ed25519 = _ed25519()
    k = ed25519.Ed25519PrivateKey.generate()
    for p in (priv, pub):
        if p.exists():
            raise ProfileError(f"{p} exists; choose another name (keys are never overwritten)")
    try:
        fd = os.open(priv, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
        pub.write_bytes(k.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo))
    except OSError as exc:
        raise ProfileError(f"cannot write the key pair {prefix}: {exc.strerror}") from None
    return priv, pub
