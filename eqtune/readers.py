"""Bounded readers of the TOML and JSON files eqtune reads (channels, SerDes profiles, studies, driver
definitions, tuning profiles, journal records): limits checked *before* the parser runs.

The standard parsers fail in ways that are not one-line errors: ``tomllib`` and ``json`` recurse once per
nesting level (a file of 10,000 ``[`` raises RecursionError), and since Python 3.11 an integer of more
than 4,300 digits raises a bare ValueError (CPython's ``int_max_str_digits``, CVE-2020-10735). So every
text is scanned first (one regular-expression pass that skips strings and comments):

* size: at most :data:`MAX_TEXT_BYTES` (16 MiB; the largest shipped file is ~10 kB);
* nesting of ``[`` / ``{``: at most :data:`MAX_DEPTH` (64) levels;
* a number literal: at most :data:`MAX_DIGITS` (100) digits in a row (a double has 17 significant ones);

and paths are checked for a NUL byte, length (:data:`MAX_PATH_CHARS`) and component length
(:data:`MAX_NAME_BYTES`, the NAME_MAX of Linux/macOS/Windows file systems) before any system call.
Every failure is one :class:`~eqtune.errors.EqtuneError` (the class the caller names) saying what is wrong.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from eqtune.errors import ConfigError, EqtuneError

MAX_TEXT_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
MAX_DIGITS = 100
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
MAX_NAME_BYTES = 255  # NAME_MAX (ext4, APFS, NTFS: 255)

# strings (TOML multi-line and one-line, basic and literal; JSON strings are basic strings), comments,
# brackets, digit runs (TOML allows '_' between digits)
_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""'
    r"|'''[\s\S]*?'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|[\[\]{}]"
    r"|[0-9][0-9_]*"
)


def check_text(text: str, where: str, *, error: type[EqtuneError] = ConfigError, max_bytes: int = MAX_TEXT_BYTES,
               max_depth: int = MAX_DEPTH, max_digits: int = MAX_DIGITS) -> None:
    """Raise ``error`` when ``text`` is too large, nests too deep or holds a too long number."""
    if len(text) > max_bytes:
        raise error(f"{where}: {len(text)} characters, more than {max_bytes} ({max_bytes // 1048576} MiB) that a "
                    "file of this kind may have; is it the right file?")
    depth = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        c = tok[0]
        if c in "[{":
            depth += 1
            if depth > max_depth:
                line = text.count("\n", 0, m.start()) + 1
                raise error(f"{where}: line {line}: tables or lists nested more than {max_depth} levels deep; "
                            "no eqtune file nests that deep: is it the right file?")
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c.isdigit() and len(tok) > max_digits:
            line = text.count("\n", 0, m.start()) + 1
            raise error(f"{where}: line {line}: a number with {len(tok)} digits (at most {max_digits}); "
                        "fix the value")


# one part of a dotted key: a bare key (possessive: no backtracking into it) or a quoted one; a chain starts
# only where a key can (a line start, after '{' or ','), so values are not searched and the search is linear
_KEY_PART = r"""(?:[^\s.=,\[\]{}#"']++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_LONG_DOTTED_KEY = re.compile(r"(?:^|(?<=[{,]))[ \t]*+" + _KEY_PART
                              + r"(?:[ \t]*+\.[ \t]*+" + _KEY_PART + "){" + str(MAX_DEPTH) + ",}", re.M)


def loads_toml(text: str, where: str, *, error: type[EqtuneError] = ConfigError) -> dict[str, Any]:
    """``tomllib.loads`` after :func:`check_text` and a bound on dotted keys (``a.a.a...``: each part is a
    nesting level, and tomllib takes quadratic time over them: 20,000 parts took 61 s). A syntax error is
    ``tomllib.TOMLDecodeError`` (each reader words its message); every other failure is one ``error``."""
    import tomllib

    check_text(text, where, error=error)
    m = _LONG_DOTTED_KEY.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise error(f"{where}: line {line}: a dotted key of more than {MAX_DEPTH} parts; no eqtune file nests "
                    "that deep: is it the right file?")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise  # the caller words its own "not valid TOML" message
    except (RecursionError, ValueError, MemoryError) as exc:  # not reached after check_text; kept as a floor
        raise error(f"{where}: cannot be read as TOML ({type(exc).__name__}); fix the file") from None


def loads_json(text: str | bytes, where: str, *, error: type[EqtuneError] = ConfigError) -> Any:
    """``json.loads`` after :func:`check_text` (NaN/Infinity refused: strict JSON); failures are one ``error``."""
    import json

    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{where}: not UTF-8 text (byte {exc.start})") from None
    check_text(text, where, error=error)

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON (RFC 8259)")

    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (RecursionError, ValueError, MemoryError) as exc:
        raise error(f"{where}: not valid JSON ({str(exc)[:80]})") from None


def check_path(path: str | os.PathLike[str], what: str, *, error: type[EqtuneError] = ConfigError) -> Path:
    """``path`` as a Path, refused (one ``error``) when it holds a NUL byte or is too long for a file system."""
    try:
        s = os.fspath(path)
    except TypeError:
        raise error(f"{what}: {path!r} is not a path") from None
    if isinstance(s, bytes):
        s = s.decode("utf-8", "replace")
    if "\0" in s:
        raise error(f"{what}: the path {s[:60]!r} holds a NUL byte; give a real file name")
    if len(s) > MAX_PATH_CHARS:
        raise error(f"{what}: a path of {len(s)} characters (at most {MAX_PATH_CHARS}); give a real file name")
    for part in Path(s).parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise error(f"{what}: the name {part[:40]!r}... has {len(part)} characters (a file name has at most "
                        f"{MAX_NAME_BYTES} bytes); give a shorter name")
    return Path(s)
