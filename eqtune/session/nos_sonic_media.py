"""SONiC ``media_settings.json``: the host SerDes TX FFE that xcvrd hands the switch ASIC.

xcvrd looks up the port's entry and publishes each parameter to APP_DB as a comma list of the
logical port's lanes (sonic-platform-daemons f4713bc5, sonic-xcvrd/xcvrd/xcvrd_utilities/
media_settings_parser.py lines 66-122 and 554-636); orchagent passes them to the SAI, which sets the
SerDes. The file::

    {"PORT_MEDIA_SETTINGS": {"5": {"ACME-PN1$": {"speed:800GAUI-8": {
        "pre1": {"lane0": "0xffffffe6", ..., "lane7": ...}, "main": {...}, "post1": {...}}}}}}

Lanes are ``lane0..laneN-1`` of the physical port (0-based; the subport's slice is taken in natural
order, lines 78-86). The vendor key is ``re.match``-ed (a prefix match) against "VENDOR-PN" with
VENDOR upper-cased and the PN as read (line 361); eqtune writes the literal key anchored with "$" so
"ACME-PN1" does not also select "ACME-PN10". An optional ``speed:<host interface>`` layer selects by
the application's host electrical interface (lines 322-351, 424-452). Lookup order: GLOBAL explicit,
PORT explicit, PORT Default, GLOBAL Default (lines 476-504).

Scaling. eqtune's TX FFE taps are linear weights c(k) with the main cursor c0 = 1 - sum|c(k)|
(eqtune.serdes.knobs). What integer a SAI expects per unit of weight is platform-specific and not
published by SONiC: a platform's codes are ``round(c(k) * tap_scale)`` for each tap and
``round(c0 * tap_scale)`` for main, written as ``bits``-bit two's complement hex (the Arista 7060X6
and Nokia IXR7220-H6 files write 32-bit values such as "0xffffffe6" = -26). ``tap_scale`` has no
default: the user states it per platform (``--tap-scale``), and it is recorded in the export.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from eqtune.errors import InputError
from eqtune.serdes.knobs import TX_FFE_KNOBS, TX_TAP_OFFSETS
from eqtune.session.nos_common import NosFormatError
from eqtune.session.nos_sonic import GLOBAL, PORT, SonicExport, regex_literal

HOST_TX_SCHEMA = "eqtune.host-tx"
DEFAULT = "Default"
SPEED_PREFIX = "speed:"
MAIN = "main"


def param_name(offset: int) -> str:
    """Broadcom-style SAI tap names as the platform files use: pre3..pre1, main, post1..post2."""
    return MAIN if offset == 0 else (f"pre{-offset}" if offset < 0 else f"post{offset}")


TAP_PARAM: dict[str, str] = {k: param_name(TX_TAP_OFFSETS[k]) for k in TX_FFE_KNOBS}
PARAM_TAP = {v: k for k, v in TAP_PARAM.items()}
PARAM_ORDER = tuple(param_name(o) for o in sorted({*TX_TAP_OFFSETS.values(), 0}))


@dataclass(frozen=True)
class HostTxScaling:
    """How eqtune's tap weights become the SAI's integers on one platform (see the module docstring)."""

    tap_scale: int  # the integer for a tap weight of 1.0
    bits: int = 32  # two's complement width of the hex values

    def __post_init__(self) -> None:
        if not 1 <= self.tap_scale <= 1 << 20:
            raise InputError(f"--tap-scale {self.tap_scale}: give the platform's integer for a tap weight of 1.0 "
                             "(a positive integer)")
        if self.bits not in (8, 16, 32):
            raise InputError(f"--hex-bits {self.bits}: give 8, 16 or 32")

    def code(self, weight: float) -> int:
        c = round(float(weight) * self.tap_scale)
        if not -(1 << (self.bits - 1)) <= c < (1 << (self.bits - 1)):
            raise NosFormatError(f"tap weight {weight} at scale {self.tap_scale} does not fit {self.bits} bits")
        return c

    def hex(self, code: int) -> str:
        return f"0x{code & ((1 << self.bits) - 1):0{self.bits // 4}x}"

    def parse(self, text: Any, *, where: str) -> int:
        if not isinstance(text, str) or not re.fullmatch(r"0x[0-9a-fA-F]{1,8}", text):
            raise NosFormatError(f"{where}: {text!r} is not a hex value such as 0xffffffe6")
        v = int(text, 16)
        if v >= 1 << self.bits:
            raise NosFormatError(f"{where}: {text} is wider than --hex-bits {self.bits}")
        return v - (1 << self.bits) if v >> (self.bits - 1) else v


def vendor_key(vendor: str, pn: str) -> str:
    """media_settings_parser.py line 361 ("VENDOR-PN", vendor upper-cased), as an anchored literal."""
    return regex_literal(vendor.upper() + "-" + pn) + "$"


def host_entry(taps: Mapping[int, Mapping[str, float]], port_lanes: int, scaling: HostTxScaling) -> dict[str, Any]:
    """Every tap on every lane of the port (``lane0`` = eqtune lane 1); absent taps are 0."""
    for lane in taps:
        if lane < 1 or lane > port_lanes:
            raise NosFormatError(f"sonic-media-settings export: lane {lane} is beyond the port's {port_lanes} lanes")
    missing = [ln for ln in range(1, port_lanes + 1) if ln not in taps]
    if missing:
        raise NosFormatError(f"sonic-media-settings export: no taps for lane(s) {','.join(map(str, missing))}; SONiC "
                             "publishes every lane of the port: give taps for each or --port-lanes")
    out: dict[str, dict[str, str]] = {p: {} for p in PARAM_ORDER}
    for ln in range(1, port_lanes + 1):
        t = {k: float(taps[ln].get(k, 0.0)) for k in TX_FFE_KNOBS}
        c0 = 1.0 - sum(abs(v) for v in t.values())
        if c0 <= 0:
            raise NosFormatError(f"sonic-media-settings export: lane {ln} taps leave no main cursor (c0 = {c0:.3f})")
        for k, v in t.items():
            out[TAP_PARAM[k]][f"lane{ln - 1}"] = scaling.hex(scaling.code(v))
        out[MAIN][f"lane{ln - 1}"] = scaling.hex(scaling.code(c0))
    return out


def export_media_settings(taps: Mapping[int, Mapping[str, float]], *, vendor: str, pn: str, ports: list[int],
                          port_lanes: int, scaling: HostTxScaling, speed: str | None = None) -> SonicExport:
    """``media_settings.json`` content: one PORT_MEDIA_SETTINGS entry per port for this module."""
    key = vendor_key(vendor, pn)
    entry: dict[str, Any] = host_entry(taps, port_lanes, scaling)
    if speed:
        entry = {SPEED_PREFIX + speed: entry}
    doc = {PORT: {str(p): {key: entry} for p in ports}}
    notes = [f"host TX FFE codes = round(tap x {scaling.tap_scale}), main = round((1 - sum|taps|) x "
             f"{scaling.tap_scale}), {scaling.bits}-bit two's complement; check the scale against the platform's SAI"]
    return SonicExport(doc, [(PORT, str(p), key) for p in ports], notes, list(ports))


# ---------------------------------------------------------------------------------------------
# lookup and import
# ---------------------------------------------------------------------------------------------
def _for_speed(d: Any, speed: str | None) -> Any:
    """media_settings_parser.py lines 420-452: the speed layer, if the first key is one."""
    if not isinstance(d, dict) or not d or SPEED_PREFIX not in next(iter(d)):
        return d
    if not speed:
        return {}
    for cand, val in d.items():
        if re.fullmatch(cand[len(SPEED_PREFIX):], speed):
            return val
    return d.get(SPEED_PREFIX + DEFAULT, {})


#: medium keys SONiC matches in a second pass ("OPTICAL100", "COPPER50": medium + lane speed in Gb/s,
#: media_settings_parser.py lines 60-62 and 408-410); a merge check tries every plausible one
ANY_MEDIUM = tuple(f"{m}{g}" for m in ("OPTICAL", "COPPER") for g in (10, 25, 50, 100, 200, 400))


def _match(media: Mapping[str, Any], key: str, mediums: tuple[str, ...] = ()) -> str | None:
    for dk in media:
        if re.match(dk, key) or re.match(dk, key.split("-")[0]):
            return dk
    for dk in media:
        if any(re.match(dk, m) for m in mediums):
            return dk
    return None


def resolve_media(doc: Mapping[str, Any], port: int, key: str, speed: str | None = None,
                  mediums: tuple[str, ...] = ()) -> tuple[Any, tuple[str, ...] | None]:
    """The parameters SONiC publishes for ``port`` and the module key "VENDOR-PN", with the entry's
    key path. Media-type keys (the module's compliance code) are not modelled; medium keys are tried
    for ``mediums`` (:data:`ANY_MEDIUM` in a merge check: conservative)."""
    gdef: tuple[Any, tuple[str, ...] | None] = ({}, None)
    g = doc.get(GLOBAL)
    if isinstance(g, dict):
        for keys, media in g.items():
            hit = False
            if "," in keys:
                hit = any(("-" in p and _rng(p, port)) or ("-" not in p and str(port) == p) for p in keys.split(","))
            elif "-" in keys:
                hit = _rng(keys, port)
            if hit and isinstance(media, dict):
                dk = _match(media, key, mediums)
                if dk is not None:
                    return _for_speed(media[dk], speed), (GLOBAL, keys, dk)
                if DEFAULT in media:
                    gdef = (_for_speed(media[DEFAULT], speed), (GLOBAL, keys, DEFAULT))
    p = doc.get(PORT)
    if isinstance(p, dict):
        for keys, media in p.items():
            if int(keys) == port and isinstance(media, dict) and media:
                dk = _match(media, key, mediums)
                if dk is not None:
                    return _for_speed(media[dk], speed), (PORT, keys, dk)
                if DEFAULT in media:
                    return _for_speed(media[DEFAULT], speed), (PORT, keys, DEFAULT)
                break
    return gdef


def _rng(text: str, port: int) -> bool:
    a, _, b = text.partition("-")
    return int(a) <= port <= int(b)


def import_media_settings(doc: Mapping[str, Any], *, vendor: str, pn: str, port: int, port_lanes: int,
                          scaling: HostTxScaling, speed: str | None = None) -> tuple[dict[int, dict[str, float]], list[str]]:
    """Per-lane tap weights (eqtune lanes 1..N) from the entry SONiC publishes for the module, and
    notes (a main cursor that does not follow c0 = 1 - sum|c(k)|)."""
    where = "sonic-media-settings import"
    entry, path = resolve_media(doc, port, vendor.upper() + "-" + pn, speed)
    if path is None or not entry:
        raise NosFormatError(f"{where}: no entry applies to port {port} for {vendor.upper()}-{pn}"
                             + (f" at speed:{speed}" if speed else "") + "; check --port, --speed-key and the module")
    where = f"{where} {' / '.join(path)}"
    codes: dict[int, dict[str, int]] = {}
    for param, lanes in entry.items():
        if param not in PARAM_ORDER:
            raise NosFormatError(f"{where}: unknown key {param!r} (eqtune reads {', '.join(PARAM_ORDER)})")
        if not isinstance(lanes, dict):
            raise NosFormatError(f"{where}: {param} must map lane0..laneN to hex values")
        for lk, val in lanes.items():
            m = re.fullmatch(r"lane([0-9]+)", lk)
            if not m:
                raise NosFormatError(f"{where}: unknown key {lk!r} under {param} (expected lane0..lane{port_lanes - 1})")
            lane = int(m.group(1)) + 1
            if lane > port_lanes:
                raise NosFormatError(f"{where}: {param} {lk} is beyond the port's {port_lanes} lanes")
            codes.setdefault(lane, {})[param] = scaling.parse(val, where=f"{where} {param} {lk}")
    taps: dict[int, dict[str, float]] = {}
    notes: list[str] = []
    for lane, c in sorted(codes.items()):
        taps[lane] = {PARAM_TAP[p]: v / scaling.tap_scale for p, v in c.items() if p != MAIN}
        if MAIN in c:
            expect = round((1.0 - sum(abs(v) for v in taps[lane].values())) * scaling.tap_scale)
            if abs(c[MAIN] - expect) > 1:
                notes.append(f"lane {lane}: main {c[MAIN]} differs from eqtune's c0 = 1 - sum|c(k)| ({expect}) at "
                             f"--tap-scale {scaling.tap_scale}: check the scale")
    return taps, notes


def host_tx_document(taps: Mapping[int, Mapping[str, float]], *, vendor: str, pn: str, scaling: HostTxScaling,
                     source: str) -> dict[str, Any]:
    """The eqtune host TX FFE document (schema ``eqtune.host-tx``) an import writes and an export reads."""
    return {"schema": HOST_TX_SCHEMA, "version": 1, "module": {"vendor": vendor, "pn": pn},
            "tap_scale": scaling.tap_scale, "hex_bits": scaling.bits, "source": source,
            "lanes": {str(ln): {k: t[k] for k in TX_FFE_KNOBS if k in t} for ln, t in sorted(taps.items())}}


def load_host_taps(doc: Mapping[str, Any], port_lanes: int, *, where: str) -> dict[int, dict[str, float]]:
    """Per-lane taps from an ``eqtune.host-tx`` document, or from a ``tune --sim --save-profile``
    result (schema ``eqtune.tuned-codes``: one set of taps, used on every lane of the port)."""
    schema = doc.get("schema")
    if schema == HOST_TX_SCHEMA:
        lanes = doc.get("lanes")
        if not isinstance(lanes, dict) or not lanes:
            raise InputError(f"{where}: no lanes")
        return {int(k): _taps(v, f"{where} lane {k}") for k, v in lanes.items()}
    if schema == "eqtune.tuned-codes":
        t = _taps(doc.get("codes"), where)
        if not t:
            raise InputError(f"{where}: the tuned codes hold no host TX FFE tap; tune with --direction module_rx "
                             "--knobs tx_ffe")
        return {ln: dict(t) for ln in range(1, port_lanes + 1)}
    raise InputError(f"{where}: schema {schema!r} is not host TX FFE taps; give `eqtune tune --sim --direction "
                     "module_rx --save-profile` output or an imported media_settings (eqtune.host-tx)")


def _taps(v: Any, where: str) -> dict[str, float]:
    if not isinstance(v, dict):
        raise InputError(f"{where}: taps must be an object of tap weights")
    out = {}
    for k, x in v.items():
        if k not in TX_FFE_KNOBS:
            continue  # module codes in the same result are not host SerDes taps
        if isinstance(x, bool) or not isinstance(x, (int, float)) or abs(x) >= 1:
            raise InputError(f"{where}: {k} = {x!r} is not a tap weight in (-1, 1)")
        out[k] = float(x)
    return out
