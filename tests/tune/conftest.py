"""Fixtures of the tuning tests: real eye-engine sources and their exhaustive grids (computed once)."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.tune import SimulationSource, TableSource
from eqtune.tune.space import IndexedSpace


def grid_table(src: SimulationSource) -> tuple[TableSource, float]:
    """The exhaustive grid of ``src`` (real engine) as a replayable table, and its optimum."""
    isp = IndexedSpace(src.space)
    grid = isp.values(isp.grid)
    margins = np.array([m.margin for m in src.measure_batch([src.space.to_point(r) for r in grid])])
    return TableSource(src.space, grid, margins, start=src.default_point(), units=src.units), float(margins.max())


@pytest.fixture(scope="session")
def src_10in() -> SimulationSource:
    """c2m-10in, module Rx-output codes (host_rx, CTLE adapts): 8 x 8 x 4 = 256 points."""
    return SimulationSource("c2m-10in", ["rx_pre", "rx_post", "rx_amp"])


@pytest.fixture(scope="session")
def table_10in(src_10in) -> tuple[TableSource, float]:
    return grid_table(src_10in)


@pytest.fixture(scope="session")
def src_tx() -> SimulationSource:
    """c2m-4in, host TX FFE taps + module Tx-input EQ (module_rx, TX tap-sum constraint): 16 x 11 x 11."""
    return SimulationSource("c2m-4in", ["tx_cm1", "tx_c1", "tx_eq"])


@pytest.fixture(scope="session")
def table_tx(src_tx) -> tuple[TableSource, float]:
    return grid_table(src_tx)


@pytest.fixture(scope="session")
def make_table():
    """``make_table(source) -> (TableSource, optimum)``."""
    return grid_table


@pytest.fixture(scope="session")
def table_xtalk() -> tuple[TableSource, float]:
    """c2m-10in-xtalk (3 aggressors), module Rx-output codes + host CTLE DC gain: 8 x 8 x 4 x 17 points."""
    return grid_table(SimulationSource("c2m-10in-xtalk", ["rx_pre", "rx_post", "rx_amp", "ctle_gdc"]))
