"""A thin pyvisa wrapper: the pure-Python backend ('@py'), timeouts, safe retries, clear errors.

pyvisa is imported lazily (inside functions) so importing eqtune stays fast. Every failure
becomes an :class:`eqtune.errors.InstrumentError` naming the resource, the command, what happened
and what to check. Only queries the caller marks ``retry=True`` (pure reads without side effects)
are retried, once, after draining any late reply so the answers cannot shift by one.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

from eqtune.drivers.protocols import ScpiTransport
from eqtune.errors import InputError, InstrumentError

DEFAULT_BACKEND = "@py"
DEFAULT_TIMEOUT_MS = 5000
DEFAULT_OPEN_TIMEOUT_MS = 3000

_RM_LOCK = threading.Lock()
_RMS: dict[str, Any] = {}


#: what an :class:`~eqtune.drivers.instrument.Instrument` needs from an I/O channel (the old name)
Transport = ScpiTransport


def resource_manager(backend: str = DEFAULT_BACKEND) -> Any:
    """A (cached) ``pyvisa.ResourceManager`` for ``backend`` (default pyvisa-py, '@py')."""
    with _RM_LOCK:
        rm = _RMS.get(backend)
        if rm is None:
            try:
                import pyvisa
            except ImportError as exc:  # pragma: no cover - dependency of the package
                raise InstrumentError(f"pyvisa is not installed ({exc}); install eqtune with its dependencies") from None
            try:
                rm = pyvisa.ResourceManager(backend)
            except (OSError, ValueError) as exc:
                raise InstrumentError(
                    f"cannot start the VISA backend '{backend}': {exc}; check that pyvisa-py is installed "
                    "(pip install pyvisa-py) or give another backend"
                ) from None
            _RMS[backend] = rm
        return rm


def list_resources(query: str = "?*::INSTR", backend: str = DEFAULT_BACKEND) -> tuple[str, ...]:
    """VISA resources the backend can discover (USB, GPIB, serial, VXI-11/HiSLIP on the LAN).

    Raw-socket instruments (``TCPIP::HOST::PORT::SOCKET``) are never discovered: give them explicitly.
    """
    rm = resource_manager(backend)
    try:
        return tuple(rm.list_resources(query))
    except Exception as exc:  # noqa: BLE001 - discovery failures of any backend part are not fatal
        raise InstrumentError(
            f"VISA resource discovery failed ({type(exc).__name__}: {exc}); give the instruments with --resource"
        ) from None


def _is_timeout(exc: BaseException) -> bool:
    try:
        from pyvisa import constants
        from pyvisa.errors import VisaIOError
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, VisaIOError) and exc.error_code == constants.StatusCode.error_timeout


class VisaTransport:
    """One open VISA session with line-terminated SCPI text.

    ``resource`` is any VISA resource string, e.g. ``TCPIP::192.168.1.20::5025::SOCKET``,
    ``TCPIP::192.168.1.20::hislip0::INSTR`` or ``USB0::...::INSTR``.
    """

    def __init__(
        self,
        resource: str,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        open_timeout_ms: int = DEFAULT_OPEN_TIMEOUT_MS,
        termination: str = "\n",
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        if not isinstance(resource, str) or not resource.strip():
            raise InputError("instrument resource is empty; give a VISA string like TCPIP::HOST::5025::SOCKET")
        if timeout_ms <= 0:
            raise InputError(f"timeout {timeout_ms} ms must be positive")
        self.resource = resource.strip()
        self.timeout_ms = int(timeout_ms)
        self._lock = threading.RLock()
        rm = resource_manager(backend)
        try:
            self._res = rm.open_resource(self.resource, open_timeout=int(open_timeout_ms))
        except Exception as exc:  # noqa: BLE001 - pyvisa raises VisaIOError, ValueError, OSError, ...
            raise InstrumentError(
                f"instrument {self.resource} is unreachable ({type(exc).__name__}: {exc}); check that it is "
                "powered, the address/port is right, the LAN/USB cable is connected and no other program "
                "holds the connection"
            ) from None
        try:
            self._res.timeout = self.timeout_ms
            self._res.read_termination = termination
            self._res.write_termination = termination
            if self.resource.upper().endswith("::SOCKET"):
                self._set_nodelay()
        except Exception as exc:  # noqa: BLE001
            self.close()
            raise InstrumentError(f"instrument {self.resource}: cannot configure the session ({exc})") from None

    def _set_nodelay(self) -> None:
        """TCP_NODELAY on a raw-socket session: small SCPI writes must leave at once (Nagle plus the
        peer's delayed ACK would hold e.g. a gate-start back by 40-200 ms and shorten the dwell).
        pyvisa does not expose VI_ATTR_TCPIP_NODELAY for ::SOCKET resources, so set it on
        pyvisa-py's socket; best effort (other backends keep their defaults)."""
        try:
            sess = self._res.visalib.sessions[self._res.session]
            sess.interface.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except Exception:  # noqa: BLE001 - not pyvisa-py, or no socket: keep the backend default
            pass

    # ------------------------------------------------------------------ I/O
    def set_timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = int(timeout_ms)
        if self._res is not None:
            self._res.timeout = self.timeout_ms

    def _peer_closed(self) -> bool:
        """True when the raw socket's peer has closed the connection (pyvisa-py keeps waiting otherwise)."""
        try:
            sock = self._res.visalib.sessions[self._res.session].interface
            data = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            return bool(data == b"")
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        except Exception:  # noqa: BLE001 - not a pyvisa-py socket session
            return False

    def _fail(self, action: str, command: str, exc: BaseException) -> InstrumentError:
        if isinstance(exc, ConnectionRefusedError) or "refused" in str(exc).lower():
            what = "refused the connection (nothing listens at that address/port)"
            check = ("check the IP address and port, that the instrument (or its control software) is running and "
                     "its SCPI socket server is enabled")
        elif self.resource.upper().endswith("::SOCKET") and self._peer_closed():
            what = "closed the connection"
            check = "check the cable/network and that the instrument (or its control software) is still running"
        elif _is_timeout(exc):
            what = f"did not answer within {self.timeout_ms / 1000:g} s"
            check = ("check that the instrument is on and not busy, that the command is supported by its "
                     "firmware, or raise the timeout")
        else:
            what = f"connection failed ({type(exc).__name__}: {exc})"
            check = "check the cable/network and that the instrument (or its control software) is still running"
        return InstrumentError(f"instrument {self.resource} {what} while {action} '{command}'; {check}")

    def write(self, command: str) -> None:
        with self._lock:
            try:
                self._res.write(command)
            except Exception as exc:  # noqa: BLE001
                raise self._fail("sending", command, exc) from None

    def query(self, command: str, *, retry: bool = False) -> str:
        """Write ``command`` and read one line. ``retry=True`` only for side-effect-free queries."""
        attempts = 2 if retry else 1
        with self._lock:
            for attempt in range(attempts):
                try:
                    return str(self._res.query(command)).strip()
                except Exception as exc:  # noqa: BLE001
                    if attempt + 1 < attempts and _is_timeout(exc) and not (
                        self.resource.upper().endswith("::SOCKET") and self._peer_closed()
                    ):
                        self._drain()
                        continue
                    raise self._fail("querying", command, exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _drain(self) -> None:
        """Discard a late reply (so a retried query cannot read the previous answer)."""
        old = self._res.timeout
        try:
            self._res.timeout = min(200, old)
            while True:
                self._res.read()
        except Exception:  # noqa: BLE001 - timeout ends the drain
            pass
        finally:
            try:
                self._res.timeout = old
            except Exception:  # noqa: BLE001
                pass

    def close(self) -> None:
        res = getattr(self, "_res", None)
        if res is not None:
            try:
                res.close()
            except Exception:  # noqa: BLE001 - closing a dead session must not mask the first error
                pass
            self._res = None

    def __enter__(self) -> VisaTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
