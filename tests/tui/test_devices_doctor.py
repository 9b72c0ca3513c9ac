"""The Devices step shows `module doctor`'s verdict: which Apply trigger eqtune will use and whether
traffic goes down ("advertised capabilities (from module doctor if it exists)")."""

from __future__ import annotations

import pytest

from eqtune.drivers.cmis import open_module
from eqtune.drivers.cmis_doctor import diagnose
from eqtune.tui.steps.devices import capability_rows


@pytest.mark.parametrize("image, apply_text", [
    ("qsfp4-regular", "TRAFFIC DOWN, ApplyDPInit + DPDeinit"),
    ("qsfpdd8-hot", "traffic up, ApplyImmediate"),
    ("osfp8-both", "traffic up, ApplyImmediate"),
])
def test_apply_row_follows_the_modules_reconfiguration_support(image, apply_text):
    mod = open_module(f"emu:c2m-10in?image={image}&fast=1&name=tui-doctor-{image}")
    try:
        rows = dict(capability_rows(mod.capabilities().to_dict(), diagnose(mod).to_dict()))
    finally:
        mod.close()
    assert rows["Apply"] == apply_text


def test_cannot_rows_list_what_the_module_lacks():
    mod = open_module("emu:c2m-10in?image=qsfp4-regular&fast=1&name=tui-doctor-cannot")
    try:
        report = diagnose(mod).to_dict()
        rows = capability_rows(mod.capabilities().to_dict(), report)
    finally:
        mod.close()
    cannot = [v for k, v in rows if k == "Cannot"]
    assert cannot == report["cannot"] and any("VDM" in c for c in cannot)  # this image has no VDM pages


def test_without_a_doctor_report_the_advertisement_is_shown_as_before():
    rows = dict(capability_rows({"lanes": 8, "apply_immediate": True}))
    assert rows["Apply"] == "immediate" and "Cannot" not in rows
