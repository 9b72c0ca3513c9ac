"""Application descriptors at 200G per lane: SFF-8024 host/media codes, the 1.6T OSFP emulator image and
``module doctor``.

Independent sources: SONiC's own SFF-8024 tables (sonic-platform-common
sonic_platform_base/sonic_xcvr/codes/public/sff8024.py, read with ``ast`` from the checkout found like the
xcvrd harness does; skipped with the reason when absent), and hand-assembled descriptor bytes.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eqtune.drivers.cmis_apps import HOST_INTERFACES, SM_MEDIA_INTERFACES, decode_applications

HOSTS_DIR = Path(__file__).resolve().parents[1] / "hosts"


def _sonic_sff8024() -> dict[str, dict[int, str]]:
    import sys

    sys.path.insert(0, str(HOSTS_DIR))
    try:
        import sonic_xcvrd_harness as harness
    finally:
        sys.path.remove(str(HOSTS_DIR))
    path = harness.sonic_root() / "sonic-platform-common/sonic_platform_base/sonic_xcvr/codes/public/sff8024.py"
    if not path.is_file():
        pytest.skip(f"SONiC sff8024.py not found at {path} (set EQTUNE_SONIC_ROOT)")
    tables: dict[str, dict[int, str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Dict):
            if node.targets[0].id in ("HOST_ELECTRICAL_INTERFACE", "SM_MEDIA_INTERFACE"):
                tables[node.targets[0].id] = ast.literal_eval(node.value)
    return tables


def test_labels_are_sonics_own() -> None:
    t = _sonic_sff8024()
    for code, (label, _, _) in HOST_INTERFACES.items():
        assert t["HOST_ELECTRICAL_INTERFACE"][code] == label, code
    for code, (label, _) in SM_MEDIA_INTERFACES.items():
        assert t["SM_MEDIA_INTERFACE"][code] == label, code
    assert t["HOST_ELECTRICAL_INTERFACE"][131].startswith("1.6TAUI-8")
    assert t["HOST_ELECTRICAL_INTERFACE"][130].startswith("800GAUI-4")


def test_decode_two_applications_then_the_terminator() -> None:
    """App 1: 1.6TAUI-8 -> 1.6TBASE-DR8 on lane 1 (8 host, 8 media lanes); app 2: 800GAUI-4 ->
    800GBASE-DR4 starting on lanes 1 or 5 (4 + 4); then 0xFF ends the list (CMIS 5.2 Table 8-23)."""
    raw = bytes([131, 127, 0x88, 0x01, 130, 119, 0x44, 0x11, 0xFF, 0, 0, 0, 81, 86, 0x88, 0x01])
    apps = decode_applications(raw)
    assert len(apps) == 2
    a, b = apps
    assert (a.host, a.media, a.host_lanes, a.media_lanes, a.start_lanes, a.host_lane_gbps) == (
        "1.6TAUI-8 (Annex176E)", "1.6TBASE-DR8 (Clause 180)", 8, 8, (1,), 200)
    assert (b.host, b.media, b.host_lanes, b.start_lanes, b.host_lane_gbps) == (
        "800GAUI-4 (Annex176E)", "800GBASE-DR4 (Clause 180)", 4, (1, 5), 200)
    assert "4x200G" in b.summary()


def test_unknown_codes_and_other_media_types_are_named_by_code() -> None:
    (a,) = decode_applications(bytes([200, 127, 0x11, 0x01]), media_type=3)
    assert a.host == "host code 200" and a.host_lane_gbps is None
    assert a.media == "media code 127"   # passive copper table not named here: no SMF label on it


def _emulated_driver(image: str):
    from eqtune.drivers.cmis import CmisDriver
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.module import EmulatedModule, VirtualClock
    from eqtune.emulate.transport import EmulatorTransport

    emu = EmulatedModule(image=image, clock=VirtualClock(), seed=1, noise=False, settle_s=0.0)
    return emu, CmisDriver(PagedRegisters(EmulatorTransport(emu, f"emu:{image}")), resource=f"emu:{image}")


def test_the_1600g_image_advertises_8x200g_over_the_224g_channel() -> None:
    emu, drv = _emulated_driver("osfp8-1600g")
    assert emu.link.channel_name == "c2m-224g-6in" and emu.link.rate_gbd == pytest.approx(106.25)
    caps = drv.capabilities()
    assert caps.lanes == 8
    (app,) = caps.applications
    assert (app.host_code, app.media_code, app.host_lane_gbps, app.host_lanes) == (131, 127, 200, 8)
    assert drv.identity().pn == "EMU-1600G-OSFP"
    assert caps.to_dict()["applications"][0]["host"] == "1.6TAUI-8 (Annex176E)"


def test_the_800g_images_still_advertise_100g_lanes() -> None:
    _, drv = _emulated_driver("osfp8-both")
    (app,) = drv.capabilities().applications
    assert (app.host_code, app.host_lane_gbps) == (81, 100)


def test_module_doctor_shows_the_1600g_application() -> None:
    from eqtune.cli import main

    res = CliRunner().invoke(main, ["module", "doctor", "emu:c2m-224g-6in?image=osfp8-1600g&settle_ms=0"])
    assert res.exit_code == 0, res.output
    assert "application 1: 1.6TAUI-8 (Annex176E) -> 1.6TBASE-DR8 (Clause 180)  (8x200G host lanes)" in res.output
    assert "EMU-1600G-OSFP" in res.output
    js = CliRunner().invoke(main, ["module", "doctor", "--json", "emu:c2m-224g-6in?image=osfp8-1600g&settle_ms=0"])
    doc = json.loads(js.output)
    assert doc["capabilities"]["applications"][0]["host_lane_gbps"] == 200
