"""CMIS page bytes <-> typed values, as small pure functions (no I/O): what the driver reads and stages.

* :func:`decode_identity`: lower page bytes 0-40 + page 00h bytes 128-222 -> :class:`ModuleIdentity`
  (CMIS 5.2 Table 8-28; sonic-platform-common ``CmisMemMap`` VENDOR_* fields).
* :func:`decode_capabilities`: lower page byte 2, bytes 86-89 and page 01h bytes 142-162 ->
  :class:`EqCapabilities` (CMIS 5.2 Tables 8-40, 8-44..8-47).
* :func:`decode_eq`: per-lane EQ codes from a page 10h (staged) or 11h (active) block.
* :func:`check_codes`: ``{lane: {knob: code}}`` against the page 01h advertisement (EqRangeError).
* :func:`compose_staged`: the Staged Control Set 0 bytes (page 10h 145-173) for a target.

Every register comes from :mod:`eqtune.drivers.cmis_map` (cited there).
"""

from __future__ import annotations

from collections.abc import Iterable

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis_apps import SMF_MEDIA_TYPE, decode_applications
from eqtune.drivers.cmis_policy import DURATION_S, reconfiguration_support
from eqtune.drivers.cmis_types import (
    CMIS_IDENTIFIERS,
    MODULE_STATE_NAMES,
    EqCapabilities,
    EqCodes,
    ModuleIdentity,
    state_name,
)
from eqtune.errors import EqRangeError
from eqtune.serdes.knobs import RX_AMP

IDENTITY_UPPER_FIRST, IDENTITY_UPPER_LAST = 128, 222  # page 00h, byte 222 = checksum over 128..221
IDENTITY_LOWER_LEN = 41  # lower page bytes 0..40 (identifier .. active firmware)
CAPS_PAGE1_FIRST, CAPS_PAGE1_LEN = 142, 21  # page 01h bytes 142..162


def ascii_field(raw: bytes) -> str:
    """A space/NUL padded ASCII field (SFF-8024 / CMIS vendor strings)."""
    return raw.decode("ascii", errors="replace").strip(" \x00")


def date_code(raw: bytes) -> str:
    """CMIS DateCode ``YYMMDDLL`` -> ``20YY-MM-DD[ lot LL]``; anything else as it is."""
    s = ascii_field(raw)
    if len(s) >= 6 and s[:6].isdigit():
        lot = s[6:].strip()
        return f"20{s[0:2]}-{s[2:4]}-{s[4:6]}" + (f" lot {lot}" if lot else "")
    return s


def page00_checksum_ok(upper: bytes) -> bool:
    """Byte 222 is the low 8 bits of the sum of page 00h bytes 128-221 (CMIS 5.2 Table 8-28)."""
    return sum(upper[:94]) & 0xFF == upper[94]


def decode_identity(lower: bytes, upper: bytes) -> ModuleIdentity:
    """``lower``: lower page bytes 0..40; ``upper``: page 00h bytes 128..222."""

    def fld(f: M.Field) -> bytes:
        return upper[f.offset - IDENTITY_UPPER_FIRST: f.offset - IDENTITY_UPPER_FIRST + f.size]

    major, minor = lower[M.CMIS_REVISION.offset] >> 4, lower[M.CMIS_REVISION.offset] & 0xF
    return ModuleIdentity(
        vendor=ascii_field(fld(M.VENDOR_NAME)),
        oui="-".join(f"{b:02X}" for b in fld(M.VENDOR_OUI)),
        pn=ascii_field(fld(M.VENDOR_PN)),
        rev=ascii_field(fld(M.VENDOR_REV)),
        sn=ascii_field(fld(M.VENDOR_SN)),
        date_code=date_code(fld(M.DATE_CODE)),
        firmware=f"{lower[M.ACTIVE_FW_MAJOR.offset]}.{lower[M.ACTIVE_FW_MINOR.offset]}",
        cmis_rev=f"{major}.{minor}",
        module_state=state_name(MODULE_STATE_NAMES, M.MODULE_STATE.scalar_value(lower[3:4])),
        form_factor=CMIS_IDENTIFIERS.get(lower[0], f"0x{lower[0]:02x}"),
    )


