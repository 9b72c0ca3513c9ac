"""One validation layer for the files users write: declarative field specs and one ``validate``.

A channel TOML, a SerDes profile, a study spec, a driver definition, a tuning profile and a journal
record are each described by a :class:`Schema` (its :class:`Field` s: name, kind, unit, range,
required / default, allowed values, nested tables, list items). :func:`validate` checks a parsed
document against it and returns a new ``dict`` with the values coerced (``int`` -> ``float`` for
numbers, strings stripped / case-folded when asked) and the defaults filled in. Rules that tie fields
together (``min <= default <= max``, "exactly one of library / file / base") stay with the module that
owns the format and report through :func:`fail`, so every message has the same shape, on one line::

    <file>: <key path>: <what is wrong>; <what to do>

e.g. ``channels/x.toml: segments[1].delay_ps: must be >= 0 ps, got -3; negative values are not
physical``. The file is ``where``; the key path uses ``.`` for tables and ``[i]`` for list items.
Every failure is the ``error`` class given (default :class:`~eqtune.errors.ConfigError`), so the CLI
prints it and exits 2.

TOML types only: booleans are never numbers, strings are never numbers (``"1e3"`` is refused), NaN
and infinities are refused (TOML allows ``nan`` and ``inf``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from eqtune.errors import ConfigError, EqtuneError

Kind = Literal["number", "integer", "string", "bool", "scalar", "table", "list", "any"]
_MISSING: Final = object()
MISSING: Final[Any] = _MISSING
"""``Field.default`` when there is none: an optional field without a default is absent when not given."""

_KIND_TEXT: Final[dict[str, str]] = {
    "number": "a number", "integer": "a whole number", "string": "a string", "bool": "true or false",
    "scalar": "a plain value", "table": "a table", "list": "a list", "any": "a value",
}


@dataclass(frozen=True)
class Field:
    """One key of a table.

    Parameters
    ----------
    name
        The key as written in the file.
    kind
        ``number`` (finite int or float, returned as float), ``integer`` (int, not bool), ``string``,
        ``bool``, ``scalar`` (a string, finite number or boolean), ``table`` (nested ``schema`` if given,
        else each value checked by ``values``), ``list`` (each element checked by ``items``), ``any``
        (not checked).
    unit
        Shown after numbers in messages (``GBd``, ``dB``, ``ps``); documentation otherwise.
    gt, ge, lt, le
        Bounds of numbers and integers (strict / inclusive).
    required
        A missing key is an error.
    default
        Filled in when the key is missing (not validated; :data:`MISSING` = stays absent).
    choices
        Allowed values (strings after ``fold``, or numbers).
    fold
        ``"upper"`` / ``"lower"``: case-fold a string before ``choices`` (``pam4`` -> ``PAM4``).
    pattern
        Strings: a regular expression the whole string must match (say the form in ``hint``).
    nonempty
        Strings: not blank (stripped); lists and tables: at least one element.
    items
        The spec of each list element (its ``name`` is ignored).
    schema
        The nested table's schema (``kind="table"``).
    values
        The spec of every value of a table whose keys are data (lanes, knob names), without ``schema``.
    nullable
        ``null`` (JSON) / None is allowed as the value.
    scalar_ok
        Lists: a single value stands for a one-element list.
    min_len, max_len
        Lists: element count bounds.
    hint
        What to do, appended to every message about this field.
    """

    name: str
    kind: Kind = "any"
    unit: str = ""
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    required: bool = False
    default: Any = MISSING
    choices: tuple[Any, ...] | None = None
    fold: Literal["upper", "lower"] | None = None
    pattern: str | None = None
    nonempty: bool = False
    items: Field | None = None
    schema: Schema | None = None
    values: Field | None = None
    nullable: bool = False
    scalar_ok: bool = False
    min_len: int | None = None
    max_len: int | None = None
    hint: str = ""


@dataclass(frozen=True)
class Schema:
    """The keys of one table. ``extra``: ``"reject"`` unknown keys (the default) or ``"allow"`` them
    (passed through unchecked, e.g. records a newer eqtune may write). An unknown-key message lists the
    allowed keys, or says ``keys_text`` instead when given (a compact form such as ``width_mil|mm|um``);
    ``hint`` follows it, and follows "must be a table" when the document is something else."""

    fields: tuple[Field, ...]
    extra: Literal["reject", "allow"] = "reject"
    hint: str = ""
    keys_text: str = ""
    by_name: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {f.name: f for f in self.fields})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


def join_path(path: str, key: str | int) -> str:
    """``a.b`` + ``c`` -> ``a.b.c``; ``a`` + ``2`` -> ``a[2]``; ``""`` + ``c`` -> ``c``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def message(where: str, path: str, what: str, hint: str = "") -> str:
    """The one-line message: ``where: path: what; hint`` (empty parts left out)."""
    head = ": ".join(p for p in (where, path) if p)
    text = f"{head}: {what}" if head else what
    return f"{text}; {hint}" if hint else text


