"""Restore on abort or failure: the original codes of every undecided lane go back onto the module.

The restore point of a lane is its journaled ``original`` codes (plus Tx input adaptive EQ on for the
lanes that ran it). Writes are idempotent, so a restore is retried with exponential backoff until
:data:`~eqtune.session.live_core.RESTORE_TIME_LIMIT_S` (a module that NACKs for a few seconds during a
reset still gets its codes back); a journal that cannot be written (disk full) does not stop it.
"""

from __future__ import annotations

import itertools
import time

from eqtune.errors import EqtuneError
from eqtune.serdes.knobs import TX_EQ
from eqtune.session.live_core import RESTORE_BACKOFF_MAX_S, RESTORE_BACKOFF_S, TunerCore, _describe


class TunerRestore(TunerCore):
    """``_stop`` (journal the abort, restore, end the session) and ``_restore_originals``."""

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

