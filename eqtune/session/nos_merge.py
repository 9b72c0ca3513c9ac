"""Merge eqtune's entries into an existing NOS file without touching anyone else's.

A platform file holds other vendors', other ports' and other speeds' entries. A merge adds eqtune's
entries (each a key path such as PORT_MEDIA_SETTINGS / "5" / "100G_SPEED" / "ACME-PN1") and nothing
else: containers on the way are created when absent, a new key is put first among its siblings (SONiC
takes the first port range and the first vendor key that match, in file order, so a broad pattern
such as "ACME" or a range "1-128" written earlier must not shadow eqtune's narrower entry), and an existing entry with other values is a
*conflict*: shown as a diff and left as it is unless the user asks to replace it. Afterwards the
format's own lookup must select eqtune's entry on every exported port, or nothing is written.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eqtune.session.nos_common import Diff, NosFormatError, structural_diff

Path = tuple[str, ...]


@dataclass
class MergeResult:
    doc: dict[str, Any]
    added: list[Path] = field(default_factory=list)
    replaced: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    conflicts: list[tuple[Path, Diff]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.replaced)

    def lines(self) -> list[str]:
        out = [f"added    {' / '.join(p)}" for p in self.added]
        out += [f"replaced {' / '.join(p)}" for p in self.replaced]
        out += [f"same     {' / '.join(p)}" for p in self.unchanged]
        for p, d in self.conflicts:
            out.append(f"CONFLICT {' / '.join(p)}: the file holds other values (kept; --replace to write eqtune's):")
            out += [f"    {ln}" for ln in d.lines()]
        return out + [f"note: {n}" for n in self.notes]


def _get(doc: dict[str, Any], path: Path) -> Any:
    node: Any = doc
    for k in path:
        if not isinstance(node, dict) or k not in node:
            return None
        node = node[k]
    return node


def _put_first(node: dict[str, Any], key: str, value: Any) -> None:
    """Add ``key`` before its siblings: SONiC reads port-range keys and vendor keys in file order and
    takes the first match, so a new, narrower entry must come before a broader one (a new port range
    holding only eqtune's vendor key and no Default changes nothing for other modules)."""
    items = list(node.items())
    node.clear()
    node[key] = value
    node.update(items)


def merge_entries(existing: dict[str, Any], new_doc: dict[str, Any], entries: Sequence[Path], *,
                  replace: bool = False) -> MergeResult:
    """``existing`` with every entry of ``new_doc`` at ``entries`` merged in (``existing`` is not
    modified). Conflicts are kept as they are unless ``replace``."""
    doc = copy.deepcopy(existing)
    res = MergeResult(doc)
    for path in entries:
        value = _get(new_doc, path)
        if value is None:
            raise NosFormatError(f"internal: no entry at {' / '.join(path)} in the export")
        node: Any = doc
        for i, k in enumerate(path[:-1]):
            if k not in node:
                _put_first(node, k, {})
            node = node[k]
            if not isinstance(node, dict):
                raise NosFormatError(f"the file holds {type(node).__name__} at {' / '.join(path[:i + 1])} where "
                                     "an object is expected; fix the file before merging")
        last = path[-1]
        if last not in node:
            _put_first(node, last, copy.deepcopy(value))
            res.added.append(path)
        elif node[last] == value:
            res.unchanged.append(path)
        elif replace:
            node[last] = copy.deepcopy(value)  # same position: its precedence among siblings is kept
            res.replaced.append(path)
        else:
            res.conflicts.append((path, structural_diff(node[last], value, path)))
    return res


def check_selected(doc: dict[str, Any], ports: Sequence[int], wanted: Callable[[int], Path],
                   resolve: Callable[[dict[str, Any], int], Path | None], *, what: str,
                   fix: str = "export with --scope global or edit that entry by hand") -> None:
    """After a merge, the format's lookup must pick eqtune's entry on every port; one line if not."""
    for port in ports:
        got = resolve(doc, port)
        want = wanted(port)
        if got != want:
            sel = " / ".join(got) if got else "nothing"
            raise NosFormatError(f"{what}: after the merge SONiC would apply {sel} to port {port}, not eqtune's "
                                 f"{' / '.join(want)} (an earlier or GLOBAL entry takes precedence); nothing written: "
                                 + fix)
