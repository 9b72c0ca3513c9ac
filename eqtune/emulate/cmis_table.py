"""The module emulator's own CMIS register table, loaded from ``cmis_table.toml``.

This is deliberately separate from the driver's map (:mod:`eqtune.drivers.cmis_map`): the TOML file is
written from the public sources it cites field by field (sonic-platform-common, FBOSS qsfp_service,
Xena cable-perf-test-suite), and the emulator builds its memory image and decodes host writes only
through it. A wrong bit in either the driver's map or this table makes the driver tests fail.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).with_name("cmis_table.toml")


@dataclass(frozen=True)
class Reg:
    """One field of the table: page, byte offset and layout (see the TOML header for the layouts)."""

    name: str
    page: int
    offset: int
    layout: str
    bit_lo: int = 0
    width: int = 8
    size: int = 1
    src: str = ""

    def locate(self, lane: int) -> tuple[int, int, int]:
        """(byte offset, shift, mask) of ``lane`` (1..8)."""
        if self.layout == "bit":
            return self.offset, lane - 1, 0x1
        if self.layout == "nibble":
            return self.offset + (lane - 1) // 2, 0 if lane % 2 else 4, 0xF
        if self.layout == "byte":
            return self.offset + lane - 1, 0, 0xFF
        raise ValueError(f"{self.name} is not a per-lane field")

    def get(self, byte: int) -> int:
        """Scalar field value out of its byte."""
        return (byte >> self.bit_lo) & ((1 << self.width) - 1)

    def put(self, byte: int, value: int) -> int:
        """``byte`` with this scalar field set to ``value``."""
        mask = ((1 << self.width) - 1) << self.bit_lo
        return (byte & ~mask & 0xFF) | ((value << self.bit_lo) & mask)


@dataclass(frozen=True)
class Table:
    regs: dict[str, Reg]
    codes: dict[str, Any]
    diag: dict[str, int]
    vdm: dict[str, Any]
    images: dict[str, dict[str, Any]]

    def __getattr__(self, name: str) -> Reg:
        try:
            return self.regs[name]
        except KeyError:
            raise AttributeError(name) from None


@lru_cache(maxsize=1)
def load_table(path: str | None = None) -> Table:
    """Parse the TOML table (cached)."""
    raw = tomllib.loads(Path(path or TABLE_PATH).read_text(encoding="utf-8"))
    regs = {}
    for name, f in raw["fields"].items():
        regs[name] = Reg(name, int(f["page"]), int(f["offset"]), f["layout"], int(f.get("bit_lo", 0)),
                         int(f.get("width", 8)), int(f.get("size", 1)), f.get("src", ""))
    return Table(regs, raw["codes"], raw["diag"], raw["vdm"], raw["images"])


def image_names() -> list[str]:
    return sorted(load_table().images)


DEFAULT_IMAGE = "osfp8-both"
