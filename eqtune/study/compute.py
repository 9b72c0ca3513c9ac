"""The per-combination computation: baseline, tuned and robust codes, margins and the BER floor.

``solve(combo, model)`` is the algorithm, written once against a small ``LinkModel`` interface
(evaluate a batch of EQ points at one corner); ``simulate(combo)`` runs it on the eye engine
(``eqtune.eye.EyeEngine`` via ``eqtune.tune.SimulationSource``); ``eqtune.study.synthetic`` runs it on an
analytic stand-in used to exercise the study machinery (executors, resume, reports) quickly, and
``eqtune.study.backends`` names both.

Results per combination (the columns of ``results.csv``):

* ``baseline_*``: the profile's default codes, worst corner;
* ``tuned_*``: codes that maximise the margin at the *first* (nominal) corner, metrics there;
* ``robust_*``: codes that maximise the *worst-corner* margin (robust tuning), metrics at that corner;
* ``ber_floor``: eye height of the robust codes at each floor BER (1e-12, 1e-15), direct from the
  statistical eye where the engine can, and Q-scale extrapolated from the bathtub (``berfloor.py``)
  as a cross-check; ``floor_eh_mv`` at the deepest floor BER;
* ``verdict``: ``pass`` when some pass criterion holds at every corner with the robust codes.

Searching: when the feasible code grid has at most ``tune.exhaustive_max`` points (the module code
space of a few hundred points) every point is evaluated in one vectorized batch per corner and the
argmax taken (exact, deterministic: ties go to the first grid point); otherwise the Bayesian
optimizer (``eqtune.tune``) runs with ``tune.budget`` evaluations and the combination's seed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from eqtune.jsonutil import finite_or_none
from eqtune.serdes.knobs import EqPoint, KnobSpace
from eqtune.study.berfloor import ber_key, extrapolate
from eqtune.study.spec import ChannelRef, Combination, Corner

METRICS = ("eye_height_min_mv", "vec_db", "com_db", "eye_width_ui")
OBJECTIVE_METRIC = {"eye_height": "eye_height_min_mv", "com": "com_db", "eye_width": "eye_width_ui"}


class LinkModel(Protocol):
    """What ``solve`` needs: a knob space, the corner names and a batch evaluator per corner."""

    space: KnobSpace
    corner_names: Sequence[str]

    def default_point(self) -> EqPoint: ...

    def measure(self, corner: int, points: Sequence[EqPoint]) -> list[dict[str, float]]:
        """Per point: ``margin`` plus the METRICS at this corner."""

    def floor(self, corner: int, point: EqPoint, bers: Sequence[float]) -> dict[str, dict[str, Any]]:
        """Per floor BER (``ber_key``): ``direct`` and ``extrapolated`` eye height (mV) or None."""


# --------------------------------------------------------------------------- the algorithm


def _codes(space: KnobSpace, point: Mapping[str, float]) -> dict[str, int | float]:
    out: dict[str, int | float] = {}
    for name in space.names:
        v = float(point[name])
        out[name] = int(round(v)) if abs(v - round(v)) < 1e-9 else v
    return out


def _metric_cols(prefix: str, m: Mapping[str, float]) -> dict[str, float | None]:
    return {f"{prefix}_margin": finite_or_none(m.get("margin")),
            f"{prefix}_eh_mv": finite_or_none(m.get("eye_height_min_mv")),
            f"{prefix}_vec_db": finite_or_none(m.get("vec_db")),
            f"{prefix}_com_db": finite_or_none(m.get("com_db")),
            f"{prefix}_ew_ui": finite_or_none(m.get("eye_width_ui"))}


def _worst(per_corner: Sequence[Mapping[str, float]]) -> tuple[int, Mapping[str, float]]:
    i = int(np.argmin([m["margin"] for m in per_corner]))
    return i, per_corner[i]


def verdict(combo: Combination, per_corner: Sequence[Mapping[str, float]], names: Sequence[str]
            ) -> tuple[str, list[str]]:
    """``pass`` when any criterion holds at every corner; else ``fail`` and the reasons (first criterion)."""
    reasons_first: list[str] = []
    for k, crit in enumerate(combo.criteria):
        reasons = [f"{names[i]}: {r}" for i, m in enumerate(per_corner) for r in crit.failures(m)]
        if not reasons:
            return "pass", []
        if k == 0:
            reasons_first = reasons
    return "fail", reasons_first


@dataclass(frozen=True)
class GridMeasures:
    """Every grid point measured at one corner, as columns: ``margin`` and the METRICS, one array
    each (NaN where a metric is not finite, the margin -1e3 there, as ``LinkModel.measure`` does)."""

    columns: Mapping[str, np.ndarray]

    def row(self, j: int) -> dict[str, float]:
        """Point ``j`` as ``LinkModel.measure`` hands it out (None for a metric that is not finite)."""
        out: dict[str, Any] = {k: finite_or_none(self.columns[k][j]) for k in METRICS}
        out["margin"] = float(self.columns["margin"][j])
        return out


def _columns(rows: Sequence[Mapping[str, float | None]]) -> GridMeasures:
    """Per-point dicts (``LinkModel.measure``) as columns."""
    cols = {k: np.array([np.nan if m.get(k) is None else m[k] for m in rows], dtype=float)
            for k in (*METRICS, "margin")}
    return GridMeasures(cols)


def measure_grid(model: LinkModel, corner: int, grid: np.ndarray) -> GridMeasures:
    """Every row of ``grid`` (columns ``model.space.names``) at ``corner``: the model's own vectorized
    ``measure_grid`` when it has one, else ``measure`` on the points (the same figures either way:
    ``tests/study/test_batched.py``)."""
    fn = getattr(model, "measure_grid", None)
    if fn is not None:
        got: GridMeasures = fn(corner, grid)
        return got
    return _columns(model.measure(corner, [model.space.to_point(r) for r in grid]))


def _search_grid(model: LinkModel, n_corners: int) -> tuple[np.ndarray, list[GridMeasures]]:
    grid = model.space.grid()
    return grid, [measure_grid(model, ci, grid) for ci in range(n_corners)]


class _WorstSource:
    """A MarginSource over corners of a LinkModel (worst case over ``corners``)."""

    def __init__(self, model: LinkModel, corners: Sequence[int]):
        self.model, self.corners = model, list(corners)
        self.space = model.space

    def default_point(self) -> EqPoint:
        return self.model.default_point()

    def measure_batch(self, points: Sequence[EqPoint]):
        from eqtune.tune.source import Measurement

        per = [self.model.measure(ci, points) for ci in self.corners]
        return [Measurement(min(p[j]["margin"] for p in per), {}) for j in range(len(points))]

    def measure(self, point: EqPoint):
        return self.measure_batch([point])[0]

    def screen_margins(self, ispace: Any) -> np.ndarray | None:
        """The model's screen (``EngineModel.screen_margins``), worst over ``corners``; None when the
        model has none (``eqtune.tune.screen``)."""
        fn = getattr(self.model, "screen_margins", None)
        return None if fn is None else fn(self.corners, ispace)


def _bayes(model: LinkModel, corners: Sequence[int], budget: int, seed: int) -> tuple[EqPoint, int]:
    """Bayesian search (``eqtune.tune.tune``, GP optimizer) of the worst margin over ``corners``."""
    from eqtune.tune import tune

    res = tune(_WorstSource(model, corners), budget=budget, seed=seed, start=model.default_point())
    if res.interrupted:  # tune() keeps the best point on Ctrl-C; a study must not save that as final
        raise KeyboardInterrupt
    point = dict(model.default_point())
    point.update({k: float(v) for k, v in res.tuned.point.items() if k in point})
    return point, res.evaluations


def solve(combo: Combination, model: LinkModel) -> dict[str, Any]:
    """Baseline, tuned (nominal corner) and robust (worst corner) codes and margins of one combination."""
    names = list(model.corner_names)
    nc = len(names)
    space = model.space
    default = model.default_point()
    base_pc = [model.measure(ci, [default])[0] for ci in range(nc)]
    _, base_w = _worst(base_pc)

    size = len(space.grid()) if space.size() <= 10 * max(combo.tune.exhaustive_max, 1) else space.size()
    use_grid = combo.tune.method == "grid" or (combo.tune.method == "auto" and size <= combo.tune.exhaustive_max)
    if use_grid:
        grid, per = _search_grid(model, nc)
        margins = np.array([per[ci].columns["margin"] for ci in range(nc)])
        j_tuned = int(np.argmax(margins[0]))
        j_robust = int(np.argmax(margins.min(axis=0)))
        tuned_pt, robust_pt = space.to_point(grid[j_tuned]), space.to_point(grid[j_robust])
        tuned_m = per[0].row(j_tuned)
        robust_pc = [per[ci].row(j_robust) for ci in range(nc)]
        n_evals = len(grid) * nc + nc
        method = "grid"
    else:
        tuned_pt, n1 = _bayes(model, [0], combo.tune.budget, combo.seed)
        robust_pt, n2 = (tuned_pt, 0) if nc == 1 else _bayes(model, range(nc), combo.tune.budget, combo.seed + 1)
        tuned_m = model.measure(0, [tuned_pt])[0]
        robust_pc = [model.measure(ci, [robust_pt])[0] for ci in range(nc)]
        # never worse than where we started (the defaults)
        if tuned_m["margin"] < base_pc[0]["margin"]:
            tuned_pt, tuned_m = default, base_pc[0]
        if min(m["margin"] for m in robust_pc) < base_w["margin"]:
            robust_pt, robust_pc = default, base_pc
        n_evals = n1 * 1 + n2 * nc + 2 * nc
        method = "bayes"
    fec = fec_verdict(model, robust_pt, nc)
    return result_row(combo, model, method=method, n_evals=n_evals, default=default, base_pc=base_pc,
                      tuned=(tuned_pt, tuned_m), robust=(robust_pt, robust_pc), fec=fec)


def result_row(combo: Combination, model: Any, *, method: str, n_evals: int, default: EqPoint,
               base_pc: Sequence[Mapping[str, float]], tuned: tuple[EqPoint, Mapping[str, float]],
               robust: tuple[EqPoint, Sequence[Mapping[str, float]]], fec: Mapping[str, Any],
               floor_cross_check: bool = True) -> dict[str, Any]:
    """A results row from the picked codes and their per-corner metrics: the worst corners, the floor
    at the robust codes' worst corner, the verdict; ``fec``: the FEC columns (``fec_verdict``)."""
    names = list(model.corner_names)
    space = model.space
    _, base_w = _worst(base_pc)
    tuned_pt, tuned_m = tuned
    robust_pt, robust_pc = robust
    wi, robust_w = _worst(robust_pc)
    floor = (model.floor(wi, robust_pt, combo.ber_floor) if floor_cross_check else
             model.floor(wi, robust_pt, combo.ber_floor, cross_check=False))  # LinkModel.floor has no option
    deepest = ber_key(min(combo.ber_floor)) if combo.ber_floor else None
    fl = floor.get(deepest, {}) if deepest else {}
    floor_eh = fl.get("direct") if fl.get("direct") is not None else fl.get("extrapolated")
    v, reasons = verdict(combo, robust_pc, names)
    return {
        "status": "ok", "method": method, "n_evals": n_evals,
        "baseline_codes": _codes(space, default), **_metric_cols("baseline", base_w),
        "tuned_codes": _codes(space, tuned_pt), **_metric_cols("tuned", tuned_m),
        "robust_codes": _codes(space, robust_pt), **_metric_cols("robust", robust_w),
        "robust_worst_corner": names[wi],
        "corner_margins": {names[i]: {"baseline": finite_or_none(base_pc[i]["margin"]),
                                      "robust": finite_or_none(robust_pc[i]["margin"])} for i in range(len(names))},
        "floor_ber": min(combo.ber_floor) if combo.ber_floor else None,
        "floor_eh_mv": finite_or_none(floor_eh),
        "ber_floor": floor,
        **fec,
        "verdict": v, "fail_reasons": "; ".join(reasons),
    }


