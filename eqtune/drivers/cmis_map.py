"""Declarative CMIS memory map: every register eqtune touches, in one table.

Each :class:`Field` names its page, byte offset, bit range and per-lane layout, and cites where it
is defined. Citations use two sources:

* OIF CMIS 5.2 (OIF-CMIS-05.2), chapter 8 "Module Management Memory Map" (section numbers);
  CMIS 4.0 has the same layout for everything used here unless noted.
* sonic-platform-common ``sonic_platform_base/sonic_xcvr/mem_maps/public/cmis.py`` (``CmisMemMap``),
  quoted by its ``consts`` field name; written "sonic: NAME @ (page, offset)".

Address conventions
-------------------
* Two-wire (I2C) address space of 256 bytes at 0x50: bytes 0..127 are the lower page (always
  visible), bytes 128..255 show the upper page selected by byte 126 (BankSelect) and byte 127
  (PageSelect) (CMIS 5.2 section 8.1, "Memory organization"). Banked pages are 10h..1Fh.
* Per-lane 4-bit fields pack two lanes per byte: the **odd lane (1, 3, 5, 7) in bits 3..0** and the
  even lane in bits 7..4 (sonic: ``FIXED_INPUT_EQ_TARGET_TX1`` bitpos 0, ``..._TX2`` bitpos 4 @
  (0x10, 156); the same for DPState @ (0x11, 128) and ConfigStatus @ (0x11, 202)).
* Per-lane bit fields: bit ``lane-1`` of one byte (sonic: ``ADAPTIVE_INPUT_EQ_ENABLE_TX`` @ (0x10, 153)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Literal

from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ

Layout = Literal["scalar", "bytes", "bit_per_lane", "nibble_per_lane", "byte_per_lane"]

LOWER_PAGE_SIZE = 128
PAGE_SELECT_OFFSET = 127  # CMIS 5.2 section 8.2 (Lower Memory) byte 127 PageSelect
BANK_SELECT_OFFSET = 126  # CMIS 5.2 section 8.2 byte 126 BankSelect (banked pages 10h-1Fh only)


@dataclass(frozen=True)
class Field:
    """One register field.

    ``offset``: first byte (0..255, two-wire address within the selected page). ``size``: bytes for
    ``scalar``/``bytes`` fields. ``bit_lo``/``width``: bit range inside the byte for ``scalar``
    fields narrower than a byte. ``layout`` describes how lanes 1..8 are packed.
    """

    name: str
    page: int
    offset: int
    layout: Layout = "scalar"
    size: int = 1
    bit_lo: int = 0
    width: int = 8
    ref: str = ""

    @property
    def lanes_per_byte(self) -> int:
        return {"bit_per_lane": 8, "nibble_per_lane": 2, "byte_per_lane": 1}.get(self.layout, 0)

    @property
    def span(self) -> int:
        """Number of bytes covering all 8 lanes (or ``size`` for scalar/bytes fields)."""
        if self.layout == "bit_per_lane":
            return 1
        if self.layout == "nibble_per_lane":
            return 4
        if self.layout == "byte_per_lane":
            return 8
        return self.size

    def locate(self, lane: int) -> tuple[int, int, int]:
        """(byte offset, shift, mask) of ``lane`` (1..8) in this per-lane field."""
        if not 1 <= lane <= 8:
            raise ValueError(f"lane {lane} outside 1..8")
        if self.layout == "bit_per_lane":
            return self.offset, lane - 1, 0x1
        if self.layout == "nibble_per_lane":
            # odd lane -> low nibble, even lane -> high nibble (see module docstring)
            return self.offset + (lane - 1) // 2, 0 if lane % 2 else 4, 0xF
        if self.layout == "byte_per_lane":
            return self.offset + lane - 1, 0, 0xFF
        raise ValueError(f"{self.name} is not a per-lane field")

    def lane_value(self, block: bytes, lane: int) -> int:
        """Decode ``lane`` from ``block`` (the ``span`` bytes starting at ``offset``)."""
        off, shift, mask = self.locate(lane)
        return (block[off - self.offset] >> shift) & mask

    def scalar_value(self, block: bytes) -> int:
        return (block[0] >> self.bit_lo) & ((1 << self.width) - 1)


def _f(*args: Any, **kw: Any) -> Field:
    return Field(*args, **kw)


_S = "sonic cmis.py"

# --- Lower page (page 00h bytes 0..127) --------------------------------------------------------
IDENTIFIER = _f("SFF8024Identifier", 0, 0, ref="CMIS 5.2 s8.2.1 byte 0; " + _S + ": ID_FIELD @ (0,0)")
CMIS_REVISION = _f("CmisRevision", 0, 1, ref="CMIS 5.2 s8.2.1 byte 1 (major 7-4, minor 3-0); " + _S
                   + ": CMIS_MAJOR_REVISION/CMIS_MINOR_REVISION @ (0,1)")
MEMORY_MODEL_FLAT = _f("MemoryModel", 0, 2, bit_lo=7, width=1, ref="CMIS 5.2 s8.2.1 byte 2 bit 7; "
                       + _S + ": FLAT_MEM_FIELD @ (0,2) bit 7")
STEPPED_CONFIG_ONLY = _f("SteppedConfigOnly", 0, 2, bit_lo=6, width=1,
                         ref="CMIS 5.2 s8.2.1 byte 2 bit 6; xenanetworks/cable-perf-test-suite "
                         "xoa_cpom/cmisfuncs.py check_eq_reconfig_support: (byte2 >> 6) & 1")
AUTO_COMMISSIONING = _f("AutoCommissioning", 0, 2, bit_lo=0, width=2,
                        ref="CMIS 5.2 s8.2.1 byte 2 bits 1-0 (01b regular reconfiguration via ApplyDPInit, "
                        "10b hot reconfiguration via ApplyImmediate, 00b neither, 11b reserved); "
                        "xenanetworks/cable-perf-test-suite xoa_cpom/cmisfuncs.py check_eq_reconfig_support "
                        "(byte2 & 0x03: 2 Hot, 1 Regular, else Neither) and apply_change_on_lane")
MODULE_STATE = _f("ModuleState", 0, 3, bit_lo=1, width=3, ref="CMIS 5.2 s8.2.2 byte 3 bits 3-1 "
                  "(Table 8-6 encodings); " + _S + ": MODULE_STATE @ (0,3) bits 1-3")
ACTIVE_FW_MAJOR = _f("ActiveFirmwareMajor", 0, 39, ref=_S + ": ACTIVE_FW_MAJOR_REV @ (0,39)")
ACTIVE_FW_MINOR = _f("ActiveFirmwareMinor", 0, 40, ref=_S + ": ACTIVE_FW_MINOR_REV @ (0,40)")

# --- Upper page 00h: administrative information (CMIS 5.2 s8.3) ---------------------------------
VENDOR_NAME = _f("VendorName", 0, 129, "bytes", 16, ref=_S + ": VENDOR_NAME_FIELD @ (0,129) 16 B ASCII")
VENDOR_OUI = _f("VendorOUI", 0, 145, "bytes", 3, ref=_S + ": VENDOR_OUI_FIELD @ (0,145) 3 B")
VENDOR_PN = _f("VendorPN", 0, 148, "bytes", 16, ref=_S + ": VENDOR_PART_NO_FIELD @ (0,148) 16 B")
VENDOR_REV = _f("VendorRev", 0, 164, "bytes", 2, ref=_S + ": VENDOR_REV_FIELD @ (0,164) 2 B")
VENDOR_SN = _f("VendorSN", 0, 166, "bytes", 16, ref=_S + ": VENDOR_SERIAL_NO_FIELD @ (0,166) 16 B")
DATE_CODE = _f("DateCode", 0, 182, "bytes", 8, ref=_S + ": VENDOR_DATE_FIELD @ (0,182) 8 B YYMMDDLL")

# --- Page 01h: advertising (CMIS 5.2 s8.4) ----------------------------------------------------
_PAGES_REF = ("CMIS 5.2 s8.4 byte 142: bit 6 VDM pages 20h-2Fh, bit 5 diagnostics pages 13h-14h; "
              "sonic-net/sonic-platform-common sonic_platform_base/sonic_xcvr/mem_maps/public/cmis/pages/page01.py "
              "(VDM_SUPPORTED bit 6, DIAG_PAGE_SUPPORT_ADVT_FIELD bit 5 @ 142); facebook/fboss "
              "fboss/qsfp_service/module/cmis/CmisFieldInfo.h (VDM_SUPPORT_MASK 0x40, DIAGS_SUPPORT_MASK 0x20)")
PAGES_SUPPORTED = _f("PagesSupported", 1, 142, ref=_PAGES_REF)
DIAG_PAGES_SUPPORTED = _f("DiagPagesSupported", 1, 142, bit_lo=5, width=1, ref=_PAGES_REF)
VDM_SUPPORTED = _f("VdmSupported", 1, 142, bit_lo=6, width=1, ref=_PAGES_REF)
DP_DURATIONS = _f("MaxDurationDPInit_DPDeinit", 1, 144, ref="sonic page01.py: DP_PATH_INIT_DURATION bits 0-3, "
                  "DP_PATH_DEINIT_DURATION bits 4-7 @ (1,144), codes in sonic codes/public/cmis.py DP_PATH_TIMINGS")
TX_INPUT_EQ_MAX = _f("TxInputEqMax", 1, 153, bit_lo=0, width=4, ref=_S + ": TX_INPUT_EQ_MAX @ (1,153) bits 0-3")
RX_OUTPUT_LEVEL_SUPPORT = _f("RxOutputLevelSupport", 1, 153, bit_lo=4, width=4,
                             ref=_S + ": RX_OUTPUT_LEVEL_0..3_SUPPORTED @ (1,153) bits 4-7 "
                             "(bit 4+n: amplitude code n supported)")
RX_PRE_MAX = _f("RxOutputEqPreCursorMax", 1, 154, bit_lo=0, width=4,
                ref=_S + ": RX_OUTPUT_EQ_PRE_CURSOR_MAX @ (1,154) bits 0-3")
RX_POST_MAX = _f("RxOutputEqPostCursorMax", 1, 154, bit_lo=4, width=4,
                 ref=_S + ": RX_OUTPUT_EQ_POST_CURSOR_MAX @ (1,154) bits 4-7")
TX_SI_ADVT = _f("TxSiCtrlAdvt", 1, 161, ref=_S + ": TX_SI_CTRL_ADVT @ (1,161): bit 2 "
                "TX_INPUT_EQ_FIXED_MANUAL_CTRL_SUPPORT, bit 3 TX_INPUT_ADAPTIVE_EQ_SUPPORT; CMIS 5.2 s8.4.7 "
                "(Supported Signal Integrity Controls Advertisement) byte 161 bit 3 TxInputAdaptiveEqSupported")
RX_SI_ADVT = _f("RxSiCtrlAdvt", 1, 162, ref=_S + ": RX_SI_CTRL_ADVT @ (1,162): bit 2 "
                "RX_OUTPUT_AMP_CTRL_SUPPORT, bit 3 RX_OUTPUT_EQ_PRE_CTRL_SUPPORT, bit 4 ..._POST_...")
TX_FIXED_EQ_SUPPORTED_BIT = 2
TX_ADAPTIVE_EQ_SUPPORTED_BIT = 3
RX_AMP_SUPPORTED_BIT = 2
RX_PRE_SUPPORTED_BIT = 3
RX_POST_SUPPORTED_BIT = 4
INACTIVE_FW_MAJOR = _f("InactiveFirmwareMajor", 1, 128, ref=_S + ": INACTIVE_FW_MAJOR_REV @ (1,128)")
INACTIVE_FW_MINOR = _f("InactiveFirmwareMinor", 1, 129, ref=_S + ": INACTIVE_FW_MINOR_REV @ (1,129)")

# --- Page 10h (banked): lane and data path control, Staged Control Set 0 (CMIS 5.2 s8.9) -------
DP_DEINIT = _f("DPDeinit", 0x10, 128, "bit_per_lane", ref="CMIS 5.2 s8.9.2 page 10h byte 128 DPDeinit lane bits")
APPLY_DPINIT_SCS0 = _f("ApplyDPInit_SCS0", 0x10, 143, "bit_per_lane",
                       ref=_S + ": STAGED_CTRL_APPLY_DPINIT_FIELD_0 @ (0x10,143)")
APPLY_IMMEDIATE_SCS0 = _f("ApplyImmediate_SCS0", 0x10, 144, "bit_per_lane",
                          ref=_S + ": STAGED_CTRL_APPLY_IMMEDIATE_FIELD_0 @ (0x10,144)")
DP_CONFIG_SCS0 = _f("DPConfig_SCS0", 0x10, 145, "byte_per_lane",
                    ref=_S + ": STAGED_CTRL_APSEL_FIELD_0_<lane> @ (0x10,144+lane); CMIS 5.2 s8.9.4: "
                    "bits 7-4 AppSel, bits 3-1 DataPathID, bit 0 ExplicitControl")
# AdaptiveInputEqEnableTx<i>: 1 = the module adapts its Tx input equalizer, 0 = it uses the fixed code
# FixedInputEqTargetTx<i> (bytes 156-159). Written through the staged set and an Apply trigger like the
# EQ codes (CmisModule.apply_eq clears it where tx_eq is written, CmisModule.set_tx_adaptive sets it).
TX_ADAPTIVE_EN_SCS0 = _f("AdaptiveInputEqEnableTx_SCS0", 0x10, 153, "bit_per_lane",
                         ref="CMIS 5.2 Table 8-66 (Staged Control Set 0, Tx Controls) page 10h byte 153 "
                         "bit lane-1, advertised by page 01h byte 161 bit 3; " + _S
                         + ": ADAPTIVE_INPUT_EQ_ENABLE_TX @ (0x10,153)")
TX_FIXED_EQ_SCS0 = _f("FixedInputEqTargetTx_SCS0", 0x10, 156, "nibble_per_lane",
                      ref=_S + ": FIXED_INPUT_EQ_TARGET_TX1..8 @ (0x10,156..159)")
RX_PRE_SCS0 = _f("OutputEqPreCursorTargetRx_SCS0", 0x10, 162, "nibble_per_lane",
                 ref=_S + ": OUTPUT_EQ_PRE_CURSOR_TARGET_RX1..8 @ (0x10,162..165)")
RX_POST_SCS0 = _f("OutputEqPostCursorTargetRx_SCS0", 0x10, 166, "nibble_per_lane",
                  ref=_S + ": OUTPUT_EQ_POST_CURSOR_TARGET_RX1..8 @ (0x10,166..169)")
RX_AMP_SCS0 = _f("OutputAmplitudeTargetRx_SCS0", 0x10, 170, "nibble_per_lane",
                 ref=_S + ": OUTPUT_AMPLITUDE_TARGET_RX1..8 @ (0x10,170..173)")
# Staged Control Set 0 spans 145..173 (CMIS 5.2 s8.9.4-s8.9.7).
SCS0_FIRST, SCS0_LAST = 145, 173

# --- Page 11h (banked): lane status, Active Control Set (CMIS 5.2 s8.10) -----------------------
DP_STATE = _f("DPState", 0x11, 128, "nibble_per_lane",
              ref=_S + ": DATA_PATH_STATE DP<lane>State @ (0x11,128..131), odd lane bits 0-3")
CONFIG_STATUS = _f("ConfigStatus", 0x11, 202, "nibble_per_lane",
                   ref=_S + ": CONFIG_LANE_STATUS @ (0x11,202..205), odd lane bits 0-3")
ACTIVE_DP_CONFIG = _f("DPConfig_Active", 0x11, 206, "byte_per_lane",
                      ref=_S + ": ACTIVE_APSEL_HOSTLANE<lane> @ (0x11,206..213) bits 4-7")
# Active Control Set: the Staged Control Set 0 layout moved by +61 bytes (CMIS 5.2 s8.10.10,
# page 11h bytes 206-234 mirror page 10h bytes 145-173).
TX_ADAPTIVE_EN_ACTIVE = _f("AdaptiveInputEqEnableTx_Active", 0x11, 214, "bit_per_lane",
                           ref="CMIS 5.2 s8.10.10, Table 8-87 (Active Control Set, Provisioned Tx Controls) "
                           "page 11h byte 214 bit lane-1 (RO)")
TX_FIXED_EQ_ACTIVE = _f("FixedInputEqTargetTx_Active", 0x11, 217, "nibble_per_lane",
                        ref="CMIS 5.2 s8.10.10 page 11h bytes 217-220")
RX_PRE_ACTIVE = _f("OutputEqPreCursorTargetRx_Active", 0x11, 223, "nibble_per_lane",
                   ref="CMIS 5.2 s8.10.10 page 11h bytes 223-226")
RX_POST_ACTIVE = _f("OutputEqPostCursorTargetRx_Active", 0x11, 227, "nibble_per_lane",
                    ref="CMIS 5.2 s8.10.10 page 11h bytes 227-230")
RX_AMP_ACTIVE = _f("OutputAmplitudeTargetRx_Active", 0x11, 231, "nibble_per_lane",
                   ref="CMIS 5.2 s8.10.10 page 11h bytes 231-234")
ACTIVE_FIRST, ACTIVE_LAST = 206, 234
DPINIT_PENDING = _f("DPInitPending", 0x11, 235, "bit_per_lane", ref=_S + ": DPINIT_PENDING @ (0x11,235)")

# knob name -> (staged field, active field)
EQ_FIELDS: dict[str, tuple[Field, Field]] = {
    RX_PRE: (RX_PRE_SCS0, RX_PRE_ACTIVE),
    RX_POST: (RX_POST_SCS0, RX_POST_ACTIVE),
    RX_AMP: (RX_AMP_SCS0, RX_AMP_ACTIVE),
    TX_EQ: (TX_FIXED_EQ_SCS0, TX_FIXED_EQ_ACTIVE),
}
KNOBS = tuple(EQ_FIELDS)

# --- Pages 13h/14h (banked): diagnostics, PRBS generator/checker (CMIS 5.2 s8.13-s8.14) --------
HOST_GEN_ENABLE = _f("HostSideGeneratorEnable", 0x13, 144, "bit_per_lane",
                     ref="CMIS 5.2 s8.13 page 13h byte 144")
HOST_GEN_PATTERN = _f("HostSideGeneratorPatternSelect", 0x13, 148, "nibble_per_lane",
                      ref="CMIS 5.2 s8.13 page 13h bytes 148-151")
HOST_CHK_ENABLE = _f("HostSideCheckerEnable", 0x13, 160, "bit_per_lane",
                     ref="CMIS 5.2 s8.13 page 13h byte 160")
HOST_CHK_PATTERN = _f("HostSideCheckerPatternSelect", 0x13, 164, "nibble_per_lane",
                      ref="CMIS 5.2 s8.13 page 13h bytes 164-167")
_FB = "facebook/fboss fboss/qsfp_service/module/cmis/CmisModule.cpp"
BER_CTRL = _f("BerCtrl", 0x13, 177, ref=_FB + " (BER_CTRL @ PAGE13 177; clearTransceiverPrbsStats writes bit 5 "
              "to 1 then 0 to reset the checker counters)")
BER_CTRL_RESET_BIT = 5
HOST_CHK_LOL_LATCH = _f("HostCheckerLossOfLockLatch", 0x14, 138, "bit_per_lane",
                        ref=_FB + " (HOST_LANE_CHECKER_LOL_LATCH @ PAGE14 138; getPrbsStats: locked = bit clear)")
DIAG_SELECTOR = _f("DiagnosticsSelector", 0x14, 128, ref=_FB + " (DIAG_SEL @ PAGE14 128); CMIS 5.2 s8.14")
# DiagnosticsSelector values (CMIS 5.2 s8.14 "Diagnostics Selector" table):
DIAG_SEL_BER = 0x01  # fboss CmisModule.h DiagnosticFeatureEncoding::BER; 14h 192-207 host BER F16 per lane
DIAG_SEL_HOST_ERRCNT_1_4 = 2  # UNVERIFIED (no public host code found): 192-255 lanes 1-4, U64 bits then U64 errors
DIAG_SEL_HOST_ERRCNT_5_8 = 3  # UNVERIFIED: the same for lanes 5-8
DIAG_DATA_OFFSET = 192
DIAG_LANE_STRIDE = 16
HOST_BER_OFFSET = 192  # fboss: HOST_BER @ PAGE14 192, 16 bytes (2 per lane), decoded by QsfpModule::getBerFloatValue
# fboss CmisModule.cpp kUsecDiagSelectLatchWaitPrbs = 200000: wait after a DiagnosticsSelector change
DIAG_LATCH_WAIT_S = 0.2
PRBS31Q = 0  # pattern code 0 = PRBS-31Q (fboss CmisModule.cpp prbs pattern map: PRBS31Q -> 0)

# --- Pages 20h-2Fh: Versatile Diagnostics Monitoring (CMIS 5.2 s8.20) -------------------------
# Descriptor pages 20h-23h (one per group of 64 observables): per observable two bytes, the even byte
# holding the threshold set ID (bits 7-4) and the lane number minus one (bits 3-0), the odd byte the
# observable type ID. The real-time samples of the same observables are on pages 24h-27h (page + 4),
# two bytes big-endian each (CMIS 5.2 s8.20.2 / s8.20.3).
VDM_DESC_PAGE = 0x20
VDM_SAMPLE_PAGE = 0x24
VDM_GROUPS = _f("VdmGroupsSupported", 0x2F, 128, bit_lo=0, width=2,
                ref=_S + ": VDM_SUPPORTED_PAGE @ (0x2f,128) bits 0-1 (groups supported - 1)")
VDM_CONTROL = _f("VdmControl", 0x2F, 144, ref=_S + ": VDM_CONTROL @ (0x2f,144); bit 7 FreezeRequest")
VDM_STATUS = _f("VdmStatus", 0x2F, 145, ref=_S + ": VDM_STATUS @ (0x2f,145) bit 7 VDM_FREEZE_DONE, "
                "bit 6 VDM_UNFREEZE_DONE")
VDM_FREEZE_REQUEST = 0x80
VDM_FREEZE_DONE_BIT = 7
VDM_UNFREEZE_DONE_BIT = 6
# Threshold pages 28h-2Bh (descriptor page + 8): 8 bytes per threshold set ID (high alarm, low alarm,
# high warning, low warning, 2 bytes each, same format as the observable); flag page 2Ch: 32 bytes per
# group, 4 bits per observable (bit 0 high alarm, 1 low alarm, 2 high warning, 3 low warning; odd
# observable in the high nibble). sonic sonic_platform_base/sonic_xcvr/api/public/cmisVDM.py get_vdm_page
# (vdm_thrshPage = page + 8, THRSH_SPACING 8, VDM_FLAG_PAGE 0x2c, vdm_flag_offset = 32*(page-0x20)+index//2).
VDM_THRESHOLD_PAGE = 0x28
VDM_FLAG_PAGE = 0x2C
# Observable type IDs (CMIS 5.2 s8.20; sonic sonic_platform_base/sonic_xcvr/codes/public/cmis.py VDM_TYPE):
# id -> (field name, format "U16"/"F16", scale)
VDM_TYPES: dict[int, tuple[str, str, float]] = {
    5: ("esnr_media_input_db", "U16", 1.0 / 256),
    6: ("esnr_host_input_db", "U16", 1.0 / 256),
    7: ("ltp_media_input_db", "U16", 1.0 / 256),
    8: ("ltp_host_input_db", "U16", 1.0 / 256),
    9: ("prefec_ber_min_media_input", "F16", 1.0),
    10: ("prefec_ber_min_host_input", "F16", 1.0),
    11: ("prefec_ber_max_media_input", "F16", 1.0),
    12: ("prefec_ber_max_host_input", "F16", 1.0),
    13: ("prefec_ber_avg_media_input", "F16", 1.0),
    14: ("prefec_ber_avg_host_input", "F16", 1.0),
    15: ("prefec_ber_media_input", "F16", 1.0),
    16: ("prefec_ber_host_input", "F16", 1.0),
    17: ("errored_frames_min_media_input", "F16", 1.0),
    18: ("errored_frames_min_host_input", "F16", 1.0),
    19: ("errored_frames_max_media_input", "F16", 1.0),
    20: ("errored_frames_max_host_input", "F16", 1.0),
    21: ("errored_frames_avg_media_input", "F16", 1.0),
    22: ("errored_frames_avg_host_input", "F16", 1.0),
    23: ("errored_frames_media_input", "F16", 1.0),
    24: ("errored_frames_host_input", "F16", 1.0),
    25: ("ferc_total_media_input", "F16", 1.0),
    26: ("ferc_total_host_input", "F16", 1.0),
}
VDM_ESNR_HOST, VDM_PREFEC_BER_HOST = 6, 16


def f16_decode(raw: int) -> float:
    """CMIS F16: exponent bits 15-11, mantissa bits 10-0, value = m * 10**(e - 24) (CMIS 5.2 s8.20)."""
    return (raw & 0x7FF) * 10.0 ** (((raw >> 11) & 0x1F) - 24)


def f16_encode(value: float) -> int:
    """Inverse of :func:`f16_decode` (largest mantissa <= 2047 that fits)."""
    if value <= 0:
        return 0
    e = max(0, min(31, math.floor(math.log10(value / 2047.0)) + 1 + 24))
    m = int(round(value / 10.0 ** (e - 24)))
    while m > 2047 and e < 31:
        e += 1
        m = int(round(value / 10.0 ** (e - 24)))
    return (e << 11) | min(m, 2047)


class ModuleState(IntEnum):
    """CMIS 5.2 Table 8-6 ModuleState encodings (lower page byte 3 bits 3-1)."""

    LOW_PWR = 1
    PWR_UP = 2
    READY = 3
    PWR_DN = 4
    FAULT = 5


class DPState(IntEnum):
    """CMIS 5.2 s8.10.1 DPState encodings (page 11h bytes 128-131)."""

    DEACTIVATED = 1
    INIT = 2
    DEINIT = 3
    ACTIVATED = 4
    TX_TURN_ON = 5
    TX_TURN_OFF = 6
    INITIALIZED = 7


class ConfigStatus(IntEnum):
    """CMIS 5.2 s8.10.9 ConfigStatus encodings (page 11h bytes 202-205)."""

    UNDEFINED = 0
    SUCCESS = 1
    REJECTED = 2
    REJECTED_INVALID_APPSEL = 3
    REJECTED_INVALID_DATA_PATH = 4
    REJECTED_INVALID_SI = 5
    REJECTED_LANES_IN_USE = 6
    REJECTED_PARTIAL_DATA_PATH = 7
    IN_PROGRESS = 12


def enum_name(enum: type[IntEnum], value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return f"reserved({value})"


# Rx output amplitude codes (CMIS 5.2 s8.9.7 table "Rx output amplitude codes"), mV ppd
RX_AMP_RANGES_MV = {0: (100, 400), 1: (300, 600), 2: (400, 800), 3: (600, 1200)}
