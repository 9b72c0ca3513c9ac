"""Rx FFE tap overrides of the host SerDes receiver (``rx_ffe_pre1`` / ``rx_ffe_post1`` / ``rx_ffe_post2``):
the constrained MMSE (``eqtune.eye.mmse.fixed_tap_basis``: held taps fixed, the others re-solved), the DSP
receiver's eye with a held tap against the bit-by-bit simulator, and the ``eye`` / ``tune`` commands.

Settings chosen on the library channel c2m-224g-6in (host-lr-224g, 106.25 GBd PAM4, BER 1e-3, TX c(-1) -0.1,
15-tap FFE with 6 pre-cursor taps, 1-tap DFE; held code -8 for w(-1), away from the adapted -3); the channel
generated from it with a 10 in host trace is report-only (nothing was chosen on it).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.errors import InputError
from eqtune.eye import EyeEngine
from eqtune.eye.ffe_eye import ffe_eye
from eqtune.eye.mmse import MmseInputError, fixed_tap_basis, mmse_rx_ffe, pam_symbol_variance
from eqtune.eye.tdlink import simulate_ffe_link
from eqtune.serdes.knobs import RX_FFE_POST1, RX_FFE_POST2, RX_FFE_PRE1, RX_FFE_TAP_STEP

VAR_X = pam_symbol_variance(4)
N_TAPS, N_PRE, CURSOR = 9, 3, 4


def _pulse(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A UI-sampled pulse with pre- and post-cursor ISI and a coloured noise autocorrelation (V, V^2)."""
    rng = np.random.default_rng(seed)
    n = np.arange(24) - CURSOR
    h = np.where(n < 0, 0.15 * np.exp(1.2 * n), 0.6 * np.exp(-0.5 * np.maximum(n, 0))) * 0.3
    h[CURSOR] = 0.3
    h = h + 0.004 * rng.standard_normal(h.size)
    rn = 1e-4 * 0.5 ** np.arange(N_TAPS)
    return h, rn


def _solve(h, rn, *, basis=None, b=(-2.0, 2.0)):
    return mmse_rx_ffe(h, rn, cursor=CURSOR, n_taps=N_TAPS, n_pre=N_PRE, n_dfe=1, var_x=VAR_X,
                       b_min=np.array([b[0]]), b_max=np.array([b[1]]), basis=basis)


