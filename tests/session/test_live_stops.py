"""Live sessions stop when there is nothing left to learn, and spend dwell where it decides something:
the settled / exhausted stop rules (journaled, shown), the sequential dwell's journaled partial dwells,
and a scope's noise from repeats (journaled) with a final pick that the measurements do not refute."""

from __future__ import annotations

import math
from typing import Any

import pytest

from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.session.live import LiveConfig, LiveTuner, load_session
from eqtune.session.live_search import STOP_RULES

DWELL = 28.2  # s on the emulator's virtual clock: 3e12 bits at 106.25 Gb/s, a 1e-12 BER target


def _run(tmp_path, name: str, **kw: Any):
    """A session on the module checker at a 1e-12 dwell, unscreened unless ``kw`` says (the stop rules
    and the sequential dwell of the full-dwell search; tests/session/test_live_screen*.py screen it)."""
    res = f"emu:c2m-10in?seed=31&settle_ms=0&fast=1&adaptive=0&name={name}"
    events: list = []
    kw.setdefault("screen", "off")
    cfg = LiveConfig(module=res, lanes=list(range(1, 9)), dwell_s=DWELL, budget=30, seed=4, **kw)
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path, on_event=events.append)
    result = tuner.run()
    return tuner, result, load_session(tuner.session_id, tmp_path), events, emulator_for(parse_resource(res)).link


def test_module_prbs_direction_stops_early_with_a_journaled_reason_and_keeps_the_best_code(tmp_path):
    """The module checker sees tx_eq only (11 codes): the group must not re-measure a settled winner
    until the budget runs out. The rule and reason are in the last measure record, the stop event and
    the summary; every lane's verified pick is its truly best code or within the count's resolution."""
    tuner, result, view, events, link = _run(tmp_path, "stops-seq")
    ms = view.measurements()
    assert result.status == "done"
    assert len(ms) < 30, "the group used its whole budget"
    last = ms[-1]
    assert last["stop_rule"] in ("settled", "exhausted") and last["stop"] and "next" not in last
    assert all("stop_rule" not in m for m in ms[:-1])
    stops = [e for e in events if e.kind == "stop"]
    assert len(stops) == 1 and stops[0].data["rule"] == last["stop_rule"] and last["stop_rule"] in stops[0].text()
    assert f"({last['stop_rule']})" in "\n".join(result.summary_lines())
    assert result.lanes[1].stop_rule == last["stop_rule"] and last["stop_rule"] in STOP_RULES
    for ln in range(1, 9):
        true = {t: link.ber(ln, "module_rx", {"tx_eq": t}) for t in range(11)}
        pick = (result.lanes[ln].recommended or result.lanes[ln].original)["tx_eq"]
        # within the resolution of the dwell: the best code, or one whose true BER is below what the
        # dwell can resolve (a few errors in the lane's bits)
        floor = 3.0 / (link.bit_rate_bps * DWELL)
        assert true[pick] <= max(min(true.values()) * 10, floor), (ln, pick, true)


def test_sequential_dwell_journals_its_partial_dwells_and_spends_less_than_fixed(tmp_path):
    _, _, seq, _, _ = _run(tmp_path, "stops-seq2")
    _, _, fixed, _, _ = _run(tmp_path, "stops-fixed", sequential=False)
    cut = 0
    for m in seq.measurements():
        for r in m["lanes"].values():
            c = r["counts"]
            if "looks" in c:  # cumulative [bits, errors] per look; the reading is the last look
                assert c["looks"][-1] == [c["bits"], c["errors"]]
                assert all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(c["looks"], c["looks"][1:]))
                assert c["verdict"] in ("worse", "better", "equal", None) and c["dwell_full_s"] == DWELL
                cut += c["verdict"] is not None
    assert cut > 0, "no measurement ended early"
    for m in fixed.measurements():
        assert all("looks" not in r["counts"] for r in m["lanes"].values())
    dwell = {name: sum(max(float(r["counts"]["dwell_s"]) for r in m["lanes"].values()) for m in v.measurements())
             for name, v in (("seq", seq), ("fixed", fixed))}
    assert dwell["seq"] < 0.8 * dwell["fixed"], dwell