def fec_verdict(model: Any, point: EqPoint, n_corners: int) -> dict[str, Any]:
    """FEC verdict of the robust codes (``eqtune.eye.fec``): the RS(544,514) codeword (frame) error
    ratio from the eye's SER and DFE taps (DFE error bursts, no precoding) at every corner, the worst
    of them, and ``ai_ready`` = worst below the frame-loss target (6.2e-11, ``FRAME_LOSS_TARGET``).
    Models without DFE taps (the synthetic model) leave the columns empty."""
    fec = getattr(model, "fec", None)
    if fec is None:
        return {"fec_frame_error_ratio": None, "fec_worst_corner": None, "ai_ready": None}
    from eqtune.eye.fec import FRAME_LOSS_TARGET

    cer = [fec(ci, point) for ci in range(n_corners)]
    wi = int(np.argmax(cer))
    return {"fec_frame_error_ratio": finite_or_none(cer[wi]), "fec_worst_corner": model.corner_names[wi],
            "ai_ready": "yes" if cer[wi] < FRAME_LOSS_TARGET else "no"}


# --------------------------------------------------------------------------- the eye engine


def _engine_version() -> str:
    try:
        from importlib.metadata import version

        return version("eqtune")
    except Exception:  # noqa: BLE001 - a source checkout without metadata
        return "source"


