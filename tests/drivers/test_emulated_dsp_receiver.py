"""The emulated 1.6T module's Tx-input receiver: CTLE, then an MMSE-adapted 15-tap FFE + 1-tap DFE (the 802.3dj
reference receiver's structure), against the CTLE-only receiver of the 100G images, same channel and run."""

from __future__ import annotations

import pytest

from eqtune.emulate.link import EmulatedLink
from eqtune.emulate.module import EmulatedModule


def test_the_200g_image_runs_the_dsp_receiver():
    mod = EmulatedModule(channel="c2m-224g-6in", image="osfp8-1600g", seed=1, settle_s=0.0)
    assert mod.link.receiver == "mmse-ffe"
    assert EmulatedModule(channel="c2m-10in", seed=1, settle_s=0.0).link.receiver == "ctle"


def test_mmse_ffe_receiver_reaches_a_ber_the_ctle_alone_cannot():
    dsp = EmulatedLink("c2m-224g-6in", lanes=1, seed=1, noise=False, receiver="mmse-ffe")
    ctle = EmulatedLink("c2m-224g-6in", lanes=1, seed=1, noise=False, receiver="ctle")
    assert dsp.quality_source == ctle.quality_source == "eye-engine"
    for code in (0, 6, 10):
        q_dsp = dsp.quality(1, "module_rx", {"tx_eq": code})
        q_ctle = ctle.quality(1, "module_rx", {"tx_eq": code})
        # the FFE does what the CTLE code cannot: every code is within a factor 2 of the best, and far
        # below the CTLE-only receiver's best (1e-2 on this channel)
        assert q_dsp["ber_estimate"] < 1e-3 < 1e-2 < q_ctle["ber_estimate"]
        assert q_dsp["receiver"] == "mmse-ffe" and len(q_dsp["ffe_taps"]) == 15
    assert dsp.ber(1, "module_rx") == pytest.approx(dsp.quality(1, "module_rx")["ber_estimate"])


def test_unknown_receiver_is_refused():
    with pytest.raises(ValueError, match="module receiver 'lms'"):
        EmulatedLink("c2m-224g-6in", lanes=1, receiver="lms")
