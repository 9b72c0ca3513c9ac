"""The module's own thresholds in the watch: page 02h (TempHighWarning and the other monitor thresholds)
in every emulated image, copied from a real module's dump and read by SONiC's own CmisApi; the watch's
projection made at that temperature and at the module's VDM warning levels, not at its command-line
fallbacks; a projected BER bounded to a probability, with the slope's 95 % interval."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from eqtune.emulate.cmis_table import image_names, load_dump, load_table
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.watch.detect import DetectConfig, FleetDetector
from eqtune.watch.fleet import FleetSpec, start_fleet
from eqtune.watch.poller import Watcher
from eqtune.watch.targets import WatchTarget

#: TempHighAlarm, TempLowAlarm, TempHighWarning, TempLowWarning (C) of the two real dumps, decoded by hand
#: from FBOSS FakeTransceiverImpl.cpp (14ec47e) kCmisArista2x400GXdr4Page02 l.3550 (4e00 f800 4900 fd00)
#: and kCmisArista400GXdr4Page02 l.3422 (4b00 fb00 4600 0000): s16 / 256
TEMPS = {"fboss-arista-osfp-2x400g-xdr4": (78.0, -8.0, 73.0, -3.0),
         "fboss-arista-qdd-400g-xdr4": (75.0, -5.0, 70.0, 0.0)}


def _page02(emu: EmulatedModule, first: int, n: int) -> bytes:
    emu.write(127, bytes([0x02]))
    return bytes(emu.read(first, n))


@pytest.mark.parametrize("image", image_names())
def test_every_emulated_image_has_a_real_modules_page_02h_thresholds(image):
    img = load_table().images[image]
    dump = img["thresholds_dump"]
    emu = EmulatedModule(image=image, clock=VirtualClock(), settle_s=0.0, noise=False)
    got = _page02(emu, 128, 72)
    assert got == load_dump(dump)["pages"]["02"][:72]
    temps = tuple(int.from_bytes(got[i:i + 2], "big", signed=True) / 256.0 for i in range(0, 8, 2))
    assert temps == TEMPS[dump]
    assert ("osfp" in dump) == image.startswith("osfp")  # an OSFP image takes the OSFP module's levels


def test_sonic_cmis_api_reads_the_emulated_thresholds():
    """SONiC's unmodified CmisApi (get_transceiver_threshold_info, sonic-platform-common
    api/public/cmis.py) over the emulated OSFP image: the real module's levels."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hosts"))
    import sonic_xcvrd_harness as H

    reason = H.missing_reason()
    if reason:
        pytest.skip(reason)
    sonic = H._load_sonic()
    sfp = H.EmulatedSfp(sonic, EmulatedModule(image="osfp8-both", clock=VirtualClock(), settle_s=0.0, noise=False))
    info = sfp.get_xcvr_api().get_transceiver_threshold_info()
    assert (info["temphighalarm"], info["templowalarm"], info["temphighwarning"], info["templowwarning"]) == \
        TEMPS["fboss-arista-osfp-2x400g-xdr4"]
    assert info["vcchighalarm"] == pytest.approx(0x8dcc / 10000.0) and info["vcclowwarning"] == pytest.approx(0x7a76 / 10000.0)


def test_the_watch_projects_at_the_modules_own_levels_not_its_fallbacks():
    """A planted thermal lane: the projection is at the module's TempHighWarning (73 C), the warning
    levels are the module's VDM ones (BER 1e-5, eSNR 17 dB), although the watch was given 50 C, 1e-4 and
    1e-3 as fallbacks."""
    clock = [1.75e9]
    spec = FleetSpec(modules=4, planted=[(1, 3)], stable_marginal=[])
    cfg = DetectConfig(hot_c=50.0, ber_warning=1e-4, ber_alarm=1e-3, esnr_warning_db=12.0)
    with start_fleet(spec, clock=lambda: clock[0]) as fleet:
        w = Watcher([WatchTarget(r, channel="c2m-10in") for r in fleet.resources], interval_s=10.0, cfg=cfg,
                    clock=lambda: clock[0])
        try:
            found = []
            for _ in range(30):
                rep = w.poll_interval()
                clock[0] += 10.0
                found += [f for f in rep.new_flags if f["kind"] == "thermal"]
            det = w.detector
            assert det is not None
            assert all(det.hot[m] == 73.0 for m in range(4))
            assert math.isclose(10 ** det.warn[0, 0, 0], 1e-5) and math.isclose(-det.warn[1, 0, 0], 17.0)
            assert found and (found[0]["resource"], found[0]["lane"]) == (fleet.resources[1], 3)
            ev = found[0]["evidence"]
            assert ev["hot_c"] == 73.0 and ev["hot_c_from"] == "TempHighWarning (page 02h)"
            assert ev["thresholds_from"] == "module VDM" and ev["warning"] == pytest.approx(17.0)
            # the projection is the lane's own line taken to 73 C (eSNR falls with temperature)
            level_now = ev["level_now"]
            expect = level_now + ev["sensitivity_per_c"] * (73.0 - ev["temp_now_c"])
            assert ev["projected_at_hot"] == pytest.approx(expect, abs=0.5)
            lo, hi = ev["projected_at_hot_ci95"]
            assert lo <= ev["projected_at_hot"] <= hi
        finally:
            w.close()


def test_a_projected_ber_is_a_probability_with_its_slope_interval():
    """A lane whose log10 BER climbs 0.15 decades/C (no eSNR): taken to 70 C it would read 10^2.75; the
    evidence says 0.5 (and its interval too), with the sensitivity's standard error and 95 % interval."""
    rng = np.random.default_rng(3)
    det = FleetDetector(1, 8, 60.0)
    temp = 25.0
    flagged = None
    for i in range(240):
        temp = 25.0 + 20.0 * (0.5 - 0.5 * math.cos(2 * math.pi * i / 120.0))
        logb = np.full(8, -9.0) + rng.normal(0.0, 0.02, 8)
        logb[0] = -4.0 + 0.15 * (temp - 25.0) + rng.normal(0.0, 0.02)
        det.update(np.array([60.0 * i]), np.array([temp]), 10.0 ** logb[None, :], np.full((1, 8), np.nan))
        fs = [f for f in det.findings(0, 0) if f.kind == "thermal"]
        if fs and flagged is None:
            flagged = fs[0].evidence
    assert flagged is not None
    assert flagged["projected_at_hot"] == 0.5 and flagged["projected_at_hot_ci95"][1] == 0.5
    assert 0.0 < min(flagged["projected_at_hot_ci95"]) <= 0.5
    lo, hi = flagged["sensitivity_ci95_per_c"]
    assert flagged["sensitivity_se_per_c"] > 0 and lo < flagged["sensitivity_per_c"] < hi
    assert lo < 0.15 < hi or abs(flagged["sensitivity_per_c"] - 0.15) < 0.03
    assert not any(det.findings(0, ln) for ln in range(1, 8))
