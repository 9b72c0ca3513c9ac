"""Channel definitions (``channels/*.toml``) and ``load_channel``.

TOML format (every key optional unless marked; unknown keys are an error)::

    name = "c2m-10in"                  # default: the file stem
    description = "..."
    baud_gbd = 53.125
    modulation = "PAM4"                # NRZ | PAM4 | PAM6
    serdes_profile = "host-lr-112g"
    temperature_c = 25.0               # applies to trace segments without their own
    df_mhz = 10.0                      # grid step; grid = 0 .. max(data fmax, 2 x baud)
    fmax_ghz = 120.0                   # optional: extend the grid
    termination_ohm = 100.0            # optional: differential TX/RX termination (re-references S)
    extrapolate = "loss-fit"           # optional: data ending below 0.75 x baud are refused unless
                                       # "loss-fit" or "hold" (eqtune.channel.band) is given

    [[segments]]                       # cascaded TX -> RX, at least one
    type = "com_package"               # IEEE 802.3 COM package; side tx (die = port 1) or rx (flipped)
    case = 1
    side = "tx"
    [[segments]]
    type = "trace"                     # see eqtune.channel.trace.from_units for the keys
    length_in = 10                     # or length_mm
    material = "megtron6"
    [[segments]]
    type = "touchstone"
    file = "osfp-connector.s4p"        # relative to this TOML
    port_order = "auto"                # or "1-2/3-4" / "1-3/2-4"
    lane = 1                           # for s8p..s32p: lane k = ports 4k-3..4k
    ports = [1, 2, 5, 6]               # or explicit single-ended TX+, TX-, RX+, RX- (1-based)
    reverse = false                    # true: the file's port 2 faces the TX
    [[segments]]
    type = "line"                      # short line: delay_ps, zdiff_ohm = 100, loss_db = 0, loss_f_ghz
    [[segments]]
    type = "shunt_c"                   # c_pf per leg (pads);  type = "series_l": l_nh per leg

    [[aggressors]]
    name = "fext1"
    kind = "FEXT"                      # FEXT | NEXT
    file = "c2m-10in-fext1.s4p"
    amplitude_v = 0.4                  # optional; port_order, lane as for touchstone segments

A bare ``.sNp`` (or Touchstone 2.0 ``.ts``) is a one-segment channel at 53.125 GBd PAM4 with the profile
``host-lr-112g``; ``load_channel(..., lane=K)`` picks lane K of a multi-lane file (and of TOML segments
that name no lane).

Frequency coverage: every Touchstone file (segment or aggressor) must reach ``0.75 x baud``
(:mod:`eqtune.channel.band`); shorter data are refused with the band they have and need, unless an
extrapolation is asked for (``extrapolate`` key or argument), which ``Channel.meta["extrapolated"]`` records.

``channel_from_definition(doc, base_dir=...)`` builds a channel from the same definition as a dict
(e.g. a TOML table changed in memory, as a study's parametric sweep does) without writing a file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from eqtune.channel import elements
from eqtune.channel.band import check_coverage, check_extrapolate
from eqtune.channel.grid import DEFAULT_DF_HZ, default_grid, resample
from eqtune.channel.mixedmode import check_set_agrees, impulse_peak_delay_s, normalize_port_order
from eqtune.channel.model import Aggressor, Channel, Modulation
from eqtune.channel.package import com_package_sparams
from eqtune.channel.touchstone import load_sdd
from eqtune.channel.trace import from_units, trace_sparams
from eqtune.config_schema import Field, Schema, check_value, fail, validate
from eqtune.errors import ChannelError, ConfigError, EqtuneError
from eqtune.resources import channels_dir

DEFAULT_BAUD_GBD = 53.125
DEFAULT_MODULATION: Modulation = "PAM4"
DEFAULT_PROFILE = "host-lr-112g"
MAX_GRID_POINTS = 2_000_000
# Bounds on a channel file's lists (no real channel comes near: the library's have <= 9 segments, 3
# aggressors). Segments are cascaded one at a time (memory: two blocks of 64 bytes per grid point, i.e.
# ~0.8 MB on the default 0..120 GHz grid, whatever the count); each aggressor keeps its SDD21 (16 bytes per
# grid point). Measured by tests/channel/test_channel_bounds.py with tracemalloc.
MAX_SEGMENTS = 256
MAX_AGGRESSORS = 64
MODULATIONS = ("NRZ", "PAM4", "PAM6")
_NOT_PHYSICAL = "negative values are not physical"
_PORTS_HINT = "give four distinct 1-based port numbers [TX+, TX-, RX+, RX-]"

# The channel TOML format (module docstring) as eqtune.config_schema schemas.
CHANNEL_SCHEMA = Schema((
    Field("name", "string", nonempty=True),
    Field("description", "string", default=""),
    Field("baud_gbd", "number", unit="GBd", gt=0, default=DEFAULT_BAUD_GBD),
    Field("modulation", "string", fold="upper", choices=MODULATIONS, default=DEFAULT_MODULATION),
    Field("serdes_profile", "string", nonempty=True, default=DEFAULT_PROFILE),
    Field("temperature_c", "number", unit="C", default=25.0),
    Field("df_mhz", "number", unit="MHz", gt=0, default=DEFAULT_DF_HZ / 1e6),
    Field("fmax_ghz", "number", unit="GHz", gt=0),
    Field("termination_ohm", "number", unit="ohm", gt=0),
    Field("extrapolate", "string", choices=("none", "loss-fit", "hold"), default="none",
          hint="data ending below 0.75 x baud: none (refuse), loss-fit or hold"),
    Field("segments", "list", required=True, min_len=1, max_len=MAX_SEGMENTS, items=Field("segment", "table"),
          hint=f"give at least one [[segments]] table (at most {MAX_SEGMENTS})"),
    Field("aggressors", "list", items=Field("aggressor", "table"), default=(), max_len=MAX_AGGRESSORS,
          hint=f"give at most {MAX_AGGRESSORS} [[aggressors]] tables"),
))
TOP_KEYS = set(CHANNEL_SCHEMA.names)
_LANE = Field("lane", "integer", ge=1, hint="for s8p..s32p files: lane k = ports 4k-3..4k")
_PORTS = Field("ports", "list", min_len=4, max_len=4, items=Field("port", "integer", ge=1), hint=_PORTS_HINT)
_PORT_ORDER = Field("port_order", "string", nonempty=True, hint='use "auto", "1-2/3-4" or "1-3/2-4"')
_FILE = Field("file", "string", required=True, nonempty=True,
              hint="give the Touchstone file path (relative to the channel file)")
_SEG_COMMON = (Field("type", "string", required=True), Field("name", "string"))
SEGMENT_SCHEMAS: dict[str, Schema | None] = {
    "touchstone": Schema(_SEG_COMMON + (_FILE, _PORT_ORDER, _LANE, _PORTS, Field("reverse", "bool", default=False))),
    "line": Schema(_SEG_COMMON + (
        Field("delay_ps", "number", unit="ps", ge=0, default=0.0, hint=_NOT_PHYSICAL),
        Field("zdiff_ohm", "number", unit="ohm", gt=0, default=100.0),
        Field("loss_db", "number", unit="dB", ge=0, default=0.0, hint=_NOT_PHYSICAL),
        Field("loss_f_ghz", "number", unit="GHz", gt=0))),  # default: baud / 2
    "shunt_c": Schema(_SEG_COMMON + (Field("c_pf", "number", unit="pF", ge=0, required=True,
                                           hint="give the shunt capacitance per leg in pF"),)),
    "series_l": Schema(_SEG_COMMON + (Field("l_nh", "number", unit="nH", ge=0, required=True,
                                            hint="give the series inductance per leg in nH"),)),
    "com_package": Schema(_SEG_COMMON + (
        Field("case", "integer", ge=1, default=1),
        Field("side", "string", fold="lower", choices=("tx", "rx"), default="tx"))),
    "trace": None,  # eqtune.channel.trace.TRACE_SCHEMA, checked by trace.from_units
}
SEGMENT_KEYS = {k: (None if v is None else set(v.names) - {"type", "name"}) for k, v in SEGMENT_SCHEMAS.items()}
_SEG_TYPE = Field("type", "string", required=True, choices=tuple(SEGMENT_SCHEMAS))
AGGRESSOR_SCHEMA = Schema((
    Field("name", "string", nonempty=True),
    Field("kind", "string", fold="upper", choices=("FEXT", "NEXT"), default="FEXT"),
    _FILE, _PORT_ORDER, _LANE, _PORTS,
    Field("amplitude_v", "number", unit="V", gt=0),
))
AGGRESSOR_KEYS = set(AGGRESSOR_SCHEMA.names)


def list_channels() -> list[str]:
    """Names of the shipped library channels (``channels/*.toml``), sorted."""
    d = channels_dir()
    return sorted(p.stem for p in d.glob("*.toml")) if d.is_dir() else []


def resolve(name_or_path: str | Path) -> Path:
    """A library name, a .toml path or a Touchstone (.sNp, .ts) path -> an existing file path."""
    from eqtune.readers import check_path

    s = str(name_or_path)
    p = check_path(s, "channel", error=ChannelError)  # a NUL byte or a 5,000-character name: one line
    if p.suffix.lower() in (".toml", ".ts") or p.suffix.lower().startswith(".s") or p.exists():
        if not p.is_file():
            raise ChannelError(f"{p}: no such channel file; give a library name ({', '.join(list_channels())}) "
                               "or an existing .toml/.sNp path")
        return p
    lib = channels_dir() / f"{s}.toml"
    try:
        if lib.is_file():
            return lib
    except OSError:  # a name the file system cannot hold (255 bytes + ".toml"): not a library name
        pass
    raise ChannelError(f"channel {s[:80]!r} is not in the library ({', '.join(list_channels()) or 'empty'}); "
                       "give a library name, a .toml or a .sNp path")


def load_channel(name_or_path: str | Path, *, temperature_c: float | None = None, aggressors: bool = True,
                 port_order: str | None = None, df_hz: float | None = None, lane: int | None = None,
                 extrapolate: str | None = None) -> Channel:
    """Load a library channel, a channel TOML or a bare Touchstone file onto the default grid.

    ``temperature_c`` overrides the temperature of every trace segment; ``port_order`` overrides the
    order of every 4-port Touchstone segment ("1-2/3-4" or "1-3/2-4"); ``aggressors=False`` drops
    crosstalk. Grid: see ``eqtune.channel.grid`` (uniform, 0 Hz, df = 10 MHz by default). ``lane``: the
    lane of a multi-lane Touchstone file (lane k = ports 4k-3..4k). ``extrapolate``: "loss-fit" or "hold"
    for data that end below 0.75 x baud (otherwise refused; :mod:`eqtune.channel.band`).
    """
    path = resolve(name_or_path)
    extrapolate = check_extrapolate(extrapolate)
    if lane is not None and (isinstance(lane, bool) or not isinstance(lane, int) or not 1 <= lane <= 64):
        raise ChannelError(f"lane {lane!r}: give a lane number 1..64 (lane k = ports 4k-3..4k)")
    if path.suffix.lower() == ".toml":
        return _load_toml(path, temperature_c=temperature_c, with_aggressors=aggressors,
                          port_order=port_order, df_hz=df_hz, lane=lane, extrapolate=extrapolate)
    return _load_touchstone_channel(path, port_order=port_order, df_hz=df_hz, temperature_c=temperature_c,
                                    lane=lane, extrapolate=extrapolate)


def _load_touchstone_channel(path: Path, *, port_order: str | None, df_hz: float | None,
                             temperature_c: float | None, lane: int | None = None,
                             extrapolate: str | None = None) -> Channel:
    d = load_sdd(path, port_order=port_order, lane=lane)
    ext = check_coverage(float(d.freqs_hz[-1]), DEFAULT_BAUD_GBD, str(path), extrapolate)
    grid = default_grid(d.freqs_hz[-1], DEFAULT_BAUD_GBD, df_hz or DEFAULT_DF_HZ)
    s = resample(d.freqs_hz, d.s, grid, extend=extrapolate if ext else None)
    return Channel(name=path.stem, freqs_hz=grid, sdd21=s[:, 1, 0], baud_gbd=DEFAULT_BAUD_GBD,
                   modulation=DEFAULT_MODULATION, serdes_profile=DEFAULT_PROFILE, sdd11=s[:, 0, 0],
                   sdd22=s[:, 1, 1], source=str(path), port_order=d.port_order, temperature_c=temperature_c,
                   meta={"port_order_detected": d.port_order_detected, "data_fmax_hz": float(d.freqs_hz[-1]),
                         "max_singular_value": d.max_singular_value, "lane": lane,
                         "segments": [f"touchstone {path.name}" + (f" lane {lane}" if lane else "")],
                         "extrapolated": [dict(ext, file=path.name)] if ext else [],
                         "band_end_hz": float(d.freqs_hz[-1])})


def _ports(where: str, path: str, v: list[int] | None) -> tuple[int, int, int, int] | None:
    """The validated ``ports`` list, refused unless its four port numbers are distinct."""
    if v is None:
        return None
    if len(set(v)) != 4:
        raise fail(where, f"{path}.ports", f"{v!r} repeats a port", _PORTS_HINT)
    return (v[0], v[1], v[2], v[3])


def _file_ref(base_dir: Path, rel_to: str, where: str, table: dict[str, Any]) -> Path:
    from eqtune.readers import check_path

    ref = table["file"]  # a non-empty string (validated)
    p = check_path(ref, f"{where}.file")
    p = p if p.is_absolute() else base_dir / p
    if not p.is_file():
        raise ConfigError(f"{where}.file: {ref!r} not found (looked for {p}); fix the path or generate it "
                          "(python -m eqtune.channel.generate)")
    return p


def _read_toml(path: Path) -> dict[str, Any]:
    from eqtune.readers import MAX_TEXT_BYTES, loads_toml

    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_TEXT_BYTES + 1)
        return loads_toml(data.decode("utf-8"), str(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); a channel file is UTF-8 TOML") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None


def _load_toml(path: Path, *, temperature_c: float | None, with_aggressors: bool, port_order: str | None,
               df_hz: float | None, lane: int | None = None, extrapolate: str | None = None) -> Channel:
    return _build(_read_toml(path), base_dir=path.parent, rel_to=path.name, where=str(path), source=str(path),
                  default_name=path.stem, temperature_c=temperature_c, with_aggressors=with_aggressors,
                  port_order=port_order, df_hz=df_hz, lane=lane, extrapolate=extrapolate)


def channel_from_definition(doc: dict[str, Any], *, base_dir: str | Path | None = None, name: str | None = None,
                            source: str = "definition", temperature_c: float | None = None,
                            aggressors: bool = True, port_order: str | None = None,
                            df_hz: float | None = None) -> Channel:
    """A channel from a definition dict (the TOML format above, already parsed), without a file.

    ``base_dir``: where relative ``file`` paths point (default: the current directory); ``name``: the
    channel name when the definition has no ``name`` key (default ``"channel"``); ``source``: recorded
    in ``Channel.source`` and used in error messages. Other options as for ``load_channel``. The
    result equals ``load_channel`` of a TOML file holding the same definition (except ``source``).
    """
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: a channel definition must be a dict (TOML tables), got {type(doc).__name__}")
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    return _build(doc, base_dir=base, rel_to=str(base), where=source, source=source,
                  default_name=name or "channel", temperature_c=temperature_c, with_aggressors=aggressors,
                  port_order=port_order, df_hz=df_hz)


def _build(doc: dict[str, Any], *, base_dir: Path, rel_to: str, where: str, source: str, default_name: str,
           temperature_c: float | None, with_aggressors: bool, port_order: str | None,
           df_hz: float | None, lane: int | None = None, extrapolate: str | None = None) -> Channel:
    top = validate(doc, CHANNEL_SCHEMA, where=where)
    baud = top["baud_gbd"]
    extrap = extrapolate or check_extrapolate(top["extrapolate"], f"{where}: extrapolate")
    extended: list[dict[str, Any]] = []
    band_end = float("inf")  # where the shortest measured file ends (Hz)
    modulation = top["modulation"]
    temp = top["temperature_c"] if temperature_c is None else check_value(
        temperature_c, CHANNEL_SCHEMA.by_name["temperature_c"], where=where, path="temperature_c (override)")
    df = df_hz or top["df_mhz"] * 1e6
    segs = top["segments"]

    # pass 1: parse and load data (touchstone) to know the data fmax
    parsed: list[tuple[str, Any, str]] = []
    data_fmax = 0.0
    first_order: tuple[str | None, bool] = (None, False)
    max_sv = 1.0
    for i, seg in enumerate(segs):
        path = f"segments[{i}]"
        w = f"{where}: {path}"
        if "type" not in seg:
            raise fail(where, f"{path}.type", "missing", f"use one of {', '.join(SEGMENT_SCHEMAS)}")
        kind = check_value(seg["type"], _SEG_TYPE, where=where, path=f"{path}.type")
        schema = SEGMENT_SCHEMAS[kind]
        if schema is None:  # a trace: eqtune.channel.trace.from_units checks its keys
            seg = {k: v for k, v in seg.items() if k not in ("type", "name")}
        else:
            seg = validate(seg, schema, where=where, path=path)
        if kind == "touchstone":
            fp = _file_ref(base_dir, rel_to, w, seg)
            seg_lane = seg.get("lane", lane)
            order = port_order or seg.get("port_order")
            if order not in (None, "auto"):
                try:
                    order = normalize_port_order(order, f"{w}.port_order")
                except ChannelError as exc:
                    raise ConfigError(str(exc)) from None
            d = load_sdd(fp, port_order=order, lane=seg_lane, ports=_ports(where, path, seg.get("ports")))
            ext = check_coverage(float(d.freqs_hz[-1]), baud, f"{w} ({fp.name})", extrap)
            if ext:
                extended.append(dict(ext, file=fp.name))
            data_fmax = max(data_fmax, float(d.freqs_hz[-1]))
            band_end = min(band_end, float(d.freqs_hz[-1]))
            max_sv = max(max_sv, d.max_singular_value)
            if first_order[0] is None and d.port_order is not None:
                first_order = (d.port_order, d.port_order_detected)
            rev = seg["reverse"]
            how = "" if d.port_order is None else f" [{d.port_order} {'detected' if d.port_order_detected else 'given'}]"
            parsed.append(("touchstone", (d, rev, ext), f"touchstone {fp.name}{how}{' (reversed)' if rev else ''}"))
        elif kind == "trace":
            seg.setdefault("temperature_c", temp)
            if temperature_c is not None:
                seg["temperature_c"] = temperature_c
            spec = from_units(seg, where, path)
            parsed.append(("trace", spec, f"trace {spec.kind} {spec.length_m / 0.0254:.3g} in {spec.material}"))
        elif kind == "line":
            delay = seg["delay_ps"] * 1e-12
            z = seg["zdiff_ohm"]
            loss = seg["loss_db"]
            lf = seg.get("loss_f_ghz", baud / 2) * 1e9
            parsed.append(("line", (delay, z, loss, lf), f"line {delay * 1e12:.3g} ps {z:.3g} ohm"))
        elif kind == "shunt_c":
            c = seg["c_pf"] * 1e-12
            parsed.append(("shunt_c", c, f"shunt C {c * 1e12:.3g} pF"))
        elif kind == "series_l":
            lh = seg["l_nh"] * 1e-9
            parsed.append(("series_l", lh, f"series L {lh * 1e9:.3g} nH"))
        elif kind == "com_package":
            case, side = seg["case"], seg["side"]
            parsed.append(("com_package", (case, side), f"COM package case {case} {side}"))

    fmax_extra = top.get("fmax_ghz")
    if fmax_extra is not None:
        data_fmax = max(data_fmax, fmax_extra * 1e9)
    if max(data_fmax, 2 * baud * 1e9) / df > MAX_GRID_POINTS:
        raise ConfigError(f"{where}: df_mhz / fmax_ghz give more than {MAX_GRID_POINTS} grid points; use a "
                          "coarser df_mhz (10 is the default)")
    grid = default_grid(data_fmax or None, baud, df)

    # cascaded as they are built: memory stays two blocks whatever the number of segments
    acc: np.ndarray | None = None

    def add(block: np.ndarray) -> None:
        nonlocal acc
        acc = block if acc is None else elements.cascade(acc, block)

    for kind, val, _ in parsed:
        if kind == "touchstone":
            d, rev, ext = val
            s = resample(d.freqs_hz, d.s, grid, extend=extrap if ext else None)
            add(elements.flip(s) if rev else s)
        elif kind == "trace":
            add(trace_sparams(grid, val))
        elif kind == "line":
            delay, z, loss, lf = val
            add(elements.short_line(grid, delay_s=delay, zdiff_ohm=z, loss_db=loss, loss_f_hz=lf))
        elif kind == "shunt_c":
            add(elements.shunt_c(grid, val))
        elif kind == "series_l":
            add(elements.series_l(grid, val))
        elif kind == "com_package":
            case, side = val
            add(_com_package(grid, case, side, where=where))
    assert acc is not None  # at least one segment (schema)
    s = acc
    term = top.get("termination_ohm")
    if term is not None:
        s = elements.renormalize(s, term)
    s[0] = s[0].real

    aggs: list[Aggressor] = []
    agg_orders: list[dict[str, Any]] = []
    raw_aggs = top["aggressors"]
    if with_aggressors and raw_aggs:
        thru_delay = impulse_peak_delay_s(grid, s[:, 1, 0])  # the victim's delay: scale of the order test
        for i, raw in enumerate(raw_aggs):
            path = f"aggressors[{i}]"
            w = f"{where}: {path}"
            a = validate(raw, AGGRESSOR_SCHEMA, where=where, path=path)
            kind = a["kind"]
            fp = _file_ref(base_dir, rel_to, w, a)
            lane = a.get("lane")
            # crosstalk files: order from the coupling's delay, the thru's order when that is ambiguous
            # (with a warning); the strongest LF transmission is the wrong rule for a crosstalk file
            d = load_sdd(fp, port_order=a.get("port_order"), lane=lane, ports=_ports(where, path, a.get("ports")),
                         fallback_order=first_order[0] or "1-2/3-4", crosstalk=True, thru_delay_s=thru_delay)
            if d.port_order_detected:  # an explicit port_order on the aggressor overrides the check
                check_set_agrees(first_order[0], d.port_order, w)
            amp = a.get("amplitude_v")
            ext = check_coverage(float(d.freqs_hz[-1]), baud, f"{w} ({fp.name})", extrap)
            if ext:
                extended.append(dict(ext, file=fp.name))
            band_end = min(band_end, float(d.freqs_hz[-1]))
            xs = resample(d.freqs_hz, d.s[:, 1:2, 0:1], grid, extend=extrap if ext else None)[:, 0, 0]
            aggs.append(Aggressor(name=str(a.get("name", fp.stem)), kind="FEXT" if kind == "FEXT" else "NEXT", sdd21=xs, amplitude_v=amp))
            agg_orders.append({"name": aggs[-1].name, "port_order": d.port_order,
                               "detected": d.port_order_detected})

    return Channel(
        name=top.get("name", default_name), freqs_hz=grid, sdd21=s[:, 1, 0].copy(), baud_gbd=baud,
        modulation=modulation, serdes_profile=top["serdes_profile"],
        sdd11=s[:, 0, 0].copy(), sdd22=s[:, 1, 1].copy(), aggressors=tuple(aggs), source=source,
        port_order=first_order[0], temperature_c=temp,
        meta={"description": top["description"], "port_order_detected": first_order[1],
              "data_fmax_hz": data_fmax or None, "max_singular_value": max_sv,
              "segments": [desc for *_, desc in parsed], "aggressor_port_orders": agg_orders,
              "extrapolated": extended, "band_end_hz": None if band_end == float("inf") else band_end},
    )


def _com_package(grid: np.ndarray, case: int, side: str, where: str) -> np.ndarray:
    try:
        s = np.asarray(com_package_sparams(grid, case=case, side=side))
    except EqtuneError as exc:
        raise ConfigError(f"{where}: com_package: {exc}") from None
    # the model puts the die at port 1; an RX package sits after the channel with its die at port 2
    return elements.flip(s) if side == "rx" else s
