"""The long-dwell steps around the search: baseline of the original codes, verification of the
recommendation, and the keep-or-restore decision per lane (tuned codes stay only where verification
beats the baseline; for BER metrics with 95 % confidence)."""

from __future__ import annotations

from typing import Any

from eqtune.errors import ModuleError
from eqtune.serdes.knobs import BER_METRICS
from eqtune.session.live_search import TunerSearch
from eqtune.tune.plan import dwell_text


class TunerPhases(TunerSearch):
    """``_baseline``, ``_verify`` and ``_decide`` (each skips what the journal already holds)."""

    def _baseline(self) -> dict[int, dict[str, Any]]:
        self._ensure_connected()
        self._phase("baseline", f"measuring the original codes ({dwell_text(self.config.verify_dwell)} per group)")
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

    def _verify(self) -> dict[int, dict[str, Any]]:
        self._ensure_connected()
        cfg = self.config
        for gi, _g in enumerate(self.groups):
            if not self._group_done(gi):
                self._tune()
                break
        rec = self._recommendations()
        self._phase("verify", f"measuring the recommendation ({dwell_text(cfg.verify_dwell)} per group)")
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
                    raise ModuleError(f"{cfg.module}: after writing the decided codes the module reads back "
                                      "something else; check it with `eqtune module show` and resume the session")
        return self.view.decisions()

