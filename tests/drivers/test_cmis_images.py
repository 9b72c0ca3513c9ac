"""Every CMIS flow against every module image of the emulator's own cited table.

The emulator builds its memory from ``cmis_table.toml`` (sonic-platform-common, FBOSS, Xena
citations) and never imports the driver's ``cmis_map``; a wrong bit in either fails here.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eqtune.drivers import cmis_map as M
from eqtune.drivers.cmis import CmisDriver
from eqtune.drivers.transport import PagedRegisters
from eqtune.emulate.cmis_table import image_names, load_table
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.emulate.transport import EmulatorTransport
from eqtune.errors import ModuleError

T = load_table()
IMAGES = image_names()
# the Apply procedure each advertised profile gets (eqtune.drivers.cmis_policy: FBOSS ApplyImmediate where
# hot reconfiguration is allowed, SONiC's step-by-step DPDeinit -> ApplyDPInit -> release otherwise)
EXPECTED = {"osfp8-both": ("ApplyImmediate", False), "qsfpdd8-hot": ("ApplyImmediate", False),
            "qsfpdd8-stepped": ("ApplyDPInit", True), "qsfp4-regular": ("ApplyDPInit", True),
            "osfp8-nodiag": ("ApplyImmediate", False), "osfp8-1600g": ("ApplyImmediate", False)}


def make(image: str, **kw) -> tuple[EmulatedModule, CmisDriver]:
    lanes = int(T.images[image]["lanes"])
    link = EmulatedLink("c2m-10in", lanes=lanes, seed=3, noise=False, quality=surrogate_quality(16.0))
    emu = EmulatedModule(link, settle_s=0.02, clock=VirtualClock(), image=image, **kw)
    return emu, CmisDriver(PagedRegisters(EmulatorTransport(emu, f"emu:{image}")), resource=f"emu:{image}")


def test_images_cover_every_reconfiguration_profile():
    imgs = T.images.values()
    assert {i["stepped_config_only"] for i in imgs} == {0, 1}
    assert {(i["cmis_rev"] >= 0x53, i["auto_commissioning"]) for i in imgs if i["stepped_config_only"]} == {
        (False, 0), (True, 1), (True, 2)}
    assert {i["diagnostics"] for i in imgs} == {True, False} and {i["lanes"] for i in imgs} == {4, 8}
    assert set(EXPECTED) == set(IMAGES)


def test_driver_map_agrees_with_the_independent_table():
    pairs = [(M.STEPPED_CONFIG_ONLY, T.SteppedConfigOnly), (M.AUTO_COMMISSIONING, T.AutoCommissioning),
             (M.DIAG_PAGES_SUPPORTED, T.DiagPagesSupported), (M.VDM_SUPPORTED, T.VdmPagesSupported),
             (M.MODULE_STATE, T.ModuleState), (M.TX_INPUT_EQ_MAX, T.TxInputEqMax), (M.RX_PRE_MAX, T.RxPreCursorMax),
             (M.RX_POST_MAX, T.RxPostCursorMax), (M.VDM_GROUPS, T.VdmGroupsSupported)]
    for drv, emu in pairs:
        assert (drv.page, drv.offset, drv.bit_lo, drv.width) == (emu.page, emu.offset, emu.bit_lo, emu.width), drv.name
    lanes = [(M.RX_PRE_SCS0, T.RxPreCursor), (M.RX_AMP_ACTIVE, T.ActiveRxAmplitude), (M.CONFIG_STATUS, T.ConfigStatus),
             (M.HOST_CHK_LOL_LATCH, T.HostCheckerLolLatch), (M.TX_FIXED_EQ_ACTIVE, T.ActiveFixedInputEqTx)]
    for drv, emu in lanes:
        assert all(drv.locate(ln) == emu.locate(ln) for ln in range(1, 9)), drv.name


@pytest.mark.parametrize("image", IMAGES)
def test_identity_and_capabilities(image):
    emu, mod = make(image)
    img = T.images[image]
    ident = mod.identity()
    rev = img["cmis_rev"]
    assert ident.cmis_rev == f"{rev >> 4}.{rev & 0xF}" and ident.module_state == "ModuleReady"
    assert ident.form_factor == {0x18: "QSFP-DD", 0x19: "OSFP", 0x1E: "QSFP+ (CMIS)"}[img["identifier"]]
    caps = mod.capabilities()
    assert caps.lanes == img["lanes"] and caps.diagnostics == img["diagnostics"] and caps.vdm == img["vdm"]
    assert caps.stepped_config_only == bool(img["stepped_config_only"])
    assert caps.auto_commissioning == img["auto_commissioning"]
    assert caps.knob_values()["rx_post"] == tuple(range(8))


@pytest.mark.parametrize("image", IMAGES)
def test_apply_readback_and_restore(image):
    emu, mod = make(image)
    told: list[str] = []
    mod.notify = told.append
    trigger, down = EXPECTED[image]
    method = mod.apply_method()
    assert (method.trigger, method.traffic_down) == (trigger, down)
    emu.writes.clear()
    mod.apply_eq({1: {"tx_eq": 3, "rx_pre": 2}})
    assert mod.active_eq(1)["tx_eq"] == 3 and mod.active_eq(1)["rx_pre"] == 2
    p10 = [w.offset for w in emu.writes if w.page == 0x10]
    assert (T.ApplyImmediate.offset in p10) == (trigger == "ApplyImmediate")
    assert (T.ApplyDPInit.offset in p10) == (trigger == "ApplyDPInit")
    assert (T.DPDeinit.offset in p10) == down and emu.ignored_triggers == 0
    assert bool(told) == down and (not told or "data path goes down" in told[0])
    assert all(emu.dp_state(ln) == T.codes["dp"]["activated"] for ln in range(1, emu.lanes + 1))
    # restore: a rejected apply leaves the previous active codes and the staged set as they were
    staged = emu.peek(0x10, 145, 29)
    emu.inject("reject")
    with pytest.raises(ModuleError, match="rejected"):
        mod.apply_eq({1: {"tx_eq": 5}})
    assert mod.active_eq(1)["tx_eq"] == 3 and emu.peek(0x10, 145, 29) == staged


@pytest.mark.parametrize("image", IMAGES)
def test_prbs_ber(image):
    emu, mod = make(image)
    if not T.images[image]["diagnostics"]:
        with pytest.raises(ModuleError, match="byte 142 bit 5"):
            mod.module_ber([1], 0.5)
        return
    mod.apply_eq({1: {"tx_eq": 2}})
    last = emu.lanes
    counts = mod.module_ber([1, last], dwell_s=0.5)
    for c in counts.values():
        assert c.bits == pytest.approx(emu.link.bit_rate_bps * c.dwell_s, rel=0.01)
    assert counts[1].ber == pytest.approx(emu.link.ber(1, "module_rx"), rel=0.05, abs=1e-12)
    resets = [w for w in emu.writes if w.page == 0x13 and w.offset == T.BerCtrl.offset]
    assert [w.data[0] >> 5 & 1 for w in resets[-2:]] == [1, 0]  # FBOSS counter reset: bit 5 set, then cleared


@pytest.mark.parametrize("image", IMAGES)
def test_vdm(image):
    emu, mod = make(image)
    img = T.images[image]
    if not img["vdm"]:
        with pytest.raises(ModuleError, match="VDM"):
            mod.vdm()
        return
    mod.apply_eq({1: {"tx_eq": 0}})  # a code far from the optimum: a BER a 0.1 s sample can see
    got = mod.vdm()
    assert set(got) == set(range(1, img["lanes"] + 1))
    names = {"esnr_host": "esnr_host_input_db", "ltp_host": "ltp_host_input_db", "ber_cur_host": "prefec_ber_host_input",
             "ber_min_host": "prefec_ber_min_host_input", "ber_max_host": "prefec_ber_max_host_input",
             "ber_avg_host": "prefec_ber_avg_host_input", "ef_cur_host": "errored_frames_host_input",
             "ferc_host": "ferc_total_host_input", "ber_cur_media": "prefec_ber_media_input"}
    assert set(got[1].advertised()) == {names[t] for t in img["vdm_types"]}
    assert got[1].esnr_media_input_db is None  # never advertised by these images: None, not 0
    if "ber_cur_host" in img["vdm_types"]:
        assert got[1].prefec_ber_host_input == pytest.approx(emu.link.ber(1, "module_rx"), rel=0.01)
        assert got[1].prefec_ber_host_input > 1e-6
    assert emu.peek(0x2F, T.VdmUnfreezeDone.offset)[0] >> 6 & 1  # unfreeze handshake completed


@pytest.mark.parametrize("image", IMAGES)
def test_module_doctor_gives_the_right_apply_method(image):
    from eqtune.cli import main

    res = CliRunner().invoke(main, ["module", "doctor", f"emu:c2m-10in?fast=1&settle_ms=0&image={image}", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert (rep["apply"]["trigger"], rep["apply"]["traffic_down"]) == EXPECTED[image]
    assert rep["prbs_ber"] == T.images[image]["diagnostics"]
    text = CliRunner().invoke(main, ["module", "doctor", f"emu:c2m-10in?fast=1&settle_ms=0&image={image}"]).output
    apply_line = next(line for line in text.splitlines() if line.startswith("apply"))
    trigger, down = EXPECTED[image]
    assert trigger in apply_line and ("DATA PATH GOES DOWN" in apply_line) == down
    assert ("cannot      measure BER with its own PRBS checker" in text) != T.images[image]["diagnostics"]


def test_module_doctor_bad_image_is_one_line_exit_2():
    from eqtune.cli import main

    res = CliRunner().invoke(main, ["module", "doctor", "emu:c2m-10in?image=qsfp-nope"])
    assert res.exit_code == 2 and "unknown module image 'qsfp-nope'" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_stepped_only_module_is_tuned_step_by_step_never_refused():
    """Byte 2 = 0x40 on CMIS 5.3 (AutoCommissioning 00b) and 0x42 on CMIS 5.2 (bits 1-0 reserved):
    both are tuned with DPDeinit -> ApplyDPInit -> release, and the codes end up active."""
    for kw in ({"auto_commissioning": 0}, {"cmis_rev": 0x52}):
        emu, mod = make("qsfpdd8-hot", **kw)
        assert mod.apply_method().deinit and mod.apply_method().traffic_down
        emu.writes.clear()
        mod.apply_eq({1: {"tx_eq": 3}})
        p10 = [w.offset for w in emu.writes if w.page == 0x10]
        assert T.DPDeinit.offset in p10 and T.ApplyDPInit.offset in p10 and T.ApplyImmediate.offset not in p10
        assert mod.active_eq(1)["tx_eq"] == 3 and emu.ignored_triggers == 0


def test_immediate_is_refused_where_a_module_would_ignore_it():
    emu, mod = make("qsfp4-regular")
    emu.writes.clear()
    with pytest.raises(ModuleError, match="ignore ApplyImmediate"):
        mod.apply_eq({1: {"tx_eq": 3}}, method="immediate")
    assert emu.writes == []
    # the emulated module itself ignores a raw ApplyImmediate: ConfigStatus and codes stay as they were
    emu.write(127, bytes([0x10]))
    emu.write(T.ApplyImmediate.offset, b"\x01")
    assert emu.ignored_triggers == 1


def test_explicit_control_stages_from_the_active_set():
    emu, mod = make("osfp8-both")
    emu.poke(0x10, 160, b"\xff\xff")  # stale staged CDR bytes (never applied)
    active = emu.peek(0x11, 221, 2)
    mod.apply_eq({1: {"tx_eq": 4}})
    # what was staged (and applied with ExplicitControl=1) is the active set's CDR bytes, not the stale ones
    assert emu.peek(0x10, 160, 2) == active == emu.peek(0x11, 221, 2)


def test_reserved_duration_code_is_none():
    emu, mod = make("osfp8-both")
    emu.poke(1, 144, b"\xee")
    assert mod.capabilities().dp_init_max_s is None


def test_failed_adaptive_read_stops_before_any_write():
    from eqtune.tune.live import tx_adaptive_lanes

    class Broken:
        def tx_adaptive_enabled(self):
            raise ModuleError("emu: NACK")

    with pytest.raises(ModuleError, match="nothing was written"):
        tx_adaptive_lanes(Broken(), [1])


def test_configstatus_is_read_only_after_the_host_wait():
    """A module slow to show ConfigInProgress still shows the previous ConfigSuccess right after the
    trigger; reading at once (no wait) misreads it, the FBOSS 500 ms wait does not."""
    from dataclasses import replace

    emu, mod = make("osfp8-both", status_latency_s=0.3)
    emu.settle_s = 0.8
    mod.apply_eq({1: {"tx_eq": 3}})  # first apply: leaves ConfigSuccess behind
    assert mod.active_eq(1)["tx_eq"] == 3
    mod.timing = replace(mod.timing, after_trigger_s=0.0)
    with pytest.raises(ModuleError, match="read-back"):
        mod.apply_eq({1: {"tx_eq": 5}})  # stale ConfigSuccess taken for this apply
    emu.settle()
    emu2, mod2 = make("osfp8-both", status_latency_s=0.3)
    emu2.settle_s = 0.8
    mod2.apply_eq({1: {"tx_eq": 3}})
    mod2.apply_eq({1: {"tx_eq": 5}})
    assert mod2.active_eq(1)["tx_eq"] == 5


def test_emulator_does_not_import_the_driver_map():
    import subprocess
    import sys

    code = ("import sys, eqtune.emulate.module as e; e.EmulatedModule(settle_s=0); "
            "print('eqtune.drivers.cmis_map' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_counter_layout_is_cross_checked_against_the_module_ber():
    """If a module laid out the 02h/03h counters differently (here: errors and bits swapped), the
    comparison with its own F16 BER (selector 01h, FBOSS) stops the measurement."""
    emu, mod = make("osfp8-both")
    mod.apply_eq({1: {"tx_eq": 0}})  # BER ~1e-3: plenty of errors
    assert mod.module_ber([1], 0.1)[1].ber > 1e-5
    orig = emu._refresh_diag

    def swapped() -> None:
        orig()
        if emu._byte(0x14, 128) == T.diag["errcnt_1_4"]:
            d = emu.peek(0x14, 192, 16)
            emu.poke(0x14, 192, d[8:16] + d[0:8])

    emu._refresh_diag = swapped
    with pytest.raises(ModuleError, match="lays out its counters differently"):
        mod.module_ber([1], 0.1)
