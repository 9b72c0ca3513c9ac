"""``LiveSource``: a ``MarginSource`` over a real (or emulated) CMIS module and a measurement.

Each evaluation: validate the codes against the module's advertised capabilities (no I/O), write
them (``CmisModule.apply_eq``: stage, apply, poll, read back, restore on failure), wait ``settle_s``,
then count bit errors for ``dwell_s`` with the module's own PRBS checker (``CmisModule.module_ber``,
CMIS pages 13h/14h, all lanes at once) or an external BERT (``eqtune.drivers.instrument``).

Margin (larger is better), ``metric``:

* ``"ber"`` (default): ``-log10(BER)`` with a floor at the counting limit,
  ``margin = -log10(max(errors, k0) / bits)`` where ``k0 = -ln(0.05) = 2.996`` is the 95 % upper bound
  of a zero-error count (Garwood; see ``eqtune.drivers.measurement``). With zero errors the margin is
  therefore the 95 % bound ``-log10(ber_upper95)``: a short dwell never claims a better BER than it
  could have seen, and the margin is monotonic in the error count (1 error never beats 0).
* ``"q_db"``: the same floored BER as a Q factor in dB, ``20 log10(sqrt(2) erfcinv(2 BER))``
  (Gaussian tail, NRZ-equivalent; a monotonic map that is closer to linear in SNR, which helps the GP).
* ``"eye_height"``: the minimum PAM4 eye height (mV) from a sampling scope (instrument ``measure_eye``).

The command line (``eqtune tune --live``, ``eqtune session resume``) is :mod:`eqtune.cli.live_cmd`; the
journaled tuning loop is :class:`eqtune.session.live.LiveTuner`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eqtune.errors import EqRangeError, InputError, InstrumentError, ModuleError, TuneError
from eqtune.serdes.knobs import LIVE_METRICS as METRICS
from eqtune.serdes.knobs import (
    MODULE_KNOBS,
    MODULE_RX_OUT_KNOBS,
    MODULE_TX_IN_KNOBS,
    TX_EQ,
    EqPoint,
    Knob,
    KnobSpace,
)
from eqtune.tune.dwell import SequentialDwell

if TYPE_CHECKING:
    from eqtune.tune.source import Measurement

CHUNK_S = 2.0  # longest single BER gate when the caller can abort (long dwells are split and summed)
CLOSED_EYE_MV = -10.0  # margin of an eye the scope cannot measure (closed): below every open eye
K0_95 = -math.log(0.05)  # 2.996: 95 % upper bound of a zero-error Poisson count (Garwood)


def ber_floor(bits: int, errors: int) -> float:
    """BER with the counting-limit floor: ``max(errors, 2.996) / bits``."""
    if bits <= 0:
        raise ModuleError("the BER measurement counted no bits: check that the PRBS checker/BERT is running "
                          "and the dwell is long enough")
    return min(0.5, max(float(errors), K0_95) / float(bits))


def margin_of(bits: int, errors: int, metric: str = "ber") -> float:
    """Margin from a bit-error count (see the module docstring)."""
    ber = ber_floor(bits, errors)
    if metric == "ber":
        return -math.log10(ber)
    if metric == "q_db":
        from scipy.special import erfcinv

        q = math.sqrt(2.0) * float(erfcinv(2.0 * ber))
        return 20.0 * math.log10(max(q, 1e-6))
    raise TuneError(f"metric '{metric}' is not a BER metric: use one of ber, q_db")


def counts_variance(counts: Mapping[str, Any] | None, metric: str = "ber") -> float | None:
    """Variance of a BER-metric margin from its own error count (``counts``: ``bits``, ``errors``), by the
    delta method on the binomial count (``eqtune.tune.recommend.margin_variance``); None when the metric
    is not a count (``eye_height``) or the count is missing. Sessions pass it to the optimizer with each
    observation (``GPOptimizer.tell(point, margin, variance)``), live and when a journal is replayed."""
    if metric not in ("ber", "q_db") or not counts:
        return None
    bits, errors = counts.get("bits"), counts.get("errors")
    if bits is None or errors is None or int(bits) <= 0:
        return None
    from eqtune.tune.recommend import margin_variance

    return margin_variance(min(int(errors), int(bits)), int(bits), metric)


def _counts(c: Any) -> dict[str, Any]:
    if hasattr(c, "to_dict"):
        out: dict[str, Any] = c.to_dict()
        return out
    return dict(c)


@dataclass
class LiveReading:
    """One lane's measurement at one set of codes."""

    lane: int
    codes: dict[str, int]
    margin: float
    counts: dict[str, Any] = field(default_factory=dict)  # bits, errors, ber, ber_upper95, dwell_s
    metrics: dict[str, Any] = field(default_factory=dict)
    cost_s: float = 0.0

    def variance(self, metric: str = "ber") -> float | None:
        """Variance of ``margin`` from the error count (``counts_variance``); None for a scope reading."""
        return counts_variance(self.counts, metric)

    def to_dict(self) -> dict[str, Any]:
        return {"lane": self.lane, "codes": dict(self.codes), "margin": self.margin, "counts": self.counts,
                "metrics": self.metrics, "cost_s": round(self.cost_s, 6)}


