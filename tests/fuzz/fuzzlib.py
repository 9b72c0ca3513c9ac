"""Mutations of valid inputs and the contract every input must meet.

Contract: whatever the bytes of a file or the text of a numeric option, eqtune either
accepts it or fails with an :class:`~eqtune.errors.EqtuneError` whose message is one line - which the
CLI prints as ``eqtune: error: ...`` with exit code 2 - never another exception (a traceback) and
never a hang (each input runs under a wall-clock limit).
"""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from eqtune.errors import EqtuneError

PER_INPUT_LIMIT_S = 10  # a hang is a failure; the slowest legitimate input here takes well under 1 s

# fixed seed (derandomize) so CI sees the same inputs every run; no example database on disk
FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])

def fuzz(n: int) -> settings:
    """The suite's settings with ``n`` generated inputs (env FUZZ_SCALE multiplies them, e.g. 0.1 locally)."""
    import os

    return settings(FUZZ, max_examples=max(1, int(n * float(os.environ.get("FUZZ_SCALE", "1")))))


# values that broke or could break parsers and range checks
NASTY_TEXT = ["nan", "inf", "-inf", "-1e308", "1e308", "1e400", "0", "-0", "-1", "1e-320", "99999999999999999999",
              '"x"', "true", "[]", "{}", "[1, 2]", '""', "-99999", "0.5", "7", "1e6", "-1e6", "1e-6"]
NASTY_JSON: list[Any] = [None, True, False, 0, -1, 1e308, -1e308, 2**63, -(2**63), 0.5, "", "x", "nan", [], {},
                         [1, 2], {"a": 1}, "\x1b[31m", "1", 9, 1e-300]
_NUM_RE = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@contextmanager
def time_limit(seconds: int = PER_INPUT_LIMIT_S):
    """Fail an input that runs longer than ``seconds`` (SIGALRM; main thread only)."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield
        return

    def boom(signum, frame):  # noqa: ARG001
        raise TimeoutError(f"input took longer than {seconds} s (a hang)")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def meets_contract(fn: Callable[[], Any]) -> str | None:
    """Run ``fn``; None if it returned, the error line if it raised an EqtuneError (one line);
    anything else propagates and fails the test."""
    with time_limit():
        try:
            fn()
        except EqtuneError as exc:
            msg = str(exc)
            assert msg and "\n" not in msg.strip(), f"multi-line error: {msg!r}"
            assert "Traceback" not in msg
            return msg
    return None


def cli_contract(result) -> None:
    """A CliRunner result: exit 0, or exit 2 with exactly one line 'eqtune: error: ...' (with ``--json``:
    nothing on stderr and one JSON object ``{"error": {...}}`` on stdout); never a traceback."""
    out = result.output or ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncaught {type(result.exception).__name__}: {result.exception}") from result.exception
    assert "Traceback" not in out, out
    assert result.exit_code in (0, 2), (result.exit_code, out)
    if result.exit_code == 2:
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        if not lines:  # --json: the error is the JSON object on stdout
            import json

            err = json.loads(result.stdout)["error"]
            assert err["exit_code"] == 2 and err["message"] and "\n" not in err["message"], out
            return
        assert len(lines) == 1 and lines[0].startswith("eqtune: error: "), out


@st.composite
def mutated_bytes(draw, seed: bytes, *, text: bool = True) -> bytes:
    """``seed`` with 1-4 edits: a number replaced by a nasty value, bytes flipped/inserted/deleted,
    a line duplicated or dropped, the file truncated, a non-UTF-8 byte inserted."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["number", "number", "number", "flip", "insert", "delete", "dupline", "dropline",
                                   "truncate", "nonutf8"]))
        if not data:
            break
        if op == "number":
            nums = list(_NUM_RE.finditer(bytes(data)))
            if nums:
                m = nums[draw(st.integers(0, len(nums) - 1))]
                data[m.start():m.end()] = draw(st.sampled_from(NASTY_TEXT)).encode()
        elif op == "flip":
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(st.binary(min_size=1, max_size=8)) if not text else \
                draw(st.sampled_from([b"=", b"[", b"]", b"{", b",", b'"', b"\n", b"#", b" ", b"\x00", b"\t", b"\\"]))
        elif op == "delete":
            i = draw(st.integers(0, len(data) - 1))
            del data[i:i + draw(st.integers(1, 16))]
        elif op in ("dupline", "dropline"):
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            if op == "dupline":
                lines.insert(i, lines[i])
            else:
                del lines[i]
            data = bytearray(b"\n".join(lines))
        elif op == "truncate":
            del data[draw(st.integers(0, len(data) - 1)):]
        else:
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xe9", b"\x80\x80", b"\xfe\xff"]))
    return bytes(data)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated_json(draw, seed: Any) -> Any:
    """``seed`` (a parsed JSON value) with 1-3 leaves or subtrees replaced by type-confused values."""
    doc = json.loads(json.dumps(seed))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = paths[draw(st.integers(0, len(paths) - 1))]
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if draw(st.integers(0, 9)) == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = json.loads(json.dumps(draw(st.sampled_from(NASTY_JSON))))  # a fresh copy
    return doc