def fail(where: str, path: str, what: str, hint: str = "", *,
         error: type[EqtuneError] = ConfigError) -> EqtuneError:
    """An ``error`` with :func:`message` (raise it: ``raise fail(...)``)."""
    return error(" ".join(message(where, path, what, hint).split()))


def _unit(f: Field) -> str:
    return f" {f.unit}" if f.unit else ""


def _bounds_text(f: Field) -> str:
    lo = f"> {f.gt:g}" if f.gt is not None else (f">= {f.ge:g}" if f.ge is not None else "")
    hi = f"< {f.lt:g}" if f.lt is not None else (f"<= {f.le:g}" if f.le is not None else "")
    return " and ".join(p for p in (lo, hi) if p)


def _in_bounds(f: Field, x: float) -> bool:
    return not ((f.gt is not None and not x > f.gt) or (f.ge is not None and not x >= f.ge)
                or (f.lt is not None and not x < f.lt) or (f.le is not None and not x <= f.le))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bad(f: Field, where: str, path: str, error: type[EqtuneError], what: str) -> EqtuneError:
    return fail(where, path, what, f.hint, error=error)


def check_value(value: Any, f: Field, *, where: str, path: str,
                error: type[EqtuneError] = ConfigError) -> Any:
    """``value`` checked against ``f`` (the key path is ``path``); the coerced value or ``error``."""

    kind = f.kind
    if value is None and f.nullable:
        return None
    if kind == "scalar":
        if not isinstance(value, (str, int, float)) or (isinstance(value, float) and not math.isfinite(value)):
            raise _bad(f, where, path, error, f"must be a string, a finite number or true/false, got {_type_name(value)}")
        return value
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(f, where, path, error, f"must be {_KIND_TEXT[kind]}{_unit(f) and ' (' + f.unit + ')'}, got {_show(value)}")
        if kind == "integer" and not isinstance(value, int):
            raise _bad(f, where, path, error, f"must be {_KIND_TEXT[kind]}, got {_show(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise _bad(f, where, path, error, f"must be a finite number, got {_show(value)}")
        num: float | int = float(value) if kind == "number" else int(value)
        if not _in_bounds(f, float(num)):
            raise _bad(f, where, path, error, f"must be {_bounds_text(f)}{_unit(f)}, got {num:g}")
        if f.choices is not None and num not in f.choices:
            raise _bad(f, where, path, error, f"{num:g} is not allowed; use one of {', '.join(f'{c:g}' for c in f.choices)}")
        return num
    if kind == "string":
        if not isinstance(value, str):
            raise _bad(f, where, path, error, f"must be a string, got {_show(value)}")
        text = value.strip() if f.nonempty else value
        if f.nonempty and not text:
            raise _bad(f, where, path, error, "must be a non-empty string")
        if f.fold == "upper":
            text = text.upper()
        elif f.fold == "lower":
            text = text.lower()
        if f.pattern is not None and re.fullmatch(f.pattern, text) is None:
            raise _bad(f, where, path, error, f"{_show(value)} has the wrong form")
        if f.choices is not None and text not in f.choices:
            raise _bad(f, where, path, error, f"{_show(value)} is unknown; use one of {', '.join(str(c) for c in f.choices)}")
        return text
    if kind == "bool":
        if not isinstance(value, bool):
            raise _bad(f, where, path, error, f"must be true or false, got {_show(value)}")
        return value
    if kind == "table":
        if not isinstance(value, Mapping):
            raise _bad(f, where, path, error, f"must be a table, got {_type_name(value)}")
        if f.nonempty and not value:
            raise _bad(f, where, path, error, "must not be empty")
        if f.schema is None:
            if f.values is None:
                return dict(value)
            return {k: check_value(v, f.values, where=where, path=join_path(path, str(k)), error=error)
                    for k, v in value.items()}
        return validate(value, f.schema, where=where, path=path, error=error)
    if kind == "list":
        if not isinstance(value, (list, tuple)):
            if not f.scalar_ok:
                raise _bad(f, where, path, error, f"must be a list, got {_type_name(value)}")
            value = [value]
            scalar = True
        else:
            scalar = False
        n = len(value)
        if (f.nonempty or (f.min_len or 0) >= 1) and n == 0:
            raise _bad(f, where, path, error, "empty list: give at least one value")
        if (f.min_len is not None and n < f.min_len) or (f.max_len is not None and n > f.max_len):
            lo, hi = f.min_len, f.max_len
            want = (f"{lo}" if lo == hi else f"{lo}..{hi}" if lo is not None and hi is not None
                    else f"at least {lo}" if lo is not None else f"at most {hi}")
            raise _bad(f, where, path, error, f"must have {want} elements, got {n}")
        if f.items is None:
            return list(value)
        return [check_value(v, f.items, where=where, path=path if scalar else join_path(path, i), error=error)
                for i, v in enumerate(value)]
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, bool):
        return f"{value!r}".lower()
    return _show(value)


