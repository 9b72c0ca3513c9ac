"""Connect and plan: open the devices, journal identities and restore points, resolve the warm start
and the prior session, plan the lane groups, all before the first write to the module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eqtune.drivers.cmis import open_module
from eqtune.drivers.instrument import open_instrument
from eqtune.errors import EqRangeError, EqtuneError, InputError, SessionError
from eqtune.jsonutil import to_json_value
from eqtune.serdes.knobs import TX_EQ
from eqtune.session.live_core import OutageLog, TunerCore
from eqtune.session.prior import PriorSession, resolve_prior
from eqtune.tune.live import LiveSource, lane_groups, tx_adaptive_lanes
from eqtune.tune.plan import live_plan


class TunerConnect(TunerCore):
    """``_connect`` (once per process; a resumed session re-reads what it journaled), the warm start,
    the prior session, the plan event and the apply-method notice."""

    def _ensure_connected(self) -> None:
        if not self.sources:
            self._connect()

    def _connect(self) -> dict[str, Any]:
        if self.sources:
            return {"groups": self.groups, "originals": self.originals}
        cfg = self.config
        view = self.view
        self._phase("connected", f"opening {cfg.module}")
        if self.module is None:
            self.module = (self._opener or open_module)(cfg.module)
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
                self.instrument = (self._instrument_opener or open_instrument)(cfg.instrument)
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
                raise InputError(f"--lane {ln}: {cfg.module} has lanes 1..{caps.lanes}")
        lanes = self._traffic_down_gate(lanes)  # before the first write (and before the restore point)
        orig = view.originals()
        if orig is None:
            orig = {ln: {k: int(v) for k, v in self.module.active_eq(ln).items()} for ln in lanes}
            self.journal.append("original", codes={str(k): v for k, v in orig.items()},
                                tx_adaptive=tx_adaptive_lanes(self.module, lanes))
        self.originals = orig
        self.groups = lane_groups(lanes, self.instrument if cfg.instrument else None, parallel=cfg.parallel,
                                  metric=cfg.metric)
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
        self.prior = self._resolve_prior(planned, ident)
        if self.prior is not None:
            self._emit("log", text=self.prior.describe())
        if view.plan() is None:
            prior_field = {} if self.prior is None else {"prior": self.prior.to_record()}
            self.journal.append("plan", knobs=list(self.knobs), groups=self.groups, budget=cfg.budget,
                                warnings=warnings, warm={str(k): v for k, v in self.warm_codes.items()},
                                metric=cfg.metric, dwell_s=cfg.dwell_s, verify_dwell_s=cfg.verify_dwell,
                                optimizer=cfg.optimizer, optimizer_options=dict(cfg.optimizer_options or {}),
                                seed=cfg.seed, space_size=self.sources[0].space.size(),
                                screen=self._screen_choice(), **prior_field)
        self._announce_plan()
        return {"groups": self.groups, "originals": self.originals, "identity": ident}

    def _traffic_down_gate(self, lanes: list[int]) -> list[int]:
        """On a module whose every apply takes the data path down, nothing is written without consent:
        ``--allow-traffic-down``, or the operator's answer to the notice (``consent``); the answer is
        journaled once (a resume keeps it and its lanes). Returns the lanes to tune. Raises
        :class:`~eqtune.session.consent.TrafficDownRefused` (nothing written) otherwise. Installs the
        outage journal (every traffic-down apply the driver announces becomes an ``outage`` record)."""
        from eqtune.session.consent import (
            DOWN_ONLY,
            FLAG,
            STOP,
            TUNE,
            TrafficDownRefused,
            expected_outages,
            traffic_down_notice,
        )

        cfg = self.config
        done = self.view.last("consent")
        if done is not None:
            lanes = [int(x) for x in done.get("lanes") or lanes]
        else:
            parallel = cfg.parallel if cfg.parallel is not None else cfg.instrument is None
            groups = 1 if parallel and cfg.instrument is None else len(lanes)
            notice = traffic_down_notice(self.module, lanes, outages=expected_outages(groups, cfg.budget))
            if notice is None:
                return lanes
            self._emit("traffic_down", text=notice.text(), notice=notice.to_dict())
            if cfg.allow_traffic_down:
                choice, how = TUNE, FLAG
            elif self.consent is not None:
                choice, how = str(self.consent(notice)), "operator"
            else:
                raise TrafficDownRefused(f"{notice.lines()[0]} Tuning lane(s) {','.join(map(str, lanes))} would take "
                                         f"traffic down about {notice.outages} time(s), {notice.length_text()}. "
                                         f"Nothing was written. In a maintenance window, rerun with {FLAG}")
            if choice == DOWN_ONLY:
                chosen = list(notice.down_lanes or [])
            elif choice == TUNE:
                chosen = list(lanes)
            else:
                chosen = []
            self.journal.append("consent", choice=choice if chosen or choice == STOP else STOP, how=how,
                                lanes=chosen, notice=notice.to_dict())
            if not chosen:
                why = ("no lane's link is down now" if choice == DOWN_ONLY else "stopped by the operator")
                raise TrafficDownRefused(f"{why}: nothing was written to {cfg.module} (its traffic stayed up)")
            lanes = chosen
            self._emit("log", text=f"traffic down accepted ({how}): tuning lane(s) {','.join(map(str, lanes))}")
        if self.outages is None and self.module is not None:
            self.outages = OutageLog(self.module, record=self._journal_outage, phase=self.phase).install()
        return lanes

    def _journal_outage(self, entry: dict[str, Any]) -> None:
        """One traffic-down apply, journaled (fsync'd) just before it happens; shown as an event."""
        self._journal_best_effort(self.phase in ("aborted", "failed"), "outage", **entry)
        self._emit("outage", **entry)  # the driver's warning line already says it

    def _screen_choice(self) -> dict[str, Any]:
        """How the search dwells, as the plan journals it: {mode (auto|off|given|legacy), dwell_s (the
        screen dwell, null: none), why (one line)}. The metric is the one the plan resolved (a scope
        measures eye heights: nothing to screen, whatever was chosen before connecting)."""
        cfg = self.config
        why = cfg.screen_why
        if cfg.screen_dwell_s is not None and not cfg.screening:
            why = f"no screen: the metric {cfg.metric} counts no bit errors"
        return {"mode": cfg.screen, "dwell_s": cfg.screen_dwell_s if cfg.screening else None, "why": why}

    def _announce_plan(self) -> None:
        """The knobs, the space size, how the budget is spent and the expected time: a ``plan`` event
        before the first write (eqtune.tune.plan.live_plan)."""
        cfg = self.config
        plan = live_plan(self.sources[0].space, groups=len(self.groups), budget=cfg.budget, dwell_s=cfg.dwell_s,
                         verify_dwell_s=cfg.verify_dwell, optimizer=cfg.optimizer,
                         remeasure=cfg.closing_evaluations,
                         screen_dwell_s=cfg.screen_dwell_s if cfg.screening else None)
        screen = self._screen_choice()
        self._emit("plan", text=plan.text(), **plan.to_dict())
        if screen["why"]:
            self._emit("log", text=screen["why"])

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
            assert cfg.channel is not None  # LiveConfig.check: warm="model" needs a channel
            best = model_optimum(cfg.channel, self.knobs, ber=cfg.target_ber or 1e-6, allowed=allowed)
            per_lane = {ln: dict(best) for ln in lanes}
            self._emit("log", text=f"warm start: the {cfg.channel} model optimum "
                                   + " ".join(f"{k}={v}" for k, v in best.items()))
        else:
            per_lane = {}
            warm = cfg.warm if isinstance(cfg.warm, dict) else {}
            for ln in lanes:
                codes = warm.get(str(ln), warm.get("*"))
                if codes:
                    per_lane[ln] = {k: int(v) for k, v in codes.items() if k in self.knobs}
        out = {}
        for gi, g in enumerate(self.groups):
            mine = {ln: {**self.originals[ln], **per_lane[ln]} for ln in g if per_lane.get(ln)}
            if mine:
                try:
                    clean = self.sources[gi].validate(mine)  # before any write
                except EqRangeError as exc:
                    raise EqRangeError(f"warm start (--warm): {exc}; fix the warm codes or drop --warm") from None
                out.update({ln: {k: int(v) for k, v in clean[ln].items() if k in self.knobs} for ln in mine})
        return out

    def _resolve_prior(self, planned: Mapping[str, Any] | None, ident: Mapping[str, Any]) -> PriorSession | None:
        """The earlier session whose measurements start the first lane group (``--prior-session``):
        from the plan when resuming (journaled once), else resolved now, before any write; a prior
        over another knob space is refused (eqtune.session.prior)."""
        if planned is not None:
            rec = planned.get("prior")
            return None if rec is None else PriorSession.from_record(rec)
        cfg = self.config
        if not cfg.prior_session:
            return None
        space = self.sources[0].space
        allowed = {k.name: [int(round(v)) for v in k.values] for k in space.knobs}
        return resolve_prior(cfg.prior_session, sessions_dir=self.journal.dir.parent, current=self.journal.id,
                             identity=ident, channel=cfg.channel, knobs=list(self.knobs), allowed=allowed,
                             metric=cfg.metric)

    def _announce_apply_method(self) -> None:
        """Tell the FAE, before any write, whether applying codes takes the data path (traffic) down on
        this module (the Apply method follows SteppedConfigOnly + AutoCommissioning; see
        eqtune/drivers/cmis_policy.py), and route the driver's own pre-write notice into the events."""
        method_of = getattr(self.module, "apply_method", None)
        if method_of is None:  # a module object without the CMIS policy (test fakes)
            return
        try:
            method = method_of()
        except EqtuneError as exc:
            self._emit("log", text=f"warning: {exc}")
            return
        if self.module is not None and getattr(self.module, "notify", False) is None:
            self.module.notify = lambda msg: self._emit("log", text="warning: " + msg)
        if method.traffic_down:
            self._emit("log", text=f"warning: this module applies codes with {method.trigger}"
                                   f"{' after DPDeinit' if method.deinit else ''}: traffic on the tuned lanes' "
                                   f"data path stops during every write ({method.reason})")


