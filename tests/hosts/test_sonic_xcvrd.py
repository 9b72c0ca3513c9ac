"""SONiC's unmodified CmisManagerTask brings the port up on every emulated image.

Runs tests/hosts/sonic_xcvrd_harness.py in a child process (it stubs swsscommon / sonic_py_common
in ``sys.modules``, which must not leak into this test process) and checks what xcvrd reached: CMIS
READY, every Tx output enabled, every data path DataPathActivated, the SI codes of the
``optics_si_settings.json`` it was given active in the Active Control Set (page 11h); with an
amplitude code the module does not support, ConfigRejectedInvalidSI and xcvrd's own FAILED.
Skipped, with the reason, where the SONiC trees are absent (EQTUNE_SONIC_ROOT).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sonic_xcvrd_harness as H  # noqa: E402

REASON = H.missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def report() -> dict:
    env = {**os.environ, "PYTHONPATH": str(H.ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, str(HERE / "sonic_xcvrd_harness.py"), "--json"], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_image_is_checked(report):
    from eqtune.emulate.cmis_table import dump_names, image_names

    assert [r["image"] for r in report["results"]] == image_names() + dump_names()


@pytest.mark.parametrize("image", __import__("eqtune.emulate.cmis_table", fromlist=["x"]).dump_names())
def test_xcvrd_brings_up_the_real_module_images(report, image):
    """The FBOSS page dumps: READY with Tx on; where xcvrd re-initialized the data path (AP_CONFIGURED)
    the SI codes are active; where it found the application already in place it skips SI, as its
    own code says ('no CMIS application update required')."""
    r = next(x for x in report["results"] if x["image"] == image)
    assert r["state"] == "READY" and r["tx_disabled"] == 0 and not r["errors"], r["history"]
    assert set(r["dp_states"]) == {"DataPathActivated"}
    if "AP_CONFIGURED" in r["history"]:  # the port's first lane; the XDR4s advertise no fixed Tx EQ,
        for knob in ("rx_pre", "rx_post", "rx_amp"):  # so xcvrd stages only the Rx SI there
            assert r["active_si"][knob]["1"] == report["good"][knob], knob


@pytest.mark.parametrize("image", __import__("eqtune.emulate.cmis_table", fromlist=["x"]).image_names())
def test_xcvrd_reaches_ready_with_tx_on_and_the_staged_si_active(report, image):
    r = next(x for x in report["results"] if x["image"] == image)
    assert r["state"] == "READY", r["history"]
    assert r["history"][-4:] == ["DP_INIT", "DP_TXON", "DP_ACTIVATION", "READY"]  # the full step-by-step path
    assert r["tx_disabled"] == 0 and set(r["dp_states"]) == {"DataPathActivated"}
    assert set(r["config_status"]) == {"ConfigSuccess"} and not r["errors"]
    for knob, code in report["good"].items():
        assert set(r["active_si"][knob].values()) == {code}, (knob, r["active_si"][knob])


@pytest.mark.parametrize("image", __import__("eqtune.emulate.cmis_table", fromlist=["x"]).image_names())
def test_a_bad_code_ends_in_config_rejected_with_xcvrds_own_error(report, image):
    r = next(x for x in report["results"] if x["image"] == image)
    assert r["bad_state"] == "FAILED"
    assert "ConfigRejectedInvalidSI" in r["bad_config_status"]
    assert any("timeout for 'ConfigSuccess'" in m and "ConfigRejectedInvalidSI" in m for m in r["bad_log"])
    assert any(m.endswith(": FAILED") for m in r["bad_log"])