ENGINE_VERSION = _engine_version()
_CACHE: dict[tuple, Any] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 8  # prepared engines are large; studies rarely revisit a channel x profile x corner


def _cached(key: tuple, build):
    """Per-process cache of prepared channels/engines (dask threads share it: guarded by a lock)."""
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    value = build()
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = value
    return value


def corner_conditions(ref: ChannelRef, corner: Corner) -> tuple[float | None, bool]:
    """(temperature_c, aggressors) for a channel variant at a corner.

    A corner's temperature overrides the variant's swept ``temperature_c``; crosstalk is on only when
    both the variant (``crosstalk`` sweep value, default on) and the corner want it.
    """
    temp = corner.temperature_c if corner.temperature_c is not None else ref.param("temperature_c")
    xt = bool(ref.param("crosstalk", True)) and corner.crosstalk
    return temp, xt


def build_channel(ref: ChannelRef, corner: Corner, df_hz: float | None = None):
    """The ``Channel`` of a variant at a corner, through ``eqtune.channel``'s public API; ``df_hz``: its
    frequency step (None: the definition's or file's own)."""
    temp, xt = corner_conditions(ref, corner)
    kw: dict[str, Any] = {"aggressors": xt}
    if temp is not None:
        kw["temperature_c"] = temp
    if df_hz is not None:
        kw["df_hz"] = df_hz
    if ref.kind == "content":  # sent by content hash (eqtune.study.content), on a worker
        from eqtune.study.content import channel_for_content

        return channel_for_content(ref, temperature_c=temp, aggressors=xt, df_hz=df_hz)
    if ref.kind in ("library", "file"):
        from eqtune.channel import load_channel

        return load_channel(ref.ref, **kw)
    from eqtune.study.channels import parametric_channel

    return parametric_channel(ref.ref, dict(ref.params), **kw)


