"""Tuning profiles: versioned JSON documents with an integrity digest.

A profile says which codes go on which lanes of which module (vendor + part number, optionally one
serial number), the link/channel it was tuned for, the margins measured and the session it came from.

File format (``schema`` ``eqtune.profile``, ``version`` 1), written as UTF-8 JSON with sorted keys and
two-space indentation, one trailing newline::

    {
      "channel": "c2m-10in",
      "created": "2026-11-29T20:31:07+00:00",
      "digest": {"algorithm": "sha256", "canonicalization": "RFC 8785", "value": "<64 hex>"},
      "lanes": {"1": {"rx_amp": 2, "rx_post": 3, "rx_pre": 1, "tx_eq": 4}, ...},
      "link": {"customer": "...", "link": "...", "operator": "...", "site": "..."},
      "margins": {"1": {"baseline": 5.1, "decision": "keep", "metric": "-log10(BER)", "tuned": 7.9}},
      "module": {"firmware": "3.1", "oui": "...", "pn": "...", "rev": "...", "sn": null, "vendor": "..."},
      "schema": "eqtune.profile",
      "session": "20261129-201500-rack12",
      "tool": "eqtune 0.1.0",
      "version": 1
    }

Integrity: ``digest.value`` = SHA-256 (FIPS 180-4) over the RFC 8785 JSON Canonicalization Scheme
(JCS) serialization of the whole document *without* its ``digest`` member: object members sorted by
UTF-16 code units, no insignificant whitespace, strings as ECMAScript ``JSON.stringify`` escapes them,
numbers in the ECMAScript ``Number.prototype.toString`` shortest form (RFC 8785 sections 3.2.2-3.2.3).

Tamper evidence goes one step further than the digest: a file must also be byte-identical (after
CRLF -> LF) to the rendering eqtune writes, so even a changed whitespace byte is refused. Edit a
profile by re-saving it from its session, never by hand.

``module.sn`` null means "any module of this vendor and part number"; a string pins one serial.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.config_schema import Field, Schema, fail, validate
from eqtune.errors import ProfileError
from eqtune.readers import check_path, check_text
from eqtune.serdes.knobs import MODULE_KNOBS
from eqtune.session.signing import SIGNATURE_SCHEMA

SCHEMA = "eqtune.profile"
VERSION = 1
KNOBS = MODULE_KNOBS
_MAX_CODE = 15  # CMIS per-lane EQ fields are 4 bits (CMIS 5.2 Table 8-47..8-52)


# ---------------------------------------------------------------------------------------------
# RFC 8785 JSON Canonicalization Scheme
# ---------------------------------------------------------------------------------------------
def _es_number(x: float | int) -> str:
    """ECMAScript Number::toString (ECMA-262 7.1.12.1) as RFC 8785 section 3.2.2.3 requires."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number")
    if isinstance(x, int):
        if abs(x) > 2**53:
            raise ProfileError(f"integer {x} is too large for a canonical JSON number (|x| <= 2^53)")
        return str(x)
    if not math.isfinite(x):
        raise ProfileError("NaN/Infinity cannot be stored in a profile")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))  # Python repr: shortest round-trip digits, like ECMAScript
    mant, _, exp = r.partition("e")
    e = int(exp) if exp else 0
    if "." in mant:
        ip, fp = mant.split(".")
    else:
        ip, fp = mant, ""
    digits = (ip + fp).lstrip("0")
    # decimal exponent n such that value = 0.d1d2... * 10^n
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    n = len(ip) + e - lead_zeros
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        ee = n - 1
        es = f"e{'+' if ee >= 0 else '-'}{abs(ee)}"
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + es
    return sign + s


