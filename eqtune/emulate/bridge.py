"""The server side of the TCP register bridge (protocol: :mod:`eqtune.drivers.netbridge`).

``eqtune emulate`` serves an :class:`~eqtune.emulate.module.EmulatedModule` with :class:`NetBridgeServer`;
clients in other processes open ``net:HOST:PORT`` (:class:`eqtune.drivers.netbridge.NetTransport`). The
paged commands are atomic on the server (one lock), so several clients cannot disturb each other's page
selection.
"""

from __future__ import annotations

import ipaddress
import socket
import socketserver
import threading
import warnings

from eqtune.drivers.netbridge import MAX_LINE, PROTOCOL
from eqtune.drivers.protocols import TwoWireTarget
from eqtune.emulate.bus import EmuNack, EmuTimeout, VirtualClock
from eqtune.errors import TransportError


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
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


NON_LOOPBACK_WARNING = (
    "{host} is not a loopback address: the module register bridge accepts unauthenticated raw writes to "
    "any register, and the SCPI emulators any command, from anyone who can reach this machine; they are "
    "for emulators on a lab bench only - never expose them on a shared network or put them in front of "
    "real hardware")


class NetBridgeServer:
    """Serve ``module`` (an EmulatedModule) on TCP. ``port=0`` picks a free port; see ``resource``.

    No authentication: any client can write any register. Bind to 127.0.0.1 (the default); a
    non-loopback ``host`` issues a :class:`UserWarning` (``eqtune emulate --host`` prints it)."""

    def __init__(self, module: TwoWireTarget, host: str = "127.0.0.1", port: int = 0) -> None:
        self.module = module
        self.host = host
        self.port = port
        if not is_loopback(host):
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

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ protocol
    def handle_line(self, line: str) -> str:
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
