"""The live tuning loop, journaled: baseline -> tune -> verify -> keep or restore.

``LiveTuner`` is the API the CLI (``eqtune tune --live``, ``eqtune session resume``, ``eqtune demo``)
and the TUI drive. A TUI runs it in a worker thread, either whole (:meth:`LiveTuner.run`) or step by
step (:meth:`connect`, :meth:`baseline`, :meth:`tune`, :meth:`verify`, :meth:`decide`, :meth:`finish`),
receives :class:`LiveEvent` objects through ``on_event`` (called from the worker thread: forward them
with ``App.call_from_thread``), and controls it from the UI thread with :meth:`pause`,
:meth:`unpause` and :meth:`abort` (thread-safe; abort restores the original codes).

Safety rules:

* The lane's original codes are journaled (``original``) before the first write; every write is
  journaled (``apply``) and fsync'd *before* it reaches the module; only codes inside the module's
  advertised capabilities are written (validated before journaling).
* Baseline of the original codes first (long dwell), the optimizer loop, a long-dwell verification
  of the recommendation last; tuned codes stay only if verification beats the baseline, otherwise
  the originals are restored. Abort (``abort()``, Ctrl-C, any error, a lost instrument) restores the
  originals of every lane not yet decided, and says so.
* Tx input adaptive EQ: writing a fixed ``tx_eq`` switches the module's adaptive Tx input EQ off. Lanes
  that ran it (journaled in ``original`` as ``tx_adaptive``) are tuned only when the driver can switch
  it back on (``enable_tx_adaptive``); their restore point is "original codes + adaptive on": the
  baseline measures the adaptive equalizer, a tuned fixed code is kept only if it verifiably beats it,
  and restore (decision, abort, error) writes the original codes and switches adaptive EQ back on.
* The journal is the source of truth: resuming replays the recorded observations into a fresh
  optimizer (``tell``), so no completed measurement is repeated or lost and, with the stored seed,
  the next proposals are the same as in an uninterrupted run (eqtune.tune optimizers derive every
  random choice from (seed, number of observations)).

Journal record types written here (besides ``session`` and ``recovered`` from the journal itself)
are listed in :data:`RECORD_TYPES`.

The class is assembled from one module per job: ``live_core`` (state, controls, events, journaled
writes), ``live_connect`` (devices, restore points, warm start, prior session, plan), ``live_search``
(the optimizer loop and stop rules), ``live_phases`` (baseline, verify, decide) and ``live_restore``
(restore on abort or failure). This module keeps the public steps and re-exports every public name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from eqtune.errors import SessionError
from eqtune.session.config import PHASES, RECORD_TYPES, LiveConfig, LiveEvent
from eqtune.session.consent import TrafficDownRefused
from eqtune.session.export import save_session_profile, session_profile
from eqtune.session.journal import Journal
from eqtune.session.live_core import (
    RESTORE_BACKOFF_MAX_S,
    RESTORE_BACKOFF_S,
    RESTORE_TIME_LIMIT_S,
    _Aborted,
    _describe,
)
from eqtune.session.live_phases import TunerPhases
from eqtune.session.live_restore import TunerRestore
from eqtune.session.live_search import _set_prior_from_earlier_groups
from eqtune.session.prior import AUTO, load_prior_view
from eqtune.session.records import check_records
from eqtune.session.view import LaneResult, LiveResult, SessionView, load_session
from eqtune.tune.base import new_seed

# re-exported: callers and tests import these from eqtune.session.live
__all__ = ["PHASES", "RECORD_TYPES", "RESTORE_BACKOFF_MAX_S", "RESTORE_BACKOFF_S", "RESTORE_TIME_LIMIT_S",
           "LaneResult", "LiveConfig", "LiveEvent", "LiveResult", "LiveTuner", "SessionView", "load_session",
           "save_session_profile", "session_profile", "_set_prior_from_earlier_groups"]

_T = TypeVar("_T")


class LiveTuner(TunerPhases, TunerRestore):
    """One journaled live tuning session over one module (see the module docstring)."""

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        config: LiveConfig,
        *,
        sessions_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        on_event: Callable[[LiveEvent], None] | None = None,
        **kw: Any,
    ) -> LiveTuner:
        """Start a new journaled session (the seed is drawn now and journaled)."""
        config.check()
        config.resolve_screen()  # journaled in the header as resolved: a resume screens as this run did
        if config.seed is None:
            config.seed = new_seed()
        if config.prior_session and config.prior_session != AUTO:
            load_prior_view(config.prior_session, sessions_dir)  # it exists and reads, before a journal is made
        meta = {**config.metadata, **dict(metadata or {})}
        config.metadata = meta
        label = meta.get("link") or meta.get("site") or ""
        opened = _module_with_lanes(config, kw) if config.lanes else None  # a wrong lane leaves no session
        try:
            journal = Journal.create(sessions_dir, session_id, label=label, metadata=meta, config=config.to_dict())
            if opened is not None:
                kw["module"] = opened
            t = cls(journal, config, on_event=on_event, **kw)
        except BaseException:
            if opened is not None:
                opened.close()
            raise
        if opened is not None:
            t._own_module = True  # opened here for the check: the tuner closes it as if it had opened it
        return t

    @classmethod
    def resume(
        cls,
        session_id: str,
        *,
        sessions_dir: str | os.PathLike[str] | None = None,
        on_event: Callable[[LiveEvent], None] | None = None,
        trusted_keys: list[Any] | None = None,
        require_signed: bool = False,
        **kw: Any,
    ) -> LiveTuner:
        """Reopen an interrupted session; :meth:`run` then continues where it stopped (a journal that fails
        the integrity rule is refused before any module is opened)."""
        journal = Journal.open(session_id, sessions_dir, trusted_keys=trusted_keys, require_signed=require_signed)
        try:
            check_records(journal.records, str(journal.path))
            view = SessionView(journal.records)
            if view.status() == "done":
                raise SessionError(f"session {session_id} is complete; nothing to resume "
                                   f"(see `eqtune session show {session_id}`)")
            cfg_d = journal.header.get("config") or {}
            if not cfg_d.get("module"):
                raise SessionError(f"session {session_id} has no live-tuning configuration; it cannot be resumed")
            config = view.config  # header config, with what the plan resolved (metric)
            config.check()  # an edited journal must not resume with a NaN dwell or lane 9
            t = cls(journal, config, on_event=on_event, **kw)
            if journal.recovered_torn is not None:
                t._emit("log", text=journal.recovered_torn.describe())
            journal.append("resume", pid=os.getpid(), measurements=len(view.measurements()),
                           torn=journal.recovered_torn is not None)
            return t
        except BaseException:
            journal.close()
            raise
    # -- guarded steps (each returns None when the session was aborted) ---------------------------
    def _guard(self, fn: Callable[[], _T]) -> _T | None:
        with self._lock:
            try:
                return fn()
            except _Aborted as exc:
                self._stop("aborted", str(exc), None)
                return None
            except TrafficDownRefused as exc:  # nothing written: the session ends aborted, the caller is told
                self._stop("aborted", str(exc), None)
                raise
            except BaseException as exc:
                self._stop("failed", _describe(exc), exc)
                raise

    def connect(self) -> dict[str, Any] | None:
        """Open the devices, journal identities and (once) the original codes, plan the groups."""
        return self._guard(self._connect)

    def baseline(self) -> dict[int, dict[str, Any]] | None:
        """Long-dwell measurement of the original codes of every lane (skipped if journaled)."""
        return self._guard(self._baseline)

    def tune(self) -> dict[int, dict[str, int]] | None:
        """The optimizer loop for every lane group; returns the recommended codes per lane."""
        return self._guard(self._tune)

    def verify(self) -> dict[int, dict[str, Any]] | None:
        """Long-dwell measurement of the recommendation of every lane."""
        return self._guard(self._verify)

    def decide(self) -> dict[int, dict[str, Any]] | None:
        """Keep the tuned codes where verification beats the baseline, restore the others."""
        return self._guard(self._decide)

    def finish(self) -> LiveResult:
        """Journal the end record, close the devices and return the result."""
        with self._lock:
            if self.phase not in ("aborted", "failed", "done"):
                self._end("done", "")
            return self.result()

    def run(self) -> LiveResult:
        """connect -> baseline -> tune -> verify -> decide -> finish (continues a resumed session).

        Returns the result (status ``aborted`` after :meth:`abort`); raises the device/session error
        (after restoring the original codes) on failure, and re-raises KeyboardInterrupt likewise.
        """
        for step in (self.connect, self.baseline, self.tune, self.verify, self.decide):
            step()
            if self.phase in ("aborted", "failed"):
                return self.result()
        return self.finish()


def _module_with_lanes(config: LiveConfig, kw: Mapping[str, Any]) -> Any:
    """Check ``config.lanes`` against the module's advertised lane count before a journal exists (a bad
    ``--lane`` is one line, not a failed session). Uses the caller's ``module`` if given (returns None:
    it stays the caller's); otherwise opens the module with ``opener`` (default
    :func:`eqtune.drivers.cmis.open_module`) and returns it for the tuner to use and close."""
    from eqtune.errors import InputError

    module = kw.get("module")
    opened = None
    if module is None:
        from eqtune.drivers.cmis import open_module

        module = opened = (kw.get("opener") or open_module)(config.module)
    try:
        n = int(module.capabilities().lanes)
        bad = [ln for ln in config.lanes if not 1 <= int(ln) <= n]
        if bad:
            raise InputError(f"--lane {bad[0]}: {config.module} has lanes 1..{n}; give lanes in 1..{n} or 'all'")
    except BaseException:
        if opened is not None:
            opened.close()
        raise
    return opened
