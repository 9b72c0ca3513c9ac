"""Knobs: the one registry of equalization knob names, their groups, link directions, units, CLI
options and display labels, plus the metric (margin) labels; and the spaces knobs form.

Every other module takes knob names, groups and metric labels from here (a test greps the package
for re-typed knob-name literals). This module imports nothing heavy: drivers and the command line
read names from it without loading numpy (numpy is imported inside the methods that need it).

An ``EqPoint`` is a plain ``dict[str, float]`` mapping knob name -> value (an integer code for
CMIS codes, a stepped physical value for SerDes taps or CTLE gains). Knob names are fixed:

Module (CMIS, per lane), see CMIS 5.2 Table 8-47..8-52 (page 10h Staged Control Set):
    ``rx_pre``  Rx output pre-cursor code 0..7  (0..3.5 dB, 0.5 dB/code)
    ``rx_post`` Rx output post-cursor code 0..7 (0..7 dB, 1 dB/code)
    ``rx_amp``  Rx output amplitude code 0..3   (100-400, 300-600, 400-800, 600-1200 mV ppd)
    ``tx_eq``   Tx input fixed EQ code 0..N     (N dB of peaking)
Host SerDes (from the SerDes profile):
    ``tx_cm3``, ``tx_cm2``, ``tx_cm1``  TX FFE pre-cursor taps c(-3), c(-2), c(-1) (linear, signed)
    ``tx_c1``, ``tx_c2``                 TX FFE post-cursor taps c(1), c(2)
        (main tap c(0) = 1 - sum|others|, IEEE 802.3 93A.1.6 normalization)
    ``ctle_gdc``, ``ctle_gdc2``          RX CTLE DC gains (dB), 802.3ck 120F form
Host SerDes receiver Rx FFE overrides (only with a DSP receiver model, ``--rx-ffe TAPS,PRE``):
    ``rx_ffe_pre1``, ``rx_ffe_post1``, ``rx_ffe_post2``  Rx FFE taps w(-1), w(+1), w(+2) as signed
        integer codes -32..32: tap = code x ``RX_FFE_TAP_STEP`` (1/64) relative to the cursor tap w(0) = 1,
        so -0.5..+0.5. Sign as the taps of ``eqtune.eye.ffe_eye``: q(t) = sum_k w(k) p(t - k T), so a
        negative w(-1) cancels a positive pre-cursor. A tap left unset is the receiver's own MMSE adaptation; a set tap is held and the
        others are re-solved by MMSE around it (``eqtune.eye.mmse``, constrained form).

Link directions (docs/ARCHITECTURE.md, "Link directions"): ``host_rx`` is the module's Rx output
driving the host receiver (knobs rx_pre/rx_post/rx_amp, plus the host CTLE); ``module_rx`` is the
host TX FFE driving the module's Tx input (knobs tx_cm3..tx_c2, tx_eq); ``serdes`` is a host-to-host
SerDes link (TX FFE + CTLE, no module).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, TypeGuard

from eqtune.errors import EqRangeError

if TYPE_CHECKING:  # numpy only for the annotations; imported lazily in the methods
    from eqtune.arrays import BoolArray, FloatArray

#: knob name -> value. Keys stay ``str`` (points come from JSON, TOML and the command line); the names
#: themselves are ``KnobName`` below.
EqPoint = dict[str, float]

# --------------------------------------------------------------------------- names
# The spellings below are the on-disk / JSON ones (journals, profiles, study files): the Literal types
# only let the type checker see them; ``tests/serdes/test_knob_registry.py`` checks that each Literal
# lists exactly the registry's values.

#: every knob name
KnobName = Literal["rx_pre", "rx_post", "rx_amp", "tx_eq", "tx_cm3", "tx_cm2", "tx_cm1", "tx_c1", "tx_c2",
                   "ctle_gdc", "ctle_gdc2", "rx_ffe_pre1", "rx_ffe_post1", "rx_ffe_post2"]
#: a link direction (see the module docstring)
Direction = Literal["host_rx", "module_rx", "serdes"]
#: a knob group
KnobGroup = Literal["module", "tx_ffe", "ctle", "rx_ffe"]
#: a knob's unit: integer CMIS code, linear FFE tap weight, or dB
KnobUnit = Literal["code", "linear", "dB"]
#: a margin metric / tuning objective key (``METRIC_DEFS``)
MetricKey = Literal["ber", "q_db", "eye_height", "com", "eye_width", "fec"]

RX_PRE: Final = "rx_pre"
RX_POST: Final = "rx_post"
RX_AMP: Final = "rx_amp"
TX_EQ: Final = "tx_eq"
TX_CM3: Final = "tx_cm3"
TX_CM2: Final = "tx_cm2"
TX_CM1: Final = "tx_cm1"
TX_C1: Final = "tx_c1"
TX_C2: Final = "tx_c2"
CTLE_GDC: Final = "ctle_gdc"
CTLE_GDC2: Final = "ctle_gdc2"
RX_FFE_PRE1: Final = "rx_ffe_pre1"
RX_FFE_POST1: Final = "rx_ffe_post1"
RX_FFE_POST2: Final = "rx_ffe_post2"

# link directions
HOST_RX: Final = "host_rx"
MODULE_RX: Final = "module_rx"
SERDES: Final = "serdes"
DIRECTIONS: tuple[Direction, ...] = (HOST_RX, MODULE_RX, SERDES)

# knob groups
GROUP_MODULE: Final = "module"  # CMIS codes of the module (page 10h)
GROUP_TX_FFE: Final = "tx_ffe"  # host SerDes TX FFE taps
GROUP_CTLE: Final = "ctle"  # host SerDes RX CTLE DC gains
GROUP_RX_FFE: Final = "rx_ffe"  # host SerDes Rx FFE tap overrides (DSP receiver)

#: Rx FFE override codes: tap = code x RX_FFE_TAP_STEP relative to the cursor tap (w(0) = 1), codes
#: -RX_FFE_CODE_MAX..RX_FFE_CODE_MAX, i.e. 1/64 steps within +-0.5 (an assumed 7-bit signed override field:
#: SerDes vendors' register maps are not public; the IEEE 802.3dj reference receiver limits its taps to
#: +-0.7, P802.3dj D3.3 Table 178-15, so the range lies inside the modelled receiver's limits)
RX_FFE_TAP_STEP = 1.0 / 64.0
RX_FFE_CODE_MAX = 32


def is_direction(name: object) -> TypeGuard[Direction]:
    """True when ``name`` is one of ``DIRECTIONS`` (narrows a ``str`` read from a file or option)."""
    return name in DIRECTIONS


def is_knob_name(name: object) -> TypeGuard[KnobName]:
    """True when ``name`` is one of ``KNOB_NAMES``."""
    return name in KNOB_DEFS


@dataclass(frozen=True)
class KnobDef:
    """What a knob is, independent of any module or profile: its name, group, direction and labels.

    Parameters
    ----------
    name : the knob name in an ``EqPoint``, journals and profiles.
    group : ``module`` (CMIS code), ``tx_ffe`` (host TX FFE tap), ``ctle`` (host RX CTLE gain) or
        ``rx_ffe`` (host Rx FFE tap override).
    direction : the link direction it acts in (``host_rx`` or ``module_rx``; ``serdes`` for the host
        receiver's Rx FFE overrides, modelled only on a host TX -> host receiver link).
    unit : ``code`` (integer CMIS code), ``linear`` (FFE tap weight) or ``dB``.
    label : short display label (tables, plots).
    description : one line of meaning.
    tap : FFE tap offset c(k) for ``tx_ffe`` knobs (UI from the main cursor), else None.
    rx_tap : Rx FFE tap offset w(k) for ``rx_ffe`` knobs (UI from the cursor tap), else None.
    """

    name: KnobName
    group: KnobGroup
    direction: Direction
    unit: KnobUnit
    label: str
    description: str
    tap: int | None = None
    rx_tap: int | None = None

    @property
    def cli_option(self) -> str:
        """The command-line option of a per-knob setting, e.g. ``--rx-pre``."""
        return "--" + self.name.replace("_", "-")


KNOB_DEFS: dict[str, KnobDef] = {d.name: d for d in (
    KnobDef(RX_PRE, GROUP_MODULE, HOST_RX, "code", "Rx pre", "Rx output pre-cursor code"),
    KnobDef(RX_POST, GROUP_MODULE, HOST_RX, "code", "Rx post", "Rx output post-cursor code"),
    KnobDef(RX_AMP, GROUP_MODULE, HOST_RX, "code", "Rx amp", "Rx output amplitude code"),
    KnobDef(TX_EQ, GROUP_MODULE, MODULE_RX, "code", "Tx EQ", "Tx input fixed EQ code (dB peaking)"),
    KnobDef(TX_CM3, GROUP_TX_FFE, MODULE_RX, "linear", "c(-3)", "host TX FFE tap c(-3)", -3),
    KnobDef(TX_CM2, GROUP_TX_FFE, MODULE_RX, "linear", "c(-2)", "host TX FFE tap c(-2)", -2),
    KnobDef(TX_CM1, GROUP_TX_FFE, MODULE_RX, "linear", "c(-1)", "host TX FFE tap c(-1)", -1),
    KnobDef(TX_C1, GROUP_TX_FFE, MODULE_RX, "linear", "c(1)", "host TX FFE tap c(1)", 1),
    KnobDef(TX_C2, GROUP_TX_FFE, MODULE_RX, "linear", "c(2)", "host TX FFE tap c(2)", 2),
    KnobDef(CTLE_GDC, GROUP_CTLE, HOST_RX, "dB", "g_DC", "host RX CTLE g_DC"),
    KnobDef(CTLE_GDC2, GROUP_CTLE, HOST_RX, "dB", "g_DC2", "host RX CTLE g_DC2"),
    KnobDef(RX_FFE_PRE1, GROUP_RX_FFE, SERDES, "code", "w(-1)", "host Rx FFE tap w(-1) override code", rx_tap=-1),
    KnobDef(RX_FFE_POST1, GROUP_RX_FFE, SERDES, "code", "w(+1)", "host Rx FFE tap w(+1) override code", rx_tap=1),
    KnobDef(RX_FFE_POST2, GROUP_RX_FFE, SERDES, "code", "w(+2)", "host Rx FFE tap w(+2) override code", rx_tap=2),
)}

#: every knob, in the canonical order (module codes, TX FFE taps c(-3)..c(2), CTLE, Rx FFE overrides)
KNOB_NAMES: tuple[KnobName, ...] = tuple(d.name for d in KNOB_DEFS.values())


def knobs_in_group(group: KnobGroup) -> tuple[KnobName, ...]:
    """The knobs of a group, in canonical order."""
    return tuple(d.name for d in KNOB_DEFS.values() if d.group == group)


#: the module's CMIS codes, in display order
MODULE_KNOBS = knobs_in_group(GROUP_MODULE)
#: host TX FFE taps c(-3), c(-2), c(-1), c(1), c(2)
TX_FFE_KNOBS = knobs_in_group(GROUP_TX_FFE)
#: host RX CTLE DC gains
CTLE_KNOBS = knobs_in_group(GROUP_CTLE)
#: host Rx FFE tap overrides w(-1), w(+1), w(+2) (need a DSP receiver model: ``--rx-ffe``)
RX_FFE_KNOBS = knobs_in_group(GROUP_RX_FFE)
#: Rx FFE override name -> tap offset (UI from the cursor tap)
RX_FFE_TAP_OFFSETS: dict[str, int] = {n: int(KNOB_DEFS[n].rx_tap or 0) for n in RX_FFE_KNOBS}
#: the module's Rx output codes (the transmitter of the host_rx direction)
MODULE_RX_OUT_KNOBS = tuple(n for n in MODULE_KNOBS if KNOB_DEFS[n].direction == HOST_RX)
#: the module's Tx input code(s) (the receiver of the module_rx direction)
MODULE_TX_IN_KNOBS = tuple(n for n in MODULE_KNOBS if KNOB_DEFS[n].direction == MODULE_RX)
#: FFE tap name -> tap offset (UI from the main cursor)
TX_TAP_OFFSETS: dict[str, int] = {n: int(KNOB_DEFS[n].tap or 0) for n in TX_FFE_KNOBS}
#: knob -> the link direction it acts in
KNOB_DIRECTION: dict[str, Direction] = {n: d.direction for n, d in KNOB_DEFS.items()}

#: aliases accepted where a list of knobs is given (``--knobs``)
KNOB_ALIASES: dict[str, tuple[KnobName, ...]] = {
    GROUP_TX_FFE: TX_FFE_KNOBS,
    GROUP_CTLE: CTLE_KNOBS,
    GROUP_RX_FFE: RX_FFE_KNOBS,
    GROUP_MODULE: MODULE_KNOBS,
    "module_rx_out": MODULE_RX_OUT_KNOBS,
}


def knobs_in_direction(direction: Direction) -> tuple[KnobName, ...]:
    """Every knob the eye engine models in a link direction (``serdes``: the host TX FFE and CTLE; the Rx
    FFE overrides ``RX_FFE_KNOBS`` act only on the DSP receiver model, ``eqtune.eye.ffe_eye``)."""
    if direction == SERDES:
        return TX_FFE_KNOBS + CTLE_KNOBS
    return tuple(d.name for d in KNOB_DEFS.values() if d.direction == direction)


def module_knobs_in_direction(direction: Direction) -> tuple[KnobName, ...]:
    """The module's CMIS codes that act in a link direction."""
    return tuple(n for n in MODULE_KNOBS if KNOB_DEFS[n].direction == direction)


#: the knobs a study tunes by default in each direction
DEFAULT_TUNED: dict[Direction, tuple[KnobName, ...]] = {
    HOST_RX: MODULE_RX_OUT_KNOBS,
    MODULE_RX: (TX_CM1, TX_C1, TX_EQ),
    SERDES: (TX_CM1, TX_C1),
}


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class MetricDef:
    """A margin or figure of merit: its key, quantity, unit and the labels built from them.

    ``label`` names the quantity with its unit (axis titles, report columns, a profile's
    ``margins.*.metric``), e.g. ``Q (dB)``; ``suffix`` is what follows a number or a margin
    ("7.9 dB Q", "margin (dB Q)"): the unit, qualified by the quantity where the unit alone (dB)
    would not say which (``suffix_quantity``). ``attribute`` is the ``EyeResult`` field of a
    simulation objective (None for live-only metrics).
    """

    key: MetricKey
    quantity: str
    unit: str
    attribute: str | None = None
    suffix_quantity: bool = False

    @property
    def label(self) -> str:
        return self.quantity if self.quantity == self.unit else f"{self.quantity} ({self.unit})"

    @property
    def suffix(self) -> str:
        return f"{self.unit} {self.quantity}" if self.suffix_quantity else self.unit


METRIC_DEFS: dict[str, MetricDef] = {m.key: m for m in (
    # live metrics (eqtune.tune.live): -log10 of the floored BER, the same BER as Q in dB, scope eye height
    MetricDef("ber", "-log10(BER)", "-log10(BER)"),
    MetricDef("q_db", "Q", "dB", suffix_quantity=True),
    MetricDef("eye_height", "eye height", "mV", "eye_height_min_mv"),
    # simulation objectives (eqtune.tune.simulation)
    MetricDef("com", "COM", "dB", "com_db"),
    MetricDef("eye_width", "eye width", "UI", "eye_width_ui"),
    # decades of RS(544,514) codeword error ratio below the frame-loss target (eqtune.eye.fec)
    MetricDef("fec", "FEC margin", "decades", "fec_margin_decades"),
)}

#: the live metrics computed from a bit-error count
BER_METRICS: tuple[MetricKey, ...] = ("ber", "q_db")
#: the metrics a live session can tune on
LIVE_METRICS: tuple[MetricKey, ...] = (*BER_METRICS, "eye_height")
#: the objectives a simulation can tune on
SIM_OBJECTIVES: tuple[MetricKey, ...] = tuple(m.key for m in METRIC_DEFS.values() if m.attribute is not None)


def metric_unit(metric: str) -> str:
    """Unit of this metric (the metric key itself when unknown)."""
    m = METRIC_DEFS.get(metric)
    return m.unit if m is not None else metric


def metric_suffix(metric: str) -> str:
    """What follows a margin of this metric, e.g. ``dB Q`` (the metric key itself when unknown)."""
    m = METRIC_DEFS.get(metric)
    return m.suffix if m is not None else metric


def metric_label(metric: str) -> str:
    """Quantity-and-unit label of a metric, e.g. ``Q (dB)`` (the key itself when unknown)."""
    m = METRIC_DEFS.get(metric)
    return m.label if m is not None else metric


# --------------------------------------------------------------------------- spaces


@dataclass(frozen=True)
class Knob:
    """One tunable setting: its allowed values (ascending), default, unit and meaning."""

    name: str
    values: tuple[float, ...]
    default: float
    unit: str = "code"
    description: str = ""

    @property
    def is_code(self) -> bool:
        return self.unit == "code"

    def check(self, value: float) -> float:
        """Return ``value`` if it is an allowed value (within 1e-9), else raise EqRangeError."""
        import numpy as np

        arr = np.asarray(self.values)
        idx = int(np.argmin(np.abs(arr - value)))
        if abs(arr[idx] - value) > 1e-9:
            lo, hi = self.values[0], self.values[-1]
            step = (self.values[1] - self.values[0]) if len(self.values) > 1 else 0
            raise EqRangeError(
                f"{self.name}={value:g} is not allowed: use {lo:g}..{hi:g}"
                + (f" in steps of {step:g}" if step else "")
                + (f" {self.unit}" if self.unit != "code" else "")
            )
        return float(arr[idx])


# A constraint takes a matrix of points (n_points x n_knobs, columns in ``KnobSpace.names`` order)
# and returns a boolean mask of feasible rows.
Constraint = Callable[["FloatArray", Sequence[str]], "BoolArray"]


@dataclass(frozen=True)
class KnobSpace:
    """The knobs being tuned (others fixed) plus feasibility constraints."""

    knobs: tuple[Knob, ...]
    constraints: tuple[Constraint, ...] = ()
    fixed: Mapping[str, float] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    def feasible(self, matrix: FloatArray) -> BoolArray:
        """Boolean mask of rows of ``matrix`` that satisfy every constraint."""
        import numpy as np

        matrix = np.atleast_2d(np.asarray(matrix, dtype=float))
        mask = np.ones(len(matrix), dtype=bool)
        for c in self.constraints:
            mask &= np.asarray(c(matrix, self.names), dtype=bool)
        return mask

    def size(self) -> int:
        import numpy as np

        return int(np.prod([len(k.values) for k in self.knobs])) if self.knobs else 0

    def grid(self) -> FloatArray:
        """Every feasible point as a matrix (rows in ``names`` column order)."""
        import numpy as np

        if not self.knobs:
            return np.zeros((0, 0))
        axes = [np.asarray(k.values, dtype=float) for k in self.knobs]
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
        return mesh[self.feasible(mesh)]

    def to_point(self, row: Sequence[float]) -> EqPoint:
        """A full ``EqPoint``: the fixed knobs plus this row's tuned values."""
        point: EqPoint = dict(self.fixed)
        point.update({k.name: float(v) for k, v in zip(self.knobs, row)})
        return point
