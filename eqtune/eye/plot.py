"""Eye pictures shared by the CLI plots, the session report and the TUI.

Inputs are the engine's plain-data views (``EyeEngine.density`` / ``EyeEngine.contour``): phase in UI,
voltage in mV, ``lower_mv``/``upper_mv`` per phase and eye (lower > upper: closed at that phase). The
matplotlib drawers take an ``Axes`` (matplotlib is imported by the caller, lazily); ``text_eye`` needs no
graphics at all (terminals over SSH).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from eqtune.errors import InputError

if TYPE_CHECKING:  # matplotlib is imported by the callers, lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from eqtune.eye.engine import EyeEngine
    from eqtune.eye.result import EyeResult


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


def centre_columns(phase_ui: ArrayLike, img: np.ndarray, centre_ui: float | None = None,
                   v_mv: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Roll an eye image (rows: voltage, columns: phase) so one UI is shown centred on ``centre_ui``.

    The eye is periodic in phase (one UI), so rolling is exact. Without ``centre_ui`` the centre is the
    phase where the density around 0 mV (the middle eye of PAM4, the only eye of NRZ) is lowest, i.e.
    the eye's opening: a picture never cuts the eye at its left edge. Returns (phase relative to the
    centre in UI, rolled image)."""
    ph = np.asarray(phase_ui, dtype=float)
    img = np.asarray(img, dtype=float)
    if centre_ui is None:
        v = np.asarray(v_mv if v_mv is not None else np.linspace(-1, 1, img.shape[0]), dtype=float)
        band = np.abs(v) <= 0.1 * (np.max(np.abs(v)) or 1.0)
        centre_ui = float(ph[int(np.argmin(img[band].sum(axis=0)))]) if np.any(band) else 0.0
    c = int(np.argmin(np.abs((ph - centre_ui + 0.5) % 1.0 - 0.5)))
    shift = len(ph) // 2 - c
    rel = ((ph - ph[c] + 0.5) % 1.0) - 0.5
    return np.roll(rel, shift), np.roll(img, shift, axis=1)


def draw_density(ax: Axes, dens: Mapping[str, Any], con: Mapping[str, Any] | None = None, *, ms: float = 3.0,
                 sample_phase_ui: float | None = None, floor_decades: float = 10.0,
                 colorbar: bool = True) -> None:
    """Statistical eye image (log10 probability density, ``floor_decades`` shown, with a colorbar) centred
    on the sampling phase, with the contour at the target BER as a solid cyan line on a dark outline
    (readable on every shade), the sampling phase as a dashed line, and a CLOSED mark when the contour
    has no opening."""
    from matplotlib import patheffects

    ph = np.asarray(dens["phase_ui"], dtype=float)
    img = np.log10(np.maximum(np.asarray(dens["pdf"], dtype=float).T, 1e-300))
    centre = sample_phase_ui if sample_phase_ui is not None else (con or {}).get("sample_phase_ui")
    rel, img = centre_columns(ph, img, centre, dens.get("v_mv"))
    top = float(img.max())
    im = ax.imshow(np.maximum(img, top - floor_decades), origin="lower", aspect="auto", cmap="inferno",
                   vmin=top - floor_decades, vmax=top,
                   extent=(rel[0], rel[-1], dens["v_mv"][0], dens["v_mv"][-1]))
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label="log10 probability density", pad=0.02)
    outline = [patheffects.Stroke(linewidth=3.2, foreground="black"), patheffects.Normal()]
    is_open = False
    if con is not None:
        phase, lo, hi = contour_arrays(con)
        prel = ((phase - (centre or 0.0) + 0.5) % 1.0) - 0.5
        order = np.argsort(prel)
        label = f"contour at BER {con.get('ber_target', ''):g}" if con.get("ber_target") else "contour"
        for e in range(lo.shape[1]):
            ok = (hi[:, e] > lo[:, e])[order]
            is_open |= bool(ok.any())
            for edge in (lo[:, e][order], hi[:, e][order]):
                (line,) = ax.plot(prel[order], np.where(ok, edge, np.nan), "-", color="cyan", lw=1.6,
                                  label=label)
                line.set_path_effects(outline)
                label = "_nolegend_"
        if is_open:
            ax.legend(loc="upper right", fontsize=7, framealpha=0.8)
        else:
            mark_closed(ax, f"CLOSED at BER {con.get('ber_target', 0):g}" if con.get("ber_target") else "CLOSED")
    ax.axvline(0.0, color="w", lw=0.8, ls="--")
    ax.set(xlabel="phase from the sampling instant (UI)", ylabel="mV")


def mark_closed(ax: Axes, text: str = "CLOSED") -> None:
    """A large red CLOSED label across an axes whose eye has no opening (not a negative height)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=16, fontweight="bold",
            color="#d00000", bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "#d00000"})


def fmt_eye_height(eh_mv: float) -> str:
    """``12.3 mV``, or ``CLOSED`` for a closed eye (a negative height is not a height an FAE can use)."""
    return "CLOSED" if not eh_mv > 0 else f"{eh_mv:.1f} mV"


EYE_NAMES = {1: ("eye",), 3: ("lower eye", "middle eye", "upper eye")}


def eye_names(n: int) -> tuple[str, ...]:
    """Names of the ``n`` eyes bottom-up: PAM4 has lower, middle and upper eyes."""
    return EYE_NAMES.get(n, tuple(f"eye {i + 1}" for i in range(n)))


def draw_contour(ax: Axes, con: Mapping[str, Any], *, xlim: tuple[float, float] | None = (-0.5, 0.5)) -> None:
    """Eye openings at the target BER as filled areas (light pictures for reports), on a common phase
    axis (``xlim``, UI from the sampling instant) so panels side by side compare; CLOSED when none."""
    phase, lo, hi = contour_arrays(con)
    centre = float(con.get("sample_phase_ui", 0.0) or 0.0)
    rel = ((phase - centre + 0.5) % 1.0) - 0.5
    order = np.argsort(rel)
    rel, lo, hi = rel[order], lo[order], hi[order]
    any_open = False
    for j in range(lo.shape[1]):
        ok = hi[:, j] > lo[:, j]
        any_open |= bool(ok.any())
        ax.fill_between(rel, np.where(ok, lo[:, j], np.nan), np.where(ok, hi[:, j], np.nan),
                        color="#0969da", alpha=0.4, lw=0)
    if not any_open:
        mark_closed(ax)
    ax.set_xlim(*(xlim or (rel.min(), rel.max())))
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
        ret: np.ndarray = np.abs(d).argmin(axis=1)
        return ret

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


def engine_text_eye(eng: EyeEngine, res: EyeResult, *, width: int = 64, height: int = 21) -> list[str]:
    """:func:`text_eye` of an evaluated point: ``eng`` an ``EyeEngine``, ``res`` its ``EyeResult``."""
    return text_eye(eng.density(res.eq), eng.contour(res.eq), width=width, height=height,
                    sample_phase_ui=res.sample_phase_ui)


def save_figure(fig: Figure, path: str, *, dpi: int = 100, option: str = "--plot") -> None:
    """Write a matplotlib figure and close it; an unwritable path is an ``InputError`` naming ``option``."""
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path, dpi=dpi)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write ({exc.strerror}): choose a writable path") from None
    finally:
        plt.close(fig)
