"""Shared eye pictures (eqtune.eye.plot): the text eye on synthetic eyes with known openings, and the
matplotlib drawers' geometry."""

from __future__ import annotations

import numpy as np
import pytest

from eqtune.eye.plot import SHADES, contour_arrays, text_eye


def synthetic(half_width_ui: float = 0.2, half_height_mv: float = 10.0, centre_ui: float = 0.0):
    """One eye open at |phase - centre| < half_width (circular), |v| < half_height; dense level traces
    at +-40 mV and faint density (3 decades down) everywhere else."""
    ph = np.arange(-16, 16) / 32.0
    v = np.linspace(-50.0, 50.0, 201)
    d = (ph - centre_ui + 0.5) % 1.0 - 0.5
    open_ = np.abs(d) < half_width_ui
    lo = np.where(open_, -half_height_mv, 1.0)
    hi = np.where(open_, half_height_mv, -1.0)  # lower > upper: closed
    pdf = np.full((len(ph), len(v)), 1e-3)
    pdf[:, np.abs(np.abs(v) - 40.0) < 2.0] = 1.0
    for i in range(len(ph)):
        if open_[i]:
            pdf[i, np.abs(v) < half_height_mv] = 1e-30
    dens = {"phase_ui": ph.tolist(), "v_mv": v.tolist(), "pdf": pdf.tolist()}
    con = {"phase_ui": ph.tolist(), "lower_mv": lo[:, None].tolist(), "upper_mv": hi[:, None].tolist()}
    return dens, con


def test_text_eye_opening_lands_where_the_contour_says():
    dens, con = synthetic(half_width_ui=0.2, half_height_mv=10.0)
    rows = text_eye(dens, con, width=40, height=20, sample_phase_ui=0.0)
    assert len(rows) == 20 and all(len(r) == 40 for r in rows)
    grid = np.array([list(r) for r in rows])
    # rows span +50 (top) .. -50 mV in 5 mV rows: the opening |v| < 10 mV is rows 8..11
    open_rows = [i for i in range(20) if " " in rows[i] or "|" in rows[i]]
    assert open_rows == [8, 9, 10, 11]
    # columns span one UI centred on 0 in 1/40 UI steps: |phase| < 0.2 UI is 16 columns around the middle
    opening_cols = np.where((grid[9] == " ") | (grid[9] == "|"))[0]
    assert 14 <= len(opening_cols) <= 18 and abs(opening_cols.mean() - 19.5) <= 1.0
    # the sampling phase marker sits in the middle column, only inside the opening
    bar = [(i, j) for i in range(20) for j in range(40) if grid[i, j] == "|"]
    assert {i for i, _ in bar} == {8, 9, 10, 11} and len({j for _, j in bar}) == 1
    assert abs(bar[0][1] - 19.5) <= 1
    # the level traces at +-40 mV are the darkest shade; the faint density a middle one, never blank
    assert set(rows[1]) == {SHADES[-1]} and set(rows[18]) == {SHADES[-1]}
    assert len(set(rows[5])) == 1 and rows[5][0] in SHADES[2:-1]


def test_text_eye_centres_the_sampling_phase_circularly():
    """An eye centred at +0.45 UI wraps around the phase axis; centred on its sampling phase it shows as
    one contiguous opening in the middle of the picture."""
    dens, con = synthetic(half_width_ui=0.15, centre_ui=0.45)
    rows = text_eye(dens, con, width=40, height=20, sample_phase_ui=0.45)
    cols = np.where((np.array(list(rows[9])) == " ") | (np.array(list(rows[9])) == "|"))[0]
    assert np.all(np.diff(cols) == 1), "opening split: the phase axis was not wrapped"
    assert abs(cols.mean() - 19.5) <= 1.0
    uncentred = text_eye(dens, con, width=40, height=20)  # centred on 0: the opening is split at the edges
    c0 = np.where(np.array(list(uncentred[9])) == " ")[0]
    assert c0.min() == 0 and c0.max() == 39 and np.any(np.diff(c0) > 1)


def test_contour_arrays_accepts_both_layouts_and_refuses_empty():
    _, con = synthetic()
    ph, lo, hi = contour_arrays(con)
    t = {"phase_ui": con["phase_ui"], "lower_mv": np.asarray(con["lower_mv"]).T.tolist(),
         "upper_mv": np.asarray(con["upper_mv"]).T.tolist()}
    ph2, lo2, hi2 = contour_arrays(t)
    assert np.array_equal(lo, lo2) and lo.shape == (32, 1)
    with pytest.raises(ValueError):
        contour_arrays({"phase_ui": [], "lower_mv": [], "upper_mv": []})


