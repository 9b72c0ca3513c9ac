"""Push a tuning profile to one or many modules, safely.

Per module (:func:`push_to_module`)::

    profile schema + digest (already checked by Profile.load)  -> refused before opening anything
    open -> identity (vendor, PN, pinned SN)  -> refuse a mismatch unless force_identity
    capabilities -> every code of every lane checked (validate_eq: no I/O)
    record the current codes of every profile lane and which of the lanes whose tx_eq the profile
    sets run Tx input adaptive EQ (the restore point: a fixed tx_eq switches adaptive EQ off)
    [dry run stops here]
    write + apply + read back (CmisModule.apply_eq, which restores on its own failures)
    independent read back of page 11h: equal to the profile -> "applied"
    otherwise restore the recorded codes (apply_eq) and switch adaptive EQ back on where it was
    (CmisModule.enable_tx_adaptive), read back again:
        equal to the recorded state -> "restored", else "unknown" (the message says what to do)

Many modules (:func:`push_profile`): one result per module, failures do not stop the others, and
the :class:`PushReport` ends with which modules now hold which codes.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eqtune.errors import EqRangeError, EqtuneError, ModuleError, ProfileError
from eqtune.serdes.knobs import TX_EQ
from eqtune.session.profile import Profile

if TYPE_CHECKING:
    from eqtune.drivers.protocols import CmisModule

# statuses
APPLIED = "applied"  # the module holds the profile's codes, read back and verified
UNCHANGED = "unchanged"  # the module already held the profile's codes; nothing written
DRY_RUN = "dry-run"  # checks passed, nothing written
REFUSED = "refused"  # identity/capability/open failure before any write; module untouched
RESTORED = "restored"  # the write failed or read back wrong; previous codes restored and verified
UNKNOWN = "unknown"  # the write failed and the restore could not be verified: check the module

OK_STATUSES = (APPLIED, UNCHANGED, DRY_RUN)

#: CMIS control sets are volatile (CMIS 5.2 section 6.3.2): the codes a push writes are gone after a
#: module reset, re-insertion, power cycle or switch reboot, unless the network OS re-applies them
VOLATILE_NOTE = ("module codes are volatile: a module reset, re-insertion, power cycle or switch reboot "
                 "restores the module's defaults; to keep them, export the profile to the NOS, which "
                 "re-applies it at every module init (`eqtune profile export PROFILE --format "
                 "sonic-optics-si|fboss ...`)")

RESTORE_TIME_LIMIT_S = 10.0  # keep trying to restore for this long (a module resetting NACKs for ~1-2 s)
RESTORE_BACKOFF_S = 0.02  # first wait between attempts; doubles per attempt
RESTORE_BACKOFF_MAX_S = 1.0


@dataclass
class PushResult:
    resource: str
    status: str
    message: str = ""
    identity: dict[str, Any] = field(default_factory=dict)
    previous: dict[int, dict[str, int]] = field(default_factory=dict)  # codes before the push
    now: dict[int, dict[str, int]] | None = None  # codes read back at the end (None = unknown)
    writes: int = 0  # apply_eq/enable_tx_adaptive calls made (0 for refused/dry-run/unchanged)
    elapsed_s: float = 0.0
    adaptive_before: list[int] = field(default_factory=list)  # lanes given a fixed tx_eq that ran adaptive EQ
    # the restore point: every lane's active codes and Tx adaptive EQ state before the first write (a
    # module reset mid-push loses lanes and knobs the profile does not set, so all of them are kept)
    snapshot: dict[int, dict[str, int]] = field(default_factory=dict)
    snapshot_adaptive: dict[int, bool] = field(default_factory=dict)
    # the writes that took the data path (traffic) down, as the driver announced them just before each
    outages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource, "status": self.status, "ok": self.ok, "message": self.message,
            "identity": self.identity,
            "previous": {str(k): v for k, v in self.previous.items()},
            "now": None if self.now is None else {str(k): v for k, v in self.now.items()},
            "adaptive_before": list(self.adaptive_before),
            "writes": self.writes, "elapsed_s": round(self.elapsed_s, 4),
            "outages": [dict(o) for o in self.outages],
        }

    def line(self) -> str:
        sn = self.identity.get("sn", "")
        who = f"{self.resource}" + (f" (SN {sn})" if sn else "")
        from eqtune.textsafe import printable

        return printable(f"{who}: {self.status}" + (f" - {self.message}" if self.message else ""))


@dataclass
class PushReport:
    profile_digest: str
    results: list[PushResult]
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def summary_lines(self, profile: Profile | None = None) -> list[str]:
        """The closing summary: which modules hold which codes now."""
        lines = []
        holding = [r for r in self.results if r.status in (APPLIED, UNCHANGED)]
        previous = [r for r in self.results if r.status in (REFUSED, RESTORED, DRY_RUN)]
        unknown = [r for r in self.results if r.status == UNKNOWN]
        tag = f"profile {self.profile_digest[:12]}"
        if profile is not None:
            tag += f" ({_fmt(profile.codes())})"
        lines.append(f"{len(holding)} of {len(self.results)} module(s) hold the {tag} codes"
                     + (": " + ", ".join(r.resource for r in holding) if holding else ""))
        if previous:
            lines.append(f"{len(previous)} module(s) keep their previous codes: "
                         + ", ".join(f"{r.resource} ({r.status}"
                                     + (f": {_fmt(r.now)}" if r.now and len(previous) <= 8 else "") + ")"
                                     for r in previous))
        if unknown:
            lines.append(f"{len(unknown)} module(s) in an UNKNOWN state - check them with "
                         "`eqtune module show`: " + ", ".join(r.resource for r in unknown))
        if any(r.status == APPLIED for r in self.results):
            lines.append(VOLATILE_NOTE)
        from eqtune.textsafe import printable

        return [printable(ln) for ln in lines]

    def to_dict(self) -> dict[str, Any]:
        return {"profile_digest": self.profile_digest, "dry_run": self.dry_run, "ok": self.ok,
                "counts": self.counts(), "results": [r.to_dict() for r in self.results]}


def _ident_dict(identity: Any) -> dict[str, Any]:
    import dataclasses

    if dataclasses.is_dataclass(identity) and not isinstance(identity, type):
        return dataclasses.asdict(identity)
    if isinstance(identity, dict):
        return dict(identity)
    return dict(vars(identity))


def _read_codes(module: CmisModule, lanes: Iterable[int], knobs: Mapping[int, Sequence[str]]) -> dict[int, dict[str, int]]:
    out = {}
    for lane in lanes:
        active = module.active_eq(lane)
        out[lane] = {k: int(active[k]) for k in knobs[lane] if k in active}
    return out


def _adaptive_on(module: CmisModule, target: dict[int, dict[str, int]]) -> list[int]:
    """Lanes whose tx_eq ``target`` sets and whose Tx input adaptive EQ is on (writing a fixed tx_eq
    switches it off), where the driver can tell."""
    fn = getattr(module, "tx_adaptive_enabled", None)
    if not callable(fn):
        return []
    on = fn()
    return sorted(ln for ln, c in target.items() if TX_EQ in c and on.get(ln))


def _adaptive_holds(module: CmisModule, lanes: Sequence[int]) -> bool:
    if not lanes:
        return True
    on = module.tx_adaptive_enabled()
    return all(on.get(ln) for ln in lanes)


def check_capabilities(profile: Profile, module: CmisModule) -> None:
    """Every profile lane and code within what the module advertises (no I/O beyond page 01h)."""
    caps = module.capabilities()
    allowed = caps.knob_values()
    for lane, codes in profile.codes().items():
        if lane < 1 or lane > int(caps.lanes):
            raise EqRangeError(f"the profile sets lane {lane} but the module has {caps.lanes} lanes; "
                               "use a profile for this module type")
        for name, code in codes.items():
            vals = allowed.get(name)
            if not vals:
                raise EqRangeError(f"the profile sets {name} on lane {lane} but the module does not "
                                   f"support {name}; use a profile made for this module type")
            if int(code) not in vals:
                raise EqRangeError(f"lane {lane} {name}={code} is outside the module's capabilities "
                                   f"(allowed {min(vals)}..{max(vals)}); the profile does not fit this module")
    module.validate_eq(profile.codes())


def push_to_module(
    profile: Profile,
    module: CmisModule,
    *,
    resource: str | None = None,
    dry_run: bool = False,
    force_identity: bool = False,
    restore_time_s: float = RESTORE_TIME_LIMIT_S,
    allow_traffic_down: bool = False,
) -> PushResult:
    """Push to one open ``CmisModule``; never raises for device faults (they become the status).

    On a module whose Apply takes the data path (traffic) down the push is refused, nothing written,
    unless ``allow_traffic_down`` (the operator's consent: ``--allow-traffic-down``, the TUI's dialog);
    every outage is then listed in ``outages``."""
    t0 = time.perf_counter()
    res = PushResult(resource or getattr(module, "resource", "?"), REFUSED)
    target = profile.codes()
    knobs = {lane: tuple(codes) for lane, codes in target.items()}
    try:
        ident = _ident_dict(module.identity())
        res.identity = ident
        mism = profile.identity_mismatches(ident)
        notes = []
        if mism:
            if not force_identity:
                res.message = ("wrong module: " + "; ".join(mism)
                               + " - nothing written (use --force-identity only if you are sure)")
                return _done(res, t0)
            notes.append("identity forced: " + "; ".join(mism))
        fw = profile.firmware_note(ident)
        if fw:
            notes.append(fw)
        check_capabilities(profile, module)
        # the restore point, read until two reads agree (a corrupted read must not become the state
        # a failed push "restores"); the profile lanes' previous codes are taken from it
        res.snapshot, res.snapshot_adaptive = _read_all_stable(module)
        res.previous = {ln: {k: res.snapshot[ln][k] for k in knobs[ln] if k in res.snapshot.get(ln, {})}
                        for ln in target}
        res.adaptive_before = sorted(ln for ln, c in target.items()
                                     if TX_EQ in c and res.snapshot_adaptive.get(ln))
    except EqtuneError as exc:
        res.message = f"{exc} - nothing written"
        return _done(res, t0)
    except Exception as exc:  # a driver bug must not stop a 64-module push
        res.message = f"unexpected error before writing ({type(exc).__name__}: {exc}) - nothing written"
        return _done(res, t0)

    adaptive_note = (f"Tx input adaptive EQ off on lane(s) {','.join(map(str, res.adaptive_before))} "
                     "(the profile sets a fixed tx_eq)") if res.adaptive_before else ""
    # the profile's Tx input EQ mode: lanes it wants on adaptive EQ that are not (a module left at a fixed
    # tx_eq with adaptive off does not "hold the profile")
    want_on = sorted(ln for ln, on in profile.tx_adaptive.items() if on)
    switch_on = [ln for ln in want_on if not res.snapshot_adaptive.get(ln)]
    if switch_on and not callable(getattr(module, "enable_tx_adaptive", None)):
        res.message = (f"the profile wants Tx input adaptive EQ on lane(s) {','.join(map(str, switch_on))} and "
                       "this module cannot switch it on - nothing written")
        return _done(res, t0)
    on_note = (f"Tx input adaptive EQ switched on, lane(s) {','.join(map(str, switch_on))} (the profile's mode)"
               if switch_on else "")
    if res.previous == target and not res.adaptive_before and not switch_on:
        res.status, res.now = UNCHANGED, dict(res.previous)
        res.message = "; ".join([*notes, "already holds the profile codes; nothing written"])
        return _done(res, t0)
    from eqtune.session.consent import FLAG, OutageLog, traffic_down_notice

    notice = traffic_down_notice(module, sorted(target), outages=1, what="the push")
    down_note = (f"TRAFFIC GOES DOWN: the write re-initializes the data path of lane(s) "
                 f"{','.join(map(str, notice.lanes))} ({notice.trigger}, {notice.length_text()})") if notice else ""
    if dry_run:
        res.status, res.now = DRY_RUN, dict(res.previous)
        res.message = "; ".join([*notes, "checks passed; would write " + _diff(res.previous, target)
                                 + (f" and switch {adaptive_note}" if adaptive_note else "")]
                                + ([f"would switch Tx input adaptive EQ on, lane(s) {','.join(map(str, switch_on))}"]
                                   if switch_on else [])
                                + ([down_note] if down_note else []))
        return _done(res, t0)
    if notice is not None and not allow_traffic_down:
        res.message = f"{down_note}; nothing written: push with {FLAG} in a maintenance window"
        return _done(res, t0)
    outages = OutageLog(module).install()

    # -- write, apply, read back ---------------------------------------------------------------
    failure = ""
    try:
        res.writes += 1
        module.apply_eq(target)
        if switch_on:
            res.writes += 1
            module.enable_tx_adaptive(switch_on)  # type: ignore[attr-defined]
        back = _read_codes(module, target, knobs)
        if switch_on and not _adaptive_holds(module, want_on):
            failure = f"Tx input adaptive EQ reads back off on lane(s) {','.join(map(str, want_on))}"
        elif back == target:
            res.status, res.now = APPLIED, back
            res.outages = [{k: v for k, v in o.items() if k != "phase"} for o in outages.entries]
            res.message = "; ".join([*notes, "written, applied and read back: " + _diff(res.previous, target)]
                                    + ([adaptive_note] if adaptive_note else [])
                                    + ([on_note] if on_note else [])
                                    + ([f"{len(res.outages)} traffic outage(s) on lane(s) "
                                        + ",".join(str(ln) for ln in sorted({ln for o in res.outages
                                                                            for ln in o['lanes']}))]
                                       if res.outages else []))
            outages.uninstall()
            return _done(res, t0)
        else:
            failure = f"read back {_fmt(back)} instead of {_fmt(target)}"
    except EqtuneError as exc:
        failure = str(exc)
    except Exception as exc:
        failure = f"unexpected error while writing ({type(exc).__name__}: {exc})"

    # -- restore -------------------------------------------------------------------------------
    res.status, res.now, left = _restore(module, res, knobs, restore_time_s)
    res.outages = [{k: v for k, v in o.items() if k != "phase"} for o in outages.entries]
    outages.uninstall()
    if res.status == RESTORED:
        res.message = f"push failed ({failure}); previous codes restored and verified" + (
            f" (Tx input adaptive EQ back on lane(s) {','.join(map(str, res.adaptive_before))})"
            if res.adaptive_before else "")
    else:
        res.message = (f"push failed ({failure}) and the restore could not be verified within "
                       f"{restore_time_s:g} s: {left}; re-run the push or set the codes with `eqtune module set` "
                       f"(previous: {_fmt(res.previous)}"
                       + (f", Tx input adaptive EQ on lane(s) {','.join(map(str, res.adaptive_before))}"
                          if res.adaptive_before else "") + ")")
    return _done(res, t0)


@dataclass
class _RestoreState:
    """What the last restore attempt read back (None: could not be read)."""

    codes: dict[int, dict[str, int]] | None = None
    adaptive: dict[int, bool] | None = None
    error: str = ""


def _read_all(module: CmisModule) -> tuple[dict[int, dict[str, int]], dict[int, bool]]:
    """Every lane's active codes and Tx input adaptive EQ state (empty when the driver cannot tell)."""
    fn = getattr(module, "active_eq_all", None)
    if callable(fn):
        codes = {int(ln): {k: int(v) for k, v in c.items()} for ln, c in fn().items()}
    else:
        n = int(module.capabilities().lanes)
        codes = {ln: {k: int(v) for k, v in module.active_eq(ln).items()} for ln in range(1, n + 1)}
    ad = getattr(module, "tx_adaptive_enabled", None)
    adaptive = {int(ln): bool(v) for ln, v in ad().items()} if callable(ad) else {}
    return codes, adaptive


