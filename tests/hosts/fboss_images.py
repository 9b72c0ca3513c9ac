"""Extract module page dumps from FBOSS's FakeTransceiverImpl.cpp into eqtune's image files.

facebook/fboss ``fboss/qsfp_service/module/tests/FakeTransceiverImpl.cpp`` carries CMIS page dumps it
marks as taken from real modules. eqtune carries a few as bytes only (eqtune/emulate/images/*.json,
each page with the source commit and the line its array starts on). This script regenerates them
from a local FBOSS checkout (``EQTUNE_FBOSS_ROOT``, default ``../ext/fboss`` beside the checkout or
its worktree folder) and the test ``test_fboss_images.py`` checks that the committed bytes are still
exactly FBOSS's::

    python tests/hosts/fboss_images.py      # rewrites eqtune/emulate/images/fboss-*.json
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE = "fboss/qsfp_service/module/tests/FakeTransceiverImpl.cpp"
OUT = ROOT / "eqtune" / "emulate" / "images"

#: image name -> (what FBOSS says of the dump, {page: FakeTransceiverImpl.cpp array name})
IMAGES: dict[str, tuple[str, dict[str, str]]] = {
    "fboss-arista-qdd-400g-xdr4": (
        "Arista Networks QDD-400G-XDR4 (QSFP-DD, CMIS 4.0): FakeTransceiverImpl.cpp 'EEPROM dumps for "
        "400G-XDR4 and 2x400G-XDR4'; CmisTest.cpp diagSelLatchWaitIsGatedOnPartNumber calls both XDR4 "
        "fixtures 'real EEPROM dumps'",
        {"lower": "kCmisArista400GXdr4LowerA0", "00": "kCmisArista400GXdr4Page00", "01": "kCmisArista400GXdr4Page01",
         "02": "kCmisArista400GXdr4Page02", "10": "kCmisArista400GXdr4Page10", "11": "kCmisArista400GXdr4Page11",
         "13": "kCmisArista400GXdr4Page13", "14": "kCmisArista400GXdr4Page14"}),
    "fboss-arista-osfp-2x400g-xdr4": (
        "Arista Networks FB-P800G-2XDR4-1 (OSFP, CMIS 5.0): 'Real EEPROM dump from rdsw009.u006.c084.nao5 "
        "eth1/16/1'; no VDM (page 01h byte 142 bit 6 clear)",
        {"lower": "kCmisArista2x400GXdr4LowerA0", "00": "kCmisArista2x400GXdr4Page00",
         "01": "kCmisArista2x400GXdr4Page01", "02": "kCmisArista2x400GXdr4Page02",
         "10": "kCmisArista2x400GXdr4Page10", "11": "kCmisArista2x400GXdr4Page11",
         "13": "kCmisArista2x400GXdr4Page13", "14": "kCmisArista2x400GXdr4Page14"}),
    "fboss-800g-zr": (
        "800G ZR OSFP, PN DP08SFP8-ZRB-29B (CMIS 5.3): VDM pages 20h-27h and PM pages 34h/35h marked "
        "'Real data from 800G ZR module'; the other pages are FBOSS's fixture for that module",
        {"lower": "kCmis800GZrLowerA0", "00": "kCmis800GZrPage0", "01": "kCmis800GZrPage1", "02": "kCmis800GZrPage2",
         "10": "kCmis800GZrPage10", "11": "kCmis800GZrPage11", "13": "kCmis800GZrPage13", "14": "kCmis800GZrPage14",
         "20": "kCmis800GZrPage20", "21": "kCmis800GZrPage21", "22": "kCmis800GZrPage22", "23": "kCmis800GZrPage23",
         "24": "kCmis800GZrPage24", "25": "kCmis800GZrPage25", "26": "kCmis800GZrPage26", "27": "kCmis800GZrPage27",
         "2c": "kCmis800GZrPage2c", "2f": "kCmis800GZrPage2f"}),
}


def fboss_root() -> Path:
    if os.environ.get("EQTUNE_FBOSS_ROOT"):
        return Path(os.environ["EQTUNE_FBOSS_ROOT"]).resolve()
    for cand in (ROOT.parent / "ext" / "fboss", ROOT.parent.parent / "ext" / "fboss"):
        if (cand / FAKE).is_file():
            return cand.resolve()
    return (ROOT.parent / "ext" / "fboss").resolve()


def parse_arrays(text: str) -> dict[str, tuple[int, bytes]]:
    """Every ``std::array<uint8_t, 128> NAME = { 0x.., ... };`` -> (1-based line, 128 bytes)."""
    out: dict[str, tuple[int, bytes]] = {}
    for m in re.finditer(r"std::array<uint8_t,\s*128>\s+(\w+)\s*=\s*\{(.*?)\};", text, re.S):
        body = re.sub(r"//[^\n]*", "", m.group(2))
        vals = [int(v, 16) for v in re.findall(r"0x([0-9a-fA-F]{1,2})\b", body)]
        if len(vals) == 128:
            out[m.group(1)] = (text.count("\n", 0, m.start()) + 1, bytes(vals))
    return out


def extract(root: Path | None = None) -> dict[str, dict]:
    root = root or fboss_root()
    text = (root / FAKE).read_text(encoding="utf-8")
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    arrays = parse_arrays(text)
    images = {}
    for name, (about, pages) in IMAGES.items():
        images[name] = {
            "description": about,
            "source": {"repo": "facebook/fboss", "path": FAKE, "commit": commit},
            "pages": {p: {"array": arr, "line": arrays[arr][0], "hex": arrays[arr][1].hex()} for p, arr in pages.items()},
        }
    return images


def main() -> int:
    for name, img in extract().items():
        (OUT / f"{name}.json").write_text(json.dumps(img, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUT / name}.json ({len(img['pages'])} pages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
