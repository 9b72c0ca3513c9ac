"""Parametric channel variants for studies: a library/TOML channel with its host trace changed.

``parametric_channel(base, {"length_in": 12, "material": "fr4"}, temperature_c=85, aggressors=True)``
reads the base channel definition (``eqtune.channel``'s TOML format), replaces the length and/or
material of its host trace segment (the trace segment named ``host trace``, else the first trace
segment), and builds the result with ``eqtune.channel.channel_from_definition`` — the channel package
stays the only place that turns definitions into S-parameters. File references are made absolute.
The parsed base definition is cached per process (keyed by the file's path, size and mtime), and the
Touchstone files it names are cached by ``eqtune.channel.touchstone``, so a study parses each file
once per worker process.
"""

from __future__ import annotations

import copy
import math
import threading
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eqtune.errors import ConfigError
from eqtune.readers import loads_toml

TRACE_PARAMS = ("length_in", "length_mm", "material")


def _host_trace_index(segments: list[dict], where: str) -> int:
    traces = [i for i, s in enumerate(segments) if isinstance(s, dict) and s.get("type") == "trace"]
    if not traces:
        raise ConfigError(f"{where}: has no trace segment whose length or material a sweep could change; "
                          "sweep only temperature_c/crosstalk for it, or use a base with a [[segments]] trace")
    named = [i for i in traces if str(segments[i].get("name", "")).lower() == "host trace"]
    return (named or traces)[0]


def variant_definition(doc: Mapping[str, Any], params: Mapping[str, Any], *, base_dir: Path,
                       where: str) -> dict[str, Any]:
    """A copy of a channel definition with the host trace's ``params`` applied and file paths absolute."""
    out = {k: v for k, v in doc.items() if k not in ("segments", "aggressors")}
    segments = [dict(s) if isinstance(s, dict) else s for s in doc.get("segments", [])]
    aggressors = [dict(a) if isinstance(a, dict) else a for a in doc.get("aggressors", [])]
    for table in (*segments, *aggressors):
        if isinstance(table, dict) and isinstance(table.get("file"), str) and not Path(table["file"]).is_absolute():
            table["file"] = str((base_dir / table["file"]).resolve())
    trace_params = {k: v for k, v in params.items() if k in TRACE_PARAMS}
    if trace_params:
        seg = segments[_host_trace_index(segments, where)]
        if "length_in" in trace_params or "length_mm" in trace_params:
            for k in ("length_in", "length_mm", "length_m"):
                seg.pop(k, None)
        seg.update(trace_params)
    if "name" in out and trace_params:
        out["name"] = f"{out['name']} " + " ".join(f"{k}={v}" for k, v in sorted(trace_params.items()))
    out["segments"] = segments
    if aggressors:
        out["aggressors"] = aggressors
    return out


def _toml_value(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ConfigError(f"{where}: {v!r} cannot be written")
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x, where) for x in v) + "]"
    raise ConfigError(f"{where}: value {v!r} of type {type(v).__name__} is not supported in a channel variant")


def dumps_definition(doc: Mapping[str, Any], where: str = "channel") -> str:
    """Minimal TOML writer for channel definitions (scalar keys + arrays of flat tables)."""
    lines = []
    tables = {k: v for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
    for k, v in doc.items():
        if k not in tables:
            lines.append(f"{k} = {_toml_value(v, f'{where}.{k}')}")
    for name, rows in tables.items():
        for i, row in enumerate(rows):
            lines.append(f"\n[[{name}]]")
            for k, v in row.items():
                lines.append(f"{k} = {_toml_value(v, f'{where}.{name}[{i}].{k}')}")
    return "\n".join(lines) + "\n"


_DOCS: dict[tuple, dict] = {}
_DOCS_LOCK = threading.Lock()


def _base_definition(path: Path) -> dict:
    """The parsed TOML of ``path`` (a deep copy of a per-process cache keyed by path, size, mtime)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _DOCS_LOCK:
        doc = _DOCS.get(key)
    if doc is None:
        try:
            doc = loads_toml(path.read_text(encoding="utf-8"), str(path))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
        with _DOCS_LOCK:
            if len(_DOCS) >= 16:
                _DOCS.clear()
            _DOCS[key] = doc
    return copy.deepcopy(doc)


def parametric_channel(base: str, params: Mapping[str, Any], *, temperature_c: float | None = None,
                       aggressors: bool = True, df_hz: float | None = None):
    """Load ``base`` (library name or channel TOML) with its host trace changed by ``params``; ``df_hz``:
    the frequency step (None: the definition's own)."""
    from eqtune.channel import channel_from_definition
    from eqtune.channel.library import resolve

    path = resolve(base)
    if path.suffix.lower() != ".toml":
        raise ConfigError(f"{base}: a length/material sweep needs a channel definition (.toml or library name) "
                          "with a trace segment, not a Touchstone file")
    doc = _base_definition(path)
    if "material" in params:
        from eqtune.channel.materials import get_material

        get_material(params["material"])  # unknown material -> ConfigError naming the choices
    variant = variant_definition(doc, params, base_dir=path.parent, where=str(path))
    desc = " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k in TRACE_PARAMS)
    return channel_from_definition(variant, base_dir=path.parent, name=path.stem,
                                   source=f"{path} [{desc}]" if desc else str(path),
                                   temperature_c=temperature_c, aggressors=aggressors, df_hz=df_hz)
