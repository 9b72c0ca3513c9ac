"""The eye-engine margin source: ``SimulationSource`` measures EQ points with ``eqtune.eye.EyeEngine``
(worst case over corners), and the parsing of what it measures (objectives, knob names, corners)."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from eqtune.errors import EqtuneError, TuneError
from eqtune.jsonutil import finite_or_none
from eqtune.serdes.knobs import (
    KNOB_ALIASES,
    KNOB_DIRECTION,
    KNOB_NAMES,
    METRIC_DEFS,
    RX_FFE_KNOBS,
    SERDES,
    SIM_OBJECTIVES,
    Constraint,
    EqPoint,
    Knob,
    KnobSpace,
)
from eqtune.tune.source import ChannelSpec, Measurement
from eqtune.tune.space import IndexedSpace

if TYPE_CHECKING:  # the channel and eye rooms are imported lazily (eqtune --help stays fast)
    from pathlib import Path

    from eqtune.channel.model import Channel
    from eqtune.eye.engine import EyeEngine
    from eqtune.eye.ffe_eye import FfeEye, RxFfe
    from eqtune.eye.result import EyeResult
    from eqtune.serdes.profile import SerdesProfile

#: objective name -> (EyeResult attribute, units), from the metric registry (eqtune.serdes.knobs)
OBJECTIVES: dict[str, tuple[str, str]] = {k: (str(METRIC_DEFS[k].attribute), METRIC_DEFS[k].unit)
                                          for k in SIM_OBJECTIVES}

KNOWN_KNOBS = KNOB_NAMES
# which link direction each knob belongs to (ARCHITECTURE.md, "Link directions")
_DIRECTION_OF = KNOB_DIRECTION


def parse_objective(objective: str | Mapping[str, float]) -> dict[str, float]:
    """``"eye_height"``, ``"com"``, ``"eye_width"``, a weighted sum ``"eye_height:1,com:10"`` or a mapping."""
    if isinstance(objective, Mapping):
        weights = {str(k): float(v) for k, v in objective.items()}
    else:
        text = str(objective).strip()
        weights = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, _, w = part.partition(":")
            try:
                weights[name.strip()] = float(w) if w else 1.0
            except ValueError:
                raise TuneError(f"--objective: weight '{w}' of '{name}' is not a number") from None
    bad = [k for k in weights if k not in OBJECTIVES]
    if not weights or bad:
        raise TuneError(
            f"--objective: unknown objective {', '.join(repr(b) for b in bad) or repr(objective)}: "
            f"use {', '.join(OBJECTIVES)} or a weighted sum like 'eye_height:1,com:10'"
        )
    return weights


def resolve_knob_names(names: Sequence[str] | str | None) -> list[str] | None:
    """Expand aliases (``tx_ffe``, ``ctle``) and check names; None stays None (engine default)."""
    if names is None:
        return None
    if isinstance(names, str):
        names = [n for n in (p.strip() for p in names.split(",")) if n]
    out: list[str] = []
    for n in names:
        expanded = KNOB_ALIASES.get(n, (n,))
        for e in expanded:
            if e not in KNOWN_KNOBS:
                raise TuneError(
                    f"--knobs: unknown knob '{n}': use {', '.join(KNOWN_KNOBS)} or an alias ({', '.join(KNOB_ALIASES)})"
                )
            if e not in out:
                out.append(e)
    if not out:
        raise TuneError("--knobs: no knob given")
    return out


def _alias_members(names: Sequence[str] | str | None) -> set[str]:
    if names is None:
        return set()
    if isinstance(names, str):
        names = [p.strip() for p in names.split(",")]
    return {m for n in names if n in KNOB_ALIASES for m in KNOB_ALIASES[n]}


@dataclass(frozen=True)
class Corner:
    """One operating corner: a trace temperature (deg C) and/or crosstalk on/off.

    A corner sets exactly the conditions it names, from the through channel: crosstalk is on only in a
    corner that names ``xtalk-on`` (``aggressors=None`` loads without aggressors), and the temperature is
    the channel's reference one unless named. So on a channel with aggressors ``25C`` (through channel at
    25 C) and ``xtalk-on`` (reference temperature with crosstalk) are different corners, and
    ``85C+xtalk-on`` is the hot corner with crosstalk. Without ``--corners`` the channel is taken as its
    library entry defines it (with its aggressors)."""

    name: str
    temperature_c: float | None = None
    aggressors: bool | None = None


_TEMP = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:C|degC)\s*$", re.IGNORECASE)


def parse_corners(corners: Sequence[str] | str | None) -> list[Corner]:
    """``"25C,85C"`` / ``["25C", "xtalk-off"]`` / combined ``"85C+xtalk-on"`` -> corners (see :class:`Corner`:
    crosstalk only in the corners that name ``xtalk-on``).

    Unknown corners raise ``TuneError`` naming ``--corners``.
    """
    if corners is None:
        return []
    if isinstance(corners, str):
        corners = [c for c in (p.strip() for p in corners.split(",")) if c]
    out: list[Corner] = []
    for name in corners:
        temp: float | None = None
        agg: bool | None = None
        for part in str(name).split("+"):
            part = part.strip()
            m = _TEMP.match(part)
            low = part.lower().replace("_", "-")
            if m:
                temp = float(m.group(1))
                if not -55.0 <= temp <= 150.0:
                    raise TuneError(f"--corners: temperature {part} is outside -55..150 C")
            elif low in ("xtalk-on", "xtalk", "crosstalk-on"):
                agg = True
            elif low in ("xtalk-off", "no-xtalk", "crosstalk-off"):
                agg = False
            else:
                raise TuneError(
                    f"--corners: unknown corner '{name}': use temperatures like 25C or 85C, xtalk-on, "
                    "xtalk-off, or combinations like 85C+xtalk-on"
                )
        out.append(Corner(str(name), temp, agg))
    return out


class SimulationSource:
    """Margins from the statistical-eye engine, worst case over corners.

    ``channel``: a library name / file path (``load_channel``) or a ``Channel``. ``knobs``: names
    to tune (aliases ``tx_ffe``, ``ctle``); the rest are fixed at their defaults or ``fixed``.
    ``objective``: ``eye_height`` (min PAM4 eye height at the target BER, mV), ``com`` (dB),
    ``eye_width`` (UI), or a weighted sum (``"eye_height:1,com:10"`` / ``{"eye_height": 1, ...}``).
    ``corners``: e.g. ``["25C", "85C"]`` or ``["xtalk-off", "xtalk-on"]``; the margin is the minimum
    over corners (robust tuning), every corner's value is in ``metrics``. ``direction``: the eye
    engine's link direction; by default from the knobs (module Rx-output knobs -> ``host_rx``, TX FFE /
    ``tx_eq`` -> ``module_rx``); knobs of both directions give the worse of the two links.
    ``rx_ffe``: tune on the eye of the DSP receiver (CTLE -> MMSE Rx FFE -> DFE, ``eqtune.eye.ffe_eye``)
    instead of the engine's CTLE + DFE receiver, in the serdes direction; the Rx FFE override knobs
    (``rx_ffe_pre1`` ...) may then be tuned or fixed (their default: the code nearest the receiver's own
    adaptation at the start point), the objective is the eye height, and every measurement's metrics carry
    the full Rx FFE / DFE tap vectors.
    """

    def __init__(self, channel: ChannelSpec, knobs: Sequence[str] | str | None = None, *,
                 objective: str | Mapping[str, float] = "eye_height", corners: Sequence[str] | str | None = None,
                 ber: float = 1e-6, fixed: Mapping[str, float] | None = None,
                 profile: str | SerdesProfile | None = None, direction: str | None = None,
                 channel_options: Mapping[str, Any] | None = None, rx_ffe: RxFfe | None = None) -> None:
        """``channel_options``: extra ``load_channel`` arguments (``lane``, ``extrapolate``) for a channel
        given by name or path, kept for every corner's re-load."""
        from eqtune.eye import EyeEngine

        self._channel_options = dict(channel_options or {})
        self.weights = parse_objective(objective)
        self.objective = "+".join(f"{w:g}*{k}" if w != 1 else k for k, w in self.weights.items())
        units = {OBJECTIVES[k][1] for k in self.weights}
        self.units = units.pop() if len(units) == 1 else ""
        names = resolve_knob_names(knobs)
        from_alias = _alias_members(knobs)
        self.corners = parse_corners(corners)
        self.ber = float(ber)
        fixed = {str(k): float(v) for k, v in (fixed or {}).items()}
        bad_fixed = [k for k in fixed if k not in KNOWN_KNOBS]
        if bad_fixed:
            raise TuneError(f"--fix: unknown knob(s) {', '.join(bad_fixed)}: use {', '.join(KNOWN_KNOBS)}")

        # the Rx FFE overrides are the DSP receiver model's, not the engine's: split them off
        self.rx_ffe = rx_ffe
        rx_names: list[str] = [n for n in (names or []) if n in RX_FFE_KNOBS]
        self._rx_fixed: dict[str, float] = {k: v for k, v in fixed.items() if k in RX_FFE_KNOBS}
        fixed = {k: v for k, v in fixed.items() if k not in RX_FFE_KNOBS}
        direction = _check_rx_ffe(rx_ffe, rx_names + list(self._rx_fixed), direction, self.weights)
        if names is not None and rx_names:
            names = [n for n in names if n not in RX_FFE_KNOBS]
        base = self._load(channel, None, self._channel_options)
        self.channel = base
        # directions -> tuned knob names
        groups: dict[str, list[str] | None]
        if direction is not None:
            groups = {direction: names}
        elif names is None:
            groups = {"host_rx": None}
        else:
            by_dir: dict[str, list[str]] = {}
            for n in names:
                by_dir.setdefault(_DIRECTION_OF[n], []).append(n)
            groups = {d: dn for d, dn in by_dir.items()}
        self._groups = groups
        # one engine per (corner, direction); the nominal channel when there are no corners
        corner_list = self.corners or [Corner("nominal")]
        self._engines: list[tuple[str, str, EyeEngine]] = []
        for c in corner_list:
            ch = base if (c.temperature_c is None and c.aggressors is None) else self._load(channel, c, self._channel_options)
            for d in groups:
                try:
                    eng = EyeEngine(ch, profile, direction=d, ber=self.ber)
                except EqtuneError:
                    raise
                except (TypeError, ValueError) as exc:
                    raise TuneError(f"--corners: the eye engine cannot model corner '{c.name}' ({exc})") from exc
                self._engines.append((c.name, d, eng))
        # knobs that came from an alias (tx_ffe, ctle) and that this profile does not have are dropped
        for d, dn in list(groups.items()):
            if dn is not None and from_alias:
                have = set(next(e for _, dd, e in self._engines if dd == d).knob_names)
                groups[d] = [n for n in dn if n in have or n not in from_alias]
        if names is not None:
            names = [n for n in names if any(n in (dn or []) for dn in groups.values())]
        # the tuned space: union of the per-direction spaces, in the order asked
        space_knobs: list[Knob] = []
        constraints: list[Constraint] = []
        fixed_all: dict[str, float] = {}
        for d, dn in groups.items():
            eng = next(e for _, dd, e in self._engines if dd == d)
            dfixed = {k: v for k, v in fixed.items() if dn is None or k not in dn}
            try:
                sp = eng.knob_space(dn, fixed=dfixed or None)
            except EqtuneError as exc:
                raise TuneError(f"--knobs: {exc}") from exc
            space_knobs.extend(sp.knobs)
            constraints.extend(_sub_constraint(c, sp.names) for c in sp.constraints)
            fixed_all.update(sp.fixed)
        if rx_ffe is not None:
            from eqtune.eye.ffe_eye import held_taps

            held_taps(self._rx_fixed, rx_ffe, SERDES)  # --fix codes checked (one line) before any eye
            fixed_all.update(self._rx_fixed)
            space_knobs.extend(self._rx_ffe_knobs(rx_names, KnobSpace(tuple(space_knobs), (), dict(fixed_all))))
            names = None if names is None else names + rx_names
        if names is not None:
            order = {n: i for i, n in enumerate(names)}
            space_knobs.sort(key=lambda k: order.get(k.name, len(order)))
        self.space = KnobSpace(tuple(space_knobs), tuple(constraints), fixed_all)
        self._default = self._default_point()
        self.deterministic = True
        self.calls = 0

    # -- construction helpers ------------------------------------------------------------------
    def _rx_ffe_knobs(self, rx_names: Sequence[str], engine_space: KnobSpace) -> list[Knob]:
        """The tuned Rx FFE override knobs, each defaulting to the code nearest the receiver's own MMSE
        adaptation at the engine knobs' default point (the others held as ``--fix`` says)."""
        import dataclasses

        from eqtune.eye.ffe_eye import rx_ffe_knob

        knobs = [rx_ffe_knob(n) for n in rx_names]
        if not knobs:
            return []
        eng = self._engines[0][2]
        start = {**engine_space.fixed, **{k.name: float(k.default) for k in engine_space.knobs}}
        adapted = self._ffe_eye(eng, start).knob_codes()
        return [dataclasses.replace(k, default=float(adapted.get(k.name, k.default))) for k in knobs]

    def _ffe_eye(self, eng: EyeEngine, point: Mapping[str, float]) -> FfeEye:
        """The DSP receiver's eye at ``point`` (its Rx FFE override codes held, the rest adapted)."""
        from eqtune.eye.ffe_eye import ffe_eye

        held: dict[str, float] = {**self._rx_fixed, **{k: float(v) for k, v in point.items() if k in RX_FFE_KNOBS}}
        return ffe_eye(eng, {k: v for k, v in point.items() if k not in RX_FFE_KNOBS}, rx=self.rx_ffe,
                       ber=self.ber, held=held)

    @staticmethod
    def _load(channel: ChannelSpec, corner: Corner | None, options: Mapping[str, Any] | None = None) -> Channel:
        from eqtune.channel import load_channel

        if not isinstance(channel, str | bytes) and not hasattr(channel, "__fspath__"):
            if corner is None:
                return channel
            # a Channel object: re-load its library entry / file at the corner's conditions
            name = getattr(channel, "name", None) or getattr(channel, "source", None)
            if not name:
                raise TuneError(f"--corners: corner '{corner.name}' needs a channel that can be re-loaded by name")
            channel = name
        kw: dict[str, Any] = dict(options or {})
        if corner is not None:
            if corner.temperature_c is not None:
                kw["temperature_c"] = corner.temperature_c
            kw["aggressors"] = bool(corner.aggressors)  # crosstalk only where the corner names it (Corner)
        try:
            ch = load_channel(cast("str | Path", channel), **kw)  # a name or a path (load_channel takes str(path))
        except EqtuneError as exc:
            if corner is None:
                raise
            raise TuneError(f"--corners: the channel cannot model corner '{corner.name}': {exc}") from exc
        if corner is not None and corner.aggressors and not getattr(ch, "aggressors", ()):
            raise TuneError(f"--corners: corner '{corner.name}' needs crosstalk, but channel '{channel}' has no aggressors")
        return ch

    def _default_point(self) -> EqPoint:
        p: EqPoint = dict(self.space.fixed)
        for _, _, eng in self._engines:
            fn = getattr(eng, "default_point", None)
            if fn is not None:
                for k, v in fn().items():
                    p.setdefault(k, float(v))
        for k in self.space.knobs:
            p.setdefault(k.name, float(k.default))
        out = dict(self.space.fixed)
        for k in self.space.knobs:
            try:
                out[k.name] = k.check(float(p[k.name]))
            except EqtuneError:
                out[k.name] = float(k.default)
        return out

    def default_point(self) -> EqPoint:
        return dict(self._default)

    # -- measuring -----------------------------------------------------------------------------
    def _engine_point(self, point: Mapping[str, float], direction: str) -> EqPoint:
        if len(self._groups) == 1:
            return {k: float(v) for k, v in point.items()}
        return {k: float(v) for k, v in point.items() if _DIRECTION_OF.get(k, direction) == direction}

    def _score(self, res: Any) -> tuple[float, dict[str, float]]:
        vals = {}
        score = 0.0
        for k, w in self.weights.items():
            if k == "fec":
                from eqtune.eye.fec import fec_objective

                v = fec_objective(res)
            else:
                v = float(getattr(res, OBJECTIVES[k][0]))
            if not math.isfinite(v):
                v = -1e3  # defensive: the engine promises finite ranking values
            vals[k] = v
            score += w * v
        return score, vals

    def measure(self, point: EqPoint) -> Measurement:
        return self.measure_batch([point])[0]

    def measure_batch(self, points: Sequence[EqPoint]) -> list[Measurement]:
        t0 = time.perf_counter()
        n = len(points)
        worst = np.full(n, np.inf)
        per: list[dict[str, Any]] = [{} for _ in range(n)]
        for cname, d, eng in self._engines:
            pts = [self._engine_point(p, d) for p in points]
            # the FEC objective needs each point's DFE taps: full evaluations, not the batch rows
            if self.rx_ffe is not None:
                results: list[Any] = [self._ffe_eye(eng, p) for p in pts]
            else:
                results = [eng.evaluate(p) for p in pts] if "fec" in self.weights else _evaluate_many(eng, pts)
            for i, res in enumerate(results):
                s, vals = self._score(res)
                label = cname if len(self._groups) == 1 else f"{cname}/{d}"
                ber_est = getattr(res, "ser_estimate" if self.rx_ffe is not None else "ber_estimate", None)
                per[i][label] = {"margin": s, **vals, "ber_estimate": finite_or_none(ber_est)}
                if self.rx_ffe is not None:
                    per[i][label]["rx_ffe"] = _rx_ffe_metrics(res)
                worst[i] = min(worst[i], s)
        cost = (time.perf_counter() - t0) / max(n, 1)
        self.calls += n
        out = []
        for i in range(n):
            worst_label = min(per[i], key=lambda k: per[i][k]["margin"])
            metrics: dict[str, Any] = {"objective": self.objective, "units": self.units,
                                       "worst_corner": worst_label, **per[i][worst_label]}
            if len(per[i]) > 1:
                metrics["corners"] = per[i]
            out.append(Measurement(float(worst[i]), metrics, cost))
        return out

    @property
    def screens(self) -> bool:
        """Whether ``screen_margins`` has a screen to give: the objective is the eye height alone."""
        return self.weights == {"eye_height": 1.0} and self.rx_ffe is None  # the screen is the CTLE + DFE eye

    def screen_margins(self, ispace: IndexedSpace) -> np.ndarray | None:
        """The engine's fast stage-A eye height (mV) of every feasible code of ``ispace.grid`` (the worst
        corner's), for the GP's prior mean (``eqtune.tune.screen``); None when the objective is not the
        eye height alone or the space is not enumerated."""
        if ispace.grid is None or not self.screens:
            return None
        values = ispace.values(ispace.grid)
        names = list(ispace.names)
        worst = np.full(len(values), np.inf)
        for _, d, eng in self._engines:
            cols = [i for i, n in enumerate(names) if len(self._groups) == 1 or _DIRECTION_OF.get(n, d) == d]
            fixed = self._engine_point(dict(self.space.fixed), d)
            worst = np.minimum(worst, eng.screen(values[:, cols], [names[i] for i in cols], fixed=fixed))
        return worst

    def evaluate(self, point: EqPoint) -> EyeResult:
        """The full ``EyeResult`` of the worst corner at ``point`` (for reports and plots)."""
        worst, res_w, first = np.inf, None, None
        for _, d, eng in self._engines:
            res = eng.evaluate(self._engine_point(point, d))
            first = res if first is None else first
            s, _ = self._score(res)
            if s < worst:
                worst, res_w = s, res
        # no score below +inf (NaN): the first corner's result, as engine_for() gives the first engine
        out = res_w if res_w is not None else first
        assert out is not None  # there is at least one engine (the nominal corner)
        return out

    def engine_for(self, point: EqPoint) -> EyeEngine:
        """The engine of the worst corner at ``point`` (for the eye plot)."""
        worst, eng_w = np.inf, self._engines[0][2]
        for _, d, eng in self._engines:
            s, _ = self._score(eng.evaluate(self._engine_point(point, d)))
            if s < worst:
                worst, eng_w = s, eng
        return eng_w


