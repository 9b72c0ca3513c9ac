"""Study specifications: what to compute, expanded into independent combinations.

A study spec is TOML (see ``channels/studies/example.toml``). It is validated completely before
anything is computed; every error names the table/row and the field (``channels[2].sweep.length_in``)
and says what to write instead. The spec expands into ``Combination`` objects: one per
(channel variant x SerDes profile). Corners (temperature, crosstalk) are evaluated *inside* a
combination, because the robust codes of a link are tuned over all of its corners at once.

Format (all tables optional except a channel source)::

    profiles = ["host-lr-112g"]            # SerDes profiles (names or TOML); omit = each channel's own
    [study]   name, seed (0), target_ber (1e-6), direction (host_rx | module_rx | serdes),
              ber_floor ([1e-12, 1e-15]), report_worst (3)
    [[channels]]  library = NAME | file = PATH | base = NAME|PATH with sweep.{length_in | length_mm,
              material, temperature_c, crosstalk} = [values...] (cross product); label = TEXT;
              a numeric sweep may be a range: sweep.length_in = {from = 3, to = 15.5, step = 0.1}
    [corners] temperature_c = [25, 85], crosstalk = [true, false]    (cross product) or
    [[corners]] name, temperature_c, crosstalk                         (explicit list)
    [[pass]]  eye_height_min_mv, vec_max_db, com_min_db, eye_width_min_ui  (AND within, OR across)
    [tune]    knobs, objective (eye_height | com | eye_width), method (auto | grid | bayes),
              exhaustive_max (600), budget (40), fidelity (full | screen), screen_keep (8),
              refine_worst (0: with fidelity = "screen", the N worst rows again at full fidelity)
    [fleet]   csv = PATH, base = NAME|PATH (c2m-10in), material   (links instead of [[channels]])

Each combination has a content-derived ``id`` (a digest of everything that determines its result),
so a resumed study recognises finished work even if the spec's rows were reordered, and its seed is
derived from that id: a result never depends on which worker computed it, or in which order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eqtune.config_schema import Field, Schema, check_value, fail, validate
from eqtune.errors import ConfigError, EqtuneError
from eqtune.readers import loads_toml
from eqtune.serdes.knobs import DEFAULT_TUNED, DIRECTIONS, KNOB_NAMES, knobs_in_direction

OBJECTIVES = ("eye_height", "com", "eye_width")
METHODS = ("auto", "grid", "bayes")
# "full": the eye engine at its own resolution on every code searched; "screen": a screening study
# (eqtune.study.screened): every code ranked by the engine's stage-A eye at a coarser time step, the
# best few evaluated exactly, FEC left for the refined rows
FIDELITIES = ("full", "screen")
# Knobs a channel sweep may vary. temperature_c and crosstalk go to load_channel(); the others are
# trace-segment parameters substituted into a parametric channel definition (see channels.py).
SWEEP_KEYS = ("length_in", "length_mm", "material", "temperature_c", "crosstalk")
CRITERIA_KEYS = ("eye_height_min_mv", "vec_max_db", "com_min_db", "eye_width_min_ui")
# Which knobs each link direction has (docs/ARCHITECTURE.md, "Link directions"), from the registry.
DIRECTION_KNOBS: dict[str, tuple[str, ...]] = {d: knobs_in_direction(d) for d in DIRECTIONS}
DEFAULT_KNOBS: dict[str, tuple[str, ...]] = {d: DEFAULT_TUNED[d] for d in DIRECTIONS}


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True)
class Corner:
    """One operating corner: trace temperature (C, None = as defined) and crosstalk on/off."""

    name: str
    temperature_c: float | None = None
    crosstalk: bool = True


@dataclass(frozen=True)
class ChannelRef:
    """How to build one channel variant.

    ``kind`` is ``library`` (``ref`` = library name), ``file`` (``ref`` = absolute path of a channel
    TOML or Touchstone file) or ``parametric`` (``ref`` = base library name or definition file,
    ``params`` = the sweep values substituted into its trace segments).
    """

    label: str
    kind: str
    ref: str
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)


@dataclass(frozen=True)
class Criterion:
    """Thresholds that must all hold (AND); a link passes when any criterion of the study holds (OR)."""

    eye_height_min_mv: float | None = None
    vec_max_db: float | None = None
    com_min_db: float | None = None
    eye_width_min_ui: float | None = None

    def describe(self) -> str:
        parts = []
        if self.eye_height_min_mv is not None:
            parts.append(f"EH >= {self.eye_height_min_mv:g} mV")
        if self.vec_max_db is not None:
            parts.append(f"VEC <= {self.vec_max_db:g} dB")
        if self.com_min_db is not None:
            parts.append(f"COM >= {self.com_min_db:g} dB")
        if self.eye_width_min_ui is not None:
            parts.append(f"EW >= {self.eye_width_min_ui:g} UI")
        return " and ".join(parts)

    def failures(self, metrics: Mapping[str, float | None]) -> list[str]:
        """Which thresholds ``metrics`` (eye_height_min_mv, vec_db, com_db, eye_width_ui) miss."""
        out = []
        checks = (
            ("eye_height_min_mv", "eye_height_min_mv", ">=", self.eye_height_min_mv),
            ("vec_db", "vec_max_db", "<=", self.vec_max_db),
            ("com_db", "com_min_db", ">=", self.com_min_db),
            ("eye_width_ui", "eye_width_min_ui", ">=", self.eye_width_min_ui),
        )
        for metric, _name, op, limit in checks:
            if limit is None:
                continue
            value = metrics.get(metric)
            ok = value is not None and math.isfinite(value) and (value >= limit if op == ">=" else value <= limit)
            if not ok:
                shown = "n/a" if value is None else f"{value:.3g}"
                out.append(f"{metric} {shown} (need {op} {limit:g})")
        return out


@dataclass(frozen=True)
class TuneSettings:
    knobs: tuple[str, ...]
    budget: int = 40
    exhaustive_max: int = 600  # code grids up to this many feasible points are searched exhaustively
    method: str = "auto"  # auto | grid | bayes
    objective: str = "eye_height"
    fidelity: str = "full"  # full | screen (eqtune.study.screened)
    screen_keep: int = 8  # screen: codes per corner evaluated exactly after the stage-A ranking
    refine_worst: int = 0  # screen: the N worst combinations computed again at full fidelity

    def content(self) -> dict[str, Any]:
        """What of these settings determines a result (the combination id's part): a full-fidelity
        study leaves the screening fields out, so its ids are those of a spec written before them."""
        d = asdict(self)
        if self.fidelity == "full":
            for k in ("fidelity", "screen_keep", "refine_worst"):
                d.pop(k)
        else:
            d.pop("refine_worst")  # which rows are refined does not change a row
        return d


@dataclass(frozen=True)
class Combination:
    """One unit of work: a channel variant x a SerDes profile, evaluated at every corner."""

    id: str
    index: int
    channel: ChannelRef
    profile: str | None
    corners: tuple[Corner, ...]
    direction: str
    target_ber: float
    tune: TuneSettings
    criteria: tuple[Criterion, ...]
    ber_floor: tuple[float, ...]
    seed: int
    link: tuple[tuple[str, str], ...] = ()  # fleet metadata (server, port, lane, module_pn, ...)

    @property
    def label(self) -> str:
        return f"{self.channel.label} | {self.profile or 'channel default'}"

    def link_dict(self) -> dict[str, str]:
        return dict(self.link)


@dataclass
class StudySpec:
    """A validated study: its combinations plus settings that are not per combination."""

    name: str
    source: str
    combinations: list[Combination]
    settings: dict[str, Any] = field(default_factory=dict)
    row_errors: list[str] = field(default_factory=list)  # fleet rows that could not be used
    fleet: bool = False

    def by_id(self) -> dict[str, Combination]:
        return {c.id: c for c in self.combinations}


# --------------------------------------------------------------------------- validation helpers


def _fail(where: str, msg: str) -> EqtuneError:
    """A ConfigError for the key path ``where`` (``parse_spec`` puts the file in front)."""
    return fail("", where, msg)


_BER = Field("ber", "number", gt=0, lt=0.5, hint="a BER is in (0, 0.5)")
_TEMPERATURE = Field("temperature_c", "number", unit="C", ge=-60, le=150)
_CROSSTALK = Field("crosstalk", "bool")
STUDY_SCHEMA = Schema((
    Field("name", "string", nonempty=True),
    Field("seed", "integer", ge=0, default=0),
    Field("target_ber", "number", gt=0, lt=0.5, default=1e-6, hint="a BER is in (0, 0.5)"),
    Field("direction", "string", nonempty=True, choices=DIRECTIONS, default="host_rx"),
    Field("ber_floor", "list", scalar_ok=True, nonempty=True, items=_BER, default=(1e-12, 1e-15)),
    Field("report_worst", "integer", ge=0, default=3),
))
TUNE_SCHEMA = Schema((
    Field("knobs", "list", scalar_ok=True, nonempty=True, items=Field("knob", "string", nonempty=True)),
    Field("budget", "integer", ge=5, default=40),
    Field("exhaustive_max", "integer", ge=0, default=600),
    Field("method", "string", nonempty=True, choices=METHODS, default="auto"),
    Field("objective", "string", nonempty=True, choices=OBJECTIVES, default="eye_height"),
    Field("fidelity", "string", nonempty=True, choices=FIDELITIES, default="full"),
    Field("screen_keep", "integer", ge=1, le=256, default=8),
    Field("refine_worst", "integer", ge=0, le=100_000, default=0),
))
CORNER_GRID_SCHEMA = Schema((  # [corners] temperature_c = [...], crosstalk = [...]
    Field("temperature_c", "list", scalar_ok=True, nonempty=True, items=_TEMPERATURE),
    Field("crosstalk", "list", scalar_ok=True, nonempty=True, items=_CROSSTALK),
))
CORNER_SCHEMA = Schema((Field("name", "string", nonempty=True), _TEMPERATURE,
                        Field("crosstalk", "bool", default=True)))
CRITERION_SCHEMA = Schema(tuple(Field(k, "number") for k in CRITERIA_KEYS))
_SWEEP_ITEMS = {"length_in": Field("length_in", "number", unit="in", gt=0),
                "length_mm": Field("length_mm", "number", unit="mm", gt=0),
                "material": Field("material", "string", nonempty=True),
                "temperature_c": _TEMPERATURE, "crosstalk": _CROSSTALK}
SWEEP_SCHEMA = Schema(tuple(Field(k, "list", scalar_ok=True, nonempty=True, items=_SWEEP_ITEMS[k])
                            for k in SWEEP_KEYS))
CHANNEL_ROW_SCHEMA = Schema((
    Field("library", "string", nonempty=True), Field("file", "string", nonempty=True),
    Field("base", "string", nonempty=True), Field("sweep", "table", schema=SWEEP_SCHEMA, default={}),
    Field("label", "string", nonempty=True),
))


def digest(obj: Any, n: int = 12) -> str:
    """Short stable hex digest of a JSON-able object (sorted keys)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def seed_for(base_seed: int, combo_id: str) -> int:
    """Per-combination seed: independent of worker and order (base seed + the id's digest)."""
    return (int(base_seed) + int(combo_id[:8], 16)) % (2**31 - 1)


# --------------------------------------------------------------------------- sections


def _parse_corners(data: Any) -> tuple[Corner, ...]:
    if data is None:
        return (Corner("nominal"),)
    if isinstance(data, dict):  # [corners] temperature_c = [...], crosstalk = [...]: cross product
        grid = validate(data, CORNER_GRID_SCHEMA, where="", path="corners")
        corners = []
        for t, x in itertools.product(grid.get("temperature_c", [None]), grid.get("crosstalk", [True])):
            name = ("nominal" if t is None else f"{t:g}C") + ("" if x else "-noxt")
            corners.append(Corner(name, t, x))
        return tuple(corners)
    rows = check_value(data, Field("corners", "list", scalar_ok=True, nonempty=True), where="", path="corners")
    corners = []
    for i, row in enumerate(rows):
        r = validate(row, CORNER_SCHEMA, where="", path=f"corners[{i}]")
        t, x = r.get("temperature_c"), r["crosstalk"]
        name = r.get("name") or (("nominal" if t is None else f"{t:g}C") + ("" if x else "-noxt"))
        corners.append(Corner(name, t, x))
    names = [c.name for c in corners]
    if len(set(names)) != len(names):
        raise _fail("corners", f"corner names must be unique, got {names}")
    return tuple(corners)


def _parse_criteria(data: Any) -> tuple[Criterion, ...]:
    if data is None:
        return (Criterion(eye_height_min_mv=15.0, vec_max_db=12.0),)
    rows = data if isinstance(data, list) else [data]
    out = []
    for i, row in enumerate(rows):
        where = f"pass[{i}]" if isinstance(data, list) else "pass"
        crit = validate(row, CRITERION_SCHEMA, where="", path=where)
        if not crit:
            raise _fail(where, f"give at least one of {', '.join(CRITERIA_KEYS)}")
        out.append(Criterion(**crit))
    return tuple(out)


def _parse_tune(data: Any, direction: str) -> TuneSettings:
    t = validate(data or {}, TUNE_SCHEMA, where="", path="tune")
    knobs = DEFAULT_KNOBS[direction]
    if "knobs" in t:
        knobs = tuple(t["knobs"])
        known = KNOB_NAMES
        for i, k in enumerate(knobs):
            if k not in known:
                raise _fail(f"tune.knobs[{i}]", f"unknown knob {k!r}; knobs: {', '.join(known)}")
            if k not in DIRECTION_KNOBS[direction]:
                raise _fail(f"tune.knobs[{i}]", f"{k!r} is not a knob of the {direction} link; its knobs are "
                            f"{', '.join(DIRECTION_KNOBS[direction])} (set study.direction for the others)")
    if t["fidelity"] == "screen":
        if t["objective"] != "eye_height":
            raise _fail("tune.fidelity", f"a screening study ranks codes by the stage-A eye height; objective "
                        f"{t['objective']!r} has no screen: use objective = \"eye_height\" or fidelity = \"full\"")
        if t["method"] == "bayes":
            raise _fail("tune.fidelity", "a screening study ranks the whole code grid; method \"bayes\" does not "
                        "enumerate it: use method = \"auto\" or \"grid\", or fidelity = \"full\"")
    elif t["refine_worst"]:
        raise _fail("tune.refine_worst", "refines the rows of a screening study; set fidelity = \"screen\" or "
                    "remove refine_worst")
    return TuneSettings(knobs=knobs, budget=t["budget"], exhaustive_max=t["exhaustive_max"], method=t["method"],
                        objective=t["objective"], fidelity=t["fidelity"], screen_keep=t["screen_keep"],
                        refine_worst=t["refine_worst"])


def _fmt_param(key: str, value: Any) -> str:
    if key == "length_in":
        return f"{value:g}in"
    if key == "length_mm":
        return f"{value:g}mm"
    if key == "temperature_c":
        return f"{value:g}C"
    if key == "crosstalk":
        return "xt" if value else "noxt"
    return str(value)


def _resolve_file(raw: str, base_dir: Path, where: str) -> str:
    p = Path(raw)
    if not p.is_absolute():
        p = base_dir / p
    if not p.exists():
        raise _fail(where, f"file {str(p)!r} not found (paths are relative to the spec file)")
    return str(p.resolve())


#: a sweep range (``sweep.length_in = {from = 3, to = 15.5, step = 0.1}``) expands to at most this many values
RANGE_MAX = 1_000_000
_RANGE_SCHEMA = Schema((Field("from", "number"), Field("to", "number"),
                        Field("step", "number", gt=0, hint="the distance between two values, > 0")))
_RANGE_KEYS = ("length_in", "length_mm", "temperature_c")


def expand_range(value: Mapping[str, Any], where: str) -> list[float]:
    """``{from, to, step}`` -> ``[from, from + step, ..., to]`` (``to`` included when it falls on the
    step), each value the float nearest the decimal ``from + i * step`` (so ``{from = 3, to = 3.3,
    step = 0.1}`` gives 3.0, 3.1, 3.2, 3.3, the numbers a list would spell, not 3.3000000000000003)."""
    from decimal import Decimal

    r = validate(value, _RANGE_SCHEMA, where="", path=where)
    missing = [k for k in ("from", "to", "step") if k not in r]
    if missing:
        raise _fail(where, f"a range needs from, to and step (missing {', '.join(missing)}), "
                    "e.g. {from = 3, to = 15.5, step = 0.1}, or give a list of values")
    start, stop, step = (Decimal(repr(float(r[k]))) for k in ("from", "to", "step"))
    if stop < start:
        raise _fail(where, f"to ({r['to']:g}) is below from ({r['from']:g})")
    n = int((stop - start) / step) + 1
    if n > RANGE_MAX:
        raise _fail(where, f"the range has {n:,} values (at most {RANGE_MAX:,}): use a larger step")
    return [float(start + i * step) for i in range(n)]


def _expand_sweep_ranges(row: Any, where: str) -> Any:
    """A channel row with its sweep ranges expanded to lists (anything else is left to the schema)."""
    sweep = row.get("sweep") if isinstance(row, dict) else None
    if not isinstance(sweep, dict) or not any(isinstance(v, dict) for v in sweep.values()):
        return row
    expanded = dict(sweep)
    for key, v in sweep.items():
        if isinstance(v, dict):
            if key not in _RANGE_KEYS:
                raise _fail(f"{where}.sweep.{key}", f"a range is for {', '.join(_RANGE_KEYS)}; give {key} "
                            "as a list of values")
            expanded[key] = expand_range(v, f"{where}.sweep.{key}")
    return {**row, "sweep": expanded}


def _parse_channels(data: Any, base_dir: Path) -> list[ChannelRef]:
    if data is None:
        raise _fail("channels", "missing: add at least one [[channels]] table (library, file or base+sweep)")
    rows = data if isinstance(data, list) else [data]
    out: list[ChannelRef] = []
    for i, row in enumerate(rows):
        where = f"channels[{i}]"
        if isinstance(row, str):
            row = {"library": row}
        row = validate(_expand_sweep_ranges(row, where), CHANNEL_ROW_SCHEMA, where="", path=where)
        given = [k for k in ("library", "file", "base") if k in row]
        if len(given) != 1:
            raise _fail(where, "give exactly one of library = NAME, file = PATH or base = NAME|PATH (with sweep)")
        key = given[0]
        if key == "file":
            ref = _resolve_file(row["file"], base_dir, f"{where}.file")
            kind = "file"
        else:
            ref = row[key]
            if key == "base" and (ref.endswith(".toml") or "/" in ref):
                ref = _resolve_file(ref, base_dir, f"{where}.base")
            kind = "library"
        label = row["label"] if "label" in row else (
            Path(ref).stem if kind == "file" or Path(ref).is_absolute() else ref)
        sweep = row["sweep"]
        if "length_in" in sweep and "length_mm" in sweep:
            raise _fail(f"{where}.sweep", "give length_in or length_mm, not both")
        if not sweep:
            out.append(ChannelRef(label, kind, ref))
            continue
        keys = [k for k in SWEEP_KEYS if k in sweep]
        axes = [sweep[k] for k in keys]
        needs_segments = any(k in ("length_in", "length_mm", "material") for k in keys)
        for combo in itertools.product(*axes):
            params = tuple(zip(keys, combo))
            suffix = " ".join(_fmt_param(k, v) for k, v in params)
            out.append(ChannelRef(f"{label} {suffix}", "parametric" if needs_segments else kind, ref, params))
    return out


def _parse_profiles(data: Any, base_dir: Path) -> list[str | None]:
    if data is None:
        return [None]  # each channel's own SerDes profile
    out: list[str | None] = []
    names = check_value(data, Field("profiles", "list", scalar_ok=True, nonempty=True,
                                    items=Field("profile", "string", nonempty=True)), where="", path="profiles")
    for i, name in enumerate(names):
        where = f"profiles[{i}]"
        if name.endswith(".toml") or "/" in name:
            name = _resolve_file(name, base_dir, where)
        out.append(name)
    return out


# --------------------------------------------------------------------------- spec


STUDY_KEYS = STUDY_SCHEMA.names
SPEC_SCHEMA = Schema((
    Field("study", "table", schema=STUDY_SCHEMA, default={}),
    Field("channels", "any"),  # [[channels]] rows, a table or library names: _parse_channels
    Field("profiles", "any"), Field("corners", "any"), Field("pass", "any"),
    Field("tune", "table"),
    Field("fleet", "table"),  # eqtune.study.fleet.FLEET_SCHEMA
))
TOP_KEYS = SPEC_SCHEMA.names


def parse_spec(data: Mapping[str, Any], *, base_dir: Path, source: str = "<spec>") -> StudySpec:
    """Validate a spec mapping (as read from TOML) and expand it into combinations."""
    try:
        return _parse_spec(data, base_dir=base_dir, source=source)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _parse_spec(data: Mapping[str, Any], *, base_dir: Path, source: str) -> StudySpec:
    data = validate(data, SPEC_SCHEMA, where="")
    study = data["study"]
    name = study.get("name") or Path(source).stem or "study"
    seed, target_ber, direction = study["seed"], study["target_ber"], study["direction"]
    floors = tuple(study["ber_floor"])
    report_worst = study["report_worst"]
    corners = _parse_corners(data.get("corners"))
    criteria = _parse_criteria(data.get("pass"))
    tune = _parse_tune(data.get("tune"), direction)
    profiles = _parse_profiles(data.get("profiles"), base_dir)
    common = dict(corners=corners, direction=direction, target_ber=target_ber, tune=tune, criteria=criteria,
                  ber_floor=floors)
    settings = {"seed": seed, "target_ber": target_ber, "direction": direction, "report_worst": report_worst,
                "ber_floor": list(floors), "tune": asdict(tune), "corners": [asdict(c) for c in corners],
                "criteria": [c.describe() for c in criteria]}

    row_errors: list[str] = []
    links: list[tuple[ChannelRef, tuple[tuple[str, str], ...]]] = []
    fleet = "fleet" in data
    if fleet:
        from eqtune.study.fleet import parse_fleet_table

        links, row_errors = parse_fleet_table(data["fleet"], base_dir=base_dir)
        if len(profiles) > 1:
            raise _fail("profiles", "a fleet study yields one profile per module, so it takes one SerDes "
                        f"profile (the hosts'), got {len(profiles)}; run one study per host type")
        if "channels" in data:
            raise _fail("channels", "a fleet study takes its links from [fleet] csv; remove [[channels]]")
    else:
        links = [(ch, ()) for ch in _parse_channels(data.get("channels"), base_dir)]
    if any(c.temperature_c is not None for c in corners):
        for ch, _link in links:
            if ch.param("temperature_c") is not None:
                raise _fail(f"channel {ch.label!r}: temperature_c", "the [corners] already set the trace temperature, which "
                            "overrides this one; remove temperature_c here or from [corners]")

    combos: list[Combination] = []
    seen: dict[str, int] = {}
    for ch, link in links:
        for prof in profiles:
            cid = _content_id(ch, prof, link, seed, common)
            if cid in seen:
                raise _fail(f"channels[{seen[cid]}]", f"combination {ch.label!r} x {prof!r} appears twice")
            seen[cid] = len(combos)
            combos.append(Combination(id=cid, index=len(combos), channel=ch, profile=prof,
                                      seed=seed_for(seed, cid), link=link, **common))
    if not combos and not row_errors:
        raise _fail("channels", "the spec expands to no combination")
    return StudySpec(name=name, source=source, combinations=combos, settings=settings, row_errors=row_errors,
                     fleet=fleet)


def _content_id(ch: ChannelRef, profile: str | None, link: tuple[tuple[str, str], ...], seed: int,
                common: Mapping[str, Any]) -> str:
    """The id of a combination: the digest of everything that determines its result."""
    content = {"channel": asdict(ch), "profile": profile, "link": link, "seed": seed, **{
        k: (v.content() if isinstance(v, TuneSettings) else asdict(v) if hasattr(v, "__dataclass_fields__") else
            [asdict(x) for x in v] if isinstance(v, tuple) and v and hasattr(v[0], "__dataclass_fields__")
            else v) for k, v in common.items()}}
    return digest(content)


def combination_id(combo: Combination, base_seed: int) -> str:
    """The id ``combo`` has in a study of base seed ``base_seed`` (``parse_spec`` gives each combination this)."""
    common = {"corners": combo.corners, "direction": combo.direction, "target_ber": combo.target_ber,
              "tune": combo.tune, "criteria": combo.criteria, "ber_floor": combo.ber_floor}
    return _content_id(combo.channel, combo.profile, combo.link, base_seed, common)


def load_spec(path: str | Path) -> StudySpec:
    """Read and validate a study spec (``.toml``) or a fleet CSV (``.csv``, default settings)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"study spec {str(p)!r} not found: give a .toml spec or a fleet .csv")
    if p.suffix.lower() == ".csv":
        return parse_spec({"fleet": {"csv": p.name}, "study": {"name": p.stem}}, base_dir=p.parent.resolve(),
                          source=str(p))
    try:
        data = loads_toml(p.read_text(encoding="utf-8"), str(p))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not a UTF-8 text file; a study spec is TOML") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot be read ({exc.strerror})") from None
    return parse_spec(data, base_dir=p.parent.resolve(), source=str(p))
