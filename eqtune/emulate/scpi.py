"""A SCPI instrument emulator on 127.0.0.1 (raw TCP socket), driven by the same ``drivers/*.toml``.

Real pyvisa-py reaches it as ``TCPIP::127.0.0.1::PORT::SOCKET`` (newline-terminated text). It
emulates ANY defined instrument by reading its definition: every property's get/set/command
template becomes a command pattern; settable properties keep state (initial ``default``); queries
answer from their ``emulate`` reply template, whose variables come from a shared
:class:`eqtune.emulate.link.EmulatedLink`:

* BERT counters accumulate while the gate is open (properties with ``action`` start/stop/reset):
  errors are Poisson via ``EmulatedLink.count_errors`` over the elapsed gated time at the link's
  line rate, so a reading follows the EQ codes written to the emulated module.
* Scope eye metrics come from ``EmulatedLink.eye(lane)`` plus Gaussian measurement noise
  (``[emulator] eye_noise_mv``); the lane is chosen by a ``{lane}``/``{channel}`` in the command or
  by a property with ``selects = "lane"``; the PAM4 eye by ``selects = "eye"``.

Like a real instrument, an unknown header pushes ``-113,"Undefined header"`` and an invalid value
``-222,"Data out of range"`` onto the error queue (IEEE 488.2 / SCPI-1999 Vol. 2 ch. 21.8 error
numbers) and sends no reply. :class:`Faults` injects disconnects, slow replies, a wrong IDN and
refused connections and error-queue entries raised by given commands; :meth:`ScpiEmulator.push_error`
adds an entry at once (note that clients send ``*CLS`` on open).
"""

from __future__ import annotations

import math
import random
import re
import socket
import socketserver
import string
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from eqtune.drivers.definition import Definition, Property, find_definition
from eqtune.errors import ConfigError, EqRangeError, InputError

SCPI_NAN_TEXT = "9.91E+37"
_ERR_QUERY_RE = re.compile(r"^:?SYST(EM)?:ERR(OR)?(:NEXT)?\?$", re.IGNORECASE)
_EYE_VARS = {"eye_height_v", "eye_height_mv", "eye_width_s", "eye_width_ps", "eye_width_ui", "tdecq_db"}


@dataclass
class Faults:
    """Fault injection (change the fields at any time; they apply to the next command)."""

    delay_s: float = 0.0              # delay every reply (or only replies to delay_match) by this long
    delay_match: str | None = None    # regex on the command text
    delay_count: int | None = None    # delay only this many replies (None: all)
    lose_match: str | None = None     # never answer a query matching this regex (a lost reply) ...
    lose_count: int = 0               # ... this many times
    disconnect_after: int | None = None  # drop each connection after this many commands (no reply)
    disconnect_match: str | None = None  # drop the connection on a command matching this regex
    idn: str | None = None            # answer *IDN? with this text instead of the definition's
    error_match: str | None = None    # push error_text onto the error queue when a command matches
    error_text: str = '-241,"Hardware missing"'
    refuse: bool = False              # close new connections at once


def _template_regex(template: str) -> re.Pattern[str]:
    parts = ["^"]
    for lit, name, _spec, _conv in string.Formatter().parse(template):
        if lit:
            esc = re.escape(lit.lstrip() if len(parts) == 1 else lit)
            # the header/parameter separator needs whitespace (IEEE 488.2 7.4.3 <PROGRAM HEADER
            # SEPARATOR>), so ":X:EOPening:PROBability 1" is not ":X:EOPening" with a value; after a
            # comma whitespace is optional
            esc = re.sub(r"(?<=,)(\\ )+", r"\\s*", esc)
            parts.append(re.sub(r"(\\ )+", r"\\s+", esc))
        if name == "lane":
            parts.append(r"(?P<lane>\d+)")
        elif name == "channel":
            parts.append(r"(?P<channel>[^\s,'\"]+)")
        elif name == "value":
            parts.append(r"(?P<value>.+?)")
    parts.append(r"\s*$")
    return re.compile("".join(parts), re.IGNORECASE)


