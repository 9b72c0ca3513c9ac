"""The benchmark grid cache (benchmarks/bench_tune.py) is keyed on what a channel is, not where it was
read from ("grid cache keyed on channel content, profile and engine version")."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_tune():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_tune as bt
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return bt


def _key(bt, channel: Path, knobs: list[str]) -> str:
    from eqtune.tune import SimulationSource

    src = SimulationSource(str(channel), knobs, direction="serdes")
    return bt.grid_key(src, knobs, "serdes")


def test_same_channel_from_two_checkouts_has_one_key(bench_tune, tmp_path):
    knobs = ["tx_cm1", "tx_c1", "ctle_gdc"]
    for d in ("a", "b"):
        shutil.copytree(ROOT / "channels", tmp_path / d / "channels")
    ka = _key(bench_tune, tmp_path / "a" / "channels" / "c2m-10in.toml", knobs)
    kb = _key(bench_tune, tmp_path / "b" / "channels" / "c2m-10in.toml", knobs)
    assert ka == kb, "the key must not depend on the folder the channel and its SerDes profile were read from"
    # ... but it does depend on the content: a longer trace, another knob set, another profile range
    toml = tmp_path / "b" / "channels" / "c2m-10in.toml"
    text = toml.read_text()
    assert "10 in" in text or "length_in = 10" in text
    toml.write_text(text.replace("length_in = 10", "length_in = 11", 1))
    assert _key(bench_tune, toml, knobs) != ka
    assert _key(bench_tune, tmp_path / "a" / "channels" / "c2m-10in.toml", knobs[:2]) != ka
    other = tmp_path / "a" / "channels" / "c2m-10in-sr.toml"
    other.write_text(text.replace('serdes_profile = "host-lr-112g"', 'serdes_profile = "host-sr-112g"', 1))
    assert 'serdes_profile = "host-lr-112g"' in text
    assert _key(bench_tune, other, knobs) != ka  # another SerDes profile