def _read_all_stable(module: CmisModule, attempts: int = 4) -> tuple[dict[int, dict[str, int]], dict[int, bool]]:
    """:func:`_read_all` until two consecutive reads agree; ModuleError when they never do."""
    prev = _read_all(module)
    for _ in range(attempts):
        cur = _read_all(module)
        if cur == prev:
            return cur
        prev = cur
    raise ModuleError(f"{getattr(module, 'resource', 'module')}: the active codes read differently on every "
                      "attempt (corrupted reads); check the cable/adapter and retry")


def _restore(module: CmisModule, res: PushResult, knobs: Mapping[int, Sequence[str]],
             time_limit_s: float = RESTORE_TIME_LIMIT_S,
             sleep: Callable[[float], None] = time.sleep) -> tuple[str, dict[int, dict[str, int]] | None, str]:
    """Make the module hold its state from before the push again (``res.snapshot``: the codes of every
    lane, Tx input adaptive EQ on or off per lane) and verify by reading it all back.

    Codes and adaptive EQ are restored as separate steps, so a failure writing one does not skip the
    other; attempts repeat with exponential backoff until ``time_limit_s`` (writing the same state
    again is idempotent). Every lane is compared, not only the profile's: a module that reset in the
    middle of the push has lost the codes of lanes the profile does not set as well.
    Returns (status, the profile lanes' codes read back, what is left as text)."""
    deadline = time.monotonic() + time_limit_s
    st = _RestoreState()
    for attempt in itertools.count():
        if attempt:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sleep(min(RESTORE_BACKOFF_S * 2 ** (attempt - 1), RESTORE_BACKOFF_MAX_S, left))
        st = _read_state(module)
        if _restored(res, st):
            return RESTORED, _profile_view(st.codes, knobs), ""
        err = _restore_step(module, res, st)
        st2 = _read_state(module)
        st = _RestoreState(st2.codes, st2.adaptive, st2.error or err)
        if _restored(res, st):
            return RESTORED, _profile_view(st.codes, knobs), ""
    return UNKNOWN, _profile_view(st.codes, knobs) if st.codes is not None else None, _left_text(res, st)