class _Scope:
    """A sampling scope on the host side of an emulated link (the emulator's noisy eye)."""

    kind = "scope"
    name = "test scope"
    idn = "eqtune test scope"

    def __init__(self, link: Any) -> None:
        self.link = link

    def identity(self) -> dict[str, str]:
        return {"idn": self.idn, "kind": self.kind}

    def measure_eye(self, lane: int, dwell_s: float = 0.0) -> dict[str, Any]:
        return self.link.eye(lane, "host_rx")

    def close(self) -> None:
        pass


def test_scope_noise_comes_from_repeats_and_the_pick_is_never_refuted(tmp_path):
    res = "emu:c2m-10in?seed=32&settle_ms=0&fast=1&adaptive=0&name=stops-scope"
    link = emulator_for(parse_resource(res)).link
    cfg = LiveConfig(module=res, lanes=[1, 2], instrument="scope:test", metric="eye_height", dwell_s=0.01,
                     verify_dwell_s=0.01, budget=20, seed=5, knobs=["rx_pre", "rx_post", "rx_amp"])
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path, instrument=_Scope(link))
    result = tuner.run()
    assert result.status == "done"
    view = load_session(tuner.session_id, tmp_path)
    noise = [m.get("noise") for m in view.measurements(0)]
    assert noise[-1] is not None and noise[-1]["dof"] >= 1 and noise[-1]["rel_var"] > 0
    codes = [tuple(sorted(m["lanes"]["1"]["codes"].items())) for m in view.measurements(0)]
    assert len(set(codes)) < len(codes), "no repeat was measured: the scope's noise stays unknown"
    for ln in (1, 2):  # the pick vs the best code the lane measured: never more than 0.1 dB worse (truth)
        hist = [(c, m) for c, m in result.lanes[ln].history]
        pick = result.lanes[ln].recommended
        truth = {k: float(link.quality(ln, "host_rx", c)["eye_height_min_mv"]) for k, c in
                 ((tuple(sorted(c.items())), c) for c, _ in hist)}
        best_measured = max(truth.values())
        got = float(link.quality(ln, "host_rx", pick)["eye_height_min_mv"])
        assert 20 * math.log10(best_measured / got) <= 0.1 + 1e-9 or got >= best_measured, (ln, got, best_measured)


class _MultiBert:
    """A BERT with 4 channels through an optical loopback of an emulated link, gated together."""

    kind = "bert"
    name = "test 4-channel BERT"
    idn = "eqtune test BERT"
    channels = 4

    def __init__(self, link: Any) -> None:
        self.link = link
        self.gates: list[list[int]] = []

    def identity(self) -> dict[str, str]:
        return {"idn": self.idn, "kind": self.kind}

    def measure_ber(self, lane: int, dwell_s: float) -> Any:
        return self.measure_ber_lanes([lane], dwell_s)[lane]

    def measure_ber_lanes(self, lanes: list[int], dwell_s: float) -> dict[int, Any]:
        self.gates.append(list(lanes))
        return {ln: self.link.count_errors(ln, dwell_s, path="loopback") for ln in lanes}

    def close(self) -> None:
        pass


def test_a_multichannel_bert_measures_as_many_lanes_per_dwell_as_it_has_channels(tmp_path):
    from eqtune.tune.live import lane_groups

    assert lane_groups(range(1, 9), _MultiBert(None)) == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert lane_groups(range(1, 9), _Scope(None), metric="eye_height") == [[ln] for ln in range(1, 9)]
    assert lane_groups(range(1, 9), None) == [list(range(1, 9))]
    assert lane_groups(range(1, 9), None, parallel=False) == [[ln] for ln in range(1, 9)]
    res = "emu:c2m-10in?seed=33&settle_ms=0&fast=1&adaptive=0&name=stops-multibert"
    link = emulator_for(parse_resource(res)).link
    bert = _MultiBert(link)
    events: list = []
    cfg = LiveConfig(module=res, lanes=list(range(1, 9)), instrument="bert:test", dwell_s=0.01, budget=4, seed=6,
                     knobs=["tx_eq"])
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path, instrument=bert, on_event=events.append)
    assert tuner.run().status == "done"
    view = load_session(tuner.session_id, tmp_path)
    assert view.plan()["groups"] == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert {tuple(g) for g in bert.gates} == {(1, 2, 3, 4), (5, 6, 7, 8)}  # never one lane at a time
    plan = next(e for e in events if e.kind == "plan")
    assert "2 dwells to measure every lane once" in plan.text()


