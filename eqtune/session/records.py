"""Shape checks of journal records before anything derives state from them.

A journal is a file: a hand edit, another tool or a bug elsewhere can leave a record whose fields have
the wrong type (a margin that is a string, codes that are a list, a lane that is a table). The checks
here run once when a journal is loaded for show / report / resume and turn such a record into one
:class:`~eqtune.errors.SessionError` naming the record and field, instead of a KeyError or TypeError
deep in the report. Unknown record types and extra fields are allowed (newer eqtune versions).

The shapes are ``eqtune.config_schema`` schemas, one per record type (``RECORD_SCHEMAS``); a field
given as null is treated as absent, as the tuner writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eqtune.config_schema import Field, Schema, fail, validate
from eqtune.errors import EqtuneError, SessionError

_FIX = "the journal was edited or damaged: keep a copy and start a new session"
_CODES = Field("codes", "table", values=Field("code", "integer", ge=0, le=255), hint="a table of knob = code (0..255)")
_LANE_CODES = Field("codes", "table", values=_CODES, hint="a table of lanes")  # lane "1".."8" -> codes
_LANE_LIST = Field("lanes", "list", nullable=True, items=Field("lane", "integer"), hint="a list of lanes")
_TEXT = Field("text", "string", nullable=True)
_READING = Schema((
    Field("codes", "table", required=True, values=_CODES.values, hint=_CODES.hint),
    Field("margin", "number", required=True, hint="a finite number"),
    Field("counts", "table", nullable=True),
), extra="allow")
_COMMON = (
    Field("type", "string", required=True),
    Field("t", "number", nullable=True, unit="s"),
    Field("group", "integer", nullable=True),
    Field("reason", "string", nullable=True), Field("phase", "string", nullable=True),
)
_READINGS = Schema(_COMMON + (
    Field("lanes", "table", required=True, values=Field("reading", "table", schema=_READING)),), extra="allow")
RECORD_SCHEMAS: dict[str, Schema] = {
    "session": Schema(_COMMON + (Field("config", "table", nullable=True), Field("metadata", "table", nullable=True)),
                      extra="allow"),
    "original": Schema(_COMMON + (Field("codes", "table", required=True, values=_CODES, hint=_LANE_CODES.hint),
                                  Field("tx_adaptive", "list", nullable=True, items=_LANE_LIST.items)), extra="allow"),
    "plan": Schema(_COMMON + (
        Field("knobs", "list", nullable=True, items=Field("knob", "string")),
        Field("groups", "list", nullable=True, items=Field("group", "list", items=Field("lane", "integer")),
              hint="a list of lane lists"),
        Field("metric", "string", nullable=True)), extra="allow"),
    "baseline": _READINGS, "verify": _READINGS, "measure": _READINGS,
    "decision": Schema(_COMMON + (
        Field("lane", "integer", required=True, ge=1, le=8),
        Field("action", "string", required=True, choices=("keep", "restore")),
        Field("codes", "table", required=True, values=_CODES.values, hint=_CODES.hint),
        Field("baseline", "number", nullable=True), Field("verified", "number", nullable=True),
        Field("tx_adaptive", "bool", nullable=True)), extra="allow"),
    "device": Schema(_COMMON + (Field("identity", "table", nullable=True), Field("role", "string", nullable=True)),
                     extra="allow"),
    "apply": Schema(_COMMON + (Field("codes", "table", nullable=True, values=_CODES, hint=_LANE_CODES.hint),
                               Field("tx_adaptive", "list", nullable=True, items=_LANE_LIST.items),
                               _LANE_LIST), extra="allow"),
    "end": Schema(_COMMON + (Field("status", "string", nullable=True), Field("message", "string", nullable=True)),
                  extra="allow"),
}
RECORD_SCHEMAS["restore"] = RECORD_SCHEMAS["apply"]
_ANY_RECORD = Schema(_COMMON, extra="allow")  # a record type of a newer eqtune: the common fields only
_LANE_TABLES = {"original": "codes", "apply": "codes", "restore": "codes", "baseline": "lanes", "verify": "lanes",
                "measure": "lanes"}


def _check_lane_keys(rec: Mapping[str, Any], where: str) -> None:
    """Lane keys of the record's per-lane table are ``"1"``..``"8"``."""
    key = _LANE_TABLES.get(str(rec.get("type")))
    table = rec.get(key) if key else None
    for k in table or {}:
        try:
            ln = int(k)
        except (TypeError, ValueError):
            raise fail(where, f"{key}.{k}", "is not a lane number", _FIX, error=SessionError) from None
        if not 1 <= ln <= 8 or str(ln) != str(k).strip():
            raise fail(where, f"{key}.{k}", "is not a lane 1..8", _FIX, error=SessionError)


def check_records(records: list[dict[str, Any]], where: str) -> None:
    """Raise SessionError naming the first record (and its key path) whose fields have the wrong shape."""
    for rec in records:
        if not isinstance(rec, Mapping):
            raise SessionError(f"{where}: a record is not a JSON object; {_FIX}")
        w = f"{where}: record seq {rec.get('seq')} ({str(rec.get('type'))[:32]!r})"
        try:
            validate(rec, RECORD_SCHEMAS.get(str(rec.get("type")), _ANY_RECORD), where=w, error=SessionError)
        except EqtuneError as exc:
            raise SessionError(f"{exc}; {_FIX}") from None
        _check_lane_keys(rec, w)
