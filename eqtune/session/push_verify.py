"""What ``profile verify`` finds, given the report of an earlier push: a module that holds the profile,
one that was reset since a verified push ("reverted after reset"), one that never had it ("never
applied"), or one another writer changed.

CMIS control sets are volatile (CMIS 5.2 section 6.3.2): after a reset the module runs its power-up
defaults. A push report (``profile push --json`` / ``--report``) records, per module, the codes before
the push (``previous``) and the module's identity; a module that now holds exactly those codes after a
verified push was reset, re-inserted or power-cycled. A module whose codes before the push were not its
defaults reads as "changed since the push" after a reset: CMIS offers no read of the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eqtune.drivers.protocols import CmisModule
from eqtune.errors import EqRangeError, EqtuneError, ModuleError, ProfileError
from eqtune.session.profile import Profile
from eqtune.session.push import (
    APPLIED,
    UNCHANGED,
    VOLATILE_NOTE,
    _adaptive_on,
    _diff,
    _ident_dict,
    _read_codes,
    check_capabilities,
)

HOLDS = "holds the profile"
REVERTED = "reverted after reset"  # a verified push, and now the codes from before it (the defaults)
NEVER_APPLIED = "never applied"  # no verified push of this profile to this module on record
CHANGED = "changed since the push"  # a verified push, now neither the profile nor the codes before it
NO_RECORD = "differs"  # no push report given: reverted and never applied cannot be told apart
def verify_against_push(verdict: dict[str, Any], report: Mapping[str, Any] | None, digest: str) -> tuple[str, str]:
    """What a ``verify_module`` result means given an earlier push report (``profile push --json``):
    (state, explanation). A module that holds exactly the codes it had before a verified push of this
    profile was reset (its control sets went back to the defaults); one with no verified push of this
    profile on record never had it."""
    if verdict["holds_profile"]:
        return HOLDS, "the module holds the profile's codes"
    if report is None:
        return NO_RECORD, ("the module does not hold the profile's codes; give --push-report (the "
                           "`profile push --json` output) to tell a reset from a push that never happened")
    resource, sn = verdict["resource"], str(verdict["identity"].get("sn", "")).strip()
    if report.get("profile_digest") != digest:
        return NEVER_APPLIED, (f"the push report is for another profile ({str(report.get('profile_digest'))[:12]}...); "
                               "this profile was never pushed there on record")
    rec = next((r for r in report.get("results") or [] if isinstance(r, dict) and r.get("resource") == resource), None)
    if rec is None or rec.get("status") not in (APPLIED, UNCHANGED):
        why = "no push to it on record" if rec is None else f"the push ended {rec.get('status')!r}"
        return NEVER_APPLIED, f"{why}: push the profile (`eqtune profile push`)"
    rec_sn = str((rec.get("identity") or {}).get("sn", "")).strip()
    if rec_sn and sn and rec_sn != sn:
        return NEVER_APPLIED, (f"the push went to SN {rec_sn}; SN {sn} sits at {resource} now (module swapped): "
                               "push the profile to it")
    before = {str(k): v for k, v in (rec.get("previous") or {}).items()}
    if before and verdict.get("active") == before:
        return REVERTED, ("a push verified these codes before, and the module now holds the codes it had before "
                          "that push (its defaults): it was reset, re-inserted or power-cycled. " + VOLATILE_NOTE)
    return CHANGED, ("a push verified these codes before; the module now holds neither them nor the codes from "
                     "before the push: another writer changed them")


def verify_module(profile: Profile, module: CmisModule, *, force_identity: bool = False) -> dict[str, Any]:
    """Read-only check: does the profile fit the module, and does the module hold its codes?"""
    ident = _ident_dict(module.identity())
    mism = profile.identity_mismatches(ident)
    out: dict[str, Any] = {"resource": getattr(module, "resource", "?"), "identity": ident,
                           "identity_ok": not mism, "identity_problems": mism,
                           "firmware_note": profile.firmware_note(ident)}
    if mism and not force_identity:
        raise ProfileError(f"{out['resource']}: wrong module for this profile: " + "; ".join(mism)
                           + " (use --force-identity to compare anyway)")
    try:
        check_capabilities(profile, module)
        out["capabilities_ok"], out["capability_problem"] = True, ""
    except EqRangeError as exc:
        out["capabilities_ok"], out["capability_problem"] = False, str(exc)
    target = profile.codes()
    knobs = {lane: tuple(c) for lane, c in target.items()}
    try:
        now = _read_codes(module, target, knobs)
    except EqtuneError as exc:
        raise ModuleError(f"{out['resource']}: cannot read the active codes ({exc})") from None
    try:
        adaptive = _adaptive_on(module, target)  # a fixed tx_eq in the profile, adaptive EQ on the module
    except EqtuneError as exc:
        raise ModuleError(f"{out['resource']}: cannot read the Tx input adaptive EQ state ({exc})") from None
    out["active"] = {str(k): v for k, v in now.items()}
    diffs = [_diff(now, target)] if now != target else []
    if adaptive:
        diffs.append(f"Tx input adaptive EQ on lane(s) {','.join(map(str, adaptive))} (the profile sets a fixed tx_eq)")
    out["tx_adaptive"] = adaptive
    out["differences"] = "; ".join(diffs)
    out["holds_profile"] = now == target and not adaptive
    return out