class EngineModel:
    """``LinkModel`` over the eye engine: one prepared ``EyeEngine`` per corner, batch evaluation."""

    #: the part of the vertical bathtub a field measurement could count: the Q-scale fit uses only this
    FIT_BER = (1e-4, 1e-9)

    def __init__(self, combo: Combination, *, samples_per_ui: int = 32, period_ui: int | None = None,
                 channel_df_hz: float | None = None):
        self.combo = combo
        # the engine's time step and FFT period (EyeEngine; defaults 32 and 1024 UI) and the channel's
        # frequency step (None: the channel's own)
        self.samples_per_ui = int(samples_per_ui)
        self.period_ui = period_ui
        self.channel_df_hz = channel_df_hz
        self.corner_names = [c.name for c in combo.corners]
        self._metric = OBJECTIVE_METRIC[combo.tune.objective]
        self.engines = [self._engine(corner) for corner in combo.corners]
        self.space = self.engines[0].knob_space(list(combo.tune.knobs))

    def _engine(self, corner: Corner):
        combo = self.combo
        # on a worker, combo.channel.ref and a profile path name their content's digest
        # (eqtune.study.content): the key is the content, the profile and the engine's version
        key = ("engine", ENGINE_VERSION, combo.channel, corner_conditions(combo.channel, corner), combo.profile,
               combo.direction, combo.target_ber, self.samples_per_ui, self.period_ui, self.channel_df_hz)

        def build():
            from eqtune.eye import EyeEngine

            # the channel is shared by every profile/direction of this variant and corner
            channel = _cached(("channel", combo.channel, corner_conditions(combo.channel, corner), self.channel_df_hz),
                              lambda: build_channel(combo.channel, corner, self.channel_df_hz))
            period = {} if self.period_ui is None else {"period_ui": self.period_ui}
            return EyeEngine(channel, combo.profile, direction=combo.direction, ber=combo.target_ber,
                             samples_per_ui=self.samples_per_ui, **period)

        return _cached(key, build)

    def default_point(self) -> EqPoint:
        """The profile's default codes; a knob the engine adapts by default (the CTLE) takes its knob
        default when the study tunes it."""
        d = self.engines[0].default_point()
        return {k.name: float(d.get(k.name, k.default)) for k in self.space.knobs}

    def screen_margins(self, corners: Sequence[int], ispace: Any) -> np.ndarray | None:
        """The engines' stage-A eye height (mV) of every code of ``ispace.grid``, worst over ``corners``
        (``EyeEngine.screen``); None unless the objective is the eye height and the space enumerated."""
        if self._metric != "eye_height_min_mv" or ispace.grid is None:
            return None
        values, names = ispace.values(ispace.grid), list(ispace.names)
        fixed = dict(self.space.fixed)
        worst: np.ndarray = np.min([self.engines[c].screen(values, names, fixed=fixed) for c in corners], axis=0)
        return worst

    def measure(self, corner: int, points: Sequence[EqPoint]) -> list[dict[str, float]]:
        engine = self.engines[corner]
        pts = [dict(p) for p in points]
        if len(pts) == 1:
            r = engine.evaluate(pts[0])
            rows = [{k: finite_or_none(getattr(r, k)) for k in METRICS}]
        else:
            br = engine.evaluate_batch(pts)
            cols = {k: np.asarray(getattr(br, k), dtype=float) for k in METRICS}
            rows = [{k: finite_or_none(cols[k][i]) for k in METRICS} for i in range(len(pts))]
        for m in rows:
            margin = m[self._metric]
            m["margin"] = margin if margin is not None else -1e3
        return rows

    def fec(self, corner: int, point: EqPoint) -> float:
        """RS(544,514) codeword error ratio at ``corner`` (eqtune.eye.fec, DFE bursts, no precoding)."""
        from eqtune.eye.fec import fec_from_eye

        return fec_from_eye(self.engines[corner].evaluate(dict(point))).codeword_error_ratio

    def vertical_bathtub(self, corner: int, point: EqPoint, bers: np.ndarray) -> np.ndarray:
        """Eye height (mV, worst eye) at each BER, from the engine's vertical bathtub."""
        tubs = self.engines[corner].bathtubs(dict(point))
        return eye_height_from_vertical(tubs["vertical_offset_mv"], [v["ber"] for v in tubs["vertical"]], bers)

    def floor(self, corner: int, point: EqPoint, bers: Sequence[float], *,
              cross_check: bool = True) -> dict[str, dict[str, Any]]:
        """Per floor BER: the eye height (mV) direct from the statistical eye and, with ``cross_check``,
        Q-scale extrapolated from the bathtub between ``FIT_BER`` (``berfloor.extrapolate``)."""
        if not bers:
            return {}
        engine = self.engines[corner]
        fit_ber = np.logspace(np.log10(self.FIT_BER[0]), np.log10(self.FIT_BER[1]), 11)
        extra: dict[str, Any] = {}
        if cross_check:
            try:
                fit_eh = self.vertical_bathtub(corner, point, fit_ber)
                extra = extrapolate(fit_ber, fit_eh, bers)
            except (AttributeError, KeyError, TypeError):
                extra = {}
        out: dict[str, dict[str, Any]] = {}
        for b in bers:
            key = ber_key(b)
            # the statistical eye is computed from distributions: evaluate directly at the floor BER
            direct = finite_or_none(engine.evaluate(dict(point), ber=b).eye_height_min_mv)
            ex = finite_or_none(extra.get(key, {}).get("extrapolated"))
            out[key] = {"direct": direct, "extrapolated": ex,
                        "delta": None if direct is None or ex is None else finite_or_none(ex - direct),
                        "fit_r2": finite_or_none(extra.get(key, {}).get("r2"))}
        return out


