"""Watch pieces as a user meets them: modules that advertise only some observables, the detector on
series with a known answer, the CLI's bad-input messages, the thermal model of the emulator."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.watch.detect import DetectConfig, FleetDetector, esnr_for_ser
from eqtune.watch.observe import NOT_ADVERTISED, adapt_vdm, observable_for, read_module
from eqtune.watch.simulate import Plant, SimFleet, SimSpec
from eqtune.watch.stats import EWRegression


# ------------------------------------------------------------------------------ adapter
def test_adapter_marks_missing_and_none_as_not_advertised_never_zero():
    raw = {1: {"prefec_ber_host_input": 0.0, "esnr_host_input_db": 21.5, "prefec_ber_max_host_input": None,
               "errored_frames_host_input": 3, "vendor_magic": 7.0},
           2: {"prefec_ber_media_input": 1e-7}}
    out = adapt_vdm(raw, [1, 2, 3])
    assert out[1]["prefec_ber"] == 0.0  # a real zero stays zero
    assert out[1]["esnr_db"] == 21.5 and out[1]["errored_frames"] == 3.0
    assert out[1]["prefec_ber_max"] is None and out[1]["ltp_db"] is None
    assert out[2]["prefec_ber"] is None and out[2]["prefec_ber_media"] == 1e-7
    assert all(v is None for v in out[3].values())
    assert observable_for("prefec_ber_avg_host_input") == "prefec_ber_avg"
    assert observable_for("esnr_media_input_db") == "esnr_db_media"


def test_module_without_vdm_reads_as_not_advertised():
    from eqtune.drivers.cmis import CmisModule
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.link import EmulatedLink, surrogate_quality
    from eqtune.emulate.module import EmulatedModule
    from eqtune.emulate.transport import EmulatorTransport

    link = EmulatedLink("c2m-10in", quality=surrogate_quality(16.0), seed=1)
    emu = EmulatedModule(link, settle_s=0.0, vdm=False)
    mod = CmisModule(PagedRegisters(EmulatorTransport(emu)), resource="emu:novdm")
    s = read_module(mod, "emu:novdm")
    assert s.ok and "VDM: " + NOT_ADVERTISED in s.notes
    assert s.temperature_c == pytest.approx(35.0)  # emulator default without a thermal profile
    d = s.to_dict()
    assert d["lanes"]["1"]["prefec_ber"] == NOT_ADVERTISED and d["lanes"]["1"]["esnr_db"] == NOT_ADVERTISED


# ------------------------------------------------------------------------------ detector
def _run(spec: SimSpec, cfg: DetectConfig | None = None):
    """Feed a seeded synthetic fleet to the detector; the first poll time each (module, lane) held
    each finding kind, and whether it held at the last poll."""
    det = FleetDetector(spec.modules, spec.lanes, spec.interval_s, cfg)
    first: dict[tuple[int, int, str], float] = {}
    last: set[tuple[int, int, str]] = set()
    for ts, temp, ber, esnr in SimFleet(spec):
        det.update(ts, temp, ber, esnr)
        last = set()
        for m in range(spec.modules):
            for ln in range(spec.lanes):
                for f in det.findings(m, ln):
                    first.setdefault((m, ln, f.kind), float(ts[0]))
                    last.add((m, ln, f.kind))
    return det, first, last


def test_esnr_threshold_from_ber():
    # SER 2.4e-4 -> Q(x) = 1.6e-4 -> x = 3.5985 (normal table) -> SNR = 5 x^2 = 64.75 -> 18.11 dB
    assert esnr_for_ser(2.4e-4) == pytest.approx(10 * math.log10(5 * 3.5985**2), abs=0.01)


def test_ew_regression_equals_numpy_polyfit_with_equal_weights():
    rng = np.random.default_rng(3)
    x, y = np.arange(30.0), 2.0 * np.arange(30.0) + 1.0 + rng.standard_normal(30)
    r = EWRegression((1,))
    for xi, yi in zip(x, y, strict=True):
        r.add(np.array([xi]), np.array([yi]), np.array([True]))
    f = r.fit()
    (a, b), cov = np.polyfit(x, y, 1, cov="unscaled")
    resid = y - (a * x + b)
    se = math.sqrt(float(resid @ resid) / 28 * cov[0, 0])
    assert f.slope[0] == pytest.approx(a) and f.level[0] == pytest.approx(b) and f.se[0] == pytest.approx(se)


def test_window_too_short_for_the_interval_is_widened_and_said():
    cfg, notes = DetectConfig(window_s=300.0).for_interval(60.0)
    assert cfg.window_s == 600.0 and notes and "widened to 600 s" in notes[0]
    assert DetectConfig().for_interval(1.0)[1] == []
    assert DetectConfig().persist_count(60.0) == 2 and DetectConfig().persist_count(1.0) == 30


def test_x10_step_at_60s_is_flagged_within_two_polls_and_stays():
    at = 3 * 3600.0 + 30.0
    spec = SimSpec(modules=4, hours=8.0, seed=11, plants=[Plant("step", 1, 2, 10.0, at_s=at, ber=1e-7)])
    det, first, last = _run(spec)
    assert at < first[(1, 2, "step")] <= at + 2 * 60.0
    assert (1, 2, "step") in last  # held: the lane stays 10x worse
    ev = next(f for f in det.findings(1, 2) if f.kind == "step").evidence
    assert ev["before"] == pytest.approx(1e-7, rel=0.3) and ev["after"] == pytest.approx(1e-6, rel=0.3)
    assert {k for k in first if k[:2] != (1, 2)} == set()  # nothing else on 31 quiet lanes
    assert det.acknowledge(1, 2) and not det.findings(1, 2)


def test_step_that_goes_away_clears():
    spec = SimSpec(modules=2, hours=3.0, seed=5, plants=[Plant("step", 0, 0, 10.0, at_s=3600.0, ber=1e-7)])
    det = FleetDetector(2, 8, 60.0)
    seen = []
    for ts, temp, ber, esnr in SimFleet(spec):
        if ts[0] >= 5400.0:
            ber[0, 0] /= 10.0  # back to where it was
        det.update(ts, temp, ber, esnr)
        seen.append(any(f.kind == "step" for f in det.findings(0, 0)))
    assert any(seen[60:90]) and not any(seen[-20:])


def test_thermal_excess_over_siblings_is_flagged_within_one_swing_and_healthy_lanes_are_not():
    spec = SimSpec(modules=6, hours=6.0, seed=21, swings_per_hour=1.0,
                   plants=[Plant("thermal", 2, 4, 5.0), Plant("noisy", 3, 1), Plant("marginal", 4, 6)])
    fleet = SimFleet(spec)
    det = FleetDetector(6, 8, 60.0)
    first = None
    for ts, temp, ber, esnr in fleet:
        det.update(ts, temp, ber, esnr)
        for m in range(6):
            for ln in range(8):
                fs = det.findings(m, ln)
                assert not fs or (m, ln) == (2, 4), (m, ln, fs)
                if fs and first is None:
                    first = (float(ts[0]), fs)
    assert first is not None
    swing = min(t for m, t in fleet.swings if m == 2)
    assert first[0] <= swing + fleet.swing_period
    ev = first[1][0].evidence
    lo, hi = ev["sensitivity_ci95_per_c"]
    assert lo <= ev["sensitivity_per_c"] <= hi and ev["projected_at_hot"] <= 60.0


def test_projection_is_bounded():
    from eqtune.watch.detect import _shown

    assert _shown(0, 3.0) == 0.5  # a projected BER never above 0.5


# ------------------------------------------------------------------------------ thermal model
def test_thermal_profile_and_channel_loss_vs_temperature():
    from eqtune.emulate.link import (
        EmulatedLink,
        ThermalProfile,
        channel_loss_vs_temperature,
        surrogate_quality,
    )

    p = ThermalProfile.parse("0:25,300:35")
    assert p.temperature_c(150) == pytest.approx(30.0) and p.temperature_c(1e4) == 35.0
    assert ThermalProfile.parse("0:25,300:35@600").temperature_c(750) == pytest.approx(30.0)
    with pytest.raises(ValueError):
        ThermalProfile.parse("0:25,x")
    loss = channel_loss_vs_temperature("c2m-10in")
    assert loss(25.0) == pytest.approx(0.0, abs=1e-9)
    # the channel model's own numbers: hotter copper and laminate lose more (trace.py), 0.2-2 dB over 60 C
    assert 0.2 < loss(85.0) < 2.0
    clock = [0.0]
    link = EmulatedLink("c2m-10in", quality=surrogate_quality(17.0), seed=1, noise=False)
    link.set_thermal(p, clock=lambda: clock[0], lane_tempco_db_per_c={2: 0.2})
    cold = (link.ber(1, "module_rx"), link.ber(2, "module_rx"))
    clock[0] = 300.0
    assert link.temperature_c() == 35.0
    assert link.extra_loss_db(2) == pytest.approx(loss(35.0) + 2.0)
    hot = (link.ber(1, "module_rx"), link.ber(2, "module_rx"))
    assert hot[0] > cold[0] and hot[1] / cold[1] > 10 * hot[0] / cold[0]


# ------------------------------------------------------------------------------ CLI
@pytest.mark.parametrize(("args", "needle"), [
    (["watch"], "nothing to watch"),
    (["watch", "net:127.0.0.1:1", "--interval", "0"], "--interval"),
    (["watch", "net:127.0.0.1:1", "--interval", "inf"], "--interval"),
    (["watch", "net:127.0.0.1:1", "--interval", "nan"], "--interval"),
    (["watch", "net:127.0.0.1:1", "--window", "nan"], "--window"),
    (["watch", "net:127.0.0.1:1", "--horizon", "inf"], "--horizon"),
    (["watch", "net:127.0.0.1:1", "--duration", "nan"], "--duration"),
    (["watch", "net:127.0.0.1:1", "--esnr-min-db", "nan"], "--esnr-min-db"),
    (["watch", "net:127.0.0.1:1", "--hot-c", "nan"], "--hot-c"),
    (["watch", "net:127.0.0.1:1", "--hot-c", "inf"], "--hot-c"),
    (["watch", "net:127.0.0.1:1", "--lanes", "4-1"], "runs backwards"),
    (["watch", "net:127.0.0.1:1", "--lanes", "1,,2"], "empty item"),
    (["watch", "net:127.0.0.1:1", "--lanes", "\uff11"], "is not a lane number"),
    (["watch", "net:127.0.0.1:1", "--lanes", "1-99999999999"], "give lane numbers 1..8"),
    (["watch", "net:127.0.0.1:1", "--prometheus", "nohostport"], "HOST:PORT"),
    (["watch", "net:127.0.0.1:1", "--lanes", "0-9"], "lanes are 1..8"),
    (["watch", "--fleet", "missing.csv"], "fleet CSV"),
])
def test_cli_bad_input_is_one_line_exit_2(args, needle, tmp_path):
    r = CliRunner().invoke(main, [*args, "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_fleet_csv_without_resource_column(tmp_path):
    csv = tmp_path / "fleet.csv"
    csv.write_text("server,port,lane\nr1,osfp1,1\n")
    r = CliRunner().invoke(main, ["watch", "--fleet", str(csv), "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 2 and "no 'resource' column" in r.output


def test_cli_json_lines_over_a_fleet_csv(tmp_path):
    from eqtune.watch.fleet import FleetSpec, start_fleet

    with start_fleet(FleetSpec(modules=2, planted=[], stable_marginal=[])) as fleet:
        csv = tmp_path / "fleet.csv"
        csv.write_text("resource,server,port,lanes\n" + "".join(f"{r},rack1,osfp{i},1-4\n" for i, r in enumerate(fleet.resources)))
        r = CliRunner().invoke(main, ["watch", "--fleet", str(csv), "--interval", "0.05", "--count", "3", "--json",
                                      "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.output.splitlines()]
    samples = [d for d in rows if d["type"] == "sample"]
    assert len(samples) == 6 and all(sorted(d["lanes"]) == ["1", "2", "3", "4"] for d in samples)
    assert all(d["lanes"]["1"]["fec_symbol_errors"] == NOT_ADVERTISED and isinstance(d["lanes"]["1"]["esnr_db"], float)
               for d in samples)
    assert [d["interval"] for d in rows if d["type"] == "interval"] == [1, 2, 3]


def test_bus_key_serializes_modules_on_one_bus():
    from eqtune.watch.poller import bus_key

    assert bus_key("i2c:1@0x50") == bus_key("i2c:1@0x51") == "i2c:1"
    assert bus_key("i2c:2@0x50") != bus_key("i2c:1@0x50")
    assert bus_key("ftdi://ftdi:232h/1@0x50") == "ftdi://ftdi:232h/1"
    assert bus_key("optoe:/sys/bus/i2c/devices/11-0050/eeprom") == "optoe:11"
    assert bus_key("net:127.0.0.1:7700") != bus_key("net:127.0.0.1:7701")


def test_fleet_csv_profile_gives_the_retune_channel(tmp_path):
    from eqtune.session.profile import Profile
    from eqtune.watch.targets import from_csv

    prof = Profile.from_identity({"vendor": "ACME", "pn": "OSFP-800G", "oui": "", "rev": "", "firmware": ""},
                                 {1: {"rx_post": 3}}, channel="c2m-16in")
    prof.save(tmp_path / "p.json")
    csv = tmp_path / "fleet.csv"
    csv.write_text("resource,profile\ni2c:1@0x50,p.json\ni2c:2@0x50,missing.json\n")
    from eqtune.errors import InputError

    with pytest.raises(InputError, match="line 3"):
        from_csv(csv)
    csv.write_text("resource,profile\ni2c:1@0x50,p.json\n")
    (t,) = from_csv(csv)
    assert t.channel == "c2m-16in" and t.profile == "p.json"


def test_prometheus_drops_a_module_that_stops_answering():
    import urllib.request

    from eqtune.watch.observe import ModuleSample, adapt_vdm
    from eqtune.watch.prom import PrometheusExporter, parse_metrics

    exp = PrometheusExporter("127.0.0.1", 0).start()
    try:
        good = ModuleSample("net:a:1", 1.0, 40.0, adapt_vdm({1: {"esnr_host_input_db": 20.0}}, [1]))
        exp.update(1, [good], set())
        scrape = lambda: parse_metrics(urllib.request.urlopen(f"http://127.0.0.1:{exp.port}/metrics", timeout=5).read().decode())  # noqa: E731
        m = {(n, dict(lab).get("resource"), dict(lab).get("lane")): v for (n, lab), v in scrape().items()}
        assert m[("eqtune_lane_esnr_decibels", "net:a:1", "1")] == 20.0
        assert not any(k[0] == "eqtune_lane_prefec_ber_ratio" for k in m)  # not advertised: absent, not 0
        exp.update(2, [ModuleSample("net:a:1", 2.0, None, error="timeout")], set())
        m = {(n, dict(lab).get("resource"), dict(lab).get("lane")): v for (n, lab), v in scrape().items()}
        assert not any(k[0] == "eqtune_lane_esnr_decibels" for k in m)
        assert m[("eqtune_module_up", "net:a:1", None)] == 0.0
        assert ("eqtune_module_temperature_celsius", "net:a:1", None) not in m
    finally:
        exp.stop()


def test_lane_history_buffer_keeps_order_through_growth_and_trim():
    from eqtune.watch.poller import LaneHistory

    h = LaneHistory(capacity=4)
    for i in range(10):
        h.append(float(i), 25.0 + i, None if i % 2 else 20.0, 1e-6)
        h.trim(i - 4.5)
    a = h.array()
    assert a[:, 0].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    assert np.isnan(a[0, 2]) and a[1, 2] == 20.0 and a[-1, 1] == 34.0
    h.extend_before(np.array([[3.0, 1.0, 2.0, 3.0], [4.0, 1.0, 2.0, 3.0]]))
    assert h.array()[:, 0].tolist() == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]


def test_disk_full_mid_watch_is_one_clear_error_and_keeps_earlier_intervals(tmp_path):
    import sqlite3

    from eqtune.errors import EqtuneError
    from eqtune.watch.fleet import FleetSpec, start_fleet
    from eqtune.watch.poller import Watcher
    from eqtune.watch.store import WatchStore
    from eqtune.watch.targets import WatchTarget

    db = tmp_path / "w.sqlite"
    store = WatchStore(db)
    with start_fleet(FleetSpec(modules=2, planted=[], stable_marginal=[])) as fleet:
        w = Watcher([WatchTarget(r) for r in fleet.resources], store=store)
        for _ in range(3):
            w.poll_interval()
        # the medium fills up: SQLite's own "database or disk is full" (max_page_count = pages in use)
        used = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {used}")
        with pytest.raises(EqtuneError, match="intervals before it are safe") as err:
            for _ in range(50):
                w.poll_interval()
        w.close()
    store.close()
    import re

    failed = int(re.search(r"while writing interval (\d+)", str(err.value)).group(1))
    assert failed >= 4 and "database or disk is full" in str(err.value)
    con = sqlite3.connect(str(db))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert [r[0] for r in con.execute("SELECT interval FROM intervals")] == list(range(1, failed))
    assert con.execute("SELECT COUNT(*) FROM polls").fetchone()[0] == 2 * (failed - 1)


def test_emulator_fec_counters_accumulate_with_temperature():
    from scipy.stats import binom

    from eqtune.emulate.link import EmulatedLink, ThermalProfile, surrogate_quality

    clock = [0.0]
    link = EmulatedLink("c2m-10in", quality=surrogate_quality(15.5), seed=1, noise=False)
    link.set_thermal(ThermalProfile.parse("0:25,100:25,200:45"), clock=lambda: clock[0],
                     lane_tempco_db_per_c={1: 0.1, 2: 0.15})
    assert link.fec_counters(1)["bits"] == 0
    clock[0] = 1e-3  # 1 ms at 25 C: counters follow the constant BER exactly (noise off)
    c1 = link.fec_counters(1)
    ber25 = link.ber(1, "module_rx")
    assert c1["bits"] == pytest.approx(link.bit_rate_bps * 1e-3, abs=1)
    assert c1["bit_errors"] == pytest.approx(ber25 * c1["bits"], abs=1)
    assert c1["codewords"] == c1["bits"] // 5440
    # uncorrectable codewords at the binomial tail of independent symbol errors (SER ~ 2 BER)
    cer25 = binom.sf(15, 544, 1 - (1 - 2 * ber25) ** 5)
    assert c1["uncorrectable"] == pytest.approx(cer25 * c1["codewords"], abs=1)
    clock[0] = 200.0
    before = link.fec_counters(1)
    clock[0] = 200.001  # 1 ms at 45 C: +2 dB on lane 1 -> many more errors in the same time
    after = link.fec_counters(1)
    ber45 = link.ber(1, "module_rx")
    assert ber45 > 10 * ber25
    assert after["bit_errors"] - before["bit_errors"] == pytest.approx(ber45 * (after["bits"] - before["bits"]), rel=0.01)
    assert after["bit_errors"] - before["bit_errors"] > 10 * c1["bit_errors"]
    # lane 2 at 45 C (+3 dB): pre-FEC BER ~1e-3, codewords start to fail at the binomial-tail rate
    link.fec_counters(2)
    clock[0] = 200.011
    a = link.fec_counters(2)
    clock[0] = 200.111
    b = link.fec_counters(2)
    ber2 = link.ber(2, "module_rx")
    cer2 = binom.sf(15, 544, 1 - (1 - 2 * ber2) ** 5)
    n_cw = b["codewords"] - a["codewords"]
    assert cer2 > 1e-5 and b["uncorrectable"] - a["uncorrectable"] == pytest.approx(cer2 * n_cw, abs=1)


@pytest.mark.parametrize(("content", "needle"), [
    (b"resource,server\nnet:127.0.0.1:1,\xff\xfe\n", "not UTF-8"),
    (b"resource,lanes\nnet:127.0.0.1:1,\"" + b"x" * 200_000 + b"\"\n", "fleet CSV"),
    (b"resource,lanes\nnet:127.0.0.1:1,1\x00\n", "fleet CSV"),
])
def test_hostile_fleet_csv_is_one_line(content, needle, tmp_path):
    p = tmp_path / "fleet.csv"
    p.write_bytes(content)
    r = CliRunner().invoke(main, ["watch", "--fleet", str(p), "--count", "1", "--no-store"])
    assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output, r.output


def test_non_utf8_push_report_is_one_line(tmp_path):
    p = tmp_path / "push.json"
    p.write_bytes(b'{"results": [{"resource": "\xff"}]}')
    r = CliRunner().invoke(main, ["watch", "--from-push", str(p), "--count", "1", "--no-store"])
    assert r.exit_code == 2 and "not UTF-8" in r.output, r.output


def test_nothing_watched_exits_nonzero_and_count_1_returns_after_its_poll(tmp_path):
    import time

    t0 = time.monotonic()
    r = CliRunner().invoke(main, ["watch", "emu:bogus", "--count", "1", "--interval", "30", "--no-store"])
    assert r.exit_code == 2 and "nothing watched" in r.output, r.output
    assert time.monotonic() - t0 < 25.0  # no wait of --interval after the only poll


def test_frame_loss_measured_where_advertised_else_predicted_with_its_range():
    from scipy.stats import binom

    from eqtune.watch.frameloss import frame_loss

    assert frame_loss(1e-5, 3e-12) == {"source": "measured (VDM errored frames)", "ratio": 3e-12}
    fl = frame_loss(2.4e-4, None)
    p_rs = -math.expm1(5 * math.log1p(-4.8e-4))  # SER = 2 BER, 5 PAM4 symbols per RS symbol
    assert fl["ratio"] == pytest.approx(float(binom.sf(15, 544, p_rs)), rel=0.2)  # BER rounded to 0.05 decade
    lo, hi = fl["range"]
    assert lo == fl["ratio"] and hi > 100 * lo  # the unknown host DFE spans orders of magnitude
    assert frame_loss(None, None) is None and frame_loss(0.0, None) is None


def test_a_lane_that_gets_better_is_reported_with_before_and_after():
    """After a re-tune the lane's BER falls 10x: the detector reports it (the watch stores it as an
    'improved' row with both levels) and takes the new level as the baseline."""
    spec = SimSpec(modules=2, hours=3.0, seed=9, plants=[Plant("step", 0, 3, 0.1, at_s=2 * 3600.0, ber=1e-6)])
    det = FleetDetector(2, 8, 60.0)
    got = []
    for ts, temp, ber, esnr in SimFleet(spec):
        det.update(ts, temp, ber, esnr)
        got += det.take_improved()
    ber_rows = [g for g in got if g["metric"] == "log10_prefec_ber"]
    assert [(g["module"], g["lane"]) for g in ber_rows] == [(0, 3)]
    assert ber_rows[0]["before"] == pytest.approx(1e-6, rel=0.3) and ber_rows[0]["after"] == pytest.approx(1e-7, rel=0.3)
    assert not det.findings(0, 3)
