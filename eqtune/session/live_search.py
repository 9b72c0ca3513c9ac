"""The optimizer loop of a live session: one optimizer per lane, rebuilt from the journal.

Each lane group runs ``budget`` evaluations, or fewer when a stop rule ends it (``STOP_RULES``: target
margin, time budget, patience, settled, exhausted); the rule and its reason are journaled in the group's
last ``measure`` record (``stop_rule``, ``stop``). A BER measurement ends as soon as its count decides
against the lane's incumbent (``eqtune.tune.dwell.SequentialDwell``; the partial dwells are journaled
with the reading). A scope's eye heights get their noise from repeated codes, pooled over the session
and journaled (``noise``). Every evaluation is one fsync'd ``measure`` record carrying the readings, the
optimizer's non-observation state and the intent of the next write, so a resumed session replays the
observations into fresh optimizers (``tell``) and makes exactly the proposals an uninterrupted run
would have made. Later lane groups start from the earlier groups' measurements as the GP's prior mean
(eqtune.tune.transfer); with ``--prior-session`` the first group starts from an earlier session's
(eqtune.session.prior).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from eqtune.serdes.knobs import BER_METRICS
from eqtune.session.config import LiveConfig
from eqtune.session.live_counts import TunerCounts, _point
from eqtune.session.view import SessionView, _lane_map
from eqtune.tune.base import MEASURED_GP_OPTIONS, BaseOptimizer, make_optimizer, optimizer_from_state
from eqtune.tune.dwell import EQUAL, WORSE, SequentialDwell
from eqtune.tune.live import LiveReading, LiveSource, counts_variance
from eqtune.tune.optimizer import GPOptimizer, default_n_initial
from eqtune.tune.recommend import remeasure_key, settlement

#: the stop rules of a lane group, as journaled in the last ``measure`` record's ``stop_rule`` (the same
#: names as ``tune()``'s ``stop_reason``; "settled": nothing left whose upper bound beats the incumbent's
#: lower bound, ``eqtune.tune.recommend.settlement``)
STOP_RULES = ("target", "time", "patience", "settled", "exhausted", "budget")
#: the rules that end a screened search but not its closing full dwells (the contenders are measured
#: at the full dwell first); target and time end the group at once
SCREEN_DEFERRED = ("patience", "settled", "exhausted")
#: a screened search settles on a tie once this many codes per contender dwell (the pick among them) are
#: tied with its pick at the screen (``TunerSearch._screen_tie``). Chosen with the variants measured in
#: docs/tuning.md ("Screening by default"): a tie that counted codes the screen merely could not separate
#: (overlapping intervals, not ``equal``) cost 6 of 32 lanes > 0.1 dB on the library channel and was dropped
SCREEN_TIE_PER_CONTENDER = 2
#: eye heights below this (mV) get the noise of a 1 mV eye (a closed eye reads CLOSED_EYE_MV)
NOISE_FLOOR_MV = 1.0


class TunerSearch(TunerCounts):
    """``_tune`` (every lane group's optimizer loop), its stop rules and the recommendations."""

    def _optimizers(self, gi: int) -> dict[int, BaseOptimizer]:
        """Fresh optimizers for a group with every journaled observation replayed (no pickles)."""
        cfg = self.config
        src = self.sources[gi]
        opts: dict[int, BaseOptimizer] = {}
        for ln in self.groups[gi]:
            start = {k: float(v) for k, v in self.originals[ln].items() if k in src.knobs}
            opts[ln] = make_optimizer(cfg.optimizer, src.space, seed=int(cfg.seed or 0) + 1000 * ln, start=start,
                                      **{**_live_options(cfg), **dict(cfg.optimizer_options or {})})
        if gi == 0 and self.prior is not None and self.prior.session is not None:
            _set_prior(opts, [(_point(src, c), m) for c, m in self.prior.observations()])
        _set_prior_from_earlier_groups(opts, self.view, gi, src)
        last_extra: dict[int, dict[str, Any]] = {}
        rows = []
        for m in self.view.measurements(gi):
            rows.append(_lane_map(m["lanes"]))
            for ln, r in rows[-1].items():
                if ln in opts:
                    _tell(opts[ln], _point(src, r["codes"]), float(r["margin"]),
                          counts_variance(r.get("counts"), cfg.metric))
            last_extra.update(_lane_map(m.get("optimizer") or {}))
        self._set_group_prior(opts, gi, rows)
        self._set_noise(opts, self._journaled_noise(gi))
        # The observations come from the journal (replayed above). What an optimizer carries besides
        # them (the GP's hyperparameter warm start, journaled as plain JSON with every measurement) is
        # put back through its public state API, so the next proposal is exactly the one an
        # uninterrupted run would have made.
        if last_extra:
            for ln, extra in last_extra.items():
                if ln in opts and extra:
                    st = opts[ln].state()
                    st.update({k: v for k, v in extra.items() if k not in _OBSERVATION_KEYS})
                    opts[ln] = optimizer_from_state(st, src.space)
            self._set_noise(opts, self._journaled_noise(gi))
        return opts

    def _set_group_prior(self, opts: Mapping[int, BaseOptimizer], gi: int, rows: Sequence[Mapping[int, Any]]) -> None:
        """Lanes measured together learn from each other: once the group has made an initial design's
        worth of evaluations, each lane's GP takes as its prior mean what the OTHER lanes of its group
        measured so far (``rows``: per evaluation, lane -> reading), on top of the earlier groups' (or
        the prior session's) measurements. The loop before parallel groups tuned lanes one by one, each
        from the earlier lanes; with four lanes per dwell, four lanes started cold and one of them
        (emulated c2m-10in, seed 0, lane 3) spent 24 of 30 measurements on a tx_eq code 2.7 dB from
        the best. Derived from the journal alone, so a resumed session rebuilds the same prior."""
        g = self.groups[gi]
        if len(g) < 2 or not rows or not self.config.group_transfer:
            return
        src = self.sources[gi]
        if len(rows) < default_n_initial(len(src.knobs)):
            return
        base: list[tuple[dict[str, float], float]] = []
        if gi == 0 and self.prior is not None and self.prior.session is not None:
            base = [(_point(src, c), m) for c, m in self.prior.observations()]
        base += [(_point(src, r["codes"]), float(r["margin"]))
                 for gj in range(gi) for m in self.view.measurements(gj) for r in _lane_map(m["lanes"]).values()]
        for ln in g:
            opt = opts.get(ln)
            if not isinstance(opt, GPOptimizer) or not opt.transfer:
                continue
            others = [(_point(src, r[k]["codes"]), float(r[k]["margin"])) for r in rows for k in r if k != ln]
            opt.set_prior(base + others, keep_start=True)

    # -- noise of an instrument that reports none (scope eye height) -------------------------------

    @staticmethod
    def _set_noise(opts: Mapping[int, BaseOptimizer], noise: Mapping[str, Any] | None) -> None:
        """Each observation's variance from the pooled relative noise: ``rel_var * max(y, 1 mV)^2``
        (delta method on ``ln y``; a closed eye at the 1 mV floor)."""
        if noise is None or "rel_var" not in noise:
            return
        rel = float(noise["rel_var"])
        for opt in opts.values():
            if isinstance(opt, GPOptimizer):
                opt.set_noise([rel * max(abs(float(y)), NOISE_FLOOR_MV) ** 2 for y in opt.ys])

    # -- dwell as a decision ---------------------------------------------------------------------
    def _dwell_test(self, screen: bool = False) -> SequentialDwell | None:
        """The sequential test of one measurement; a screen keeps the looks of the full dwell that fall
        within it (the same look times, fewer looks: its Bonferroni share is over those) and ends early
        only on ``worse`` / ``equal`` (a ``better`` code is counted over the whole screen)."""
        cfg = self.config
        if not cfg.sequential or not self._counted_metric():
            return None
        if not screen:
            return SequentialDwell(looks=int(cfg.dwell_looks))
        share = float(cfg.screen_dwell_s or cfg.dwell_s) / float(cfg.dwell_s)
        return SequentialDwell(looks=screen_looks(int(cfg.dwell_looks), share), ends=(WORSE, EQUAL))

    def _search_dwell(self, screen: bool) -> float:
        """Seconds a search measurement may dwell: the screen dwell while screening, else ``--dwell``."""
        cfg = self.config
        return float(cfg.screen_dwell_s) if screen and cfg.screen_dwell_s else float(cfg.dwell_s)

    def _closing_start(self, gi: int, main_budget: int) -> list[int]:
        """[n] of the group's first closing evaluation: ``main_budget``, or where a journaled stop of a
        screened search moved it (``contend_from``), so a resumed session closes where a straight run
        would (a one-item list: the loop moves it when a stop rule fires)."""
        for m in reversed(self.view.measurements(gi)):
            cf = m.get("contend_from")
            if isinstance(cf, Mapping) and "n" in cf:
                return [int(cf["n"])]
        return [main_budget]

    def _closing_rule(self, gi: int, fields: Mapping[str, Any], budget: int) -> tuple[str, str]:
        """(rule, reason) of a group whose evaluations are all done: the stop rule that ended its
        screened search (then its contenders were measured at the full dwell), else the budget."""
        cf = fields.get("contend_from")
        if not isinstance(cf, Mapping):
            cf = next((m["contend_from"] for m in reversed(self.view.measurements(gi))
                       if isinstance(m.get("contend_from"), Mapping)), None)
        if isinstance(cf, Mapping):
            k = self.config.closing_evaluations
            return str(cf["rule"]), f"{cf['reason']}; then {k} contender dwell{'s' if k != 1 else ''} at the full dwell"
        return "budget", f"evaluation budget {budget} used"

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
            main_budget = cfg.budget - cfg.closing_evaluations
            # where the closing evaluations (the contenders' full dwells) begin: the budget's end, or
            # earlier when a stop rule ended a screened search (journaled as ``contend_from``)
            closing = self._closing_start(gi, main_budget)

            def propose(n_next: int, g=g, opts=opts, src=src, closing=closing,
                        nothing: set[int] | None = None) -> dict[int, dict[str, int]]:
                """The next codes per lane; ``nothing`` collects the lanes with nothing left to ask
                (they measure their recommendation again, free while another lane of the group searches)."""
                points = {}
                noise_known = self._counted_metric() or self._pooled_noise() is not None
                for ln in g:
                    p = None
                    if n_next == 0 and ln in self.warm_codes:  # warm start: measured first
                        p = _point(src, self.warm_codes[ln])
                    elif n_next >= closing[0]:  # the closing re-measurements: k-th best by posterior mean
                        ranked = opts[ln].ranked()
                        i = n_next - closing[0]
                        p = opts[ln].ispace.point(ranked[i]) if i < len(ranked) else None
                    else:  # the top two within their counting noise: measure the less certain again
                        opt = opts[ln]
                        searching = isinstance(opt, GPOptimizer) and not opt.in_initial_design()
                        again = remeasure_key(opt, n_initial=opt.n_initial) if searching else None
                        if searching and again is None and not noise_known and not opt.has_prior:
                            # a scope reports no noise: the first repeat (of the incumbent) gives it
                            again = opt.ranked()[0]
                        p = opt.ask() if again is None else opt.ispace.point(again)
                        if p is None and nothing is not None:
                            nothing.add(ln)
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
                screen = cfg.screening and n < closing[0]
                test = self._dwell_test(screen)
                refs = None if test is None else self._references(
                    gi, codes, {ln: unchanged[ln][0] for ln in g})
                readings = src.read(dwell_s=self._search_dwell(screen), codes=codes, stop=self._abort_check,
                                    refs=refs, test=test)
                for ln in g:  # in memory only; the record below makes it durable
                    _tell(opts[ln], _point(src, readings[ln].codes), readings[ln].margin,
                          readings[ln].variance(cfg.metric))
                self._set_group_prior(opts, gi, [_lane_map(m["lanes"]) for m in self.view.measurements(gi)]
                                      + [{ln: r.to_dict() for ln, r in readings.items()}])
                noise = self._pooled_noise(readings)
                self._set_noise(opts, noise)
                # Propose the next codes now, so one fsync'd record carries both this result and the
                # intent of the next write (the rule "journal before the hardware write" holds with
                # one fsync per evaluation instead of two).
                used_s += time.perf_counter() - t0
                recs = {}
                for ln in g:  # the recommendation now (its GP fit is the one the next ask reuses)
                    p = self._lane_pick(gi, ln, opts[ln], readings)
                    recs[ln] = None if p is None else src.codes_for(ln, p)
                    opt = opts[ln]
                    in_design = isinstance(opt, GPOptimizer) and opt.in_initial_design()
                    same = recs[ln] is not None and recs[ln] == unchanged[ln][0]
                    unchanged[ln] = (recs[ln], unchanged[ln][1] + 1 if same and not in_design else 0)
                rule, stop = self._stop_rule(g, best, readings, used_s, unchanged, n, closing[0])
                if not rule and n + 1 < closing[0] and cfg.settled_stop:
                    rule, stop = self._settled(gi, g, opts, readings, screen=screen)
                planned = None
                if not rule and n + 1 < min(cfg.budget, closing[0] + cfg.closing_evaluations):
                    nothing: set[int] = set()
                    planned = propose(n + 1, nothing=nothing)
                    if n + 1 < closing[0] and nothing >= set(g):
                        rule, stop, planned = "exhausted", ("every code measured and no close contender left to "
                                                            "measure again"), None
                fields: dict[str, Any] = {}
                if rule in SCREEN_DEFERRED and screen and cfg.closing_evaluations > 0:
                    # a screened search that stops goes on to its contenders' full dwells first
                    closing[0] = n + 1
                    fields["contend_from"] = {"n": n + 1, "rule": rule, "reason": stop}
                    rule, stop = "", ""
                    planned = propose(n + 1)
                if not rule and planned is None:
                    rule, stop = self._closing_rule(gi, fields, cfg.budget)
                extra = {str(ln): _optimizer_extra(opts[ln]) for ln in g}
                wall = time.perf_counter() - t0
                if rule:
                    fields.update(stop=stop, stop_rule=rule)
                if cfg.screening:
                    fields["dwell"] = "screen" if screen else "full"
                if noise is not None:
                    fields["noise"] = noise
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
                if rule:
                    self._phase("tuning", f"lanes {','.join(map(str, g))}: stopped after {n}/{cfg.budget} "
                                          f"evaluations ({rule})")
                    self._emit("stop", group=gi, lanes=list(g), evaluations=n, budget=cfg.budget, rule=rule,
                               reason=stop)
            for ln in g:
                p = self._lane_pick(gi, ln, opts[ln])
                rec[ln] = src.codes_for(ln, p) if p is not None else dict(self.originals[ln])
        self._recommended = rec
        return rec

    def _group_done(self, gi: int) -> bool:
        """Budget used, or an early stop rule ended the group (journaled as 'stop' in its last measure)."""
        ms = self.view.measurements(gi)
        return len(ms) >= self.config.budget or bool(ms and ms[-1].get("stop"))

    def _stop_rule(self, g: list[int], best: dict[int, float], readings: Mapping[int, LiveReading],
                   used_s: float, unchanged: dict[int, tuple[dict[str, int] | None, int]],
                   n: int, closing: int) -> tuple[str, str]:
        """(rule, reason) of the first of target, time and patience that holds, else ("", "")."""
        cfg = self.config
        now = {ln: max(best[ln], readings[ln].margin) for ln in g}
        if cfg.target_margin is not None and all(m >= cfg.target_margin for m in now.values()):
            return "target", f"target margin {cfg.target_margin:g} reached"
        if cfg.time_budget_s is not None and used_s >= cfg.time_budget_s:
            return "time", f"time budget {cfg.time_budget_s:g} s used"
        # patience is checked during the search only: once the closing re-measurements have begun they run
        # to the end. A patience stop skips them (the pick held for K evaluations; the long-dwell verify
        # measures it again anyway).
        if (cfg.patience is not None and n + 1 < closing
                and all(unchanged[ln][1] >= int(cfg.patience) for ln in g)):
            return "patience", f"recommendation unchanged for {int(cfg.patience)} evaluations (patience)"
        return "", ""

    def _settled(self, gi: int, g: list[int], opts: Mapping[int, BaseOptimizer],
                 readings: Mapping[int, LiveReading], screen: bool = False) -> tuple[str, str]:
        """("settled", reason) when no lane of the group has a code left (measured or not) whose upper
        bound beats its incumbent's lower bound (``eqtune.tune.recommend.settlement``), or when the only
        codes left in contention are error-free over at least two full dwells each, like the incumbent
        (measured again at this dwell they count zero again: only a longer dwell tells them apart).
        While screening (``screen``), a lane is also settled once its incumbent and enough other codes
        for every contender dwell are tied with it at the screen, error-free or ``equal``
        (:meth:`_screen_tie`): another screen can only add one more code it cannot rank, so the full
        dwells decide."""
        why = []
        for ln in g:
            opt = opts[ln]
            if not isinstance(opt, GPOptimizer) or opt.in_initial_design():
                return "", ""
            if opt.has_prior and len(opt.ys) < default_n_initial(opt.ispace.d):
                # a prior (earlier lanes or modules) skips the design, but another module is not the same
                # link: settle only on at least an initial design's worth of this lane's own measurements
                return "", ""
            tie = self._screen_tie(gi, ln, opt, readings) if screen and self._counted_metric() else ""
            if tie:
                why.append(f"lane {ln}: {tie}")
                continue
            st = settlement(opt)
            if st is None:
                return "", ""
            if st.settled:
                why.append(f"lane {ln}: {st.describe()}")
                continue
            if not self._counted_metric() or st.unmeasured_contenders:
                return "", ""
            counts = self._code_counts(gi, ln, opt, readings)
            full = self._full_bits(gi, ln, readings)
            tied = [st.incumbent, *st.contenders]
            if full <= 0 or not all(counts.get(k, (0, 1))[1] == 0 and counts.get(k, (0, 0))[0] >= 2 * full
                                    for k in tied):
                return "", ""
            why.append(f"lane {ln}: the {len(tied)} codes left in contention counted no errors in "
                       f"{min(counts[k][0] for k in tied):.3g} bits or more each: at this dwell they are "
                       "equal (a longer --dwell can tell them apart)")
        return "settled", "; ".join(why)

    def _screen_tie(self, gi: int, ln: int, opt: GPOptimizer, readings: Mapping[int, LiveReading]) -> str:
        """The reason a screened search of lane ``ln`` has nothing left to rank, or "": its pick (the
        recommendation) and at least ``SCREEN_TIE_PER_CONTENDER`` x ``closing_evaluations`` codes in all
        are tied at the screen: error-free over a screen dwell each when the pick is (zero errors in N
        bits bound the BER only to 3/N at 95 %, the rule of three: Hanley & Lippman-Hand, JAMA 249 (1983)
        1743, and the screen's N is below what the target needs), else ``equal`` to the pick by the
        sequential test's indifference band (``eqtune.tune.dwell``: both limited by the same other knob).
        More screens would only add codes the screen cannot rank; the contenders' full dwells (the best
        by posterior mean) decide between them."""
        k = max(2, int(self.config.closing_evaluations)) * SCREEN_TIE_PER_CONTENDER
        counts = self._code_counts(gi, ln, opt, readings)
        screen_bits = self._full_bits(gi, ln, readings)  # one screen's bits: the longest single measurement
        pick = self._lane_pick(gi, ln, opt, readings)
        if screen_bits <= 0 or pick is None:
            return ""
        inc = opt.ispace.key_of(pick)
        ref = counts.get(inc)
        if ref is None or ref[0] < screen_bits:
            return ""
        test = SequentialDwell(looks=int(self.config.dwell_looks))  # the session's own test and looks
        if ref[1] == 0:
            tied = [key for key, (b, e) in counts.items() if e == 0 and b >= screen_bits]
            how = f"counted no errors in {screen_bits:.3g} bits or more each"
        else:
            tied = [key for key, c in counts.items() if key == inc or test.verdict(c, ref) == EQUAL]
            how = f"read BERs equal to the pick's (within {test.equal_ratio:g}x)"
        if len(tied) < k:
            return ""
        return (f"{len(tied)} codes, the pick among them, {how} at the screen: it cannot rank them, the "
                "contenders' full dwells decide")

    def _unchanged_runs(self, gi: int) -> dict[int, tuple[dict[str, int] | None, int]]:
        """Per lane of group ``gi``: (last recommended codes, evaluations it has held unchanged), from the
        last measure record's 'rec' (so a resumed session stops exactly where a straight run would)."""
        out: dict[int, tuple[dict[str, int] | None, int]] = {ln: (None, 0) for ln in self.groups[gi]}
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
                    p = self._lane_pick(gi, ln, opts[ln])
                    rec[ln] = self.sources[gi].codes_for(ln, p) if p is not None else dict(self.originals[ln])
            self._recommended = rec
        return rec


_OBSERVATION_KEYS = ("points", "margins", "margin_vars", "pending", "knobs", "start", "kind", "version", "seed",
                     "prior")


def _set_prior_from_earlier_groups(opts: Mapping[int, BaseOptimizer], view: SessionView, gi: int,
                                   src: LiveSource) -> None:
    """Lane groups after the first start from what the earlier groups measured (every lane pooled) as
    the GP's prior mean (eqtune.tune.transfer), unless the optimizer option ``transfer`` is false.
    Derived from the journal alone, so a resumed session rebuilds the same prior."""
    if gi == 0:
        return
    obs = [(_point(src, r["codes"]), float(r["margin"]))
           for gj in range(gi) for m in view.measurements(gj) for r in _lane_map(m["lanes"]).values()]
    _set_prior(opts, obs)


def _set_prior(opts: Mapping[int, BaseOptimizer], obs: list[tuple[dict[str, float], float]]) -> None:
    """``obs`` as every optimizer's prior mean (the GP's ``set_prior``; others and ``transfer=false``
    ignore it); the first code measured is then the prior's best, not the original codes."""
    if not obs:
        return
    for opt in opts.values():
        if isinstance(opt, GPOptimizer) and opt.transfer:
            opt.set_prior(obs, keep_start=False)


#: the GP's options in a live session (``--optimizer-option`` overrides them): local steps try the
#: incumbent's one-knob moves first and score them by expected improvement. A loopback counts the errors
#: of both directions together: while one direction limits, every code of the other reads the same (a
#: plateau) and the upper-bound local step measured the plateau until the budget ran out (emulated
#: c2m-10in module, 4-lane groups: 3 of 8 lanes 1.4-2.7 dB off, every one of their last 20 measurements
#: at one tx_eq code); the limiting knob's one-code move has the larger expected improvement. The same
#: options ``tune()`` uses for any measured source (``eqtune.tune.base.MEASURED_GP_OPTIONS``).
LIVE_GP_OPTIONS: dict[str, Any] = dict(MEASURED_GP_OPTIONS)


def _live_options(cfg: LiveConfig) -> dict[str, Any]:
    """The optimizer's options of a live session before the user's own: the GP's live defaults for BER
    metrics (``LIVE_GP_OPTIONS``) and its evaluation budget (``_budget_option``)."""
    counted = cfg.metric in BER_METRICS  # the plateau comes from error counts adding up (not a scope's eye)
    return {**(LIVE_GP_OPTIONS if cfg.optimizer == "gp" and counted else {}), **_budget_option(cfg)}


def _budget_option(cfg: LiveConfig) -> dict[str, int]:
    """The GP's evaluation budget per lane group (its exhaustive mode: every code once when the space
    is no larger, then the close contenders; see eqtune.tune.optimizer), unless given as an option."""
    if cfg.optimizer != "gp" or "budget" in (cfg.optimizer_options or {}):
        return {}
    return {"budget": int(cfg.budget) - cfg.closing_evaluations}


def _tell(opt: BaseOptimizer, point: Mapping[str, float], margin: float, variance: float | None) -> None:
    """An observation with its variance from its own error count (``counts_variance``) for the GP, whose
    recommendation then weighs each code by how well it was measured (``eqtune.tune.recommend``)."""
    if isinstance(opt, GPOptimizer):
        opt.tell(point, margin, variance)
    else:
        opt.tell(point, margin)


def _optimizer_extra(opt: BaseOptimizer) -> dict[str, Any]:
    """The optimizer state minus what the journal already holds (observations, space, seed)."""
    try:
        st = opt.state()
    except Exception:  # an optimizer without state: replaying tell() is all there is
        return {}
    return {k: v for k, v in st.items() if k not in _OBSERVATION_KEYS}


def screen_looks(looks: int, share: float) -> int:
    """How many of the full dwell's ``looks`` geometric looks (at ``2**-(looks-1)``, ..., 1/2, 1 of it)
    fall within a screen of ``share`` of the full dwell (at least one: the screen's end)."""
    fractions = [2.0 ** -(int(looks) - 1 - i) for i in range(int(looks))]
    return max(1, sum(f <= float(share) * (1.0 + 1e-9) for f in fractions))
