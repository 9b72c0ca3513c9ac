"""Shared fixtures: the ../shared reference data (skipped with a reason when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]


def _find_shared() -> Path | None:
    env = os.environ.get("EQTUNE_SHARED")
    candidates = [Path(env)] if env else []
    candidates += [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    for c in candidates:
        if (c / "channels-ieee").is_dir():
            return c
    return None


SHARED = _find_shared()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (IEEE channels, MATLAB COM figures); skips the test when it is not there."""
    if SHARED is None:
        pytest.skip("../shared reference data not found beside the checkout (set EQTUNE_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def gore_c2c_file(shared_dir: Path) -> Path:
    p = shared_dir / "channels-ieee" / "gore_3ck_02_0519_C2C_12dB" / "C2C_PCB_SYSVIA_12dB_thru.s4p"
    if not p.exists():
        pytest.skip(f"{p} not found")
    return p


@pytest.fixture(autouse=True)
def _fresh_emulated_modules():
    """Every test starts from power-up emulated modules: the ``emu:`` registry is process-wide, and a
    module one test left tuned would otherwise be the next test's starting point (an order dependence)."""
    from eqtune.emulate.registry import reset_emulators

    reset_emulators()
    yield
