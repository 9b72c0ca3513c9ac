"""Frame loss in the watch: the host's FEC counters as SONiC publishes them (COUNTERS_DB), the burst
model fitted to their histogram, the frame-loss test, all against the emulated host's counters."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom

from eqtune.emulate.hostfec import EmulatedHostFec
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.errors import InputError
from eqtune.watch.frameloss import FrameLossTest, _log_dist_table, predict_from_histogram
from eqtune.watch.hostfec import interval, parse_counters_db, poisson_interval, read_counters_db


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _host(ber: float, tap: float = 0.0, seed: int = 1):
    link = EmulatedLink("c2m-10in", quality=surrogate_quality(16.0), seed=seed, noise=False)
    clock = Clock()
    host = EmulatedHostFec({"Ethernet0": link}, clock, dfe_tap=tap, seed=seed)
    host.ber_scale["Ethernet0"] = ber / max(host.port_ber("Ethernet0"), 1e-300)
    assert host.port_ber("Ethernet0") == pytest.approx(ber, rel=1e-6)
    return host, clock


def test_counters_db_both_forms_and_one_line_errors(tmp_path):
    host, clock = _host(1e-5)
    clock.t = 1.0
    doc = host.counters_db()
    typed = parse_counters_db(doc, "Ethernet0", "x")
    flat = parse_counters_db({k: v["value"] for k, v in doc.items()}, "Ethernet0", "x")
    assert typed == flat and typed is not None and typed.bins is not None and len(typed.bins) == 16
    assert typed.codewords == sum(typed.bins) + typed.uncorrectable
    p = tmp_path / "c.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    assert read_counters_db(p, "Ethernet0") == typed
    for bad, says in [({"COUNTERS_PORT_NAME_MAP": {"Ethernet0": "oid:1"}, "COUNTERS:oid:1": {
                          "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES": "many"}}, "is not a count"),
                      ({}, "COUNTERS_PORT_NAME_MAP"), ([], "JSON object")]:
        with pytest.raises(InputError, match=says) as err:
            parse_counters_db(bad, "Ethernet0", "x")
        assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="no port 'Ethernet8'"):
        parse_counters_db(doc, "Ethernet8", "x")
    # a port without FEC statistics: not advertised, not an error
    assert parse_counters_db({"COUNTERS_PORT_NAME_MAP": {"Ethernet0": "oid:1"}, "COUNTERS:oid:1": {}},
                             "Ethernet0", "x") is None
    with pytest.raises(InputError, match="FEC counters"):
        read_counters_db(tmp_path / "none.json", "Ethernet0")


def test_burst_model_without_dfe_is_the_binomial():
    """The fit's table at tap 0 against an independent computation: RS symbols wrong independently with
    1 - (1 - SER)^5 (5 PAM4 symbols each), binomial over 544 (scipy)."""
    tab = _log_dist_table(0.0)
    for i in (30, 45, 55):  # log10 SER -5, -3.5, -2.5
        ser = 10.0 ** (-8.0 + 0.1 * i)
        p = 1.0 - (1.0 - ser) ** 5
        want = np.append(binom.pmf(np.arange(16), 544, p), binom.sf(15, 544, p))
        got = np.exp(tab[i])
        keep = want > 1e-250
        assert np.allclose(got[keep], want[keep], rtol=1e-6)


def test_emulated_counters_give_the_codeword_error_ratio_within_its_interval():
    """A minute of an 800G port at SER 2 x 3e-4 with a 0.5 first tap (CER 2e-8): the counted uncorrectable
    fraction inside its exact Poisson interval around the model's own P(> 15)."""
    host, clock = _host(3e-4, tap=0.5, seed=3)
    a = parse_counters_db(host.counters_db(), "Ethernet0", "x")
    clock.t = 60.0
    b = parse_counters_db(host.counters_db(), "Ethernet0", "x")
    iv = interval(a, b)
    assert iv is not None and iv.codewords == pytest.approx(53.125e9 * 2 * 8 * 60 / 5440, rel=1e-6)
    true = float(host.distribution("Ethernet0")[-1])
    lo, hi = poisson_interval(iv.uncorrectable, iv.codewords, 0.999)
    assert iv.uncorrectable > 0 and lo <= true <= hi
    # the histogram's fit recovers the tap and the tail it was drawn from
    pred = predict_from_histogram(iv.bins)
    assert pred is not None and pred["dfe_tap"] == 0.5
    assert pred["range"][0] <= pred["ratio"] <= pred["range"][1]
    assert math.log10(pred["ratio"]) == pytest.approx(math.log10(true), abs=0.3)
    host.clear()
    clock.t = 61.0
    assert interval(b, parse_counters_db(host.counters_db(), "Ethernet0", "x")) is None  # counters cleared


def test_prediction_from_errors_a_minute_cannot_count():
    """At SER 2e-5 with a 0.5 tap, P(> 15) is ~1e-20: a minute's counters hold no uncorrectable
    codeword, the histogram's fit still predicts it, within a factor 2 of the model."""
    host, clock = _host(1e-5, tap=0.5, seed=4)
    a = parse_counters_db(host.counters_db(), "Ethernet0", "x")
    clock.t = 60.0
    iv = interval(a, parse_counters_db(host.counters_db(), "Ethernet0", "x"))
    assert iv is not None and iv.uncorrectable == 0
    pred = predict_from_histogram(iv.bins)
    true = float(host.distribution("Ethernet0")[-1])
    assert pred is not None and abs(math.log10(pred["ratio"] / true)) < math.log10(2.0)


