"""Text from devices and files made safe to print on a terminal.

A module's vendor name, part and serial number (CMIS page 00h, ASCII per CMIS 5.2 section 8.4.4), an
instrument's ``*IDN?`` answer and strings in user files are printed by eqtune. A crafted module could
put an escape sequence there (``ESC ] 52`` writes the clipboard, ``ESC [ 2 J`` clears the screen,
U+202E reverses the text that follows). :func:`printable` replaces every control (Unicode category Cc:
C0, DEL, C1) and format character (Cf: bidirectional overrides, zero-width joiners) by a visible
``\\xNN`` / ``\\uNNNN`` escape, so what the operator reads is what the device sent.
"""

from __future__ import annotations

import unicodedata
from typing import Any


def _escape(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def printable(text: Any) -> str:
    """``str(text)`` with control and format characters shown as escapes (newline and tab included)."""
    s = str(text)
    if s.isprintable():  # fast path (space counts as printable; no Cc/Cf/Z* other than space)
        return s
    return "".join(_escape(ch) if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in s)
