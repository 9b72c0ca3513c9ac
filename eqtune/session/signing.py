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


def message(digest_hex: str) -> bytes:
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


def load_key(path: str | os.PathLike[str]) -> Key:
    """A key file: PEM Ed25519 private or public key, otherwise an HMAC secret (the file's bytes)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ProfileError(f"key file {p}: cannot read ({exc.strerror})") from None
    if b"-----BEGIN" in data:
        serialization, ed25519 = _ed25519()
        try:
            if b"PRIVATE KEY" in data:
                k = serialization.load_pem_private_key(data, password=None)
                if not isinstance(k, ed25519.Ed25519PrivateKey):
                    raise ProfileError(f"key file {p} is not an Ed25519 key; create one with `eqtune profile keygen`")
                return Key("ed25519", hashlib.sha256(_raw_public(k.public_key())).hexdigest()[:16], k, True, str(p))
            k = serialization.load_pem_public_key(data)
        except ProfileError:
            raise
        except (ValueError, TypeError) as exc:
            raise ProfileError(f"key file {p} is not a readable PEM key ({type(exc).__name__})") from None
        if not isinstance(k, ed25519.Ed25519PublicKey):
            raise ProfileError(f"key file {p} is not an Ed25519 key; create one with `eqtune profile keygen`")
        return Key("ed25519", hashlib.sha256(_raw_public(k)).hexdigest()[:16], k, False, str(p))
    secret = data.strip()
    if len(secret) < MIN_HMAC_KEY:
        raise ProfileError(f"key file {p} holds {len(secret)} bytes; an HMAC site key needs at least "
                           f"{MIN_HMAC_KEY} random bytes (e.g. head -c 32 /dev/urandom > {p.name})")
    return Key("hmac-sha256", hashlib.sha256(secret).hexdigest()[:16], secret, True, str(p))


def sign(digest_hex: str, key: Key) -> dict[str, str]:
    """The ``signature`` member for a profile whose digest is ``digest_hex``."""
    if not key.private:
        raise ProfileError(f"{key.source} is a public key; signing needs the private key (NAME.key)")
    msg = message(digest_hex)
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


def verify(digest_hex: str, sig: dict[str, str] | None, keys: list[Key]) -> Key:
    """The trusted key that verifies ``sig`` over ``digest_hex``; ProfileError (one line) otherwise."""
    if not sig:
        raise ProfileError("the profile is not signed and --require-signed is set: sign it with "
                           "`eqtune profile sign FILE --key KEY` at the office, then push it")
    if not keys:
        raise ProfileError("--require-signed needs trusted keys: give --trusted-key FILE (an Ed25519 .pub or the "
                           "HMAC site key) or set EQTUNE_TRUSTED_KEYS")
    match = [k for k in keys if k.algorithm == sig["algorithm"] and k.key_id == sig["key_id"]]
    if not match:
        raise ProfileError(f"the profile is signed ({sig['algorithm']}) by key {sig['key_id']}, which is not among "
                           f"the trusted keys ({', '.join(k.key_id for k in keys)}): do not push it")
    msg = message(digest_hex)
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
    raise ProfileError(f"the profile's {sig['algorithm']} signature (key {sig['key_id']}) does not verify: its "
                       "content was changed after signing; do not push it")


def trusted_keys(paths: list[str] | tuple[str, ...] = ()) -> list[Key]:
    """Keys from ``paths`` plus ``$EQTUNE_TRUSTED_KEYS`` (os.pathsep-separated files)."""
    env = [p for p in os.environ.get("EQTUNE_TRUSTED_KEYS", "").split(os.pathsep) if p.strip()]
    return [load_key(p) for p in [*paths, *env]]


def keygen(prefix: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``PREFIX.key`` (private, mode 0600) and ``PREFIX.pub`` (public) Ed25519 PEM files."""
    serialization, ed25519 = _ed25519()
    k = ed25519.Ed25519PrivateKey.generate()
    priv = Path(f"{prefix}.key")
    pub = Path(f"{prefix}.pub")
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