def test_frame_loss_test_flags_counted_loss_and_not_counting_noise():
    t = FrameLossTest(persist=2)
    n = 9.4e9  # an 800G port's codewords per minute
    rng = np.random.default_rng(5)
    # at a tenth of the limit: 2,000 polls, never flagged (the interval's lower end stays under it)
    assert not any(t.update("a", {"uncorrectable": int(rng.poisson(6.2e-12 * n)), "codewords": n, "source": "m"})
                   for _ in range(2000))
    # at 30x the limit (18 lost per minute): flagged at the 2nd poll, cleared 2 polls after it stops
    hits = [t.update("b", {"uncorrectable": int(rng.poisson(1.9e-9 * n)), "codewords": n, "source": "m"})
            for _ in range(3)]
    assert hits[0] is None and hits[1] is not None and hits[1]["interval"][0] > 6.2e-11
    t2 = FrameLossTest(persist=2, window=1)
    for _ in range(2):
        t2.update("c", {"uncorrectable": 50, "codewords": n, "source": "m"})
    assert t2.update("c", {"uncorrectable": 0, "codewords": n, "source": "m"}) is not None
    assert t2.update("c", {"uncorrectable": 0, "codewords": n, "source": "m"}) is None
    # a predicted range flags only when its lower end is past the limit
    assert t.update("d", {"ratio": 1e-9, "range": [1e-12, 1e-8], "source": "p"}) is None
    assert t.update("d", {"ratio": 1e-9, "range": [1e-12, 1e-8], "source": "p"}) is None


def test_watch_flags_a_port_losing_frames_from_host_counters(tmp_path):
    """The watch over an emulated module and its host's COUNTERS_DB: quiet, then the host receive
    BER rises until frames are lost: a port-level frame_loss finding with the counts and a check-host
    action; cleared once the lossy polls have left the test's 10-poll window."""
    from eqtune.emulate.scenario import Scenario, build_fleet
    from eqtune.watch.poller import Watcher
    from eqtune.watch.rehearse import targets_of

    fleet = build_fleet(Scenario(name="fec", modules=1, seed=2))
    host = EmulatedHostFec({"Ethernet0": fleet.links[0]}, fleet.clock, dfe_tap=0.5, seed=2)
    path = tmp_path / "counters.json"

    def source(target):
        path.write_text(json.dumps(host.counters_db()), encoding="utf-8")
        return read_counters_db(path, "Ethernet0")

    targets = targets_of(fleet)
    targets[0].labels["interface"] = "Ethernet0"
    reports = []

    class Exporter:
        rows: list = []

        def update(self, interval, samples, active, *, detector_rows, module_rows, identity, labels):
            self.rows = module_rows

    exporter = Exporter()
    w = Watcher(targets, interval_s=60.0, opener=fleet.opener, clock=fleet.clock.unix, host_fec=source,
                on_interval=reports.append, exporter=exporter)
    base = host.port_ber("Ethernet0")

    def poll(n: int, ber: float) -> list:
        host.ber_scale["Ethernet0"] = ber / base
        out = []
        for _ in range(n):
            out.append(w.poll_interval())
            fleet.clock.advance(60.0)
        return out

    quiet = poll(5, 1e-6)
    assert all(not r.new_flags for r in quiet)
    assert quiet[-1].samples[0].port_fec["uncorrectable"] == 0
    bad = poll(3, 3e-4)
    flags = [f for r in bad for f in r.new_flags if f["kind"] == "frame_loss"]
    assert len(flags) == 1 and flags[0]["evidence"]["scope"] == "port"
    ev = flags[0]["evidence"]
    assert ev["interval"][0] > 6.2e-11 and ev["uncorrectable"] > 0
    assert flags[0]["action_level"] == "check_host" and "Ethernet0" in flags[0]["action"]
    assert bad[-1].samples[0].port_fec["predicted"]["dfe_tap"] == 0.5
    exported = {name: v for _r, name, v in exporter.rows}
    assert exported["eqtune_port_fec_codeword_error_ratio"] == pytest.approx(bad[-1].samples[0].port_fec["ratio"])
    assert exported["eqtune_port_frame_loss_predicted_ratio"] > 0
    back = poll(12, 1e-6)
    gone = [i for i, r in enumerate(back) if any(c["kind"] == "frame_loss" for c in r.cleared)]
    assert gone and 7 <= gone[0] <= 10
    w.close()


def test_every_caller_of_evidence_line_can_show_a_frame_loss_finding():
    """The one evidence formatter knows frame loss (it used to raise KeyError on it, callers routed round it)."""
    from eqtune.watch.actions import evidence_line
    from eqtune.watch.detect import Finding

    line = evidence_line(Finding("frame_loss", "frame_loss_ratio",
                                 {"ratio": 1e-9, "source": "host FEC", "limit": 6.2e-11, "limit_from": "802.3"}))
    assert line.startswith("frame loss 1.00e-09 (host FEC) vs limit 6.20e-11")
    assert "n/a" in evidence_line(Finding("level", "log10_prefec_ber", {}))