def _restore_step(module: CmisModule, res: PushResult, st: _RestoreState) -> str:
    """One attempt: write back the codes of lanes that differ, then the adaptive EQ state."""
    err = ""
    if st.codes is None or any(st.codes.get(ln) != c for ln, c in res.snapshot.items()):
        # only the knobs that differ: writing an unchanged tx_eq would switch adaptive EQ off needlessly
        now_codes = st.codes or {}
        changed = {ln: {k: v for k, v in c.items() if st.codes is None or now_codes.get(ln, {}).get(k) != v}
                   for ln, c in res.snapshot.items()}
        try:
            res.writes += 1
            module.apply_eq({ln: c for ln, c in changed.items() if c})
        except Exception as exc:  # noqa: BLE001 - reported if it never succeeds
            err = _short(exc)
    now = None
    if res.snapshot_adaptive:
        try:
            now = module.tx_adaptive_enabled()
        except Exception as exc:  # noqa: BLE001
            err = err or _short(exc)
    if now is not None:
        on = [ln for ln, want in res.snapshot_adaptive.items() if want and not now.get(ln)]
        off = [ln for ln, want in res.snapshot_adaptive.items() if not want and now.get(ln)]
        for lanes, want in ((on, True), (off, False)):
            if not lanes:
                continue
            try:
                res.writes += 1
                if want:
                    module.enable_tx_adaptive(lanes)
                elif callable(getattr(module, "set_tx_adaptive", None)):
                    module.set_tx_adaptive(lanes, False)
                else:  # writing the fixed tx_eq code selects the fixed equalizer
                    module.apply_eq({ln: {TX_EQ: res.snapshot[ln][TX_EQ]} for ln in lanes})
            except Exception as exc:  # noqa: BLE001
                err = err or _short(exc)
    return err