def _es_string(s: str) -> str:
    # json.dumps(ensure_ascii=False) escapes exactly '"', '\\' and U+0000..U+001F, with the short
    # forms \b \f \n \r \t and lowercase \u00xx otherwise: the same as ECMAScript JSON.stringify.
    return json.dumps(s, ensure_ascii=False)


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) canonical UTF-8 serialization of plain JSON data."""
    parts: list[str] = []

    def emit(o: Any) -> None:
        if o is None:
            parts.append("null")
        elif o is True:
            parts.append("true")
        elif o is False:
            parts.append("false")
        elif isinstance(o, (int, float)):
            parts.append(_es_number(o))
        elif isinstance(o, str):
            parts.append(_es_string(o))
        elif isinstance(o, (list, tuple)):
            parts.append("[")
            for i, v in enumerate(o):
                if i:
                    parts.append(",")
                emit(v)
            parts.append("]")
        elif isinstance(o, dict):
            parts.append("{")
            keys = sorted(o, key=lambda k: str(k).encode("utf-16-be"))
            for i, k in enumerate(keys):
                if not isinstance(k, str):
                    raise TypeError("canonical JSON object keys must be strings")
                if i:
                    parts.append(",")
                parts.append(_es_string(k))
                parts.append(":")
                emit(o[k])
            parts.append("}")
        else:
            raise TypeError(f"not plain JSON data: {type(o).__name__}")

    emit(obj)
    return "".join(parts).encode("utf-8")


def content_digest(doc: dict[str, Any]) -> str:
    """SHA-256 hex over the JCS form of ``doc`` without its ``digest`` and ``signature`` members (the
    optional signature signs this digest: see :mod:`eqtune.session.signing`)."""
    body = {k: v for k, v in doc.items() if k not in ("digest", "signature")}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def render(doc: dict[str, Any]) -> str:
    """The exact text eqtune writes for a profile document."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


# ---------------------------------------------------------------------------------------------
# The profile
# ---------------------------------------------------------------------------------------------

