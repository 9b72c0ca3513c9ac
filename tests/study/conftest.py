"""Helpers for the study tests: tiny specs written to tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

SYNTH_SPEC = """
profiles = ["host-lr-112g", "host-sr-112g"]

[study]
name = "synth"
seed = 7

[[channels]]
base = "c2m-10in"
sweep.length_in = [3, 5, 7, 9, 11, 13]
sweep.material = ["megtron6", "fr4"]

[corners]
temperature_c = [25, 85]

[[pass]]
eye_height_min_mv = 15
vec_max_db = 12

[tune]
knobs = ["rx_pre", "rx_post", "rx_amp"]
"""


@pytest.fixture
def synth_spec_path(tmp_path: Path) -> Path:
    """A 24-combination study (12 channel variants x 2 profiles, 2 corners each)."""
    p = tmp_path / "synth.toml"
    p.write_text(SYNTH_SPEC, encoding="utf-8")
    return p