def _restored(res: PushResult, st: _RestoreState) -> bool:
    return (st.codes is not None and all(st.codes.get(ln) == c for ln, c in res.snapshot.items())
            and st.adaptive is not None
            and all(st.adaptive.get(ln) == want for ln, want in res.snapshot_adaptive.items()))


def _profile_view(codes: dict[int, dict[str, int]] | None, knobs: Mapping[int, Sequence[str]]) -> dict[int, dict[str, int]] | None:
    if codes is None:
        return None
    return {ln: {k: codes.get(ln, {})[k] for k in ks if k in codes.get(ln, {})} for ln, ks in knobs.items()}


def _read_state(module: CmisModule) -> _RestoreState:
    st = _RestoreState()
    try:
        st.codes, st.adaptive = _read_all_stable(module, attempts=2)
    except Exception as exc:  # noqa: BLE001
        st.error = _short(exc)
    return st


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _left_text(res: PushResult, st: _RestoreState) -> str:
    """Exactly what differs from the state before the push (or could not be read)."""
    parts = []
    if st.codes is None:
        parts.append("the codes could not be read back")
    else:
        for ln in sorted(res.snapshot):
            was, now = res.snapshot[ln], st.codes.get(ln, {})
            diff = [f"{k}={now.get(k, '?')} (was {v})" for k, v in sorted(was.items()) if now.get(k) != v]
            if diff:
                parts.append(f"lane {ln} " + ",".join(diff))
    if res.snapshot_adaptive:
        if st.adaptive is None:
            parts.append("the Tx input adaptive EQ state could not be read back")
        else:
            off = [ln for ln, want in sorted(res.snapshot_adaptive.items()) if want and not st.adaptive.get(ln)]
            on = [ln for ln, want in sorted(res.snapshot_adaptive.items()) if not want and st.adaptive.get(ln)]
            if off:
                parts.append(f"Tx input adaptive EQ still off on lane(s) {','.join(map(str, off))} (was on)")
            if on:
                parts.append(f"Tx input adaptive EQ on on lane(s) {','.join(map(str, on))} (was off)")
    if st.error:
        parts.append(f"last error: {st.error}")
    return "; ".join(parts) or "read-back differs"