def check_module_knob_names(knobs: Sequence[str]) -> None:
    """Refuse knobs a live session cannot set (anything but the module's codes, ``MODULE_KNOBS``):
    a ``TuneError`` naming them. Needs no module: ``LiveConfig.check`` runs it before any I/O."""
    unknown = [k for k in knobs if k not in MODULE_KNOBS]
    if unknown:
        raise TuneError(f"--knobs {','.join(unknown)}: live tuning sets module codes only "
                        f"({', '.join(MODULE_KNOBS)}); tune the others in simulation (--sim)")


def module_knob_space(
    caps: Any,
    *,
    knobs: Sequence[str] | None = None,
    start: Mapping[str, int] | None = None,
) -> KnobSpace:
    """The module codes within the advertised capabilities (page 01h) as a ``KnobSpace``.

    ``knobs``: which to tune (default: every supported knob with more than one allowed code);
    the others stay at ``start`` (the lane's original codes).
    """
    allowed = {k: tuple(int(v) for v in vals) for k, vals in caps.knob_values().items() if vals}
    if knobs:
        check_module_knob_names(knobs)
        unsupported = [k for k in knobs if len(allowed.get(k, ())) < 1]
        if unsupported:
            raise TuneError(f"--knobs {','.join(unsupported)}: the module does not support "
                            f"{'it' if len(unsupported) == 1 else 'them'} (capabilities page 01h)")
        names = [k for k in MODULE_KNOBS if k in knobs]
    else:
        names = [k for k in MODULE_KNOBS if len(allowed.get(k, ())) > 1]
    if not names:
        raise TuneError("the module advertises no adjustable EQ codes (page 01h); nothing to tune")
    start = dict(start or {})
    kn = []
    for name in names:
        vals = allowed[name]
        default = start.get(name, vals[0])
        if default not in vals:
            default = vals[0]
        kn.append(Knob(name, tuple(float(v) for v in vals), float(default), "code",
                       f"module {name} code (CMIS page 10h/11h)"))
    fixed = {k: float(v) for k, v in start.items() if k not in names and k in allowed}
    return KnobSpace(tuple(kn), fixed=fixed)


def default_knobs(caps: Any, instrument: Any = None, metric: str = "ber") -> list[str] | None:
    """The knobs a measurement can see (``None`` = every adjustable knob).

    The module's own PRBS checker (pages 13h/14h) counts errors on the host -> module direction, which
    only the Tx input EQ (``tx_eq``) changes; a scope on the host side sees the module's Rx output
    (``rx_pre``, ``rx_post``, ``rx_amp``); a BERT through an optical loopback sees both (every knob).
    """
    allowed = caps.knob_values()
    if instrument is None:
        pref: tuple[str, ...] | None = MODULE_TX_IN_KNOBS
    elif metric == "eye_height" or getattr(instrument, "kind", "") == "scope":
        pref = MODULE_RX_OUT_KNOBS
    else:
        pref = None
    if pref is None:
        return None
    names = [k for k in pref if len(allowed.get(k, ())) > 1]
    return names or None


