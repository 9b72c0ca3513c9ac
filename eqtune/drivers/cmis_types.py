"""The typed values a CMIS module hands out: identity, EQ capabilities, EQ codes, planned changes, VDM.

These dataclasses are the vocabulary of the :class:`eqtune.drivers.protocols.CmisModule` contract:
the real driver (:class:`eqtune.drivers.cmis.CmisDriver`), the ``emu:`` modules behind it and the
test fakes all return them (the fakes build them too; nothing re-declares them). State-code names
come from CMIS 5.2 Tables 8-6 (ModuleState), 8-80 (DPState) and 8-81 (ConfigStatus); the
SFF-8024 identifiers from SFF-8024 Table 4-1.

Light: no I/O, no numpy; imports only the knob names (:mod:`eqtune.serdes.knobs`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from eqtune.drivers.cmis_apps import Application
from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ

#: ``{lane: {knob: code}}``: lanes 1..8, knob names of :mod:`eqtune.serdes.knobs`, integer codes.
EqCodes = dict[int, dict[str, int]]

MODULE_STATE_NAMES = {1: "ModuleLowPwr", 2: "ModulePwrUp", 3: "ModuleReady", 4: "ModulePwrDn", 5: "ModuleFault"}
DP_STATE_NAMES = {1: "DPDeactivated", 2: "DPInit", 3: "DPDeinit", 4: "DPActivated", 5: "DPTxTurnOn",
                  6: "DPTxTurnOff", 7: "DPInitialized"}
CONFIG_STATUS_NAMES = {0: "ConfigUndefined", 1: "ConfigSuccess", 2: "ConfigRejected",
                       3: "ConfigRejectedInvalidAppSel", 4: "ConfigRejectedInvalidDataPath",
                       5: "ConfigRejectedInvalidSI", 6: "ConfigRejectedLanesInUse",
                       7: "ConfigRejectedPartialDataPath", 12: "ConfigInProgress"}
# SFF-8024 identifiers of modules managed with CMIS (SFF-8024 Table 4-1)
CMIS_IDENTIFIERS = {0x18: "QSFP-DD", 0x19: "OSFP", 0x1A: "SFP-DD", 0x1B: "DSFP", 0x1E: "QSFP+ (CMIS)",
                    0x1F: "SFP-DD (CMIS)", 0x20: "SFP+ (CMIS)", 0x21: "OSFP-XD", 0x22: "OIF-ELSFP",
                    0x23: "CDFP (CMIS)"}


def state_name(table: dict[int, str], value: int) -> str:
    """The CMIS name of a state/status code, ``reserved(N)`` for codes the tables do not list."""
    return table.get(int(value), f"reserved({int(value)})")


@dataclass(frozen=True)
class ModuleIdentity:
    """Page 00h administrative information (CMIS 5.2 Table 8-28; strings stripped of padding).

    ``oui`` as ``"AA-BB-CC"``, ``date_code`` as ``"20YY-MM-DD[ lot L]"`` when it parses, ``firmware``
    and ``cmis_rev`` as ``"major.minor"``, ``module_state`` a :data:`MODULE_STATE_NAMES` name,
    ``form_factor`` a :data:`CMIS_IDENTIFIERS` name; ``page00_checksum`` "ok" or "mismatch (module
    EEPROM)" when byte 222 is wrong in the same way on every read.
    """

    vendor: str
    oui: str
    pn: str
    rev: str
    sn: str
    date_code: str
    firmware: str
    cmis_rev: str
    module_state: str
    form_factor: str = ""
    page00_checksum: str = "ok"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class EqCapabilities:
    """Page 01h advertisement: the EQ a module lets a host set, and how it applies it.

    ``*_max`` is None when the knob is not supported (page 01h bytes 153-154, 161-162);
    ``rx_amp_codes`` the supported amplitude codes (byte 153 bits 3-0). ``stepped_config_only``,
    ``auto_commissioning`` (lower page byte 2, meaningful from CMIS 5.3), ``cmis_rev`` (byte 1) and
    ``reconfiguration`` ("both", "stepped", "hot", "regular":
    :func:`eqtune.drivers.cmis_policy.reconfiguration_support`) decide the Apply procedure;
    ``apply_immediate`` is True when ApplyImmediate is usable. ``dp_init_max_s`` /
    ``dp_deinit_max_s`` (s) from page 01h byte 144 (None: reserved code).
    """

    lanes: int
    rx_pre_max: int | None
    rx_post_max: int | None
    rx_amp_codes: tuple[int, ...]
    tx_eq_max: int | None
    tx_adaptive: bool
    stepped_config_only: bool
    apply_immediate: bool
    diagnostics: bool = False
    vdm: bool = False
    dp_init_max_s: float | None = None
    auto_commissioning: int = 0
    reconfiguration: str = "both"
    cmis_rev: str = "5.2"
    dp_deinit_max_s: float | None = None
    applications: tuple[Application, ...] = ()  # lower page 00h bytes 86-117 (eqtune.drivers.cmis_apps)

    def knob_values(self) -> dict[str, tuple[int, ...]]:
        """Allowed codes per supported knob (knobs the module does not support are absent)."""
        out: dict[str, tuple[int, ...]] = {}
        if self.rx_pre_max is not None:
            out[RX_PRE] = tuple(range(self.rx_pre_max + 1))
        if self.rx_post_max is not None:
            out[RX_POST] = tuple(range(self.rx_post_max + 1))
        if self.rx_amp_codes:
            out[RX_AMP] = tuple(self.rx_amp_codes)
        if self.tx_eq_max is not None:
            out[TX_EQ] = tuple(range(self.tx_eq_max + 1))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: tuples as lists, plus ``knob_values``."""
        d = asdict(self)
        d["rx_amp_codes"] = list(self.rx_amp_codes)
        d["knob_values"] = {k: list(v) for k, v in self.knob_values().items()}
        d["applications"] = [a.to_dict() for a in self.applications]
        return d


