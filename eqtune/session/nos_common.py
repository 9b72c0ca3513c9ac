"""What the network-OS formats share: reading and writing their JSON files, port lists, the facts
about the target module that every export and import is checked against, and a structural diff.

A network OS re-applies SI settings at every module initialisation from its own files (SONiC's
``optics_si_settings.json`` and ``media_settings.json``, FBOSS's ``transceiverConfigOverrides``), while
the codes ``eqtune profile push`` writes live in the module's volatile control sets. These helpers
keep the format modules (:mod:`eqtune.session.nos_sonic`, :mod:`eqtune.session.nos_fboss`,
:mod:`eqtune.session.nos_merge`) small.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.errors import InputError, ProfileError
from eqtune.serdes.knobs import MODULE_KNOBS
from eqtune.session.profile import write_atomic as _write_atomic

MAX_NOS_FILE_BYTES = 16_000_000  # real platform media_settings.json files reach ~1 MB
CMIS_NIBBLE_MAX = 15  # CMIS per-lane EQ fields are 4 bits (CMIS 5.2 Table 8-47..8-52)
MAX_PORT = 4096


class NosFormatError(ProfileError):
    """A network-OS file or an export/import request does not fit the format or the module."""


class NoEntryError(NosFormatError):
    """The NOS file applies nothing to this module on this port (it runs its own defaults there)."""


@dataclass
class ModuleFacts:
    """What an export or import is checked against: the module's identity and what it advertises.

    From a module (``--module``: page 00h identity and page 01h maxima) or, without one, from the
    profile's identity with the CMIS 4-bit ceiling as the only maximum (``source`` says which)."""

    vendor: str
    pn: str
    lanes: int
    knob_values: dict[str, tuple[int, ...]]
    source: str = "profile"  # "module RESOURCE" or "profile"

    def max_of(self, knob: str) -> int | None:
        vals = self.knob_values.get(knob)
        return max(vals) if vals else None

    def check_code(self, knob: str, lane: int, code: int, *, where: str) -> None:
        """One-line refusal of a code the module would not take (a lane beyond the port, a control
        it does not advertise, a value above its advertised maximum)."""
        if lane < 1 or lane > self.lanes:
            raise NosFormatError(f"{where}: lane {lane} is beyond the port ({self.lanes} lanes, {self.source}); "
                                 "export only the port's lanes")
        vals = self.knob_values.get(knob)
        if not vals:
            raise NosFormatError(f"{where}: {knob} on lane {lane} is a control this module does not advertise "
                                 f"({self.source}); drop it: the NOS's staging would fail and re-initialise the port")
        if code not in vals:
            above = code > max(vals)
            raise NosFormatError(f"{where}: {knob}={code} on lane {lane} is "
                                 + (f"above the module's advertised maximum {max(vals)}" if above
                                    else f"not an advertised code ({', '.join(map(str, vals))})")
                                 + f" ({self.source}); the NOS's staging would fail and re-initialise the port")


def facts_from_identity(ident: Mapping[str, Any], lanes: int) -> ModuleFacts:
    """Facts without a module: a profile's (or the user's) vendor/PN, ``lanes`` lanes, any 4-bit code."""
    allc = tuple(range(CMIS_NIBBLE_MAX + 1))
    return ModuleFacts(vendor=str(ident.get("vendor", "")).strip(), pn=str(ident.get("pn", "")).strip(),
                       lanes=lanes, knob_values={k: allc for k in MODULE_KNOBS},
                       source="no module given: CMIS 4-bit limit only")


def facts_from_module(module: Any, resource: str) -> ModuleFacts:
    """Facts read (read-only) from an open ``CmisModule``: identity and page 01h capabilities."""
    ident = module.identity()
    caps = module.capabilities()
    get = ident.get if isinstance(ident, dict) else (lambda k, d="": getattr(ident, k, d))
    return ModuleFacts(vendor=str(get("vendor", "")).strip(), pn=str(get("pn", "")).strip(), lanes=int(caps.lanes),
                       knob_values=dict(caps.knob_values()), source=f"module {resource}")


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------
def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            # json.load keeps the last of two equal keys silently: a merge would then drop an entry
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def read_nos_json(path: str | os.PathLike[str], *, what: str) -> dict[str, Any]:
    """A NOS JSON file as an ordered dict (key order is precedence in SONiC's parsers); one-line
    errors for a missing, oversized, non-JSON or duplicate-key file."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_NOS_FILE_BYTES:
            raise InputError(f"{what} {p} is {size} bytes (limit {MAX_NOS_FILE_BYTES}); wrong file?")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} {p} not found; check the path") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {p} is not UTF-8 text (byte {exc.start}); give the JSON file itself") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {p}: {exc.strerror}") from None
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except ValueError as exc:
        raise InputError(f"{what} {p}: {exc}; the NOS would keep only the last one: fix the file first") from None
    if not isinstance(doc, dict):
        raise InputError(f"{what} {p} is not a JSON object")
    return doc


def render_nos_json(doc: Mapping[str, Any]) -> str:
    """The text eqtune writes for a NOS file: 4-space indent as the platform files use, key order
    kept (it is precedence), one trailing newline."""
    return json.dumps(doc, indent=4, ensure_ascii=False, allow_nan=False) + "\n"


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write via a temporary file, fsync and rename (``eqtune.session.profile.write_atomic``); a failure
    is one InputError line."""
    return _write_atomic(path, text, error=InputError)


