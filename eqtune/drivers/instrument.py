"""The declarative instrument runtime: an :class:`Instrument` built from a ``drivers/*.toml`` definition.

Like PyMeasure's ``Instrument.control``, each property is a get/set SCPI template with a type and
a validator; :meth:`Instrument.get` / :meth:`Instrument.set` run them, and the definition's
procedures (``setup``, ``measure_ber``, ``measure_eye``) are ordered property steps run by
:meth:`Instrument.run`. Validators run BEFORE any I/O; the instrument error queue is read after
setup and wherever a procedure asks (``check_errors``). Responses are parsed by declared type.

The I/O goes through a transport (:class:`eqtune.drivers.visa.VisaTransport` for real instruments,
:class:`ReplayTransport` for command/response replay tests).
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from eqtune.drivers.definition import Definition, Property, Step, find_definition, load_definitions, match_idn
from eqtune.drivers.measurement import BerCount, EyeMeasurement
from eqtune.drivers.protocols import ScpiTransport
from eqtune.drivers.visa import VisaTransport
from eqtune.errors import ConfigError, EqRangeError, InputError, InstrumentError
from eqtune.jsonutil import to_json_value

# SCPI-1999 Vol. 1, 7.2.1.5: 9.91E37 is "not a number" (no measurement available)
SCPI_NAN = 9.91e37


def make_ber_count(bits: int, errors: int, dwell_s: float) -> BerCount:
    """A :class:`eqtune.drivers.measurement.BerCount` (bits, errors, ber, ber_upper95, dwell_s)."""
    return BerCount(bits=int(bits), errors=int(errors), dwell_s=float(dwell_s))


def _split_record(text: str) -> list[str]:
    t = text.strip()
    if t.startswith("(") and t.endswith(")"):
        t = t[1:-1]
    row = next(csv.reader([t], skipinitialspace=True), [])
    return [c.strip().strip('"').strip("'").strip() for c in row]


def _num(text: str) -> float:
    return float(text)


class ReplayTransport:
    """A fake transport for tests: replays expected (command, reply) pairs and records every write.

    ``pairs`` is a list of ``(command, reply)``; ``reply`` is ``None`` for a write. A command that
    differs from the next expected one raises AssertionError naming both.
    """

    def __init__(self, pairs: Iterable[tuple[str, str | None]], resource: str = "REPLAY::0") -> None:
        self.pairs = list(pairs)
        self.resource = resource
        self.log: list[tuple[str, str | None]] = []
        self.closed = False

    def _next(self, command: str, is_query: bool) -> str | None:
        if not self.pairs:
            raise AssertionError(f"unexpected extra command {command!r}")
        exp_cmd, reply = self.pairs.pop(0)
        if exp_cmd != command:
            raise AssertionError(f"expected {exp_cmd!r}, got {command!r}")
        if is_query and reply is None:
            raise AssertionError(f"{command!r} is a query but the replay has no reply")
        if not is_query and reply is not None:
            raise AssertionError(f"{command!r} is a write but the replay expects reply {reply!r}")
        self.log.append((command, reply))
        return reply

    def write(self, command: str) -> None:
        self._next(command, False)

    def query(self, command: str, *, retry: bool = False) -> str:
        return self._next(command, True) or ""

    def close(self) -> None:
        self.closed = True

    @property
    def done(self) -> bool:
        return not self.pairs


class Instrument:
    """A lab instrument driven by a declarative definition over a transport."""

    def __init__(self, definition: Definition, transport: ScpiTransport, *, idn: str = "",
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.definition = definition
        self.transport = transport
        self.resource: str = getattr(transport, "resource", "?")
        self.idn = idn
        self._sleep = sleep
        self._setup_done = False

    # ------------------------------------------------------------- basics
    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def kind(self) -> str:
        return self.definition.kind

    def _who(self) -> str:
        return f"{self.definition.title} at {self.resource}"

    def _params(self, lane: int | None, extra: dict[str, Any]) -> dict[str, Any]:
        p: dict[str, Any] = dict(self.definition.defaults)
        p.update({k: v for k, v in extra.items() if v is not None})
        if lane is not None:
            p["lane"] = self.definition.check_lane(lane)
            p["channel"] = self.definition.channel_of(p["lane"])
        return p

    def _render(self, prop: Property, template: str, params: dict[str, Any], value: str | None = None) -> str:
        fields = {"value": value}
        if "{lane}" in template or "{channel}" in template:
            if "lane" not in params:
                raise InputError(f"{self.name}: property '{prop.name}' needs a lane; pass lane=N")
            fields["lane"] = params["lane"]
            fields["channel"] = params["channel"]
        return template.format(**{k: v for k, v in fields.items() if v is not None})

    def parse(self, prop: Property, reply: str) -> Any:
        """Convert a reply by the property's declared type (InstrumentError on garbage)."""
        text = reply.strip()
        try:
            if prop.type == "float":
                v: Any = _num(text)
                # SCPI "not a number" (no measurement available) -> NaN; callers decide
                return math.nan if abs(v) >= SCPI_NAN * 0.999 else v
            if prop.type == "int":
                v = _num(text)
                if abs(v) >= SCPI_NAN * 0.999 or not float(v).is_integer():
                    raise ValueError
                return int(v)
            if prop.type == "bool":
                low = text.strip('"').lower()
                if low in ("1", "on", "true"):
                    return True
                if low in ("0", "off", "false"):
                    return False
                raise ValueError
            if prop.type == "floats":
                return [_num(x) for x in _split_record(text)]
            if prop.type == "record":
                parts = _split_record(text)
                if len(parts) < len(prop.fields):
                    raise ValueError
                out: dict[str, Any] = {}
                for name, part in zip(prop.fields, parts):
                    try:
                        out[name] = _num(part)
                    except ValueError:
                        out[name] = part
                return out
            return text.strip('"')
        except (ValueError, TypeError):
            raise InstrumentError(
                f"{self._who()}: cannot read '{prop.get}' reply {reply!r} as {prop.type}"
                f"{' with fields ' + ','.join(prop.fields) if prop.fields else ''}; check the firmware "
                f"revision against {self.definition.path.name}"
            ) from None

    # ------------------------------------------------------------- properties
    def get(self, name: str, *, lane: int | None = None) -> Any:
        prop = self.definition.prop(name)
        if not prop.get:
            raise InputError(f"{self.name}: property '{name}' cannot be read (no 'get' in {self.definition.path.name})")
        cmd = self._render(prop, prop.get, self._params(lane, {}))
        return self.parse(prop, self.transport.query(cmd, retry=prop.retry))

    def set(self, name: str, value: Any, *, lane: int | None = None) -> None:
        prop = self.definition.prop(name)
        if not prop.set:
            raise InputError(f"{self.name}: property '{name}' cannot be set (no 'set' in {self.definition.path.name})")
        checked = prop.check(value, where=f"{self.name}: ")  # before any I/O
        cmd = self._render(prop, prop.set, self._params(lane, {}), prop.format_value(checked))
        self.transport.write(cmd)

    def command(self, name: str, *, lane: int | None = None) -> None:
        prop = self.definition.prop(name)
        if not prop.command:
            raise InputError(f"{self.name}: property '{name}' is not a command")
        self.transport.write(self._render(prop, prop.command, self._params(lane, {})))

    # ------------------------------------------------------------- error queue
    def read_errors(self) -> list[str]:
        """Drain the instrument error queue; the entries other than 'no error'."""
        d = self.definition
        errors: list[str] = []
        for _ in range(d.max_error_reads):
            reply = self.transport.query(d.error_query, retry=False)  # popping the queue is not idempotent
            if d.no_error.search(reply.strip()):
                return errors
            errors.append(reply.strip())
        errors.append(f"(more than {d.max_error_reads} entries)")
        return errors

    def check_errors(self, context: str = "") -> None:
        errs = self.read_errors()
        if errs:
            raise InstrumentError(
                f"{self._who()} reported {len(errs)} error(s){' after ' + context if context else ''}: "
                f"{'; '.join(errs)}; check the settings in {self.definition.path.name} against the "
                "instrument's options and firmware, and the instrument front panel"
            )

    # ------------------------------------------------------------- procedures
    def _resolve(self, value: Any, params: dict[str, Any]) -> Any:
        if isinstance(value, str) and "{" in value:
            s = value.strip()
            if s.startswith("{") and s.endswith("}") and s.count("{") == 1:
                key = s[1:-1]
                if key not in params:
                    raise InputError(f"{self.name}: procedure needs parameter '{key}'; pass {key}=...")
                return params[key]
            try:
                return value.format(**params)
            except KeyError as exc:
                raise InputError(f"{self.name}: procedure needs parameter {exc}") from None
        return value

    @staticmethod
    def _lookup(results: dict[str, Any], key: str) -> Any:
        base, _, fld = key.partition(".")
        v = results[base]
        return v[fld] if fld else v

    def validate_procedure(self, name: str, lane: int | None = None, **params: Any) -> list[tuple[Step, Any]]:
        """Check every value a procedure would write, before any I/O (EqRangeError/InputError)."""
        steps = self.definition.procedures.get(name)
        if steps is None:
            raise InputError(f"{self.name} has no '{name}' procedure; see {self.definition.path.name}")
        p = self._params(lane, params)
        checked = []
        for st in steps:
            v = None
            if st.op == "set":
                prop = self.definition.prop(st.target)
                v = prop.check(self._resolve(st.value, p), where=f"{self.name}: ")
            elif st.op == "wait" and st.target == "dwell_s":
                v = p.get("dwell_s")
                if not isinstance(v, int | float) or not 0 <= v <= 86400:
                    raise InputError(f"{self.name}: dwell {v!r} s must be a number in 0..86400")
            checked.append((st, v))
        return checked

    def run(self, name: str, lane: int | None = None, **params: Any) -> dict[str, Any]:
        """Run a procedure; returns the stored results."""
        checked = self.validate_procedure(name, lane, **params)
        results: dict[str, Any] = {}
        self._run_steps(name, checked, self._params(lane, params), results)
        return results

    def run_lanes(self, name: str, lanes: list[int], **params: Any) -> dict[int, dict[str, Any]]:
        """Run a procedure on several lanes in ONE dwell: the steps before its ``wait = "dwell_s"`` for
        every lane (each opens its lane's gate), one wait, then the steps after it for every lane (each
        closes and reads its gate). Every value is validated for every lane before the first write."""
        checked = {ln: self.validate_procedure(name, ln, **params) for ln in lanes}
        results: dict[int, dict[str, Any]] = {ln: {} for ln in lanes}
        cut = {ln: next(i for i, (st, _) in enumerate(c) if st.op == "wait" and st.target == "dwell_s")
               for ln, c in checked.items()}
        for ln in lanes:
            self._run_steps(name, checked[ln][: cut[ln]], self._params(ln, params), results[ln])
        self._sleep(float(checked[lanes[0]][cut[lanes[0]]][1]))
        for ln in lanes:
            self._run_steps(name, checked[ln][cut[ln] + 1:], self._params(ln, params), results[ln])
        return results

    def _run_steps(self, name: str, checked: list[tuple[Step, Any]], p: dict[str, Any],
                   results: dict[str, Any]) -> None:
        for st, v in checked:
            if st.op == "set":
                prop = self.definition.prop(st.target)
                self.transport.write(self._render(prop, prop.set, p, prop.format_value(v)))
            elif st.op == "command":
                prop = self.definition.prop(st.target)
                self.transport.write(self._render(prop, prop.command, p))
            elif st.op == "query":
                prop = self.definition.prop(st.target)
                val = self.parse(prop, self.transport.query(self._render(prop, prop.get, p), retry=prop.retry))
                if st.scale != 1.0:
                    val = val * st.scale
                results[st.store] = val
            elif st.op == "wait":
                self._sleep(float(v if st.target == "dwell_s" else st.target))
            elif st.op in ("sum", "collect"):
                try:
                    vals = [self._lookup(results, k) for k in st.target]
                except (KeyError, TypeError):
                    raise ConfigError(f"{self.definition.path.name}: procedure '{name}' {st.op} refers to "
                                      f"{st.target}, not all stored before") from None
                results[st.store] = sum(vals) if st.op == "sum" else list(vals)
            elif st.op == "check_errors":
                self.check_errors(f"procedure '{name}'")

    # ------------------------------------------------------------- measurements
    def setup(self, **params: Any) -> None:
        """Run the ``setup`` procedure (if any) and check the error queue.

        Measurements call it once with the definition's ``[defaults]`` when it was not called before.
        """
        if "setup" in self.definition.procedures:
            self.run("setup", None, **params)  # run() validates every value before the first write
        self.check_errors("setup")
        self._setup_done = True

    def identity(self) -> dict[str, str]:
        """``{"idn", "definition", "title", "resource", "kind"}`` for journals and reports."""
        return {"idn": self.idn, "definition": self.name, "title": self.definition.title,
                "resource": self.resource, "kind": self.kind}

    def measure_ber(self, lane: int, dwell_s: float, **params: Any) -> BerCount:
        """Gate the error detector of ``lane`` for ``dwell_s`` seconds -> ``BerCount``."""
        if self.kind != "bert":
            raise InputError(f"{self._who()} is a {self.kind}, not a BERT; give a BERT with --instrument")
        if not isinstance(dwell_s, int | float) or not dwell_s > 0:
            raise InputError(f"dwell {dwell_s!r} s must be positive")
        self.validate_procedure("measure_ber", lane, dwell_s=float(dwell_s), **params)
        if not self._setup_done:
            self.setup()
        res = self.run("measure_ber", lane, dwell_s=float(dwell_s), **params)
        return self._ber_count(lane, res, float(dwell_s))

    @property
    def channels(self) -> int:
        """Error-detector channels gated together in one dwell (``[instrument] channels``; 1 for a scope)."""
        return int(self.definition.channels) if self.kind == "bert" else 1

    def measure_ber_lanes(self, lanes: list[int], dwell_s: float, **params: Any) -> dict[int, BerCount]:
        """Gate the error detectors of ``lanes`` together for ``dwell_s`` seconds (one dwell for all;
        at most ``channels`` lanes) -> ``{lane: BerCount}``."""
        if self.kind != "bert":
            raise InputError(f"{self._who()} is a {self.kind}, not a BERT; give a BERT with --instrument")
        lanes = [int(ln) for ln in lanes]
        if not lanes or len(set(lanes)) != len(lanes) or len(lanes) > self.channels:
            raise InputError(f"{self._who()} gates {self.channels} channel(s) together; lanes {lanes} do not fit "
                             "(give at most that many distinct lanes)")
        if not isinstance(dwell_s, int | float) or not dwell_s > 0:
            raise InputError(f"dwell {dwell_s!r} s must be positive")
        if len(lanes) == 1:
            return {lanes[0]: self.measure_ber(lanes[0], dwell_s, **params)}
        for ln in lanes:
            self.validate_procedure("measure_ber", ln, dwell_s=float(dwell_s), **params)
        if not self._setup_done:
            self.setup()
        res = self.run_lanes("measure_ber", lanes, dwell_s=float(dwell_s), **params)
        return {ln: self._ber_count(ln, res[ln], float(dwell_s)) for ln in lanes}

    def _ber_count(self, lane: int, res: dict[str, Any], dwell_s: float) -> BerCount:
        bits, errors = res["bits"], res["errors"]
        try:
            bits_i, err_i = int(round(float(bits))), int(round(float(errors)))
        except (TypeError, ValueError, OverflowError):
            raise InstrumentError(f"{self._who()}: bit/error counters {bits!r}/{errors!r} are not numbers") from None
        if bits_i <= 0:
            raise InstrumentError(
                f"{self._who()}: lane {lane} counted no bits in {dwell_s:g} s; check that the error detector is "
                "synchronized (pattern, polarity, cabling) and the module transmits the test pattern"
            )
        if err_i < 0 or err_i > bits_i:
            raise InstrumentError(f"{self._who()}: lane {lane} reported {err_i} errors in {bits_i} bits; "
                                  "the counters are inconsistent - check the detector settings")
        return make_ber_count(bits_i, err_i, dwell_s)

    def measure_eye(self, lane: int, dwell_s: float = 0.0, **params: Any) -> EyeMeasurement:
        """Eye metrics of ``lane``: ``eye_height_mv`` (list), ``eye_height_min_mv``, ``eye_width_ps``, ``tdecq_db``."""
        if self.kind != "scope":
            raise InputError(f"{self._who()} is a {self.kind}, not a scope")
        self.validate_procedure("measure_eye", lane, dwell_s=float(dwell_s), **params)
        if not self._setup_done:
            self.setup()
        res = self.run("measure_eye", lane, dwell_s=float(dwell_s), **params)

        out: dict[str, Any] = {"lane": int(lane), "instrument": self.name}
        for k in ("eye_height_mv", "eye_width_ps", "eye_width_ui", "tdecq_db"):
            if k in res:
                out[k] = to_json_value(res[k])  # SCPI NaN (no measurement, e.g. TDECQ of a closed eye) -> None
        eh = out.get("eye_height_mv")
        if isinstance(eh, list):
            vals = [x for x in eh if x is not None]
            out["eye_height_min_mv"] = min(vals) if len(vals) == len(eh) and vals else None
        elif isinstance(eh, int | float):
            out["eye_height_min_mv"] = eh
        return cast(EyeMeasurement, out)

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Instrument:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Instrument({self.name!r}, {self.resource!r})"


