"""A tiny TCP register bridge, so separate processes share one emulated module: the client side.

``eqtune emulate`` serves an :class:`~eqtune.emulate.module.EmulatedModule` with
:class:`eqtune.emulate.bridge.NetBridgeServer`; clients open ``net:HOST:PORT`` (:class:`NetTransport`,
here), like a remote I2C adapter. Protocol: ASCII lines terminated by ``\\n``, one request -> one reply, hex data::

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

import io
import socket
import time

from eqtune.drivers.transport import Transport
from eqtune.errors import TransportError

PROTOCOL = "eqtune-netbridge 1"
MAX_LINE = 4096


class NetTransport(Transport):
    """Client of :class:`eqtune.emulate.bridge.NetBridgeServer` (resource ``net:HOST:PORT``). Reads are retried (on a fresh
    connection after a socket failure); writes are not."""

    pages_natively = True

    def __init__(self, host: str, port: int, *, timeout_s: float = 2.0, retries: int = 2) -> None:
        self.host, self.port = host, port
        self.timeout_s = timeout_s
        self.retries = retries
        self.resource = f"net:{host}:{port}"
        self._sock: socket.socket | None = None
        self._rfile: io.BufferedReader | None = None
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