def tx_adaptive_lanes(module: Any, lanes: Sequence[int]) -> list[int]:
    """Lanes whose Tx input adaptive EQ is on (page 11h), where the driver can tell."""
    fn = getattr(module, "tx_adaptive_enabled", None)
    if not callable(fn):
        return []
    try:
        on = fn()
    except Exception as exc:
        # never journal a failed read as "adaptive off": a restore would then leave it off
        from eqtune.errors import ModuleError

        raise ModuleError(f"could not read the Tx input adaptive EQ state (page 11h byte 214): {exc}; "
                          "nothing was written -- check the module connection and retry") from exc
    return [ln for ln in lanes if on.get(ln)]


def instrument_channels(instrument: Any, metric: str = "ber") -> int:
    """Lanes an instrument counts errors on in one dwell: a multi-channel BERT (``channels`` > 1 and
    ``measure_ber_lanes(lanes, dwell_s) -> {lane: BerCount}``, every channel gated together) measures
    that many; any other instrument one lane at a time."""
    if instrument is None or metric not in ("ber", "q_db"):
        return 1
    n = getattr(instrument, "channels", 1)
    if not isinstance(n, int) or n < 2 or not callable(getattr(instrument, "measure_ber_lanes", None)):
        return 1
    return n


def lane_groups(lanes: Sequence[int], instrument: Any = None, *, parallel: bool | None = None,
                metric: str = "ber") -> list[list[int]]:
    """Lanes measured together, in order: the module's checker counts every lane at once; a BERT with
    ``k`` channels counts ``k`` lanes per dwell; a scope or a one-channel BERT one lane per dwell.
    ``parallel=False`` measures lane by lane anyway. The number of groups is the number of dwells one
    evaluation of the whole module takes."""
    lanes = [int(x) for x in lanes]
    if parallel is False:
        return [[ln] for ln in lanes]
    if instrument is None:
        return [lanes]
    k = instrument_channels(instrument, metric)
    return [lanes[i:i + k] for i in range(0, len(lanes), k)]


def point_codes(point: Mapping[str, float]) -> dict[str, int]:
    """Integer module codes of an ``EqPoint`` (only module knobs)."""
    out: dict[str, int] = {}
    for k, v in point.items():
        if k in MODULE_KNOBS:
            iv = int(round(float(v)))
            if abs(iv - float(v)) > 1e-9:
                raise EqRangeError(f"{k}={v} is not an integer code")
            out[k] = iv
    return out


