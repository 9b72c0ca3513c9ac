"""Journal integrity: one rule for everything derived from a session journal.

Every reader that derives something from a journal (``session resume``, ``session report``, ``profile
save``, the TUI, the prior from past sessions) calls :func:`require_intact`, which refuses, naming the
records, when

* a record fails its CRC-32 (the value was edited after it was written: a *stale* checksum);
* a record lacks its CRC in a journal that has them, or in a journal whose header says it was written
  by an eqtune that seals every record (``format`` >= :data:`SEALED_FORMAT`);
* a journal has no CRC at all but cannot be from an eqtune before checksums: its header claims the
  sealed format, or it was created (header ``created``) or written (any record's ``t``) after
  :data:`SEALED_SINCE`, when eqtune began sealing every record. So removing the checksums *and* the
  header's mark does not turn an edited journal into an "older eqtune" journal;
* a signature (``journal.sig``, :func:`sign_journal`) is present and the journal's bytes no longer match
  it, or a trusted key is given and the signature does not verify with it;
* signatures are required (``--require-signed`` or ``EQTUNE_REQUIRE_SIGNED_JOURNALS=1``) and the journal is
  unsigned, signed by an untrusted key, or has records after the signed part (other than the
  ``profile``/``report`` records that saving a profile or a report appends, :data:`BOOKKEEPING`).

What the CRC protects, and what it does not: the CRC-32 (unkeyed) catches an accidental or naive edit
of a record (a changed code, a removed field, a removed checksum). Anyone who knows the format can
recompute it after an edit (a *re-sealed* edit), or rewrite a whole journal with old timestamps and no
checksums; nothing unkeyed can tell such a forgery from the original. Where integrity must survive a
hostile editor, sign the journal with the profile keys (:mod:`eqtune.session.signing`: Ed25519 or an HMAC
site key) and require the signature where journals are used.

Journal signature (``<session>/journal.sig``, JSON)::

    {"format": "eqtune.journal-signature.v1", "records": N, "bytes": B, "sha256": "<hex>",
     "signature": {"algorithm": ..., "key_id": ..., "value": ...}}

It covers the first ``B`` bytes of the journal (its first ``N`` complete records); the signed message is
``b"eqtune.journal.v1\\n" + sha256_hex + b"\\n" + str(N) + b"\\n" + str(B)``, so it cannot be replayed as a
profile signature or on another prefix. A journal is append-only, so a session resumed after signing
keeps its signed prefix; the records after it are unsigned until the journal is signed again.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.errors import EqtuneError, SessionError

SEALED_FORMAT = 2  # header "format" from which every record must carry its CRC
# when eqtune began sealing every journal record with a CRC-32 (the release that introduced "ck"):
# a journal without checksums created or written after this is a downgrade, not an old journal
SEALED_SINCE = _dt.datetime(2026, 12, 1, 4, 16, 7, tzinfo=_dt.UTC)
SIGNATURE_NAME = "journal.sig"
SIGNATURE_FORMAT = "eqtune.journal-signature.v1"
JOURNAL_MESSAGE_PREFIX = b"eqtune.journal.v1\n"
MAX_SIGNATURE_BYTES = 4096
REQUIRE_ENV = "EQTUNE_REQUIRE_SIGNED_JOURNALS"
# records the derived commands write themselves (the path and digest of a saved profile or report): they may
# follow the signature without voiding it, as nothing (codes, margins, decisions) is derived from them
BOOKKEEPING = ("profile", "report")


@dataclass
class Checksums:
    """The CRC verdict on a journal's records (computed by :func:`classify`)."""

    stale: list[int] = field(default_factory=list)  # seq of records whose CRC does not match
    missing: list[int] = field(default_factory=list)  # seq of records without a CRC where one is required
    legacy: int = 0  # records of a journal from an eqtune before checksums (accepted)
    downgrade: str = ""  # why a journal without checksums cannot be an old one

    @property
    def failing(self) -> list[int]:
        return sorted({*self.stale, *self.missing})


def _stamp(value: Any) -> _dt.datetime | None:
    try:
        d = _dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return d if d.tzinfo else d.replace(tzinfo=_dt.UTC)