class PlannedChange(TypedDict):
    """One row of :meth:`CmisModule.plan_eq`: ``current`` is the active code (None: not readable)."""

    lane: int
    knob: str
    current: int | None
    new: int


@dataclass(frozen=True)
class VdmThreshold:
    """Alarm/warning thresholds of one observable, in its unit (sonic: 8 bytes per threshold set)."""

    high_alarm: float
    low_alarm: float
    high_warning: float
    low_warning: float


@dataclass(frozen=True)
class VdmFlags:
    """Latched threshold-crossing flags of one observable (sonic: 4 bits on page 2Ch)."""

    high_alarm: bool
    low_alarm: bool
    high_warning: bool
    low_warning: bool


@dataclass(frozen=True)
class VdmLane:
    """VDM values of one lane (None: the module does not advertise that observable).

    BER fields are pre-FEC bit error ratios (dimensionless); errored-frame fields are ratios of FEC
    codewords with uncorrectable errors; ``ferc_*`` is the total accumulated errored-frame count
    (FERC); eSNR and LTP (PAM4 level transition parameter) are in dB. ``host`` = host (electrical)
    input of the module, ``media`` = media (optical) input. ``thresholds``/``flags`` are keyed by
    the field name.
    """

    lane: int
    prefec_ber_host_input: float | None = None
    prefec_ber_min_host_input: float | None = None
    prefec_ber_max_host_input: float | None = None
    prefec_ber_avg_host_input: float | None = None
    prefec_ber_media_input: float | None = None
    prefec_ber_min_media_input: float | None = None
    prefec_ber_max_media_input: float | None = None
    prefec_ber_avg_media_input: float | None = None
    errored_frames_host_input: float | None = None
    errored_frames_min_host_input: float | None = None
    errored_frames_max_host_input: float | None = None
    errored_frames_avg_host_input: float | None = None
    errored_frames_media_input: float | None = None
    errored_frames_min_media_input: float | None = None
    errored_frames_max_media_input: float | None = None
    errored_frames_avg_media_input: float | None = None
    ferc_total_host_input: float | None = None
    ferc_total_media_input: float | None = None
    esnr_host_input_db: float | None = None
    esnr_media_input_db: float | None = None
    ltp_host_input_db: float | None = None
    ltp_media_input_db: float | None = None
    thresholds: dict[str, VdmThreshold] = field(default_factory=dict)
    flags: dict[str, VdmFlags] = field(default_factory=dict)

    def __getitem__(self, name: str) -> float | None:
        """Mapping-style access (``lane_vdm["prefec_ber_host_input"]``), for older callers."""
        value: float | None = getattr(self, name)
        return value

    def get(self, name: str, default: float | None = None) -> float | None:
        value: float | None = getattr(self, name, None)
        return default if value is None else value

    def advertised(self) -> dict[str, float]:
        """The observables the module advertises for this lane: name -> value."""
        return {k: v for k, v in asdict(self).items() if k not in ("lane", "thresholds", "flags") and v is not None}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
