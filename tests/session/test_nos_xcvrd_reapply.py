"""A profile exported to optics_si_settings.json survives a module reset under SONiC's own xcvrd.

On every emulated image and every real module image the emulator carries: eqtune exports per-lane codes; SONiC's unmodified CmisManagerTask (through the
host harness of tests/hosts) reads the file with SONiC's parser and applies it: every lane holds the
profile's codes. The module is reset (control sets back to the defaults): the codes are gone. xcvrd
initialises the module again from the same file: every lane holds the profile's codes again.
Skipped, with the reason, without the SONiC trees or the host harness (tests/hosts/sonic_xcvrd_harness.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HARNESS = HERE.parent / "hosts" / "sonic_xcvrd_harness.py"
REPO = HERE.parents[1]


@pytest.fixture(scope="module")
def report() -> dict:
    if not HARNESS.is_file():
        pytest.skip(f"needs the SONiC xcvrd host harness {HARNESS.relative_to(REPO)} (SONiC's CmisManagerTask "
                    "over an emulated module), which this checkout does not have")
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, str(HERE / "nos_reapply_check.py")], capture_output=True, text=True,
                         env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    if "skipped" in doc:
        pytest.skip(doc["skipped"])
    print(json.dumps(doc, indent=1))
    return doc


def test_export_survives_a_reset_under_xcvrd_on_every_module_image(report):
    """Where xcvrd initialises the module (every emulated image), it applies eqtune's file on every
    host lane, the reset takes the codes away, and xcvrd's next initialisation puts them back. Where
    the module comes up already running the application with every lane DataPathActivated and
    ConfigSuccess, SONiC's CmisManagerTask skips the initialisation and with it the optics SI staging
    (cmis_manager_task.py is_cmis_application_update_required, lines 540-591, and lines 1006-1030):
    the module keeps its own codes, which is what this test then asserts (and `profile verify` shows)."""
    from eqtune.emulate import cmis_table
    from tests.session.nos_reapply_check import module_names

    assert [r["image"] for r in report["results"]] == module_names(cmis_table)
    for r in report["results"]:
        for run in ("first", "second"):
            assert r[run]["state"] == "READY" and not r[run]["errors"], (r["image"], r[run])
        if r["first"]["skipped_init"]:
            assert r["second"]["skipped_init"] and r["first"]["active"] == r["before"], r["image"]
            continue
        assert r["first"]["active"] == r["want"], r["image"]
        assert r["after_reset"] != r["want"], r["image"]  # the reset took the codes away
        assert not r["second"]["skipped_init"] and r["second"]["active"] == r["want"], r["image"]
    applied = [r["image"] for r in report["results"] if not r["first"]["skipped_init"]]
    assert set(cmis_table.image_names()) <= set(applied)  # every emulated image is initialised by xcvrd