def validate(data: Any, schema: Schema, *, where: str, path: str = "",
             error: type[EqtuneError] = ConfigError) -> dict[str, Any]:
    """Check the table ``data`` against ``schema``; a new dict of coerced values with defaults.

    Parameters
    ----------
    data
        A parsed TOML/JSON table.
    schema
        Its schema.
    where
        The file (or other source) named first in every message.
    path
        The key path of ``data`` inside the document (``""`` = the top level).
    error
        The exception class raised (a :class:`~eqtune.errors.EqtuneError`).

    Raises
    ------
    error
        On the first problem, in the schema's field order after the unknown-key check.
    """
    if not isinstance(data, Mapping):
        raise fail(where, path, f"must be a table, got {_type_name(data)}", schema.hint, error=error)
    if schema.extra == "reject":
        unknown = [k for k in data if k not in schema.by_name]
        if unknown:
            hint = f"allowed keys: {schema.keys_text or ', '.join(schema.names)}" + (
                f"; {schema.hint}" if schema.hint else "")
            raise fail(where, join_path(path, str(unknown[0])), "unknown key", hint, error=error)
    out: dict[str, Any] = {}
    for f in schema.fields:
        if f.name not in data:
            if f.required:
                raise fail(where, join_path(path, f.name), "missing",
                           f.hint or f"add {f.name} = {_KIND_TEXT[f.kind]}", error=error)
            if f.default is not MISSING:  # a nested table's default gets its own defaults
                out[f.name] = (validate(f.default, f.schema, where=where, path=join_path(path, f.name), error=error)
                               if f.kind == "table" and f.schema is not None else f.default)
            continue
        out[f.name] = check_value(data[f.name], f, where=where, path=join_path(path, f.name), error=error)
    if schema.extra == "allow":
        for k, v in data.items():
            if k not in schema.by_name:
                out[str(k)] = v
    return out


def check_keys(data: Mapping[str, Any], allowed: Sequence[str], *, where: str, path: str = "",
               hint: str = "", error: type[EqtuneError] = ConfigError) -> None:
    """Refuse keys of ``data`` outside ``allowed`` (the unknown-key message of :func:`validate`)."""
    unknown = [k for k in data if k not in allowed]
    if unknown:
        text = f"allowed keys: {', '.join(allowed)}" + (f"; {hint}" if hint else "")
        raise fail(where, join_path(path, str(unknown[0])), "unknown key", text, error=error)
