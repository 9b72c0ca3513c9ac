"""Declarative instrument definitions: ``drivers/*.toml`` loaded and validated.

An instrument is DATA, in the spirit of PyMeasure's ``Instrument.control(get, set, doc, validator)``:
a table of properties (SCPI get/set strings with typed values and validators) plus ordered
procedures (setup, measure_ber, measure_eye) made of property steps. Nothing in a definition
is evaluated as code: command templates accept only the placeholders listed in
``PLACEHOLDERS`` and are filled with ``str.format`` on plain values; validators are data
(range / choices / regex). Adding an instrument is adding a file.

Schema (see ``drivers/generic_scpi_bert.toml`` for a commented example)::

    [instrument]
    name = "keysight-m8040a"             # unique, [a-z0-9-]
    title = "Keysight M8040A ..."        # human text
    vendor = "Keysight"
    kind = "bert"                        # bert | scope
    idn_match = '(?i)^keysight.*,M80[47]0'  # regex searched in "manufacturer,model,serial,firmware"
    reference = "programming guide title and edition"
    timeout_ms = 5000                    # optional, default I/O timeout
    lanes = [1, 8]                       # optional, allowed lane numbers (inclusive range)
    channels = 4                         # optional (BERT), error-detector channels gated together in one
                                         # dwell (default 1); > 1 splits measure_ber at its dwell wait:
                                         # the steps before it run for every lane, one wait, then the rest
    channels_ref = "data sheet, table"   # where the channel count comes from (required with channels > 1)
    clear = "*CLS"                       # optional, sent on open ("" to disable)

    [errors]                             # the SCPI error queue
    query = ":SYST:ERR?"
    no_error = '^[+]?0\\s*,'             # regex: a reply matching it means "queue empty"
    max_reads = 20

    [lane_map]                           # optional: lane number -> instrument channel name ({channel})
    1 = "CHAN1A"

    [defaults]                           # optional: default procedure parameters
    pattern = "PRBS31Q"

    [properties.NAME]
    get = ":CMD?"                        # query template   (at least one of get/set/command)
    set = ":CMD {value}"                 # write template, needs {value}
    command = ":CMD:STARt"               # an action without a value
    type = "float"                       # float | int | str | bool | record | floats
    fields = ["a", "b"]                  # record: names of the comma-separated fields
    unit = "s"
    range = [0, 10]                      # validator: range, or choices = [...], or regex = "..."
    retry = true                         # the query has no side effects: retried once after a timeout
                                         # (default false: a query is never repeated unless declared safe)
    ref = "guide, section"               # vendor programming-guide citation (required)
    unverified = "why"                   # the command could not be confirmed from a public source
                                         # (manual or script); listed by `eqtune drivers list/scan`
    doc = "text"
    true = "ON"                          # bool: text written for true / false (default ON / OFF)
    false = "OFF"
    # emulator hints (eqtune.emulate.scpi), ignored by the runtime:
    default = "PRBS31Q"                  # initial state of a settable property
    emulate = "{bits}"                   # reply template for a query, from emulator variables
    action = "start"                     # command action (start|stop|reset) or {VALUE = action} table
    selects = "lane"                     # this property's value selects the lane | eye

    [emulator]                           # optional, for eqtune.emulate.scpi
    idn = "ACME,BERT-8,EMU1,1.0"         # *IDN? reply of the emulator (must match idn_match)
    eye_noise_mv = 0.3                   # Gaussian noise added to emulated eye heights

    [procedures]                         # ordered steps, executed by eqtune.drivers.instrument
    setup = [ { set = "pattern", value = "{pattern}" } ]
    measure_ber = [ { command = "start" }, { wait = "dwell_s" }, { query = "bits", store = "bits" } ]

Step forms: ``{set=P, value=V}``, ``{command=P}``, ``{query=P, store=K, scale=F}``,
``{wait="dwell_s"}`` (or seconds), ``{sum=[K, ...], store=K}``, ``{collect=[K, ...], store=K}``,
``{check_errors=true}``. ``K`` may address a record field as ``key.field``. A BERT's
``measure_ber`` must store ``bits`` and ``errors``; a scope's ``measure_eye`` stores any of
``eye_height_mv`` (list, bottom to top), ``eye_width_ps``, ``eye_width_ui``, ``tdecq_db``.
"""

from __future__ import annotations

import re
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.config_schema import Field, Schema, fail, validate
from eqtune.errors import ConfigError, EqRangeError, EqtuneError
from eqtune.readers import MAX_TEXT_BYTES, loads_toml

