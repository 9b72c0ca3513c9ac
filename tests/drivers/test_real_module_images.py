"""Real module images (FBOSS FakeTransceiverImpl.cpp page dumps, bytes only, in
eqtune/emulate/images): `module doctor` reads identity, lanes, EQ ranges, apply method and PRBS/VDM
support from each as FBOSS reads them. Expected values are FBOSS's own test expectations
(facebook/fboss@14ec47e fboss/qsfp_service/module/tests/CmisTest.cpp, lines cited) or, where CmisTest
asserts nothing, the dump bytes as FakeTransceiverImpl.cpp comments describe them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from eqtune.emulate.cmis_table import dump_names, load_dump

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hosts"))
import fboss_images  # noqa: E402

EXPECT = {
    # CmisTest.cpp l.231-236 (PN, QSFP_DD); dump lower byte 1 = 0x40 (CMIS 4.0), byte 2 = 0x00
    "fboss-arista-qdd-400g-xdr4": {"pn": "QDD-400G-XDR4", "vendor": "Arista Networks", "form_factor": "QSFP-DD",
                                   "cmis_rev": "4.0", "lanes": 8, "trigger": "ApplyImmediate", "vdm": False},
    # CmisTest.cpp l.238-243 (PN, OSFP), l.2868-2883 cmis2x400GXdr4TransceiverInfoTest numHostLanes 8;
    # FakeTransceiverImpl.cpp l.3506-3509: no VDM (page 01h byte 142 bit 6 clear)
    "fboss-arista-osfp-2x400g-xdr4": {"pn": "FB-P800G-2XDR4-1", "vendor": "Arista Networks", "form_factor": "OSFP",
                                      "cmis_rev": "5.0", "lanes": 8, "trigger": "ApplyImmediate", "vdm": False},
    # CmisTest.cpp l.245-250 (PN), l.518-523 getCmisRevision {5, 3}, l.1557-1571 numHostLanes 8,
    # verifyVendorName("METAZR"); byte 2 = 0x4a: SteppedConfigOnly 1, AutoCommissioning 10b (hot)
    "fboss-800g-zr": {"pn": "DP08SFP8-ZRB-29B", "vendor": "METAZR", "form_factor": "OSFP", "cmis_rev": "5.3",
                      "lanes": 8, "trigger": "ApplyImmediate", "vdm": True},
}


def test_at_least_three_images_each_with_its_source():
    assert set(EXPECT) <= set(dump_names()) and len(dump_names()) >= 3
    for name in dump_names():
        d = load_dump(name)
        assert d["source"]["repo"] == "facebook/fboss" and len(d["source"]["commit"]) == 40
        assert d["source"]["path"].endswith("FakeTransceiverImpl.cpp") and all(d["lines"].values())


@pytest.mark.skipif(not (fboss_images.fboss_root() / fboss_images.FAKE).is_file(),
                    reason="FBOSS tree not found (set EQTUNE_FBOSS_ROOT)")
def test_committed_bytes_are_fbosss_bytes():
    fresh = fboss_images.extract()
    for name in fboss_images.IMAGES:
        d = load_dump(name)
        if d["source"]["commit"] != fresh[name]["source"]["commit"]:
            pytest.skip(f"FBOSS checkout is at another commit than {name} was taken from")
        for page, entry in fresh[name]["pages"].items():
            assert d["pages"][page].hex() == entry["hex"] and d["lines"][page] == entry["line"], (name, page)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_doctor_reads_each_image_as_fboss_does(name):
    from eqtune.cli import main

    res = CliRunner().invoke(main, ["module", "doctor", f"emu:c2m-10in?fast=1&image={name}&name=real-{name}", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    exp = EXPECT[name]
    ident, caps = rep["identity"], rep["capabilities"]
    assert (ident["pn"], ident["vendor"], ident["form_factor"], ident["cmis_rev"]) == (
        exp["pn"], exp["vendor"], exp["form_factor"], exp["cmis_rev"])
    assert caps["lanes"] == exp["lanes"] and rep["apply"]["trigger"] == exp["trigger"]
    assert rep["vdm"] == exp["vdm"] and rep["prbs_ber"] is True
    p1 = load_dump(name)["pages"]["01"]
    # EQ ranges as the dump's page 01h advertises them (bytes 153-154, 161-162)
    assert caps["rx_post_max"] == (p1[154 - 128] >> 4 if p1[162 - 128] >> 4 & 1 else None)
    assert caps["rx_pre_max"] == (p1[154 - 128] & 0xF if p1[162 - 128] >> 3 & 1 else None)
    assert caps["tx_eq_max"] == (p1[153 - 128] & 0xF if p1[161 - 128] >> 2 & 1 else None)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_the_emulator_started_from_a_real_image_applies_eq(name):
    from eqtune.drivers.cmis import open_module

    with open_module(f"emu:c2m-10in?fast=1&settle_ms=0&image={name}&name=real-apply-{name}") as mod:
        before = mod.active_eq(1)
        post = (before["rx_post"] + 1) % (mod.capabilities().rx_post_max + 1)
        mod.apply_eq({1: {"rx_post": post}})
        assert mod.active_eq(1)["rx_post"] == post
        assert mod.identity().pn == EXPECT[name]["pn"]