def eye_height_from_vertical(offset_mv: Sequence[float], eye_bers: Sequence[Sequence[float]],
                             bers: Sequence[float]) -> np.ndarray:
    """Worst-eye opening (mV) at each BER from vertical bathtubs (BER vs threshold offset, one per eye).

    For each eye the opening at ``p`` is the span of threshold offsets whose BER is <= ``p``
    (edges interpolated on log10 BER); NaN where some eye never gets down to ``p`` (closed there;
    the Q-scale fit skips such points).
    """
    x = np.asarray(offset_mv, dtype=float)
    out = np.full(len(bers), np.inf)
    for curve in eye_bers:
        lb = np.log10(np.maximum(np.asarray(curve, dtype=float), 1e-300))
        k = int(np.argmin(lb))
        left_x, left_y = x[: k + 1], lb[: k + 1]  # falling side (BER decreases toward the centre)
        right_x, right_y = x[k:], lb[k:]
        for i, p in enumerate(np.log10(np.asarray(bers, dtype=float))):
            if lb[k] > p:  # this eye never gets down to p: closed there (not measurable as a width)
                out[i] = np.nan
                continue
            xl = float(np.interp(p, left_y[::-1], left_x[::-1]))
            xr = float(np.interp(p, right_y, right_x))
            out[i] = min(out[i], xr - xl) if not np.isnan(out[i]) else out[i]
    return out


