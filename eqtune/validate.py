"""Small checks of numbers from users and files: finite, in range, of the right type.

Every failure is an :class:`~eqtune.errors.InputError` (or the subclass given) whose message names the
value and says what is allowed, so a NaN, an infinity or a string where a number belongs never reaches
an allocation, a loop bound or a register write.
"""

from __future__ import annotations

import math
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


MAX_LANE = 8  # CMIS lanes per bank (CMIS 5.2 section 8.1)
_LANE_HELP = "give lane numbers 1..{n}, a range like 1-4, a comma list like 1,3 or 'all'"


def _lane_text(text: str, given: str, what: str, max_lane: int) -> int:
    """One lane number: ASCII digits only (``int`` would also take '１' or '1_0'), checked before use."""
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 6:
        raise InputError(f"{what} {given[:40]!r}: {t[:20]!r} is not a lane number; "
                         + _LANE_HELP.format(n=max_lane))
    lane = int(t)
    if not 1 <= lane <= max_lane:
        raise InputError(f"{what} {given[:40]!r}: lane {lane} does not exist (lanes are 1..{max_lane}); "
                         + _LANE_HELP.format(n=max_lane))
    return lane


def parse_lanes(raw: Any, what: str = "--lane", *, default: tuple[int, ...] = (1,),
                max_lane: int = MAX_LANE) -> list[int]:
    """Lane selection text -> sorted lanes; the one lane parser for every command and file.

    Accepts lane numbers, ranges ``a-b``, comma lists (also repeated options: a list or tuple of texts)
    and ``all`` (returns ``[]``: every lane). Nothing given -> ``default``. Refused with one line
    (:class:`~eqtune.errors.InputError`): a selection that names no lane (``""``, ``","``), an empty item
    (``1,,2``), a backwards range (``4-1``), a lane outside 1..``max_lane``, a non-ASCII digit, ``all``
    mixed with numbers. Both ends of a range are checked before the range is built.
    """
    if raw is None or raw == () or raw == []:
        return list(default)
    if isinstance(raw, bool) or not isinstance(raw, (int, str, list, tuple)):
        raise InputError(f"{what} {raw!r}: " + _LANE_HELP.format(n=max_lane))
    items = [str(raw)] if isinstance(raw, (int, str)) else [str(x) for x in raw]
    out: set[int] = set()
    every = False
    for given in items:
        if len(given) > 200:
            raise InputError(f"{what}: {len(given)} characters is not a lane selection; "
                             + _LANE_HELP.format(n=max_lane))
        parts = [p.strip() for p in given.split(",")]
        if not any(parts):
            raise InputError(f"{what} {given!r} names no lane; " + _LANE_HELP.format(n=max_lane))
        for part in parts:
            if not part:
                raise InputError(f"{what} {given!r} has an empty item; " + _LANE_HELP.format(n=max_lane))
            if part.lower() == "all":
                every = True
                continue
            a, dash, b = part.partition("-")
            if dash:
                if not a.strip():
                    raise InputError(f"{what} {given!r}: lane {part} does not exist (lanes are 1..{max_lane}); "
                                     + _LANE_HELP.format(n=max_lane))
                lo, hi = _lane_text(a, given, what, max_lane), _lane_text(b, given, what, max_lane)
                if hi < lo:
                    raise InputError(f"{what} {given!r}: the range {part} runs backwards; write {hi}-{lo}")
                out.update(range(lo, hi + 1))
            else:
                out.add(_lane_text(part, given, what, max_lane))
    if every:
        if out:
            raise InputError(f"{what} {', '.join(items)}: 'all' together with lane numbers; give one or the other")
        return []
    return sorted(out)


def parse_file_lane(raw: Any, what: str = "--lane", max_lane: int = 64) -> int | None:
    """One lane of a multi-lane Touchstone file (lane k = ports 4k-3..4k), or None when not given."""
    if raw is None or raw == () or raw == []:
        return None
    lanes = parse_lanes(raw, what, max_lane=max_lane)
    if len(lanes) != 1:
        raise InputError(f"{what}: a channel file is modelled one lane at a time; give one lane number")
    return lanes[0]
