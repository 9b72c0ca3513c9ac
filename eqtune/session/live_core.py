"""The live tuner's state and the primitives every step uses.

:class:`TunerCore` holds everything a :class:`eqtune.session.live.LiveTuner` knows (set in
``__init__`` only, typed): the journal, the configuration, the devices, the lane groups and their
``LiveSource``s, the original codes (restore points), the lanes whose restore point is Tx input
adaptive EQ on. It also owns what every step shares: the thread-safe controls (pause, abort), event
emission to the front end, the journal-before-write rule (:meth:`TunerCore._write`), read-back checks
(:meth:`TunerCore._holds`) and the end of a session. The steps are mixins on top of it, one module
each: connect and plan (``live_connect``), the optimizer loop (``live_search``), baseline / verify /
decide (``live_phases``), restore on abort or failure (``live_restore``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from eqtune.errors import EqtuneError
from eqtune.session.config import LiveConfig, LiveEvent
from eqtune.session.consent import OutageLog
from eqtune.session.journal import Journal
from eqtune.session.view import LiveResult, SessionView

if TYPE_CHECKING:
    # the CMIS module contract (a Protocol the driver, the emulator and the test fakes satisfy)
    from eqtune.drivers.protocols import CmisModule
    from eqtune.session.consent import TrafficDownNotice
    from eqtune.session.prior import PriorSession
    from eqtune.tune.live import LiveSource

# restore after an abort or failure: retried with exponential backoff (idempotent writes) until this
# time limit, so a module that NACKs for a few seconds (a reset, a busy bus) still gets its codes back
RESTORE_TIME_LIMIT_S = 10.0
RESTORE_BACKOFF_S = 0.05  # first wait; doubles per attempt
RESTORE_BACKOFF_MAX_S = 1.0


class _Aborted(Exception):
    """Raised inside a step when :meth:`TunerCore.abort` was called (restores, status ``aborted``)."""


class TunerCore:
    """State, controls, events and journaled writes of one live tuning session (see the module docstring)."""

    def __init__(
        self,
        journal: Journal,
        config: LiveConfig,
        *,
        on_event: Callable[[LiveEvent], None] | None = None,
        module: CmisModule | None = None,
        instrument: Any = None,
        opener: Callable[[str], CmisModule] | None = None,
        instrument_opener: Callable[[str], Any] | None = None,
        consent: Callable[[TrafficDownNotice], str] | None = None,
    ) -> None:
        self.journal = journal
        self.config = config
        self.on_event = on_event
        self.warm_codes: dict[int, dict[str, int]] = {}  # per lane, measured first (resolved in connect)
        self.module = module
        self.instrument = instrument
        self._own_module = module is None
        self._own_instrument = instrument is None
        self._opener = opener
        self._instrument_opener = instrument_opener
        self.phase = "new"
        self._pause = threading.Event()
        self._abort = threading.Event()
        self._abort_reason = ""
        self._lock = threading.RLock()
        self.sources: list[LiveSource] = []  # one LiveSource per lane group
        self.groups: list[list[int]] = []
        self.originals: dict[int, dict[str, int]] = {}
        self.adaptive_lanes: list[int] = []  # lanes whose restore point is Tx input adaptive EQ on
        self.journal_error = ""  # why the journal could not record a restore (disk full), if it could not
        self.restore_time_limit_s = RESTORE_TIME_LIMIT_S
        self.knobs: tuple[str, ...] = ()
        self._t0 = time.perf_counter()
        self.eval_overhead_s: list[float] = []  # wall time per evaluation minus its dwell
        self._last_written: dict[int, dict[str, int]] = {}  # the codes of the last write (validated)
        self._recommended: dict[int, dict[str, int]] | None = None  # per lane, once the tuning loop ended
        self._message = ""  # why the session ended (the end record's message)
        # an earlier session's measurements as the first lane group's prior (``LiveConfig.prior_session``;
        # resolved once in connect and journaled in the plan, so a resume rebuilds the same prior)
        self.prior: PriorSession | None = None
        # asked before the first write on a module whose every apply takes traffic down (a TUI dialog,
        # a terminal prompt); returns one of eqtune.session.consent.CHOICES. None: refuse unless
        # LiveConfig.allow_traffic_down
        self.consent = consent
        self.outages: OutageLog | None = None  # journals every traffic-down apply while connected

    @property
    def view(self) -> SessionView:
        return SessionView(self.journal.records)

    @property
    def session_id(self) -> str:
        return self.journal.id

    # -- control (any thread) ------------------------------------------------------------------
    def pause(self) -> None:
        """Stop before the next evaluation (the current measurement finishes)."""
        if not self._pause.is_set():
            self._pause.set()
            self._emit("paused", text="paused before the next evaluation")

    def unpause(self) -> None:
        if self._pause.is_set():
            self._pause.clear()
            self._emit("resumed", text="running")

    @property
    def paused(self) -> bool:
        return self._pause.is_set()

    def abort(self, reason: str = "aborted by the operator") -> None:
        """Stop as soon as the current measurement ends and restore the original codes."""
        self._abort_reason = reason
        self._abort.set()
        self._pause.clear()

    def _abort_check(self) -> None:
        """Between the gates of a long dwell: abort raises, pause waits for the measurement to end."""
        if self._abort.is_set():
            raise _Aborted(self._abort_reason or "aborted")

    def _checkpoint(self) -> None:
        while self._pause.is_set() and not self._abort.is_set():
            self._abort.wait(0.05)
        if self._abort.is_set():
            raise _Aborted(self._abort_reason or "aborted")

    # -- events --------------------------------------------------------------------------------
    def _emit(self, kind: str, **data: Any) -> None:
        if self.on_event is not None:
            try:
                self.on_event(LiveEvent(kind, data, self.journal.id))
            except Exception:  # a front-end bug must never leave a module half-tuned
                pass

    def _phase(self, phase: str, text: str = "") -> None:
        self.phase = phase
        if self.outages is not None:
            self.outages.phase = phase
        self._emit("phase", phase=phase, text=text)

    def close(self) -> None:
        """Close devices and the journal (idempotent)."""
        if self.outages is not None:
            self.outages.uninstall()
            self.outages = None
        if self.module is not None and self._own_module:
            try:
                self.module.close()
            except Exception:
                pass
            self.module = None
        if self.instrument is not None and self._own_instrument:
            try:
                self.instrument.close()
            except Exception:
                pass
            self.instrument = None
        self.journal.close()

    # -- writes: journal first, then the module ---------------------------------------------------
    def _write(self, gi: int, phase: str, codes: dict[int, dict[str, int]], n: int | None = None,
               adaptive: list[int] | None = None) -> None:
        """Journal (fsync) the intent, then write: validation happens before both. ``adaptive``: lanes
        whose Tx input adaptive EQ is switched back on after the codes are written (restore points)."""
        src = self.sources[gi]
        clean = src.validate(codes)
        on = sorted(ln for ln in adaptive or () if ln in clean)
        fields: dict[str, Any] = {"tx_adaptive": on} if on else {}
        self._journal_best_effort(phase == "restore", "apply", phase=phase, group=gi, n=n,
                                  codes={str(k): v for k, v in clean.items()}, **fields)
        self._last_written = clean
        src.apply(clean)
        if on:
            self._reenable_adaptive(on)

    def _reenable_adaptive(self, lanes: list[int]) -> bool:
        """Switch Tx input adaptive EQ back on for ``lanes`` (the driver reads page 11h back), journal it."""
        assert self.module is not None
        self.module.enable_tx_adaptive(list(lanes))
        ok = self._adaptive_is(dict.fromkeys(lanes, True))
        self._journal_best_effort(True, "restore", reason="tx_adaptive", lanes=list(lanes), verified=ok)
        return ok

    def _journal_best_effort(self, restoring: bool, type_: str, **fields: Any) -> None:
        """Journal a record; while ``restoring`` a journal that cannot be written (disk full, folder
        gone) must not stop the original codes going back onto the module: the failure is kept in
        ``journal_error`` and reported in the restore message instead of raised."""
        try:
            self.journal.append(type_, **fields)
        except EqtuneError as exc:
            if not restoring:
                raise
            self.journal_error = str(exc)

    def _restore_point(self, lanes: Collection[int]) -> list[int]:
        """Of ``lanes``, those whose restore point includes Tx input adaptive EQ on."""
        return [ln for ln in self.adaptive_lanes if ln in lanes]

    def _adaptive_want(self, lanes: Collection[int], restore: Collection[int] = ()) -> dict[int, bool]:
        """Wanted adaptive state of the tracked lanes among ``lanes``: on for those in ``restore``
        (written back to their restore point), off for the others (they hold a fixed tx_eq)."""
        return {ln: ln in restore for ln in self.adaptive_lanes if ln in lanes}

    def _adaptive_is(self, want: Mapping[int, bool]) -> bool:
        if not want:
            return True
        if self.module is None:
            return False
        try:
            on = self.module.tx_adaptive_enabled()
        except EqtuneError:
            return False
        return all(bool(on.get(ln)) == w for ln, w in want.items())

    def _holds(self, gi: int, codes: dict[int, dict[str, int]], adaptive: Mapping[int, bool] | None = None) -> bool:
        """The module's active codes are ``codes`` (and, for ``adaptive``, Tx input adaptive EQ on/off)."""
        if self.module is None:
            return False
        try:
            return all({k: int(v) for k, v in self.module.active_eq(ln).items() if k in c} == c
                       for ln, c in codes.items()) and self._adaptive_is(adaptive or {})
        except EqtuneError:
            return False

    # -- ending ------------------------------------------------------------------------------------
    def _end(self, status: str, message: str) -> None:
        self.phase = status
        self._message = message
        try:
            res = self.result()
            self.journal.append("end", status=status, message=message,
                                lanes={str(k): v.to_dict() | {"history": None} for k, v in res.lanes.items()})
        except EqtuneError:
            pass
        self._emit("done" if status == "done" else "log", text=f"session {self.journal.id} {status}")
        self.close()

    def result(self) -> LiveResult:
        view = self.view
        status = self.phase if self.phase in ("done", "aborted", "failed") else view.status()
        return LiveResult(self.journal.id, str(self.journal.dir), status, self.config.metric, view.lane_results(),
                          elapsed_s=time.perf_counter() - self._t0, message=self._message)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    if isinstance(exc, EqtuneError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