KINDS = ("bert", "scope")
TYPES = ("float", "int", "str", "bool", "record", "floats")
ACTIONS = ("start", "stop", "reset")
SELECTS = ("lane", "eye")
# placeholders a command template may use: the value written, the lane number, the lane's channel name
PLACEHOLDERS = frozenset({"value", "lane", "channel"})
# variables an emulator reply template may use (see eqtune/emulate/scpi.py)
EMULATE_VARS = frozenset(
    {
        "value", "lane", "channel", "time", "bits", "errors", "ber", "ones", "zeros", "err_ones",
        "err_zeros", "eye", "eye_height_v", "eye_height_mv", "eye_width_s", "eye_width_ps",
        "eye_width_ui", "tdecq_db", "running",
    }
)
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_STEP_OPS = ("set", "command", "query", "wait", "sum", "collect", "check_errors")
_SCPI = "a non-empty SCPI string"

# The definition format (module docstring) as eqtune.config_schema schemas; the rules that tie keys
# together (templates vs placeholders, one validator, procedures vs properties) are checked below.
INSTRUMENT_SCHEMA = Schema((
    Field("name", "string", required=True, nonempty=True),
    Field("title", "string", required=True, nonempty=True),
    Field("vendor", "string", required=True, nonempty=True),
    Field("kind", "string", required=True, nonempty=True, choices=KINDS),
    Field("idn_match", "string", required=True, nonempty=True, hint="a regex found in the *IDN? reply"),
    Field("reference", "string", required=True, nonempty=True, hint="cite the vendor programming guide"),
    Field("timeout_ms", "integer", ge=10, le=600_000, default=5000),
    Field("lanes", "list", min_len=2, max_len=2, items=Field("lane", "integer", ge=1), default=(1, 8),
          hint="give [first, last] lane numbers, e.g. [1, 8]"),
    Field("clear", "string", default="*CLS"),
    Field("channels", "integer", ge=1, le=64, default=1,
          hint="give the number of error-detector channels the unit gates together, e.g. 4"),
    Field("channels_ref", "string", default="", hint="cite the vendor data sheet for the channel count"),
))
ERRORS_SCHEMA = Schema((
    Field("query", "string", nonempty=True, default=":SYST:ERR?", hint=_SCPI),
    Field("no_error", "string", default=r"^[+]?0\s*,", hint="a regex matching the no-error reply"),
    Field("max_reads", "integer", ge=1, le=10_000, default=20),
))
PROPERTY_SCHEMA = Schema((
    Field("get", "string", nonempty=True, hint=_SCPI), Field("set", "string", nonempty=True, hint=_SCPI),
    Field("command", "string", nonempty=True, hint=_SCPI),
    Field("type", "string", choices=TYPES, default="str"),
    Field("fields", "list", items=Field("field", "string", nonempty=True), default=()),
    Field("unit", "string", default=""),
    Field("range", "list", min_len=2, max_len=2, items=Field("bound", "number"),
          hint="give [low, high] numbers with low <= high"),
    Field("choices", "list", nonempty=True), Field("regex", "string"),
    Field("retry", "bool", default=False),
    Field("ref", "string", required=True, nonempty=True,
          hint="cite the vendor programming guide (document title, section)"),
    Field("doc", "string", default=""), Field("default", "any"), Field("emulate", "scalar"), Field("action", "any"),
    Field("selects", "string", choices=SELECTS),
    Field("true", "string", default="ON"), Field("false", "string", default="OFF"),
    Field("unverified", "string", nonempty=True, hint="say why the command could not be confirmed"),
))
_NAMES = Field("names", "list", nonempty=True, items=Field("name", "string", nonempty=True),
               hint="give a list of stored result names")
