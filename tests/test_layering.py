"""The package's rooms and floors, checked on the source itself.

Every ``import`` / ``from ... import`` statement in ``eqtune/**/*.py`` is read with :mod:`ast` (module
level, function level and ``TYPE_CHECKING`` blocks alike: a function-level import is still a
dependency, it only runs later). A module's *room* is its first sub-package (``eqtune.tune.live`` ->
``tune``); the top-level modules (errors, jsonutil, textsafe, resources, validate, ``__init__``) are
the ``helpers`` room; ``eqtune/__main__.py`` is the console entry point and belongs to ``cli``.

Two rules:

* no import runs back up the floors: every import from one room into another is listed in
  :data:`ALLOWED` below;
* no cycle crosses rooms: the graph of rooms built from the imports actually found has no cycle.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import eqtune

PACKAGE_DIR = Path(eqtune.__file__).resolve().parent

# The allowed dependencies between rooms: room -> the rooms it may import from. Floors, lowest first:
#
#   helpers                    errors, jsonutil, textsafe, resources, validate: import no room
#   channel < serdes < eye < tune     the simulation stack (serdes may use channel, eye both, tune all three)
#   drivers                    hardware only (transports, resource parsing, CMIS, SCPI instruments): the
#                              helpers and the knob vocabulary (serdes/knobs.py); never eye, tune, session
#                              or emulate (an ``emu:`` resource is opened through the scheme registry in
#                              drivers/schemes.py, a declarative "module:function" string, not an import)
#   emulate                    the emulators (link model, CMIS module, SCPI instruments, register bridge
#                              server, fault injection): stand in for hardware, so they sit above drivers
#                              and use the simulation stack up to eye
#   session                    journal, live tuner, profiles, push, report: tune + drivers + eye; never
#                              emulate (a session runs against any module, real or emulated)
#   study, watch               batch studies, fleet health watch (watch runs an emulated fleet)
#   tui, cli                   the front ends, at the top (cli starts the tui)
ALLOWED: dict[str, set[str]] = {
    "helpers": set(),
    "channel": {"helpers"},
    "serdes": {"helpers", "channel"},
    "eye": {"helpers", "channel", "serdes"},
    "tune": {"helpers", "channel", "serdes", "eye"},
    "drivers": {"helpers", "serdes"},
    "emulate": {"helpers", "channel", "serdes", "eye", "drivers"},
    "session": {"helpers", "channel", "serdes", "eye", "tune", "drivers"},
    "study": {"helpers", "channel", "serdes", "eye", "tune", "session"},
    "watch": {"helpers", "channel", "serdes", "eye", "drivers", "emulate", "session"},
    "tui": {"helpers", "channel", "serdes", "eye", "tune", "drivers", "emulate", "session", "study", "watch"},
    "cli": {"helpers", "channel", "serdes", "eye", "tune", "drivers", "emulate", "session", "study", "watch",
            "tui"},
}
ENTRY_POINTS = {"eqtune.__main__": "cli"}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def room_of(module: str) -> str:
    """``eqtune.tune.live`` -> ``tune``; top-level modules -> ``helpers``."""
    if module in ENTRY_POINTS:
        return ENTRY_POINTS[module]
    parts = module.split(".")
    if len(parts) >= 2 and (PACKAGE_DIR / parts[1]).is_dir():
        return parts[1]
    return "helpers"


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """(absolute eqtune module or attribute path, line) for every import statement in ``path``."""
    return imports_in(path.read_text(encoding="utf-8"), module_name(path), is_package=path.name == "__init__.py")


def imports_in(text: str, mod: str, *, is_package: bool = False) -> list[tuple[str, int]]:
    """The eqtune imports of source ``text`` of module ``mod`` (relative imports resolved)."""
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = mod.split(".") if is_package else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None:  # "from . import x": x is a sub-module or a name of the package
                out += [(f"{target}.{alias.name}", node.lineno) for alias in node.names]
            else:
                out.append((target, node.lineno))
    return [(t, ln) for t, ln in out if t == "eqtune" or t.startswith("eqtune.")]


def room_edges() -> dict[tuple[str, str], list[str]]:
    """(from room, to room) -> ["eqtune/x/y.py:LINE imports eqtune.z", ...] for imports between rooms."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        src = room_of(module_name(path))
        for target, line in imported_modules(path):
            dst = room_of(target)
            if dst != src:
                edges[(src, dst)].append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line} imports {target}")
    return edges


def room_cycles(pairs: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one room (Tarjan), each sorted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        graph[a].add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_allowed_table_itself_has_floors():
    """The table is a strict order (no room may import a room that may import it back) and names
    every sub-package that exists."""
    assert not room_cycles({(a, b) for a, deps in ALLOWED.items() for b in deps})
    rooms = {p.name for p in PACKAGE_DIR.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert rooms <= set(ALLOWED), f"rooms missing from ALLOWED: {sorted(rooms - set(ALLOWED))}"


def test_the_walker_sees_function_level_and_relative_imports():
    """The walker finds the imports this test exists for: inside functions, under TYPE_CHECKING, and
    relative ones; a walker that saw only module-level imports would pass a broken tree."""
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from eqtune.eye import EyeEngine\n"
            "def f():\n    from ..session import live\n    import eqtune.cli._common\n"
            "    from . import space\n")
    found = sorted(t for t, _ in imports_in(text, "eqtune.tune.live"))
    assert found == ["eqtune.cli._common", "eqtune.eye", "eqtune.session", "eqtune.tune.space"]
    assert [room_of(t) for t in found] == ["cli", "eye", "session", "tune"]
    assert room_of("eqtune.errors") == room_of("eqtune") == "helpers" and room_of("eqtune.__main__") == "cli"


def test_no_import_runs_back_up_the_floors():
    bad = {pair: where for pair, where in room_edges().items() if pair[1] not in ALLOWED.get(pair[0], set())}
    lines = [f"{a} -> {b}: {w}" for (a, b), ws in sorted(bad.items()) for w in ws]
    assert not lines, "imports against the floors (see ALLOWED in tests/test_layering.py):\n" + "\n".join(lines)


def test_no_cycle_crosses_rooms():
    edges = room_edges()
    cycles = room_cycles(set(edges))
    detail = [f"{a} -> {b}: {ws[0]}" for (a, b), ws in sorted(edges.items())
              if any(a in c and b in c for c in cycles)]
    assert not cycles, f"cycles between rooms {cycles}:\n" + "\n".join(detail)
