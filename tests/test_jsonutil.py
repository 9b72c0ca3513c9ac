"""The one JSON helper (eqtune.jsonutil): what it converts, that its output is strict JSON, and that no
other module keeps its own "make JSON-safe" copy."""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import pytest

from eqtune.jsonutil import LazyList, dumps, finite_or_none, iter_dumps, to_json_value

PACKAGE = Path(__file__).resolve().parents[1] / "eqtune"


@dataclass
class _Inner:
    where: Path
    taps: tuple[float, ...]


@dataclass
class _Outer:
    name: str
    inner: _Inner
    arr: np.ndarray
    tags: set[str] = field(default_factory=set)


class _HasToDict:
    def to_dict(self) -> dict:
        return {"margin": float("nan"), "codes": {1: np.int64(3)}}


def test_numpy_values_become_python_values_and_non_finite_become_null():
    out = to_json_value({"f32": np.float32(0.5), "i64": np.int64(7), "b": np.bool_(True),
                         "nan32": np.float32("nan"), "arr": np.array([[1.0, np.inf], [-np.inf, 2.0]]),
                         "ints": np.arange(3), "neg_inf": -math.inf})
    assert out == {"f32": 0.5, "i64": 7, "b": True, "nan32": None, "arr": [[1.0, None], [None, 2.0]],
                   "ints": [0, 1, 2], "neg_inf": None}
    assert type(out["i64"]) is int and type(out["b"]) is bool and type(out["f32"]) is float
    assert all(type(v) is int for v in out["ints"])


def test_dataclasses_paths_sets_and_to_dict_objects():
    obj = _Outer("x", _Inner(PurePosixPath("/a/b.s4p"), (0.1, float("nan"))), np.array([1, 2]), {"t"})
    assert to_json_value(obj) == {"name": "x", "inner": {"where": "/a/b.s4p", "taps": [0.1, None]},
                                  "arr": [1, 2], "tags": ["t"]}
    # to_dict() output is cleaned too (a NaN margin is null, an int key is a string)
    assert to_json_value([_HasToDict()]) == [{"margin": None, "codes": {"1": 3}}]


def test_unknown_objects_are_refused():
    with pytest.raises(TypeError, match="not JSON serializable: object"):
        to_json_value({"x": object()})


def test_dumps_is_strict_json_and_keeps_json_dumps_formatting():
    doc = {"b": [1, 2.5, None, "é"], "a": {"x": np.float64(1e-12)}, "nan": float("nan")}
    text = dumps(doc, indent=2, sort_keys=True)
    assert "NaN" not in text and json.loads(text)["nan"] is None
    # for data that was already plain and finite, the bytes are exactly json.dumps's
    plain = {"b": [1, 2.5, None, "é"], "a": {"x": 1e-12}}
    for kw in ({}, {"indent": 2}, {"sort_keys": True, "separators": (",", ":")}, {"ensure_ascii": False}):
        assert dumps(plain, **kw) == json.dumps(plain, **kw)


@pytest.mark.parametrize(("value", "expected"), [(1, 1.0), ("2.5", 2.5), (np.float32(0.25), 0.25), (None, None),
                                                 (float("nan"), None), (math.inf, None), ("abc", None),
                                                 (object(), None), ("1e999", None)])
def test_finite_or_none(value, expected):
    assert finite_or_none(value) == expected


# --------------------------------------------------------------------------- one helper only

# A "make JSON-safe" copy shows itself as one of these shapes (the ones the six copies had):
# * a conditional expression that yields None when a value is not finite (math/np isfinite, isnan, isinf);
# * json.dump(s)(..., default=HOOK): a private conversion hook;
# * a function named like the old copies.
_COPY_NAMES = {"_plain", "_jsonable", "jsonable", "_clean", "clean", "_json_default", "_json_safe", "_fin",
               "_finite", "_opt", "_to_json"}
# json.dumps(default=str) of the study digest is a content hash, not output: its bytes must not change.
_ALLOWED_DEFAULT = {("study/spec.py", "digest")}


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return None


def _enclosing_functions(tree: ast.AST) -> dict[ast.AST, str]:
    owner: dict[ast.AST, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for n in ast.walk(fn):
                if n is not fn:
                    owner.setdefault(n, fn.name)
    return owner


def _json_safe_copies() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "jsonutil.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owner = _enclosing_functions(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.IfExp) and any(isinstance(b, ast.Constant) and b.value is None
                                                   for b in (node.body, node.orelse)):
                if any(_call_name(c) in ("isfinite", "isnan", "isinf") for c in ast.walk(node.test)):
                    found.append(f"{rel}:{node.lineno}: finite-or-None conversion {ast.unparse(node)[:60]}")
            if (_call_name(node) in ("dump", "dumps") and isinstance(node, ast.Call)
                    and any(k.arg == "default" for k in node.keywords)
                    and (rel, owner.get(node)) not in _ALLOWED_DEFAULT):
                found.append(f"{rel}:{node.lineno}: json.dumps(default=...) hook")
            if isinstance(node, ast.FunctionDef) and node.name in _COPY_NAMES:
                found.append(f"{rel}:{node.lineno}: def {node.name}")
    return found


def test_no_module_outside_jsonutil_defines_a_json_safe_helper():
    found = _json_safe_copies()
    assert not found, "use eqtune.jsonutil (to_json_value / dumps / finite_or_none) instead:\n" + "\n".join(found)


def test_the_scan_finds_a_planted_copy(tmp_path, monkeypatch):
    """The scan is not vacuous: a module with one of the old copies is reported."""
    (tmp_path / "jsonutil.py").write_text("")
    (tmp_path / "bad.py").write_text("import math\n\ndef _num(x):\n    return x if math.isfinite(x) else None\n"
                                     "def _plain(o):\n    return o\n"
                                     "import json\nS = json.dumps({}, default=float)\n")
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path)
    found = _json_safe_copies()
    assert any("finite-or-None" in f for f in found)
    assert any("def _plain" in f for f in found)
    assert any("default=" in f for f in found)


def _doc(history):
    return {"objective": "eye_height", "baseline": {"codes": {"a": 1}, "metrics": {}}, "empty": {}, "none": [],
            "screen_s": float("nan"), "history": history, "search": {"mode": "grid", "why": "line\nbreak \u00b5"},
            "nested": {"inner": {"h": history}}}


@pytest.mark.parametrize("n", [0, 1, 3])
def test_iter_dumps_writes_a_lazy_list_as_the_text_of_the_whole_list(n):
    """A LazyList (a tune's history, written as made) gives the characters one dumps of the list gives, at any
    depth, empty or not; the document's other values too (NaN -> null, escaped newlines, non-ASCII)."""
    rows = [{"index": i, "codes": {"x": i / 3}, "metrics": {"m": np.float64(i), "bad": math.inf}} for i in range(n)]
    made = []

    def gen():
        for r in rows:
            made.append(r["index"])
            yield r

    lazy = _doc(LazyList(gen()))
    lazy["nested"]["inner"]["h"] = LazyList(iter(rows))
    pieces = list(iter_dumps(lazy, indent=2))
    assert "".join(pieces) == dumps(_doc(rows), indent=2)
    assert made == list(range(n))
    assert len(pieces) >= n  # one piece (at least) per element: never the whole list as one text
    with pytest.raises(TypeError, match="LazyList"):
        dumps({"h": LazyList([])})
