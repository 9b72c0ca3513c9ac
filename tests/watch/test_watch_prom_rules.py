"""The sample alert rules parse with Prometheus' own promtool, and a scrape passes its metrics lint.
Skipped, with the reason, where promtool is absent (Debian: apt-get install prometheus)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from eqtune.watch.observe import ModuleSample
from eqtune.watch.prom import PrometheusExporter

PROMTOOL = shutil.which("promtool")
RULES = Path(__file__).resolve().parents[2] / "docs" / "watch-alerts.yml"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package prometheus)")
def test_alert_rules_pass_promtool():
    r = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package prometheus)")
def test_scrape_passes_promtool_check_metrics():
    from prometheus_client import generate_latest

    exp = PrometheusExporter("127.0.0.1", 0)
    s = ModuleSample("net:h:1", 1.7e9, 31.0, {1: {"prefec_ber": 1e-6, "prefec_ber_min": 5e-7, "esnr_db": 21.0,
                                                 "fec_codeword_errors": 3.0, "errored_frames": 1e-12}})
    exp.update(7, [s], {("net:h:1", 1, "step")}, detector_rows=[("net:h:1", 1, "eqtune_lane_prefec_ber_warning_ratio", 1e-5)],
               module_rows=[("net:h:1", "eqtune_module_hot_celsius", 75.0)],
               identity={"net:h:1": {"vendor": "EQTUNE", "pn": "X", "rev": "A", "sn": "SN1", "firmware": "1.0"}},
               labels={"net:h:1": {"server": "rack3", "port": "osfp1"}})
    text = generate_latest(exp.registry)
    assert b'eqtune_lane_fec_codeword_errors_total{' in text and b'serial="SN1"' in text and b'host="rack3"' in text
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()
