"""The live tuning loop, journaled: baseline -> tune -> verify -> keep or restore.

``LiveTuner`` is the API the CLI (``eqtune tune --live``, ``eqtune session resume``, ``eqtune demo``)
and the TUI drive. A TUI runs it in a worker thread, either whole (:meth:`LiveTuner.run`) or step by
step (:meth:`connect`, :meth:`baseline`, :meth:`tune`, :meth:`verify`, :meth:`decide`, :meth:`finish`),
receives :class:`LiveEvent` objects through ``on_event`` (called from the worker thread: forward them
with ``App.call_from_thread``), and controls it from the UI thread with :meth:`pause`,
:meth:`unpause` and :meth:`abort` (thread-safe; abort restores the original codes).

Safety rules (issue 6):

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
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from eqtune.errors import EqtuneError, SessionError
from eqtune.jsonutil import to_json_value
from eqtune.serdes.knobs import BER_METRICS, TX_EQ
from eqtune.session.config import PHASES, RECORD_TYPES, LiveConfig, LiveEvent
from eqtune.session.export import save_session_profile, session_profile
from eqtune.session.journal import Journal
from eqtune.session.records import check_records
from eqtune.session.view import LaneResult, LiveResult, SessionView, _lane_map, load_session

# re-exported: callers and tests import these from eqtune.session.live
__all__ = ["PHASES", "RECORD_TYPES", "LaneResult", "LiveConfig", "LiveEvent", "LiveResult", "LiveTuner",
           "SessionView", "load_session", "save_session_profile", "session_profile"]

# restore after an abort or failure: retried with exponential backoff (idempotent writes) until this
# time limit, so a module that NACKs for a few seconds (a reset, a busy bus) still gets its codes back
RESTORE_TIME_LIMIT_S = 10.0
RESTORE_BACKOFF_S = 0.05  # first wait; doubles per attempt
RESTORE_BACKOFF_MAX_S = 1.0


class _Aborted(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# the tuner
# ---------------------------------------------------------------------------------------------
class LiveTuner:
    """One journaled live tuning session over one module (see the module docstring)."""

    def __init__(
        self,
        journal: Journal,
        config: LiveConfig,
        *,
        on_event: Callable[[LiveEvent], None] | None = None,
        module: Any = None,
        instrument: Any = None,
        opener: Callable[[str], Any] | None = None,
        instrument_opener: Callable[[str], Any] | None = None,
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
        self.sources: list[Any] = []  # one LiveSource per lane group
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
        if config.seed is None:
            from eqtune.tune.base import new_seed

            config.seed = new_seed()
        meta = {**config.metadata, **dict(metadata or {})}
        config.metadata = meta
        label = meta.get("link") or meta.get("site") or ""
        journal = Journal.create(sessions_dir, session_id, label=label, metadata=meta, config=config.to_dict())
        return cls(journal, config, on_event=on_event, **kw)

    @classmethod
    def resume(
        cls,
        session_id: str,
        *,
        sessions_dir: str | os.PathLike[str] | None = None,
        on_event: Callable[[LiveEvent], None] | None = None,
        **kw: Any,
    ) -> LiveTuner:
        """Reopen an interrupted session; :meth:`run` then continues where it stopped."""
        journal = Journal.open(session_id, sessions_dir)
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

    def _announce_apply_method(self) -> None:
        """Tell the FAE, before any write, whether applying codes takes the data path (traffic) down on
        this module (the Apply method follows SteppedConfigOnly + AutoCommissioning; see
        eqtune/drivers/cmis_policy.py), and route the driver's own pre-write notice into the events."""
        method_of = getattr(self.module, "apply_method", None)
        if method_of is None:  # a module object without the CMIS policy (test fakes)
            return
        from eqtune.errors import EqtuneError

        try:
            method = method_of()
        except EqtuneError as exc:
            self._emit("log", text=f"warning: {exc}")
            return
        if getattr(self.module, "notify", False) is None:
            self.module.notify = lambda msg: self._emit("log", text="warning: " + msg)
        if method.traffic_down:
            self._emit("log", text=f"warning: this module applies codes with {method.trigger}"
                                   f"{' after DPDeinit' if method.deinit else ''}: traffic on the tuned lanes' "
                                   f"data path stops during every write ({method.reason})")

    def _phase(self, phase: str, text: str = "") -> None:
        self.phase = phase
        self._emit("phase", phase=phase, text=text)

    # -- guarded steps -------------------------------------------------------------------------
    def _guard(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            try:
                return fn()
            except _Aborted as exc:
                self._stop("aborted", str(exc), None)
                return None
            except BaseException as exc:
                self._stop("failed", _describe(exc), exc)
                raise

    def connect(self) -> dict[str, Any]:
        """Open the devices, journal identities and (once) the original codes, plan the groups."""
        return self._guard(self._connect)

    def baseline(self) -> dict[int, dict[str, Any]]:
        """Long-dwell measurement of the original codes of every lane (skipped if journaled)."""
        return self._guard(self._baseline)

    def tune(self) -> dict[int, dict[str, int]]:
        """The optimizer loop for every lane group; returns the recommended codes per lane."""
        return self._guard(self._tune)

    def verify(self) -> dict[int, dict[str, Any]]:
        """Long-dwell measurement of the recommendation of every lane."""
        return self._guard(self._verify)

    def decide(self) -> dict[int, dict[str, Any]]:
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

    def close(self) -> None:
        """Close devices and the journal (idempotent)."""
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

    # -- implementation ------------------------------------------------------------------------
    def _ensure_connected(self) -> None:
        if not self.sources:
            self._connect()

    def _connect(self) -> dict[str, Any]:
        from eqtune.tune.live import LiveSource

        if self.sources:
            return {"groups": self.groups, "originals": self.originals}
        cfg = self.config
        view = self.view
        self._phase("connected", f"opening {cfg.module}")
        if self.module is None:
            opener = self._opener
            if opener is None:
                from eqtune.drivers.cmis import open_module as opener
            self.module = opener(cfg.module)
        ident = to_json_value(self.module.identity())
        caps = self.module.capabilities()
        first = view.device("module")
        if first is not None:
            was = first.get("identity", {})
            if any(str(was.get(k)) != str(ident.get(k)) for k in ("vendor", "pn", "sn")):
                raise SessionError(
                    f"{cfg.module} is {ident.get('vendor')} {ident.get('pn')} SN {ident.get('sn')}, but session "
                    f"{self.journal.id} tuned {was.get('vendor')} {was.get('pn')} SN {was.get('sn')}: connect "
                    "the same module, or start a new session")
        self.journal.append("device", role="module", resource=cfg.module, identity=ident, capabilities=to_json_value(caps))
        self._emit("device", role="module", resource=cfg.module, identity=ident)
        self._announce_apply_method()
        if cfg.instrument:
            if self.instrument is None:
                opener = self._instrument_opener
                if opener is None:
                    from eqtune.drivers.instrument import open_instrument as opener
                self.instrument = opener(cfg.instrument)
            if callable(getattr(self.instrument, "identity", None)):
                iid = to_json_value(self.instrument.identity())
            else:
                iid = {"idn": str(getattr(self.instrument, "idn", "")),
                       "definition": str(getattr(self.instrument, "name", "")),
                       "kind": str(getattr(self.instrument, "kind", ""))}
            if getattr(self.instrument, "kind", "") == "scope" and cfg.metric != "eye_height":
                cfg.metric = "eye_height"  # a sampling scope measures eye height, not bit errors
            self.journal.append("device", role="instrument", resource=cfg.instrument, identity=iid)
            self._emit("device", role="instrument", resource=cfg.instrument, identity=iid)
        lanes = [int(x) for x in (cfg.lanes or range(1, int(caps.lanes) + 1))]
        for ln in lanes:
            if not 1 <= ln <= int(caps.lanes):
                from eqtune.errors import InputError

                raise InputError(f"--lane {ln}: {cfg.module} has lanes 1..{caps.lanes}")
        orig = view.originals()
        if orig is None:
            orig = {ln: {k: int(v) for k, v in self.module.active_eq(ln).items()} for ln in lanes}
            from eqtune.tune.live import tx_adaptive_lanes

            self.journal.append("original", codes={str(k): v for k, v in orig.items()},
                                tx_adaptive=tx_adaptive_lanes(self.module, lanes))
        self.originals = orig
        parallel = cfg.parallel if cfg.parallel is not None else cfg.instrument is None
        self.groups = [lanes] if parallel and cfg.instrument is None else [[ln] for ln in lanes]
        planned = view.plan()
        knobs = planned["knobs"] if planned else cfg.knobs  # a resumed session tunes what it planned
        self.sources = [
            LiveSource(self.module, g, instrument=self.instrument, dwell_s=cfg.dwell_s, settle_s=cfg.settle_s,
                       metric=cfg.metric, knobs=knobs, start={ln: orig[ln] for ln in g})
            for g in self.groups
        ]
        self.knobs = self.sources[0].knobs
        rec = view.last("original") or self.view.last("original") or {}
        self.adaptive_lanes = sorted(int(ln) for ln in rec.get("tx_adaptive") or [] if int(ln) in orig) \
            if TX_EQ in self.knobs and callable(getattr(self.module, "enable_tx_adaptive", None)) else []
        warnings = []
        if cfg.instrument is None and any(k != TX_EQ for k in self.knobs):
            blind = [k for k in self.knobs if k != TX_EQ]
            warnings.append(f"the module's own PRBS checker sees only the host -> module direction (Tx input EQ); "
                            f"{', '.join(blind)} change the module -> host direction, which it cannot see: those "
                            "knobs will look flat. Measure with a BERT or scope (--instrument) to tune them")
        for w in warnings:
            self._emit("log", text="warning: " + w)
        if planned is not None:  # a resumed session measures the warm codes it planned
            self.warm_codes = {int(k): dict(v) for k, v in (planned.get("warm") or {}).items()}
        else:
            self.warm_codes = self._resolve_warm(lanes)
        if view.plan() is None:
            self.journal.append("plan", knobs=list(self.knobs), groups=self.groups, budget=cfg.budget,
                                warnings=warnings, warm={str(k): v for k, v in self.warm_codes.items()},
                                metric=cfg.metric, dwell_s=cfg.dwell_s, verify_dwell_s=cfg.verify_dwell,
                                optimizer=cfg.optimizer, optimizer_options=dict(cfg.optimizer_options or {}),
                                seed=cfg.seed, space_size=self.sources[0].space.size())
        self._announce_plan()
        return {"groups": self.groups, "originals": self.originals, "identity": ident}

    def _announce_plan(self) -> None:
        """The knobs, the space size, how the budget is spent and the expected time: a ``plan`` event
        before the first write (eqtune.tune.plan.live_plan)."""
        from eqtune.tune.plan import live_plan

        cfg = self.config
        plan = live_plan(self.sources[0].space, groups=len(self.groups), budget=cfg.budget, dwell_s=cfg.dwell_s,
                         verify_dwell_s=cfg.verify_dwell, optimizer=cfg.optimizer,
                         remeasure=int(cfg.remeasure_top_k))
        self._emit("plan", text=plan.text(), **plan.to_dict())

    def _resolve_warm(self, lanes: list[int]) -> dict[int, dict[str, int]]:
        """Per lane, the tuned knobs' codes to measure first (validated against the module now, before
        any write), from ``LiveConfig.warm``; {} without a warm start."""
        cfg = self.config
        if not cfg.warm:
            return {}
        if cfg.warm == "model":
            from eqtune.session.model import model_optimum

            allowed = {}
            for src in self.sources[:1]:
                for k in src.space.knobs:
                    allowed[k.name] = [int(round(v)) for v in k.values]
            best = model_optimum(cfg.channel, self.knobs, ber=cfg.target_ber or 1e-6, allowed=allowed)
            per_lane = {ln: dict(best) for ln in lanes}
            self._emit("log", text=f"warm start: the {cfg.channel} model optimum "
                                   + " ".join(f"{k}={v}" for k, v in best.items()))
        else:
            per_lane = {}
            for ln in lanes:
                codes = cfg.warm.get(str(ln), cfg.warm.get("*"))
                if codes:
                    per_lane[ln] = {k: int(v) for k, v in codes.items() if k in self.knobs}
        out = {}
        for gi, g in enumerate(self.groups):
            mine = {ln: {**self.originals[ln], **per_lane[ln]} for ln in g if per_lane.get(ln)}
            if mine:
                from eqtune.errors import EqRangeError

                try:
                    clean = self.sources[gi].validate(mine)  # before any write
                except EqRangeError as exc:
                    raise EqRangeError(f"warm start (--warm): {exc}; fix the warm codes or drop --warm") from None
                out.update({ln: {k: int(v) for k, v in clean[ln].items() if k in self.knobs} for ln in mine})
        return out

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

    def _restore_point(self, lanes: Any) -> list[int]:
        """Of ``lanes``, those whose restore point includes Tx input adaptive EQ on."""
        return [ln for ln in self.adaptive_lanes if ln in lanes]

    def _adaptive_want(self, lanes: Any, restore: Any = ()) -> dict[int, bool]:
        """Wanted adaptive state of the tracked lanes among ``lanes``: on for those in ``restore``
        (written back to their restore point), off for the others (they hold a fixed tx_eq)."""
        return {ln: ln in restore for ln in self.adaptive_lanes if ln in lanes}

    def _adaptive_is(self, want: Mapping[int, bool]) -> bool:
        if not want:
            return True
        try:
            on = self.module.tx_adaptive_enabled()
        except EqtuneError:
            return False
        return all(bool(on.get(ln)) == w for ln, w in want.items())

    def _holds(self, gi: int, codes: dict[int, dict[str, int]], adaptive: Mapping[int, bool] | None = None) -> bool:
        """The module's active codes are ``codes`` (and, for ``adaptive``, Tx input adaptive EQ on/off)."""
        try:
            return all({k: int(v) for k, v in self.module.active_eq(ln).items() if k in c} == c
                       for ln, c in codes.items()) and self._adaptive_is(adaptive or {})
        except EqtuneError:
            return False

    def _baseline(self) -> dict[int, dict[str, Any]]:
        self._ensure_connected()
        self._phase("baseline", f"measuring the original codes ({self.config.verify_dwell:g} s per group)")
        cfg = self.config
        for gi, g in enumerate(self.groups):
            done = self.view.readings("baseline", gi)
            if all(ln in done for ln in g):
                continue
            self._checkpoint()
            codes = {ln: self.originals[ln] for ln in g}
            back = self._restore_point(g)
            if not self._holds(gi, codes, self._adaptive_want(g, back)):  # a resumed session may have left others
                self._write(gi, "baseline", codes, adaptive=back)
            readings = self.sources[gi].read(cfg.verify_dwell, codes=codes, stop=self._abort_check)
            self.journal.append("baseline", group=gi, dwell_s=cfg.verify_dwell,
                                lanes={str(k): v.to_dict() for k, v in readings.items()})
            for ln, r in readings.items():
                self._emit("baseline", lane=ln, margin=r.margin, codes=r.codes, counts=r.counts)
        return self.view.readings("baseline")

    def _optimizers(self, gi: int) -> dict[int, Any]:
        """Fresh optimizers for a group with every journaled observation replayed (no pickles)."""
        from eqtune.tune.base import make_optimizer

        cfg = self.config
        src = self.sources[gi]
        opts = {}
        for ln in self.groups[gi]:
            start = {k: float(v) for k, v in self.originals[ln].items() if k in src.knobs}
            opts[ln] = make_optimizer(cfg.optimizer, src.space, seed=int(cfg.seed or 0) + 1000 * ln, start=start,
                                      **_budget_option(cfg), **dict(cfg.optimizer_options or {}))
        _set_prior_from_earlier_groups(opts, self.view, gi, src)
        last_extra: dict[int, dict[str, Any]] = {}
        for m in self.view.measurements(gi):
            for ln, r in _lane_map(m["lanes"]).items():
                if ln in opts:
                    opts[ln].tell(_point(src, r["codes"]), float(r["margin"]))
            last_extra.update(_lane_map(m.get("optimizer") or {}))
        # The observations come from the journal (replayed above). What an optimizer carries besides
        # them (the GP's hyperparameter warm start, journaled as plain JSON with every measurement) is
        # put back through its public state API, so the next proposal is exactly the one an
        # uninterrupted run would have made.
        if last_extra:
            from eqtune.tune.base import optimizer_from_state

            for ln, extra in last_extra.items():
                if ln in opts and extra:
                    st = opts[ln].state()
                    st.update({k: v for k, v in extra.items() if k not in _OBSERVATION_KEYS})
                    opts[ln] = optimizer_from_state(st, src.space)
        return opts

    def _tune(self) -> dict[int, dict[str, int]]:
        self._ensure_connected()
        try:  # a GP over tens of points is fastest single-threaded; a BLAS thread pool per fit costs
            # 10x on a shared machine (measured: 0.6 s -> 0.09 s per evaluation on 2 busy cores)
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover
            return self._tune_loop()
        with threadpool_limits(limits=1):
            return self._tune_loop()

    def _tune_loop(self) -> dict[int, dict[str, int]]:
        cfg = self.config
        rec: dict[int, dict[str, int]] = {}
        for gi, g in enumerate(self.groups):
            src = self.sources[gi]
            opts = self._optimizers(gi)
            n = len(self.view.measurements(gi))
            if not self._group_done(gi):
                self._phase("tuning", f"lanes {','.join(map(str, g))}: {n}/{cfg.budget} evaluations done")
            best = {ln: max((float(_lane_map(m["lanes"])[ln]["margin"]) for m in self.view.measurements(gi)),
                            default=float("-inf")) for ln in g}
            planned: dict[int, dict[str, int]] | None = None  # next codes, journaled with the last measure
            unchanged = self._unchanged_runs(gi)
            main_budget = cfg.budget - int(cfg.remeasure_top_k)

            def propose(n_next: int, g=g, opts=opts, src=src, main_budget=main_budget) -> dict[int, dict[str, int]]:
                points = {}
                for ln in g:
                    p = None
                    if n_next == 0 and ln in self.warm_codes:  # warm start: measured first
                        p = _point(src, self.warm_codes[ln])
                    elif n_next >= main_budget:  # the closing re-measurements: k-th best by posterior mean
                        ranked = opts[ln].ranked()
                        i = n_next - main_budget
                        p = opts[ln].ispace.point(ranked[i]) if i < len(ranked) else None
                    else:
                        p = opts[ln].ask()
                    points[ln] = p if p is not None else opts[ln].recommend()
                return src.validate({ln: src.codes_for(ln, points[ln]) for ln in g})

            used_s = sum(float(m.get("wall_s") or 0.0) for m in self.view.measurements(gi))
            while not self._group_done(gi):
                self._checkpoint()
                t0 = time.perf_counter()
                if planned is None:
                    self._write(gi, "tune", propose(n), n)
                    codes = self._last_written
                else:  # its intent is already durable (the 'next' of the previous measure record)
                    codes = planned
                    src.apply(codes)
                readings = src.read(codes=codes, stop=self._abort_check)
                for ln in g:  # in memory only; the record below makes it durable
                    opts[ln].tell(_point(src, readings[ln].codes), readings[ln].margin)
                # Propose the next codes now, so one fsync'd record carries both this result and the
                # intent of the next write (the rule "journal before the hardware write" holds with
                # one fsync per evaluation instead of two).
                used_s += time.perf_counter() - t0
                recs = {}
                for ln in g:  # the recommendation now (its GP fit is the one the next ask reuses)
                    p = opts[ln].recommend()
                    recs[ln] = None if p is None else src.codes_for(ln, p)
                    in_design = bool(getattr(opts[ln], "in_initial_design", lambda: False)())
                    same = recs[ln] is not None and recs[ln] == unchanged[ln][0]
                    unchanged[ln] = (recs[ln], unchanged[ln][1] + 1 if same and not in_design else 0)
                stop = self._stop_rule(g, best, readings, used_s, unchanged, n)
                planned = propose(n + 1) if n + 1 < cfg.budget and not stop else None
                extra = {str(ln): _optimizer_extra(opts[ln]) for ln in g}
                wall = time.perf_counter() - t0
                fields: dict[str, Any] = {"stop": stop} if stop else {}
                fields["rec"] = {str(ln): {"codes": unchanged[ln][0], "held": unchanged[ln][1]}
                                 for ln in g if unchanged[ln][0] is not None}
                if planned is not None:
                    fields["next"] = {"n": n + 1, "codes": {str(k): v for k, v in planned.items()}}
                self.journal.append("measure", group=gi, n=n, wall_s=round(wall, 6),
                                    lanes={str(k): v.to_dict() for k, v in readings.items()},
                                    optimizer=extra, **fields)
                self.eval_overhead_s.append(max(0.0, wall - cfg.dwell_s))
                for ln in g:
                    r = readings[ln]
                    best[ln] = max(best[ln], r.margin)
                    self._emit("evaluation", n=n, budget=cfg.budget, lane=ln, group=gi, codes=r.codes,
                               margin=r.margin, counts=r.counts, best_margin=best[ln])
                n += 1
                if stop:
                    self._phase("tuning", f"lanes {','.join(map(str, g))}: stopped after {n}/{cfg.budget} "
                                          f"evaluations: {stop}")
            for ln in g:
                p = opts[ln].recommend()
                rec[ln] = src.codes_for(ln, p) if p is not None else dict(self.originals[ln])
        self._recommended = rec
        return rec

    def _group_done(self, gi: int) -> bool:
        """Budget used, or an early stop rule ended the group (journaled as 'stop' in its last measure)."""
        ms = self.view.measurements(gi)
        return len(ms) >= self.config.budget or bool(ms and ms[-1].get("stop"))

    def _stop_rule(self, g: list[int], best: dict[int, float], readings: dict[int, Any], used_s: float,
                   unchanged: dict[int, tuple[Any, int]], n: int) -> str:
        cfg = self.config
        now = {ln: max(best[ln], readings[ln].margin) for ln in g}
        if cfg.target_margin is not None and all(m >= cfg.target_margin for m in now.values()):
            return f"target margin {cfg.target_margin:g} reached"
        if cfg.time_budget_s is not None and used_s >= cfg.time_budget_s:
            return f"time budget {cfg.time_budget_s:g} s used"
        # patience is checked during the search only: once the closing re-measurements have begun they run
        # to the end. A patience stop skips them (the pick held for K evaluations; the long-dwell verify
        # measures it again anyway).
        if (cfg.patience is not None and n + 1 < cfg.budget - int(cfg.remeasure_top_k)
                and all(unchanged[ln][1] >= int(cfg.patience) for ln in g)):
            return f"recommendation unchanged for {int(cfg.patience)} evaluations (patience)"
        return ""

    def _unchanged_runs(self, gi: int) -> dict[int, tuple[Any, int]]:
        """Per lane of group ``gi``: (last recommended codes, evaluations it has held unchanged), from the
        last measure record's 'rec' (so a resumed session stops exactly where a straight run would)."""
        out: dict[int, tuple[Any, int]] = {ln: (None, 0) for ln in self.groups[gi]}
        ms = self.view.measurements(gi)
        recs = _lane_map((ms[-1].get("rec") if ms else None) or {})
        for ln in out:
            r = recs.get(ln)
            if isinstance(r, Mapping) and "codes" in r:
                out[ln] = (dict(r["codes"]), int(r.get("held", 0)))
        return out

    def _recommendations(self) -> dict[int, dict[str, int]]:
        rec = self._recommended
        if rec is None:
            rec = {}
            for gi, g in enumerate(self.groups):
                opts = self._optimizers(gi)
                for ln in g:
                    p = opts[ln].recommend()
                    rec[ln] = self.sources[gi].codes_for(ln, p) if p is not None else dict(self.originals[ln])
            self._recommended = rec
        return rec

    def _verify(self) -> dict[int, dict[str, Any]]:
        self._ensure_connected()
        cfg = self.config
        for gi, _g in enumerate(self.groups):
            if not self._group_done(gi):
                self._tune()
                break
        rec = self._recommendations()
        self._phase("verify", f"measuring the recommendation ({cfg.verify_dwell:g} s per group)")
        for gi, g in enumerate(self.groups):
            if all(ln in self.view.readings("verify", gi) for ln in g):
                continue
            self._checkpoint()
            codes = {ln: rec[ln] for ln in g}
            if not self._holds(gi, codes, self._adaptive_want(g)):  # fixed tx_eq, even if it equals the original
                self._write(gi, "verify", codes)
            readings = self.sources[gi].read(cfg.verify_dwell, codes=codes, stop=self._abort_check)
            self.journal.append("verify", group=gi, dwell_s=cfg.verify_dwell,
                                lanes={str(k): v.to_dict() for k, v in readings.items()})
            for ln, r in readings.items():
                self._emit("verify", lane=ln, margin=r.margin, codes=r.codes, counts=r.counts)
        return self.view.readings("verify")

    def _decide(self) -> dict[int, dict[str, Any]]:
        self._ensure_connected()
        view = self.view
        if any(not all(ln in view.readings("verify", gi) for ln in g) for gi, g in enumerate(self.groups)):
            self._verify()
            view = self.view
        self._phase("decided", "keeping tuned codes only where verification beats the baseline")
        base = view.readings("baseline")
        ver = view.readings("verify")
        done = view.decisions()
        cfg = self.config
        for gi, g in enumerate(self.groups):
            hold: dict[int, dict[str, int]] = {}
            back: list[int] = []  # lanes going back to Tx input adaptive EQ
            for ln in g:
                if ln in done:
                    hold[ln] = dict(done[ln]["codes"])
                    if done[ln].get("tx_adaptive"):
                        back.append(ln)
                    continue
                b, v = float(base[ln]["margin"]), float(ver[ln]["margin"])
                tuned = {k: int(x) for k, x in ver[ln]["codes"].items()}
                bc, vc = base[ln].get("counts") or {}, ver[ln].get("counts") or {}
                # BER metrics: "beats" must hold statistically, i.e. the tuned codes' 95 % upper bound is
                # below the baseline's measured BER. An error-free baseline cannot be beaten at this dwell.
                proven = True
                if cfg.metric in BER_METRICS and bc.get("bits") and vc.get("bits"):
                    b_ber = bc["errors"] / bc["bits"]
                    proven = vc.get("ber_upper95") is not None and vc["ber_upper95"] < b_ber
                adaptive = ln in self.adaptive_lanes  # baseline ran adaptive EQ: a fixed code is a change
                if tuned == self.originals[ln] and not adaptive:
                    action, codes, why = "keep", tuned, "the original codes are already the best found"
                elif v > b + cfg.min_gain and proven:
                    action, codes, why = "keep", tuned, f"verified {v:.3f} beats baseline {b:.3f}"
                else:
                    action, codes = "restore", dict(self.originals[ln])
                    why = f"verified {v:.3f} does not beat baseline {b:.3f}"
                    if bc.get("errors") == 0:
                        why += (" (the original codes counted no errors in the verification dwell: nothing to "
                                "improve at this resolution; a longer --verify-dwell can tell them apart)")
                    elif v > b + cfg.min_gain:
                        why += " with 95 % confidence"
                extra: dict[str, Any] = {}
                if adaptive:
                    extra["tx_adaptive"] = action == "restore"
                    why += ("; Tx input adaptive EQ back on" if action == "restore"
                            else "; the fixed tx_eq replaces Tx input adaptive EQ")
                    if action == "restore":
                        back.append(ln)
                self.journal.append("decision", lane=ln, group=gi, action=action, baseline=b, verified=v,
                                    codes=codes, reason=why, **extra)
                self._emit("decision", lane=ln, action=action, reason=why, codes=codes, baseline=b, verified=v)
                hold[ln] = codes
            want = self._adaptive_want(g, back)
            if not self._holds(gi, hold, want):
                self._write(gi, "decision", hold, adaptive=back)
                ok = self._holds(gi, hold, want)
                self.journal.append("restore", reason="decision", codes={str(k): v for k, v in hold.items()},
                                    verified=ok)
                if not ok:
                    from eqtune.errors import ModuleError

                    raise ModuleError(f"{cfg.module}: after writing the decided codes the module reads back "
                                      "something else; check it with `eqtune module show` and resume the session")
        return self.view.decisions()

    # -- ending --------------------------------------------------------------------------------
    def _stop(self, status: str, reason: str, exc: BaseException | None) -> None:
        """Abort/failure: journal it, restore the originals of undecided lanes, end the session."""
        if self.phase in ("aborted", "failed", "done"):
            return
        try:
            self.journal.append("abort", reason=reason, error=None if exc is None else type(exc).__name__)
        except EqtuneError:
            pass
        restored = self._restore_originals("abort" if status == "aborted" else "error")
        text = f"{reason}; " + (restored or "no codes had been changed")
        self._emit("aborted" if status == "aborted" else "error", text=text)
        self._end(status, text)

    def _restore_originals(self, reason: str) -> str:
        if not self.originals or self.module is None:
            return ""
        decided = self.view.decisions()
        todo = {ln: c for ln, c in self.originals.items() if ln not in decided}
        if not todo:
            return ""
        # did we ever write? (only then is a restore needed)
        if not self.journal.of_type("apply"):
            return ""
        ok = False
        err = ""
        deadline = time.monotonic() + self.restore_time_limit_s
        for attempt in itertools.count():  # rewriting the same codes is idempotent, so a retry is safe
            if attempt:
                if time.monotonic() >= deadline:
                    break
                time.sleep(min(RESTORE_BACKOFF_S * 2 ** (attempt - 1), RESTORE_BACKOFF_MAX_S,
                               max(0.0, deadline - time.monotonic())))
            try:
                if self.sources:
                    for gi, g in enumerate(self.groups):
                        part = {ln: todo[ln] for ln in g if ln in todo}
                        back = self._restore_point(part)
                        if part and not self._holds(gi, part, self._adaptive_want(part, back)):
                            self._write(gi, "restore", part, adaptive=back)
                else:  # not connected in this process: write only the knobs the plan tuned
                    plan = self.view.plan() or {}
                    part = {ln: {k: v for k, v in c.items() if k in plan.get("knobs", ())} for ln, c in todo.items()}
                    part = {ln: c for ln, c in part.items() if c}
                    if part:
                        self.module.apply_eq(part)
                    rec = self.view.last("original") or {}
                    back = [int(ln) for ln in rec.get("tx_adaptive") or [] if int(ln) in part
                            and TX_EQ in part[int(ln)]]
                    if back and callable(getattr(self.module, "enable_tx_adaptive", None)):
                        self.adaptive_lanes = back
                        self._reenable_adaptive(back)
                ok = all({k: int(v) for k, v in self.module.active_eq(ln).items() if k in c} == c
                         for ln, c in todo.items()) and self._adaptive_is(self._adaptive_want(todo, todo))
                if ok:
                    break
            except KeyboardInterrupt as e:  # a second Ctrl-C during the restore: one more try, then report
                err = _describe(e)
                if attempt:
                    break
            except Exception as e:  # keep trying until the time limit; report below
                err = _describe(e)
        self._journal_best_effort(True, "restore", reason=reason, codes={str(k): v for k, v in todo.items()},
                                  verified=ok, error=err or None)
        lanes = ",".join(map(str, sorted(todo)))
        unjournaled = (f"; the journal could not record it ({self.journal_error})"
                       if self.journal_error else "")
        if ok:
            back = self._restore_point(todo)
            also = f" (Tx input adaptive EQ back on lane(s) {','.join(map(str, back))})" if back else ""
            self._emit("restore", text=f"original codes restored on lane(s) {lanes}{also}{unjournaled}")
            return f"original codes restored and verified on lane(s) {lanes}{also}{unjournaled}"
        return (f"COULD NOT restore the original codes on lane(s) {lanes} ({err or 'read-back differs'}): "
                f"set them with `eqtune module set` ({ {ln: todo[ln] for ln in sorted(todo)} }){unjournaled}")

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


_OBSERVATION_KEYS = ("points", "margins", "pending", "knobs", "start", "kind", "version", "seed", "prior")


def _set_prior_from_earlier_groups(opts: dict[int, Any], view: Any, gi: int, src: Any) -> None:
    """Lane groups after the first start from what the earlier groups measured (every lane pooled) as
    the GP's prior mean (eqtune.tune.transfer), unless the optimizer option ``transfer`` is false.
    Derived from the journal alone, so a resumed session rebuilds the same prior."""
    if gi == 0:
        return
    obs = [(_point(src, r["codes"]), float(r["margin"]))
           for gj in range(gi) for m in view.measurements(gj) for r in _lane_map(m["lanes"]).values()]
    if not obs:
        return
    for opt in opts.values():
        if getattr(opt, "transfer", False) and hasattr(opt, "set_prior"):
            opt.set_prior(obs, keep_start=False)


def _budget_option(cfg: LiveConfig) -> dict[str, int]:
    """The GP's evaluation budget per lane group (its exhaustive mode: every code once when the space
    is no larger, then the close contenders; see eqtune.tune.optimizer), unless given as an option."""
    if cfg.optimizer != "gp" or "budget" in (cfg.optimizer_options or {}):
        return {}
    return {"budget": int(cfg.budget) - int(cfg.remeasure_top_k)}


def _optimizer_extra(opt: Any) -> dict[str, Any]:
    """The optimizer state minus what the journal already holds (observations, space, seed)."""
    try:
        st = opt.state()
    except Exception:  # an optimizer without state: replaying tell() is all there is
        return {}
    return {k: v for k, v in st.items() if k not in _OBSERVATION_KEYS}


def _point(src: Any, codes: Mapping[str, Any]) -> dict[str, float]:
    p = dict(src.space.fixed)
    p.update({k: float(v) for k, v in codes.items() if k in src.knobs})
    return p


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    if isinstance(exc, EqtuneError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