def write_atomic(path: str | os.PathLike[str], text: str, *, what: str = "",
                 error: type[Exception] = ProfileError) -> Path:
    """Write ``text`` via a temporary file, fsync and rename: a reader never sees half a file. A failure
    is one ``error`` line naming the file (``what``, e.g. "profile ", is put before the path)."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        raise error(f"cannot write {what}{p}: {exc.strerror}; check the folder") from None
    return p


@dataclass
class Profile:
    """A tuning profile: per-lane module codes for one module type (or one serial)."""

    module: dict[str, Any]  # vendor, pn, sn (None = any), oui, rev, firmware
    lanes: dict[int, dict[str, int]]
    channel: str | None = None
    link: dict[str, Any] = field(default_factory=dict)
    margins: dict[int, dict[str, Any]] = field(default_factory=dict)
    session: str | None = None
    created: str = ""
    tool: str = ""
    digest: str = ""  # filled by to_document()/loads()
    signature: dict[str, str] | None = None  # optional (eqtune.session.signing): signs the digest
    # per lane, Tx input adaptive EQ on (True) or off (False) after the push; {}: the profile does not say
    tx_adaptive: dict[int, bool] = field(default_factory=dict)

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def from_identity(
        cls,
        identity: Any,
        lanes: dict[int, dict[str, int]],
        *,
        pin_serial: bool = False,
        **kw: Any,
    ) -> Profile:
        """Build a profile for the module identity (a ``ModuleIdentity`` or a dict)."""
        ident = identity if isinstance(identity, dict) else _asdict(identity)
        module = {
            "vendor": str(ident.get("vendor", "")).strip(),
            "oui": str(ident.get("oui", "")).strip(),
            "pn": str(ident.get("pn", "")).strip(),
            "rev": str(ident.get("rev", "")).strip(),
            "firmware": str(ident.get("firmware", "")).strip(),
            "sn": str(ident.get("sn", "")).strip() if pin_serial else None,
        }
        return cls(module=module, lanes={int(k): dict(v) for k, v in lanes.items()}, **kw)

    def to_document(self) -> dict[str, Any]:
        from eqtune import __version__

        doc: dict[str, Any] = {
            "schema": SCHEMA,
            "version": VERSION,
            "created": self.created or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "tool": self.tool or f"eqtune {__version__}",
            "session": self.session,
            "channel": self.channel,
            "link": dict(self.link),
            "module": dict(self.module),
            "lanes": {str(k): {n: int(c) for n, c in sorted(v.items())} for k, v in sorted(self.lanes.items())},
            "margins": {str(k): dict(v) for k, v in sorted(self.margins.items())},
        }
        if self.tx_adaptive:  # only when it says something: older profiles keep their digest
            doc["tx_adaptive"] = {str(k): bool(v) for k, v in sorted(self.tx_adaptive.items())}
        _check_document(doc, where="profile")
        doc["digest"] = {"algorithm": "sha256", "canonicalization": "RFC 8785", "value": content_digest(doc)}
        if self.signature is not None and self.digest and self.digest != doc["digest"]["value"]:
            self.signature = None  # the content changed since it was signed: the signature no longer applies
        if self.signature is not None:
            doc["signature"] = dict(self.signature)
        self.digest = doc["digest"]["value"]
        self.created, self.tool = doc["created"], doc["tool"]
        return doc

    def dumps(self) -> str:
        return render(self.to_document())

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (temp file + fsync + rename)."""
        return write_atomic(check_path(path, "profile", error=ProfileError), self.dumps(), what="profile ",
                            error=ProfileError)

    # -- loading -------------------------------------------------------------------------------
    @classmethod
    def loads(cls, text: str | bytes, *, where: str = "profile") -> Profile:
        """Parse and verify (schema, digest, exact rendering); raise ProfileError on any doubt."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ProfileError(f"{where} is not UTF-8 text (byte {exc.start}); it is damaged: "
                                   "re-save it from its session") from None
        try:
            check_text(text, where, error=ProfileError)
            doc = json.loads(text)
        except (RecursionError, ValueError) as exc:
            if not isinstance(exc, json.JSONDecodeError):
                raise ProfileError(f"{where} is not valid JSON ({type(exc).__name__}); it is damaged: re-save it "
                                   "with `eqtune profile save`") from None
            raise ProfileError(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                               "it is damaged: re-save it with `eqtune profile save`") from None
        if not isinstance(doc, dict):
            raise ProfileError(f"{where} is not a JSON object; it is not an eqtune profile")
        if doc.get("schema") != SCHEMA:
            raise ProfileError(f"{where} is not an eqtune profile (schema {doc.get('schema')!r}, "
                               f"expected {SCHEMA!r})")
        if doc.get("version") != VERSION:
            raise ProfileError(f"{where} has profile version {doc.get('version')!r}; this eqtune reads "
                               f"version {VERSION}: upgrade eqtune or re-save the profile")
        dg = doc.get("digest")
        if not isinstance(dg, dict) or dg.get("algorithm") != "sha256" or dg.get("canonicalization") != "RFC 8785" \
                or not isinstance(dg.get("value"), str) or not re.fullmatch(r"[0-9a-f]{64}", dg["value"]):
            raise ProfileError(f"{where} has no valid sha256 digest; it was not written by eqtune: "
                               "re-save it from its session")
        _check_document(doc, where=where)
        try:
            actual = content_digest(doc)
        except (TypeError, ProfileError) as exc:
            raise ProfileError(f"{where} content cannot be canonicalized ({exc}); re-save it") from None
        if actual != dg["value"]:
            raise ProfileError(f"{where} fails its integrity check (sha256 of the content is {actual[:12]}..., "
                               f"the file says {dg['value'][:12]}...): it was changed after saving; "
                               "do not push it, re-save it from its session")
        if text.replace("\r\n", "\n") != render(doc):
            raise ProfileError(f"{where} was edited after saving (its bytes differ from what eqtune writes "
                               "although the content digest matches); re-save it with `eqtune profile save`")
        return cls(
            module=dict(doc["module"]),
            lanes={int(k): {n: int(c) for n, c in v.items()} for k, v in doc["lanes"].items()},
            channel=doc.get("channel"),
            link=dict(doc.get("link") or {}),
            margins={int(k): dict(v) for k, v in (doc.get("margins") or {}).items()},
            session=doc.get("session"),
            created=doc["created"],
            tool=doc["tool"],
            digest=dg["value"],
            signature=dict(doc["signature"]) if "signature" in doc else None,
            tx_adaptive={int(k): bool(v) for k, v in (doc.get("tx_adaptive") or {}).items()},
        )

    def sign(self, key: Any) -> None:
        """Add a signature over the digest with ``key`` (:func:`eqtune.session.signing.load_key`)."""
        from eqtune.session.signing import sign

        self.to_document()  # fixes created/tool and the digest
        self.signature = sign(self.digest, key)

    def verify_signature(self, keys: list[Any]) -> Any:
        """The trusted key that signed this profile; ProfileError if none did (see signing.verify)."""
        from eqtune.session.signing import verify

        return verify(self.digest, self.signature, keys)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Profile:
        p = check_path(path, "profile", error=ProfileError)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise ProfileError(f"profile {p} not found; check the path") from None
        except OSError as exc:
            raise ProfileError(f"cannot read profile {p}: {exc.strerror}") from None
        if len(data) > 1_000_000:
            raise ProfileError(f"profile {p} is {len(data)} bytes; a profile is a few kB: wrong file?")
        return cls.loads(data, where=f"profile {p}")

    # -- use -----------------------------------------------------------------------------------
    def codes(self) -> dict[int, dict[str, int]]:
        return {k: dict(v) for k, v in sorted(self.lanes.items())}

    def describe_module(self) -> str:
        m = self.module
        from eqtune.textsafe import printable

        s = f"{m.get('vendor', '')} {m.get('pn', '')}".strip()
        return printable(s + (f" SN {m['sn']}" if m.get("sn") else " (any SN)"))

    def identity_mismatches(self, identity: Any) -> list[str]:
        """Differences that make the profile not apply to a module (empty list = it fits)."""
        ident = identity if isinstance(identity, dict) else _asdict(identity)
        out = []
        for key in ("vendor", "pn"):
            want = str(self.module.get(key, "")).strip()
            have = str(ident.get(key, "")).strip()
            if want.casefold() != have.casefold():
                out.append(f"{key.upper() if key == 'pn' else key} is {have!r}, the profile is for {want!r}")
        sn = self.module.get("sn")
        if sn and str(ident.get("sn", "")).strip() != sn:
            out.append(f"SN is {str(ident.get('sn', '')).strip()!r}, the profile is pinned to {sn!r}")
        return out

    def firmware_note(self, identity: Any) -> str:
        ident = identity if isinstance(identity, dict) else _asdict(identity)
        want = str(self.module.get("firmware", "")).strip()
        have = str(ident.get("firmware", "")).strip()
        if want and have and want != have:
            return f"firmware {have} differs from the tuned module's {want}; margins may differ"
        return ""

    def summary(self) -> dict[str, Any]:
        doc = self.to_document() if not self.digest else None
        return {
            "module": self.module, "lanes": {str(k): v for k, v in self.codes().items()},
            "channel": self.channel, "link": self.link,
            "margins": {str(k): v for k, v in self.margins.items()},
            "session": self.session, "created": self.created, "tool": self.tool,
            "digest": self.digest or (doc or {}).get("digest", {}).get("value", ""),
        }


def _asdict(obj: Any) -> dict[str, Any]:
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return dict(vars(obj))


_PLAIN = Field("value", "scalar", nullable=True)
PROFILE_SCHEMA = Schema((  # the profile document (module docstring), checked before its digest
    Field("schema", "any"), Field("version", "any"), Field("digest", "any"),
    Field("signature", "table", schema=SIGNATURE_SCHEMA),
    Field("created", "string", required=True, nonempty=True),
    Field("tool", "string", required=True, nonempty=True),
    Field("session", "string", nullable=True),
    Field("channel", "string", nullable=True),
    Field("link", "table", required=True, values=_PLAIN),
    Field("module", "table", required=True, schema=Schema((
        Field("vendor", "string", required=True, nonempty=True),
        Field("oui", "string", required=True),
        Field("pn", "string", required=True, nonempty=True),
        Field("rev", "string", required=True),
        Field("firmware", "string", required=True),
        Field("sn", "string", required=True, nonempty=True, nullable=True, hint="null = any serial"),
    ))),
    Field("lanes", "table", required=True, nonempty=True, values=Field(
        "codes", "table", nonempty=True, schema=Schema(tuple(
            Field(k, "integer", ge=0, le=_MAX_CODE, hint=f"an integer code 0..{_MAX_CODE}") for k in KNOBS)))),
    Field("margins", "table", required=True, values=Field("margin", "table", values=_PLAIN)),
    # per lane, the Tx input EQ mode the lane ends in: true = adaptive on (the profile then sets no
    # tx_eq), false = adaptive off with the profile's fixed tx_eq; absent: the profile does not say
    Field("tx_adaptive", "table", values=Field("adaptive", "bool")),
))


def _check_document(doc: dict[str, Any], *, where: str) -> None:
    """Schema check of a profile document (``PROFILE_SCHEMA``: types and value ranges, then the lane
    numbers); ProfileError naming the key path."""
    fix = "re-save the profile from its session"
    try:
        validate(doc, PROFILE_SCHEMA, where=where, error=ProfileError)
    except ProfileError as exc:
        raise ProfileError(f"{exc}; {fix}") from None
    for lane in doc["lanes"]:
        if not (lane.isascii() and lane.isdigit() and len(lane) <= 2 and 1 <= int(lane) <= 8 and str(int(lane)) == lane):
            raise fail(where, f"lanes.{lane}", "is not a lane number 1..8", fix, error=ProfileError)
    for lane in doc["margins"]:
        if lane not in doc["lanes"]:
            raise fail(where, f"margins.{lane}", "must belong to a lane in lanes", fix, error=ProfileError)
    for lane in doc.get("tx_adaptive") or {}:
        if not (lane.isdigit() and 1 <= int(lane) <= 8 and str(int(lane)) == lane):
            raise fail(where, f"tx_adaptive.{lane}", "is not a lane number 1..8", fix, error=ProfileError)

