"""Eye pictures shared by the CLI plots, the session report and the TUI.

Inputs are the engine's plain-data views (``EyeEngine.density`` / ``EyeEngine.contour``): phase in UI,
voltage in mV, ``lower_mv``/``upper_mv`` per phase and eye (lower > upper: closed at that phase). The
matplotlib drawers take an ``Axes`` (matplotlib is imported by the caller, lazily); ``text_eye`` needs no
graphics at all (terminals over SSH).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def contour_arrays(con: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(phase_ui (n,), lower_mv (n, eyes), upper_mv (n, eyes)) of a contour dict; ValueError if empty."""
    phase = np.asarray(con.get("phase_ui") or [], dtype=float)
    lo = np.atleast_2d(np.asarray(con.get("lower_mv"), dtype=float))
    hi = np.atleast_2d(np.asarray(con.get("upper_mv"), dtype=float))
    if not len(phase) or lo.shape != hi.shape:
        raise ValueError("no contour")
    if lo.shape[0] != len(phase):
        lo, hi = lo.T, hi.T
    return phase, lo, hi


def draw_density(ax, dens: Mapping[str, Any], con: Mapping[str, Any] | None = None, *, ms: float = 3.0,
                 sample_phase_ui: float | None = None, floor_decades: float = 10.0) -> None:
    """Statistical eye image (log10 probability density, ``floor_decades`` shown) with the contour at the
    target BER as cyan dots and the sampling phase as a dashed line."""
    ph = np.asarray(dens["phase_ui"], dtype=float)
    img = np.log10(np.maximum(np.asarray(dens["pdf"], dtype=float).T, 1e-12))
    ax.imshow(img, origin="lower", aspect="auto", cmap="inferno", vmin=img.max() - floor_decades,
              extent=(ph[0], ph[-1], dens["v_mv"][0], dens["v_mv"][-1]))
    if con is not None:
        phase, lo, hi = contour_arrays(con)
        for e in range(lo.shape[1]):
            ok = hi[:, e] > lo[:, e]
            ax.plot(phase[ok], lo[ok, e], "c.", ms=ms)
            ax.plot(phase[ok], hi[ok, e], "c.", ms=ms)
    if sample_phase_ui is not None:
        ax.axvline(sample_phase_ui, color="w", lw=0.8, ls="--")
    ax.set(xlabel="phase (UI)", ylabel="mV")


def draw_contour(ax, con: Mapping[str, Any]) -> None:
    """Eye openings at the target BER as filled areas (light pictures for reports)."""
    phase, lo, hi = contour_arrays(con)
    for j in range(lo.shape[1]):
        ok = hi[:, j] > lo[:, j]
        ax.fill_between(phase, np.where(ok, lo[:, j], np.nan), np.where(ok, hi[:, j], np.nan),
                        color="#0969da", alpha=0.4, lw=0)
    ax.set_xlim(phase.min(), phase.max())
    ax.grid(alpha=0.3)


#: shades of log10 probability density, faintest first (terminal-safe ASCII)
SHADES = " .:-=+*%@"


def text_eye(dens: Mapping[str, Any], con: Mapping[str, Any] | None = None, *, width: int = 48, height: int = 16,
             sample_phase_ui: float | None = None, floor_decades: float = 6.0) -> list[str]:
    """The statistical eye as text: ``height`` rows of ``width`` characters, top row = highest voltage.

    Each cell shades the largest log10 probability density of the voltage bins it covers (``SHADES``,
    ``floor_decades`` below the peak is blank), so the open eyes show as blank holes between the levels,
    as on a scope. Columns span one UI centred on ``sample_phase_ui`` (phase is circular). Cells inside an
    opening at the target BER (``con``) are blank by definition; the sampling phase column is marked '|'
    where it crosses an opening. ASCII only, for any terminal."""
    width, height = max(8, int(width)), max(3, int(height))
    ph = np.asarray(dens["phase_ui"], dtype=float)
    v = np.asarray(dens["v_mv"], dtype=float)
    pdf = np.asarray(dens["pdf"], dtype=float)  # (phases, voltages)
    logp = np.log10(np.maximum(pdf, 1e-300))
    top = float(logp.max())
    # one UI centred on the sampling phase (the eye is periodic in phase): column c shows phase cols[c],
    # column width // 2 the sampling phase itself
    centre = 0.0 if sample_phase_ui is None else float(sample_phase_ui)
    cols = centre + (np.arange(width) - width // 2) / width

    def nearest(phases: np.ndarray) -> np.ndarray:
        d = (phases[None, :] - cols[:, None] + 0.5) % 1.0 - 0.5  # circular distance in UI
        return np.abs(d).argmin(axis=1)

    j = nearest(ph)
    edges = np.linspace(v.max(), v.min(), height + 1)  # top row first
    row_of = np.clip(np.searchsorted(-edges, -v, side="right") - 1, 0, height - 1)
    cell = np.full((height, width), -np.inf)
    for r in range(height):
        sel = row_of == r
        if np.any(sel):
            cell[r] = logp[j][:, sel].max(axis=1)
    level = np.clip((cell - (top - floor_decades)) / floor_decades, 0.0, 1.0)
    idx = np.where(np.isfinite(cell) & (level > 0), 1 + np.floor(level * (len(SHADES) - 2) + 0.5), 0).astype(int)
    grid = np.array(list(SHADES))[np.clip(idx, 0, len(SHADES) - 1)]
    opening = np.zeros((height, width), dtype=bool)
    if con is not None:
        phase, lo, hi = contour_arrays(con)
        jc = nearest(phase)
        mid = 0.5 * (edges[:-1] + edges[1:])
        for e in range(lo.shape[1]):
            low, high = lo[jc, e], hi[jc, e]
            opening |= (mid[:, None] >= low[None, :]) & (mid[:, None] <= high[None, :]) & (high > low)[None, :]
        grid[opening] = " "
    if sample_phase_ui is not None:
        c = width // 2
        grid[opening[:, c], c] = "|"
    return ["".join(row) for row in grid]


def engine_text_eye(eng: Any, res: Any, *, width: int = 64, height: int = 21) -> list[str]:
    """:func:`text_eye` of an evaluated point: ``eng`` an ``EyeEngine``, ``res`` its ``EyeResult``."""
    return text_eye(eng.density(res.eq), eng.contour(res.eq), width=width, height=height,
                    sample_phase_ui=res.sample_phase_ui)


def save_figure(fig: Any, path: str, *, dpi: int = 100, option: str = "--plot") -> None:
    """Write a matplotlib figure and close it; an unwritable path is an ``InputError`` naming ``option``."""
    import matplotlib.pyplot as plt

    from eqtune.errors import InputError

    try:
        fig.savefig(path, dpi=dpi)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write ({exc.strerror}): choose a writable path") from None
    finally:
        plt.close(fig)
