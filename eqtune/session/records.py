"""Shape checks of journal records before anything derives state from them.

A journal is a file: a hand edit, another tool or a bug elsewhere can leave a record whose fields have
the wrong type (a margin that is a string, codes that are a list, a lane that is a table). The checks
here run once when a journal is loaded for show / report / resume and turn such a record into one
:class:`~eqtune.errors.SessionError` naming the record and field, instead of a KeyError or TypeError
deep in the report. Unknown record types and extra fields are allowed (newer eqtune versions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from eqtune.errors import SessionError


class _Bad(Exception):
    pass


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_num(x: Any) -> bool:
    return (isinstance(x, (int, float)) and not isinstance(x, bool)) and math.isfinite(float(x))


def _lane_key(k: Any) -> int:
    try:
        ln = int(k)
    except (TypeError, ValueError):
        raise _Bad(f"lane {k!r} is not a lane number") from None
    if not 1 <= ln <= 8 or str(ln) != str(k).strip():
        raise _Bad(f"lane {k!r} is not a lane 1..8")
    return ln


def _codes(c: Any, what: str) -> None:
    if not isinstance(c, Mapping) or not all(isinstance(k, str) and _is_int(v) and 0 <= v <= 255 for k, v in c.items()):
        raise _Bad(f"{what} must be a table of knob = code (0..255)")


def _lane_codes(d: Any, what: str) -> None:
    if not isinstance(d, Mapping):
        raise _Bad(f"{what} must be a table of lanes")
    for k, c in d.items():
        _lane_key(k)
        _codes(c, f"{what}.{k}")


def _readings(d: Any, what: str, *, margin_required: bool) -> None:
    if not isinstance(d, Mapping):
        raise _Bad(f"{what} must be a table of lanes")
    for k, r in d.items():
        _lane_key(k)
        if not isinstance(r, Mapping):
            raise _Bad(f"{what}.{k} must be a table")
        if "codes" not in r and margin_required:
            raise _Bad(f"{what}.{k}.codes is missing")
        if "codes" in r:
            _codes(r["codes"], f"{what}.{k}.codes")
        m = r.get("margin")
        if (m is None and margin_required) or (m is not None and not _is_num(m)):
            raise _Bad(f"{what}.{k}.margin must be a finite number")
        if "counts" in r and r["counts"] is not None and not isinstance(r["counts"], Mapping):
            raise _Bad(f"{what}.{k}.counts must be a table")


def _opt(rec: Mapping, key: str, ok, what: str) -> None:
    if key in rec and rec[key] is not None and not ok(rec[key]):
        raise _Bad(f"{key} must be {what}")


def _check(rec: Mapping[str, Any]) -> None:
    t = rec.get("type")
    if not isinstance(t, str):
        raise _Bad("type must be a text")
    _opt(rec, "t", _is_num, "a time in seconds")
    if "group" in rec and rec["group"] is not None and not _is_int(rec["group"]):
        raise _Bad("group must be a whole number")
    if t == "session":
        _opt(rec, "config", lambda v: isinstance(v, Mapping), "a table")
        _opt(rec, "metadata", lambda v: isinstance(v, Mapping), "a table")
    elif t == "original":
        _lane_codes(rec.get("codes"), "codes")
        _opt(rec, "tx_adaptive", lambda v: isinstance(v, list) and all(_is_int(x) for x in v), "a list of lanes")
    elif t == "plan":
        _opt(rec, "knobs", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of knobs")
        _opt(rec, "groups", lambda v: isinstance(v, list) and all(
            isinstance(g, list) and all(_is_int(x) for x in g) for g in v), "a list of lane lists")
        _opt(rec, "metric", lambda v: isinstance(v, str), "a text")
    elif t in ("baseline", "verify", "measure"):
        _readings(rec.get("lanes"), "lanes", margin_required=t != "measure" or True)
    elif t == "decision":
        if not _is_int(rec.get("lane")) or not 1 <= rec["lane"] <= 8:
            raise _Bad("lane must be a lane 1..8")
        if rec.get("action") not in ("keep", "restore"):
            raise _Bad("action must be keep or restore")
        _codes(rec.get("codes"), "codes")
        for k in ("baseline", "verified"):
            _opt(rec, k, _is_num, "a finite number")
        _opt(rec, "tx_adaptive", lambda v: isinstance(v, bool), "true or false")
    elif t == "device":
        _opt(rec, "identity", lambda v: isinstance(v, Mapping), "a table")
        _opt(rec, "role", lambda v: isinstance(v, str), "a text")
    elif t in ("apply", "restore"):
        if "codes" in rec and rec["codes"] is not None:
            _lane_codes(rec["codes"], "codes")
        _opt(rec, "tx_adaptive", lambda v: isinstance(v, list) and all(_is_int(x) for x in v), "a list of lanes")
        _opt(rec, "lanes", lambda v: isinstance(v, list) and all(_is_int(x) for x in v), "a list of lanes")
    elif t == "end":
        _opt(rec, "status", lambda v: isinstance(v, str), "a text")
        _opt(rec, "message", lambda v: isinstance(v, str), "a text")
    for k in ("reason", "phase"):
        _opt(rec, k, lambda v: isinstance(v, str), "a text")


def check_records(records: list[dict[str, Any]], where: str) -> None:
    """Raise SessionError naming the first record whose fields have the wrong shape."""
    for rec in records:
        try:
            _check(rec)
        except _Bad as exc:
            raise SessionError(
                f"{where}: record seq {rec.get('seq')} ({str(rec.get('type'))[:32]!r}) is malformed: {exc}; "
                "the journal was edited or damaged: keep a copy and start a new session") from None
