"""An EyeResult does not keep its EyeEngine (and the engine's prepared arrays) alive.

The result keeps a small immutable per-point context (``eqtune.eye.detail.PointDetail``); its
``bathtubs()`` / ``contour()`` must give the same numbers as the engine's own methods, also after the
engine is gone.
"""

from __future__ import annotations

import gc
import pickle
import weakref

import numpy as np
import pytest

from eqtune.channel import load_channel
from eqtune.errors import InputError
from eqtune.eye import EyeEngine
from eqtune.eye.detail import PointDetail


@pytest.mark.parametrize("channel, direction, point", [
    ("c2m-10in", "host_rx", {"rx_pre": 1.0, "rx_post": 2.0}),  # CTLE adapts, DFE
    ("c2m-10in-xtalk", "serdes", {}),  # COM mode: per-cursor jitter, crosstalk, MM phase
])
def test_engine_is_collected_while_the_result_still_draws_its_bathtubs(channel, direction, point):
    ch = load_channel(channel)
    eng = EyeEngine(ch, direction=direction, samples_per_ui=16)
    res = eng.evaluate(point)
    # the engine's own answer for the same point, computed while it is alive
    want_bt = eng.bathtubs(res.eq)
    want_co = eng.contour(point)
    ref = weakref.ref(eng)
    stack_ref = weakref.ref(eng._stack)  # the big prepared array (C x K x M x n_out)
    del eng
    gc.collect()
    assert ref() is None, "the EyeResult (or something it holds) still refers to its EyeEngine"
    assert stack_ref() is None, "the engine's cursor stack outlived the engine"
    # nothing in the result's context is a view into the engine's arrays
    d = res._detail
    assert isinstance(d, PointDetail)
    for v in vars(d).values():
        if isinstance(v, np.ndarray):
            assert v.base is None or v.base.nbytes < 1_000_000
    got_bt, got_co = res.bathtubs(), res.contour()
    assert got_bt == want_bt  # exact: the same arithmetic on the same numbers
    assert got_co == want_co
    # and they are the result's eye: the vertical bathtub opens at ber_target where eye_height_mv says
    # (linear interpolation on the 201-point offset grid), the contour's sampling phase is the result's
    assert got_co["sample_phase_ui"] == res.sample_phase_ui
    offs = np.asarray(got_bt["vertical_offset_mv"])
    for eye, vb in enumerate(got_bt["vertical"]):
        ber = np.asarray(vb["ber"])
        open_ = offs[ber <= res.ber_target]
        if res.eye_height_mv[eye] > 2 * (offs[1] - offs[0]):
            assert open_.max() - open_.min() == pytest.approx(res.eye_height_mv[eye], abs=2 * (offs[1] - offs[0]))


def test_result_context_is_small_and_stays_out_of_pickles():
    eng = EyeEngine(load_channel("c2m-10in"), direction="host_rx", samples_per_ui=16)
    res = eng.evaluate({})
    d = res._detail
    assert d is not None
    size = sum(v.nbytes for v in vars(d).values() if isinstance(v, np.ndarray))
    prepared = sum(v.nbytes for v in vars(eng).values() if isinstance(v, np.ndarray))
    assert size < prepared / 20  # the point's (M x n_out) matrix, not the (C x K x M x n_out) stack
    back = pickle.loads(pickle.dumps(res))  # noqa: S301 - our own bytes, just produced
    assert back == res and back._detail is None
    with pytest.raises(InputError, match="EyeEngine.bathtubs"):
        back.bathtubs()


def test_result_bathtubs_are_at_its_own_target_ber():
    """evaluate(point, ber=...) -> the result's bathtubs and contour are drawn at that BER (they were drawn
    at the engine's BER before results dropped their engine), and equal the engine's at that BER."""
    eng = EyeEngine(load_channel("c2m-10in"), direction="host_rx", samples_per_ui=16, ber=1e-6)
    res = eng.evaluate({}, ber=1e-9)
    co = res.contour()
    assert co["ber_target"] == 1e-9
    assert co == eng.contour(res.eq, ber=1e-9)
    assert co != eng.contour(res.eq)  # 1e-6: a wider eye
