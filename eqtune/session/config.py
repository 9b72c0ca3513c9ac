"""What a live tuning session is asked to do and what it tells its front end.

:class:`LiveConfig` (journaled in the ``session`` record, with its range checks), the journal record
types a live session writes (:data:`RECORD_TYPES`), the tuner's phases (:data:`PHASES`) and
:class:`LiveEvent`, the progress a front end receives (with its one-line terminal text). The tuner
itself is :class:`eqtune.session.live.LiveTuner`; the journal read-back is :mod:`eqtune.session.view`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from eqtune.errors import EqtuneError, InputError
from eqtune.session.journal import validate_session_id
from eqtune.textsafe import printable
from eqtune.validate import finite, integer

RECORD_TYPES: dict[str, str] = {
    "session": "first record: id, created, eqtune version, metadata (site, customer, link, operator, ...), "
               "config (LiveConfig with the resolved seed)",
    "recovered": "a torn last line (crash mid-write) was set aside on reopening",
    "resume": "the session was resumed: pid, measurements already done",
    "device": "role (module|instrument), resource, identity, capabilities",
    "original": "codes per lane read before the first write (the restore point) and the lanes whose Tx "
                "input adaptive EQ was on (tx_adaptive)",
    "plan": "knobs tuned, lane groups (lanes measured together), budget, metric, dwell, verify dwell, "
            "warm: per lane the codes measured first (warm start; resolved once, so a resume measures the same), "
            "screen {mode auto|off|given|legacy, dwell_s: the search's screen dwell (null: none), why: one line}, "
            "prior (with --prior-session): the earlier session used {session (null: auto found none), how, "
            "knobs, codes, margins, identity, reason}, the first lane group's prior mean",
    "apply": "a write about to happen (journaled before the I/O): phase, group, n, codes per lane, and "
             "tx_adaptive: the lanes whose Tx input adaptive EQ is switched back on after the codes (the "
             "restore point of lanes that ran it); during tuning only for the first evaluation of a run, later "
             "intents travel as 'next' in 'measure'",
    "baseline": "long-dwell measurement of the original codes: group, dwell_s, per-lane readings",
    "measure": "one completed evaluation: group, n (0-based, per group), wall_s, per-lane readings "
               "(codes, counts {bits, errors, ber, ber_upper95, dwell_s}, margin, metrics), per lane the "
               "optimizer's non-observation state (plain JSON: GP hyperparameter warm start, config), and "
               "'next' {n, codes}: the intent of the next write (journaled before it happens), 'rec': per "
               "lane the optimizer's recommendation after this evaluation {codes, held: evaluations it has "
               "held unchanged, counted after the initial design; the patience rule reads it}, 'stop_rule' "
               "(target|time|patience|settled|exhausted|budget) and 'stop' (its reason, one line): the rule "
               "that ended the group, in its last record; 'noise' {var, dof}: a scope's eye-height noise "
               "pooled from repeated codes over the session (none for BER counts); a sequential BER "
               "dwell's counts also carry 'looks' ([bits, errors] at each look), 'verdict' "
               "(worse|better|equal|null) and 'dwell_full_s'",
    "verify": "long-dwell measurement of the recommendation: group, per-lane readings",
    "decision": "per lane: action keep|restore, baseline and verified margins, codes to hold, reason, and "
                "for a lane that ran Tx input adaptive EQ before tuning tx_adaptive (true: adaptive EQ back on, "
                "the codes' tx_eq is only the dormant fixed code; false: the tuned fixed tx_eq stays)",
    "restore": "codes written back: reason (decision|abort|error), lanes, verified read-back; reason "
               "tx_adaptive: Tx input adaptive EQ switched back on for lanes, verified read-back",
    "consent": "before the first write on a module whose every apply takes the data path (traffic) down: "
               "choice tune|down-only|stop, how (--allow-traffic-down, operator), lanes to tune, the notice "
               "(trigger, lanes, expected outages, advertised MaxDurationDPInit s, lanes whose link was down)",
    "outage": "one write that takes the data path down, journaled just before it (the driver's notice): "
              "phase, lanes of the data path, message",
    "verdict": "the operator stopped after the baseline (the TUI's first look: every lane already met the "
               "target with margin): text, action stop",
    "abort": "the run stopped early: reason, error type",
    "end": "status done|aborted|failed and the per-lane summary",
    "profile": "a profile saved from this session: path, digest",
    "report": "an HTML report written: path",
    "push": "a profile pushed from this session (the TUI): per-module PushResult dicts",
}


#: full-dwell evaluations closing a screened lane group (its four best codes by posterior mean), unless
#: ``--remeasure`` says how many. Chosen on the library channel (emulated c2m-10in module, seed 0,
#: 8-channel BERT, screen = dwell / 8): with 2, one lane ended 0.24 dB off (its tx_eq 7 codes, 1.7e-12
#: against 6.6e-12, tie at the screen and none was among the two); with 4, every lane within 0.01 dB
SCREEN_CONTENDERS = 4

#: screening by default (``LiveConfig.screen == "auto"``, :func:`choose_screen`): a search measurement
#: dwells ``dwell / SCREEN_SHARE`` (a BER target 8x higher), chosen on the library channel (emulated
#: c2m-10in module, bench_live_sitetime ``screen`` vs ``sequential``); only where a full dwell is long
#: enough to be worth cutting (``SCREEN_MIN_DWELL_S``: below it the write and the gate's round trips
#: cost as much as the count), the BER target is one a screen can refute codes against
#: (``SCREEN_MAX_TARGET_BER``: at 1e-6 a full dwell is a fraction of a second) and the budget leaves a
#: search before the contenders' full dwells (``SCREEN_MIN_BUDGET``)
SCREEN_SHARE = 8.0
SCREEN_MIN_DWELL_S = 8.0
SCREEN_MAX_TARGET_BER = 1e-9
SCREEN_MIN_BUDGET = 8
#: ``LiveConfig.screen``: auto (:func:`choose_screen`), off (every search measurement may dwell the whole
#: ``--dwell``), given (``screen_dwell_s`` as asked), legacy (a journal from before screening was the
#: default: resumed as it ran, unscreened)
SCREEN_MODES = ("auto", "off", "given", "legacy")


def choose_screen(metric: str, dwell_s: float, target_ber: float | None, budget: int) -> tuple[float | None, str]:
    """(screen dwell in s or None, why) for a session that did not say: screen the search at
    ``dwell_s / SCREEN_SHARE`` when the metric counts bit errors (ber, q_db), the full dwell is at least
    ``SCREEN_MIN_DWELL_S``, the BER target (if given) is at most ``SCREEN_MAX_TARGET_BER`` and the budget is
    above ``SCREEN_MIN_BUDGET`` evaluations."""
    off = " (--screen-dwell S screens anyway)"
    if metric not in ("ber", "q_db"):
        return None, f"no screen: the metric {metric} counts no bit errors"
    if float(dwell_s) < SCREEN_MIN_DWELL_S:
        return None, f"no screen: the dwell {float(dwell_s):.3g} s is under {SCREEN_MIN_DWELL_S:g} s" + off
    if target_ber is not None and float(target_ber) > SCREEN_MAX_TARGET_BER:
        return None, f"no screen: the BER target {float(target_ber):g} is above {SCREEN_MAX_TARGET_BER:g}" + off
    if int(budget) <= SCREEN_MIN_BUDGET:
        return None, f"no screen: a budget of {int(budget)} leaves no search before the contenders" + off
    screen = float(dwell_s) / SCREEN_SHARE
    return screen, (f"screen by default: the search dwells {screen:.3g} s (the dwell / {SCREEN_SHARE:g}), the "
                    "contenders and the verify the full dwell (--no-screen: every measurement may take it)")

PHASES = ("new", "connected", "baseline", "tuning", "verify", "decided", "done", "aborted", "failed")


# ---------------------------------------------------------------------------------------------
# configuration and events
# ---------------------------------------------------------------------------------------------
@dataclass
class LiveConfig:
    """What to tune and how. Journaled in the ``session`` record (the seed resolved first)."""

    module: str
    lanes: list[int] = field(default_factory=list)  # empty = every lane of the module
    instrument: str | None = None  # None = the module's own PRBS checker (lanes in parallel)
    dwell_s: float = 1.0  # per evaluation
    verify_dwell_s: float | None = None  # baseline and verification; default 10 x dwell_s
    settle_s: float = 0.0  # extra wait after apply (apply_eq already waits for the data path)
    budget: int = 30  # evaluations per lane group
    seed: int | None = None
    knobs: list[str] | None = None  # default: every adjustable module knob
    metric: str = "ber"  # ber | q_db | eye_height
    target_ber: float | None = None  # informational (dwell is explicit)
    channel: str | None = None  # the library channel the link corresponds to, if any
    optimizer: str = "gp"
    optimizer_options: dict[str, Any] = field(default_factory=dict)  # e.g. {"ls_prior": 0.0} (--optimizer-option)
    min_gain: float = 0.0  # keep tuned codes only if verified margin > baseline + min_gain
    target_margin: float | None = None  # stop a lane group early once every lane reached this margin
    time_budget_s: float | None = None  # stop a lane group early after this much evaluation time
    patience: int | None = None  # stop a lane group once every lane's recommendation held for this many evaluations
    remeasure_top_k: int = 0  # the last k evaluations of a group re-measure its k best points (posterior mean)
    # codes measured first (warm start): "model" (the library channel's model optimum), or
    # {lane: codes} / {"*": codes} (e.g. a profile's lanes, a simulated tune's result)
    warm: str | dict[str, dict[str, int]] | None = None
    parallel: bool | None = None  # None: lanes together when the source reads them in parallel
    # an earlier session's measurements as the first lane group's prior (eqtune.session.prior): its id,
    # or "auto" (the last completed session on the same module part and host profile); None: no prior
    prior_session: str | None = None
    # dwell as a decision (eqtune.tune.dwell): a BER measurement ends at the first of ``dwell_looks``
    # geometric looks where its count decides against the lane's incumbent; False = every measurement
    # dwells ``dwell_s`` (the loop before it)
    sequential: bool = True
    dwell_looks: int = 6
    # screening (a higher BER target for the search): every search measurement dwells at most this
    # (s), its sequential looks inside it; the closing ``closing_evaluations`` (each lane's best codes by
    # posterior mean, the contenders) dwell the whole ``dwell_s``; an early stop rule moves the group to
    # them. None: every search measurement may take the whole ``dwell_s`` (the loop before it)
    screen_dwell_s: float | None = None
    # how the screen was chosen (SCREEN_MODES): "auto" resolves to choose_screen() when the session is
    # created (resolve_screen); ``screen_why`` is the one line that says what it chose and why
    screen: str = "auto"
    screen_why: str = ""
    settled_stop: bool = True  # stop a group once nothing can beat its incumbent (False: search on)
    # lanes measured together learn from each other (each lane's GP takes the other lanes' measurements
    # of its group as its prior mean once the group made an initial design; live_search._set_group_prior)
    group_transfer: bool = True
    metadata: dict[str, str] = field(default_factory=dict)  # site, customer, link, operator
    # the outages of a module whose every apply takes the data path down are accepted up front
    # (``--allow-traffic-down``, for non-interactive runs); without it the tuner asks, or refuses
    allow_traffic_down: bool = False

    @property
    def verify_dwell(self) -> float:
        return float(self.verify_dwell_s) if self.verify_dwell_s else 10.0 * float(self.dwell_s)

    @property
    def screening(self) -> bool:
        """Search measurements at the screen dwell (``screen_dwell_s``, BER metrics only)."""
        return self.screen_dwell_s is not None and self.metric in ("ber", "q_db")

    def resolve_screen(self) -> None:
        """Settle the screen before the session is journaled (after :meth:`check`, which refuses an
        unknown ``screen``): ``off`` drops any screen dwell, a screen dwell given explicitly is kept
        (``given``), ``auto`` takes :func:`choose_screen`. A resumed session keeps what its journal says
        (not called again)."""
        if self.screen == "off":
            self.screen_dwell_s = None
            self.screen_why = "no screen: turned off (--no-screen)"
        elif self.screen_dwell_s is not None:
            self.screen = "given"
            self.screen_why = f"screen as asked: the search dwells {float(self.screen_dwell_s):.3g} s (--screen-dwell)"
        elif self.screen == "auto":
            self.screen_dwell_s, self.screen_why = choose_screen(self.metric, self.dwell_s, self.target_ber,
                                                                 self.budget)

    @property
    def closing_evaluations(self) -> int:
        """The last evaluations of a lane group, each lane's k-th best code by posterior mean:
        ``remeasure_top_k``, or ``SCREEN_CONTENDERS`` full dwells when screening and none was asked."""
        k = int(self.remeasure_top_k)
        return k if k > 0 or not self.screening else min(SCREEN_CONTENDERS, int(self.budget) - 1)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d.get("prior_session") is None:  # not given: the header stays as sessions before it wrote it
            d.pop("prior_session", None)
        if not d.get("allow_traffic_down"):
            d.pop("allow_traffic_down", None)
        if d.get("screen_dwell_s") is None:
            d.pop("screen_dwell_s", None)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LiveConfig:
        """The config saved in a journal header (unknown keys ignored). A header whose config is not a
        mapping, or lacks the module, is refused in one line (a damaged or hand-edited journal)."""
        if not isinstance(d, Mapping):
            raise InputError(f"the session's config is {type(d).__name__}, not a mapping: the journal header "
                             "is damaged; start a new session (eqtune live ...)")
        if "module" not in d:
            raise InputError("the session's config names no module: the journal header is damaged; "
                             "start a new session (eqtune live ...)")
        names = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in d.items() if k in names}
        kw.setdefault("group_transfer", False)  # a session saved before it: resumed as it ran
        if "screen" not in kw:  # saved before screening was the default: resumed as it ran
            given = kw.get("screen_dwell_s") is not None
            kw["screen"] = "given" if given else "legacy"
            kw["screen_why"] = ("screen as journaled (--screen-dwell)" if given else
                                "no screen: the session started before screening was the default, so it "
                                "resumes unscreened as it ran")
        return cls(**kw)

    def check(self) -> None:
        # types and finiteness first: a journal edited by hand or a caller's NaN must not pass a
        # `> 0` test (NaN compares false) nor reach a loop bound
        if not isinstance(self.module, str) or not self.module:
            raise InputError(f"module resource must be a non-empty text (got {self.module!r})")
        integer(self.budget, "--budget (evaluations)", ge=1)
        finite(self.dwell_s, "--dwell (s)", gt=0.0)
        if self.verify_dwell_s is not None:
            finite(self.verify_dwell_s, "--verify-dwell (s)", gt=0.0)
        finite(self.settle_s, "--settle (s)", ge=0.0)
        finite(self.min_gain, "min_gain", ge=0.0)
        integer(self.dwell_looks, "dwell looks", ge=1)
        if self.screen_dwell_s is not None:
            finite(self.screen_dwell_s, "--screen-dwell (s)", gt=0.0)
            if float(self.screen_dwell_s) >= float(self.dwell_s):
                raise InputError(f"--screen-dwell {self.screen_dwell_s:g} s is not shorter than --dwell "
                                 f"{self.dwell_s:g} s: give a shorter screen (e.g. --dwell / 8) or leave it out")
            if self.metric not in ("ber", "q_db"):
                raise InputError(f"--screen-dwell screens BER counts; metric {self.metric} has none: leave it out")
        if self.screen not in SCREEN_MODES:
            raise InputError(f"screen {self.screen!r}: use auto, off or a screen dwell in seconds")
        if self.target_ber is not None:
            finite(self.target_ber, "--target-ber", gt=0.0, le=0.5)
        if self.target_margin is not None:
            finite(self.target_margin, "--target")
        if self.time_budget_s is not None:
            finite(self.time_budget_s, "--time-budget (s)", gt=0.0)
        if self.seed is not None:
            integer(self.seed, "--seed")
        integer(self.remeasure_top_k, "--remeasure", ge=0)
        if not isinstance(self.lanes, list):
            raise InputError(f"lanes must be a list of lane numbers 1..8 (got {self.lanes!r})")
        for ln in self.lanes:
            integer(ln, "--lane", ge=1, le=8)
        if self.knobs is not None and not (isinstance(self.knobs, list) and all(isinstance(k, str) for k in self.knobs)):
            raise InputError(f"knobs must be a list of knob names (got {self.knobs!r})")
        if self.knobs:
            # refused before a journal is created or the module opened (its limits are checked at connect)
            from eqtune.tune.live import check_module_knob_names

            check_module_knob_names(self.knobs)
        if not isinstance(self.optimizer_options, dict) or not isinstance(self.metadata, dict):
            raise InputError("optimizer_options and metadata must be tables")
        if self.optimizer_options:  # a TuneError (an InputError) naming the unknown ones
            from eqtune.tune.base import check_optimizer_option_names

            check_optimizer_option_names(self.optimizer, list(self.optimizer_options), "optimizer option")
        if self.patience is not None and int(self.patience) < 1:
            raise InputError(f"--patience must be >= 1 evaluation (got {self.patience})")
        if isinstance(self.warm, str) and self.warm != "model":
            raise InputError(f"--warm {self.warm!r}: use 'model' or a profile / tune --json file")
        if self.prior_session is not None:
            if not isinstance(self.prior_session, str) or not self.prior_session:
                raise InputError(f"--prior-session {self.prior_session!r}: give a session id or 'auto'")
            if self.prior_session != "auto":
                try:
                    validate_session_id(self.prior_session)
                except EqtuneError as exc:
                    raise InputError(f"--prior-session: {exc}") from None
        if self.warm == "model" and not self.channel:
            raise InputError("--warm model needs the library channel the link corresponds to (the CHANNEL "
                             "argument, e.g. c2m-10in)")
        if not 0 <= int(self.remeasure_top_k) < self.budget:
            raise InputError(f"--remeasure {self.remeasure_top_k}: re-measure between 0 and budget - 1 "
                             f"({self.budget - 1}) of the best points")
        for ln in self.lanes:
            if not 1 <= int(ln) <= 8:
                raise InputError(f"--lane {ln}: CMIS lanes are numbered 1..8")


@dataclass
class LiveEvent:
    """Progress for a front end. ``kind`` is one of: phase, device, plan (before the first write: knobs,
    space size, search mode, expected time), baseline, evaluation, stop (a lane group's stop rule: group,
    lanes, evaluations, budget, rule, reason), verify, decision, restore, paused,
    resumed, aborted, error, done, log. ``data`` is JSON-able."""

    kind: str
    data: dict[str, Any]
    session: str = ""
    t: float = field(default_factory=time.time)

    def text(self) -> str:
        """One line for a terminal (device text such as vendor or SN with control characters escaped)."""
        return printable(self._text())

    def _text(self) -> str:
        d = self.data
        k = self.kind
        if k == "phase":
            return f"[{self.session}] {d.get('phase')}: {d.get('text', '')}".rstrip(": ")
        if k == "device":
            i = d.get("identity", {})
            return f"  {d.get('role')} {d.get('resource')}: {i.get('vendor', '')} {i.get('pn', '')} " \
                   f"SN {i.get('sn', '')} fw {i.get('firmware', '')}".rstrip()
        if k == "baseline":
            return f"  baseline lane {d['lane']}: margin {d['margin']:.3f} ({_fmt_codes(d['codes'])})"
        if k == "evaluation":
            return (f"  eval {d['n'] + 1}/{d['budget']} lane {d['lane']}: {d['margin']:.3f} "
                    f"({_fmt_codes(d['codes'])}) best {d['best_margin']:.3f}")
        if k == "verify":
            return f"  verify lane {d['lane']}: margin {d['margin']:.3f} ({_fmt_codes(d['codes'])})"
        if k == "decision":
            return f"  lane {d['lane']}: {d['action']} - {d['reason']}"
        if k == "plan":
            return f"  {d.get('text', '')}"
        if k == "stop":
            lanes = ",".join(str(x) for x in d.get("lanes") or [])
            return (f"  stop lanes {lanes} after {d.get('evaluations')}/{d.get('budget')} evaluations "
                    f"({d.get('rule')}): {d.get('reason', '')}")
        if k in ("restore", "aborted", "error", "log", "paused", "resumed", "done"):
            return f"  {k}: {d.get('text', '')}"
        return ""


def _fmt_codes(codes: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(codes.items()))