def identify(transport: ScpiTransport) -> str:
    """``*IDN?`` (IEEE 488.2 10.14; a pure query, safe to retry)."""
    idn = transport.query("*IDN?", retry=True).strip()
    if not idn:
        raise InstrumentError(f"instrument {transport.resource} answered *IDN? with nothing; check it is a SCPI "
                              "instrument and the read termination (newline)")
    return idn


def open_instrument(
    resource: str,
    definition: Definition | str | None = None,
    *,
    timeout_ms: int | None = None,
    open_timeout_ms: int = 3000,
    transport: ScpiTransport | None = None,
    definitions: list[Definition] | None = None,
    backend: str = "@py",
) -> Instrument:
    """Open ``resource``, identify it (``*IDN?``) and bind it to a definition.

    ``definition`` (a :class:`Definition` or a name/path) pins the expected instrument: an IDN that
    does not match its ``idn_match`` is an InstrumentError. Without it, the first shipped
    definition whose ``idn_match`` fits is used. ``transport`` overrides the VISA session (tests).
    """
    if isinstance(definition, str):
        definition = find_definition(definition)
    if transport is None:
        tmo = timeout_ms or (definition.timeout_ms if definition is not None else 5000)
        transport = VisaTransport(resource, timeout_ms=tmo, open_timeout_ms=open_timeout_ms, backend=backend)
    try:
        idn = identify(transport)
        if definition is None:
            defs = definitions if definitions is not None else load_definitions()
            definition = match_idn(idn, defs)
            if definition is None:
                raise InstrumentError(
                    f"instrument {resource} identifies as '{idn}', which matches no definition "
                    f"({', '.join(d.name for d in defs)}); add a drivers/*.toml whose idn_match fits, or "
                    "check that the right instrument is at this address"
                )
        elif not definition.matches(idn):
            raise InstrumentError(
                f"instrument {resource} identifies as '{idn}', not as {definition.title} "
                f"(idn_match /{definition.idn_match.pattern}/ in {definition.path.name}); check the address "
                "or choose the matching definition"
            )
        if timeout_ms is None and hasattr(transport, "set_timeout"):
            transport.set_timeout(definition.timeout_ms)
        inst = Instrument(definition, transport, idn=idn)
        if definition.clear:
            transport.write(definition.clear)
        return inst
    except BaseException:
        transport.close()
        raise


__all__ = [
    "EqRangeError", "Instrument", "ReplayTransport", "identify", "make_ber_count", "open_instrument",
]