def _check_rx_ffe(rx_ffe: RxFfe | None, rx_knobs: Sequence[str], direction: str | None,
                  weights: Mapping[str, float]) -> str | None:
    """The direction of a tune with the DSP receiver model (serdes), or one clear line why not."""
    if rx_ffe is None:
        if rx_knobs:
            raise TuneError(f"{', '.join(rx_knobs)} override(s) taps of the DSP receiver's Rx FFE: also give "
                            "--rx-ffe TAPS,PRE (e.g. --rx-ffe 15,6)")
        return direction
    if direction not in (None, SERDES):
        raise TuneError(f"--rx-ffe tunes the host SerDes receiver (direction serdes), not {direction}: "
                        "use --direction serdes")
    if dict(weights) != {"eye_height": 1.0}:
        raise TuneError("--rx-ffe tunes the DSP receiver's eye height: use --objective eye_height")
    return SERDES


def _rx_ffe_metrics(fe: FfeEye) -> dict[str, Any]:
    """What a measurement of the DSP receiver reports: its override codes and the full tap vectors."""
    return {"knobs": fe.knob_codes(), "held": sorted(fe.held), "ffe_taps": fe.ffe_taps, "ffe_n_pre": fe.n_pre,
            "ffe_taps_per_cursor_tap": fe.taps_per_cursor_tap(), "dfe_taps": fe.dfe_taps, "fom_db": fe.fom_db,
            "reference_eye_height_min_mv": fe.reference_eye_height_min_mv}


def _evaluate_many(eng: Any, points: list[EqPoint]) -> list[Any]:
    """EyeResult-like objects for ``points`` (vectorized ``evaluate_batch`` when available)."""
    batch = getattr(eng, "evaluate_batch", None)
    if batch is not None and len(points) > 1:
        br = batch(points)
        return [_BatchRow(br, i) for i in range(len(points))]
    return [eng.evaluate(p) for p in points]


class _BatchRow:
    """Row ``i`` of a ``BatchResult`` (attributes are numpy arrays over points)."""

    def __init__(self, br: Any, i: int) -> None:
        self._br, self._i = br, i

    def __getattr__(self, name: str) -> Any:
        arr = getattr(self._br, name)
        try:
            return arr[self._i]
        except (TypeError, IndexError):
            return arr


def _sub_constraint(c: Constraint, names: Sequence[str]) -> Constraint:
    """A constraint of a sub-space, applied to the columns of the union space it belongs to."""
    names = tuple(names)

    def wrapped(matrix: np.ndarray, all_names: Sequence[str]) -> np.ndarray:
        cols = [list(all_names).index(n) for n in names]
        ret: np.ndarray = c(np.asarray(matrix)[:, cols], names)
        return ret

    return wrapped