@pytest.mark.parametrize("b", [(-2.0, 2.0), (0.3, 0.3)], ids=["dfe-free", "dfe-clamped"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_holding_taps_at_the_adapted_values_reproduces_the_adapted_receiver(seed, b):
    h, rn = _pulse(seed)
    free = _solve(h, rn, b=b)
    w = free.ffe
    held = {k: w[N_PRE + k] / w[N_PRE] for k in (-1, 1, 2)}
    fixed = _solve(h, rn, basis=fixed_tap_basis(N_TAPS, N_PRE, held), b=b)
    assert bool(free.dfe_limited) == bool(fixed.dfe_limited) == (b[0] == b[1])
    np.testing.assert_allclose(fixed.ffe, w, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fixed.dfe, free.dfe, rtol=0, atol=1e-9)
    assert fixed.mse == pytest.approx(free.mse, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_held_tap_away_from_the_optimum_never_lowers_the_mse(seed):
    h, rn = _pulse(seed)
    free = _solve(h, rn)
    rng = np.random.default_rng(10 + seed)
    worse = 0
    for v in rng.uniform(-0.5, 0.5, size=(40, 2)):
        held = _solve(h, rn, basis=fixed_tap_basis(N_TAPS, N_PRE, {-1: v[0], 1: v[1]}))
        assert held.mse >= free.mse * (1 - 1e-12)
        w = held.ffe
        assert w[N_PRE - 1] / w[N_PRE] == pytest.approx(v[0], rel=1e-12)
        assert w[N_PRE + 1] / w[N_PRE] == pytest.approx(v[1], rel=1e-12)
        worse += held.mse > free.mse * (1 + 1e-6)
    assert worse == 40  # random values are never the optimum: strictly worse every time


def test_two_tap_closed_form():
    """FFE w = (w(-1), w(0)), no DFE, w(-1) held at v w(0): nothing is left to solve but the scale a of
    w = a (v, 1), fixed by the unit cursor y[c] = w(-1) h[c+1] + w(0) h[c] = 1, so a = 1 / (v h[c+1] + h[c]);
    the MSE is var_x sum of the squared ISI samples of h * w plus the noise w' toeplitz(rn) w (by hand, not
    through the quadratic form the module solves)."""
    h = np.array([0.05, 0.4, 0.12, 0.03])
    rn = np.array([2e-4, 5e-5])
    c, v = 1, -0.2
    sol = mmse_rx_ffe(h, rn, cursor=c, n_taps=2, n_pre=1, n_dfe=0, var_x=VAR_X, b_min=np.zeros(0),
                      b_max=np.zeros(0), basis=fixed_tap_basis(2, 1, {-1: v}))
    # y[i] = w(-1) h[i+1] + w(0) h[i] (the FFE output with the pre-cursor tap one UI ahead); cursor row i = c
    a = 1.0 / (v * h[c + 1] + h[c])
    w = a * np.array([v, 1.0])
    y = np.convolve(h, w)  # output index i + 1 is y[i] above
    isi = np.delete(y, c + 1)
    mse = VAR_X * float(isi @ isi) + float(w @ np.array([[rn[0], rn[1]], [rn[1], rn[0]]]) @ w)
    np.testing.assert_allclose(sol.ffe, w, rtol=1e-12)
    assert sol.mse == pytest.approx(mse, rel=1e-12)


def test_the_basis_refuses_taps_the_ffe_lacks():
    with pytest.raises(MmseInputError, match="offsets -3..5"):
        fixed_tap_basis(N_TAPS, N_PRE, {-4: 0.1})
    with pytest.raises(MmseInputError, match="cursor tap"):
        fixed_tap_basis(N_TAPS, N_PRE, {0: 0.1})


# ------------------------------------------------------------------ the DSP receiver's eye

PROFILE, BER, POINT = "host-lr-224g", 1e-3, {"tx_cm1": -0.1}


def _engine(length_in: float):
    from tests.eye.test_ffe_eye import _channel

    return _channel(length_in), EyeEngine(_channel(length_in), PROFILE, direction="serdes", ber=BER)


def test_unset_overrides_are_the_receivers_own_adaptation():
    _, eng = _engine(6)
    free, none = ffe_eye(eng, POINT), ffe_eye(eng, POINT, held={})
    assert free.ffe_taps == none.ffe_taps and free.eye_height_mv == none.eye_height_mv and not free.held
    codes = free.knob_codes()
    # the nearest codes to the adapted taps, within half a step of them
    rel = free.taps_per_cursor_tap()
    for name, k in ((RX_FFE_PRE1, -1), (RX_FFE_POST1, 1), (RX_FFE_POST2, 2)):
        assert abs(codes[name] * RX_FFE_TAP_STEP - rel[free.n_pre + k]) <= RX_FFE_TAP_STEP / 2
    held = ffe_eye(eng, POINT, held={RX_FFE_PRE1: -8})
    assert held.taps_per_cursor_tap()[held.n_pre - 1] == pytest.approx(-8 * RX_FFE_TAP_STEP, rel=1e-12)
    assert held.fom_db < free.fom_db  # the MMSE figure of merit: the adapted receiver is MSE-optimal
    assert held.held == {RX_FFE_PRE1: -8.0} and held.to_dict()["rx_ffe_held"] == [RX_FFE_PRE1]


def test_overrides_are_refused_on_the_modules_own_receiver():
    from tests.eye.test_ffe_eye import _channel

    eng = EyeEngine(_channel(6), PROFILE, direction="module_rx", ber=BER)
    with pytest.raises(InputError, match="use --direction serdes"):
        ffe_eye(eng, {}, held={RX_FFE_POST1: 2})


@pytest.mark.slow
@pytest.mark.parametrize("length_in", [6, 10], ids=["library-6in", "generated-10in"])
def test_held_tap_stat_eye_within_3_percent_of_bit_by_bit(length_in):
    from eqtune.eye.prepare import MAX_POST_UI

    ch, eng = _engine(length_in)
    fe = ffe_eye(eng, POINT, held={RX_FFE_PRE1: -8})
    sim = simulate_ffe_link(ch, PROFILE, fe.eq, ffe_taps=np.array(fe.ffe_taps), n_pre=fe.n_pre,
                            dfe_taps=np.array(fe.dfe_taps), cursor_time_s=fe.sample_time_s,
                            delay_s=3 * eng.profile.tx.rise_time_ps * 1e-12, ber_target=BER, n_symbols=1 << 19,
                            seed=3, pattern="random", post_ui=MAX_POST_UI)
    stat, bbb = np.asarray(fe.eye_height_mv), np.asarray(sim.result.eye_height_mv)
    assert fe.eye_height_min_mv > 0
    assert np.all(np.abs(bbb / stat - 1.0) < 0.03), f"stat {stat} mV vs bit-by-bit {bbb} mV"


# ------------------------------------------------------------------ commands

EYE = ["eye", "c2m-224g-6in", "--direction", "serdes", "--tx-ffe=-0.1,0.9,0", "--ber", "1e-3"]


def test_eye_command_holds_a_tap_and_reports_the_taps():
    res = CliRunner().invoke(main, [*EYE, "--rx-ffe", "15,6", "--rx-ffe-pre1", "-8", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)["rx_ffe"]
    assert d["rx_ffe_held"] == [RX_FFE_PRE1] and d["rx_ffe_knobs"][RX_FFE_PRE1] == -8
    assert len(d["ffe_taps"]) == 15 and d["ffe_taps_per_cursor_tap"][5] == pytest.approx(-0.125, rel=1e-12)


@pytest.mark.parametrize(("args", "message"), [
    (["--rx-ffe-pre1", "-8"], "also give --rx-ffe TAPS,PRE"),
    (["--rx-ffe", "15,6", "--rx-ffe-post1", "40"], "rx_ffe_post1=40 is not allowed: use -32..32"),
    (["--rx-ffe", "2,0", "--rx-ffe-pre1", "1"], "does not have: give more taps with --rx-ffe"),
])
def test_eye_command_refuses_in_one_line(args, message):
    res = CliRunner().invoke(main, [*EYE, *args])
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


TUNE = ["tune", "c2m-224g-6in", "--sim", "--ber", "1e-3", "--seed", "1"]


@pytest.mark.parametrize(("args", "message"), [
    (["--direction", "serdes", "--knobs", "tx_cm1,rx_ffe_pre1"], "also give --rx-ffe TAPS,PRE"),
    (["--rx-ffe", "15,6", "--direction", "module_rx", "--knobs", "tx_cm1"], "use --direction serdes"),
    (["--rx-ffe", "15,6", "--knobs", "tx_cm1", "--objective", "com"], "use --objective eye_height"),
    (["--rx-ffe", "15,6", "--knobs", "tx_cm1", "--fix", "rx_ffe_post2=0.5"], "rx_ffe_post2=0.5 is not allowed"),
    (["--rx-ffe", "15,6", "--knobs", "tx_cm1", "--text-eye"], "drop --text-eye"),
])
def test_tune_command_refuses_in_one_line(args, message):
    res = CliRunner().invoke(main, [*TUNE, *args])
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output


def _tune_json(*args: str) -> dict:
    res = CliRunner().invoke(main, [*TUNE, "--direction", "serdes", "--rx-ffe", "15,6", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output[res.output.index("{"):])


@pytest.mark.slow
def test_tune_with_overrides_reaches_the_adapted_receivers_eye():
    """Against the adapted (unconstrained MMSE) receiver at every tx_cm1 of the profile's grid (exhaustive):
    (1) the brief's 3-knob tune (tx_cm1, w(-1), w(+1); GP, 30 evaluations) is within 0.1 dB of the adapted
    receiver at the tx_cm1 it picks, and reports the codes and the 15 taps; (2) with tx_cm1 fixed at the
    adapted receiver's best code, the override tune starts at the adapted codes and ends within 0.1 dB of
    that best eye or above it. Not asserted (measured, docs/eye.md): the 3-knob GP stays ~0.2-0.3 dB below
    the global best, because the adapted eye is jagged in tx_cm1 (16.5 mV at -0.06, 14.5 at -0.04, 17.4 at
    -0.02) and 30-60 evaluations of a 16 x 65 x 65 grid do not find the spike."""
    _, eng = _engine(6)
    db01 = 10 ** (-0.1 / 20)
    d = _tune_json("--knobs", "tx_cm1,rx_ffe_pre1,rx_ffe_post1", "--budget", "30")
    tuned = d["tuned"]
    rx = tuned["metrics"]["rx_ffe"]
    assert set(tuned["codes"]) == {"tx_cm1", RX_FFE_PRE1, RX_FFE_POST1} and len(rx["ffe_taps"]) == 15
    assert rx["knobs"][RX_FFE_PRE1] == tuned["codes"][RX_FFE_PRE1] and rx["held"] == [RX_FFE_POST1, RX_FFE_PRE1]
    at_pick = ffe_eye(eng, {"tx_cm1": tuned["codes"]["tx_cm1"]}).eye_height_min_mv
    assert tuned["margin"] >= at_pick * db01, (tuned, at_pick)

    adapted = {c: ffe_eye(eng, {"tx_cm1": c}) for c in eng.knob("tx_cm1").values}
    c_best = max(adapted, key=lambda c: adapted[c].eye_height_min_mv)
    d2 = _tune_json("--knobs", "rx_ffe_pre1,rx_ffe_post1", "--fix", f"tx_cm1={c_best}", "--budget", "20")
    codes = adapted[c_best].knob_codes()
    assert d2["baseline"]["codes"] == {RX_FFE_PRE1: codes[RX_FFE_PRE1], RX_FFE_POST1: codes[RX_FFE_POST1]}
    assert d2["tuned"]["margin"] >= adapted[c_best].eye_height_min_mv * db01
