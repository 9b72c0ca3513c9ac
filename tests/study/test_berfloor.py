"""Q-scale BER-floor extrapolation (FC-MJSQ / dual-Dirac Q-scale: opening linear in Q(BER))."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.study.berfloor import ber_key, extrapolate, fit_bathtub, q_of_ber


def test_q_values():
    # Q(1e-12) = 7.034 and Q(1e-15) = 7.941: the standard Gaussian quantiles (e.g. FC-MJSQ tables)
    assert float(q_of_ber(1e-12)) == pytest.approx(7.034, abs=1e-3)
    assert float(q_of_ber(1e-15)) == pytest.approx(7.941, abs=1e-3)
    assert float(q_of_ber(1e-6)) == pytest.approx(4.753, abs=1e-3)


def test_gaussian_bathtub_is_extrapolated_exactly():
    sigma, eh0 = 1.7, 40.0
    ber = np.logspace(-3, -8, 11)
    eh = eh0 - 2 * sigma * q_of_ber(ber)
    out = extrapolate(ber, eh, [1e-12, 1e-15])
    for b in (1e-12, 1e-15):
        want = eh0 - 2 * sigma * float(q_of_ber(b))
        assert out[ber_key(b)]["extrapolated"] == pytest.approx(want, rel=1e-9)
        assert out[ber_key(b)]["r2"] == pytest.approx(1.0)


def test_target_inside_range_is_interpolated_and_closed_eye_is_none():
    ber = np.logspace(-3, -16, 14)
    eh = 30 - 2 * q_of_ber(ber)
    assert extrapolate(ber, eh, [1e-12])["1e-12"]["method"] == "interpolated"
    closed = extrapolate(np.logspace(-3, -8, 6), -np.ones(6), [1e-15])
    assert closed["1e-15"]["extrapolated"] is None
    assert fit_bathtub([1e-4, 1e-5], [3.0, 2.0]) is None