def _done(res: PushResult, t0: float) -> PushResult:
    res.elapsed_s = time.perf_counter() - t0
    return res


def _fmt(codes: dict[int, dict[str, int]]) -> str:
    return "; ".join(f"lane {ln} " + ",".join(f"{k}={v}" for k, v in sorted(c.items()))
                     for ln, c in sorted(codes.items()))


def _diff(old: dict[int, dict[str, int]], new: dict[int, dict[str, int]]) -> str:
    """Changes per lane; lanes with identical changes are grouped ("lanes 1-8 tx_eq 3->6")."""
    groups: dict[str, list[int]] = {}
    for lane in sorted(new):
        ch = ",".join(f"{k} {old.get(lane, {}).get(k, '?')}->{v}" for k, v in sorted(new[lane].items())
                      if old.get(lane, {}).get(k) != v)
        if ch:
            groups.setdefault(ch, []).append(lane)
    parts = []
    for ch, lanes in groups.items():
        contiguous = len(lanes) > 2 and lanes == list(range(lanes[0], lanes[-1] + 1))
        names = f"{lanes[0]}-{lanes[-1]}" if contiguous else ",".join(map(str, lanes))
        parts.append(f"lane{'s' if len(lanes) > 1 else ''} {names} {ch}")
    return "; ".join(parts) or "no change"