def _split_commands(line: str) -> list[str]:
    """Split a program message at ';' outside quotes (IEEE 488.2 7.3.1 message units)."""
    out, cur, quote = [], [], ""
    for ch in line:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch == ";":
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return [c for c in out if c]


class _Counter:
    __slots__ = ("bits", "errors", "running", "t_last")

    def __init__(self) -> None:
        self.bits = 0
        self.errors = 0
        self.running = False
        self.t_last = time.monotonic()


class ScpiEmulator:
    """A threaded SCPI server emulating one instrument definition.

    ``ScpiEmulator(definition, link, host="127.0.0.1", port=0)``; ``port=0`` picks a free port.
    Use as a context manager or call :meth:`start` / :meth:`stop`. ``link`` is an
    ``EmulatedLink`` (shared with the module emulator); ``None`` creates a default one.
    """

    def __init__(self, definition: Definition | str, link: Any = None, *, host: str = "127.0.0.1", port: int = 0,
                 seed: int | None = None, faults: Faults | None = None) -> None:
        self.definition = find_definition(definition) if isinstance(definition, str) else definition
        if link is None:
            from eqtune.emulate.link import EmulatedLink

            link = EmulatedLink(seed=seed)
        self.link = link
        self.host = host
        self.requested_port = int(port)
        self.faults = faults or Faults()
        self.log: list[str] = []
        d = self.definition
        self.idn = str(d.emulator.get("idn", f"EQTUNE,{d.name.upper()},EMU0001,1.0"))
        if not d.matches(self.idn):
            raise ConfigError(f"{d.path.name}: [emulator] idn '{self.idn}' does not match idn_match "
                              f"/{d.idn_match.pattern}/; fix one of them")
        self.eye_noise_mv = float(d.emulator.get("eye_noise_mv", 0.3))
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._stopping = threading.Event()  # wakes delayed replies when the emulator stops
        self._errors: deque[str] = deque(maxlen=30)
        self._counters: dict[int, _Counter] = {}
        self._state: dict[tuple[str, int | None], Any] = {}
        self.selected_lane = d.lanes[0]
        self.selected_eye = 0
        self._matchers: list[tuple[str, Property, re.Pattern[str]]] = []
        for prop in d.properties.values():
            for kind in ("get", "set", "command"):
                tpl = getattr(prop, kind)
                if tpl:
                    self._matchers.append((kind, prop, _template_regex(tpl)))
        self._reset_state()
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._clients: set[socket.socket] = set()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> ScpiEmulator:
        emu = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:  # one connection
                emu._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        try:
            self._server = Server((self.host, self.requested_port), Handler)
        except OSError as exc:
            raise InputError(f"cannot listen on {self.host}:{self.requested_port} for the {self.definition.name} "
                             f"emulator ({exc}); choose another port (--port) or stop the program using it") from None
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"scpi-emu-{self.definition.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        srv, self._server = self._server, None
        if srv is not None:
            srv.shutdown()
            srv.server_close()
        with self._lock:
            clients = list(self._clients)
        for c in clients:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> ScpiEmulator:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("emulator not started")
        return int(self._server.server_address[1])

    @property
    def resource(self) -> str:
        """The VISA resource string of this emulator (``TCPIP::127.0.0.1::PORT::SOCKET``)."""
        return f"TCPIP::{self.host}::{self.port}::SOCKET"

    # ------------------------------------------------------------------ state
    def _reset_state(self) -> None:
        with self._lock:
            self._state.clear()
            self._counters.clear()
            self.selected_lane = self.definition.lanes[0]
            self.selected_eye = 0
            for prop in self.definition.properties.values():
                if prop.set and prop.default is not None:
                    self._state[(prop.name, None)] = prop.default

    def push_error(self, entry: str) -> None:
        """Add an entry to the error queue, e.g. ``'-222,"Data out of range"'``."""
        with self._lock:
            self._errors.append(entry)

    def state(self, name: str, lane: int | None = None) -> Any:
        with self._lock:
            return self._state.get((name, lane), self._state.get((name, None)))

    def _counter(self, lane: int) -> _Counter:
        c = self._counters.get(lane)
        if c is None:
            c = self._counters[lane] = _Counter()
        return c

    def _update(self, lane: int) -> _Counter:
        c = self._counter(lane)
        now = time.monotonic()
        if c.running:
            dt = now - c.t_last
            if dt > 0 and lane <= getattr(self.link, "lanes", 8):
                bc = self.link.count_errors(lane, dt)
                c.bits += int(bc.bits)
                c.errors += int(bc.errors)
        c.t_last = now
        return c

    def _action(self, action: str, lane: int) -> None:
        c = self._update(lane)
        if action == "start":
            c.bits = c.errors = 0
            c.running = True
        elif action == "stop":
            c.running = False
        elif action == "reset":
            c.bits = c.errors = 0

    # ------------------------------------------------------------------ command handling
    def _lane_from(self, m: re.Match[str]) -> int:
        g = m.groupdict()
        if g.get("lane"):
            return int(g["lane"])
        if g.get("channel"):
            lane = self.definition.lane_of(g["channel"])
            if lane is not None:
                return lane
        return self.selected_lane

    def _vars(self, template: str, lane: int, value: Any) -> dict[str, Any]:
        names = {n for _l, n, _s, _c in string.Formatter().parse(template) if n}
        v: dict[str, Any] = {"value": value, "lane": lane, "channel": self.definition.channel_of(lane),
                             "time": time.time(), "eye": self.selected_eye}
        if names & {"bits", "errors", "ber", "ones", "zeros", "err_ones", "err_zeros", "running"}:
            c = self._update(lane)
            ones = c.bits // 2
            e1 = c.errors // 2
            v.update(bits=c.bits, errors=c.errors, ber=(c.errors / c.bits if c.bits else 0.0), ones=ones,
                     zeros=c.bits - ones, err_ones=e1, err_zeros=c.errors - e1, running=int(c.running))
        if names & _EYE_VARS:
            eye = self.link.eye(lane)
            ehs = list(eye.get("eye_height_mv") or [eye.get("eye_height_min_mv", 0.0)] * 3)
            idx = min(max(self.selected_eye, 0), len(ehs) - 1)
            eh = max(0.0, float(ehs[idx]) + self._rng.gauss(0.0, self.eye_noise_mv))
            rate = float(getattr(self.link, "rate_gbd", 53.125)) * 1e9
            ew_ui = max(0.0, float(eye.get("eye_width_ui") or 0.0) * (1 + self._rng.gauss(0.0, 0.005)))
            tdecq = eye.get("tdecq_db")
            v.update(eye_height_mv=eh, eye_height_v=eh / 1000.0, eye_width_ui=ew_ui, eye_width_s=ew_ui / rate,
                     eye_width_ps=ew_ui / rate * 1e12,
                     tdecq_db=(float(tdecq) + self._rng.gauss(0.0, 0.02)) if tdecq is not None else math.inf)
        return v

    def _format_reply(self, prop: Property, lane: int, value: Any) -> str:
        if prop.emulate:
            vars_ = self._vars(prop.emulate, lane, value)
            if any(isinstance(x, float) and not math.isfinite(x) for x in vars_.values()):
                return SCPI_NAN_TEXT
            return prop.emulate.format(**vars_)
        if value is None:
            return SCPI_NAN_TEXT if prop.type in ("float", "int") else '""'
        return prop.format_value(value)

    def handle(self, command: str) -> str | None:
        """Execute one program message unit; the reply text, or None (no reply)."""
        cmd = command.strip()
        with self._lock:
            self.log.append(cmd)
            f = self.faults
            if f.error_match and re.search(f.error_match, cmd, re.IGNORECASE):
                self._errors.append(f.error_text)
            up = cmd.upper()
            if up == "*IDN?":
                return self.faults.idn or self.idn
            if up == "*CLS":
                self._errors.clear()
                return None
            if up == "*RST":
                self._reset_state()
                return None
            if up == "*OPC?":
                return "1"
            if up in ("*WAI", "*OPC"):
                return None
            if up == self.definition.error_query.upper() or _ERR_QUERY_RE.match(cmd):
                return self._errors.popleft() if self._errors else '0,"No error"'
            for kind, prop, rx in self._matchers:
                m = rx.match(cmd)
                if not m:
                    continue
                lane = self._lane_from(m)
                key_lane = lane if ("{lane}" in (getattr(prop, kind) or "") or
                                    "{channel}" in (getattr(prop, kind) or "")) else None
                if kind == "get":
                    return self._format_reply(prop, lane, self._state.get((prop.name, key_lane),
                                                                           self._state.get((prop.name, None))))
                if kind == "command":
                    if isinstance(prop.action, str):
                        self._action(prop.action, lane)
                    return None
                # set
                text = m.group("value").strip().strip("'\"")
                try:
                    value = prop.check(text)
                except EqRangeError:
                    self._errors.append('-222,"Data out of range"')
                    return None
                self._state[(prop.name, key_lane)] = value
                if prop.selects == "lane":
                    sel = self.definition.lane_of(str(value))
                    if sel is None or not self.definition.lanes[0] <= sel <= self.definition.lanes[1]:
                        self._errors.append('-222,"Data out of range"')
                    else:
                        self.selected_lane = sel
                elif prop.selects == "eye":
                    digits = re.findall(r"\d+", str(value))
                    self.selected_eye = int(digits[-1]) if digits else 0
                if isinstance(prop.action, dict):
                    act = {k.upper(): a for k, a in prop.action.items()}.get(text.upper())
                    if act is None and prop.type == "bool":
                        act = {k.upper(): a for k, a in prop.action.items()}.get(prop.format_value(value).upper())
                    if act:
                        self._action(act, lane)
                elif isinstance(prop.action, str):
                    self._action(prop.action, lane)
                return None
            self._errors.append('-113,"Undefined header"')
            return None

    # ------------------------------------------------------------------ socket loop
    def _serve(self, sock: socket.socket) -> None:
        if self.faults.refuse:
            sock.close()
            return
        with self._lock:
            self._clients.add(sock)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        count = 0
        buf = b""
        try:
            while True:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    line = raw.decode("ascii", "replace").strip()
                    if not line:
                        continue
                    replies = []
                    for unit in _split_commands(line):
                        count += 1
                        f = self.faults
                        if (f.disconnect_after is not None and count > f.disconnect_after) or (
                            f.disconnect_match and re.search(f.disconnect_match, unit, re.IGNORECASE)
                        ):
                            return
                        r = self.handle(unit)
                        if r is not None:
                            replies.append(r)
                    if replies:
                        f = self.faults
                        if f.lose_count > 0 and f.lose_match and re.search(f.lose_match, line, re.IGNORECASE):
                            f.lose_count -= 1
                            continue
                        if (f.delay_s > 0 and (f.delay_count is None or f.delay_count > 0)
                                and (f.delay_match is None or re.search(f.delay_match, line, re.IGNORECASE))):
                            if f.delay_count is not None:
                                f.delay_count -= 1
                            if self._stopping.wait(f.delay_s):
                                return
                        try:
                            sock.sendall((";".join(replies) + "\n").encode("ascii", "replace"))
                        except OSError:
                            return
        finally:
            with self._lock:
                self._clients.discard(sock)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def start_emulators(names: list[str], link: Any, *, host: str = "127.0.0.1", port: int = 0,
                    seed: int | None = None) -> list[ScpiEmulator]:
    """Start one emulator per definition name on consecutive ports from ``port`` (0: ephemeral)."""
    emus: list[ScpiEmulator] = []
    try:
        for i, name in enumerate(names):
            emus.append(ScpiEmulator(name, link, host=host, port=(port + i) if port else 0, seed=seed).start())
    except BaseException:
        for e in emus:
            e.stop()
        raise
    return emus
