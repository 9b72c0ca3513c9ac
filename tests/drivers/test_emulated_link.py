"""EmulatedLink: per-lane quality, Poisson counts, directions, caching; BerCount bounds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from eqtune.drivers.measurement import BerCount, bits_for_confidence, dwell_for, poisson_upper
from eqtune.emulate.link import EmulatedLink, channel_loss_guess_db, surrogate_quality


def link(**kw) -> EmulatedLink:
    kw.setdefault("quality", surrogate_quality(16.0))
    return EmulatedLink("c2m-10in", seed=kw.pop("seed", 1), **kw)


def test_codes_api():
    lk = link()
    assert lk.active_codes(1) == {"rx_pre": 1, "rx_post": 2, "rx_amp": 2, "tx_eq": 3}
    lk.set_codes(1, {"rx_post": 5})
    assert lk.active_codes(1)["rx_post"] == 5 and lk.active_codes(2)["rx_post"] == 2
    with pytest.raises(ValueError, match="unknown knob"):
        lk.set_codes(1, {"ctle": 1})
    with pytest.raises(ValueError, match="lane 9"):
        lk.active_codes(9)


def test_lanes_differ_but_reproducibly():
    a = EmulatedLink("c2m-10in", seed=5)
    b = EmulatedLink("c2m-10in", seed=5)
    assert np.allclose(a.lane_spread_db, b.lane_spread_db)
    if a.quality_source.startswith("surrogate"):
        bers = [a.ber(ln) for ln in range(1, 9)]
        assert len({round(math.log10(x), 6) for x in bers}) == 8


def test_loopback_is_sum_of_directions():
    lk = link()
    a, b = lk.ber(1, "module_rx"), lk.ber(1, "host_rx")
    assert lk.ber(1) == pytest.approx(a + b - a * b)
    assert lk.ber(1) == pytest.approx(a + b, rel=1e-3)


def test_quality_cached_per_code_tuple():
    calls = []

    def q(direction, codes, lane):
        calls.append((direction, tuple(sorted(codes.items())), lane))
        return {"ber_estimate": 1e-6, "eye_height_min_mv": 20.0}

    lk = EmulatedLink("c2m-10in", quality=q)
    for _ in range(3):
        lk.ber(1)
    assert len(calls) == 2  # one per direction
    lk.set_codes(1, {"rx_amp": 3})
    lk.ber(1)
    assert len(calls) == 3  # only host_rx re-evaluated
    assert {c[0] for c in calls} == {"module_rx", "host_rx"}
    assert all("tx_eq" not in dict(c[1]) for c in calls if c[0] == "host_rx")


def test_count_errors_poisson():
    lk = link(seed=3)
    lk.set_codes(2, {"tx_eq": 0})
    true = lk.ber(2)
    counts = [lk.count_errors(2, 1e-3).errors for _ in range(200)]
    bits = lk.count_errors(2, 1e-3).bits
    mean = true * bits
    assert bits == round(lk.bit_rate_bps * 1e-3)
    assert np.mean(counts) == pytest.approx(mean, rel=0.05)
    assert np.var(counts) == pytest.approx(mean, rel=0.35)  # Poisson: variance = mean
    exact = link(noise=False).count_errors(2, 1e-3, rate_gbd=26.5625)
    assert exact.bits == round(26.5625e9 * 2 * 1e-3)


def test_count_errors_paths():
    lk = link(noise=False)
    tot = lk.count_errors(1, 1.0).errors
    part = lk.count_errors(1, 1.0, path="module_rx").errors + lk.count_errors(1, 1.0, path="host_rx").errors
    assert tot == pytest.approx(part, rel=1e-3, abs=2)


def test_eye_metrics():
    lk = link(noise=False)
    e = lk.eye(1)
    assert set(e) >= {"eye_height_mv", "eye_height_min_mv", "eye_width_ui", "ber_estimate", "tdecq_db"}
    assert len(e["eye_height_mv"]) == 3 and e["eye_height_min_mv"] == min(e["eye_height_mv"])
    lk.set_codes(1, {"rx_post": 5})
    assert lk.eye(1)["eye_height_min_mv"] > e["eye_height_min_mv"]


def test_surrogate_prefers_loss_matched_codes():
    q = surrogate_quality(16.0)
    best = min(itertools.product(range(8), range(8)), key=lambda c: q("host_rx", {"rx_pre": c[0], "rx_post": c[1], "rx_amp": 2}, 1)["ber_estimate"])
    assert 3 <= best[1] <= 7
    assert channel_loss_guess_db("c2m-10in") == pytest.approx(16.0)


# ------------------------------------------------------------------ BerCount
def test_zero_errors_upper_bound_is_three_over_bits():
    c = BerCount(bits=10**12, errors=0, dwell_s=10.0)
    assert c.ber == 0.0
    assert c.ber_upper95 == pytest.approx(2.9957e-12, rel=1e-4)


def test_upper_bound_garwood_values():
    # chi2.ppf(0.95, 2(k+1))/2 tabulated: k=1 -> 4.744, k=10 -> 17.0 (Garwood 1936)
    assert poisson_upper(1) == pytest.approx(4.7439, rel=1e-4)
    assert poisson_upper(10) == pytest.approx(16.9622, rel=1e-4)
    c = BerCount(10**9, 10)
    assert c.ber == 1e-8 and c.ber_upper95 > c.ber


def test_dwell_helpers_and_dict():
    assert bits_for_confidence(1e-12) == pytest.approx(2.9957e12, rel=1e-4)
    assert dwell_for(1e-12, 106.25e9) == pytest.approx(28.19, rel=1e-3)
    d = BerCount(0, 0).to_dict()
    assert d["ber"] is None and d["ber_upper95"] is None
    assert (BerCount(10, 1, 1.0) + BerCount(30, 1, 2.0)) == BerCount(40, 2, 3.0)
    with pytest.raises(ValueError):
        BerCount(-1, 0)


# ------------------------------------------------------------------ with the eye engine
def _engine_available() -> bool:
    try:
        from eqtune.channel import load_channel
        from eqtune.eye import EyeEngine  # noqa: F401

        load_channel("c2m-10in")
        return True
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _engine_available(), reason="eye engine (eqtune.eye.EyeEngine) or channel library not available yet")
def test_ber_follows_eye_engine_ranking():
    """BER at the codes the eye engine ranks best is lower than at the codes it ranks worst:
    end to end, codes written through the CMIS driver, errors counted by the module's checker."""
    from eqtune.channel import load_channel
    from eqtune.drivers.cmis import CmisDriver
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.module import EmulatedModule, VirtualClock
    from eqtune.emulate.transport import EmulatorTransport
    from eqtune.eye import EyeEngine

    ch = load_channel("c2m-10in")
    lk = EmulatedLink(ch, seed=1, lane_spread_db=0.0)
    assert lk.quality_source == "eye-engine"
    eng = EyeEngine(ch, direction="module_rx")
    ranked = sorted(range(0, 11), key=lambda c: -eng.evaluate({**lk.host_tx, "tx_eq": float(c)}).eye_height_min_mv)
    best, worst = ranked[0], ranked[-1]
    emu = EmulatedModule(lk, settle_s=0.0, clock=VirtualClock())
    mod = CmisDriver(PagedRegisters(EmulatorTransport(emu, "emu:eye")), resource="emu:eye")
    mod.apply_eq({1: {"tx_eq": best}})
    ber_best = mod.module_ber([1], 1.0)[1]
    mod.apply_eq({1: {"tx_eq": worst}})
    ber_worst = mod.module_ber([1], 1.0)[1]
    assert ber_best.ber_upper95 < ber_worst.ber
    # host-side direction: the true BER follows the engine's ranking too
    eng_h = EyeEngine(ch, direction="host_rx")
    cands = [{"rx_pre": p, "rx_post": q, "rx_amp": 1} for p in (0, 3) for q in (0, 4, 7)]
    ranked_h = sorted(cands, key=lambda c: -eng_h.evaluate({k: float(v) for k, v in c.items()}).eye_height_min_mv)
    assert lk.ber(1, "host_rx", ranked_h[0]) <= lk.ber(1, "host_rx", ranked_h[-1])
