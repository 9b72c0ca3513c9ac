"""CMIS application descriptors (lower page 00h bytes 86-117): host and media interface, lanes, lane rate.

Each descriptor is 4 bytes (CMIS 5.2 Table 8-23; SONiC sonic_xcvr mem_maps page00_lower.py
HOST_ELECTRICAL_INTERFACE @ 86, media @ 87, lane counts @ 88 (host bits 7-4, media bits 3-0), host lane
assignment @ 89); the list ends at a host interface ID of 0x00 or 0xFF. The interface IDs are SFF-8024
codes (SFF-8024 Table 4-5 host electrical interface IDs, Table 4-7 single-mode media interface IDs).

Only the codes eqtune's emulator images and the 100G/200G-per-lane modules it tunes use are named here,
each from a public host's table (not from eqtune's own emulator):

* [SONIC] sonic-net/sonic-platform-common sonic_platform_base/sonic_xcvr/codes/public/sff8024.py
  (commit 8607c9f3), ``HOST_ELECTRICAL_INTERFACE`` (l.202) and ``SM_MEDIA_INTERFACE`` (l.346); labels
  quoted as SONiC spells them, with the line.
* [FBOSS] facebook/fboss fboss/qsfp_service/if/transceiver.thrift (commit 14ec47ec):
  ``ActiveCuHostInterfaceCode`` AUI_PAM4_4S_400G = 0x4F (l.356), AUI_PAM4_8S_800G = 0x51 (l.357);
  ``SMFMediaInterfaceCode`` DR4_800G = 0x77 (l.310). FBOSS at that commit names none of the
  200G-per-lane host codes (128-131) nor 1.6TBASE-DR8.

SONiC labels the 200G-per-lane AUIs "(Annex176E)"; PyChOpMarg 3.4.0 ``config/ieee_8023dj_d3p3.py`` (l.15)
puts the 200GAUI-1 C2M in P802.3dj Annex 176D. The label is quoted as SONiC has it; the annex is not
checked against the draft here. Codes outside this subset decode as "code N" (not an error).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# SFF-8024 host electrical interface ID -> (label, lanes of the interface, Gb/s per lane)
HOST_INTERFACES: dict[int, tuple[str, int, int]] = {
    75: ("100GAUI-1-S C2M (Annex 120G)", 1, 100),   # [SONIC] l.277
    76: ("100GAUI-1-L C2M (Annex 120G)", 1, 100),   # [SONIC] l.278
    79: ("400GAUI-4-S C2M (Annex 120G)", 4, 100),   # [SONIC] l.281; [FBOSS] AUI_PAM4_4S_400G = 0x4F
    80: ("400GAUI-4-L C2M (Annex 120G)", 4, 100),   # [SONIC] l.282
    81: ("800GAUI-8 S C2M (Annex 120G)", 8, 100),   # [SONIC] l.283; [FBOSS] AUI_PAM4_8S_800G = 0x51
    82: ("800GAUI-8 L C2M (Annex 120G)", 8, 100),   # [SONIC] l.284
    128: ("200GAUI-1 (Annex176E)", 1, 200),         # [SONIC] l.289
    129: ("400GAUI-2 (Annex176E)", 2, 200),         # [SONIC] l.290
    130: ("800GAUI-4 (Annex176E)", 4, 200),         # [SONIC] l.291
    131: ("1.6TAUI-8 (Annex176E)", 8, 200),         # [SONIC] l.292
}

# SFF-8024 single-mode media interface ID -> (label, Gb/s per media lane)
SM_MEDIA_INTERFACES: dict[int, tuple[str, int]] = {
    28: ("400GBASE-DR4 (Cl 124)", 100),             # [SONIC] l.375
    86: ("800GBASE-DR8 (Clause 124)", 100),         # [SONIC] l.427
    119: ("800GBASE-DR4 (Clause 180)", 200),        # [SONIC] l.456; [FBOSS] DR4_800G = 0x77
    127: ("1.6TBASE-DR8 (Clause 180)", 200),        # [SONIC] l.461
}
SMF_MEDIA_TYPE = 2  # lower page byte 85 (SONiC sff8024.py MODULE_MEDIA_TYPE: 2 = single-mode fibre)


@dataclass(frozen=True)
class Application:
    """One advertised application. ``host_lane_gbps`` is None for a code outside the named subset."""

    index: int                  # 1-based descriptor number (the AppSel code)
    host_code: int
    host: str
    media_code: int
    media: str
    host_lanes: int
    media_lanes: int
    start_lanes: tuple[int, ...]  # host lanes a data path of this application may start on
    host_lane_gbps: int | None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["start_lanes"] = list(self.start_lanes)
        return d

    def summary(self) -> str:
        rate = f"{self.host_lanes}x{self.host_lane_gbps}G" if self.host_lane_gbps else f"{self.host_lanes} lanes"
        return f"{self.index}: {self.host} -> {self.media} ({rate}, start lanes {','.join(map(str, self.start_lanes))})"


def media_label(code: int, media_type: int = SMF_MEDIA_TYPE) -> str:
    """The media interface label of ``code`` (single-mode fibre table only; other media types: the code)."""
    if media_type == SMF_MEDIA_TYPE and code in SM_MEDIA_INTERFACES:
        return SM_MEDIA_INTERFACES[code][0]
    return f"media code {code}"


def decode_applications(app: bytes, media_type: int = SMF_MEDIA_TYPE) -> tuple[Application, ...]:
    """The advertised applications from lower page bytes 86.. (4 bytes each, up to 8 here).

    ``media_type``: lower page byte 85, which selects the SFF-8024 media table.
    """
    out: list[Application] = []
    for k in range(len(app) // 4):
        host_id, media_id, counts, assign = app[4 * k: 4 * k + 4]
        if host_id in (0x00, 0xFF):
            break
        label, _, gbps = HOST_INTERFACES.get(host_id, (f"host code {host_id}", 0, None))
        out.append(Application(index=k + 1, host_code=host_id, host=label, media_code=media_id,
                               media=media_label(media_id, media_type), host_lanes=counts >> 4,
                               media_lanes=counts & 0xF,
                               start_lanes=tuple(b + 1 for b in range(8) if assign >> b & 1),
                               host_lane_gbps=gbps))
    return tuple(out)
