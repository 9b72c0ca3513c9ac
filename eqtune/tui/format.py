"""Pure text formatting of what the on-site screen shows: BER with its confidence, margins with their
unit, codes, lane lists, ETA. No Textual import: unit-tested on its own.

BER confidence: with ``e`` errors in ``n`` bits the point estimate is ``e / n``; with 0 errors the
screen shows the one-sided 95 % upper bound instead, ``-ln(0.05) / n = 2.996 / n`` (the "rule of
three": Hanley & Lippman-Hand, JAMA 249(13):1743, 1983; the same bound as Maxim/Analog Devices
application note HFAN-9.0.2 "BER confidence-level calculations", eq. 4 with N = 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from eqtune.serdes.knobs import metric_suffix


def margin_unit(metric: str) -> str:
    """Unit label of a margin for an objective (``ber`` margins are -log10 of the BER), from the
    metric registry (``eqtune.serdes.knobs.METRIC_DEFS``)."""
    return metric_suffix(metric)


def fmt_margin(value: Any, metric: str, *, unit: bool = True) -> str:
    """A margin with its unit, e.g. ``10.07 (-log10(BER))``; ``-`` when unknown."""
    if value is None:
        return "-"
    text = f"{float(value):.2f}"
    return f"{text} ({margin_unit(metric)})" if unit else text


def ber_upper95_zero_errors(bits: float) -> float:
    """One-sided 95 % upper bound of the BER after 0 errors in ``bits`` bits: -ln(0.05)/bits (rule of three)."""
    return -math.log(0.05) / float(bits)


def _sci(x: float) -> str:
    return f"{x:.1e}"


def fmt_ber(counts: Mapping[str, Any] | None, *, short: bool = False) -> str:
    """BER as an FAE reads it, from a reading's counts ``{bits, errors, ber, ber_upper95}``.

    ``errors > 0``: ``1.2e-07 (34 errors in 2.8e+08 bits)``; 0 errors: ``< 2.8e-12 (0 errors in
    1.1e+12 bits)`` (95 % upper bound). ``short`` drops the words: ``< 2.8e-12 (0/1.1e+12)``. Without
    counts (e.g. an instrument that reports only a BER) the bare BER; ``-`` when nothing is known."""
    c = counts or {}
    bits, errors = c.get("bits"), c.get("errors")
    if bits and errors is not None:
        bits, errors = float(bits), int(errors)
        if errors == 0:
            bound = c.get("ber_upper95") or ber_upper95_zero_errors(bits)
            value = f"< {_sci(float(bound))}"
        else:
            value = _sci(errors / bits)
        detail = f"{errors}/{_sci(bits)}" if short else f"{errors} errors in {_sci(bits)} bits"
        return f"{value} ({detail})"
    if c.get("ber") is not None:
        return _sci(float(c["ber"]))
    return "-"


def fmt_codes(codes: Mapping[str, Any] | None) -> str:
    """``pre=2 post=4 amp=1 tx_eq=3`` (the ``rx_`` prefix dropped); ``-`` when empty."""
    return " ".join(f"{k.replace('rx_', '')}={v}" for k, v in sorted((codes or {}).items())) or "-"


def parse_lanes(text: str, n_lanes: int = 8) -> list[int]:
    """Lanes as the CLI takes them: ``1``, ``1,3``, ``1-8``, ``1-4,7`` or ``all``; sorted, unique.

    Raises ``InputError`` with what to type when the text is not a lane list."""
    from eqtune.errors import InputError

    out: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if part.lower() == "all":
            out.update(range(1, n_lanes + 1))
            continue
        try:
            if "-" in part:
                a, b = (int(x) for x in part.split("-", 1))
                if b < a:
                    raise ValueError
                out.update(range(a, b + 1))
            else:
                out.add(int(part))
        except ValueError:
            raise InputError(f"lanes {text!r}: type lane numbers 1..{n_lanes} as 1,2 or a range 1-8 or all") from None
    return sorted(out)


def fmt_duration(seconds: float | None) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``; ``-`` when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def eta_s(done: int, total: int, elapsed_s: float) -> float | None:
    """Remaining time at the mean pace so far (None before the first evaluation)."""
    if done <= 0 or total <= done:
        return None if done <= 0 else 0.0
    return elapsed_s / done * (total - done)


def event_text(ev: Any, *, emulated_clock: bool = False) -> str:
    """A live-session event as one progress line (``LiveEvent.text()``, with two corrections).

    An instrument's identity is its ``*IDN?`` answer and driver definition (not a module's vendor/PN/SN
    fields, which are blank for it). With ``emulated_clock`` the dwell of a measurement group is
    labelled as the emulator's virtual time, so it is not read as real time."""
    import re

    d = getattr(ev, "data", {}) or {}
    if getattr(ev, "kind", "") == "device" and d.get("role") == "instrument":
        i = d.get("identity") or {}
        idn = str(i.get("idn") or "").strip() or "no *IDN? answer"
        defn = f" (definition {i['definition']})" if i.get("definition") else ""
        return f"  instrument {d.get('resource')}: {idn}{defn}"
    text = ev.text() if hasattr(ev, "text") else ""
    if emulated_clock:
        # dwell_text's numbers: "282 s", "28.2 s", and "1e-05 s" below 1e-4 s (the %g exponent form)
        text = re.sub(r"\(([\d.]+(?:e[-+]?\d+)?) s per group\)", r"(\1 s per group of emulated time, not wall time)",
                      text)
    return text


def short_reason(reason: str) -> str:
    """The keep/restore reason of a decision record in a few words (the table column at 80 columns;
    the whole reason stays in the journal and the report). Follows the wording of
    eqtune.session.live_phases (``TunerPhases._decide``)."""
    r = reason or ""
    if "already the best" in r:
        return "same codes as before"
    if "counted no errors" in r:
        return "baseline 0 errors: no gain"
    if "with 95 % confidence" in r:
        return "higher, not proven (95 %)"
    if "does not beat" in r:
        return "not better"
    if "beats baseline" in r:
        return "better (verified)"
    return r[:28]