def classify(records: list[dict[str, Any]], stale: list[int], unsealed: list[int]) -> Checksums:
    """Decide which records fail: ``stale`` (CRC mismatch) and ``unsealed`` (no CRC) come from the reader."""
    out = Checksums(stale=list(stale))
    if not unsealed or not records:
        return out
    if len(unsealed) < len(records):  # some records are sealed: the journal has CRCs, every record needs one
        out.missing = list(unsealed)
        return out
    head = records[0]
    fmt = head.get("format")
    created = _stamp(head.get("created"))
    times = [float(t) for r in records if isinstance(t := r.get("t"), int | float) and not isinstance(t, bool)]
    since = SEALED_SINCE.timestamp()
    reason = ""
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt >= SEALED_FORMAT:
        reason = f"its header says format {fmt}, which seals every record"
    elif head.get("type") != "session" or created is None:
        reason = "its header has no creation time to date it"
    elif created >= SEALED_SINCE:
        reason = f"it was created {created.isoformat(timespec='seconds')}, after eqtune began sealing records"
    elif len(times) < len(records) or max(times) >= since:
        reason = "records were written after eqtune began sealing records (their time stamps say so)"
    if reason:
        out.missing = list(unsealed)
        out.downgrade = (f"no record has a checksum, yet the journal cannot be from an eqtune before checksums "
                         f"({SEALED_SINCE.date()}): {reason}; the checksums were removed")
    else:
        out.legacy = len(records)
    return out


def _seq_list(seqs: list[int], records: list[dict[str, Any]]) -> str:
    def name(s: int) -> str:
        t = records[s].get("type") if 0 <= s < len(records) else None
        return f"{s} ({str(t)[:16]})" if t else str(s)

    shown = ", ".join(name(s) for s in seqs[:8])
    return shown + (f" and {len(seqs) - 8} more" if len(seqs) > 8 else "")


def describe(ck: Checksums, records: list[dict[str, Any]]) -> str:
    """One line naming the failing records, or the journal's checksum state."""
    parts = []
    if ck.stale:
        parts.append(f"record(s) seq {_seq_list(ck.stale, records)} fail their checksum (edited after they "
                     "were written)")
    if ck.downgrade:
        parts.append(ck.downgrade)
    elif ck.missing:
        parts.append(f"record(s) seq {_seq_list(ck.missing, records)} lack the checksum every record of this "
                     "journal carries (removed by an edit)")
    if parts:
        return "; ".join(parts)
    if ck.legacy:
        return f"{ck.legacy} record(s) without a checksum (an eqtune before checksums)"
    return "every record's checksum matches"


# ---------------------------------------------------------------------------------------------
# signatures
# ---------------------------------------------------------------------------------------------
def journal_message(sha256_hex: str, records: int, size: int) -> bytes:
    return JOURNAL_MESSAGE_PREFIX + f"{sha256_hex}\n{records}\n{size}".encode("ascii")


@dataclass(frozen=True)
class SignatureState:
    """What ``journal.sig`` says about a journal (``present`` False when there is none)."""

    present: bool
    records: int = 0  # records covered
    key_id: str = ""
    verified_by: str = ""  # key id of the trusted key that verified it ("" when no key was given)
    problem: str = ""  # why the signature does not hold ("" when it does)


def _read_signature(sdir: Path) -> dict[str, Any] | None:
    p = sdir / SIGNATURE_NAME
    try:
        data = p.read_bytes()[:MAX_SIGNATURE_BYTES + 1]
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SessionError(f"cannot read {p}: {exc.strerror}; check permissions") from None
    try:
        if len(data) > MAX_SIGNATURE_BYTES:
            raise ValueError("too large")
        from eqtune.readers import loads_json

        doc = loads_json(data, str(p), error=SessionError)
        from eqtune.config_schema import Field, Schema, validate
        from eqtune.session.signing import SIGNATURE_SCHEMA

        validate(doc, Schema((
            Field("format", "string", required=True, choices=(SIGNATURE_FORMAT,)),
            Field("records", "integer", required=True, ge=1),
            Field("bytes", "integer", required=True, ge=1),
            Field("sha256", "string", required=True, pattern=r"[0-9a-f]{64}"),
            Field("signature", "table", required=True, schema=SIGNATURE_SCHEMA),
        ), extra="allow"), where=str(p), error=SessionError)
    except (ValueError, EqtuneError) as exc:
        raise SessionError(f"journal signature {p} is not readable ({str(exc)[:160]}): it was damaged or "
                           "edited; sign the journal again from a trusted copy") from None
    return doc


