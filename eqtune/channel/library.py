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

A bare ``.sNp`` is a one-segment channel at 53.125 GBd PAM4 with the profile ``host-lr-112g``.

``channel_from_definition(doc, base_dir=...)`` builds a channel from the same definition as a dict
(e.g. a TOML table changed in memory, as a study's parametric sweep does) without writing a file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from eqtune.channel import elements
from eqtune.channel.grid import DEFAULT_DF_HZ, default_grid, resample
from eqtune.channel.mixedmode import impulse_peak_delay_s, normalize_port_order
from eqtune.channel.model import Aggressor, Channel, Modulation, is_modulation
from eqtune.channel.package import com_package_sparams
from eqtune.channel.touchstone import load_sdd
from eqtune.channel.trace import from_units, trace_sparams
from eqtune.errors import ChannelError, ConfigError, EqtuneError
from eqtune.resources import channels_dir

DEFAULT_BAUD_GBD = 53.125
DEFAULT_MODULATION: Modulation = "PAM4"
DEFAULT_PROFILE = "host-lr-112g"
TOP_KEYS = {"name", "description", "baud_gbd", "modulation", "serdes_profile", "temperature_c", "df_mhz",
            "fmax_ghz", "termination_ohm", "segments", "aggressors"}
MAX_GRID_POINTS = 2_000_000
SEGMENT_KEYS = {
    "touchstone": {"file", "port_order", "lane", "ports", "reverse"},
    "line": {"delay_ps", "zdiff_ohm", "loss_db", "loss_f_ghz"},
    "shunt_c": {"c_pf"},
    "series_l": {"l_nh"},
    "com_package": {"case", "side"},
    "trace": None,  # checked by trace.from_units
}
AGGRESSOR_KEYS = {"name", "kind", "file", "port_order", "lane", "ports", "amplitude_v"}
MODULATIONS = ("NRZ", "PAM4", "PAM6")


def list_channels() -> list[str]:
    """Names of the shipped library channels (``channels/*.toml``), sorted."""
    d = channels_dir()
    return sorted(p.stem for p in d.glob("*.toml")) if d.is_dir() else []


def resolve(name_or_path: str | Path) -> Path:
    """A library name, a .toml path or a .sNp path -> an existing file path."""
    s = str(name_or_path)
    p = Path(s)
    if p.suffix.lower() == ".toml" or p.suffix.lower().startswith(".s") or p.exists():
        if not p.is_file():
            raise ChannelError(f"{p}: no such channel file; give a library name ({', '.join(list_channels())}) "
                               "or an existing .toml/.sNp path")
        return p
    lib = channels_dir() / f"{s}.toml"
    if lib.is_file():
        return lib
    raise ChannelError(f"channel {s!r} is not in the library ({', '.join(list_channels()) or 'empty'}); "
                       "give a library name, a .toml or a .sNp path")


def load_channel(name_or_path: str | Path, *, temperature_c: float | None = None, aggressors: bool = True,
                 port_order: str | None = None, df_hz: float | None = None) -> Channel:
    """Load a library channel, a channel TOML or a bare Touchstone file onto the default grid.

    ``temperature_c`` overrides the temperature of every trace segment; ``port_order`` overrides the
    order of every 4-port Touchstone segment ("1-2/3-4" or "1-3/2-4"); ``aggressors=False`` drops
    crosstalk. Grid: see ``eqtune.channel.grid`` (uniform, 0 Hz, df = 10 MHz by default).
    """
    path = resolve(name_or_path)
    if path.suffix.lower() == ".toml":
        return _load_toml(path, temperature_c=temperature_c, with_aggressors=aggressors,
                          port_order=port_order, df_hz=df_hz)
    return _load_touchstone_channel(path, port_order=port_order, df_hz=df_hz, temperature_c=temperature_c)


def _load_touchstone_channel(path: Path, *, port_order: str | None, df_hz: float | None,
                             temperature_c: float | None) -> Channel:
    d = load_sdd(path, port_order=port_order)
    grid = default_grid(d.freqs_hz[-1], DEFAULT_BAUD_GBD, df_hz or DEFAULT_DF_HZ)
    s = resample(d.freqs_hz, d.s, grid)
    return Channel(name=path.stem, freqs_hz=grid, sdd21=s[:, 1, 0], baud_gbd=DEFAULT_BAUD_GBD,
                   modulation=DEFAULT_MODULATION, serdes_profile=DEFAULT_PROFILE, sdd11=s[:, 0, 0],
                   sdd22=s[:, 1, 1], source=str(path), port_order=d.port_order, temperature_c=temperature_c,
                   meta={"port_order_detected": d.port_order_detected, "data_fmax_hz": float(d.freqs_hz[-1]),
                         "max_singular_value": d.max_singular_value, "segments": [f"touchstone {path.name}"]})


def _num(where: str, v: Any, *, positive: bool = False, nonneg: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise ConfigError(f"{where}: must be a number, got {v!r}")
    if positive and v <= 0:
        raise ConfigError(f"{where}: must be > 0, got {v!r}")
    if nonneg and v < 0:
        raise ConfigError(f"{where}: must be >= 0 (negative values are not physical), got {v!r}")
    return float(v)


def _ports(where: str, v: Any) -> tuple[int, int, int, int] | None:
    if v is None:
        return None
    if (not isinstance(v, list) or len(v) != 4
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v) or len(set(v)) != 4):
        raise ConfigError(f"{where}.ports: give four distinct 1-based port numbers [TX+, TX-, RX+, RX-], got {v!r}")
    return (v[0], v[1], v[2], v[3])


def _check_keys(where: str, table: dict, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(repr(k) for k in unknown)}; allowed keys: "
                          f"{', '.join(sorted(allowed))}")