STEP_SCHEMA = Schema((
    Field("set", "string", nonempty=True), Field("command", "string", nonempty=True),
    Field("query", "string", nonempty=True), Field("wait", "any"),
    Field("sum", "list", nonempty=True, items=_NAMES.items, hint=_NAMES.hint),
    Field("collect", "list", nonempty=True, items=_NAMES.items, hint=_NAMES.hint),
    Field("check_errors", "bool"), Field("value", "any"), Field("store", "string", nonempty=True),
    Field("scale", "number", default=1.0),
), hint='a step is a table like { set = "prop", value = ... }')
DEFINITION_SCHEMA = Schema((
    Field("instrument", "table", required=True, schema=INSTRUMENT_SCHEMA,
          hint="every definition starts with an [instrument] table"),
    Field("errors", "table", schema=ERRORS_SCHEMA, default={}),
    Field("lane_map", "table", values=Field("channel", "scalar"), default={}),
    Field("defaults", "table", default={}),
    Field("properties", "table", required=True, nonempty=True, values=Field("property", "table"),
          hint="at least one [properties.NAME] table is required"),
    Field("procedures", "table", values=Field("procedure", "list", hint="a list of step tables"), default={}),
    Field("emulator", "table", default={}),
))
# outputs each kind's measurement procedure must produce
REQUIRED_PROCEDURES = {"bert": ("measure_ber",), "scope": ("measure_eye",)}
BER_OUTPUTS = ("bits", "errors")
EYE_OUTPUTS = ("eye_height_mv", "eye_width_ps", "eye_width_ui", "tdecq_db")


def template_fields(template: str) -> list[tuple[str, str]]:
    """(name, format_spec) of every ``{...}`` in a template; ConfigError-free (caller checks names)."""
    out = []
    for _lit, name, spec, conv in string.Formatter().parse(template):
        if name is None:
            continue
        if conv or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f"placeholder '{{{name}}}' is not a plain name")
        out.append((name, spec or ""))
    return out


@dataclass(frozen=True)
class Validator:
    """Range, choices or regex: checked before any I/O."""

    lo: float | None = None
    hi: float | None = None
    choices: tuple[Any, ...] | None = None
    regex: str | None = None

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.lo is not None or self.hi is not None:
            return f"in [{self.lo}, {self.hi}]"
        if self.regex is not None:
            return f"matching /{self.regex}/"
        return "any value"


@dataclass(frozen=True)
class Property:
    name: str
    get: str | None = None
    set: str | None = None
    command: str | None = None
    type: str = "str"
    fields: tuple[str, ...] = ()
    unit: str = ""
    validator: Validator = field(default_factory=Validator)
    retry: bool = False
    ref: str = ""
    doc: str = ""
    default: Any = None
    emulate: str | None = None
    action: str | dict[str, str] | None = None
    selects: str | None = None
    true_text: str = "ON"
    false_text: str = "OFF"
    unverified: str = ""  # why this command could not be confirmed from a public source ("" = confirmed)

    def check(self, value: Any, *, where: str = "") -> Any:
        """Coerce ``value`` to the declared type and enforce the validator (EqRangeError/InputError)."""
        label = f"{where}property '{self.name}'"
        try:
            if self.type == "float":
                v: Any = float(value)
            elif self.type == "int":
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
                v = int(value)
            elif self.type == "bool":
                if isinstance(value, str):
                    low = value.strip().lower()
                    if low not in ("1", "0", "on", "off", "true", "false"):
                        raise ValueError
                    v = low in ("1", "on", "true")
                else:
                    v = bool(value)
            else:
                v = value if self.type != "str" else str(value)
        except (TypeError, ValueError):
            raise EqRangeError(f"{label}: {value!r} is not a valid {self.type}; give a {self.type} "
                               f"{self.validator.describe()}") from None
        val = self.validator
        if val.choices is not None:
            for c in val.choices:
                if (isinstance(c, str) and isinstance(v, str) and c.lower() == v.lower()) or c == v:
                    return c
            raise EqRangeError(f"{label}: {value!r} is not allowed; use {val.describe()}")
        if val.lo is not None or val.hi is not None:
            if (val.lo is not None and v < val.lo) or (val.hi is not None and v > val.hi):
                unit = f" {self.unit}" if self.unit else ""
                raise EqRangeError(f"{label}: {value!r}{unit} is out of range; use a value {val.describe()}{unit}")
        if val.regex is not None and not re.fullmatch(val.regex, str(v)):
            raise EqRangeError(f"{label}: {value!r} does not match /{val.regex}/; {self.doc or 'see the definition'}")
        return v

    def format_value(self, value: Any) -> str:
        """SCPI text for a (checked) value."""
        if self.type == "bool":
            return self.true_text if value else self.false_text
        if self.type == "float":
            return f"{float(value):.12g}"
        return str(value)


@dataclass(frozen=True)
class Step:
    op: str
    target: Any  # property name, wait seconds/param name, list of keys, or True
    value: Any = None
    store: str | None = None
    scale: float = 1.0