def check_signature(path: Path, good_size: int, record_count: int, keys: list[Any]) -> SignatureState:
    """Check ``journal.sig`` beside ``path`` against the journal's bytes and, given keys, its signature."""
    doc = _read_signature(path.parent)
    if doc is None:
        return SignatureState(False)
    sig = doc["signature"]
    n, size = int(doc["records"]), int(doc["bytes"])
    state = {"present": True, "records": n, "key_id": sig["key_id"]}
    if size > good_size or n > record_count:
        return SignatureState(**state, problem=f"the signature covers {n} records ({size} bytes) but the journal "
                              f"holds {record_count} complete records ({good_size} bytes): records were removed")
    with open(path, "rb") as fh:
        prefix = fh.read(size)
    digest = hashlib.sha256(prefix).hexdigest()
    if digest != doc["sha256"] or prefix.count(b"\n") != n or not prefix.endswith(b"\n"):
        return SignatureState(**state, problem=f"the first {n} records no longer match their signature: the "
                              "journal was edited after it was signed")
    if not keys:
        return SignatureState(**state)
    from eqtune.session.signing import verify

    try:
        k = verify(digest, sig, keys, message=journal_message(digest, n, size), what="journal")
    except EqtuneError as exc:
        return SignatureState(**state, problem=str(exc))
    return SignatureState(**state, verified_by=k.key_id)


def sign_journal(session_id: str, key_file: str, sessions_dir: str | os.PathLike[str] | None = None) -> SignatureState:
    """Write ``journal.sig`` over every complete record; refuses a journal that fails its checksums."""
    from eqtune.session.journal import JOURNAL_NAME, read_journal, session_path
    from eqtune.session.signing import load_key, sign

    sdir = session_path(session_id, sessions_dir)
    path = sdir / JOURNAL_NAME
    key = load_key(key_file, role="private")
    contents = read_journal(path)
    require_intact(contents, path, "sign it", keys=[], require_signed=False, check_sig=False)
    if not contents.records:
        raise SessionError(f"session {session_id} has no complete record; nothing to sign")
    old = _read_signature(sdir)
    if old is not None:  # re-signing extends a signature: the part signed before must be unchanged
        st = check_signature(path, contents.good_size, len(contents.records), [])
        if st.problem:
            raise SessionError(f"journal {path}: {st.problem}; refusing to sign it again")
    with open(path, "rb") as fh:
        prefix = fh.read(contents.good_size)
    digest = hashlib.sha256(prefix).hexdigest()
    n = len(contents.records)
    doc = {"format": SIGNATURE_FORMAT, "records": n, "bytes": contents.good_size, "sha256": digest,
           "signature": sign(digest, key, message=journal_message(digest, n, contents.good_size))}
    out = sdir / SIGNATURE_NAME
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        raise SessionError(f"cannot write {out}: {exc.strerror}") from None
    return SignatureState(True, n, key.key_id, key.key_id)


# ---------------------------------------------------------------------------------------------
# the rule
# ---------------------------------------------------------------------------------------------
def signatures_required(flag: bool = False) -> bool:
    """``--require-signed`` or ``$EQTUNE_REQUIRE_SIGNED_JOURNALS`` set to 1/yes/true/on."""
    return flag or os.environ.get(REQUIRE_ENV, "").strip().lower() in ("1", "yes", "true", "on")


def require_intact(contents: Any, path: Path, action: str, *, keys: list[Any] | None = None,
                   require_signed: bool = False, check_sig: bool = True) -> SignatureState:
    """Raise SessionError (one line naming the records) unless the journal may be used to ``action``.

    ``keys``: trusted keys (None: ``--trusted-key`` files were not given, take ``$EQTUNE_TRUSTED_KEYS``).
    """
    ck: Checksums = contents.checksums
    if ck.failing:
        raise SessionError(f"journal {path}: {describe(ck, contents.records)}; refusing to {action}: nothing "
                           "derived from it can be trusted (keep a copy, check the module with `eqtune module "
                           "show` and start a new session)")
    if not check_sig:
        return SignatureState(False)
    need = signatures_required(require_signed)
    if keys is None:
        from eqtune.session.signing import trusted_keys

        keys = trusted_keys(())
    st = check_signature(path, contents.good_size, len(contents.records), keys)
    if st.problem:
        raise SessionError(f"journal {path}: {st.problem}; refusing to {action}")
    if need:
        if not st.present:
            raise SessionError(f"journal {path} is not signed and signed journals are required; refusing to "
                               f"{action} (sign it with `eqtune session sign {path.parent.name} --key KEY`)")
        if not st.verified_by:
            raise SessionError(f"journal {path}: signed journals are required but no trusted key was given "
                               "(--trusted-key FILE or EQTUNE_TRUSTED_KEYS); refusing to " + action)
        tail = [r["seq"] for r in contents.records[st.records:] if r.get("type") not in BOOKKEEPING]
        if tail:
            raise SessionError(f"journal {path}: record(s) seq {_seq_list(tail, contents.records)} were written "
                               f"after the journal was signed; refusing to {action} (sign it again)")
    return st