def simulate(combo: Combination) -> dict[str, Any]:
    """The eye-engine computation of one combination (the default ``compute`` of ``run_study``).

    It honours the same test hooks as ``eqtune.study.synthetic.synthetic`` (``EQTUNE_STUDY_TEST_*``), so an interruption test
    on the real engine can hold the study part-way instead of hoping to signal it in time.
    """
    _hold_for_tests()
    if combo.tune.fidelity == "screen":
        from eqtune.study.screened import simulate_screened

        row = simulate_screened(combo)
    else:
        row = solve(combo, EngineModel(combo))
    _log_for_tests(combo)
    return row


def _hold_for_tests() -> None:
    """The ``EQTUNE_STUDY_TEST_DELAY`` sleep and the ``EQTUNE_STUDY_TEST_GATE`` wait (no-ops when unset)."""
    delay = float(os.environ.get("EQTUNE_STUDY_TEST_DELAY", "0") or 0)
    if delay > 0:
        time.sleep(delay)
    _wait_at_gate(os.environ.get("EQTUNE_STUDY_TEST_GATE"), os.environ.get("EQTUNE_STUDY_TEST_LOG"))


def _log_for_tests(combo: Combination) -> None:
    """One line per finished computation in ``EQTUNE_STUDY_TEST_LOG`` (an O_APPEND write: safe across
    worker processes)."""
    log = os.environ.get("EQTUNE_STUDY_TEST_LOG")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{combo.id}\n".encode())
        finally:
            os.close(fd)


def _wait_at_gate(gate: str | None, log: str | None) -> None:
    """Block while the test gate ``N:FILE`` is closed and N computations are logged (test hook)."""
    if not gate or not log:
        return
    count, _, path = gate.partition(":")
    try:
        with open(log, encoding="utf-8") as fh:
            done = sum(1 for _ in fh)
    except FileNotFoundError:
        done = 0
    while done >= int(count) and not os.path.exists(path):
        time.sleep(0.01)


def _worst_corner_index(combo: Combination, row: Mapping[str, str]) -> int:
    names = [c.name for c in combo.corners]
    return names.index(row["robust_worst_corner"]) if row.get("robust_worst_corner") in names else 0


def _row_point(model: LinkModel, row: Mapping[str, str]) -> EqPoint:
    import json

    point = dict(model.default_point())
    point.update({k: float(v) for k, v in json.loads(row.get("robust_codes") or "{}").items()})
    return point


def engine_detail(combo: Combination, row: Mapping[str, str]) -> dict[str, Any]:
    """Statistical eye and vertical bathtub of the robust codes at the worst corner."""
    model = EngineModel(combo)
    ci = _worst_corner_index(combo, row)
    point = _row_point(model, row)
    ber = np.logspace(-2, -16, 29)
    out: dict[str, Any] = {"floor_bers": list(combo.ber_floor),
                           "bathtub": {"ber": ber.tolist(),
                                       "eye_height_mv": model.vertical_bathtub(ci, point, ber).tolist()},
                           "fit_ber": list(EngineModel.FIT_BER)}
    dens = model.engines[ci].density(point)
    out["eye"] = {"density": np.asarray(dens["pdf"]).T.tolist(), "t_ui": dens["phase_ui"], "v_mv": dens["v_mv"]}
    return out