@dataclass(frozen=True)
class Definition:
    name: str
    title: str
    vendor: str
    kind: str
    idn_match: re.Pattern[str]
    path: Path
    reference: str = ""
    timeout_ms: int = 5000
    lanes: tuple[int, int] = (1, 8)
    channels: int = 1  # error-detector channels gated together in one dwell (a multi-channel BERT)
    channels_ref: str = ""
    clear: str = "*CLS"
    error_query: str = ":SYST:ERR?"
    no_error: re.Pattern[str] = re.compile(r"^[+]?0\s*,")
    max_error_reads: int = 20
    lane_map: dict[int, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    properties: dict[str, Property] = field(default_factory=dict)
    procedures: dict[str, tuple[Step, ...]] = field(default_factory=dict)
    emulator: dict[str, Any] = field(default_factory=dict)

    def unverified(self) -> dict[str, str]:
        """Properties whose command is not confirmed by a public source: name -> reason."""
        return {n: p.unverified for n, p in self.properties.items() if p.unverified}

    def matches(self, idn: str) -> bool:
        return bool(self.idn_match.search(idn))

    def channel_of(self, lane: int) -> str:
        return self.lane_map.get(lane, str(lane))

    def lane_of(self, channel: str) -> int | None:
        for lane, ch in self.lane_map.items():
            if ch.lower() == channel.lower():
                return lane
        try:
            return int(channel)
        except ValueError:
            return None

    def check_lane(self, lane: int) -> int:
        lo, hi = self.lanes
        try:
            lane_i = int(lane)
        except (TypeError, ValueError):
            raise EqRangeError(f"{self.name}: lane {lane!r} is not a number; use a lane in {lo}..{hi}") from None
        if not lo <= lane_i <= hi:
            raise EqRangeError(f"{self.name}: lane {lane} is out of range; this instrument has lanes {lo}..{hi}")
        return lane_i

    def prop(self, name: str) -> Property:
        try:
            return self.properties[name]
        except KeyError:
            raise ConfigError(f"{self.path.name}: no property '{name}'; known: {', '.join(sorted(self.properties))}") from None


def _where(path: Path) -> str:
    return f"driver definition {path}"


def _err(path: Path, key: str, msg: str) -> EqtuneError:
    """A ConfigError naming the file and the key path (``properties.bits.get``)."""
    return fail(_where(path), key, msg)


def _parse_property(path: Path, name: str, raw: Any) -> Property:
    key = f"properties.{name}"
    if not _NAME_RE.match(name):
        raise _err(path, key, "property names are lower-case letters, digits, '_' or '-'")
    given, raw = raw, validate(raw, PROPERTY_SCHEMA, where=_where(path), path=key)
    if not any(raw.get(k) for k in ("get", "set", "command")):
        raise _err(path, key, "needs at least one of get, set, command")
    ptype = raw["type"]
    for k in ("get", "set", "command"):
        tpl = raw.get(k)
        if tpl is None:
            continue
        try:
            names = {n for n, _ in template_fields(tpl)}
        except ValueError as exc:
            raise _err(path, f"{key}.{k}", str(exc)) from None
        bad = names - PLACEHOLDERS
        if bad:
            raise _err(path, f"{key}.{k}", f"uses unknown placeholder(s) {sorted(bad)}; allowed: {sorted(PLACEHOLDERS)}")
        if k == "set" and "value" not in names:
            raise _err(path, f"{key}.set", "must contain {value}; use 'command' for an action without a value")
        if k != "set" and "value" in names:
            raise _err(path, f"{key}.{k}", "cannot contain {value}")
    validators = [k for k in ("range", "choices", "regex") if k in raw]
    if len(validators) > 1:
        raise _err(path, key, f"give only one validator, not {validators}")
    val = Validator()
    if "range" in raw:
        r = given["range"]  # as written: an int range stays int in messages
        if not r[0] <= r[1]:
            raise _err(path, f"{key}.range", "must be [low, high] numbers with low <= high")
        if ptype not in ("float", "int"):
            raise _err(path, f"{key}.range", "needs type float or int")
        val = Validator(lo=r[0], hi=r[1])
    elif "choices" in raw:
        val = Validator(choices=tuple(raw["choices"]))
    elif "regex" in raw:
        try:
            re.compile(raw["regex"])
        except re.error as exc:
            raise _err(path, f"{key}.regex", f"does not compile: {exc}") from None
        val = Validator(regex=raw["regex"])
    if raw.get("set") and not validators and ptype != "bool":
        raise _err(path, key, "a settable property needs a validator (range, choices or regex)")
    fields_ = raw["fields"]
    if ptype == "record":
        if not fields_:
            raise _err(path, f"{key}.fields", "type 'record' needs 'fields' = [names of the comma-separated values]")
    elif fields_:
        raise _err(path, f"{key}.fields", "is only for type 'record'")
    emulate = raw.get("emulate")
    if emulate is not None:
        try:
            names = {n for n, _ in template_fields(str(emulate))}
        except ValueError as exc:
            raise _err(path, f"{key}.emulate", str(exc)) from None
        bad = names - EMULATE_VARS
        if bad:
            raise _err(path, f"{key}.emulate", f"uses unknown variable(s) {sorted(bad)}; allowed: {sorted(EMULATE_VARS)}")
    action = raw.get("action")
    if action is not None:
        acts = action.values() if isinstance(action, dict) else [action]
        if any(a not in ACTIONS for a in acts):
            raise _err(path, f"{key}.action", f"must be one of {ACTIONS} (or a table value -> action)")
    prop = Property(
        name=name, get=raw.get("get"), set=raw.get("set"), command=raw.get("command"), type=ptype,
        fields=tuple(fields_), unit=raw["unit"], validator=val, retry=raw["retry"],
        ref=raw["ref"], doc=raw["doc"], default=raw.get("default"), emulate=emulate,
        action=action, selects=raw.get("selects"), true_text=raw["true"], false_text=raw["false"],
        unverified=raw.get("unverified", ""),
    )
    if prop.default is not None and prop.set:
        try:
            prop.check(prop.default)
        except EqRangeError as exc:
            raise _err(path, f"{key}.default", f"fails its own validator: {exc}") from None
    return prop


def _parse_steps(path: Path, pname: str, raw: Any, props: dict[str, Property]) -> tuple[Step, ...]:
    key = f"procedures.{pname}"
    steps = []
    for i, step in enumerate(raw):
        where = f"{key}[{i}]"
        s = validate(step, STEP_SCHEMA, where=_where(path), path=where)
        ops = [o for o in _STEP_OPS if o in s]
        if len(ops) != 1:
            raise _err(path, where, f"needs exactly one of {', '.join(_STEP_OPS)}")
        op = ops[0]
        target = s[op]
        if op in ("set", "command", "query"):
            prop = props.get(target)
            if prop is None:
                raise _err(path, f"{where}.{op}", f"no property '{target}'; properties: {', '.join(props)}")
            if op == "set" and (not prop.set or "value" not in s):
                raise _err(path, where, f"property '{target}' has no 'set' template or the step has no 'value'")
            if op == "command" and not prop.command:
                raise _err(path, where, f"property '{target}' has no 'command' template")
            if op == "query":
                if not prop.get:
                    raise _err(path, where, f"property '{target}' has no 'get' template")
                if not s.get("store"):
                    raise _err(path, where, "a query step needs 'store' (the result name)")
        elif op == "wait":
            if not (isinstance(target, int | float) and target >= 0) and target != "dwell_s":
                raise _err(path, where, "'wait' is seconds (>= 0) or \"dwell_s\"")
        elif op in ("sum", "collect"):
            if not s.get("store"):
                raise _err(path, where, f"a {op} step needs 'store'")
        steps.append(Step(op=op, target=target, value=s.get("value"), store=s.get("store"), scale=s["scale"]))
    return tuple(steps)


def _stored(steps: tuple[Step, ...]) -> set[str]:
    return {s.store for s in steps if s.store}


def parse_definition(data: dict[str, Any], path: Path) -> Definition:
    """Validate a parsed TOML document; every problem is a ConfigError naming the file and key."""
    data = validate(data, DEFINITION_SCHEMA, where=_where(path))
    inst = data["instrument"]
    name = inst["name"]
    if not _NAME_RE.match(name):
        raise _err(path, "instrument.name", f"'{name}' must be lower-case letters, digits, '-' or '_'")
    try:
        idn_re = re.compile(inst["idn_match"])
    except re.error as exc:
        raise _err(path, "instrument.idn_match", f"does not compile: {exc}") from None
    timeout_ms = inst["timeout_ms"]
    lanes = inst["lanes"]
    if lanes[0] > lanes[1]:
        raise _err(path, "instrument.lanes", "must be [first, last] lane numbers, e.g. [1, 8]")

    errs = data["errors"]
    try:
        no_error = re.compile(errs["no_error"])
    except re.error as exc:
        raise _err(path, "errors.no_error", f"does not compile: {exc}") from None

    lane_map: dict[int, str] = {}
    for k, v in data["lane_map"].items():
        try:
            lane_map[int(k)] = str(v)
        except ValueError:
            raise _err(path, f"lane_map.{k}", "the key must be a lane number") from None

    props = {n: _parse_property(path, n, raw) for n, raw in data["properties"].items()}
    raw_procs = data["procedures"]
    procs = {n: _parse_steps(path, n, raw, props) for n, raw in raw_procs.items()}
    for req in REQUIRED_PROCEDURES[inst["kind"]]:
        if req not in procs:
            raise _err(path, "procedures", f"a {inst['kind']} needs a '{req}' procedure")
    if "measure_ber" in procs:
        missing = set(BER_OUTPUTS) - _stored(procs["measure_ber"])
        if missing:
            raise _err(path, "procedures.measure_ber", f"must store {sorted(missing)}")
    if "measure_eye" in procs and not (set(EYE_OUTPUTS) & _stored(procs["measure_eye"])):
        raise _err(path, "procedures.measure_eye", f"must store at least one of {EYE_OUTPUTS}")

    channels = int(inst["channels"])
    if channels > 1:
        if inst["kind"] != "bert":
            raise _err(path, "instrument.channels", "only a BERT gates several channels in one dwell")
        if not inst["channels_ref"]:
            raise _err(path, "instrument.channels_ref", "cite where the channel count comes from (data sheet)")
        if channels > lanes[1] - lanes[0] + 1:
            raise _err(path, "instrument.channels", f"{channels} channels but only lanes {lanes[0]}..{lanes[1]}")
        waits = [st for st in procs["measure_ber"] if st.op == "wait" and st.target == "dwell_s"]
        if len(waits) != 1:
            raise _err(path, "procedures.measure_ber", "with channels > 1 it needs exactly one "
                       "{ wait = \"dwell_s\" } step (the gates of every lane open before it, close after it)")

    emulator = data["emulator"]
    return Definition(
        name=name, title=inst["title"], vendor=inst["vendor"], kind=inst["kind"], idn_match=idn_re, path=path,
        reference=inst["reference"], timeout_ms=timeout_ms, lanes=(lanes[0], lanes[1]),
        channels=channels, channels_ref=inst["channels_ref"], clear=inst["clear"], error_query=errs["query"], no_error=no_error,
        max_error_reads=errs["max_reads"], lane_map=lane_map, defaults=dict(data["defaults"]),
        properties=props, procedures=procs, emulator=dict(emulator),
    )


def load_definition(path: str | Path) -> Definition:
    """Load and validate one ``drivers/*.toml`` file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = loads_toml(fh.read(MAX_TEXT_BYTES + 1).decode("utf-8"), f"driver definition {p}")
    except FileNotFoundError:
        raise ConfigError(f"driver definition {p} not found; see `eqtune drivers list` for the shipped ones") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"driver definition {p} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"driver definition {p} is not UTF-8 text (byte {exc.start}); save it as UTF-8 TOML") from None
    except OSError as exc:
        raise ConfigError(f"driver definition {p} cannot be read ({exc.strerror}); check the path") from None
    return parse_definition(data, p)


def load_definitions(directory: str | Path | None = None) -> list[Definition]:
    """Every definition in ``directory`` (default: the shipped ``drivers/``), sorted by name."""
    from eqtune.resources import drivers_dir

    d = Path(directory) if directory is not None else drivers_dir()
    defs = [load_definition(p) for p in sorted(d.glob("*.toml"))]
    seen: dict[str, Path] = {}
    for df in defs:
        if df.name in seen:
            raise ConfigError(f"driver name '{df.name}' is defined twice: {seen[df.name]} and {df.path}; rename one")
        seen[df.name] = df.path
    return sorted(defs, key=lambda d_: d_.name)


def find_definition(name_or_path: str | Path, directory: str | Path | None = None) -> Definition:
    """A definition by name (``keysight-m8040a``) or by path to a TOML file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        return load_definition(p)
    defs = load_definitions(directory)
    for d in defs:
        if d.name == str(name_or_path):
            return d
    raise ConfigError(f"no instrument definition named '{name_or_path}'; known: {', '.join(d.name for d in defs)}")


def match_idn(idn: str, definitions: list[Definition]) -> Definition | None:
    """The first definition whose ``idn_match`` regex is found in the ``*IDN?`` reply."""
    for d in definitions:
        if d.matches(idn):
            return d
    return None
