"""A tiny TCP register bridge, so separate processes share one emulated module.

``eqtune emulate`` serves an :class:`~eqtune.drivers.emulator_module.EmulatedModule` with
:class:`NetBridgeServer`; clients open ``net:HOST:PORT`` (:class:`NetTransport`), like a remote
I2C adapter. Protocol: ASCII lines terminated by ``\\n``, one request -> one reply, hex data::

    HELLO                      -> OK eqtune-netbridge 1 <module name>
    R <off> <n>                -> OK <hex>          raw two-wire read  (off 0..255)
    W <off> <hex>              -> OK                raw two-wire write
    RP <bank> <page> <off> <n> -> OK <hex>          select bank/page and read, atomically
    WP <bank> <page> <off> <hex> -> OK              select bank/page and write, atomically
    CLOCK                      -> OK <seconds>      the module's clock (virtual or monotonic)
    SLEEP <s>                  -> OK                advance a virtual clock (real clock: no-op)
    errors                     -> ERR NACK|TIMEOUT|BADREQ <text>

Numbers are decimal. The paged commands are atomic on the server (one lock), so several clients
cannot disturb each other's page selection.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time

from eqtune.drivers.transport import Transport
from eqtune.errors import TransportError

PROTOCOL = "eqtune-netbridge 1"
MAX_LINE = 4096


class _Handler(socketserver.StreamRequestHandler):
    timeout = 300  # idle client connections are dropped after 5 min

    def handle(self) -> None:
        srv: NetBridgeServer = self.server.bridge  # type: ignore[attr-defined]
        with srv._conn_lock:
            srv._conns.add(self.request)
        try:
            self._serve(srv)
        finally:
            with srv._conn_lock:
                srv._conns.discard(self.request)

    def _serve(self, srv: NetBridgeServer) -> None:
        while True:
            try:
                line = self.rfile.readline(MAX_LINE)
            except (OSError, TimeoutError):
                return
            if not line:
                return
            reply = srv.handle_line(line.decode("ascii", errors="replace").strip())
            try:
                self.wfile.write((reply + "\n").encode("ascii"))
                self.wfile.flush()
            except OSError:
                return


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def is_loopback(host: str) -> bool:
    """True when ``host`` (name or address) resolves only to loopback addresses (127/8, ::1)."""
    import ipaddress

    h = host.strip().strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(h, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


NON_LOOPBACK_WARNING = (
    "{host} is not a loopback address: the module register bridge accepts unauthenticated raw writes to "
    "any register, and the SCPI emulators any command, from anyone who can reach this machine; they are "
    "for emulators on a lab bench only - never expose them on a shared network or put them in front of "
    "real hardware")


class NetBridgeServer:
    """Serve ``module`` (an EmulatedModule) on TCP. ``port=0`` picks a free port; see ``resource``.

    No authentication: any client can write any register. Bind to 127.0.0.1 (the default); a
    non-loopback ``host`` issues a :class:`UserWarning` (``eqtune emulate --host`` prints it)."""

    def __init__(self, module, host: str = "127.0.0.1", port: int = 0) -> None:
        self.module = module
        self.host = host
        self.port = port
        if not is_loopback(host):
            import warnings

            warnings.warn(NON_LOOPBACK_WARNING.format(host=host), UserWarning, stacklevel=2)
        self._lock = threading.Lock()
        self._server: _TCPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._conn_lock = threading.Lock()

    @property
    def resource(self) -> str:
        return f"net:{self.host}:{self.port}"

    def start(self) -> NetBridgeServer:
        try:
            self._server = _TCPServer((self.host, self.port), _Handler)
        except OSError as exc:
            raise TransportError(f"net bridge: cannot listen on {self.host}:{self.port} ({exc}); "
                                 "pick another --port or stop the other emulator") from exc
        self._server.bridge = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="eqtune-netbridge", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._conn_lock:
            conns, self._conns = list(self._conns), set()
        for c in conns:  # drop connected clients too: they get a clear "connection lost"
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def __enter__(self) -> NetBridgeServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ protocol
    def handle_line(self, line: str) -> str:
        from eqtune.drivers.emulator_module import EmuNack, EmuTimeout

        parts = line.split()
        if not parts:
            return "ERR BADREQ empty request"
        cmd, args = parts[0].upper(), parts[1:]
        mod = self.module
        try:
            with self._lock:
                if cmd == "HELLO":
                    return f"OK {PROTOCOL} {getattr(mod, 'name', 'module')}"
                if cmd == "R" and len(args) == 2:
                    off, n = int(args[0]), int(args[1])
                    _check(off, n)
                    return "OK " + mod.read(off, n).hex()
                if cmd == "W" and len(args) == 2:
                    off, data = int(args[0]), bytes.fromhex(args[1])
                    _check(off, len(data))
                    mod.write(off, data)
                    return "OK"
                if cmd == "RP" and len(args) == 4:
                    bank, page, off, n = map(int, args)
                    _check(off, n)
                    if off >= 128:
                        mod.write(126, bytes([bank, page]))
                    return "OK " + mod.read(off, n).hex()
                if cmd == "WP" and len(args) == 4:
                    bank, page, off = map(int, args[:3])
                    data = bytes.fromhex(args[3])
                    _check(off, len(data))
                    if off >= 128:
                        mod.write(126, bytes([bank, page]))
                    mod.write(off, data)
                    return "OK"
                if cmd == "CLOCK" and not args:
                    return f"OK {mod.clock():.9f}"
                if cmd == "SLEEP" and len(args) == 1:
                    from eqtune.drivers.emulator_module import VirtualClock

                    if isinstance(mod.clock, VirtualClock):
                        mod.clock.sleep(float(args[0]))
                    return "OK"
        except EmuNack:
            return "ERR NACK module did not acknowledge"
        except EmuTimeout:
            return "ERR TIMEOUT module did not answer"
        except ValueError as exc:
            return f"ERR BADREQ {exc}"
        return f"ERR BADREQ unknown or malformed request {line[:40]!r}"


def _check(off: int, n: int) -> None:
    if not (0 <= off and 0 <= n and off + n <= 256 and n <= 256):
        raise ValueError(f"range {off}+{n} outside 0..255")


class NetTransport(Transport):
    """Client of :class:`NetBridgeServer` (resource ``net:HOST:PORT``). Reads are retried (on a fresh
    connection after a socket failure); writes are not."""

    pages_natively = True

    def __init__(self, host: str, port: int, *, timeout_s: float = 2.0, retries: int = 2) -> None:
        self.host, self.port = host, port
        self.timeout_s = timeout_s
        self.retries = retries
        self.resource = f"net:{host}:{port}"
        self._sock: socket.socket | None = None
        self._rfile = None
        self._virtual = False
        self._connect()
        hello = self._request("HELLO")
        if not hello.startswith(PROTOCOL.split()[0]):
            self.close()
            raise TransportError(f"{self.resource}: this is not an eqtune register bridge (answered {hello[:40]!r}); "
                                 "check the port printed by 'eqtune emulate'")

    def _connect(self) -> None:
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
            self._sock.settimeout(self.timeout_s)
            self._rfile = self._sock.makefile("rb")
        except OSError as exc:
            self._sock = None
            raise TransportError(f"{self.resource}: cannot connect to the register bridge ({exc}); is "
                                 "'eqtune emulate' running and is this the port it printed?") from exc

    def _request(self, line: str) -> str:
        if self._sock is None:
            self._connect()
        assert self._sock is not None and self._rfile is not None
        try:
            self._sock.sendall((line + "\n").encode("ascii"))
            reply = self._rfile.readline(MAX_LINE * 2)
        except TimeoutError as exc:
            self.close()
            raise TransportError(f"{self.resource}: no reply within {self.timeout_s:g} s; the bridge is "
                                 "overloaded or gone: check 'eqtune emulate' is still running") from exc
        except OSError as exc:
            self.close()
            raise TransportError(f"{self.resource}: connection lost ({exc}); check 'eqtune emulate' is "
                                 "still running") from exc
        if not reply:
            self.close()
            raise TransportError(f"{self.resource}: the bridge closed the connection; check 'eqtune emulate' "
                                 "is still running")
        text = reply.decode("ascii", errors="replace").strip()
        if text.startswith("OK"):
            return text[3:]
        kind, _, msg = text[4:].partition(" ")
        hint = {"NACK": "the module did not acknowledge (NACK): check it is seated and powered",
                "TIMEOUT": "bus timeout: check the module and adapter, then retry"}.get(kind, msg)
        raise TransportError(f"{self.resource}: {line.split()[0]} failed: {hint}")

    def _read_cmd(self, line: str, n: int) -> bytes:
        last: TransportError | None = None
        for attempt in range(self.retries + 1):
            try:
                data = bytes.fromhex(self._request(line))
                if len(data) != n:
                    raise TransportError(f"{self.resource}: short read ({len(data)} of {n} bytes)")
                return data
            except TransportError as exc:
                last = exc
                if attempt < self.retries:
                    time.sleep(0.002 * (attempt + 1))
        assert last is not None
        raise last

    def read(self, offset: int, n: int) -> bytes:
        self._check_range(self.resource, offset, n)
        return self._read_cmd(f"R {offset} {n}", n)

    def write(self, offset: int, data: bytes) -> None:
        self._check_range(self.resource, offset, len(data))
        self._request(f"W {offset} {bytes(data).hex()}")

    def read_page(self, bank: int, page: int, offset: int, n: int) -> bytes:
        return self._read_cmd(f"RP {bank} {page} {offset} {n}", n)

    def write_page(self, bank: int, page: int, offset: int, data: bytes) -> None:
        self._request(f"WP {bank} {page} {offset} {bytes(data).hex()}")

    def monotonic(self) -> float:
        return float(self._request("CLOCK"))

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        # follow the server's clock: a virtual clock is advanced remotely, a real one by sleeping here
        before = self.monotonic()
        self._request(f"SLEEP {seconds:.9f}")
        if self.monotonic() - before < seconds * 0.5:
            time.sleep(seconds)

    def close(self) -> None:
        if self._rfile is not None:
            try:
                self._rfile.close()
            except OSError:
                pass
            self._rfile = None
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