def push_profile(
    profile: Profile | str,
    modules: Sequence[str | CmisModule],
    *,
    dry_run: bool = False,
    force_identity: bool = False,
    opener: Callable[[str], CmisModule] | None = None,
    on_result: Callable[[PushResult], None] | None = None,
    jobs: int = 1,
    restore_time_s: float = RESTORE_TIME_LIMIT_S,
    trusted_keys: list[Any] | None = None,
    allow_traffic_down: bool = False,
) -> PushReport:
    """Push a profile (or a profile path) to every module (resource strings or open modules).

    ``jobs > 1`` pushes to that many modules at once (threads; use it only when the modules sit on
    separate buses/adapters, as with emulators or one adapter per cage). Results keep input order.
    ``on_result`` is called once per module as soon as it is done (from the worker thread).
    """
    if not isinstance(profile, Profile):
        profile = Profile.load(profile)  # schema + digest: refused before any module is opened
    if trusted_keys is not None:  # --require-signed: a signature by one of these keys, before any I/O
        profile.verify_signature(list(trusted_keys))
    if not modules:
        raise ProfileError("no modules to push to: give at least one --module RESOURCE")
    if opener is None:
        def opener(resource: str) -> CmisModule:
            from eqtune.drivers.cmis import open_module

            return open_module(resource)

    def one(item: str | CmisModule) -> PushResult:
        if isinstance(item, str):
            t0 = time.perf_counter()
            mod = None
            try:
                mod = opener(item)
            except EqtuneError as exc:
                r = _done(PushResult(item, REFUSED, f"cannot open: {exc} - nothing written"), t0)
            except Exception as exc:
                r = _done(PushResult(item, REFUSED, f"cannot open ({type(exc).__name__}: {exc}) "
                                                    "- nothing written"), t0)
            if mod is not None:
                try:
                    r = push_to_module(profile, mod, resource=item, dry_run=dry_run, force_identity=force_identity,
                                       restore_time_s=restore_time_s, allow_traffic_down=allow_traffic_down)
                finally:
                    try:
                        mod.close()
                    except Exception:
                        pass
        else:
            r = push_to_module(profile, item, dry_run=dry_run, force_identity=force_identity,
                               restore_time_s=restore_time_s, allow_traffic_down=allow_traffic_down)
        if on_result is not None:
            on_result(r)
        return r

    if jobs > 1 and len(modules) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(jobs, len(modules))) as ex:
            results = list(ex.map(one, modules))
    else:
        results = [one(m) for m in modules]
    return PushReport(profile.digest, results, dry_run=dry_run)
