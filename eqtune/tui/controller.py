"""The on-site session as a step-by-step controller, with no user interface in it.

The Textual app (``eqtune.tui.app``) is a thin view over this class: every step of the guided
session is one method here, so the flow is testable without a terminal and the TUI holds no
state of its own beyond what it shows.

Steps: session -> devices -> link -> baseline -> tune -> verify -> save & push -> report.
Device and input problems raise ``EqtuneError`` subclasses with a message saying what to do; the
view shows the message and stays usable.

Threading: the long steps (:meth:`baseline`, :meth:`tune`, :meth:`verify`) block and are meant to
run in a worker thread; :meth:`pause`, :meth:`unpause` and :meth:`abort` may be called from any
thread (they forward to ``LiveTuner``, which is thread-safe). Progress arrives through the
``on_event`` callback given to the constructor, on the worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eqtune.errors import InputError, SessionError
from eqtune.serdes.knobs import LIVE_METRICS

if TYPE_CHECKING:
    from eqtune.drivers.protocols import CmisModule

STEPS = ("session", "devices", "link", "baseline", "tune", "verify", "save", "report")
EMULATED_MODULE = "emu:c2m-10in"


@dataclass
class SessionForm:
    """Step 1: who, where, which link (free text, journaled as session metadata)."""

    site: str = ""
    customer: str = ""
    link: str = ""
    operator: str = ""

    def metadata(self) -> dict[str, str]:
        return {k: v.strip() for k, v in vars(self).items() if v and v.strip()}


@dataclass
class LinkForm:
    """Step 3: what to tune and how."""

    channel: str | None = "c2m-10in"  # library channel the link corresponds to (None: pure live)
    target_ber: float = 1e-6
    metric: str = "ber"  # ber | q_db | eye_height
    knobs: list[str] = field(default_factory=list)  # empty: the knobs the measurement source can see
    budget: int = 30
    dwell_s: float = 1.0
    seed: int | None = None
    warm_from_model: bool = True  # with a channel: measure the channel model's optimum first
    patience: int | None = 6  # stop once the recommended codes held this many evaluations (bench_live_stops)
    prior_session: str | None = None  # an earlier session id or "auto" (eqtune.session.prior); None: no prior
    # the search's screen: "auto" (chosen when the session opens: eqtune.session.config.choose_screen),
    # "off", or a screen dwell in seconds (shorter than the dwell)
    screen: str = "auto"

    def screen_config(self) -> dict[str, Any]:
        """The LiveConfig fields of ``screen``: {screen, screen_dwell_s}; a typo is one line."""
        text = str(self.screen or "auto").strip().lower()
        if text in ("", "auto"):
            return {"screen": "auto", "screen_dwell_s": None}
        if text in ("off", "0", "no", "none"):
            return {"screen": "off", "screen_dwell_s": None}
        try:
            s = float(text.removesuffix("s").strip())
        except ValueError:
            raise InputError(f"screen {self.screen!r}: type auto, off or a screen dwell in seconds (e.g. 3.5)") from None
        if not 0.0 < s < float(self.dwell_s):  # NaN fails the comparison too
            raise InputError(f"screen {s:g} s must be above 0 and shorter than the dwell {self.dwell_s:g} s: "
                             "type e.g. the dwell / 8, auto or off")
        return {"screen": "given", "screen_dwell_s": s}

    def check(self) -> None:
        if not 0 < self.target_ber < 0.5:
            raise InputError(f"target BER {self.target_ber:g} is outside (0, 0.5): use e.g. 1e-6")
        if self.budget < 1:
            raise InputError(f"budget {self.budget} must be at least 1 evaluation per lane")
        if self.dwell_s <= 0:
            raise InputError(f"dwell {self.dwell_s:g} s must be > 0")
        if self.metric not in LIVE_METRICS:
            raise InputError(f"objective {self.metric!r} is unknown: use ber, q_db or eye_height")
        self.screen_config()


@dataclass(frozen=True)
class JournalProgress:
    """Where a session stands, from its journal alone (what a resumed screen must show).

    ``step``: the wizard step to continue at (baseline, tune, verify or save). ``evaluations``: per lane,
    the journaled tuning evaluations (one per ``measure`` record that measured the lane); ``planned``:
    per lane the budget; ``best``: per lane the best (margin, codes) so far; ``groups_done``: groups
    whose tuning loop ended (budget used or an early stop rule journaled)."""

    step: str
    evaluations: dict[int, int]
    planned: dict[int, int]
    best: dict[int, tuple[float, dict[str, int]]]
    groups_done: int
    groups: int

    @property
    def tuned(self) -> bool:
        return self.groups_done >= self.groups > 0

    def text(self) -> str:
        done, total = sum(self.evaluations.values()), sum(self.planned.values())
        return f"{done} of {total} lane evaluations journaled, {self.groups_done}/{self.groups} lane group(s) tuned"


def journal_progress(view: Any) -> JournalProgress:
    """The session's progress from its journal: the step to continue at and the tuning counts (the same
    records the report counts). Rules of the live tuner (eqtune.session.live_search: a group is done when
    its budget is used or its last measurement carries an early ``stop``; verify needs every group done)."""
    plan = view.plan() or {}
    budget = int(plan.get("budget") or view.config.budget)
    groups = [list(map(int, g)) for g in plan.get("groups") or []]
    lanes = [ln for g in groups for ln in g]
    evaluations = dict.fromkeys(lanes, 0)
    best: dict[int, tuple[float, dict[str, int]]] = {}
    done = 0
    for gi in range(len(groups)):
        ms = view.measurements(gi)
        for m in ms:
            for key, r in (m.get("lanes") or {}).items():
                ln = int(key)
                evaluations[ln] = evaluations.get(ln, 0) + 1
                margin = float(r["margin"])
                if ln not in best or margin > best[ln][0]:
                    best[ln] = (margin, {k: int(v) for k, v in (r.get("codes") or {}).items()})
        if len(ms) >= budget or (ms and ms[-1].get("stop")):
            done += 1
    base, ver, dec = view.readings("baseline"), view.readings("verify"), view.decisions()
    if not groups or any(ln not in base for ln in lanes):
        step = "baseline"
    elif done < len(groups):
        step = "tune"
    elif any(ln not in ver for ln in lanes) or any(ln not in dec for ln in lanes):
        step = "verify"
    else:
        step = "save"
    return JournalProgress(step, evaluations, dict.fromkeys(lanes, budget), best, done, len(groups))


class SessionController:
    """One on-site session driven step by step (see the module docstring)."""

    def __init__(self, sessions_dir: str | os.PathLike[str] | None = None, *,
                 on_event: Callable[[Any], None] | None = None,
                 opener: Callable[[str], Any] | None = None) -> None:
        from eqtune.resources import sessions_dir as _sessions_dir

        self.sessions_dir = Path(_sessions_dir(sessions_dir))
        self.on_event = on_event
        self._opener = opener
        self.form = SessionForm()
        self.link = LinkForm()
        self.module_resource: str = EMULATED_MODULE
        self.instrument_resource: str | None = None  # None: the module's own PRBS checker
        self.instrument_kind: str = ""  # "bert" / "scope" once checked at Connect ("": none or unknown)
        self.lanes: list[int] = [1]
        self.module: CmisModule | None = None
        self.identity: dict[str, Any] = {}
        # an emu: module whose link is the closed-form surrogate, not the eye engine's model (a broken
        # install): one line the Devices step shows at Connect (eqtune.emulate.registry.emulated_link_warning)
        self.link_warning: str | None = None
        self.capabilities: dict[str, Any] = {}
        self.doctor: dict[str, Any] = {}  # eqtune.drivers.cmis_doctor report of the connected module
        self.module_codes: dict[int, dict[str, int]] = {}  # every lane's Active Control Set (page 11h) at connect
        self.tx_adaptive: dict[int, bool] = {}  # Tx input adaptive EQ per lane at connect
        self._eye_cache: dict[Any, list[str]] = {}
        self.tuner: Any = None
        self.session_id: str | None = None
        self.baseline_result: dict[int, dict[str, Any]] = {}
        self.recommended: dict[int, dict[str, int]] = {}
        self.verify_result: dict[int, dict[str, Any]] = {}
        self.decisions: dict[int, dict[str, Any]] = {}
        self.model_eye: list[str] = []  # text picture of the kept codes' model eye (after verify)
        self.profile_path: Path | None = None
        self.push_report: Any = None
        self.report_path: Path | None = None

    # -- step 1: session ---------------------------------------------------------------------
    def list_sessions(self) -> list[Any]:
        from eqtune.session.journal import list_sessions

        if not self.sessions_dir.is_dir():
            return []
        return list_sessions(self.sessions_dir)

    def new_session(self, form: SessionForm) -> None:
        """Remember the metadata; the journal is created when the link is confirmed (step 3)."""
        self.form = form
        self._close_tuner()
        self.session_id = None

    def resume_session(self, session_id: str) -> Any:
        """Reopen an interrupted session: devices and link come from its journal."""
        from eqtune.session.live import LiveTuner

        self._close_tuner()
        self.tuner = LiveTuner.resume(session_id, sessions_dir=self.sessions_dir, on_event=self.on_event,
                                      **self._opener_kw())
        self.session_id = self.tuner.session_id
        cfg = self.tuner.config
        self.module_resource = cfg.module
        self.instrument_resource = cfg.instrument
        self.lanes = list(cfg.lanes) or [1]
        self.link = LinkForm(channel=cfg.channel, metric=cfg.metric, knobs=list(cfg.knobs or []),
                             budget=cfg.budget, dwell_s=cfg.dwell_s, seed=cfg.seed,
                             target_ber=cfg.target_ber or 1e-6, patience=cfg.patience,
                             screen=(f"{cfg.screen_dwell_s:g}" if cfg.screening and cfg.screen_dwell_s else "off"))
        meta = self.tuner.view.header.get("metadata") or {}
        self.form = SessionForm(**{k: str(meta.get(k, "")) for k in ("site", "customer", "link", "operator")})
        self.tuner.connect()
        self.link.metric = self.tuner.config.metric
        self.module = self.tuner.module
        self._read_identity()
        return self.tuner.view

    # -- step 2: devices ---------------------------------------------------------------------
    def use_emulators(self) -> None:
        self.module_resource = EMULATED_MODULE
        self.instrument_resource = None

    def connect_module(self, resource: str, lanes: list[int] | str, instrument: str | None = None) -> dict[str, Any]:
        """Open the module and check, before anything else happens: the lanes exist on it (``lanes`` as a
        list, or as typed: ``all`` is every lane the module advertises), and the instrument (if any)
        answers. Shows the module's identity and capabilities."""
        from eqtune.tui.format import parse_lanes

        resource = resource.strip()
        if not resource:
            raise InputError("no module resource: type one (e.g. i2c:1@0x50) or press e for the emulators")
        typed = parse_lanes(lanes, 8) if isinstance(lanes, str) else list(lanes)  # before any I/O
        if typed:
            bad = [ln for ln in typed if not 1 <= ln <= 8]
            if bad:
                raise InputError(f"lane(s) {bad} out of range: CMIS lanes are numbered 1..8")
        if self.module is not None and resource != self.module_resource:
            self._close_module()
        if self.module is None:
            self.module = self._open(resource)
        n = int(self.module.capabilities().lanes)
        chosen = parse_lanes(lanes, n) if isinstance(lanes, str) else list(lanes)
        if not chosen:
            raise InputError("no lanes chosen: type lane numbers, e.g. 1,2 or all")
        missing = [ln for ln in chosen if not 1 <= ln <= n]
        if missing:
            raise InputError(f"lane(s) {','.join(map(str, missing))} do not exist on {resource}: it has lanes "
                             f"1..{n}; type e.g. 1-{n} or all")
        inst = instrument.strip() if instrument and instrument.strip() else None
        self.instrument_kind = ""
        if inst:
            self.check_instrument(inst)
            if self.instrument_kind == "scope":  # a sampling scope measures eye height, not bit errors
                self.link.metric = "eye_height"
        self.module_resource = resource
        self.instrument_resource = inst
        self.lanes = sorted(set(chosen))
        self._read_identity()
        from eqtune.emulate.registry import emulated_link_warning

        self.link_warning = emulated_link_warning(resource)
        return self.identity

    def check_instrument(self, resource: str) -> dict[str, Any]:
        """Open the instrument, read its identity and close it again: a dead address is reported at
        Connect, not after the session's journal was made (the tuner opens it again itself)."""
        from eqtune.drivers.instrument import open_instrument
        from eqtune.errors import DeviceError, EqtuneError

        try:
            inst = open_instrument(resource)
        except EqtuneError as exc:
            raise DeviceError(f"instrument {resource} does not answer ({exc}): check the address and that it "
                              "is on, or leave 'Measure with' empty for the module's own PRBS checker") from None
        try:
            idn = inst.identity() if callable(getattr(inst, "identity", None)) else {}
        except EqtuneError as exc:
            raise DeviceError(f"instrument {resource} opened but does not identify itself ({exc})") from None
        finally:
            try:
                inst.close()
            except Exception:
                pass
        self.instrument_kind = str(getattr(inst, "kind", ""))
        return dict(idn) if isinstance(idn, dict) else {"idn": str(idn)}

    def _read_identity(self) -> None:
        """Identity (page 00h), capabilities (01h) and every lane's active codes (11h) for the Devices screen."""
        assert self.module is not None  # connect_module opened it
        self.identity = self.module.identity().to_dict()
        self.capabilities = self.module.capabilities().to_dict()
        try:
            self.module_codes = dict(self.module.active_eq_all())
        except AttributeError:  # a module object without the all-lanes read
            self.module_codes = {ln: self.module.active_eq(ln) for ln in self.lanes}
        try:
            self.tx_adaptive = dict(self.module.tx_adaptive_enabled()) if self.capabilities.get("tx_adaptive") else {}
        except AttributeError:
            self.tx_adaptive = {}
        self.doctor = self._diagnose()

    def _diagnose(self) -> dict[str, Any]:
        """``module doctor``'s read-only report (Apply method, whether traffic goes down, what eqtune cannot
        do on this module); {} for a module object without the CMIS policy (test fakes)."""
        from eqtune.drivers.cmis_doctor import diagnose
        from eqtune.errors import EqtuneError

        if self.module is None:
            return {}
        try:
            return diagnose(self.module).to_dict()
        except (AttributeError, TypeError, EqtuneError):
            return {}

    def active_codes(self) -> dict[int, dict[str, int]]:
        if self.module is None:
            return {}
        return {ln: self.module.active_eq(ln) for ln in self.lanes}

    # -- step 3: link ------------------------------------------------------------------------
    def library_channels(self) -> list[str]:
        try:
            from eqtune.channel import list_channels

            return [c if isinstance(c, str) else getattr(c, "name", str(c)) for c in list_channels()]
        except Exception:  # the library is optional for a pure live session
            return []

    def traffic_down_notice(self, budget: int) -> Any:
        """The consent notice when every write to the connected module takes the data path down (lanes,
        expected outages of a session of ``budget`` evaluations, advertised length); None otherwise.
        Reads only (eqtune.session.consent)."""
        from eqtune.session.consent import expected_outages, traffic_down_notice

        if self.module is None:
            return None
        groups = 1 if self.instrument_resource is None else len(self.lanes)
        return traffic_down_notice(self.module, list(self.lanes), outages=expected_outages(groups, budget))

    def confirm_link(self, link: LinkForm, consent: str | None = None) -> str:
        """Create the journaled session with this configuration and connect it; returns its id.
        ``consent``: the operator's answer to :meth:`traffic_down_notice` (tune, down-only), journaled
        by the tuner before its first write; None on a module whose writes keep traffic up."""
        from eqtune.session.config import LiveConfig
        from eqtune.session.live import LiveTuner

        link.check()
        if self.module is None:
            raise InputError("no module connected yet: go to step 2 (Devices) and connect one")
        self.link = link
        if self.tuner is not None and self.tuner.view.status() not in ("done", "aborted", "failed"):
            if self.tuner.view.measurements():
                raise SessionError(f"session {self.session_id} already has measurements: finish or abort it "
                                   "before changing the link settings")
            self._close_tuner()
        cfg = LiveConfig(module=self.module_resource, lanes=list(self.lanes), instrument=self.instrument_resource,
                         dwell_s=link.dwell_s, budget=link.budget, seed=link.seed, knobs=list(link.knobs) or None,
                         metric=link.metric, target_ber=link.target_ber, channel=link.channel,
                         warm="model" if (link.warm_from_model and link.channel) else None,
                         patience=link.patience, prior_session=link.prior_session, metadata=self.form.metadata(),
                         **link.screen_config())
        answer = (lambda _notice: consent) if consent else None
        self.tuner = LiveTuner.create(cfg, sessions_dir=self.sessions_dir, on_event=self.on_event,
                                      module=self.module, consent=answer, **self._opener_kw(instrument_only=True))
        self.session_id = self.tuner.session_id
        self.tuner.connect()
        self.link.metric = self.tuner.config.metric  # a scope measures eye height (mV): every label follows
        if self.tuner.groups:  # "only the lanes whose link is down" may have narrowed them
            self.lanes = sorted(ln for g in self.tuner.groups for ln in g)
        return self.session_id

    # -- steps 4-6: baseline, tune, verify (blocking: run in a worker thread) ----------------
    def _need_tuner(self) -> Any:
        if self.tuner is None:
            raise SessionError("no session yet: confirm the link in step 3 first (or resume a session)")
        return self.tuner

    def baseline(self) -> dict[int, dict[str, Any]]:
        self.baseline_result = self._need_tuner().baseline() or {}
        return self.baseline_result

    def progress(self) -> JournalProgress | None:
        """The session's progress from its journal (None without a session)."""
        return journal_progress(self.tuner.view) if self.tuner is not None else None

    def stop_after_baseline(self, verdict: str) -> None:
        """The first-look verdict accepted: journal it and end the session (the module keeps its codes)."""
        t = self._need_tuner()
        if t.phase not in ("done", "aborted", "failed"):
            t.journal.append("verdict", text=verdict, action="stop")
            t.finish()

    def readings(self, type_: str) -> dict[int, dict[str, Any]]:
        """Per-lane ``baseline`` / ``verify`` readings of the session (codes, counts, margin); {} without one."""
        return self.tuner.view.readings(type_) if self.tuner is not None else {}

    def tune(self) -> dict[int, dict[str, int]]:
        t = self._need_tuner()
        if t.phase in ("aborted", "failed"):
            raise SessionError(f"session {self.session_id} was {t.phase} and its original codes restored: "
                               "confirm the link on step 3 to start a new session")
        prog = journal_progress(t.view)
        if prog.step == "baseline":  # nothing runs behind a screen that does not show it
            raise SessionError("the baseline is not measured yet: measure it on step 4 first")
        self.recommended = t.tune() or {}
        return self.recommended

    def verify(self) -> dict[int, dict[str, Any]]:
        t = self._need_tuner()
        prog = journal_progress(t.view)
        if prog.step in ("baseline", "tune"):  # verify would first run them, unseen, behind its screen
            raise SessionError(f"tuning is not finished ({prog.text()}): continue it on step 5 (t) first"
                               if prog.step == "tune" else "the baseline is not measured yet: step 4 first")
        self.verify_result = t.verify() or {}
        if t.phase not in ("aborted", "failed"):
            self.decisions = t.decide() or {}
        self._eye_cache.clear()
        self.model_eye = self.model_eye_text()
        for ln in self.lanes:  # computed here, in the worker thread, so the Verify screen only draws
            self.model_eye_for(ln)
        return self.verify_result

    def model_eye_for(self, lane: int, *, width: int = 56, height: int = 9) -> list[str]:
        """The model eye of ``lane``'s held codes (caption first; [] without a channel); cached per codes."""
        from eqtune.session.model import model_eye_lines

        if self.tuner is None:
            return []
        r = self.lane_results().get(lane)
        key = (repr(sorted(((r.final or r.recommended or r.original) if r else {}).items())),
               bool(r and r.tx_adaptive), width, height)
        if key not in self._eye_cache:
            lines = model_eye_lines(self.tuner.view, width=width, height=height, lane=lane)
            self._eye_cache[key] = lines
        lines = self._eye_cache[key]
        if lines:  # the cache is per codes: the caption names this lane
            import re

            lines = [re.sub(r"^model eye, lane \d+", f"model eye, lane {lane}", lines[0])] + lines[1:]
        return lines

    def model_eye_text(self, *, width: int = 56, height: int = 9) -> list[str]:
        """The model eye of the first lane's kept codes as text lines, caption first ([] without one)."""
        from eqtune.session.model import model_eye_lines

        return model_eye_lines(self._need_tuner().view, width=width, height=height) if self.tuner else []

    def pause(self) -> None:
        if self.tuner is not None:
            self.tuner.pause()

    def unpause(self) -> None:
        if self.tuner is not None:
            self.tuner.unpause()

    @property
    def paused(self) -> bool:
        return bool(self.tuner is not None and self.tuner.paused)

    def abort(self) -> None:
        """Stop after the current measurement; the tuner restores the original codes."""
        if self.tuner is not None:
            self.tuner.abort("aborted by the operator (TUI)")

    def lane_results(self) -> dict[int, Any]:
        return self.tuner.view.lane_results() if self.tuner is not None else {}

    @property
    def phase(self) -> str:
        return self.tuner.phase if self.tuner is not None else "new"

    # -- step 7: save & push -----------------------------------------------------------------
    def save_profile(self, out: str | os.PathLike[str] | None = None) -> Path:
        """Finish the session (if still open) and save its profile (default ``<session>/profile.json``)."""
        from eqtune.session.export import session_profile

        t = self._need_tuner()
        if t.phase not in ("done", "aborted", "failed"):
            t.finish()
        sid = self.session_id
        prof = session_profile(sid, self.sessions_dir)
        self.profile_path = Path(prof.save(Path(out) if out else self.sessions_dir / sid / "profile.json"))
        self._journal("profile", path=str(self.profile_path.resolve()), digest=prof.digest)
        return self.profile_path

    def _journal(self, type_: str, **fields: Any) -> None:
        """Append to the session journal, reopening it when the tuner has closed it."""
        from eqtune.session.journal import Journal

        j = self.tuner.journal if self.tuner is not None else None
        if j is not None and not j.closed:
            j.append(type_, **fields)
            return
        with Journal.open(self.session_id, self.sessions_dir) as reopened:
            reopened.append(type_, **fields)

    def push_notice(self) -> Any:
        """The traffic-down notice of pushing the profile to the connected module (one write); None when
        its writes keep traffic up. Reads only."""
        from eqtune.session.consent import traffic_down_notice

        if self.module is None:
            return None
        return traffic_down_notice(self.module, list(self.lanes), outages=1, what="the push")

    def push(self, extra_resources: list[str] | None = None, *, dry_run: bool = False,
             allow_traffic_down: bool = False) -> Any:
        """Push the saved profile to this module and any extra ones; per-module results.
        ``allow_traffic_down``: the operator accepted the outages the push dialog named."""
        from eqtune.session.push import push_profile

        if self.profile_path is None:
            raise InputError("no profile saved yet: press w to save the profile first")
        modules: list[Any] = [self.module] + [r.strip() for r in (extra_resources or []) if r.strip()]
        kw: dict[str, Any] = {"opener": self._opener} if self._opener else {}
        self.push_report = push_profile(str(self.profile_path), modules, dry_run=dry_run,
                                        allow_traffic_down=allow_traffic_down, **kw)
        self._journal("push", results=[r.to_dict() for r in self.push_report.results])
        return self.push_report

    # -- step 8: report ----------------------------------------------------------------------
    def write_report(self, out: str | os.PathLike[str] | None = None) -> Path:
        from eqtune.session.report import render_report
        from eqtune.session.view import load_session

        self._need_tuner()
        sid = self.session_id
        path = Path(out) if out else self.sessions_dir / sid / "report.html"
        html = render_report(load_session(sid, self.sessions_dir, action="write the report"), session_id=sid,
                             journal_path=self.sessions_dir / sid / "journal.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
        self._journal("report", path=str(path.resolve()))
        self.report_path = path
        return path

    # -- housekeeping ------------------------------------------------------------------------
    def _opener_kw(self, instrument_only: bool = False) -> dict[str, Any]:
        if self._opener is None or instrument_only:
            return {}
        return {"opener": self._opener}

    def _open(self, resource: str) -> CmisModule:
        if self._opener is not None:
            return self._opener(resource)
        from eqtune.drivers.cmis import open_module

        return open_module(resource)

    def _close_tuner(self) -> None:
        if self.tuner is not None:
            try:
                self.tuner.close()
            finally:
                self.tuner = None

    def _close_module(self) -> None:
        if self.module is not None:
            try:
                self.module.close()
            finally:
                self.module = None

    def close(self) -> None:
        """Close the session journal and the module (idempotent)."""
        self._close_tuner()
        self._close_module()