def host_lane_span(app: bytes) -> int:
    """Host lanes of the module from its application descriptors (lower page 86.., 4 bytes each:
    HostInterfaceID, MediaInterfaceID, lane counts, HostLaneAssignment; the list ends at ID 0x00
    or 0xFF): the highest lane an application can occupy, its highest allowed start lane (bit n =
    lane n+1) plus its HostLaneCount (bits 7-4) minus one. A 2x400G module advertising 400GAUI-4
    on lanes 1 and 5 has 8 host lanes (FBOSS numHostLanes gives 8 for it, CmisTest.cpp
    cmis2x400GXdr4TransceiverInfoTest). CMIS 5.2 Table 8-23; 8 when nothing is advertised."""
    top = 0
    for k in range(len(app) // 4):
        host_id, _, counts, assign = app[4 * k: 4 * k + 4]
        if host_id in (0x00, 0xFF):
            break
        starts = [bit + 1 for bit in range(8) if assign >> bit & 1] or [1]
        if counts >> 4:
            top = max(top, max(starts) + (counts >> 4) - 1)
    return min(8, top) or 8


def decode_capabilities(lower2: bytes, app: bytes, p1: bytes, cmis_rev: int = 0x52,
                        media_type: int = SMF_MEDIA_TYPE) -> EqCapabilities:
    """``lower2``: lower page byte 2; ``app``: bytes 86-117 (application descriptors 1-8; 86-89 alone
    is read as descriptor 1; decoded by :func:`eqtune.drivers.cmis_apps.decode_applications` with
    ``media_type``, lower page byte 85);
    ``p1``: page 01h bytes 142-162; ``cmis_rev``: lower page byte 1 (AutoCommissioning, byte 2
    bits 1-0, is read only from CMIS 5.3 on: :func:`eqtune.drivers.cmis_policy.reconfiguration_support`)."""

    def b(off: int) -> int:
        return p1[off - CAPS_PAGE1_FIRST]

    tx_adv, rx_adv = b(161), b(162)
    lanes = host_lane_span(app)
    stepped = bool(M.STEPPED_CONFIG_ONLY.scalar_value(lower2))
    auto_comm = M.AUTO_COMMISSIONING.scalar_value(lower2)
    reconf = reconfiguration_support(stepped, auto_comm, cmis_rev)
    amp_mask = M.RX_OUTPUT_LEVEL_SUPPORT.scalar_value(bytes([b(153)]))
    return EqCapabilities(
        lanes=min(8, lanes),
        rx_pre_max=M.RX_PRE_MAX.scalar_value(bytes([b(154)])) if rx_adv >> M.RX_PRE_SUPPORTED_BIT & 1 else None,
        rx_post_max=M.RX_POST_MAX.scalar_value(bytes([b(154)])) if rx_adv >> M.RX_POST_SUPPORTED_BIT & 1 else None,
        rx_amp_codes=tuple(c for c in range(4) if amp_mask >> c & 1) if rx_adv >> M.RX_AMP_SUPPORTED_BIT & 1 else (),
        tx_eq_max=M.TX_INPUT_EQ_MAX.scalar_value(bytes([b(153)])) if tx_adv >> M.TX_FIXED_EQ_SUPPORTED_BIT & 1 else None,
        tx_adaptive=bool(tx_adv >> M.TX_ADAPTIVE_EQ_SUPPORTED_BIT & 1),
        stepped_config_only=stepped,
        apply_immediate=reconf in ("both", "hot"),
        diagnostics=bool(M.DIAG_PAGES_SUPPORTED.scalar_value(bytes([b(142)]))),
        vdm=bool(M.VDM_SUPPORTED.scalar_value(bytes([b(142)]))),
        dp_init_max_s=DURATION_S[b(144) & 0xF],  # None for the reserved codes 14-15
        auto_commissioning=auto_comm,
        reconfiguration=reconf,
        cmis_rev=f"{cmis_rev >> 4}.{cmis_rev & 0xF}",
        dp_deinit_max_s=DURATION_S[b(144) >> 4],
        applications=decode_applications(app, media_type),
    )


def decode_eq(block: bytes, first: int, lane: int, active: bool, supported: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """EQ codes of ``lane`` from a block starting at byte ``first`` of page 11h (``active``) or
    page 10h Staged Control Set 0; only the knobs in ``supported``."""
    out = {}
    for knob, (staged, act) in M.EQ_FIELDS.items():
        if knob not in supported:
            continue
        fld = act if active else staged
        off, shift, mask = fld.locate(lane)
        out[knob] = (block[off - first] >> shift) & mask
    return out


def check_lane(resource: str, lane: object, lanes: int) -> None:
    """EqRangeError unless ``lane`` is an int in 1..``lanes``."""
    if not isinstance(lane, int) or not 1 <= lane <= lanes:
        raise EqRangeError(f"{resource}: lane {lane} does not exist: this module has lanes 1..{lanes}")


def check_codes(resource: str, codes: object, caps: EqCapabilities) -> EqCodes:
    """``codes`` checked against the advertisement and normalized to int codes (no I/O).

    EqRangeError (one line: what is wrong, what to do) for no codes, a lane that does not exist,
    an unknown or unsupported knob, a non-integer code or a code outside the advertised range."""
    if not isinstance(codes, dict) or not codes:
        raise EqRangeError(f"{resource}: no EQ codes given; pass {{lane: {{knob: code}}}}")
    allowed = caps.knob_values()
    out: EqCodes = {}
    for lane, knobs in codes.items():
        check_lane(resource, lane, caps.lanes)
        if not knobs:
            raise EqRangeError(f"{resource}: lane {lane}: no knobs given")
        for knob, value in knobs.items():
            if knob not in M.EQ_FIELDS:
                raise EqRangeError(f"{resource}: unknown knob {knob!r}; module knobs are "
                                   f"{', '.join(M.KNOBS)}")
            if knob not in allowed:
                raise EqRangeError(f"{resource}: this module does not support {knob} control "
                                   "(page 01h advertisement); leave it out")
            try:
                iv = int(value)
            except (TypeError, ValueError):
                raise EqRangeError(f"{resource}: lane {lane} {knob}={value!r} is not an integer code") from None
            if iv != value or iv not in allowed[knob]:
                vals = allowed[knob]
                span = (f"{vals[0]}..{vals[-1]}" if knob != RX_AMP and list(vals) == list(range(vals[0], vals[-1] + 1))
                        else ", ".join(map(str, vals)))
                raise EqRangeError(f"{resource}: lane {lane} {knob}={value} is outside what the module "
                                   f"advertises ({span}); pick a code in that range")
            out.setdefault(lane, {})[knob] = iv
    return out


def compose_staged(base: bytes, target: dict[int, dict[str, int]], dpcfg_active: bytes, adaptive: int) -> bytes:
    """Staged Control Set 0 (page 10h 145-173) holding ``target`` codes for its lanes, ExplicitControl
    on, and for those lanes the AdaptiveInputEqEnableTx bit (page 10h byte 153) taken from ``adaptive``
    (a lane bit mask); every other lane and field keeps what ``base`` holds."""
    out = bytearray(base)
    first = M.SCS0_FIRST
    for lane, knobs in target.items():
        i = M.DP_CONFIG_SCS0.offset - first + lane - 1
        # AppSel (bits 7-4) and DataPathID (bits 3-1) of the running configuration, ExplicitControl on
        out[i] = (dpcfg_active[lane - 1] & 0xFE) | 0x01
        for knob, value in knobs.items():
            fld = M.EQ_FIELDS[knob][0]
            off, shift, mask = fld.locate(lane)
            j = off - first
            out[j] = (out[j] & ~(mask << shift) & 0xFF) | (value << shift)
        j = M.TX_ADAPTIVE_EN_SCS0.offset - first
        bit = 1 << (lane - 1)
        out[j] = (out[j] & ~bit & 0xFF) | (adaptive & bit)
    return bytes(out)


def lane_mask(lanes: Iterable[int]) -> int:
    """Bit mask of 1-based lane numbers (lane 1 = bit 0), as the CMIS per-lane control bytes use."""
    return sum(1 << (ln - 1) for ln in lanes)