# ---------------------------------------------------------------------------------------------
# ports
# ---------------------------------------------------------------------------------------------
def parse_ports(text: str | Iterable[str]) -> list[int]:
    """Physical port numbers from "5", "1-4,9" or repeated options (1-based, as the platform files)."""
    parts = [text] if isinstance(text, str) else list(text)
    out: set[int] = set()
    for part in parts:
        for tok in str(part).split(","):
            tok = tok.strip()
            if not tok:
                continue
            try:
                if "-" in tok:
                    a, b = (int(x) for x in tok.split("-", 1))
                else:
                    a = b = int(tok)
            except ValueError:
                raise InputError(f"--port {tok!r}: give physical port numbers such as 5 or 1-4,9") from None
            if not (1 <= a <= b <= MAX_PORT):
                raise InputError(f"--port {tok!r}: ports are 1..{MAX_PORT}, a range low-high")
            out.update(range(a, b + 1))
    if not out:
        raise InputError("give at least one --port (physical port number as in the platform files)")
    return sorted(out)


def port_ranges(ports: Iterable[int], *, single_as_range: bool = True) -> str:
    """"1-4,9" for [1, 2, 3, 4, 9]; a single port becomes "N-N" (SONiC's GLOBAL_MEDIA_SETTINGS reads
    only keys with a range or a comma, optics_si_parser.py lines 64-77) unless ``single_as_range`` is
    False (text for people)."""
    ps = sorted(set(ports))
    runs: list[tuple[int, int]] = []
    for p in ps:
        if runs and p == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], p)
        else:
            runs.append((p, p))
    if len(runs) == 1 and single_as_range:
        return f"{runs[0][0]}-{runs[0][1]}"
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


# ---------------------------------------------------------------------------------------------
# structural diff
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """One leaf that differs: ``path`` from the root, ``old``/``new`` (None where absent)."""

    path: tuple[str, ...]
    old: Any
    new: Any

    def line(self) -> str:
        where = " / ".join(self.path)
        if self.old is None:
            return f"+ {where}: {json.dumps(self.new)}"
        if self.new is None:
            return f"- {where}: {json.dumps(self.old)}"
        return f"~ {where}: {json.dumps(self.old)} -> {json.dumps(self.new)}"


@dataclass
class Diff:
    changes: list[Change] = field(default_factory=list)

    def lines(self, limit: int = 40) -> list[str]:
        out = [c.line() for c in self.changes[:limit]]
        if len(self.changes) > limit:
            out.append(f"... and {len(self.changes) - limit} more")
        return out


def structural_diff(old: Any, new: Any, path: tuple[str, ...] = ()) -> Diff:
    """Every leaf added, removed or changed between two JSON values (objects by key, lists by index)."""
    d = Diff()
    _diff_into(old, new, path, d.changes)
    return d


def _diff_into(old: Any, new: Any, path: tuple[str, ...], out: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in list(old) + [k for k in new if k not in old]:
            if k not in new:
                _leaves(old[k], path + (k,), out, removed=True)
            elif k not in old:
                _leaves(new[k], path + (k,), out, removed=False)
            else:
                _diff_into(old[k], new[k], path + (k,), out)
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            p = path + (f"[{i}]",)
            if i >= len(new):
                _leaves(old[i], p, out, removed=True)
            elif i >= len(old):
                _leaves(new[i], p, out, removed=False)
            else:
                _diff_into(old[i], new[i], p, out)
    elif old != new or type(old) is not type(new):
        out.append(Change(path, old, new))


def _leaves(v: Any, path: tuple[str, ...], out: list[Change], *, removed: bool) -> None:
    if isinstance(v, dict) and v:
        for k, x in v.items():
            _leaves(x, path + (k,), out, removed=removed)
    elif isinstance(v, list) and v:
        for i, x in enumerate(v):
            _leaves(x, path + (f"[{i}]",), out, removed=removed)
    else:
        out.append(Change(path, v, None) if removed else Change(path, None, v))