def test_text_eye_of_a_real_engine_eye_matches_its_eye_height():
    """On the engine's own eye: the opening at the sampling phase spans the eye height (within one row)."""
    from eqtune.channel import load_channel
    from eqtune.eye import EyeEngine

    eng = EyeEngine(load_channel("c2m-4in"))
    res = eng.evaluate({"rx_pre": 2, "rx_post": 3, "rx_amp": 3})
    dens = eng.density(res.eq)
    height = 60
    rows = text_eye(dens, eng.contour(res.eq), width=32, height=height, sample_phase_ui=res.sample_phase_ui)
    col = [r[16] for r in rows]
    row_mv = (max(dens["v_mv"]) - min(dens["v_mv"])) / height
    runs, n = [], 0
    for ch in col + ["x"]:
        if ch == "|":
            n += 1
        elif n:
            runs.append(n)
            n = 0
    assert len(runs) == 3  # three PAM4 eyes
    for got, want in zip(sorted(runs), sorted(res.eye_height_mv)):
        assert abs(got * row_mv - want) <= 1.5 * row_mv, (runs, res.eye_height_mv, row_mv)


def test_draw_density_extent_and_marker():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eqtune.eye.plot import draw_contour, draw_density

    dens, con = synthetic()
    con = dict(con, ber_target=1e-6)  # as EyeEngine.contour gives it
    fig, ax = plt.subplots(1, 2)
    try:
        draw_density(ax[0], dens, con, sample_phase_ui=0.1)
        img = ax[0].get_images()[0]
        left, right, bottom, top = img.get_extent()  # one UI centred on the sampling instant
        assert -0.5 - 1e-9 <= left < -0.4 and 0.4 < right <= 0.5 + 1e-9 and (bottom, top) == (-50.0, 50.0)
        assert any(abs(line.get_xdata()[0]) < 1e-12 for line in ax[0].lines if len(line.get_xdata()) == 2)
        assert len(fig.axes) == 3  # the eye, its colorbar, the contour panel
        assert "log10" in fig.axes[2].get_ylabel()
        legend = ax[0].get_legend()
        assert legend is not None and legend.get_texts()[0].get_text() == "contour at BER 1e-06"
        draw_contour(ax[1], con)
        assert ax[1].get_xlim() == (-0.5, 0.5)  # a common phase axis for panels side by side
        assert len(ax[1].collections) == 1
    finally:
        plt.close(fig)


def test_closed_eye_is_marked_closed_not_a_negative_height():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eqtune.eye.plot import draw_contour, draw_density, fmt_eye_height

    dens, con = synthetic()
    shut = dict(con, lower_mv=np.asarray(con["upper_mv"], float) + 5.0, upper_mv=con["upper_mv"])
    fig, ax = plt.subplots(1, 2)
    try:
        draw_density(ax[0], dens, shut)
        draw_contour(ax[1], shut)
        for a in ax:
            assert any(t.get_text().startswith("CLOSED") for t in a.texts)
    finally:
        plt.close(fig)
    assert fmt_eye_height(-293.0) == "CLOSED" and fmt_eye_height(12.34) == "12.3 mV"


def test_centre_columns_puts_the_eye_opening_in_the_middle():
    from eqtune.eye.plot import centre_columns

    ph = (np.arange(64) - 32) / 64
    v = np.linspace(-50, 50, 41)
    img = np.ones((41, 64))
    img[np.abs(v) <= 5, 3] = 1e-9  # the opening sits at the left edge (phase -0.45 UI)
    rel, out = centre_columns(ph, img, None, v)
    assert out[20, 32] == 1e-9 and abs(rel[32]) < 1e-12  # now in the middle, at 0 UI
    assert np.allclose(np.sort(out.ravel()), np.sort(img.ravel()))  # a roll: nothing lost


def test_eye_cli_text_picture():
    from click.testing import CliRunner

    from eqtune.cli import main

    r = CliRunner().invoke(main, ["eye", "c2m-4in", "--rx-pre", "2", "--rx-post", "3", "--rx-amp", "3", "--text"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("statistical eye, blank = open"))
    pic = [ln[2:] for ln in lines[start + 1:]]
    assert len(pic) == 21 and all(len(row) == 64 for row in pic)
    marked = [i for i, row in enumerate(pic) if row[32] == "|"]
    assert marked and len(marked) < 21


def test_tune_sim_text_eye_and_refused_with_live():
    from click.testing import CliRunner

    from eqtune.cli import main

    r = CliRunner().invoke(main, ["tune", "c2m-4in", "--sim", "--seed", "1", "--budget", "12", "--text-eye"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert any(ln.startswith("tuned eye    EH") for ln in lines)
    pic = [ln[2:] for ln in lines[-21:]]
    assert len(pic) == 21 and all(len(row) == 64 for row in pic)
    assert any(row[32] == "|" for row in pic)
    r = CliRunner().invoke(main, ["tune", "c2m-4in", "--live", "--module", "emu:c2m-4in", "--lane", "1",
                                  "--text-eye"])
    assert r.exit_code == 2 and "--text-eye applies to --sim" in r.output
