"""The one JSON helper: plain, strict JSON values from what eqtune computes.

Used by the CLI's ``--json`` output, the session journal, study results, reports and every
``to_dict()``. Strict JSON (RFC 8259) has no NaN or Infinity: a non-finite float becomes ``null``,
which the readers treat as "not measured" / "closed eye". No other module defines its own
"make JSON-safe" helper (``tests/test_jsonutil.py`` checks).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePath
from typing import Any, TypeAlias, cast

#: a plain JSON value (what ``to_dict()`` methods return: no numpy types, no NaN or inf)
JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"


def finite_or_none(x: Any) -> float | None:
    """``float(x)`` when that is a finite number, else None (None, NaN, inf, unparsable text, objects)."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def to_json_value(obj: Any) -> Any:
    """``obj`` as plain JSON data, recursively.

    * mappings -> dicts with ``str`` keys; lists, tuples, sets -> lists;
    * numpy scalars -> Python ``bool``/``int``/``float``; numpy arrays -> nested lists;
    * objects with ``to_dict()`` -> that dict; dataclass instances -> their fields (in order);
    * paths -> ``str``;
    * non-finite floats (NaN, +/-inf, also inside arrays) -> None.

    ``str``, ``int``, ``bool`` and None pass unchanged.

    Raises
    ------
    TypeError
        For any other object (strict JSON has no representation for it).
    """
    t = type(obj)
    if t is str or t is bool or obj is None:  # the common cases first, by exact type (fast)
        return obj
    if t is float:
        return obj if math.isfinite(obj) else None
    if t is int:
        return obj
    if t is dict:
        return {k if type(k) is str else str(k): to_json_value(v) for k, v in obj.items()}
    if t is list or t is tuple:
        return [to_json_value(v) for v in obj]
    if isinstance(obj, str | bool):
        return str(obj) if isinstance(obj, str) else bool(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): to_json_value(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_json_value(v) for v in obj]
    if isinstance(obj, PurePath):
        return str(obj)
    np = _numpy()
    if np is not None:
        if isinstance(obj, np.ndarray):
            return to_json_value(obj.tolist())
        if isinstance(obj, np.generic):
            return to_json_value(obj.item())
    if hasattr(obj, "to_dict"):
        return to_json_value(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json_value(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def dumps(obj: Any, **kwargs: Any) -> str:
    """Strict JSON text of :func:`to_json_value` (``obj``); keyword arguments as ``json.dumps``
    (``indent``, ``sort_keys``, ``separators``, ``ensure_ascii``); never NaN or Infinity."""
    return json.dumps(to_json_value(obj), allow_nan=False, **kwargs)


class LazyList:
    """A JSON array whose elements are made while it is written (:func:`iter_dumps`), one at a time: a document
    with a history of 383,180 measurements is never held whole, as values or as text. Only the writers of
    :func:`iter_dumps` accept it (``dumps`` refuses it)."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = items

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)


def iter_dumps(obj: Any, *, indent: int = 2, _level: int = 0) -> Iterator[str]:
    """The text of ``dumps(obj, indent=indent)`` in pieces (joined, the same characters), where a
    :class:`LazyList` anywhere in a dict is written as the list it yields, element by element. A value that
    holds no LazyList is one piece. Works because JSON text has a newline only between tokens (a string's
    newline is escaped), so a nested value's text is its own ``dumps`` with every newline indented further."""
    pad = " " * (indent * _level)
    inner = pad + " " * indent
    if isinstance(obj, LazyList):
        first = True
        for item in obj:
            yield ("[\n" if first else ",\n") + inner
            yield from iter_dumps(item, indent=indent, _level=_level + 1)
            first = False
        yield "[]" if first else "\n" + pad + "]"
        return
    if isinstance(obj, Mapping) and obj and _holds_lazy(obj):
        for i, (k, v) in enumerate(obj.items()):
            yield ("{\n" if i == 0 else ",\n") + inner + json.dumps(str(k)) + ": "
            yield from iter_dumps(v, indent=indent, _level=_level + 1)
        yield "\n" + pad + "}"
        return
    yield dumps(obj, indent=indent).replace("\n", "\n" + pad)


def _holds_lazy(obj: Any) -> bool:
    if isinstance(obj, LazyList):
        return True
    return isinstance(obj, Mapping) and any(_holds_lazy(v) for v in obj.values())


def _numpy() -> Any:
    """numpy if it is already imported (only then can ``obj`` be a numpy object), else None."""
    return sys.modules.get("numpy")


def to_json_dict(obj: Mapping[str, object]) -> dict[str, JsonValue]:
    """``to_json_value`` of a mapping, typed as a JSON object (keys become strings)."""
    return cast("dict[str, JsonValue]", to_json_value(dict(obj)))
