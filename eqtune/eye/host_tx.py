"""The host SerDes TX FFE that a module-side view of a link assumes (the module cannot see it).

In the ``module_rx`` direction (host TX FFE -> channel -> module Tx input, knob ``tx_eq``) the host's
TX taps are set by the host vendor once, at board bring-up; neither the module emulator nor a live
session can read them. Both assume the typical preset that opens the module-input eye best.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from eqtune.serdes.knobs import TX_C1, TX_CM1, TX_EQ

if TYPE_CHECKING:
    from eqtune.eye.engine import EyeEngine

#: A few typical host TX FFE presets (c(-1), c(1) as fractions of the swing; c0 = 1 - sum|others|).
HOST_TX_PRESETS = tuple({TX_CM1: cm1, TX_C1: c1} for cm1 in (-0.1, -0.16) for c1 in (0.0, -0.1, -0.2))


def pick_host_tx(engine: EyeEngine, tx_eq_codes: Iterable[int]) -> dict[str, float]:
    """The host SerDes TX FFE preset (of a few typical ones) that opens the module-input eye best at
    the best ``tx_eq`` code: the host vendor tuned its TX once at board bring-up. ``engine``: an
    :class:`~eqtune.eye.EyeEngine` in the ``module_rx`` direction."""
    tx_eq_codes = list(tx_eq_codes)
    points = [{**p, TX_EQ: float(c)} for p in HOST_TX_PRESETS for c in tx_eq_codes]
    res = engine.evaluate_batch(points)
    eh = np.asarray(res.eye_height_min_mv, dtype=float).reshape(len(HOST_TX_PRESETS), len(tx_eq_codes))
    return dict(HOST_TX_PRESETS[int(np.argmax(np.nanmax(eh, axis=1)))])
