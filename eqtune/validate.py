"""Small checks of numbers from users and files: finite, in range, of the right type.

Every failure is an :class:`~eqtune.errors.InputError` (or the subclass given) whose message names the
value and says what is allowed, so a NaN, an infinity or a string where a number belongs never reaches
an allocation, a loop bound or a register write.
"""

from __future__ import annotations

import math
import re
from typing import Any

from eqtune.errors import InputError


def _range_text(gt: float | None, ge: float | None, lt: float | None, le: float | None) -> str:
    lo = f"> {gt:g}" if gt is not None else (f">= {ge:g}" if ge is not None else "")
    hi = f"< {lt:g}" if lt is not None else (f"<= {le:g}" if le is not None else "")
    return " and ".join(p for p in (lo, hi) if p) or "finite"


def finite(value: Any, what: str, *, gt: float | None = None, ge: float | None = None, lt: float | None = None,
           le: float | None = None, error: type[InputError] = InputError) -> float:
    """``value`` as a finite float within the bounds, else ``error`` naming ``what``.

    Booleans and strings are refused (a TOML ``true`` or ``"1e3"`` is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{what} must be a number (got {value!r})")
    try:
        x = float(value)
    except OverflowError:
        raise error(f"{what} = {value} is too large") from None
    if not math.isfinite(x):
        raise error(f"{what} must be a finite number (got {value!r})")
    bad = ((gt is not None and not x > gt) or (ge is not None and not x >= ge)
           or (lt is not None and not x < lt) or (le is not None and not x <= le))
    if bad:
        raise error(f"{what} = {value!r} is out of range: it must be {_range_text(gt, ge, lt, le)}")
    return x


def integer(value: Any, what: str, *, ge: int | None = None, le: int | None = None,
            error: type[InputError] = InputError) -> int:
    """``value`` as an int within ``ge``..``le`` (a float with an integral value is accepted)."""
    if isinstance(value, bool):
        raise error(f"{what} must be a whole number (got {value!r})")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise error(f"{what} must be a whole number (got {value!r})")
    if (ge is not None and value < ge) or (le is not None and value > le):
        lo = "" if ge is None else f">= {ge}"
        hi = "" if le is None else f"<= {le}"
        raise error(f"{what} = {value} is out of range: it must be {' and '.join(p for p in (lo, hi) if p)}")
    return value


_LANE_PART = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def lane_list(text: str, what: str, *, max_lane: int = 8, error: type[InputError] = InputError) -> list[int] | None:
    """A lane selection as users type it: ``1``, ``1,3``, ``1-4,7`` (ASCII digits), or ``all`` / empty
    for every lane (None). Sorted, unique. Refused with one line: a part that is empty (``1,,2``), a
    range that runs backwards (``4-1``), a lane outside 1..``max_lane``, or anything else (full-width
    digits, signs, ``1.5``). Bounds are checked on the numbers before any range is built."""
    text = (text or "").strip()
    if not text or text.lower() == "all":
        return None
    hint = f"give lanes 1..{max_lane} like 1-4 or 1,3,5 (or all)"
    out: set[int] = set()
    for part in text.split(","):
        m = _LANE_PART.fullmatch(part.strip())
        if m is None:
            shown = part.strip()[:20]
            raise error(f"{what}: lanes {text[:40]!r}: {'an empty part' if not shown else repr(shown)} is not "
                        f"a lane or a range; {hint}")
        if max(len(g) for g in m.groups() if g is not None) > 6:
            raise error(f"{what}: lanes {text[:40]!r}: lanes are 1..{max_lane}")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise error(f"{what}: lanes {text[:40]!r}: the range {a}-{b} runs backwards; write {b}-{a}")
        if not (1 <= a <= max_lane and 1 <= b <= max_lane):
            raise error(f"{what}: lanes {text[:40]!r}: lanes are 1..{max_lane}")
        out.update(range(a, b + 1))
    return sorted(out)