class LiveSource:
    """A ``MarginSource`` over a module and a BER/eye measurement.

    ``module``: an open ``CmisModule``. ``lanes``: lanes measured together (the module's checker reads
    them in parallel; an instrument reads one lane). ``instrument``: an open instrument or ``None``
    for the module's own checker. ``space`` is the knob space of ``lanes[0]`` (all lanes of one
    module share capabilities). ``measure(point)`` implements the ``MarginSource`` contract for the
    first lane; ``apply``/``read`` are the two halves the session loop journals between.
    """

    def __init__(
        self,
        module: Any,
        lanes: Sequence[int] | int,
        *,
        instrument: Any = None,
        dwell_s: float = 1.0,
        settle_s: float = 0.0,
        metric: str = "ber",
        knobs: Sequence[str] | None = None,
        start: Mapping[int, Mapping[str, int]] | None = None,
    ) -> None:
        if metric not in METRICS:
            raise TuneError(f"unknown live metric '{metric}': use one of {', '.join(METRICS)}")
        if metric == "eye_height" and instrument is None:
            raise TuneError("metric eye_height needs a sampling scope: give --instrument")
        if dwell_s <= 0:
            raise InputError(f"--dwell must be > 0 s (got {dwell_s})")
        self.module = module
        self.lanes = [int(lanes)] if isinstance(lanes, int) else [int(x) for x in lanes]
        if not self.lanes:
            raise TuneError("no lanes to tune: give --lane N")
        self.instrument = instrument
        if instrument is not None and len(self.lanes) > instrument_channels(instrument, metric):
            raise TuneError(f"the instrument measures {instrument_channels(instrument, metric)} lane(s) at a time: "
                            f"{len(self.lanes)} lanes cannot be measured together; tune them in groups")
        self.dwell_s = float(dwell_s)
        self.settle_s = float(settle_s)
        self.metric = metric
        self.caps = module.capabilities()
        for ln in self.lanes:
            if not 1 <= ln <= int(self.caps.lanes):
                raise TuneError(f"--lane {ln}: the module has lanes 1..{self.caps.lanes}")
        self.start = {ln: dict((start or {}).get(ln) or module.active_eq(ln)) for ln in self.lanes}
        self.adaptive_lanes = tx_adaptive_lanes(module, self.lanes)
        can_reenable = callable(getattr(module, "enable_tx_adaptive", None))
        if not knobs:
            knobs = default_knobs(self.caps, instrument, metric)
            if self.adaptive_lanes and not can_reenable:
                names = list(knobs) if knobs else [k for k in MODULE_KNOBS if len(self.caps.knob_values().get(k, ())) > 1]
                knobs = [k for k in names if k != TX_EQ]
                if not knobs:
                    raise TuneError(
                        f"lane(s) {','.join(map(str, self.adaptive_lanes))} run the module's Tx input adaptive EQ, "
                        "and the module's own checker sees only the Tx input: there is nothing eqtune can tune "
                        "safely (a fixed tx_eq code would switch adaptive EQ off, and this driver cannot switch it "
                        "back on). Measure with a BERT or scope (--instrument) to tune the Rx output codes")
        elif TX_EQ in knobs and self.adaptive_lanes and not can_reenable:
            raise TuneError(
                f"--knobs tx_eq: lane(s) {','.join(map(str, self.adaptive_lanes))} run Tx input adaptive EQ; writing "
                "a fixed tx_eq turns it off and this driver cannot turn it back on, so the original state could "
                "not be restored. Leave tx_eq out, or disable adaptive EQ on the host/module first")
        self.space = module_knob_space(self.caps, knobs=knobs, start=self.start[self.lanes[0]])
        self.knobs = self.space.names
        self.writes = 0
        self.overhead_s = 0.0  # time spent outside the dwell (validate, write, apply, read back, settle)

    @property
    def parallel(self) -> bool:
        return self.instrument is None or len(self.lanes) > 1

    # -- the two halves ------------------------------------------------------------------------
    def codes_for(self, lane: int, point: Mapping[str, float]) -> dict[str, int]:
        """Full codes of a lane for a point: the lane's start codes with the point's knobs."""
        codes = {k: int(v) for k, v in self.start.get(lane, {}).items()}
        codes.update(point_codes(point))
        return codes

    def validate(self, codes: Mapping[int, Mapping[str, int]]) -> dict[int, dict[str, int]]:
        """Check codes against the capabilities (no I/O); returns them as plain ints."""
        allowed = self.caps.knob_values()
        clean: dict[int, dict[str, int]] = {}
        for lane, c in codes.items():
            lane = int(lane)
            if lane not in self.lanes and lane not in self.start:
                raise EqRangeError(f"lane {lane} is not being tuned here (lanes {self.lanes})")
            clean[lane] = {}
            for k, v in c.items():
                iv = int(v)
                if iv not in allowed.get(k, ()):
                    vals = allowed.get(k, ())
                    raise EqRangeError(f"lane {lane} {k}={iv} is outside the module's capabilities"
                                       + (f" ({min(vals)}..{max(vals)})" if vals else " (not supported)"))
                clean[lane][k] = iv
        self.module.validate_eq(clean)
        return clean

    def apply(self, codes: Mapping[int, Mapping[str, int]]) -> float:
        """Validate, write, apply (read back inside ``apply_eq``), settle. Returns seconds spent.

        Only the tuned knobs are written: the others never change, and leaving ``tx_eq`` out keeps
        the module's Tx input adaptive EQ as it was (the driver turns adaptive EQ off for any lane
        whose ``tx_eq`` is written)."""
        t0 = time.perf_counter()
        clean = self.validate(codes)
        write = {ln: {k: v for k, v in c.items() if k in self.knobs} for ln, c in clean.items()}
        write = {ln: c for ln, c in write.items() if c}
        if write:
            self.module.apply_eq(write)
        self.writes += 1
        if self.settle_s > 0:
            time.sleep(self.settle_s)
        dt = time.perf_counter() - t0
        self.overhead_s += dt
        return dt

    def _counted(self, dwell: float, count: Any, stop: Any) -> dict[int, Any]:
        """Error counts over ``dwell`` in gates of at most ``CHUNK_S`` (summed), so that ``stop()``
        (which raises to abort) is honoured within seconds even when a BER target needs minutes."""
        if stop is None or dwell <= CHUNK_S * 1.5:
            first: dict[int, Any] = count(dwell)
            return first
        n = int(math.ceil(dwell / CHUNK_S))
        total: dict[int, Any] = {}
        for _ in range(n):
            stop()
            part = count(dwell / n)
            total = {ln: (total[ln] + c if ln in total else c) for ln, c in part.items()}
        return total

    def _ber_counter(self) -> Any:
        """``count(dwell) -> {lane: BerCount}`` for this source's lanes (module checker or BERT)."""
        if self.instrument is None:
            return lambda d: self.module.module_ber(list(self.lanes), d)
        if len(self.lanes) > 1:  # a multi-channel BERT: every channel gated together
            return lambda d: self.instrument.measure_ber_lanes(list(self.lanes), d)
        ln = self.lanes[0]
        return lambda d: {ln: _instrument_ber(self.instrument, ln, d)}

    def _sequential(self, dwell: float, count: Any, stop: Any, test: SequentialDwell,
                    refs: Mapping[int, tuple[int, int] | None]) -> tuple[dict[int, Any], dict[int, dict[str, Any]]]:
        """Counts over at most ``dwell``, looked at after each share of ``test.fractions()``; ends at
        the first look where every lane's verdict against its reference is decided. Returns the summed
        counts and per lane the record of every partial dwell: ``looks`` ([bits, errors] cumulative at
        each look), ``verdict`` (worse | better | None) and ``dwell_full_s`` (the dwell it may take)."""
        total: dict[int, Any] = {}
        looks: dict[int, list[list[int]]] = {ln: [] for ln in self.lanes}
        verdicts: dict[int, str | None] = {ln: None for ln in self.lanes}
        done = 0.0
        for f in test.fractions():
            part = self._counted(dwell * (f - done), count, stop)
            done = f
            total = {ln: (total[ln] + c if ln in total else c) for ln, c in part.items()}
            for ln in self.lanes:
                if ln not in total:
                    break
                c = total[ln]
                looks[ln].append([int(c.bits), int(c.errors)])
                ref = refs.get(ln)
                verdicts[ln] = test.verdict((int(c.bits), int(c.errors)),
                                            None if ref is None else (int(ref[0]), int(ref[1])))
            if all(test.ends_dwell(verdicts[ln]) for ln in self.lanes):
                break
        info = {ln: {"looks": looks[ln], "verdict": verdicts[ln], "dwell_full_s": float(dwell)} for ln in self.lanes}
        return total, info

    def read(self, dwell_s: float | None = None, codes: Mapping[int, Mapping[str, int]] | None = None,
             stop: Any = None, refs: Mapping[int, tuple[int, int] | None] | None = None,
             test: SequentialDwell | None = None) -> dict[int, LiveReading]:
        """Measure every lane for ``dwell_s`` (default: the source's dwell). ``stop``: called between
        gates of a long dwell; it raises to abandon the measurement (abort).

        ``refs`` (per lane the (bits, errors) of the code this one is compared with, the incumbent) and
        ``test``: a BER dwell that ends as soon as every lane's count decides against its reference
        (``eqtune.tune.dwell.SequentialDwell``); each reading's ``counts`` then carry the
        partial dwells (``looks``), the ``verdict`` and the full dwell it could have taken. A lane
        without a reference dwells the whole ``dwell_s``."""
        dwell = float(dwell_s if dwell_s is not None else self.dwell_s)
        t0 = time.perf_counter()
        out: dict[int, LiveReading] = {}
        if self.metric in ("ber", "q_db"):
            count = self._ber_counter()
            seq = test is not None and refs is not None and any(refs.get(ln) for ln in self.lanes)
            if seq:
                assert test is not None and refs is not None
                counts, info = self._sequential(dwell, count, stop, test, refs)
            else:
                counts, info = self._counted(dwell, count, stop), {}
            for ln in self.lanes:
                if ln not in counts:
                    raise ModuleError(f"the module's BER checker returned nothing for lane {ln}: "
                                      "check that the PRBS checker is enabled on that lane")
                c = counts[ln]
                cd = _counts(c)
                cd.update(info.get(ln, {}))
                out[ln] = LiveReading(ln, {}, margin_of(int(c.bits), int(c.errors), self.metric), cd)
        else:
            ln = self.lanes[0]
            eye = _instrument_eye(self.instrument, ln, dwell)
            ehs = eye.get("eye_height_mv")
            if ehs is None or ehs == []:
                raise InstrumentError("the scope returned no eye height: check the pattern and triggering")
            vals = list(ehs) if isinstance(ehs, (list, tuple)) else [ehs]
            # a closed eye has no height (SCPI NaN -> None): it ranks below every open eye
            m = CLOSED_EYE_MV if any(v is None for v in vals) else float(min(vals))
            out[ln] = LiveReading(ln, {}, m, {}, {k: v for k, v in eye.items()})
        dt = time.perf_counter() - t0
        for ln, r in out.items():
            r.cost_s = dt
            if codes is not None and ln in codes:
                r.codes = {k: int(v) for k, v in codes[ln].items()}
        return out

    # -- MarginSource --------------------------------------------------------------------------
    def measure(self, point: EqPoint) -> Measurement:
        """``MarginSource.measure``: apply the point on the first lane and measure it."""
        from eqtune.tune.source import Measurement

        lane = self.lanes[0]
        codes = {lane: self.codes_for(lane, point)}
        t0 = time.perf_counter()
        self.apply(codes)
        r = self.read(codes=codes)[lane]
        metrics: dict[str, Any] = {"counts": r.counts, **r.metrics, "codes": r.codes}
        var = r.variance(self.metric)
        if var is not None:  # the count's own noise reaches the GP (eqtune.tune.recommend)
            from eqtune.tune.recommend import VARIANCE_KEY

            metrics[VARIANCE_KEY] = var
        return Measurement(margin=r.margin, metrics=metrics, cost_s=time.perf_counter() - t0)


def _instrument_ber(inst: Any, lane: int, dwell_s: float) -> Any:
    try:
        return inst.measure_ber(lane=lane, dwell_s=dwell_s)
    except TypeError:
        return inst.measure_ber(lane, dwell_s)


def _instrument_eye(inst: Any, lane: int, dwell_s: float) -> dict[str, Any]:
    try:
        r = inst.measure_eye(lane=lane, dwell_s=dwell_s)
    except TypeError:
        r = inst.measure_eye(lane)
    return r if isinstance(r, dict) else (r.to_dict() if hasattr(r, "to_dict") else dict(vars(r)))