def _cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from eqtune.cli import main

    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


@pytest.mark.parametrize("command", ["demo", "tune"])
def test_demo_and_tune_live_end_a_settled_space_early_and_say_why(tmp_path, command):
    """`eqtune demo` and `eqtune tune --live` on the module checker (tx_eq, 11 codes) with patience out of
    the way: the session ends before its budget by the settled or exhausted rule, and the output says so."""
    if command == "demo":
        code, out = _cli("demo", "--sessions", str(tmp_path), "--seed", "21", "--patience", "500")
    else:
        res = "emu:c2m-10in?seed=23&settle_ms=0&fast=1&name=stops-tune-live&adaptive=0"
        code, out = _cli("tune", "c2m-10in", "--live", "--module", res, "--lane", "1", "--module-ber",
                         "--dwell", "0.05", "--budget", "30", "--seed", "4", "--sessions", str(tmp_path))
    assert code == 0, out
    sid = next(p.name for p in tmp_path.iterdir() if p.is_dir())
    ms = load_session(sid, tmp_path).measurements()
    rule = ms[-1]["stop_rule"]
    assert len(ms) < 30 and rule in ("settled", "exhausted"), (len(ms), rule)
    assert f"({rule})" in out, out


def _group_run(tmp_path, name: str, abort_at: int | None):
    res = f"emu:c2m-10in?seed=35&settle_ms=0&fast=1&adaptive=0&name={name}"
    link = emulator_for(parse_resource(res)).link
    holder: dict[str, Any] = {}

    def on_event(ev):
        if abort_at is not None and ev.kind == "evaluation" and ev.data["n"] == abort_at:
            holder["t"].abort("closing the laptop")

    cfg = LiveConfig(module=res, lanes=[1, 2, 3, 4], instrument="bert:test", dwell_s=0.01, budget=9, seed=2,
                     knobs=["tx_eq", "rx_post"])
    holder["t"] = t = LiveTuner.create(cfg, sessions_dir=tmp_path, instrument=_MultiBert(link), on_event=on_event)
    return t, link


def test_lanes_measured_together_learn_from_each_other_and_resume_identically(tmp_path):
    """A 4-channel BERT: after the initial design each lane's GP has the OTHER lanes' measurements as its
    prior mean (group transfer), derived from the journal, so a session aborted mid-way and resumed makes
    exactly the proposals of an uninterrupted one."""
    from eqtune.tune.optimizer import GPOptimizer, default_n_initial

    straight, _ = _group_run(tmp_path / "a", "group-straight", None)
    assert straight.run().status == "done"
    opts = straight._optimizers(0)
    assert all(isinstance(o, GPOptimizer) and o.has_prior for o in opts.values())
    n_prior = len(opts[1]._prior_keys)
    ms = load_session(straight.session_id, tmp_path / "a").measurements()
    assert n_prior == 3 * len(ms) >= 3 * default_n_initial(2)  # the three other lanes' every measurement

    cut, link = _group_run(tmp_path / "b", "group-cut", 6)
    assert cut.run().status == "aborted"
    resumed = LiveTuner.resume(cut.session_id, sessions_dir=tmp_path / "b", instrument=_MultiBert(link))
    assert resumed.run().status == "done"
    ms_b = load_session(cut.session_id, tmp_path / "b").measurements()

    def codes(rows):
        return [{k: r["codes"] for k, r in m["lanes"].items()} for m in rows]

    assert codes(ms_b) == codes(ms)