def _file_ref(base_dir: Path, rel_to: str, where: str, table: dict) -> Path:
    ref = table.get("file")
    if not isinstance(ref, str) or not ref:
        raise ConfigError(f"{where}.file: give the Touchstone file path (relative to {rel_to})")
    p = Path(ref)
    p = p if p.is_absolute() else base_dir / p
    if not p.is_file():
        raise ConfigError(f"{where}.file: {ref!r} not found (looked for {p}); fix the path or generate it "
                          "(python -m eqtune.channel.generate)")
    return p


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); a channel file is UTF-8 TOML") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None


def _load_toml(path: Path, *, temperature_c: float | None, with_aggressors: bool, port_order: str | None,
               df_hz: float | None) -> Channel:
    return _build(_read_toml(path), base_dir=path.parent, rel_to=path.name, where=str(path), source=str(path),
                  default_name=path.stem, temperature_c=temperature_c, with_aggressors=with_aggressors,
                  port_order=port_order, df_hz=df_hz)


def channel_from_definition(doc: dict, *, base_dir: str | Path | None = None, name: str | None = None,
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


def _build(doc: dict, *, base_dir: Path, rel_to: str, where: str, source: str, default_name: str,
           temperature_c: float | None, with_aggressors: bool, port_order: str | None,
           df_hz: float | None) -> Channel:
    _check_keys(where, doc, TOP_KEYS)
    baud = _num(f"{where}: baud_gbd", doc.get("baud_gbd", DEFAULT_BAUD_GBD), positive=True)
    modulation = str(doc.get("modulation", DEFAULT_MODULATION)).upper()
    if not is_modulation(modulation):
        raise ConfigError(f"{where}: modulation: {doc['modulation']!r} is unknown; use {', '.join(MODULATIONS)}")
    temp = temperature_c if temperature_c is not None else doc.get("temperature_c", 25.0)
    temp = _num(f"{where}: temperature_c", temp)
    df = df_hz or _num(f"{where}: df_mhz", doc.get("df_mhz", DEFAULT_DF_HZ / 1e6), positive=True) * 1e6
    segs = doc.get("segments")
    if not isinstance(segs, list) or not segs:
        raise ConfigError(f"{where}: segments: give at least one [[segments]] table")

    # pass 1: parse and load data (touchstone) to know the data fmax
    parsed: list[tuple[str, Any, str]] = []
    data_fmax = 0.0
    first_order: tuple[str | None, bool] = (None, False)
    max_sv = 1.0
    for i, seg in enumerate(segs):
        w = f"{where}: segments[{i}]"
        if not isinstance(seg, dict):
            raise ConfigError(f"{w}: must be a table ([[segments]])")
        seg = dict(seg)
        kind = seg.pop("type", None)
        seg.pop("name", None)
        if kind not in SEGMENT_KEYS:
            raise ConfigError(f"{w}.type: {kind!r} is unknown; use one of {', '.join(SEGMENT_KEYS)}")
        allowed = SEGMENT_KEYS[kind]
        if allowed is not None:
            _check_keys(w, seg, allowed)
        if kind == "touchstone":
            fp = _file_ref(base_dir, rel_to, w, seg)
            lane = seg.get("lane")
            if lane is not None:
                lane = int(_num(f"{w}.lane", lane, positive=True))
            order = port_order or seg.get("port_order")
            if order not in (None, "auto"):
                try:
                    order = normalize_port_order(order, f"{w}.port_order")
                except ChannelError as exc:
                    raise ConfigError(str(exc)) from None
            d = load_sdd(fp, port_order=order, lane=lane, ports=_ports(w, seg.get("ports")))
            data_fmax = max(data_fmax, float(d.freqs_hz[-1]))
            max_sv = max(max_sv, d.max_singular_value)
            if first_order[0] is None and d.port_order is not None:
                first_order = (d.port_order, d.port_order_detected)
            rev = seg.get("reverse", False)
            if not isinstance(rev, bool):
                raise ConfigError(f"{w}.reverse: must be true or false, got {rev!r}")
            how = "" if d.port_order is None else f" [{d.port_order} {'detected' if d.port_order_detected else 'given'}]"
            parsed.append(("touchstone", (d, rev), f"touchstone {fp.name}{how}{' (reversed)' if rev else ''}"))
        elif kind == "trace":
            seg.setdefault("temperature_c", temp)
            if temperature_c is not None:
                seg["temperature_c"] = temperature_c
            spec = from_units(seg, w)
            parsed.append(("trace", spec, f"trace {spec.kind} {spec.length_m / 0.0254:.3g} in {spec.material}"))
        elif kind == "line":
            delay = _num(f"{w}.delay_ps", seg.get("delay_ps", 0.0), nonneg=True) * 1e-12
            z = _num(f"{w}.zdiff_ohm", seg.get("zdiff_ohm", 100.0), positive=True)
            loss = _num(f"{w}.loss_db", seg.get("loss_db", 0.0), nonneg=True)
            lf = _num(f"{w}.loss_f_ghz", seg.get("loss_f_ghz", baud / 2), positive=True) * 1e9
            parsed.append(("line", (delay, z, loss, lf), f"line {delay * 1e12:.3g} ps {z:.3g} ohm"))
        elif kind == "shunt_c":
            c = _num(f"{w}.c_pf", seg.get("c_pf"), nonneg=True) * 1e-12
            parsed.append(("shunt_c", c, f"shunt C {c * 1e12:.3g} pF"))
        elif kind == "series_l":
            lh = _num(f"{w}.l_nh", seg.get("l_nh"), nonneg=True) * 1e-9
            parsed.append(("series_l", lh, f"series L {lh * 1e9:.3g} nH"))
        elif kind == "com_package":
            case = int(_num(f"{w}.case", seg.get("case", 1), positive=True))
            side = str(seg.get("side", "tx")).lower()
            if side not in ("tx", "rx"):
                raise ConfigError(f"{w}.side: {side!r} is unknown; use 'tx' or 'rx'")
            parsed.append(("com_package", (case, side), f"COM package case {case} {side}"))

    fmax_extra = doc.get("fmax_ghz")
    if fmax_extra is not None:
        data_fmax = max(data_fmax, _num(f"{where}: fmax_ghz", fmax_extra, positive=True) * 1e9)
    if max(data_fmax, 2 * baud * 1e9) / df > MAX_GRID_POINTS:
        raise ConfigError(f"{where}: df_mhz / fmax_ghz give more than {MAX_GRID_POINTS} grid points; use a "
                          "coarser df_mhz (10 is the default)")
    grid = default_grid(data_fmax or None, baud, df)

    blocks = []
    for kind, val, _ in parsed:
        if kind == "touchstone":
            d, rev = val
            s = resample(d.freqs_hz, d.s, grid)
            blocks.append(elements.flip(s) if rev else s)
        elif kind == "trace":
            blocks.append(trace_sparams(grid, val))
        elif kind == "line":
            delay, z, loss, lf = val
            blocks.append(elements.short_line(grid, delay_s=delay, zdiff_ohm=z, loss_db=loss, loss_f_hz=lf))
        elif kind == "shunt_c":
            blocks.append(elements.shunt_c(grid, val))
        elif kind == "series_l":
            blocks.append(elements.series_l(grid, val))
        elif kind == "com_package":
            case, side = val
            blocks.append(_com_package(grid, case, side, where=where))
    s = elements.cascade_all(blocks)
    term = doc.get("termination_ohm")
    if term is not None:
        s = elements.renormalize(s, _num(f"{where}: termination_ohm", term, positive=True))
    s[0] = s[0].real

    aggs: list[Aggressor] = []
    agg_orders: list[dict] = []
    raw_aggs = doc.get("aggressors", [])
    if not isinstance(raw_aggs, list):
        raise ConfigError(f"{where}: aggressors: must be an array of tables ([[aggressors]])")
    if with_aggressors and raw_aggs:
        thru_delay = impulse_peak_delay_s(grid, s[:, 1, 0])  # the victim's delay: scale of the order test
        for i, a in enumerate(raw_aggs):
            w = f"{where}: aggressors[{i}]"
            if not isinstance(a, dict):
                raise ConfigError(f"{w}: must be a table ([[aggressors]])")
            _check_keys(w, a, AGGRESSOR_KEYS)
            kind = str(a.get("kind", "FEXT")).upper()
            if kind not in ("FEXT", "NEXT"):
                raise ConfigError(f"{w}.kind: {a.get('kind')!r} is unknown; use 'FEXT' or 'NEXT'")
            fp = _file_ref(base_dir, rel_to, w, a)
            lane = a.get("lane")
            lane = None if lane is None else int(_num(f"{w}.lane", lane, positive=True))
            # crosstalk files: order from the coupling's delay, the thru's order when that is ambiguous
            # (with a warning); the strongest LF transmission is the wrong rule here (issue 16)
            d = load_sdd(fp, port_order=a.get("port_order"), lane=lane, ports=_ports(w, a.get("ports")),
                         fallback_order=first_order[0] or "1-2/3-4", crosstalk=True, thru_delay_s=thru_delay)
            amp = a.get("amplitude_v")
            amp = None if amp is None else _num(f"{w}.amplitude_v", amp, positive=True)
            xs = resample(d.freqs_hz, d.s[:, 1:2, 0:1], grid)[:, 0, 0]
            aggs.append(Aggressor(name=str(a.get("name", fp.stem)), kind="FEXT" if kind == "FEXT" else "NEXT", sdd21=xs, amplitude_v=amp))
            agg_orders.append({"name": aggs[-1].name, "port_order": d.port_order,
                               "detected": d.port_order_detected})

    return Channel(
        name=str(doc.get("name", default_name)), freqs_hz=grid, sdd21=s[:, 1, 0].copy(), baud_gbd=baud,
        modulation=modulation, serdes_profile=str(doc.get("serdes_profile", DEFAULT_PROFILE)),
        sdd11=s[:, 0, 0].copy(), sdd22=s[:, 1, 1].copy(), aggressors=tuple(aggs), source=source,
        port_order=first_order[0], temperature_c=temp,
        meta={"description": str(doc.get("description", "")), "port_order_detected": first_order[1],
              "data_fmax_hz": data_fmax or None, "max_singular_value": max_sv,
              "segments": [desc for *_, desc in parsed], "aggressor_port_orders": agg_orders},
    )


def _com_package(grid: np.ndarray, case: int, side: str, where: str) -> np.ndarray:
    try:
        s = np.asarray(com_package_sparams(grid, case=case, side=side))
    except EqtuneError as exc:
        raise ConfigError(f"{where}: com_package: {exc}") from None
    # the model puts the die at port 1; an RX package sits after the channel with its die at port 2
    return elements.flip(s) if side == "rx" else s
