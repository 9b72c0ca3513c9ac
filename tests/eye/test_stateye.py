"""The interference distribution (COM 93A.1.7 by characteristic functions) against brute force."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from eqtune.eye.stateye import InterferencePdf, grouped_pdfs, split_exact, symbol_levels


def _brute_tail(q, cursors, sigma, add, levels):
    """P(Y > q) by enumerating every symbol combination (independent of the FFT method)."""
    isi = np.array(list(itertools.product(levels, repeat=len(cursors)))) @ cursors
    return 0.5 * float(np.mean(norm.sf((q - isi - add) / sigma) + norm.sf((q - isi + add) / sigma)))


@pytest.mark.parametrize("rlm", [1.0, 0.95])
@pytest.mark.parametrize("ber", [1e-3, 1e-6, 1e-9, 1e-12])
def test_quantile_matches_enumeration(rlm, ber):
    lv = symbol_levels(4, rlm)
    cursors = np.array([0.012, -0.006, 0.004, 0.0025, -0.0015])
    sigma, add = 0.0011, 0.0008
    pdf = InterferencePdf(cursors[None, :], np.array([sigma]), add, lv, h0_v=0.06)
    q = float(pdf.quantile(ber)[0])
    q_ref = brentq(lambda x: _brute_tail(x, cursors, sigma, add, lv) - ber, 0.0, 0.1, xtol=1e-9)
    assert q == pytest.approx(q_ref, rel=2e-3)
    # and the tail at the reference quantile is the target
    assert float(pdf.tail_at(np.array([q_ref]))[0]) == pytest.approx(ber, rel=0.03)


def test_pam6_and_nrz_levels():
    assert symbol_levels(2).tolist() == [-1.0, 1.0]
    np.testing.assert_allclose(symbol_levels(6), [-1, -0.6, -0.2, 0.2, 0.6, 1])
    np.testing.assert_allclose(symbol_levels(4, 0.9), [-1, -0.3, 0.3, 1])


def test_split_exact_keeps_largest():
    c = np.array([[0.1, -0.5, 0.01, 0.3, -0.02]])
    big, rest2 = split_exact(c, 2)
    assert sorted(np.abs(big[0]).tolist()) == [0.3, 0.5]
    assert rest2[0] == pytest.approx(0.1**2 + 0.01**2 + 0.02**2)


def test_grouped_rows_do_not_depend_on_their_batch():
    lv = symbol_levels(4)
    rows = np.array([[0.01, 0.002], [0.2, 0.05]])
    sig = np.array([0.001, 0.0001])
    q_batch = np.empty(2)
    for idx, p in grouped_pdfs(rows, sig, 0.0, lv, 0.1):
        q_batch[idx] = p.quantile(1e-6)
    for i in range(2):
        (_, p1), = grouped_pdfs(rows[i:i + 1], sig[i:i + 1], 0.0, lv, 0.1)
        assert float(p1.quantile(1e-6)[0]) == q_batch[i]


def test_floating_dfe_taps_cancel_a_reflection():
    """A reflection 22 UI after the main pulse, a 4 % copy of it (every cursor of the echo is below the
    floating taps' limit of 0.05 h0 and it lies within 3 groups x 3 taps): the KR receiver's floating taps
    must recover the echo-free eye of the same receiver to within 0.6 mV (what is left is the echo's tail
    beyond the 9 taps), while without them the echo costs > 5 mV."""
    from eqtune.channel.model import Channel
    from eqtune.eye import EyeEngine
    from eqtune.serdes import load_profile

    f = np.arange(0, 60e9 + 1, 10e6)
    fn = 26.5625e9
    line = 10 ** (-(8.0 * (0.3 * np.sqrt(f / fn) + 0.7 * f / fn)) / 20) * np.exp(-2j * np.pi * f * 1e-9)
    echo = 0.04 * line * np.exp(-2j * np.pi * f * 22 / 53.125e9)
    ch, clean = Channel("reflective", f, line + echo), Channel("clean", f, line)
    kr = load_profile("ieee-3ck-kr")
    no_float = replace(kr, rx=replace(kr.rx, dfe=replace(kr.rx.dfe, float_groups=0)))
    pt = {"ctle_gdc": -3.0, "ctle_gdc2": 0.0, "tx_cm1": -0.14}  # an open eye (16.5 mV) with the sheet's T_r 7.5 ps
    with_f = EyeEngine(ch, kr, direction="serdes").evaluate(pt).eye_height_min_mv
    ref = EyeEngine(clean, kr, direction="serdes").evaluate(pt).eye_height_min_mv
    without = EyeEngine(ch, no_float, direction="serdes").evaluate(pt).eye_height_min_mv
    assert ref > 0
    assert abs(with_f - ref) < 0.6
    assert ref - without > 5.0
